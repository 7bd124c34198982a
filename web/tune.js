// The teach and edit panel: a taught sample or a clicked row opens the form,
// whose sliders (sliders.js) tune the object's colour box while the preview
// shows its mask, and its blob settings (blobs, min_area, connectivity) and
// tracking (track, coast_frames) sit under them; objects are added, renamed, updated, removed, saved to
// the daemon's objects file or reloaded from it, through the control
// messages of protocol/PROTOCOL.md section 5 (control.js).

import { onHello as authOnHello, withControl } from './auth.js';
import { handleReply, request, say } from './control.js';
import { definitions, markSelected, onRowClick } from './objects.js';
import { blobLimits, nameMaxBytes } from './session.js';
import { currentBox, fullRange, onSliderChange, setBox, showValues } from './sliders.js';
import { initTeach } from './teach.js';
import { $ } from './util.js';

// Slider edits are sent at most this often (the daemon applies each one
// between frames; faster would only queue work).
const SEND_EVERY_MS = 100;

const el = {
  save: $('t-save'), reload: $('t-reload'),
  form: $('t-form'), name: $('t-name'), space: $('t-space'),
  mask: $('t-mask'), add: $('t-add'), remove: $('t-remove'), done: $('t-done'),
  blobs: $('t-blobs'), minArea: $('t-min-area'), conn: $('t-conn'),
  track: $('t-track'), coast: $('t-coast'),
};

// The objects file's defaults for the blob keys (config/OBJECTS.md): an
// object is sent with a key only when it differs, so an object without
// blobs reads the same to a daemon that predates them.
const BLOB_DEFAULTS = { blobs: 0, min_area: 1, connectivity: 8, track: false, coast_frames: 10 };

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
    return authOnHello(msg);
  }
  handleReply(msg);
  if (msg.type === 'objects') markSelected(tune.editing);
}

const noLimits = (sp) => say(`the daemon did not describe the ${sp} channels (hello.limits)`, true);

// The object as the form sets it, or null (and the reason said) when a blob
// field holds no valid value.
function currentObject() {
  const o = { name: el.name.value.trim(), ...currentBox() };
  const old = definitions().find((d) => d.name === tune.editing);
  if (old && old.min_mass) o.min_mass = old.min_mass;
  const b = blobSettings();
  if (typeof b === 'string') {
    say(b, true);
    return null;
  }
  for (const [k, v] of Object.entries(b)) if (v !== BLOB_DEFAULTS[k]) o[k] = v;
  return o;
}

// {blobs, min_area, connectivity, track, coast_frames} from the form, or
// what is wrong with them.
function blobSettings() {
  const { maxBlobs, minAreaMax } = blobLimits();
  const int = (input, lo, hi, what) => {
    const v = input.value.trim() === '' ? NaN : Number(input.value);
    return Number.isInteger(v) && v >= lo && v <= hi ? v : `${what} must be a whole number ${lo}..${hi}`;
  };
  const blobs = int(el.blobs, 0, maxBlobs, 'blobs');
  const minArea = int(el.minArea, 1, minAreaMax, 'min area');
  const coast = int(el.coast, 0, 1000, 'coast');
  if (typeof blobs === 'string') return blobs;
  if (typeof minArea === 'string') return minArea;
  if (typeof coast === 'string') return coast;
  // The daemon refuses it too; said here before anything is sent.
  if (el.track.checked && blobs < 1) return 'track needs blobs 1 or more (the most it follows)';
  return { blobs, min_area: minArea, connectivity: Number(el.conn.value),
           track: el.track.checked, coast_frames: coast };
}

// Puts def's blob settings (the defaults where it has none) on the form.
function showBlobSettings(def) {
  const { maxBlobs, minAreaMax } = blobLimits();
  el.blobs.max = String(maxBlobs);
  el.minArea.max = String(minAreaMax);
  const get = (k) => (Number.isInteger(def[k]) ? def[k] : BLOB_DEFAULTS[k]);
  el.blobs.value = String(get('blobs'));
  // The file's 0 means 1 (min_area) and 8 (connectivity).
  el.minArea.value = String(get('min_area') || 1);
  el.conn.value = get('connectivity') === 4 ? '4' : '8';
  el.track.checked = def.track === true;
  el.coast.value = String(get('coast_frames'));
}

let sendTimer = null;
let lastSent = 0;
function changed() {
  if (tune.editing === null) return;   // a new object is sent by "Add"
  const wait = Math.max(0, lastSent + SEND_EVERY_MS - performance.now());
  if (sendTimer) return;
  sendTimer = setTimeout(() => {
    sendTimer = null;
    lastSent = performance.now();
    sendUpdate();
  }, wait);
}

function sendUpdate() {
  const o = currentObject();
  showValues();
  if (!o) return;
  request({ type: 'update_object', name: tune.editing, object: o }, (r) => {
    tune.lastAck = r;
    tune.editing = o.name;
    say(`updated ${o.name}`);
  });
}

function openForm(editing, def) {
  if (!setBox(def.space, def.lo, def.hi)) return noLimits(def.space);
  tune.editing = editing;
  el.form.hidden = false;
  el.name.value = def.name || '';
  el.space.value = def.space;
  showBlobSettings(def);
  el.add.textContent = editing === null ? 'Add object' : 'Rename';
  el.remove.hidden = editing === null;
  el.mask.checked = false;
  el.mask.disabled = editing === null;
  markSelected(tune.editing);
}

function closeForm() {
  if (el.mask.checked) request({ type: 'preview', mask: null });
  el.mask.checked = false;
  el.form.hidden = true;
  tune.editing = null;
  markSelected(tune.editing);
}

// A sample reply: the form opens on the suggested box in the suggested space.
function onSample(r) {
  tune.lastSample = r;
  tune.suggest = r.suggest_all;
  const s = r.suggest_all[r.suggest.space] || r.suggest;
  say(`sampled ${r.n} pixels: rgb ${r.rgb.join(',')} hsv ${r.hsv.join(',')}; name it and Add`);
  openForm(null, { name: el.name.value && tune.editing === null ? el.name.value : '',
                   space: s.space, lo: s.lo, hi: s.hi });
  el.name.focus();
}

// Another space: the sample's suggestion for it, else the whole range.
function onSpaceChange() {
  const sp = el.space.value;
  const s = tune.suggest && tune.suggest[sp];
  const box = s || fullRange(sp);
  if (!box || !setBox(sp, box.lo, box.hi)) return noLimits(sp);
  changed();
}

function onSubmit(ev) {
  ev.preventDefault();
  const o = currentObject();
  if (!o) return;
  if (!o.name) return say('give the object a name', true);
  if (tune.editing !== null) return sendUpdate();
  request({ type: 'add_object', object: o }, (r) => {
    tune.lastAck = r;
    say(`added ${o.name}; adjust the sliders, then Save`);
    openForm(o.name, o);
    el.mask.disabled = false;
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
for (const input of [el.blobs, el.minArea, el.coast]) input.addEventListener('input', changed);
el.conn.addEventListener('change', changed);
el.track.addEventListener('change', changed);
el.form.addEventListener('submit', onSubmit);
el.remove.addEventListener('click', onRemove);
el.done.addEventListener('click', closeForm);
el.mask.addEventListener('change', () => {
  request({ type: 'preview', mask: el.mask.checked ? tune.editing : null }, (r) => {
    tune.lastAck = r;
  });
});
el.save.addEventListener('click', () => withControl(() => {
  request({ type: 'save_objects' }, (r) => {
    tune.saved = r;
    say(`saved ${r.count} objects to ${r.path}`);
  });
}));
el.reload.addEventListener('click', () => withControl(() => {
  request({ type: 'reload_objects' }, (r) => say(`reloaded ${r.count} objects from the file`));
}));
// Clicking an object in the list edits it.
onRowClick((def) => withControl(() => openForm(def.name, def)));
