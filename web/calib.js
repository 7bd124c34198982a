// Calibration mode (config/OBJECTS.md, calibration): the user clicks 4 or
// more points of a known rectangle (or any known points) on the floor in the
// video, types where each lies in the world and the unit, and saves. The
// points go to the daemon in set_objects with the calibration alone
// (PROTOCOL.md section 5): the daemon keeps its own objects exactly as they
// are and checks the points as the objects file's loader does (an error
// comes back with its message), then save_objects with "part":"calibration"
// writes only them into the file (objects added or tuned but not saved stay
// out of it; with no file yet the whole set is written, and the page says so).
// Lens parameters (camera_matrix, distortion) of the calibration in use are
// kept: the page does not edit them.

import { withControl } from './auth.js';
import { request, say } from './control.js';
import { latestFrame } from './frames.js';
import { currentHello } from './session.js';
import { setTeaching } from './teach.js';
import { $, savedText } from './util.js';
import { canvas, stageBox } from './view.js';

const el = {
  mode: $('c-mode'), form: $('c-form'), unit: $('c-unit'), rows: $('c-points'),
  save: $('c-save'), undo: $('c-undo'), remove: $('c-remove'), cancel: $('c-cancel'),
  status: $('c-status'),
};

let active = false;
let points = [];       // [{px, py, wx, wy}]: pixels as clicked, world as typed (strings)
let current = null;    // the daemon's calibration (hello, objects), null = none
let saved = null;      // the last save_objects ack of a calibration save
const marks = [];      // the numbered markers over the video

// What the browser tests read.
export const calibState = () => ({
  active, current, saved,
  points: points.map((p) => ({ px: p.px, py: p.py, wx: p.wx, wy: p.wy })),
});

// hello / objects: the calibration in use (null for none).
export function setCalibration(cal) {
  current = cal && Array.isArray(cal.points) ? cal : null;
  showStatus();
}

export const worldUnit = () => (current ? current.unit : null);

function showStatus() {
  el.status.textContent = current
    ? `${current.points.length} points, unit ${current.unit}, fit error ${fmtNum(current.rms)} ` +
      `${current.unit}${current.camera_matrix ? ', lens corrected' : ''}`
    : 'none: results are in pixels only';
}

const fmtNum = (v) => (typeof v === 'number' ? Number(v.toPrecision(3)).toString() : '?');

function frameSize() {
  const f = latestFrame();
  const h = currentHello();
  return [(f && f.width) || (h && h.width) || 1, (f && f.height) || (h && h.height) || 1];
}

// Client (CSS) pixels -> frame pixels, continuous: a pixel's centre is its
// integer coordinate, as for centroids (overlay.js draws x at (x + 0.5) * scale).
function toFrame(clientX, clientY) {
  const r = canvas.getBoundingClientRect();
  const [fw, fh] = frameSize();
  const x = ((clientX - r.left) / r.width) * fw - 0.5;
  const y = ((clientY - r.top) / r.height) * fh - 0.5;
  const round2 = (v) => Math.round(v * 100) / 100;
  return [round2(Math.min(fw - 0.5, Math.max(-0.5, x))), round2(Math.min(fh - 0.5, Math.max(-0.5, y)))];
}

function placeMarks() {
  const r = canvas.getBoundingClientRect();
  const box = stageBox.getBoundingClientRect();
  const [fw, fh] = frameSize();
  while (marks.length > (active ? points.length : 0)) marks.pop().remove();
  if (!active) return;
  points.forEach((p, i) => {
    if (!marks[i]) {
      const m = document.createElement('span');
      m.className = 'calib-mark';
      stageBox.append(m);
      marks.push(m);
    }
    marks[i].textContent = String(i + 1);
    marks[i].style.left = `${r.left - box.left + ((p.px + 0.5) / fw) * r.width}px`;
    marks[i].style.top = `${r.top - box.top + ((p.py + 0.5) / fh) * r.height}px`;
  });
}

function numberInput(p, key, label) {
  const input = document.createElement('input');
  input.type = 'number';
  input.step = 'any';
  input.required = true;
  input.value = p[key];
  input.setAttribute('aria-label', label);
  input.addEventListener('input', () => { p[key] = input.value; });
  return input;
}

function renderRows() {
  el.rows.replaceChildren();
  points.forEach((p, i) => {
    const tr = document.createElement('tr');
    const n = document.createElement('td');
    n.textContent = String(i + 1);
    const px = document.createElement('td');
    px.className = 'num';
    px.textContent = `${p.px.toFixed(1)}, ${p.py.toFixed(1)}`;
    const wx = document.createElement('td');
    wx.append(numberInput(p, 'wx', `point ${i + 1} world x`));
    const wy = document.createElement('td');
    wy.append(numberInput(p, 'wy', `point ${i + 1} world y`));
    tr.append(n, px, wx, wy);
    el.rows.append(tr);
  });
  placeMarks();
}

function start() {
  setTeaching(false);
  active = true;
  points = current ? current.points.map(([px, py, wx, wy]) => ({ px, py, wx: String(wx), wy: String(wy) })) : [];
  el.unit.value = current ? current.unit : 'mm';
  el.form.hidden = false;
  el.mode.setAttribute('aria-pressed', 'true');
  stageBox.classList.add('calibrating');
  renderRows();
  say('calibrate: click 4 or more points of the floor whose world position you know ' +
      '(the corners of a rectangle), then type each one\'s world x and y');
}

function stop() {
  active = false;
  el.form.hidden = true;
  el.mode.setAttribute('aria-pressed', 'false');
  stageBox.classList.remove('calibrating');
  placeMarks();
}

// Sends calibration cal (null removes it), then saves only the calibration
// into the file (save_objects "part"): no objects are sent, and objects
// added or tuned but not saved stay out of the file.
function apply(cal, what) {
  request({ type: 'set_objects', calibration: cal }, () => {
    request({ type: 'save_objects', part: 'calibration' }, (r) => {
      saved = r;
      say(savedText(r, what));
      stop();
    });
  });
}

function onSave(ev) {
  ev.preventDefault();
  const unit = el.unit.value.trim();
  if (points.length < 4) return say(`click at least 4 points (${points.length} so far)`, true);
  if (!unit) return say('type the world unit (mm, m, in, ...)', true);
  const rows = [];
  for (const [i, p] of points.entries()) {
    const wx = Number(p.wx), wy = Number(p.wy);
    if (p.wx === '' || p.wy === '' || !isFinite(wx) || !isFinite(wy))
      return say(`type point ${i + 1}'s world x and y (numbers)`, true);
    rows.push([p.px, p.py, wx, wy]);
  }
  const cal = { unit, points: rows };
  if (current && current.camera_matrix) cal.camera_matrix = current.camera_matrix;
  if (current && current.distortion) cal.distortion = current.distortion;
  apply(cal, `calibration of ${rows.length} points`);
}

export function initCalib() {
  el.mode.addEventListener('click', () => {
    if (active) stop();
    else withControl(start);
  });
  canvas.addEventListener('pointerdown', (ev) => {
    if (!active) return;
    ev.preventDefault();
    const [px, py] = toFrame(ev.clientX, ev.clientY);
    points.push({ px, py, wx: '', wy: '' });
    renderRows();
    const inputs = el.rows.querySelectorAll('input');
    if (inputs.length >= 2) inputs[inputs.length - 2].focus();
  });
  el.form.addEventListener('submit', onSave);
  el.undo.addEventListener('click', () => {
    points.pop();
    renderRows();
  });
  el.cancel.addEventListener('click', () => {
    stop();
    say('calibration unchanged');
  });
  el.remove.addEventListener('click', () => withControl(() => {
    apply(null, 'calibration removal');
  }));
  new ResizeObserver(placeMarks).observe(stageBox);
  window.addEventListener('resize', placeMarks);
  showStatus();
}
