// Results and previews, paired by frame. A frame's result is sent before its
// preview, so results wait in a small seq -> result map until the preview
// with the same seq has been decoded; then both are drawn together and the
// overlay never lags or leads the picture under it. Without previews (off,
// or none lately) each result is drawn on a plain background.

import { openedAt, isConnected } from './connection.js';
import { parsePreview } from './protocol.js';
import { addFrame } from './trails.js';
import { RateMeter } from './util.js';
import { isShown, queueDraw, setFrameSize } from './view.js';

// Results kept while waiting for their preview. Previews lag results by the
// JPEG encode and the decode here (a few frames); at 120 fps 128 entries is
// still a full second, far beyond any useful wait.
const RESULTS_KEPT = 128;
// No preview for this long (or none since connecting) means previews are off:
// overlays are then drawn on a plain background for every result.
const PREVIEW_STALE_MS = 1000;
// Client-side rates are measured over this sliding window.
const RATE_WINDOW_MS = 2000;

const results = new Map();   // seq -> frame message, oldest first
const resultsRate = new RateMeter(RATE_WINDOW_MS);
const previewRate = new RateMeter(RATE_WINDOW_MS);
let lastPreviewAt = 0;
let framesReceived = 0;
let previewsReceived = 0;
let lastFrame = null;       // last "frame" message
let lastPreview = null;     // {seq, previewW, previewH, frameW, frameH, carved} of the last preview
let latencyMs = null;       // Date.now() - wall_ms, smoothed
let carvedView = false;     // the last preview was carved (fit.js)

export const counts = () => ({ framesReceived, previewsReceived });
export const latestFrame = () => lastFrame;
export const latestPreview = () => lastPreview;
export const latency = () => latencyMs;
export const rates = (now) => ({ results: resultsRate.rate(now), preview: previewRate.rate(now) });

// Previews are on when one arrived recently. Right after connecting, give
// the first preview a moment so the view does not flash a plain background.
export function previewsOn(now) {
  return now - Math.max(lastPreviewAt, openedAt()) < PREVIEW_STALE_MS;
}

// A new connection: results of the old one will get no preview.
export function forgetResults() {
  results.clear();
}

export function onFrame(msg) {
  const now = performance.now();
  framesReceived++;
  lastFrame = msg;
  resultsRate.tick(now);
  if (typeof msg.wall_ms === 'number') {
    const lat = Date.now() - msg.wall_ms;
    latencyMs = latencyMs === null ? lat : latencyMs * 0.8 + lat * 0.2;
  }
  // A carved view's canvas has the carved picture's shape (decodePreview).
  if (!carvedView || !previewsOn(now)) setFrameSize(msg.width, msg.height);
  results.set(msg.seq, msg);
  addFrame(msg, msg.width, msg.height);
  while (results.size > RESULTS_KEPT) results.delete(results.keys().next().value);
  if (!previewsOn(now)) queueDraw({ seq: msg.seq, image: null, result: msg });
}

// Once previews stop (switched off), keeps the view current from results.
export function keepViewCurrent(now) {
  const f = lastFrame;
  if (isConnected() && f && !previewsOn(now) && !isShown(f.seq)) {
    queueDraw({ seq: f.seq, image: null, result: f });
  }
}

// Preview decoding: at most one JPEG decodes at a time; while it does, only
// the newest preview waits (older ones are dropped, like the daemon does).
let decoding = false;
let pendingPreview = null;

export function onPreview(buf) {
  const p = parsePreview(buf);
  if (!p) return;
  const now = performance.now();
  previewsReceived++;
  lastPreview = { seq: p.seq, previewW: p.previewW, previewH: p.previewH, frameW: p.frameW, frameH: p.frameH,
                  carved: !!p.carve };
  previewRate.tick(now);
  lastPreviewAt = now;
  if (decoding) pendingPreview = p;
  else decodePreview(p);
}

// The connection closed: a preview still waiting belongs to it.
export function dropPendingPreview() {
  pendingPreview = null;
}

// Result r as the carved picture shows it: each found object's box and
// centroid from the preview's mapping (carved pixels); blobs, instances and
// markers (frame pixels, not mapped) are left out, and so are trails.
function carvedResult(r, carve) {
  const mapped = new Map(carve.objects.map((o) => [o.id, o]));
  const objects = (r.objects || []).map((o) => {
    const m = mapped.get(o.id);
    return m ? { id: o.id, name: o.name, found: true, mass: o.mass, bbox: m.bbox, cx: m.cx, cy: m.cy }
      : { id: o.id, name: o.name, found: false };
  });
  return { seq: r.seq, carved: true, objects };
}

function decodePreview(p) {
  decoding = true;
  createImageBitmap(p.jpeg)
    .then((image) => {
      carvedView = !!p.carve;
      // A carved picture is drawn at its own shape, the boxes mapped with it.
      if (p.carve) setFrameSize(p.previewW, p.previewH);
      else setFrameSize(p.frameW, p.frameH);
      // A missing result (dropped for a slow client) leaves the picture bare
      // rather than showing a box from another moment.
      const r = results.get(p.seq) || null;
      queueDraw({ seq: p.seq, image, result: r && p.carve ? carvedResult(r, p.carve) : r });
    })
    .catch(() => { /* a corrupt JPEG: skip it, the next one will come */ })
    .finally(() => {
      decoding = false;
      if (pendingPreview) {
        const next = pendingPreview;
        pendingPreview = null;
        decodePreview(next);
      }
    });
}
