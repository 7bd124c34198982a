// The daemon's numbers under the video (Daemon, Rates and Latency cards),
// the connection badge, and the note under the video that says what the
// view shows.

import { isConnected, nextRetryAt } from './connection.js';
import { request, say } from './control.js';
import { counts, latency, latestFrame, latestPreview, previewsOn, rates } from './frames.js';
import { $, DASH, count, fmt, setText } from './util.js';

const el = {
  conn: $('conn'), note: $('view-note'),
  state: $('p-state'), server: $('p-server'), backend: $('p-backend'),
  source: $('p-source'), size: $('p-size'), camera: $('p-camera'), focus: $('p-focus'),
  rfps: $('p-rfps'), pfps: $('p-pfps'), sfps: $('p-sfps'), frames: $('p-frames'),
  drops: $('p-drops'), clients: $('p-clients'), rss: $('p-rss'),
  lat: $('p-lat'), lq: $('p-lq'), lu: $('p-lu'), lk: $('p-lk'), lp: $('p-lp'),
  ls: $('p-ls'), lt: $('p-lt'),
};

let lastStats = null;   // last "stats" message

// "set": the sharpness now becomes the focus check's baseline (after
// focusing by hand, with the Edges view).
$('p-focus-set').addEventListener('click', () => {
  request({ type: 'focus', baseline: 'now' },
          (r) => say(`focus baseline set: sharpness ${fmt(r.baseline, 2)}`));
});

export const latestStats = () => lastStats;

export function onStats(msg) {
  lastStats = msg;
}

// The Daemon card from a hello.
export function showHello(msg) {
  setText(el.server, String(msg.server || DASH));
  setText(el.backend, String(msg.backend || DASH));
  setText(el.source, String(msg.source || DASH));
  // The camera's name (--name): several trackd pages open at once stay apart.
  setText(el.camera, String(msg.camera || DASH));
  if (msg.camera) document.title = `trackd \u00b7 ${msg.camera}`;
  setText(el.size, msg.width && msg.height ? `${msg.width} \u00d7 ${msg.height}` : DASH);
}

// what: 'connecting', 'connected' or 'disconnected'.
export function showConnection(what) {
  el.conn.className = `badge badge-${what}`;
  setText(el.conn, what);
  refreshNote(performance.now());
  setText(el.state, what);
}

export function refreshNote(now) {
  setText(el.note, viewNote(now));
}

function viewNote(now) {
  const preview = latestPreview();
  if (isConnected()) {
    if (!counts().framesReceived) return 'connected, waiting for frames\u2026';
    if (previewsOn(now) && preview) return `live \u00b7 preview ${preview.previewW}\u00d7${preview.previewH}`;
    return 'live \u00b7 preview off: overlays on a plain background';
  }
  if (nextRetryAt()) {
    const s = Math.max(0, (nextRetryAt() - now) / 1000);
    return `daemon unreachable \u00b7 retrying in ${s.toFixed(1)} s`;
  }
  return 'connecting\u2026';
}

// The focus check's reading (stats "focus", PROTOCOL.md): the sharpness,
// its share of the baseline and the verdict; marked while focus is lost.
function showFocus(f) {
  if (!f) { setText(el.focus, DASH); return; }
  const pct = f.sharpness != null && f.baseline ? ` \u00b7 ${Math.round(100 * f.sharpness / f.baseline)}%` : '';
  setText(el.focus, f.sharpness == null ? f.state : `${fmt(f.sharpness, 1)}${pct} \u00b7 ${f.state}`);
  el.focus.classList.toggle('focus-lost', f.state === 'lost');
  el.focus.title = f.state === 'lost'
    ? `below ${Math.round(100 * f.warn)}% of the in-focus sharpness ${fmt(f.baseline, 1)}: check the lens`
    : '';
}

// The Rates and Latency cards: this page's rates, the daemon's last stats
// and the last frame's latencies.
export function refreshCards(now) {
  const r = rates(now);
  setText(el.rfps, fmt(r.results, 1));
  setText(el.pfps, fmt(r.preview, 1));
  const s = lastStats;
  if (s) {
    setText(el.sfps, fmt(s.fps, 1));
    setText(el.frames, count(s.frames));
    setText(el.drops, count(s.drops));
    setText(el.clients, count(s.clients));
    setText(el.rss, typeof s.rss_kb === 'number' ? `${(s.rss_kb / 1024).toFixed(1)} MiB` : DASH);
    showFocus(s.focus);
  }
  const f = latestFrame();
  setText(el.lat, fmt(latency(), 1));
  const l = (f && f.latency) || {};
  setText(el.lq, fmt(l.queue_ms, 2));
  setText(el.lu, fmt(l.upload_ms, 2));
  setText(el.lk, fmt(l.kernel_ms, 2));
  setText(el.lp, fmt(l.process_ms, 2));
  const med = (s && s.latency_median) || {};
  setText(el.ls, fmt(med.send_ms, 2));
  setText(el.lt, fmt(med.total_ms, 2));
}
