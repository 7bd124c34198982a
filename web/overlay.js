// Draws one frame's results over the picture: trails, boxes, centroid
// crosses and name tags, in each object's colour; for an object with blobs
// on (a "blobs" list in its result), every blob's box with its rank and a
// small centroid cross, and the aggregate box dashed; for a tracked object
// (an "instances" list) each instance instead: its box with its id tag
// ("#7"), its own trail, and while it coasts (lost > 0) a dashed ring at its
// predicted position. Coordinates: a frame
// box [x0,y0,x1,y1] (inclusive pixel indices) covers x0*sx to (x1+1)*sx in
// canvas pixels (sx = canvas width / frame width), rounded to whole pixels;
// a centroid pixel x spans [x, x+1), so it is drawn at (x + 0.5) * sx.
//
// Cost: up to 256 objects x 64 blobs a frame; each blob is a handful of
// axis-aligned rectangles and one short text, with styles set per object.

import { drawAxes } from './axes.js';
import { drawMarkers } from './markers.js';
import { objectInfo } from './objects.js';
import { instanceTrailOf, trailOf } from './trails.js';
import { inkFor } from './util.js';

// Line widths and sizes at the screen's device pixel ratio.
function overlayStyle() {
  const dpr = window.devicePixelRatio || 1;
  // Even width on whole-pixel coordinates: the line covers whole pixels,
  // so its colour is exact rather than blended with the picture.
  const lw = 2 * Math.max(1, Math.round(dpr));
  return {
    dpr,
    lw,
    arm: 7 * dpr,
    fontPx: Math.round(12 * dpr),
    pad: Math.round(3 * dpr),
    // Blobs: a smaller rank tag, and a dot where the aggregate has a cross.
    rankPx: Math.round(10 * dpr),
    rankPad: Math.round(2 * dpr),
    blobDot: 2 * lw,
    // The aggregate box of an object with blobs on: dashes a few line
    // widths long, so it reads as "around them" rather than as one more blob.
    dash: [4 * lw, 3 * lw],
  };
}

// Draws the results of one frame with scale (sx, sy) from frame to canvas
// pixels. Returns what was drawn, in canvas pixels: {boxes: [{id, x0, y0,
// x1, y1, cx, cy, color, dashed}] (the aggregates; cx, cy null without a
// centroid; dashed when the object has blobs on), blobs: [{id, rank, x0,
// y0, x1, y1, cx, cy, color}] (rank 1 = first in the object's list),
// instances: [{obj, id, x0, y0, x1, y1, cx, cy, lost, trail, color}] (box
// null while lost; trail: points of its trail drawn), markers: what
// markers.js drew, axes: what axes.js drew (none while its toggle is off)}.
export function drawOverlay(ctx, result, sx, sy) {
  const st = overlayStyle();
  const objects = result.objects || [];
  // Trails first, so boxes and names stay on top; then every object's blobs,
  // so no blob box hides another object's aggregate box or name.
  if (!result.carved) drawTrails(ctx, objects, sx, sy, st);   // trails are in frame pixels
  const blobs = [];
  const instances = [];
  for (const r of objects) {
    if (Array.isArray(r.instances)) {
      drawInstances(ctx, r, objectInfo(r.id, r.name).color, sx, sy, st, instances);
    } else if (Array.isArray(r.blobs) && r.blobs.length) {
      drawBlobs(ctx, r, objectInfo(r.id, r.name).color, sx, sy, st, blobs);
    }
  }
  ctx.font = `600 ${st.fontPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  const boxes = [];
  for (const r of objects) {
    if (!r.found || !Array.isArray(r.bbox) || r.bbox.length !== 4) continue;
    const o = objectInfo(r.id, r.name);
    const box = boxRect(r.bbox, sx, sy);
    const dashed = Array.isArray(r.blobs);
    drawBox(ctx, box, o.color, st, dashed);
    const c = drawCentroid(ctx, r, sx, sy, o.color, st);
    drawLabel(ctx, o, box, st);
    boxes.push({ id: r.id, ...box, ...c, color: o.color, dashed });
  }
  const axes = drawAxes(ctx, objects, sx, sy, st);
  const markers = drawMarkers(ctx, result.markers, sx, sy, st);
  return { boxes, blobs, instances, markers, axes };
}

const isBox = (b) => Array.isArray(b) && b.length === 4 && b.every((v) => typeof v === 'number');

// The blobs of result r (its "blobs" list, in list order) in colour: their
// boxes, centroid dots and rank tags (1, 2, ...). Appends what it drew to
// out. Styles are set once per object; the boxes are stroked one by one
// (stroking one compound path of overlapping rectangles cost Chromium's
// software rasterizer 3x more), the dots and tag backgrounds filled as one
// path each.
function drawBlobs(ctx, r, color, sx, sy, st, out) {
  const drawn = [];
  r.blobs.forEach((b, i) => {
    if (!b || !isBox(b.bbox)) return;
    const box = boxRect(b.bbox, sx, sy);
    const ok = typeof b.cx === 'number' && typeof b.cy === 'number';
    drawn.push({ id: r.id, rank: i + 1, ...box,
                 cx: ok ? (b.cx + 0.5) * sx : null, cy: ok ? (b.cy + 0.5) * sy : null, color });
  });
  if (!drawn.length) return;
  const { lw } = st;
  // Boxes: the dark halo under all of them first, then the colour.
  ctx.lineWidth = 2 * lw;
  ctx.strokeStyle = 'rgba(0,0,0,0.6)';
  for (const d of drawn) ctx.strokeRect(d.x0, d.y0, d.x1 - d.x0, d.y1 - d.y0);
  ctx.lineWidth = lw;
  ctx.strokeStyle = color;
  for (const d of drawn) ctx.strokeRect(d.x0, d.y0, d.x1 - d.x0, d.y1 - d.y0);
  // Centroids: a dot, not the aggregate's cross, with a dark rim.
  const rim = st.blobDot + 2 * lw;
  fillRects(ctx, drawn, (d) => d.cx !== null && [d.cx - rim / 2, d.cy - rim / 2, rim, rim],
            'rgba(0,0,0,0.6)');
  const dot = st.blobDot;
  fillRects(ctx, drawn, (d) => d.cx !== null && [d.cx - dot / 2, d.cy - dot / 2, dot, dot], color);
  drawRanks(ctx, drawn, color, st);
  for (const d of drawn) out.push(d);
}

// The instances of tracked result r: seen ones as a box with a centroid
// dot and an id tag, coasting ones as a dashed ring where they are
// predicted; each with its trail. Appends what it drew to out.
function drawInstances(ctx, r, color, sx, sy, st, out) {
  const { lw, rankPad: pad } = st;
  ctx.font = `600 ${st.rankPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  for (const i of r.instances) {
    if (!i || typeof i.cx !== 'number' || typeof i.cy !== 'number') continue;
    const cx = (i.cx + 0.5) * sx, cy = (i.cy + 0.5) * sy;
    const t = instanceTrailOf(i.id);
    const trail = t && t.length >= 2 ? t.length : 0;
    if (trail) {
      ctx.globalAlpha = 0.7;
      ctx.beginPath();
      t.forEach(([x, y], k) => (k ? ctx.lineTo : ctx.moveTo).call(ctx, (x + 0.5) * sx, (y + 0.5) * sy));
      ctx.lineWidth = Math.max(1, Math.round(st.dpr));
      ctx.strokeStyle = color;
      ctx.stroke();
      ctx.globalAlpha = 1;
    }
    const d = { obj: r.id, id: i.id, x0: null, y0: null, x1: null, y1: null, cx, cy,
                lost: i.lost, trail, color };
    const tag = `#${i.id}`;
    const tw = Math.ceil(ctx.measureText(tag).width) + 2 * pad;
    const th = st.rankPx + 2 * pad;
    let tx, ty;
    if (i.lost === 0 && isBox(i.bbox)) {
      Object.assign(d, boxRect(i.bbox, sx, sy));
      strokeWithHalo(ctx, () => ctx.strokeRect(d.x0, d.y0, d.x1 - d.x0, d.y1 - d.y0),
                     2 * lw, 'rgba(0,0,0,0.6)', lw, color);
      const dot = st.blobDot;
      ctx.fillStyle = color;
      ctx.fillRect(cx - dot / 2, cy - dot / 2, dot, dot);
      tx = d.x0 + lw / 2;
      ty = d.y0 + lw / 2;
    } else {
      // Coasting: where it should be, dashed, so it reads as a guess.
      const rad = 3 * st.arm / 2;
      ctx.setLineDash(st.dash);
      ctx.beginPath();
      ctx.arc(cx, cy, rad, 0, 2 * Math.PI);
      strokeWithHalo(ctx, () => ctx.stroke(), 2 * lw, 'rgba(0,0,0,0.6)', lw, color);
      ctx.setLineDash([]);
      tx = cx + rad;
      ty = cy - rad;
    }
    ctx.fillStyle = color;
    ctx.fillRect(tx, ty, tw, th);
    ctx.fillStyle = inkFor(color);
    ctx.fillText(tag, tx + pad, ty + pad);
    out.push(d);
  }
}

// Rank tags just inside each box's top-left corner (inside, so they never
// sit on the aggregate's name tag above the aggregate box).
function drawRanks(ctx, drawn, color, st) {
  const { rankPad: pad, lw } = st;
  const th = st.rankPx + 2 * pad;
  ctx.font = `600 ${st.rankPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  const width = rankWidths(ctx, st.rankPx);
  fillRects(ctx, drawn, (d) => [d.x0 + lw / 2, d.y0 + lw / 2, width(d.rank) + 2 * pad, th], color);
  ctx.fillStyle = inkFor(color);
  for (const d of drawn) ctx.fillText(String(d.rank), d.x0 + lw / 2 + pad, d.y0 + lw / 2 + pad);
}

// Fills the rectangles rectOf(d) of every d in list (false: none) in one
// path: filling a union is cheap, unlike stroking one.
function fillRects(ctx, list, rectOf, style) {
  ctx.beginPath();
  for (const d of list) {
    const r = rectOf(d);
    if (r) ctx.rect(r[0], r[1], r[2], r[3]);
  }
  ctx.fillStyle = style;
  ctx.fill();
}

// Text widths of ranks 1..64 at one font size, measured once per size
// rather than once per blob and frame.
let rankCache = { px: 0, w: [] };
function rankWidths(ctx, px) {
  if (rankCache.px !== px) rankCache = { px, w: [] };
  const w = rankCache.w;
  return (rank) => {
    if (w[rank] === undefined) w[rank] = Math.ceil(ctx.measureText(String(rank)).width);
    return w[rank];
  };
}

function drawTrails(ctx, objects, sx, sy, st) {
  ctx.globalAlpha = 0.7;
  for (const r of objects) {
    const t = trailOf(r.name);
    if (!t || t.length < 2) continue;
    ctx.beginPath();
    t.forEach(([x, y], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, (x + 0.5) * sx, (y + 0.5) * sy));
    ctx.lineWidth = Math.max(1, Math.round(st.dpr));
    ctx.strokeStyle = objectInfo(r.id, r.name).color;
    ctx.stroke();
  }
  ctx.globalAlpha = 1;
}

// A frame bbox as the canvas rectangle enclosing its pixels.
function boxRect([bx0, by0, bx1, by1], sx, sy) {
  return {
    x0: Math.round(bx0 * sx),
    y0: Math.round(by0 * sy),
    x1: Math.round((bx1 + 1) * sx),
    y1: Math.round((by1 + 1) * sy),
  };
}

// Runs stroke() twice: a wide dark halo first, then the colour on top.
// Objects often have the overlay's own colour; the halo keeps the line
// visible against them and against the picture.
function strokeWithHalo(ctx, stroke, haloWidth, haloColor, width, color) {
  ctx.lineWidth = haloWidth;
  ctx.strokeStyle = haloColor;
  stroke();
  ctx.lineWidth = width;
  ctx.strokeStyle = color;
  stroke();
}

// dashed: the object has blobs on; its aggregate box encloses them all.
function drawBox(ctx, { x0, y0, x1, y1 }, color, st, dashed) {
  if (dashed) ctx.setLineDash(st.dash);
  strokeWithHalo(ctx, () => ctx.strokeRect(x0, y0, x1 - x0, y1 - y0),
                 2 * st.lw, 'rgba(0,0,0,0.6)', st.lw, color);
  if (dashed) ctx.setLineDash([]);
}

// The centroid cross; returns its centre {cx, cy} in canvas pixels (both
// null when the result has no centroid).
function drawCentroid(ctx, r, sx, sy, color, st) {
  if (typeof r.cx !== 'number' || typeof r.cy !== 'number') return { cx: null, cy: null };
  const cx = (r.cx + 0.5) * sx;
  const cy = (r.cy + 0.5) * sy;
  ctx.beginPath();
  ctx.moveTo(cx - st.arm, cy);
  ctx.lineTo(cx + st.arm, cy);
  ctx.moveTo(cx, cy - st.arm);
  ctx.lineTo(cx, cy + st.arm);
  strokeWithHalo(ctx, () => ctx.stroke(), st.lw + 2 * st.dpr, 'rgba(0,0,0,0.55)', st.lw, color);
  return { cx, cy };
}

// The name tag above the box, or just inside it when the box touches the top.
function drawLabel(ctx, o, { x0, y0 }, st) {
  const { lw, pad } = st;
  const tw = Math.ceil(ctx.measureText(o.name).width) + 2 * pad;
  const th = st.fontPx + 2 * pad;
  const tx = Math.min(Math.max(0, x0 - lw / 2), Math.max(0, ctx.canvas.width - tw));
  const ty = y0 - lw - th >= 0 ? y0 - lw - th : y0 + lw / 2;
  ctx.fillStyle = o.color;
  ctx.fillRect(tx, ty, tw, th);
  ctx.fillStyle = inkFor(o.color);
  ctx.fillText(o.name, tx + pad, ty + pad);
}
