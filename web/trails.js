// Recent centroids drawn as trails (overlay.js): one per object, and for a
// tracked object (one with "instances" in its result) one per instance,
// keyed by the instance's id, instead of the object's (the mean of several
// instances is no place anything went).

// Points kept per trail.
const TRAIL_POINTS = 40;
// A step longer than this fraction of the frame between two results is a
// jump, not motion (object trails only: an instance's id says it is the
// same thing, and the tracker's gate bounds its steps).
const TRAIL_JUMP = 0.2;

// object name -> recent centroids [[cx, cy], ...] in frame pixels
const trails = new Map();
// instance id -> recent centroids while it exists
const instanceTrails = new Map();

export const trailOf = (name) => trails.get(name);
export const instanceTrailOf = (id) => instanceTrails.get(id);

function push(t, x, y) {
  t.push([x, y]);
  if (t.length > TRAIL_POINTS) t.shift();
}

// Forgets every trail (a replay jumped to another frame: no motion joins
// the two).
export function clearTrails() {
  trails.clear();
  instanceTrails.clear();
}

// Adds a frame's centroids; frameW x frameH is the frame's size.
export function addFrame(frame, frameW, frameH) {
  const alive = new Set();
  for (const r of frame.objects || []) {
    if (Array.isArray(r.instances)) {
      trails.delete(r.name);
      // A coasting instance (lost > 0) keeps its trail without adding its
      // predicted position: the trail shows where it was seen.
      for (const i of r.instances) {
        alive.add(i.id);
        let t = instanceTrails.get(i.id);
        if (!t) instanceTrails.set(i.id, (t = []));
        if (i.lost === 0 && typeof i.cx === 'number') push(t, i.cx, i.cy);
      }
      continue;
    }
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
    push(t, r.cx, r.cy);
  }
  // Ids are never reused: a dropped instance's trail goes with it.
  for (const id of instanceTrails.keys()) if (!alive.has(id)) instanceTrails.delete(id);
}

// Forgets the trails of objects no longer in the set.
export function keepOnly(names) {
  for (const n of trails.keys()) if (!names.has(n)) trails.delete(n);
}
