// Draws one frame's results over the picture: trails, boxes, centroid
// crosses and name tags, in each object's colour. Coordinates: a frame box
// [x0,y0,x1,y1] (inclusive pixel indices) covers x0*sx to (x1+1)*sx in canvas
// pixels (sx = canvas width / frame width), rounded to whole pixels; a
// centroid pixel x spans [x, x+1), so it is drawn at (x + 0.5) * sx.

import { objectInfo } from './objects.js';
import { trailOf } from './trails.js';
import { inkFor } from './util.js';

// Line widths and sizes at the screen's device pixel ratio.
function overlayStyle() {
  const dpr = window.devicePixelRatio || 1;
  return {
    dpr,
    // Even width on whole-pixel coordinates: the line covers whole pixels,
    // so its colour is exact rather than blended with the picture.
    lw: 2 * Math.max(1, Math.round(dpr)),
    arm: 7 * dpr,
    fontPx: Math.round(12 * dpr),
    pad: Math.round(3 * dpr),
  };
}

// Draws the results of one frame with scale (sx, sy) from frame to canvas
// pixels. Returns the boxes drawn, in canvas pixels:
// [{id, x0, y0, x1, y1, cx, cy, color}] (cx, cy null without a centroid).
export function drawOverlay(ctx, result, sx, sy) {
  const st = overlayStyle();
  const objects = result.objects || [];
  ctx.font = `600 ${st.fontPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  // Trails first, so boxes and names stay on top.
  drawTrails(ctx, objects, sx, sy, st);
  const boxes = [];
  for (const r of objects) {
    if (!r.found || !Array.isArray(r.bbox) || r.bbox.length !== 4) continue;
    const o = objectInfo(r.id, r.name);
    const box = boxRect(r.bbox, sx, sy);
    drawBox(ctx, box, o.color, st);
    const c = drawCentroid(ctx, r, sx, sy, o.color, st);
    drawLabel(ctx, o, box, st);
    boxes.push({ id: r.id, ...box, ...c, color: o.color });
  }
  return boxes;
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

function drawBox(ctx, { x0, y0, x1, y1 }, color, st) {
  strokeWithHalo(ctx, () => ctx.strokeRect(x0, y0, x1 - x0, y1 - y0),
                 2 * st.lw, 'rgba(0,0,0,0.6)', st.lw, color);
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
