// Recent centroids of each object, drawn as a trail behind it (overlay.js).

// Points kept per object.
const TRAIL_POINTS = 40;
// A step longer than this fraction of the frame between two results is a
// jump, not motion.
const TRAIL_JUMP = 0.2;

// object name -> recent centroids [[cx, cy], ...] in frame pixels
const trails = new Map();

export const trailOf = (name) => trails.get(name);

// Adds a frame's centroids; frameW x frameH is the frame's size.
export function addFrame(frame, frameW, frameH) {
  for (const r of frame.objects || []) {
    let t = trails.get(r.name);
    if (!t) trails.set(r.name, (t = []));
    const found = r.found && typeof r.cx === 'number';
    // A loss or a jump (a looping file, a re-acquisition elsewhere) breaks
    // the trail: a line across the picture would show motion that never was.
    const prev = t.length ? t[t.length - 1] : null;
    if (prev && (!found || Math.hypot(r.cx - prev[0], r.cy - prev[1]) > TRAIL_JUMP * Math.max(frameW, frameH))) {
      t.length = 0;
    }
    if (!found) continue;
    t.push([r.cx, r.cy]);
    if (t.length > TRAIL_POINTS) t.shift();
  }
}

// Forgets the trails of objects no longer in the set.
export function keepOnly(names) {
  for (const n of trails.keys()) if (!names.has(n)) trails.delete(n);
}
