// The Light card (issue 27): for each object whose box follows the light
// (the objects file's "illumination" / "adapt", config/OBJECTS.md), its
// drift from the taught box as one bar per channel, a mark when it sits on
// its guard rail, and buttons to reset an object's adaptation or keep the
// boxes in use as the taught ones and save them (reset_range, keep_range:
// protocol/PROTOCOL.md). The card is hidden while frames carry no "range".

import { request, say } from './control.js';
import { $, setText } from './util.js';

const card = $('light');
const rows = $('light-rows');
// A bar is full at this many channel units of drift either way.
const FULL = 64;

// name -> {tr, bars: [{bar, num}], rail}
let byName = new Map();

function bar() {
  const td = document.createElement('td');
  td.className = 'drift';
  const track = document.createElement('span');
  track.className = 'drift-track';
  const fill = document.createElement('span');
  fill.className = 'drift-fill';
  track.append(fill);
  const num = document.createElement('span');
  num.className = 'num';
  td.append(track, num);
  return { td, fill, num };
}

function addRow(name) {
  const tr = document.createElement('tr');
  tr.dataset.name = name;
  const label = document.createElement('td');
  label.textContent = name;
  const bars = [bar(), bar(), bar()];
  const rail = document.createElement('td');
  rail.className = 'rail';
  const act = document.createElement('td');
  const reset = document.createElement('button');
  reset.type = 'button';
  reset.textContent = 'Reset';
  reset.className = 'light-reset-one';
  reset.addEventListener('click', () =>
    request({ type: 'reset_range', name }, () => say(`${name}: range reset to the taught one`)));
  act.append(reset);
  tr.append(label, ...bars.map((b) => b.td), rail, act);
  rows.append(tr);
  const o = { tr, bars, rail };
  byName.set(name, o);
  return o;
}

// A frame's ranges (frame.objects[i].range) shown; the card hidden without.
export function showLight(frame) {
  const list = frame && Array.isArray(frame.objects) ? frame.objects.filter((o) => o.range) : [];
  card.hidden = list.length === 0;
  const seen = new Set();
  for (const o of list) {
    const row = byName.get(o.name) || addRow(o.name);
    seen.add(o.name);
    const r = o.range;
    row.tr.dataset.drift = r.drift.join(',');
    row.tr.dataset.rail = String(!!r.rail);
    row.tr.title = `box ${JSON.stringify(r.lo)}..${JSON.stringify(r.hi)}`;
    r.drift.forEach((d, c) => {
      const b = row.bars[c];
      const w = Math.min(50, (50 * Math.abs(d)) / FULL);
      b.fill.style.left = `${d < 0 ? 50 - w : 50}%`;
      b.fill.style.width = `${w}%`;
      setText(b.num, String(d));
    });
    setText(row.rail, r.rail ? 'on rail' : '');
  }
  for (const [name, row] of byName) {
    if (!seen.has(name)) {
      row.tr.remove();
      byName.delete(name);
    }
  }
}

export function initLight() {
  $('light-reset').addEventListener('click', () =>
    request({ type: 'reset_range' }, () => say('every adapted range reset to the taught one')));
  // keep_range, then save_objects as the Save button does (each its own
  // reply: one request, one reply for this page's control module).
  $('light-keep').addEventListener('click', () =>
    request({ type: 'keep_range' }, () =>
      request({ type: 'save_objects' }, (reply) => say(`ranges kept and saved to ${reply.path}`))));
  byName = new Map();
}
