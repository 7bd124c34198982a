// Painting a colour class (config/OBJECTS.md "Classes"): with "Paint class"
// pressed, each rectangle dragged over the video adds the colours of its
// pixels, in the frame on screen, to the class object named in the panel
// ("paint_class", PROTOCOL.md section 5); a shift-drag takes them out. The
// object is made on the first stroke ("add_object" with "class": its file,
// saved beside the objects file by Save). Painting over the object in a few
// frames (as it moves, turns, passes a shadow) collects its colours; the
// mask view shows what the class takes meanwhile.

import { withControl } from './auth.js';
import { request, say } from './control.js';
import { dragFrameRect, isTeaching, showDragRect } from './teach.js';
import { $ } from './util.js';
import { canvas, shownPreviewSeq, stageBox } from './view.js';

const button = $('t-paint');
const row = $('t-paint-row');
const nameEl = $('t-paint-name');

let painting = false;
let drag = null;        // {x0, y0, x1, y1, remove} in client pixels
let made = null;        // the class object this page made or found
let lastAck = null;     // the last paint_class ack ({cells})
let lastError = null;

export const paintState = () => ({ painting, lastAck, lastError, made });

// The class file for an object name: its characters a file name may hold.
function fileFor(name) {
  const base = name.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '').slice(0, 59);
  return `${base || 'class'}.lut`;
}

function setPainting(on) {
  painting = on;
  button.setAttribute('aria-pressed', String(on));
  row.hidden = !on;
  stageBox.classList.toggle('teaching', on);
  // The mask view shows the class while it is painted.
  request({ type: 'preview', mask: on && made ? made : null });
  if (on) say('paint: drag over the object (shift: remove those colours), in a few frames');
}

// Sends one stroke (rect in frame pixels) to the class object name.
function paint(name, rect, remove) {
  const msg = Object.assign({ type: 'paint_class', name, remove }, rect);
  const seq = shownPreviewSeq();
  if (seq !== null) msg.seq = seq;
  request(msg, (r) => {
    lastAck = r;
    say(`${name}: ${r.cells} colour cells painted`);
  }, (e) => {
    lastError = e;
    say(`${e.code}: ${e.message}`, true);
  });
}

// The class object exists (made once by this page, or already in the set)
// before the stroke is sent.
function stroke(rect, remove) {
  const name = nameEl.value.trim();
  if (!name) return say('name the class first', true);
  if (made === name) return paint(name, rect, remove);
  request({ type: 'add_object', object: { name, class: fileFor(name), min_mass: 20 } }, () => {
    made = name;
    request({ type: 'preview', mask: name });
    paint(name, rect, remove);
  }, (e) => {
    if (e.code !== 'duplicate_name') {
      lastError = e;
      return say(`${e.code}: ${e.message}`, true);
    }
    made = name; // there already: a class object, or paint_class says it is not
    paint(name, rect, remove);
  });
}

export function initPaint() {
  button.addEventListener('click', () => {
    if (painting) setPainting(false);
    else withControl(() => setPainting(true));
  });
  $('t-paint-clear').addEventListener('click', () => {
    const name = nameEl.value.trim();
    if (name) request({ type: 'clear_class', name }, () => say(`${name}: cleared`));
  });
  nameEl.addEventListener('change', () => { made = null; });
  canvas.addEventListener('pointerdown', (ev) => {
    if (!painting || isTeaching()) return;
    ev.preventDefault();
    canvas.setPointerCapture(ev.pointerId);
    drag = { x0: ev.clientX, y0: ev.clientY, x1: ev.clientX, y1: ev.clientY, remove: ev.shiftKey };
    showDragRect(drag);
  });
  for (const type of ['pointermove', 'pointerup']) {
    canvas.addEventListener(type, (ev) => {
      if (!drag) return;
      drag.x1 = ev.clientX;
      drag.y1 = ev.clientY;
      if (type !== 'pointerup') return showDragRect(drag);
      const rect = dragFrameRect(drag), remove = drag.remove;
      drag = null;
      showDragRect(null);
      if (rect) stroke(rect, remove);
    });
  }
}
