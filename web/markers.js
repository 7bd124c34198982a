// Draws a frame's markers (the "markers" list of the frame message: things
// assembled from blobs, e.g. robots wearing the league's pattern): a ring at
// the marker's centre, an arrow along its heading (degrees counter-clockwise
// on screen from +x, so the arrow's screen y is -sin), and a tag with the
// pattern's name and the marker's id. A coasting marker (lost > 0: not found
// this frame, shown where it is predicted) is dashed.

import { inkFor } from './util.js';

const INK = '#ffffff';

// markers: the message's list; sx, sy: frame -> canvas scale; st: the
// overlay's style (overlay.js). Returns what was drawn, in canvas pixels:
// [{pattern, id, track_id, cx, cy, hx, hy, lost}] (hx, hy: the arrow's tip).
export function drawMarkers(ctx, markers, sx, sy, st) {
  const out = [];
  if (!Array.isArray(markers)) return out;
  const { lw, rankPad: pad } = st;
  const rad = 2 * st.arm;
  ctx.font = `600 ${st.rankPx}px system-ui, sans-serif`;
  ctx.textBaseline = 'top';
  for (const m of markers) {
    if (!m || typeof m.cx !== 'number' || typeof m.cy !== 'number' || typeof m.heading !== 'number') {
      continue;
    }
    const cx = (m.cx + 0.5) * sx, cy = (m.cy + 0.5) * sy;
    const a = (m.heading * Math.PI) / 180;
    const hx = cx + Math.cos(a) * 2 * rad, hy = cy - Math.sin(a) * 2 * rad;
    const lost = typeof m.lost === 'number' ? m.lost : 0;
    if (lost > 0) ctx.setLineDash(st.dash);
    ctx.beginPath();
    ctx.arc(cx, cy, rad, 0, 2 * Math.PI);
    ctx.moveTo(cx, cy);
    ctx.lineTo(hx, hy);
    // the arrow's head: two short strokes back from the tip
    for (const side of [-1, 1]) {
      ctx.moveTo(hx, hy);
      ctx.lineTo(hx - Math.cos(a + side * 0.5) * st.arm, hy + Math.sin(a + side * 0.5) * st.arm);
    }
    halo(ctx, lw);
    ctx.setLineDash([]);
    const tag = `${m.pattern ?? ''} ${m.id ?? ''}`.trim();
    const tw = Math.ceil(ctx.measureText(tag).width) + 2 * pad;
    ctx.fillStyle = 'rgba(0,0,0,0.7)';
    ctx.fillRect(cx + rad, cy + rad, tw, st.rankPx + 2 * pad);
    ctx.fillStyle = inkFor('#000000');
    ctx.fillText(tag, cx + rad + pad, cy + rad + pad);
    out.push({ pattern: m.pattern, id: m.id, track_id: m.track_id, cx, cy, hx, hy, lost });
  }
  return out;
}

function halo(ctx, lw) {
  ctx.lineWidth = 2 * lw;
  ctx.strokeStyle = 'rgba(0,0,0,0.7)';
  ctx.stroke();
  ctx.lineWidth = lw;
  ctx.strokeStyle = INK;
  ctx.stroke();
}
