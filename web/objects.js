// The objects table beside the video: one row per object with its colour,
// whether it is found, its mass and centroid. It also owns the object
// definitions the daemon announced (hello, then "objects" messages) and the
// colour each object is drawn in.

import { $, DASH, setText, validColor } from './util.js';

// Used when the daemon gives an object no colour.
const PALETTE = ['#ff4d4d', '#4dd2ff', '#ffd24d', '#7dff4d', '#ff4dd2', '#4d7dff', '#ff9f4d', '#b84dff'];

const tbody = $('objects');
const empty = $('objects-empty');

// The definitions as the daemon sent them ({id, name, space, lo, hi, ...}).
let defs = [];
// id -> {id, name, color, row cells}; filled from the definitions, extended
// on the fly when a frame names an object they do not (added at run time).
let rows = new Map();

export const definitions = () => defs;

// The world unit of the set's calibration (null: none): results then carry
// wx, wy, shown under the pixel centroid.
let worldUnit = null;
export function setWorldUnit(unit) {
  worldUnit = unit;
}

// A new object set: the table is rebuilt from it.
export function setDefinitions(list) {
  defs = list;
  rows = new Map();
  tbody.replaceChildren();
  empty.hidden = false;
  for (const d of list || []) addRow(d);
}

// The row of object id ({name, color, ...}), made on the fly if unknown.
export function objectInfo(id, name) {
  return rows.get(id) || addRow({ id, name: name || `#${id}`, color: nextColor() });
}

const nextColor = () => PALETTE[rows.size % PALETTE.length];

function cell(className) {
  const td = document.createElement('td');
  td.className = className;
  return td;
}

function nameCell(def, color) {
  const td = document.createElement('td');
  const swatch = document.createElement('span');
  swatch.className = 'swatch';
  swatch.style.background = color;
  const label = document.createElement('span');
  label.className = 'obj-name';
  label.textContent = def.name;
  td.append(swatch, label);
  if (def.space) td.title = `${def.space} ${JSON.stringify(def.lo)}..${JSON.stringify(def.hi)}`;
  return td;
}

function addRow(def) {
  const color = validColor(def.color) ? def.color : nextColor();
  const tr = document.createElement('tr');
  tr.dataset.id = String(def.id);
  tr.dataset.found = 'false';
  const o = { id: def.id, name: def.name, color, tr,
              found: cell('found'), mass: cell('num mass'), centroid: cell('num centroid') };
  tr.append(nameCell(def, color), o.found, o.mass, o.centroid);
  tbody.append(tr);
  empty.hidden = true;
  setText(o.found, DASH);
  rows.set(def.id, o);
  return o;
}

// The rows show a frame's results.
export function showResults(frame) {
  if (!frame || !Array.isArray(frame.objects)) return;
  for (const r of frame.objects) {
    const o = objectInfo(r.id, r.name);
    const found = !!r.found;
    o.tr.dataset.found = String(found);
    setText(o.found, found ? 'yes' : 'no');
    setText(o.mass, typeof r.mass === 'number' ? String(r.mass) : DASH);
    if (typeof r.cx === 'number' && typeof r.cy === 'number') {
      o.tr.dataset.cx = String(r.cx);
      o.tr.dataset.cy = String(r.cy);
      let text = `${r.cx.toFixed(1)}, ${r.cy.toFixed(1)}`;
      if (typeof r.wx === 'number' && typeof r.wy === 'number') {
        o.tr.dataset.wx = String(r.wx);
        o.tr.dataset.wy = String(r.wy);
        text += `\n${r.wx}, ${r.wy} ${worldUnit || ''}`;
      } else {
        delete o.tr.dataset.wx;
        delete o.tr.dataset.wy;
      }
      setText(o.centroid, text);
    } else {
      delete o.tr.dataset.cx;
      delete o.tr.dataset.cy;
      delete o.tr.dataset.wx;
      delete o.tr.dataset.wy;
      setText(o.centroid, DASH);
    }
  }
}

// fn(def) runs when a row is clicked (the edit panel opens it).
export function onRowClick(fn) {
  tbody.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr');
    if (!tr) return;
    const def = defs[Number(tr.dataset.id)];
    if (def) fn(def);
  });
}

// Highlights the row of the object called name (null: none).
export function markSelected(name) {
  for (const tr of tbody.querySelectorAll('tr')) {
    const def = defs[Number(tr.dataset.id)];
    tr.classList.toggle('selected', !!def && def.name === name);
  }
}
