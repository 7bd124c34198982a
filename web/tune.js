// trackd calibration: teach an object by dragging a rectangle over it, tune
// its colour box with sliders while the preview shows its mask, edit or
// remove existing objects, save them to the daemon's objects file.
// Talks the control messages of protocol/PROTOCOL.md section 5 through
// window.trackd.send (app.js); replies come back through
// window.trackd.onControl. Tests read window.trackd.tune.
'use strict';

(function () {
  const state = window.trackd;
  const $ = (id) => document.getElementById(id);
  const canvas = $('view');
  const stageBox = $('stage-box');
  const rectEl = $('teach-rect');
  const el = {
    teach: $('t-teach'), save: $('t-save'), reload: $('t-reload'), hint: $('t-hint'),
    form: $('t-form'), name: $('t-name'), space: $('t-space'), sliders: $('t-sliders'),
    mask: $('t-mask'), add: $('t-add'), remove: $('t-remove'), done: $('t-done'),
    msg: $('t-msg'), list: $('objects'), auth: $('t-auth'), token: $('t-token'),
  };

  // Channel names and ranges per space (config/OBJECTS.md).
  const CHANNELS = {
    hsv: [['H', 359], ['S', 255], ['V', 255]],
    rgb: [['R', 255], ['G', 255], ['B', 255]],
    ycbcr: [['Y', 255], ['Cb', 255], ['Cr', 255]],
  };
  // Slider edits are sent at most this often (the daemon applies each one
  // between frames; faster would only queue work).
  const SEND_EVERY_MS = 100;
  // The slider thumb's width in style.css: the track's colour stops follow
  // the thumb's centre, which runs from half a thumb to the width minus one.
  const THUMB_PX = 14;

  const tune = {
    teaching: false,   // drag mode on
    editing: null,     // name of the object the form edits, null = a new one
    suggest: null,     // last sample reply's suggest_all
    lastSample: null,
    lastAck: null,
    lastError: null,
    saved: null,       // last save_objects ack
    authed: true,      // this connection may edit (no token needed, or given)
  };
  state.tune = tune;

  let nextId = 1;
  const pending = new Map();   // request id -> callback(reply)

  const errorHandlers = new Map();   // request id -> callback(error), where the caller handles it

  function request(msg, cb, onError) {
    const id = `t${nextId++}`;
    if (cb) pending.set(id, cb);
    if (onError) errorHandlers.set(id, onError);
    if (!state.send || !state.send(Object.assign({ id }, msg))) {
      errorHandlers.delete(id);
      pending.delete(id);
      say('not connected', true);
    }
  }

  function say(text, bad) {
    el.msg.textContent = text;
    el.msg.classList.toggle('bad', !!bad);
  }

  state.onControl = (msg) => {
    if (msg.type === 'hello') return onHello(msg);
    if (msg.id !== undefined && (pending.has(msg.id) || errorHandlers.has(msg.id))) {
      const cb = pending.get(msg.id);
      const onError = errorHandlers.get(msg.id);
      pending.delete(msg.id);
      errorHandlers.delete(msg.id);
      if (msg.type === 'error') {
        tune.lastError = msg;
        if (onError) onError(msg);
        else if (msg.code === 'unauthorized') {
          // An older daemon that does not announce control_auth, or a token
          // that stopped working: ask for it now.
          tune.authed = false;
          askToken('editing needs the control token');
        } else say(`${msg.code}: ${msg.message}`, true);
        return;
      }
      if (cb) cb(msg);
    }
    if (msg.type === 'objects') markSelected();
  };

  // --- access control (PROTOCOL.md "Access control") ----------------------------

  // The token from the page's ?token= (also on the WebSocket URL) or typed in.
  let token = new URLSearchParams(location.search).get('token') || null;
  let afterAuth = null;   // the action that waits for the token

  // A new connection: hello.control_auth says whether edits need the token.
  // Authentication is per connection, so a known token is sent again each
  // time; its ack also proves a ?token= from the address right.
  function onHello(msg) {
    tune.authed = !msg.control_auth;
    if (tune.authed) {
      el.auth.hidden = true;
      if (afterAuth) runAfterAuth();
    } else if (token) sendAuth();
  }

  // Runs fn at once where edits are allowed, else asks for the token first.
  function withControl(fn) {
    if (tune.authed) return fn();
    afterAuth = fn;
    if (token) sendAuth();
    else askToken('enter the control token to teach or edit');
  }

  function askToken(text, bad) {
    el.auth.hidden = false;
    say(text, bad);
    el.token.focus();
  }

  function sendAuth() {
    const tried = token;
    request({ type: 'auth', token: tried }, () => {
      tune.authed = true;
      el.auth.hidden = true;
      el.token.value = '';
      say('editing unlocked');
      runAfterAuth();
    }, (err) => {
      if (token === tried) token = null;
      if (err.code === 'unauthorized') askToken('wrong control token', true);
      else say(`${err.code}: ${err.message}`, true);
    });
  }

  function runAfterAuth() {
    const fn = afterAuth;
    afterAuth = null;
    if (fn) fn();
  }

  el.auth.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = el.token.value.trim();
    if (!t) return;
    token = t;
    sendAuth();
  });

  // --- sliders ---------------------------------------------------------------

  let lo = [0, 0, 0];
  let hi = [255, 255, 255];
  const inputs = [];   // [ [loInput, loOut, hiInput, hiOut], ... ]
  let space = 'hsv';   // of the sliders shown
  let hueNote = null;  // says how the hue range reads (hsv only)

  // Hue is an angle: lo > hi is the range through 0 (config/OBJECTS.md).
  const isHue = (c) => space === 'hsv' && c === 0;

  function buildSliders(sp) {
    space = sp;
    el.sliders.replaceChildren();
    inputs.length = 0;
    hueNote = null;
    CHANNELS[space].forEach(([name, max], c) => {
      const pair = [];
      for (const which of ['lo', 'hi']) {
        const label = document.createElement('label');
        label.textContent = `${name} ${which}`;
        label.htmlFor = `t-${which}${c}`;
        const input = document.createElement('input');
        input.type = 'range';
        input.id = `t-${which}${c}`;
        input.min = '0';
        input.max = String(max);
        input.step = '1';
        const out = document.createElement('output');
        out.htmlFor = input.id;
        input.addEventListener('input', () => {
          const v = Number(input.value);
          (which === 'lo' ? lo : hi)[c] = v;
          // Other channels keep lo <= hi: a slider pushed past its partner
          // drags the partner along.
          if (!isHue(c) && lo[c] > hi[c]) {
            if (which === 'lo') hi[c] = v;
            else lo[c] = v;
          }
          showValues();
          changed();
        });
        el.sliders.append(label, input, out);
        pair.push(input, out);
      }
      inputs.push(pair);
      if (isHue(c)) {
        hueNote = document.createElement('p');
        hueNote.id = 't-hue-note';
        hueNote.className = 'hue-note';
        el.sliders.append(hueNote);
      }
    });
    showValues();
  }

  function showValues() {
    inputs.forEach(([li, lo_out, hi_in, hi_out], c) => {
      li.value = String(lo[c]);
      lo_out.textContent = String(lo[c]);
      hi_in.value = String(hi[c]);
      hi_out.textContent = String(hi[c]);
      const track = trackGradient(c, Number(li.max));
      li.style.setProperty('--track', track);
      hi_in.style.setProperty('--track', track);
    });
    if (hueNote) {
      const max = CHANNELS.hsv[0][1];
      const wraps = lo[0] > hi[0];
      hueNote.textContent = wraps
        ? `wraps through 0: ${lo[0]}..${max} and 0..${hi[0]}`
        : `hue ${lo[0]}..${hi[0]}`;
      hueNote.classList.toggle('wraps', wraps);
    }
  }

  // The selected values of channel c as [from, to] parts: two when a hue
  // range wraps through 0.
  function selectedParts(c, max) {
    if (lo[c] <= hi[c]) return [[lo[c], hi[c]]];
    if (isHue(c)) return [[0, hi[c]], [lo[c], max]];
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

  // Hue may wrap (lo > hi); other channels must keep lo <= hi (the sliders
  // already do; this keeps a request valid whatever set the values).
  function normalize() {
    for (let c = 0; c < 3; c++) {
      if (isHue(c)) continue;
      if (lo[c] > hi[c]) hi[c] = lo[c];
    }
  }

  function currentObject() {
    normalize();
    const o = { name: el.name.value.trim(), space, lo: lo.slice(), hi: hi.slice() };
    const old = state.objects.find((d) => d.name === tune.editing);
    if (old && old.min_mass) o.min_mass = old.min_mass;
    return o;
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
    request({ type: 'update_object', name: tune.editing, object: o }, (r) => {
      tune.lastAck = r;
      tune.editing = o.name;
      say(`updated ${o.name}`);
    });
  }

  // --- the form ----------------------------------------------------------------

  function openForm(editing, def) {
    tune.editing = editing;
    el.form.hidden = false;
    el.name.value = def.name || '';
    el.space.value = def.space;
    lo = def.lo.slice();
    hi = def.hi.slice();
    buildSliders(def.space);
    el.add.textContent = editing === null ? 'Add object' : 'Rename';
    el.remove.hidden = editing === null;
    el.mask.checked = false;
    el.mask.disabled = editing === null;
    markSelected();
  }

  function closeForm() {
    if (el.mask.checked) request({ type: 'preview', mask: null });
    el.mask.checked = false;
    el.form.hidden = true;
    tune.editing = null;
    markSelected();
  }

  el.space.addEventListener('change', () => {
    const sp = el.space.value;
    const s = tune.suggest && tune.suggest[sp];
    if (s) {
      lo = s.lo.slice();
      hi = s.hi.slice();
    } else {
      lo = [0, 0, 0];
      hi = CHANNELS[sp].map(([, max]) => max);
    }
    buildSliders(sp);
    changed();
  });

  el.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const o = currentObject();
    if (!o.name) return say('give the object a name', true);
    if (tune.editing === null) {
      request({ type: 'add_object', object: o }, (r) => {
        tune.lastAck = r;
        say(`added ${o.name}; adjust the sliders, then Save`);
        openForm(o.name, o);
        el.mask.disabled = false;
      });
    } else {
      sendUpdate();
    }
  });

  el.mask.addEventListener('change', () => {
    request({ type: 'preview', mask: el.mask.checked ? tune.editing : null }, (r) => {
      tune.lastAck = r;
    });
  });

  el.remove.addEventListener('click', () => {
    const name = tune.editing;
    if (name === null) return;
    request({ type: 'remove_object', name }, () => {
      say(`removed ${name}`);
      tune.editing = null;
      closeForm();
    });
  });

  el.done.addEventListener('click', closeForm);

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
  el.list.addEventListener('click', (ev) => {
    const tr = ev.target.closest('tr');
    if (!tr) return;
    const def = state.objects[Number(tr.dataset.id)];
    if (def) withControl(() => openForm(def.name, def));
  });

  function markSelected() {
    for (const tr of el.list.querySelectorAll('tr')) {
      const def = state.objects[Number(tr.dataset.id)];
      tr.classList.toggle('selected', !!def && def.name === tune.editing);
    }
  }

  // --- teach: drag a rectangle on the video ------------------------------------

  function setTeaching(on) {
    tune.teaching = on;
    el.teach.setAttribute('aria-pressed', String(on));
    stageBox.classList.toggle('teaching', on);
    if (on) say('drag over the object in the video');
  }

  // Teaching ends in edits, so the token is asked for before, not after a drag.
  el.teach.addEventListener('click', () => {
    if (tune.teaching) setTeaching(false);
    else withControl(() => setTeaching(true));
  });

  // Canvas CSS pixels -> frame pixels.
  function toFrame(clientX, clientY) {
    const r = canvas.getBoundingClientRect();
    const fw = (state.lastFrame && state.lastFrame.width) || (state.hello && state.hello.width) || 1;
    const fh = (state.lastFrame && state.lastFrame.height) || (state.hello && state.hello.height) || 1;
    const x = Math.floor(((clientX - r.left) / r.width) * fw);
    const y = Math.floor(((clientY - r.top) / r.height) * fh);
    return [Math.min(fw - 1, Math.max(0, x)), Math.min(fh - 1, Math.max(0, y))];
  }

  let drag = null;   // {x0, y0, x1, y1} in client pixels

  function showRect() {
    const box = stageBox.getBoundingClientRect();
    const left = Math.min(drag.x0, drag.x1) - box.left;
    const top = Math.min(drag.y0, drag.y1) - box.top;
    rectEl.style.left = `${left}px`;
    rectEl.style.top = `${top}px`;
    rectEl.style.width = `${Math.abs(drag.x1 - drag.x0)}px`;
    rectEl.style.height = `${Math.abs(drag.y1 - drag.y0)}px`;
    rectEl.hidden = false;
  }

  canvas.addEventListener('pointerdown', (ev) => {
    if (!tune.teaching) return;
    ev.preventDefault();
    canvas.setPointerCapture(ev.pointerId);
    drag = { x0: ev.clientX, y0: ev.clientY, x1: ev.clientX, y1: ev.clientY };
    showRect();
  });
  canvas.addEventListener('pointermove', (ev) => {
    if (!drag) return;
    drag.x1 = ev.clientX;
    drag.y1 = ev.clientY;
    showRect();
  });
  canvas.addEventListener('pointerup', (ev) => {
    if (!drag) return;
    drag.x1 = ev.clientX;
    drag.y1 = ev.clientY;
    const [ax, ay] = toFrame(Math.min(drag.x0, drag.x1), Math.min(drag.y0, drag.y1));
    const [bx, by] = toFrame(Math.max(drag.x0, drag.x1), Math.max(drag.y0, drag.y1));
    drag = null;
    rectEl.hidden = true;
    setTeaching(false);
    // A click (no drag) samples a small square around the point.
    const msg = bx - ax < 2 || by - ay < 2
      ? { type: 'sample', x: ax, y: ay, radius: 3 }
      : { type: 'sample', x: ax, y: ay, w: bx - ax + 1, h: by - ay + 1 };
    request(msg, (r) => {
      tune.lastSample = r;
      tune.suggest = r.suggest_all;
      const s = r.suggest_all[r.suggest.space] || r.suggest;
      say(`sampled ${r.n} pixels: rgb ${r.rgb.join(',')} hsv ${r.hsv.join(',')}; name it and Add`);
      openForm(null, { name: el.name.value && tune.editing === null ? el.name.value : '',
                       space: s.space, lo: s.lo, hi: s.hi });
      el.name.focus();
    });
  });
})();
