// The video canvas: sized to the frame's aspect ratio, it shows one picture
// (a decoded preview, or a plain background when previews are off) with the
// overlay of the result of the same frame. Drawing waits for the next
// animation frame, and only the newest job waiting is drawn.

import { onAxesToggle } from './axes.js';
import { drawOverlay } from './overlay.js';
import { $ } from './util.js';

const BACKGROUND = '#1b1f24';

export const canvas = $('view');
export const stageBox = $('stage-box');
const ctx = canvas.getContext('2d');

// Frame size in pixels: from the hello, then from each frame/preview.
let frameW = 640;
let frameH = 360;

// What is on screen now, kept so a resize can redraw it.
let shown = null;    // {seq, image|null, result|null}
let queued = null;   // newest job waiting for the next animation frame
let rafPending = false;
let frozen = false;  // paused: the picture on screen stays, newer ones wait
// The last overlay drawn: seq of the picture (or result) under it, whether
// it is a preview, whether a result was drawn on it, and each box and blob
// drawn in canvas pixels (overlay.js drawOverlay).
let lastDrawn = null;   // {seq, preview, matched, boxes:[...], blobs:[...], instances:[...], markers:[...], axes:[...]}

export const frameSize = () => [frameW, frameH];
export const lastDrawnOverlay = () => lastDrawn;
// Whether the picture of frame seq is the one on screen.
export const isShown = (seq) => shown !== null && shown.seq === seq;
// The seq of the preview on screen (null: none, e.g. previews off): the
// frame a user who drags over the video saw.
export const shownPreviewSeq = () => (shown && shown.image ? shown.seq : null);

// Paused (true), the picture on screen stays until resumed; then the newest
// one waiting is drawn.
export function setFrozen(on) {
  frozen = on;
  canvas.classList.toggle('frozen', on);
  if (!on && queued) {
    const job = queued;
    queued = null;
    queueDraw(job);
  }
}

// Sizes the canvas to the frame's aspect ratio within the stage, with a
// backing store at device resolution so overlay lines stay crisp.
// Returns true when the backing store changed (which clears it).
function fitCanvas() {
  const aspect = frameW / frameH;
  const availW = Math.max(1, stageBox.clientWidth);
  const maxH = Math.max(160, window.innerHeight * 0.72);
  const cssW = Math.floor(Math.min(availW, maxH * aspect));
  const cssH = Math.round(cssW / aspect);
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(1, Math.round(cssW * dpr));
  const h = Math.max(1, Math.round(cssH * dpr));
  if (canvas.style.width !== `${cssW}px`) canvas.style.width = `${cssW}px`;
  if (canvas.style.height !== `${cssH}px`) canvas.style.height = `${cssH}px`;
  if (canvas.width === w && canvas.height === h) return false;
  canvas.width = w;
  canvas.height = h;
  return true;
}

export function setFrameSize(w, h) {
  if (!(w > 0 && h > 0) || (w === frameW && h === frameH)) return;
  frameW = w;
  frameH = h;
  fitCanvas();
}

// Dims the picture while it is not live.
export function setStale(stale) {
  canvas.classList.toggle('stale', stale);
}

// Draws job {seq, image|null, result|null} at the next animation frame.
export function queueDraw(job) {
  // A queued job is never on screen yet, so a newer one simply replaces it.
  if (queued && queued.image) queued.image.close();
  queued = job;
  if (rafPending || frozen) return;
  rafPending = true;
  requestAnimationFrame(() => {
    rafPending = false;
    if (frozen) return;
    const next = queued;
    queued = null;
    if (next) show(next);
  });
}

function show(job) {
  if (shown && shown.image && shown.image !== job.image) shown.image.close();
  shown = job;
  fitCanvas();
  draw(job);
}

function draw(job) {
  const cw = canvas.width;
  const ch = canvas.height;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  if (job.image) {
    ctx.imageSmoothingEnabled = true;
    ctx.drawImage(job.image, 0, 0, cw, ch);
  } else {
    ctx.fillStyle = BACKGROUND;
    ctx.fillRect(0, 0, cw, ch);
  }
  const { boxes, blobs, instances, markers, axes } = job.result
    ? drawOverlay(ctx, job.result, cw / frameW, ch / frameH)
    : { boxes: [], blobs: [], instances: [], markers: [], axes: [] };
  lastDrawn = { seq: job.seq, preview: !!job.image, matched: !!job.result, boxes, blobs, instances,
                markers, axes };
}

// Sizes the canvas now and whenever the stage or window changes (a resize
// clears the canvas: what was shown is drawn again).
export function initView() {
  const refit = () => {
    if (fitCanvas() && shown) draw(shown);
  };
  new ResizeObserver(refit).observe(stageBox);
  window.addEventListener('resize', refit);
  onAxesToggle(() => {
    if (shown) draw(shown);
  });
  fitCanvas();
  ctx.fillStyle = BACKGROUND;
  ctx.fillRect(0, 0, canvas.width, canvas.height);
}
