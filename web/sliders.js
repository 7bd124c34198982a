// The colour box sliders of the edit form: a lo and a hi slider per channel
// of the object's space, each track lit where the box selects. Channel
// names, ranges and which channel may wrap through 0 (the hsv hue) come from
// the daemon's hello (session.js channels()), never from copies here.

import { channels } from './session.js';
import { $ } from './util.js';

// The slider thumb's width in style.css: the track's colour stops follow
// the thumb's centre, which runs from half a thumb to the width minus one.
const THUMB_PX = 14;

const box = $('t-sliders');

let space = null;    // of the sliders shown
let chans = [];      // [{name, max, wraps}] of that space
let lo = [0, 0, 0];
let hi = [255, 255, 255];
const inputs = [];   // [ [loInput, loOut, hiInput, hiOut], ... ]
let wrapNote = null; // says how the wrapping (hue) range reads
let changed = () => {};

const wraps = (c) => chans[c].wraps;

// fn() runs after the user moves a slider.
export function onSliderChange(fn) {
  changed = fn;
}

// The whole range of each channel of sp ({lo, hi}), or null when the daemon
// did not say.
export function fullRange(sp) {
  const ch = channels(sp);
  return ch ? { lo: [0, 0, 0], hi: ch.map((c) => c.max) } : null;
}

// Shows sliders for a box of space sp; false (nothing shown) when the
// daemon did not announce that space's channels.
export function setBox(sp, boxLo, boxHi) {
  const ch = channels(sp);
  box.replaceChildren();
  inputs.length = 0;
  wrapNote = null;
  if (!ch) return false;
  space = sp;
  chans = ch;
  lo = boxLo.slice();
  hi = boxHi.slice();
  chans.forEach((chan, c) => {
    inputs.push(['lo', 'hi'].flatMap((which) => makeSlider(chan, c, which)));
    if (chan.wraps) {
      wrapNote = document.createElement('p');
      wrapNote.id = 't-hue-note';
      wrapNote.className = 'hue-note';
      box.append(wrapNote);
    }
  });
  showValues();
  return true;
}

// The box as the sliders set it, ready to send: {space, lo, hi}.
export function currentBox() {
  normalize();
  return { space, lo: lo.slice(), hi: hi.slice() };
}

// Appends one labelled slider with its value; returns [input, output].
function makeSlider(chan, c, which) {
  const label = document.createElement('label');
  label.textContent = `${chan.name} ${which}`;
  label.htmlFor = `t-${which}${c}`;
  const input = document.createElement('input');
  input.type = 'range';
  input.id = `t-${which}${c}`;
  input.min = '0';
  input.max = String(chan.max);
  input.step = '1';
  const out = document.createElement('output');
  out.htmlFor = input.id;
  input.addEventListener('input', () => {
    const v = Number(input.value);
    (which === 'lo' ? lo : hi)[c] = v;
    // Channels that do not wrap keep lo <= hi: a slider pushed past its
    // partner drags the partner along.
    if (!wraps(c) && lo[c] > hi[c]) {
      if (which === 'lo') hi[c] = v;
      else lo[c] = v;
    }
    showValues();
    changed();
  });
  box.append(label, input, out);
  return [input, out];
}

// Puts the values on the sliders, their outputs, tracks and the wrap note.
export function showValues() {
  inputs.forEach(([loIn, loOut, hiIn, hiOut], c) => {
    loIn.value = String(lo[c]);
    loOut.textContent = String(lo[c]);
    hiIn.value = String(hi[c]);
    hiOut.textContent = String(hi[c]);
    const track = trackGradient(c, chans[c].max);
    loIn.style.setProperty('--track', track);
    hiIn.style.setProperty('--track', track);
  });
  if (wrapNote) {
    const c = chans.findIndex((ch) => ch.wraps);
    const w = lo[c] > hi[c];
    wrapNote.textContent = w
      ? `wraps through 0: ${lo[c]}..${chans[c].max} and 0..${hi[c]}`
      : `hue ${lo[c]}..${hi[c]}`;
    wrapNote.classList.toggle('wraps', w);
  }
}

// The selected values of channel c as [from, to] parts: two when a range
// wraps through 0.
function selectedParts(c, max) {
  if (lo[c] <= hi[c]) return [[lo[c], hi[c]]];
  if (wraps(c)) return [[0, hi[c]], [lo[c], max]];
  return [[lo[c], lo[c]]];
}

// A track background with the selected parts in the accent colour.
function trackGradient(c, max) {
  // Value v's place on the track as a CSS length (see THUMB_PX); half a
  // step either side, so one selected value still shows.
  const at = (v, end) => {
    if (v <= 0 && !end) return '0%';
    if (v >= max && end) return '100%';
    const f = Math.min(1, Math.max(0, (end ? v + 0.5 : v - 0.5) / max));
    return `calc(${(f * 100).toFixed(3)}% + ${((0.5 - f) * THUMB_PX).toFixed(2)}px)`;
  };
  const stops = [];
  let from = '0%';
  for (const [a, b] of selectedParts(c, max)) {
    stops.push(`var(--track-off) ${from} ${at(a, false)}`, `var(--accent) ${at(a, false)} ${at(b, true)}`);
    from = at(b, true);
  }
  stops.push(`var(--track-off) ${from} 100%`);
  return `linear-gradient(to right, ${stops.join(', ')})`;
}

// A wrapping channel may have lo > hi; others must keep lo <= hi (the
// sliders already do; this keeps a request valid whatever set the values).
function normalize() {
  for (let c = 0; c < chans.length; c++) {
    if (wraps(c)) continue;
    if (lo[c] > hi[c]) hi[c] = lo[c];
  }
}
