// The Replay card (protocol/PROTOCOL.md "Replay", docs/RECORDING.md "The
// page's bundle view"): shown while the daemon plays a bundle
// (trackd --replay DIR [--paused]). A timeline to scrub (replay_seek), play
// and pause, step buttons and the arrow keys (replay_step), and re-running
// a range with the objects as they are now (replay_run): the "what if I had
// taught it this way" loop. The daemon's "replay" message after every
// frame says where the replay is and carries the recorded result of that
// frame, drawn dashed over the picture when "recorded" is ticked.
// On a live daemon the teach card's "Bundles" lists its recording and rewind
// saves (list_bundles) with the command that opens each here.

import { isAuthed, withControl } from './auth.js';
import { request } from './control.js';
import { objectInfo } from './objects.js';
import { clearTrails } from './trails.js';
import { $ } from './util.js';

const el = {
  card: $('replay'), name: $('r-name'), time: $('r-time'), pos: $('r-pos'),
  play: $('r-play'), back: $('r-back'), fwd: $('r-fwd'), rec: $('r-rec'),
  from: $('r-from'), to: $('r-to'), run: $('r-run'), result: $('r-result'), msg: $('r-msg'),
  bundles: $('t-bundles'), bundleList: $('t-bundle-list'),
};

// Recorded results kept for pairing with previews by seq (like frames.js).
const KEPT = 64;

let last = null;            // the last "replay" message
const recordedBySeq = new Map();   // the replay's seq -> recorded frame message
let seeking = false;        // a replay_seek is on its way
let seekNext = null;        // the frame the timeline was dragged to meanwhile
let redraw = () => {};      // view.js: draws the shown frame again
let lastRecordedDrawn = null;
// A new connection to a paused replay has no picture yet (the frame was
// processed before it came): it asks for the same frame again.
let needPicture = false;

export const replayState = () => ({
  shown: !el.card.hidden, last, recordedDrawn: lastRecordedDrawn, overlay: el.rec.checked,
});

function say(text, bad) {
  el.msg.textContent = text;
  el.msg.classList.toggle('bad', !!bad);
}

function send(msg, cb) {
  withControl(() => request(msg, cb, (e) => {
    if (msg.type === 'replay_seek') seekDone();
    say(`${e.code}: ${e.message}`, true);
  }));
}

function seekDone() {
  seeking = false;
  if (seekNext !== null) {
    const f = seekNext;
    seekNext = null;
    seek(f);
  }
}

// One seek at a time while the timeline is dragged: the newest position
// waits for the one before to be answered.
function seek(frame) {
  if (seeking) {
    seekNext = frame;
    return;
  }
  seeking = true;
  send({ type: 'replay_seek', frame }, seekDone);
}

const fmtTime = (t) => `${t.toFixed(2)} s`;

function showRun(run) {
  if (!run) {
    el.result.textContent = '';
    return;
  }
  const where = `frames ${run.from}\u2013${run.to}`;
  if (!run.done) {
    el.result.textContent = `re-running ${where}\u2026 ${run.compared} compared`;
    return;
  }
  let t = `${where}: ${run.compared} compared, ${run.differ} differ from the recording`;
  if (run.cancelled) t += ' (stopped)';
  if (run.first) t += `; first: frame ${run.first.frame}, ${run.first.what}`;
  el.result.textContent = t;
}

export function onReplay(msg) {
  if (last && msg.frame !== last.frame + 1 && msg.frame !== last.frame) clearTrails();
  last = msg;
  el.card.hidden = false;
  el.name.textContent = msg.bundle;
  el.time.max = String(Math.max(0, msg.frames - 1));
  if (!seeking && seekNext === null && document.activeElement !== el.time) {
    el.time.value = String(msg.frame);
  }
  el.pos.textContent = `frame ${msg.frame} / ${msg.frames - 1} \u00b7 ${fmtTime(msg.t)} of ${fmtTime(msg.duration)}`
    + (msg.differs ? ' \u00b7 differs from the recording' : '');
  el.pos.title = msg.differs || '';
  el.play.textContent = msg.paused ? 'Play' : 'Pause';
  el.play.setAttribute('aria-pressed', String(!msg.paused));
  if (!el.to.value) el.to.value = String(msg.frames - 1);
  if (!el.from.value) el.from.value = '0';
  showRun(msg.run);
  if (msg.error) say(msg.error, true);
  if (msg.recorded) recordedBySeq.set(msg.seq, msg.recorded);
  while (recordedBySeq.size > KEPT) recordedBySeq.delete(recordedBySeq.keys().next().value);
  if (el.rec.checked) redraw();
  if (needPicture) {
    needPicture = false;
    // Without the token the card waits for the next frame instead.
    if (msg.paused && isAuthed()) seek(msg.frame);
  }
}

// A new connection: until its first "replay" message this may be no replay.
export function onHello() {
  el.card.hidden = true;
  last = null;
  recordedBySeq.clear();
  seeking = false;
  seekNext = null;
  needPicture = true;
}

// view.js, after each frame's own overlay: the recorded result of the same
// frame, dashed in white over each object's colour, when asked for.
export function drawRecorded(ctx, seq, sx, sy) {
  if (!el.rec.checked || el.card.hidden) return;
  const r = recordedBySeq.get(seq);
  const boxes = [];
  if (r && Array.isArray(r.objects)) {
    ctx.save();
    ctx.lineWidth = 2;
    for (const o of r.objects) {
      if (!o.found || !Array.isArray(o.bbox) || o.bbox.length !== 4) continue;
      const [x0, y0, x1, y1] = o.bbox;
      const box = { x0: x0 * sx, y0: y0 * sy, x1: (x1 + 1) * sx, y1: (y1 + 1) * sy };
      ctx.setLineDash([4, 4]);
      ctx.strokeStyle = '#ffffff';
      ctx.strokeRect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0);
      ctx.lineDashOffset = 4;
      ctx.strokeStyle = objectInfo(o.id, o.name).color;
      ctx.strokeRect(box.x0, box.y0, box.x1 - box.x0, box.y1 - box.y0);
      ctx.lineDashOffset = 0;
      boxes.push({ id: o.id, ...box });
    }
    ctx.restore();
  }
  lastRecordedDrawn = { seq, boxes, recorded: !!r };
}

function step(delta) {
  send({ type: 'replay_step', delta });
}

function playPause() {
  send({ type: last && !last.paused ? 'replay_pause' : 'replay_play' });
}

function onKey(e) {
  if (el.card.hidden || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && t !== el.time && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT'
      || t.isContentEditable)) return;
  if (e.key === 'ArrowLeft' || e.key === 'ArrowRight') {
    e.preventDefault();
    step(e.key === 'ArrowLeft' ? -1 : 1);
  } else if (e.key === ' ' && t === document.body) {
    e.preventDefault();
    playPause();
  }
}

// A word the shell takes as it is.
const shellQuote = (s) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

let listed = null;   // the last list_bundles reply's bundles

// The bundles, newest first, each with the command that opens it: a replay
// is a trackd of its own (the live one keeps tracking), on the next port.
function showBundles(list) {
  listed = list;
  const port = Number(location.port || 80) + 1;
  el.bundleList.replaceChildren();
  el.bundleList.hidden = false;
  if (!list.length) {
    el.bundleList.textContent = 'no bundles yet: Save rewind, or start trackd with --record';
    return;
  }
  for (const b of list) {
    const p = document.createElement('p');
    const what = b.frames === null ? 'being written' : `${b.frames} frames`;
    p.textContent = `${b.name} (${b.kind}, ${what}${b.trigger ? `, ${b.trigger}` : ''})`;
    const code = document.createElement('code');
    code.textContent = `trackd --replay ${shellQuote(b.dir)} --paused --listen 127.0.0.1:${port}`;
    p.append(code);
    el.bundleList.append(p);
  }
}

export const bundlesState = () => listed;

export function initReplay(redrawShown) {
  el.bundles.addEventListener('click', () => withControl(() => request({ type: 'list_bundles' },
    (r) => showBundles(Array.isArray(r.bundles) ? r.bundles : []),
    (e) => {
      el.bundleList.hidden = false;
      el.bundleList.textContent = `${e.code}: ${e.message}`;
    })));
  redraw = redrawShown;
  el.time.addEventListener('input', () => seek(Number(el.time.value)));
  el.play.addEventListener('click', playPause);
  el.back.addEventListener('click', () => step(-1));
  el.fwd.addEventListener('click', () => step(1));
  el.rec.addEventListener('change', () => redraw());
  el.run.addEventListener('click', () => {
    const from = Number(el.from.value);
    const to = Number(el.to.value);
    if (!Number.isInteger(from) || !Number.isInteger(to)) {
      say('from and to are frame numbers', true);
      return;
    }
    say(`re-running frames ${from}\u2013${to} with the objects as they are now`);
    send({ type: 'replay_run', from, to });
  });
  document.addEventListener('keydown', onKey);
}
