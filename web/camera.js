// The Camera card: the V4L2 camera's exposure, gain and white balance as an
// auto/manual switch and sliders per group, with the ranges the daemon
// reads from the driver ("get_camera", "set_camera", PROTOCOL.md section
// 5). The daemon keeps what is set in the objects' camera section: the
// card's Save writes only that section into the file ("part":"camera"), the
// teach panel's Save the whole set with it. Files and the demo have no
// controls: the card then says why and shows none. While teaching, the
// teach panel says when automatic white balance (or exposure, or gain) is
// on: the camera then changes the colours a taught box must match; its
// "Lock now" button switches those modes off, so the camera keeps the
// values it has at that moment (a V4L2 camera holds its present exposure,
// gain and white balance when their automatic mode goes off).

import { isAuthed, withControl } from './auth.js';
import { send } from './connection.js';
import { isTeaching } from './teach.js';
import { $, savedText } from './util.js';

// Slider moves are sent at most this often (each is an ioctl on the camera).
const SEND_EVERY_MS = 100;
const GROUPS = [['exposure', 'Exposure'], ['gain', 'Gain'], ['white_balance', 'White balance']];

const el = {
  card: $('camera'), note: $('cam-note'), unlock: $('cam-unlock'), save: $('cam-save'),
  groups: $('cam-groups'),
  msg: $('cam-msg'), warn: $('cam-auto-warn'), warnText: $('cam-auto-text'), lock: $('cam-lock'),
  teachForm: $('t-form'),
};

const cam = {
  available: null,   // null: not known yet
  reason: null,      // why there are no controls
  device: null,
  controls: [],      // as the last "camera" message had them
  lastAck: null,     // the last set_camera ack
  saved: null,       // the last save_objects ack of the card's Save
  lastError: null,   // the last error reply to this card
  stale: false,      // the camera went away (or did not answer): asked again when back
};
let nextId = 1;
const mine = new Map();   // id of this card's request -> its type
const pendingSet = new Map();   // control name -> {value, timer}
const lastSent = new Map();     // control name -> time of the last send

// The card's state (read by the page's test hook).
export const cameraState = () => ({ ...cam, autoWarning: el.warn.hidden ? null : el.warnText.textContent });

function say(text, bad) {
  el.msg.textContent = text;
  el.msg.classList.toggle('bad', !!bad);
}

function request(msg) {
  const id = `cam${nextId++}`;
  mine.set(id, msg.type);
  if (!send(Object.assign({ id }, msg))) {
    mine.delete(id);
    say('not connected', true);
  }
}

const fetchState = () => request({ type: 'get_camera' });

// Every text message the page gets.
export function onMessage(msg) {
  if (msg.type === 'hello') {
    cam.available = null;
    mine.clear();   // replies on the old connection never come
    if (isAuthed()) fetchState();
    else showLocked();
    return;
  }
  // Editing unlocked (auth.js) after the hello: now the card may ask; and
  // again when the camera is back after an outage.
  if (msg.type === 'ack' && msg.request === 'auth' && cam.available === null) fetchState();
  if (msg.type === 'status') onStatus(msg);
  if (msg.type === 'camera' && (msg.id === undefined || mine.has(msg.id))) {
    mine.delete(msg.id);
    return show(msg);
  }
  if (msg.id === undefined || !mine.has(msg.id)) return;
  const asked = mine.get(msg.id);
  mine.delete(msg.id);
  if (msg.type === 'error') return onError(msg, asked);
  if (msg.type === 'ack' && msg.request === 'set_camera') {
    cam.lastAck = msg;
    say(`${msg.name} = ${msg.value}`);
  }
  if (msg.type === 'ack' && msg.request === 'save_objects') {
    cam.saved = msg;
    say(savedText(msg, 'camera settings'));
  }
}

function onError(err, asked) {
  cam.lastError = err;
  if (err.code === 'unauthorized') return showLocked();
  say(`${err.code}: ${err.message}`, true);
  if (asked === 'get_camera') {
    // Asked again when the camera is back (a "status" ok).
    cam.stale = true;
    showGone('The camera does not answer now.');
  } else if (err.code !== 'busy') {
    fetchState();   // the sliders go back to what the camera has
  }
}

// The source went away (its controls with it) or came back.
function onStatus(msg) {
  if (msg.source === 'lost' && cam.available) {
    cam.stale = true;
    showGone('The camera is gone; its controls come back with it.');
  } else if (msg.source === 'ok' && (cam.stale || cam.available === null) && isAuthed() &&
             ![...mine.values()].includes('get_camera')) {
    fetchState();
  }
}

function showGone(text) {
  el.note.textContent = text;
  el.groups.replaceChildren();
  el.save.hidden = true;
}

function showLocked() {
  el.note.textContent = 'The camera controls need the control token.';
  el.unlock.hidden = false;
  el.save.hidden = true;
  el.groups.replaceChildren();
}

el.unlock.addEventListener('click', () => withControl(fetchState));
// Only the camera section as set here, into the file as it is: objects
// edited but not saved stay out of it.
el.save.addEventListener('click', () =>
  withControl(() => request({ type: 'save_objects', part: 'camera' })));

// A "camera" message: the controls the source has now.
function show(msg) {
  cam.available = !!msg.available;
  cam.reason = msg.reason || null;
  cam.device = msg.device || null;
  cam.controls = Array.isArray(msg.controls) ? msg.controls : [];
  cam.stale = false;
  el.unlock.hidden = true;
  el.save.hidden = !cam.available || !cam.controls.length;
  el.card.classList.toggle('cam-none', !cam.available || !cam.controls.length);
  if (!cam.available) {
    el.note.textContent = `No camera controls: ${cam.reason || 'the source has none'}.`;
    el.groups.replaceChildren();
    return;
  }
  el.note.textContent = cam.controls.length
    ? `${cam.device}: Save keeps these in the objects file.`
    : `${cam.device} has no exposure, gain or white balance controls.`;
  // A slider being dragged keeps its place; the rest is redrawn.
  if (document.activeElement && el.groups.contains(document.activeElement)
      && document.activeElement.type === 'range') {
    updateValues();
    return;
  }
  el.groups.replaceChildren(...GROUPS.map(([g, title]) => groupBox(g, title)).filter(Boolean));
}

const autoOn = (c) => c.value !== c.manual_value;

function groupBox(group, title) {
  const ctrls = cam.controls.filter((c) => c.group === group);
  if (!ctrls.length) return null;
  const box = document.createElement('fieldset');
  box.className = 'cam-group';
  box.dataset.group = group;
  const legend = document.createElement('legend');
  legend.textContent = title;
  box.append(legend);
  const auto = ctrls.find((c) => c.auto);
  if (auto) {
    const label = document.createElement('label');
    label.className = 'check';
    const input = document.createElement('input');
    input.type = 'checkbox';
    input.dataset.name = auto.name;
    input.checked = autoOn(auto);
    input.disabled = auto.fixed;
    label.title = auto.fixed ? `${auto.name} is set by --control on trackd's command line` : auto.label;
    input.addEventListener('change', () => {
      setControl(auto.name, input.checked ? auto.auto_value : auto.manual_value, true);
    });
    label.append(input, ' auto');
    box.append(label);
  }
  for (const c of ctrls.filter((k) => !k.auto)) box.append(slider(c, auto));
  return box;
}

function slider(c, auto) {
  const row = document.createElement('label');
  row.className = 'cam-slider';
  const name = document.createElement('span');
  name.textContent = c.label;
  const input = document.createElement('input');
  input.type = 'range';
  input.min = String(c.min);
  input.max = String(c.max);
  input.step = String(c.step);
  input.value = String(c.value);
  input.dataset.name = c.name;
  const out = document.createElement('output');
  out.textContent = String(c.value);
  input.disabled = c.fixed || c.inactive || (auto && autoOn(auto));
  row.title = c.fixed ? `${c.name} is set by --control on trackd's command line, which wins`
    : input.disabled ? `${c.label}: the camera sets it while auto is on` : `${c.label} ${c.min}..${c.max}`;
  input.addEventListener('input', () => {
    out.textContent = input.value;
    setControl(c.name, Number(input.value), false);
  });
  input.addEventListener('change', () => setControl(c.name, Number(input.value), true));
  row.append(name, input, out);
  return row;
}

// The values of a message into the controls shown, the dragged one aside.
function updateValues() {
  for (const c of cam.controls) {
    const input = el.groups.querySelector(`input[data-name="${c.name}"]`);
    if (!input) continue;
    const auto = cam.controls.find((k) => k.group === c.group && k.auto);
    if (input.type === 'range') input.disabled = c.fixed || c.inactive || (auto && autoOn(auto));
    if (input === document.activeElement) continue;
    if (input.type === 'checkbox') input.checked = autoOn(c);
    else input.value = String(c.value);
  }
}

// Sends one control's new value: at once when final or not sent lately,
// else the newest after SEND_EVERY_MS.
function setControl(name, value, final) {
  const old = pendingSet.get(name);
  if (old) clearTimeout(old.timer);
  pendingSet.delete(name);
  const wait = (lastSent.get(name) || 0) + SEND_EVERY_MS - performance.now();
  const go = () => {
    pendingSet.delete(name);
    lastSent.set(name, performance.now());
    withControl(() => request({ type: 'set_camera', name, value }));
  };
  if (final || wait <= 0) go();
  else pendingSet.set(name, { value, timer: setTimeout(go, wait) });
}

// Automatic white balance re-tints the picture as the scene changes, and
// automatic exposure and gain brighten or darken it: a colour taught now
// may not match later.
const AUTO_NAMES = { white_balance: 'white balance', exposure: 'exposure', gain: 'gain' };

// The automatic controls that are on, of the groups a taught colour
// depends on.
const autosOn = () => cam.controls.filter((c) => c.auto && autoOn(c) && AUTO_NAMES[c.group]);

function refreshWarning() {
  const teaching = isTeaching() || (el.teachForm && !el.teachForm.hidden);
  const on = !cam.available || !teaching ? [] : [...new Set(autosOn().map((c) => c.group))];
  const they = on.length > 1 ? 'them' : 'it';
  const text = on.length ? `Automatic ${on.map((g) => AUTO_NAMES[g]).join(' and ')} ${on.length > 1 ? 'are' : 'is'} on: `
    + 'the camera changes the colours as the scene changes, so a colour taught now may not match '
    + `later. Lock ${they} at the present values, or set ${they} in Camera first.` : '';
  if (el.warnText.textContent !== text) el.warnText.textContent = text;
  el.lock.textContent = `Lock ${they} now`;
  el.lock.disabled = !autosOn().some((c) => !c.fixed);
  if (el.warn.hidden !== !text) el.warn.hidden = !text;
}

// Every automatic mode the warning names goes off; the camera keeps what
// it has now. Its acks and the "camera" broadcast update the card.
function lockAutos() {
  const on = autosOn().filter((c) => !c.fixed);
  for (const c of on) setControl(c.name, c.manual_value, true);
  if (on.length) say(`locked: ${on.map((c) => c.label || c.name).join(', ')} off at the present values`);
}

export function initCamera() {
  el.lock.addEventListener('click', lockAutos);
  setInterval(refreshWarning, 250);
}
