// The teach and edit panel: a taught sample or a clicked row opens the form,
// whose sliders (sliders.js) tune the object's colour box while the preview
// shows its mask (this page's own view: a range not yet added too), and its
// min mass, blob settings (blobs, min_area, connectivity) and tracking
// (track, coast_frames) sit under them; objects are added, renamed, updated,
// removed, saved to the daemon's objects file or reloaded from it, through
// the control messages of protocol/PROTOCOL.md section 5 (control.js). An
// edit sends only the keys the form changed ("changes"): the daemon keeps
// every other key of the object as it has it.

import { onHello as authOnHello, withControl } from './auth.js';
import { handleReply, request, say } from './control.js';
import { definitions, markSelected, onRowClick } from './objects.js';
import { blobLimits, nameMaxBytes } from './session.js';
import { currentBox, fullRange, onSliderChange, setBox, showValues } from './sliders.js';
import { initTeach, pauseState, setPaused, setTeaching } from './teach.js';
import { $ } from './util.js';

// Slider edits are sent at most this often (the daemon applies each one
// between frames; faster would only queue work).
const SEND_EVERY_MS = 100;

const el = {
  save: $('t-save'), reload: $('t-reload'), rewind: $('t-rewind'),
  form: $('t-form'), name: $('t-name'), space: $('t-space'),
  mask: $('t-mask'), add: $('t-add'), remove: $('t-remove'), done: $('t-done'),
  blobs: $('t-blobs'), minArea: $('t-min-area'), conn: $('t-conn'),
  track: $('t-track'), coast: $('t-coast'), minMass: $('t-min-mass'), warn: $('t-warn'),
};

// The objects file's defaults for the blob keys (config/OBJECTS.md): an
// object is sent with a key only when it differs, so an object without
// blobs reads the same to a daemon that predates them.
const BLOB_DEFAULTS = { blobs: 0, min_area: 1, connectivity: 8, track: false, coast_frames: 10 };

// A taught object's min_mass and min_area: this share of the sampled
// rectangle's pixels. The drag covers (part of) the object, so a tenth of
// it is found even when half the object is hidden, while specks of noise
// (a few pixels) are not.
const MIN_SHARE_OF_SAMPLE = 0.1;
// Sample warnings: a mean saturation below this (of 255) has no reliable
// hue; a suggested range matching more than this share of the whole frame
// was taken mostly from the background.
const LOW_SATURATION = 48;
const BACKGROUND_SHARE = 0.25;

const tune = {
  editing: null,     // name of the object the form edits, null = a new one
  suggest: null,     // last sample reply's suggest_all
  lastSample: null,
  lastAck: null,
  saved: null,       // last save_objects ack
};

// What the panel is doing (read by the page's test hook).
export const tuneState = () => tune;

// The daemon's messages for this panel (protocol.js CONTROL_TYPES).
export function onControl(msg) {
  if (msg.type === 'hello') {
    const n = nameMaxBytes();
    if (n) el.name.maxLength = n;
    // A new connection: the daemon holds no frame and shows no mask for it.
    setPaused(false, false);
    el.mask.checked = false;
    return authOnHello(msg);
  }
  handleReply(msg);
  if (msg.type === 'objects') markSelected(tune.editing);
}

const noLimits = (sp) => say(`the daemon did not describe the ${sp} channels (hello.limits)`, true);

// A new object as the form sets it, or null (and the reason said) when a
// field holds no valid value.
function newObject() {
  const f = formFields();
  if (!f) return null;
  const o = { name: f.name, space: f.space, lo: f.lo, hi: f.hi, min_mass: f.min_mass };
  for (const k of Object.keys(BLOB_DEFAULTS)) if (f[k] !== BLOB_DEFAULTS[k]) o[k] = f[k];
  return o;
}

// Every field of the form, or null (and the reason said).
function formFields() {
  const b = blobSettings();
  if (typeof b === 'string') {
    say(b, true);
    return null;
  }
  return { name: el.name.value.trim(), ...currentBox(), ...b };
}

// The keys whose form value differs from def's: what an edit changes.
function changesFrom(def, f) {
  const changes = {};
  for (const [k, v] of Object.entries(f))
    if (JSON.stringify(def[k]) !== JSON.stringify(v)) changes[k] = v;
  return changes;
}

// {min_mass, blobs, min_area, connectivity, track, coast_frames} from the
// form, or what is wrong with them.
function blobSettings() {
  const { maxBlobs, minAreaMax } = blobLimits();
  const int = (input, lo, hi, what) => {
    const v = input.value.trim() === '' ? NaN : Number(input.value);
    return Number.isSafeInteger(v) && v >= lo && v <= hi ? v : `${what} must be a whole number ${lo}..${hi}`;
  };
  const minMass = int(el.minMass, 1, Number.MAX_SAFE_INTEGER, 'min mass');
  const blobs = int(el.blobs, 0, maxBlobs, 'blobs');
  const minArea = int(el.minArea, 1, minAreaMax, 'min area');
  const coast = int(el.coast, 0, 1000, 'coast');
  for (const v of [minMass, blobs, minArea, coast]) if (typeof v === 'string') return v;
  // The daemon refuses it too; said here before anything is sent.
  if (el.track.checked && blobs < 1) return 'track needs blobs 1 or more (the most it follows)';
  return { min_mass: minMass, blobs, min_area: minArea, connectivity: Number(el.conn.value),
           track: el.track.checked, coast_frames: coast };
}

// Puts def's blob settings (the defaults where it has none) on the form.
function showBlobSettings(def) {
  const { maxBlobs, minAreaMax } = blobLimits();
  el.blobs.max = String(maxBlobs);
  el.minArea.max = String(minAreaMax);
  const get = (k) => (Number.isInteger(def[k]) ? def[k] : BLOB_DEFAULTS[k]);
  el.minMass.value = String(Number.isInteger(def.min_mass) && def.min_mass > 0 ? def.min_mass : 1);
  el.blobs.value = String(get('blobs'));
  // The file's 0 means 1 (min_area) and 8 (connectivity).
  el.minArea.value = String(get('min_area') || 1);
  el.conn.value = get('connectivity') === 4 ? '4' : '8';
  el.track.checked = def.track === true;
  el.coast.value = String(get('coast_frames'));
}

let sendTimer = null;
let lastSent = 0;
// A form edit: an object's is sent (a new object is sent by "Add", but its
// range shows in the mask view at once).
function changed() {
  if (tune.editing === null && !el.mask.checked) return;
  const wait = Math.max(0, lastSent + SEND_EVERY_MS - performance.now());
  if (sendTimer) return;
  sendTimer = setTimeout(() => {
    sendTimer = null;
    lastSent = performance.now();
    if (tune.editing === null) sendMask();
    else sendUpdate();
  }, wait);
}

function sendUpdate() {
  const f = formFields();
  showValues();
  const def = definitions().find((d) => d.name === tune.editing);
  if (!f || !def) return;
  const changes = changesFrom(def, f);
  if (Object.keys(changes).length === 0) return;
  request({ type: 'update_object', name: tune.editing, changes }, (r) => {
    tune.lastAck = r;
    tune.editing = f.name;
    say(`updated ${f.name}`);
  });
}

// This page's mask view: the edited object, or the form's range before it
// is added; null when the box is unticked.
function sendMask() {
  let mask = null;
  if (el.mask.checked) {
    const { space, lo, hi } = currentBox();
    mask = tune.editing !== null ? tune.editing : { space, lo, hi };
  }
  request({ type: 'preview', mask }, (r) => {
    tune.lastAck = r;
    if (mask !== null && pauseState().paused) say('the mask shows once the video is resumed');
  });
}

// What to watch out for in sample r for an object in space sp (the form's
// warning line; empty when nothing).
function sampleWarnings(r, sp) {
  const w = [];
  if (sp === 'hsv' && r.hsv[1] < LOW_SATURATION)
    w.push(`low saturation (S ${r.hsv[1]} of 255): grey, white and black have no reliable hue; ` +
           'use rgb or ycbcr, or sample a more colourful part');
  const share = r.frame_share && r.frame_share[sp];
  if (typeof share === 'number' && share > BACKGROUND_SHARE)
    w.push(`this range matches ${Math.round(share * 100)}% of the frame: the sample is mostly ` +
           'background; drag over the object only (Pause video holds a moving one)');
  return w.join('; ');
}

function showWarnings() {
  const r = tune.editing === null ? tune.lastSample : null;
  el.warn.textContent = r ? sampleWarnings(r, el.space.value) : '';
  el.warn.hidden = el.warn.textContent === '';
}

function openForm(editing, def) {
  // A painted class has no box to edit: it is painted (paint.js).
  if (def.space === 'class') return say(`${def.name} is a painted class: Paint class, name it ${def.name}, drag over it`);
  if (!setBox(def.space, def.lo, def.hi)) return noLimits(def.space);
  tune.editing = editing;
  el.form.hidden = false;
  el.name.value = def.name || '';
  el.space.value = def.space;
  showBlobSettings(def);
  el.add.textContent = editing === null ? 'Add object' : 'Rename';
  el.remove.hidden = editing === null;
  // A mask view that is on follows the form to what it now shows.
  if (el.mask.checked) sendMask();
  showWarnings();
  markSelected(tune.editing);
}

function closeForm() {
  if (el.mask.checked) request({ type: 'preview', mask: null });
  el.mask.checked = false;
  el.warn.hidden = true;
  el.form.hidden = true;
  tune.editing = null;
  teachInto = null;
  markSelected(tune.editing);
}

// The object whose range the next sample teaches (the Patterns card's slots,
// patterns.js), null: a sample opens the form for a new object.
let teachInto = null;

// Opens the form on object name and starts teaching it: the rectangle dragged
// next becomes its colour box (in its own space), sent as an update.
export function teachExisting(name) {
  const def = definitions().find((d) => d.name === name);
  if (!def) return;
  withControl(() => {
    openForm(name, def);
    teachInto = name;
    setTeaching(true);
    say(`teach ${name}: drag over it in the video`);
  });
}

// A sample reply: the form opens on the suggested box in the suggested space
// (or, teaching an object, its box takes the sample's suggestion).
function onSample(r) {
  tune.lastSample = r;
  tune.suggest = r.suggest_all;
  if (teachInto !== null && teachInto === tune.editing) {
    const def = definitions().find((d) => d.name === teachInto);
    const s = (def && r.suggest_all[def.space]) || r.suggest;
    teachInto = null;
    if (!setBox(s.space, s.lo, s.hi)) return noLimits(s.space);
    el.space.value = s.space;
    return sendUpdate();
  }
  teachInto = null;
  const s = r.suggest_all[r.suggest.space] || r.suggest;
  say(`sampled ${r.n} pixels: rgb ${r.rgb.join(',')} hsv ${r.hsv.join(',')}; name it and Add`);
  // Found only with a good part of what was sampled: never one pixel.
  const [x0, y0, x1, y1] = r.rect;
  const least = Math.max(1, Math.round((x1 - x0 + 1) * (y1 - y0 + 1) * MIN_SHARE_OF_SAMPLE));
  openForm(null, { name: el.name.value && tune.editing === null ? el.name.value : '',
                   space: s.space, lo: s.lo, hi: s.hi, min_mass: least, min_area: least });
  el.name.focus();
}

// Another space: the sample's suggestion for it, else the whole range.
function onSpaceChange() {
  const sp = el.space.value;
  const s = tune.suggest && tune.suggest[sp];
  const box = s || fullRange(sp);
  if (!box || !setBox(sp, box.lo, box.hi)) return noLimits(sp);
  showWarnings();
  changed();
}

function onSubmit(ev) {
  ev.preventDefault();
  if (!el.name.value.trim()) return say('give the object a name', true);
  if (tune.editing !== null) return sendUpdate();
  const o = newObject();
  if (!o) return;
  request({ type: 'add_object', object: o }, (r) => {
    tune.lastAck = r;
    say(`added ${o.name}; adjust the sliders, then Save`);
    openForm(o.name, o);
  });
}

function onRemove() {
  const name = tune.editing;
  if (name === null) return;
  request({ type: 'remove_object', name }, () => {
    say(`removed ${name}`);
    tune.editing = null;
    closeForm();
  });
}

onSliderChange(changed);
initTeach(onSample);
el.space.addEventListener('change', onSpaceChange);
// Blob settings apply like a slider move (sendUpdate checks them first).
for (const input of [el.minMass, el.blobs, el.minArea, el.coast]) input.addEventListener('input', changed);
el.conn.addEventListener('change', changed);
el.track.addEventListener('change', changed);
el.form.addEventListener('submit', onSubmit);
el.remove.addEventListener('click', onRemove);
el.done.addEventListener('click', closeForm);
el.mask.addEventListener('change', sendMask);
el.save.addEventListener('click', () => withControl(() => {
  request({ type: 'save_objects' }, (r) => {
    tune.saved = r;
    say(`saved ${r.count} objects to ${r.path}`);
  });
}));
el.reload.addEventListener('click', () => withControl(() => {
  request({ type: 'reload_objects' }, (r) => say(`reloaded ${r.count} objects from the file`));
}));
// The daemon's --rewind buffer as a bundle; the ack names its folder at once
// (the daemon writes it in the background). Without --rewind the error says
// how to turn it on.
el.rewind.addEventListener('click', () => withControl(() => {
  request({ type: 'save_rewind' }, (r) => say(`saving the last seconds to ${r.dir}`));
}));
// Clicking an object in the list edits it.
onRowClick((def) => withControl(() => openForm(def.name, def)));
