// Small helpers the page's modules share: DOM look-ups, number formatting,
// rate measurement and overlay colours.

// Shown where a value is not known.
export const DASH = '\u2013';

export const $ = (id) => document.getElementById(id);

// Writes only on change: most refreshes repeat the text already shown.
export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

// What the ack of a save_objects with "part" says was written: `what`
// ("calibration of 4 points") alone into the file as it was, or, when there
// was no file yet ("whole"), the daemon's whole set.
export function savedText(ack, what) {
  if (ack.whole)
    return `${what}: no file yet, so the whole set (${ack.count} object${ack.count === 1 ? '' : 's'}) ` +
      `was saved to ${ack.path}`;
  return `${what} saved to ${ack.path}; nothing else in the file changed`;
}

// A number to `digits` decimals; a value that rounds to zero is "0.0", never
// "-0.0" (a latency a hair under zero: the browser's and the daemon's clocks).
export function fmt(v, digits) {
  if (typeof v !== 'number' || !isFinite(v)) return DASH;
  const t = v.toFixed(digits);
  return /^-0(\.0*)?$/.test(t) ? t.slice(1) : t;
}

// A count from a message, or a dash when the daemon did not send it.
export function count(v) {
  return v !== undefined ? String(v) : DASH;
}

// Frames per second over a sliding window of arrival times.
export class RateMeter {
  constructor(windowMs) {
    this.windowMs = windowMs;
    this.times = [];
  }

  tick(now) {
    this.times.push(now);
    this.prune(now);
  }

  prune(now) {
    while (this.times.length && now - this.times[0] > this.windowMs) this.times.shift();
  }

  rate(now) {
    this.prune(now);
    const n = this.times.length;
    if (n < 2) return 0;
    return ((n - 1) * 1000) / (this.times[n - 1] - this.times[0] || 1);
  }
}

// Black or white, whichever reads better on the given #rrggbb.
export function inkFor(hex) {
  const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || '');
  if (!m) return '#000';
  const [r, g, b] = m.slice(1).map((h) => parseInt(h, 16));
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#000' : '#fff';
}

export function validColor(c) {
  return typeof c === 'string' && /^#[0-9a-f]{6}$/i.test(c);
}
