// The Patterns card of the teach panel: each marker pattern of the set
// (hello / "objects" messages, "patterns"; config/OBJECTS.md "patterns")
// with its colour slots as swatches of the slot objects' colours: a centre
// + dots pattern's centre and its dot colours (each once), a colour code's
// colours in order. Clicking a slot teaches that object (teach.js: drag
// over the dot in the video, tune.js updates the object's range); a slot's
// select gives it another object with blobs, through set_pattern
// (protocol/PROTOCOL.md section 5), which the daemon checks as the objects
// file and answers with an "objects" message that redraws the card.

import { withControl } from './auth.js';
import { request, say } from './control.js';
import { teachExisting } from './tune.js';
import { $, validColor } from './util.js';

const card = $('patterns');
const list = $('pat-list');

let patterns = [];

// What the card shows (read by the page's test hook).
export const patternsState = () => patterns;

// A new set: the card lists its patterns (hidden when there are none).
export function setPatterns(list_, objects) {
  patterns = Array.isArray(list_) ? list_ : [];
  render(Array.isArray(objects) ? objects : []);
}

// The message that gives pattern p's slot (key "center", "dots" or
// "colors"; index k in the list) object name, the rest as they are.
function slotMessage(p, key, k, name) {
  const msg = { type: 'set_pattern', name: p.name };
  if (key === 'center') msg.center = name;
  else msg[key] = p[key].map((n, i) => (i === k ? name : n));
  return msg;
}

function slot(p, key, k, name, objects) {
  const obj = objects.find((o) => o.name === name);
  const div = document.createElement('div');
  div.className = 'pat-slot';
  div.dataset.slot = key === 'center' ? 'center' : `${key}:${k}`;
  const sw = document.createElement('button');
  sw.type = 'button';
  sw.className = 'swatch pat-swatch';
  sw.style.background = obj && validColor(obj.color) ? obj.color : 'transparent';
  sw.title = `teach ${name}: drag over it in the video`;
  sw.setAttribute('aria-label', `teach ${name}`);
  sw.addEventListener('click', () => teachExisting(name));
  const sel = document.createElement('select');
  sel.setAttribute('aria-label', `${p.name} ${key === 'center' ? 'centre' : `${key} ${k + 1}`}`);
  // Only objects with blobs can be a pattern's colour (the daemon says so too).
  for (const o of objects.filter((x) => x.blobs > 0 || x.name === name)) {
    const opt = document.createElement('option');
    opt.value = o.name;
    opt.textContent = o.name;
    sel.append(opt);
  }
  sel.value = name;
  sel.addEventListener('change', () => withControl(() => {
    const msg = slotMessage(p, key, k, sel.value);
    request(msg, () => say(`pattern ${p.name}: ${sel.value} in place of ${name}`), (e) => {
      sel.value = name;
      say(`${e.code}: ${e.message}`, true);
    });
  }));
  div.append(sw, sel);
  return div;
}

function row(label, slots) {
  const div = document.createElement('div');
  div.className = 'pat-row';
  const span = document.createElement('span');
  span.className = 'muted';
  span.textContent = label;
  div.append(span, ...slots);
  return div;
}

function render(objects) {
  list.replaceChildren();
  card.hidden = patterns.length === 0;
  for (const p of patterns) {
    const sec = document.createElement('div');
    sec.className = 'pattern';
    sec.dataset.pattern = p.name;
    const h = document.createElement('h3');
    const team = p.team ? `, team ${p.team}` : '';
    h.textContent = p.kind === 'dots'
      ? `${p.name} (centre + dots${team}, ${p.ids} ids)`
      : `${p.name} (colour code${team}, id ${p.id})`;
    sec.append(h);
    if (p.kind === 'dots') {
      sec.append(row('centre', [slot(p, 'center', 0, p.center, objects)]));
      sec.append(row('dots', (p.dots || []).map((n, k) => slot(p, 'dots', k, n, objects))));
    } else {
      sec.append(row('colours', (p.colors || []).map((n, k) => slot(p, 'colors', k, n, objects))));
    }
    list.append(sec);
  }
}
