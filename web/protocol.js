// The wire format of protocol/PROTOCOL.md as this page reads it: JSON text
// messages ("hello", "frame", "stats", "status", "error", "objects" and the
// control replies) and binary previews, one JPEG behind a 20-byte "TRKP"
// header. The numbers the daemon enforces (channel ranges, name length,
// object count) are not copied here: they come with each hello
// (hello.limits, see session.js).

// The protocol version this page speaks; a daemon announcing another one is
// reported in the banner.
export const PROTOCOL_VERSION = 1;

const PREVIEW_HEADER_BYTES = 20;
const PREVIEW_MAGIC = [0x54, 0x52, 0x4b, 0x50];   // "TRKP"
const CARVE_MAGIC = [0x54, 0x52, 0x4b, 0x43];     // "TRKC": a carved view, JSON before the JPEG

// Messages the teach and edit panel sees (control.js): replies to its
// requests, object set changes and each hello (a new connection).
export const CONTROL_TYPES = ['hello', 'objects', 'ack', 'sample', 'error'];

// One text message as an object, or null: a message that is not JSON is not
// ours to fix, and one bad message must not stop the page.
export function parseText(text) {
  let msg;
  try {
    msg = JSON.parse(text);
  } catch (e) {
    return null;
  }
  return msg && typeof msg === 'object' ? msg : null;
}

// One binary preview: {seq, previewW, previewH, frameW, frameH, jpeg, carve},
// or null when it is not a preview. carve: a carved view's JSON ("TRKC":
// {carved_from, objects: [{id, bbox, cx, cy}]} in the carved picture's
// pixels), else null.
export function parsePreview(buf) {
  if (buf.byteLength <= PREVIEW_HEADER_BYTES) return null;
  const dv = new DataView(buf);
  const carved = CARVE_MAGIC.every((b, i) => dv.getUint8(i) === b);
  if (!carved && PREVIEW_MAGIC.some((b, i) => dv.getUint8(i) !== b)) return null;
  let at = PREVIEW_HEADER_BYTES;
  let carve = null;
  if (carved) {
    if (buf.byteLength < at + 4) return null;
    const n = dv.getUint32(at, true);
    if (buf.byteLength < at + 4 + n) return null;
    carve = parseText(new TextDecoder().decode(new Uint8Array(buf, at + 4, n)));
    if (!carve || !Array.isArray(carve.objects)) return null;
    at += 4 + n;
  }
  return {
    seq: Number(dv.getBigUint64(4, true)),
    previewW: dv.getUint16(12, true),
    previewH: dv.getUint16(14, true),
    frameW: dv.getUint16(16, true),
    frameH: dv.getUint16(18, true),
    jpeg: new Blob([new Uint8Array(buf, at)], { type: 'image/jpeg' }),
    carve,
  };
}
