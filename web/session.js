// What the daemon said on this connection: its last hello, and the limits in
// it (hello.limits, PROTOCOL.md), which are the daemon's own rules for
// objects. The page keeps no copies of them.

let hello = null;

export function setHello(msg) {
  hello = msg;
}

// The last hello, or null before the first.
export function currentHello() {
  return hello;
}

function limits() {
  return (hello && hello.limits) || {};
}

// The channels of a colour space as [{name, max, wraps}, x3] (values run
// 0..max; wraps: lo > hi is a range through 0), or null when the daemon did
// not announce them.
export function channels(space) {
  const sp = limits().spaces && limits().spaces[space];
  const ok = sp && [sp.channels, sp.max, sp.wraps].every((a) => Array.isArray(a) && a.length === 3);
  return ok ? sp.channels.map((name, c) => ({ name, max: sp.max[c], wraps: sp.wraps[c] === true })) : null;
}

// The longest object name in bytes, or null when not announced.
export function nameMaxBytes() {
  const n = limits().name_max_bytes;
  return Number.isInteger(n) && n > 0 ? n : null;
}

// The blob settings' ranges (objects file keys blobs, min_area,
// connectivity; config/OBJECTS.md): from hello.limits when the daemon
// announces them (max_blobs, max_min_area), else the objects file's own
// bounds: blobs 0..64 (TRK_MAX_BLOBS), min_area 1..2^32-1 (a uint32).
export function blobLimits() {
  const l = limits();
  const int = (v, dflt) => (Number.isInteger(v) && v > 0 ? v : dflt);
  return { maxBlobs: int(l.max_blobs, 64), minAreaMax: int(l.max_min_area, 4294967295) };
}
