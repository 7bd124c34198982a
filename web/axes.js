// Draws the major axes of a frame's shapes when the "axes" toggle under the
// video is on: for each tracked object its instances seen in this frame, for
// each object with blobs its blobs, for any other found object its
// aggregate; a line through the centroid along `orientation` (degrees
// counter-clockwise on screen from +x, so the line's screen y is -sin),
// `major` frame pixels to each side (2 x major in all: major is the pixels'
// standard deviation along the axis, PROTOCOL.md), white on a dark halo in
// one path. Shapes with no extent (major 0: one pixel) are not drawn.

import { $ } from './util.js';

const INK = '#ffffff';
const toggle = $('v-axes');

// Whether the toggle is on (no toggle on the page: off).
export const axesOn = () => !!toggle && toggle.checked;

// Calls redraw whenever the toggle changes (a paused picture shows it too).
export function onAxesToggle(redraw) {
  if (toggle) toggle.addEventListener('change', redraw);
}

// The shapes to draw of result r (a frame's object): [{kind, id, s}] where
// kind is "instance" (id: its id), "blob" (id: its rank, 1 = first) or
// "object" (id: the object's), and s the entry with cx, cy, orientation,
// major.
function shapesOf(r) {
  if (Array.isArray(r.instances)) {
    return r.instances.filter((i) => i && i.lost === 0).map((i) => ({ kind: 'instance', id: i.id, s: i }));
  }
  if (Array.isArray(r.blobs)) return r.blobs.map((b, k) => ({ kind: 'blob', id: k + 1, s: b }));
  return r.found ? [{ kind: 'object', id: r.id, s: r }] : [];
}

const drawable = (s) => s && ['cx', 'cy', 'orientation', 'major'].every((k) => typeof s[k] === 'number') &&
  s.major > 0;

// Draws the axes of the frame's objects with scale (sx, sy) from frame to
// canvas pixels and the overlay's style st (overlay.js) when the toggle is
// on. Returns what was drawn, in canvas pixels: [{obj, kind, id, cx, cy,
// x0, y0, x1, y1}] (x0, y0 the end along the orientation, x1, y1 the other;
// empty when off).
export function drawAxes(ctx, objects, sx, sy, st) {
  const out = [];
  if (!axesOn() || !Array.isArray(objects)) return out;
  for (const r of objects) {
    if (!r) continue;
    for (const { kind, id, s } of shapesOf(r)) {
      if (!drawable(s)) continue;
      const a = (s.orientation * Math.PI) / 180;
      const dx = Math.cos(a) * s.major, dy = -Math.sin(a) * s.major;
      const px = (x) => (x + 0.5) * sx, py = (y) => (y + 0.5) * sy;
      out.push({ obj: r.id, kind, id, cx: px(s.cx), cy: py(s.cy), x0: px(s.cx + dx), y0: py(s.cy + dy),
                 x1: px(s.cx - dx), y1: py(s.cy - dy) });
    }
  }
  if (!out.length) return out;
  ctx.beginPath();
  for (const d of out) {
    ctx.moveTo(d.x0, d.y0);
    ctx.lineTo(d.x1, d.y1);
  }
  ctx.lineCap = 'round';
  ctx.lineWidth = 2 * st.lw;
  ctx.strokeStyle = 'rgba(0,0,0,0.7)';
  ctx.stroke();
  ctx.lineWidth = st.lw;
  ctx.strokeStyle = INK;
  ctx.stroke();
  ctx.lineCap = 'butt';
  return out;
}
