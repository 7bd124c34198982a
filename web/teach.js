// Teaching: with "Teach new object" pressed, a rectangle dragged over the
// video (or a click) asks the daemon to sample those pixels ("sample",
// PROTOCOL.md section 5) of the frame on screen (its seq: the daemon keeps
// the last previewed frames); the reply goes to the edit form (tune.js).
// "Pause video" holds the picture on screen, and the daemon holds its frame
// ("preview" "hold"), so a moving object can be sampled at leisure.

import { withControl } from './auth.js';
import { request, say } from './control.js';
import { latestFrame } from './frames.js';
import { currentHello } from './session.js';
import { $ } from './util.js';
import { canvas, setFrozen, shownPreviewSeq, stageBox } from './view.js';

const button = $('t-teach');
const pauseButton = $('t-pause');
const rectEl = $('teach-rect');

let teaching = false;   // drag mode on
let drag = null;        // {x0, y0, x1, y1} in client pixels
let onSample = null;
let paused = false;     // the picture on screen is held
let heldSeq = null;     // the frame the daemon holds for us (its ack)

export const isTeaching = () => teaching;
export const pauseState = () => ({ paused, heldSeq });

// Pauses (on) or resumes the video. Paused, the daemon is asked to hold the
// frame on screen; send false when the connection that held it is gone.
export function setPaused(on, send = true) {
  paused = on;
  pauseButton.setAttribute('aria-pressed', String(on));
  pauseButton.textContent = on ? 'Resume video' : 'Pause video';
  setFrozen(on);
  if (!on) heldSeq = null;
  if (!send) return;
  const seq = on ? shownPreviewSeq() : null;
  if (on && seq === null) return say('paused (no preview on screen: samples read the live frame)');
  request({ type: 'preview', hold: seq }, (r) => {
    heldSeq = typeof r.hold === 'number' ? r.hold : null;
    if (on) say('paused: drag over the object in the still picture');
  }, (e) => {
    // The frame went before the request arrived: resume rather than show
    // a picture the daemon cannot sample.
    say(`cannot pause on this frame (${e.message}); try again`, true);
    setPaused(false, false);
  });
}

export function setTeaching(on) {
  teaching = on;
  button.setAttribute('aria-pressed', String(on));
  stageBox.classList.toggle('teaching', on);
  if (on) say('drag over the object in the video');
}

// Canvas CSS pixels -> frame pixels.
export function toFrame(clientX, clientY) {
  const r = canvas.getBoundingClientRect();
  const f = latestFrame();
  const hello = currentHello();
  const fw = (f && f.width) || (hello && hello.width) || 1;
  const fh = (f && f.height) || (hello && hello.height) || 1;
  const x = Math.floor(((clientX - r.left) / r.width) * fw);
  const y = Math.floor(((clientY - r.top) / r.height) * fh);
  return [Math.min(fw - 1, Math.max(0, x)), Math.min(fh - 1, Math.max(0, y))];
}

// The rubber band over the video for a drag {x0, y0, x1, y1} (client
// pixels); null hides it.
export function showDragRect(d) {
  rectEl.hidden = !d;
  if (!d) return;
  const box = stageBox.getBoundingClientRect();
  rectEl.style.left = `${Math.min(d.x0, d.x1) - box.left}px`;
  rectEl.style.top = `${Math.min(d.y0, d.y1) - box.top}px`;
  rectEl.style.width = `${Math.abs(d.x1 - d.x0)}px`;
  rectEl.style.height = `${Math.abs(d.y1 - d.y0)}px`;
}

// A finished drag as a frame rectangle {x, y, w, h}, null for a click.
export function dragFrameRect(d) {
  const [ax, ay] = toFrame(Math.min(d.x0, d.x1), Math.min(d.y0, d.y1));
  const [bx, by] = toFrame(Math.max(d.x0, d.x1), Math.max(d.y0, d.y1));
  return bx - ax < 2 || by - ay < 2 ? null : { x: ax, y: ay, w: bx - ax + 1, h: by - ay + 1 };
}

function showRect() {
  showDragRect(drag);
}

// The drag is over: sample what it covered.
function endDrag() {
  const rect = dragFrameRect(drag);
  const [ax, ay] = toFrame(Math.min(drag.x0, drag.x1), Math.min(drag.y0, drag.y1));
  drag = null;
  showDragRect(null);
  setTeaching(false);
  // A click (no drag) samples a small square around the point.
  const msg = rect ? Object.assign({ type: 'sample' }, rect)
    : { type: 'sample', x: ax, y: ay, radius: 3 };
  // The frame on screen, not whatever the daemon processes next.
  const seq = shownPreviewSeq();
  if (seq !== null) msg.seq = seq;
  request(msg, onSample);
}

// fn(reply) gets each sample reply.
export function initTeach(fn) {
  onSample = fn;
  // Teaching ends in edits, so the token is asked for before, not after a drag.
  button.addEventListener('click', () => {
    if (teaching) setTeaching(false);
    else withControl(() => setTeaching(true));
  });
  pauseButton.addEventListener('click', () => {
    if (paused) setPaused(false);
    else withControl(() => setPaused(true));
  });
  canvas.addEventListener('pointerdown', (ev) => {
    if (!teaching) return;
    ev.preventDefault();
    canvas.setPointerCapture(ev.pointerId);
    drag = { x0: ev.clientX, y0: ev.clientY, x1: ev.clientX, y1: ev.clientY };
    showRect();
  });
  for (const type of ['pointermove', 'pointerup']) {
    canvas.addEventListener(type, (ev) => {
      if (!drag) return;
      drag.x1 = ev.clientX;
      drag.y1 = ev.clientY;
      if (type === 'pointerup') endDrag();
      else showRect();
    });
  }
}
