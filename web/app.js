// trackd browser page: live preview, result overlays, status panel.
//
// Wire protocol (protocol/PROTOCOL.md): JSON text messages "hello", "frame",
// "stats", "status", "error"; binary messages are preview JPEGs behind a
// 20-byte "TRKP" header. A frame's result is sent before its preview, so
// results wait in a small seq -> result map until the preview with the same
// seq has been decoded; then both are drawn together and the overlay never
// lags or leads the picture under it.
//
// Tests read window.trackd (see the `state` object below).

'use strict';

(function () {
  // --- tunables --------------------------------------------------------------

  // Reconnect delay doubles from MIN to MAX while the daemon is unreachable.
  const BACKOFF_MIN_MS = 500;
  const BACKOFF_MAX_MS = 5000;
  // Results kept while waiting for their preview. Previews lag results by the
  // JPEG encode and the decode here (a few frames); at 120 fps 128 entries is
  // still a full second, far beyond any useful wait.
  const RESULTS_KEPT = 128;
  // No preview for this long (or none since connecting) means previews are off:
  // overlays are then drawn on a plain background for every result.
  const PREVIEW_STALE_MS = 1000;
  // The panel is text; refreshing it at every result would only burn CPU.
  const PANEL_EVERY_MS = 250;
  // Client-side rates are measured over this sliding window.
  const RATE_WINDOW_MS = 2000;
  // Errors stay in the banner this long.
  const ERROR_SHOWN_MS = 8000;
  // The daemon sends stats at 1 Hz; this long without any message means the
  // TCP connection is dead without the socket knowing (e.g. a cable pulled).
  const SILENCE_MS = 15000;

  // Recent centroids drawn as a trail behind each object.
  const TRAIL_POINTS = 40;
  // A step longer than this fraction of the frame between two results is a
  // jump, not motion.
  const TRAIL_JUMP = 0.2;

  const PREVIEW_HEADER_BYTES = 20;
  const PROTOCOL_VERSION = 1;
  // Used when the hello carries no colour for an object.
  const PALETTE = ['#ff4d4d', '#4dd2ff', '#ffd24d', '#7dff4d', '#ff4dd2', '#4d7dff', '#ff9f4d', '#b84dff'];

  // --- state exposed to tests -----------------------------------------------

  const state = {
    connected: false,
    hello: null,          // last "hello" message
    lastFrame: null,      // last "frame" message
    // Last overlay drawn: seq of the picture (or result) under it, and each
    // drawn box in canvas pixels. A frame box [x0,y0,x1,y1] (inclusive pixel
    // indices) is drawn as the rectangle enclosing those pixels, i.e. from
    // x0*sx to (x1+1)*sx with sx = canvas.width / frame width (rounded to
    // whole canvas pixels); cx/cy are the centroid cross in canvas pixels.
    lastDrawn: null,      // {seq, preview, matched, boxes:[{id,x0,y0,x1,y1,cx,cy,color}]}
    framesReceived: 0,
    previewsReceived: 0,
    lastStats: null,
    lastStatus: null,
    lastError: null,
    resultsFps: 0,
    previewFps: 0,
    latencyMs: null,      // Date.now() - wall_ms, smoothed
    connects: 0,          // successful opens, so tests can see a reconnect
    objects: [],          // current object definitions (hello, then "objects")
    // Control messages (PROTOCOL.md section 5): send(obj) sends one request;
    // onControl(msg) (set by tune.js) gets replies, "objects" updates and each
    // "hello" (a new connection, which must authenticate again).
    send: null,
    onControl: null,
    trails: new Map(),    // object name -> recent centroids [[cx, cy], ...] (frame px)
  };
  window.trackd = state;

  // --- DOM --------------------------------------------------------------------

  const $ = (id) => document.getElementById(id);
  const canvas = $('view');
  const ctx = canvas.getContext('2d');
  const stageBox = $('stage-box');
  const el = {
    conn: $('conn'), banner: $('banner'), note: $('view-note'),
    state: $('p-state'), server: $('p-server'), backend: $('p-backend'),
    source: $('p-source'), size: $('p-size'),
    rfps: $('p-rfps'), pfps: $('p-pfps'), sfps: $('p-sfps'), frames: $('p-frames'),
    drops: $('p-drops'), clients: $('p-clients'), rss: $('p-rss'),
    lat: $('p-lat'), lq: $('p-lq'), lu: $('p-lu'), lk: $('p-lk'), lp: $('p-lp'),
    ls: $('p-ls'), lt: $('p-lt'),
    objects: $('objects'), objectsEmpty: $('objects-empty'),
  };

  // --- small helpers ----------------------------------------------------------

  // Frames per second over a sliding window of arrival times.
  class RateMeter {
    constructor() { this.times = []; }
    tick(now) { this.times.push(now); this.prune(now); }
    prune(now) {
      while (this.times.length && now - this.times[0] > RATE_WINDOW_MS) this.times.shift();
    }
    rate(now) {
      this.prune(now);
      const n = this.times.length;
      if (n < 2) return 0;
      return ((n - 1) * 1000) / (this.times[n - 1] - this.times[0] || 1);
    }
  }

  function fmt(v, digits) {
    return typeof v === 'number' && isFinite(v) ? v.toFixed(digits) : '\u2013';
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  // Black or white, whichever reads better on the given #rrggbb.
  function inkFor(hex) {
    const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || '');
    if (!m) return '#000';
    const [r, g, b] = m.slice(1).map((h) => parseInt(h, 16));
    return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? '#000' : '#fff';
  }

  function validColor(c) {
    return typeof c === 'string' && /^#[0-9a-f]{6}$/i.test(c);
  }

  // --- objects known to the page ----------------------------------------------

  // id -> {id, name, color, row cells}; filled from hello, extended on the fly
  // when a frame names an object the hello did not (objects added at run time).
  let objects = new Map();

  function objectInfo(id, name) {
    let o = objects.get(id);
    if (!o) {
      o = addObjectRow({ id, name: name || `#${id}`, color: PALETTE[objects.size % PALETTE.length] });
    }
    return o;
  }

  function addObjectRow(def) {
    const color = validColor(def.color) ? def.color : PALETTE[objects.size % PALETTE.length];
    const tr = document.createElement('tr');
    tr.dataset.id = String(def.id);
    tr.dataset.found = 'false';
    const nameTd = document.createElement('td');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = color;
    const label = document.createElement('span');
    label.className = 'obj-name';
    label.textContent = def.name;
    nameTd.append(swatch, label);
    if (def.space) nameTd.title = `${def.space} ${JSON.stringify(def.lo)}..${JSON.stringify(def.hi)}`;
    const found = document.createElement('td');
    found.className = 'found';
    const mass = document.createElement('td');
    mass.className = 'num mass';
    const centroid = document.createElement('td');
    centroid.className = 'num centroid';
    tr.append(nameTd, found, mass, centroid);
    el.objects.append(tr);
    el.objectsEmpty.hidden = true;
    const o = { id: def.id, name: def.name, color, tr, found, mass, centroid };
    setText(found, '\u2013');
    objects.set(def.id, o);
    return o;
  }

  function resetObjects(defs) {
    objects = new Map();
    el.objects.replaceChildren();
    el.objectsEmpty.hidden = false;
    for (const d of defs || []) addObjectRow(d);
  }

  function updateObjectRows(frame) {
    if (!frame || !Array.isArray(frame.objects)) return;
    for (const r of frame.objects) {
      const o = objectInfo(r.id, r.name);
      const found = !!r.found;
      o.tr.dataset.found = String(found);
      setText(o.found, found ? 'yes' : 'no');
      setText(o.mass, typeof r.mass === 'number' ? String(r.mass) : '\u2013');
      if (typeof r.cx === 'number' && typeof r.cy === 'number') {
        o.tr.dataset.cx = String(r.cx);
        o.tr.dataset.cy = String(r.cy);
        setText(o.centroid, `${r.cx.toFixed(1)}, ${r.cy.toFixed(1)}`);
      } else {
        delete o.tr.dataset.cx;
        delete o.tr.dataset.cy;
        setText(o.centroid, '\u2013');
      }
    }
  }

  // --- canvas geometry ----------------------------------------------------------

  // Frame size in pixels: from the hello, then from each frame/preview.
  let frameW = 640;
  let frameH = 360;

  // Sizes the canvas to the frame's aspect ratio within the stage, with a
  // backing store at device resolution so overlay lines stay crisp.
  // Returns true when the backing store changed (which clears it).
  function fitCanvas() {
    const aspect = frameW / frameH;
    const availW = Math.max(1, stageBox.clientWidth);
    const maxH = Math.max(160, window.innerHeight * 0.72);
    const cssW = Math.floor(Math.min(availW, maxH * aspect));
    const cssH = Math.round(cssW / aspect);
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(cssW * dpr));
    const h = Math.max(1, Math.round(cssH * dpr));
    if (canvas.style.width !== `${cssW}px`) canvas.style.width = `${cssW}px`;
    if (canvas.style.height !== `${cssH}px`) canvas.style.height = `${cssH}px`;
    if (canvas.width === w && canvas.height === h) return false;
    canvas.width = w;
    canvas.height = h;
    return true;
  }

  function setFrameSize(w, h) {
    if (!(w > 0 && h > 0) || (w === frameW && h === frameH)) return;
    frameW = w;
    frameH = h;
    fitCanvas();
  }

  // --- drawing ------------------------------------------------------------------

  // What is on screen now, kept so a resize can redraw it.
  let shown = null;    // {seq, image|null, result|null}
  let queued = null;   // newest job waiting for the next animation frame
  let rafPending = false;

  function queueDraw(job) {
    // A queued job is never on screen yet, so a newer one simply replaces it.
    if (queued && queued.image) queued.image.close();
    queued = job;
    if (!rafPending) {
      rafPending = true;
      requestAnimationFrame(() => {
        rafPending = false;
        const job2 = queued;
        queued = null;
        if (job2) show(job2);
      });
    }
  }

  function show(job) {
    if (shown && shown.image && shown.image !== job.image) shown.image.close();
    shown = job;
    fitCanvas();
    draw(job);
  }

  function draw(job) {
    const cw = canvas.width;
    const ch = canvas.height;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    if (job.image) {
      ctx.imageSmoothingEnabled = true;
      ctx.drawImage(job.image, 0, 0, cw, ch);
    } else {
      ctx.fillStyle = '#1b1f24';
      ctx.fillRect(0, 0, cw, ch);
    }
    const boxes = job.result ? drawOverlay(job.result, cw / frameW, ch / frameH) : [];
    state.lastDrawn = { seq: job.seq, preview: !!job.image, matched: !!job.result, boxes };
  }

  function drawOverlay(result, sx, sy) {
    const dpr = window.devicePixelRatio || 1;
    // Even width on whole-pixel coordinates: the line covers whole pixels,
    // so its colour is exact rather than blended with the picture.
    const lw = 2 * Math.max(1, Math.round(dpr));
    const arm = 7 * dpr;
    const fontPx = Math.round(12 * dpr);
    ctx.font = `600 ${fontPx}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    const boxes = [];
    // Trails first, so boxes and names stay on top.
    ctx.globalAlpha = 0.7;
    for (const r of result.objects || []) {
      const t = state.trails.get(r.name);
      if (!t || t.length < 2) continue;
      ctx.beginPath();
      t.forEach(([x, y], i) => (i ? ctx.lineTo : ctx.moveTo).call(ctx, (x + 0.5) * sx, (y + 0.5) * sy));
      ctx.lineWidth = Math.max(1, Math.round(dpr));
      ctx.strokeStyle = objectInfo(r.id, r.name).color;
      ctx.stroke();
    }
    ctx.globalAlpha = 1;
    for (const r of result.objects || []) {
      if (!r.found || !Array.isArray(r.bbox) || r.bbox.length !== 4) continue;
      const o = objectInfo(r.id, r.name);
      const [bx0, by0, bx1, by1] = r.bbox;
      const x0 = Math.round(bx0 * sx);
      const y0 = Math.round(by0 * sy);
      const x1 = Math.round((bx1 + 1) * sx);
      const y1 = Math.round((by1 + 1) * sy);
      // A dark halo first: objects often have the overlay's own colour, and
      // the halo keeps the box visible against them and against the picture.
      ctx.lineWidth = 2 * lw;
      ctx.strokeStyle = 'rgba(0,0,0,0.6)';
      ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
      ctx.lineWidth = lw;
      ctx.strokeStyle = o.color;
      ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);

      // Centroid cross: pixel x spans [x, x+1), so its centre is x + 0.5.
      let cx = null;
      let cy = null;
      if (typeof r.cx === 'number' && typeof r.cy === 'number') {
        cx = (r.cx + 0.5) * sx;
        cy = (r.cy + 0.5) * sy;
        ctx.beginPath();
        ctx.moveTo(cx - arm, cy);
        ctx.lineTo(cx + arm, cy);
        ctx.moveTo(cx, cy - arm);
        ctx.lineTo(cx, cy + arm);
        // A dark under-stroke keeps the cross visible on its own colour.
        ctx.lineWidth = lw + 2 * dpr;
        ctx.strokeStyle = 'rgba(0,0,0,0.55)';
        ctx.stroke();
        ctx.lineWidth = lw;
        ctx.strokeStyle = o.color;
        ctx.stroke();
      }

      // Name tag above the box, or just inside it when the box touches the top.
      const pad = Math.round(3 * dpr);
      const tw = Math.ceil(ctx.measureText(o.name).width) + 2 * pad;
      const th = fontPx + 2 * pad;
      const tx = Math.min(Math.max(0, x0 - lw / 2), Math.max(0, canvas.width - tw));
      const ty = y0 - lw - th >= 0 ? y0 - lw - th : y0 + lw / 2;
      ctx.fillStyle = o.color;
      ctx.fillRect(tx, ty, tw, th);
      ctx.fillStyle = inkFor(o.color);
      ctx.fillText(o.name, tx + pad, ty + pad);

      boxes.push({ id: r.id, x0, y0, x1, y1, cx, cy, color: o.color });
    }
    return boxes;
  }

  // --- messages -----------------------------------------------------------------

  const results = new Map();         // seq -> frame message, oldest first
  const resultsRate = new RateMeter();
  const previewRate = new RateMeter();
  let lastPreviewAt = 0;
  let connectedAt = 0;
  let statusBanner = null;           // {kind, text} from the last "status"
  let errorBanner = null;            // {text, until}

  // Previews are on when one arrived recently. Right after connecting, give
  // the first preview a moment so the view does not flash a plain background.
  function previewsOn(now) {
    return now - Math.max(lastPreviewAt, connectedAt) < PREVIEW_STALE_MS;
  }

  function onText(text) {
    let msg;
    try {
      msg = JSON.parse(text);
    } catch (e) {
      return;   // not ours to fix; one bad message must not stop the page
    }
    if (!msg || typeof msg !== 'object') return;
    if (state.onControl && ['hello', 'objects', 'ack', 'sample', 'error'].includes(msg.type)) {
      try { state.onControl(msg); } catch (e) { console.error(e); }
    }
    switch (msg.type) {
      case 'hello': onHello(msg); break;
      case 'frame': onFrame(msg); break;
      case 'stats': state.lastStats = msg; break;
      case 'status': onStatus(msg); break;
      case 'error': onError(msg); break;
      case 'objects': onObjects(msg); break;
      default: break;   // newer daemons may send types this page does not know
    }
  }

  function onHello(msg) {
    state.hello = msg;
    results.clear();
    if (msg.version !== PROTOCOL_VERSION) {
      errorBanner = {
        text: `Daemon speaks protocol version ${msg.version}; this page knows ${PROTOCOL_VERSION}.`,
        until: performance.now() + ERROR_SHOWN_MS,
      };
    }
    state.objects = Array.isArray(msg.objects) ? msg.objects : [];
    resetObjects(state.objects);
    setFrameSize(msg.width, msg.height);
    setText(el.server, String(msg.server || '\u2013'));
    setText(el.backend, String(msg.backend || '\u2013'));
    setText(el.source, String(msg.source || '\u2013'));
    setText(el.size, msg.width && msg.height ? `${msg.width} \u00d7 ${msg.height}` : '\u2013');
    renderBanner();
  }

  function onFrame(msg) {
    const now = performance.now();
    state.framesReceived++;
    state.lastFrame = msg;
    resultsRate.tick(now);
    if (typeof msg.wall_ms === 'number') {
      const lat = Date.now() - msg.wall_ms;
      state.latencyMs = state.latencyMs === null ? lat : state.latencyMs * 0.8 + lat * 0.2;
    }
    setFrameSize(msg.width, msg.height);
    results.set(msg.seq, msg);
    for (const r of msg.objects || []) {
      let t = state.trails.get(r.name);
      if (!t) state.trails.set(r.name, (t = []));
      const found = r.found && typeof r.cx === 'number';
      // A loss or a jump (a looping file, a re-acquisition elsewhere) breaks
      // the trail: a line across the picture would show motion that never was.
      const prev = t.length ? t[t.length - 1] : null;
      if (prev && (!found || Math.hypot(r.cx - prev[0], r.cy - prev[1]) > TRAIL_JUMP * Math.max(frameW, frameH))) {
        t.length = 0;
      }
      if (!found) continue;
      t.push([r.cx, r.cy]);
      if (t.length > TRAIL_POINTS) t.shift();
    }
    while (results.size > RESULTS_KEPT) results.delete(results.keys().next().value);
    if (!previewsOn(now)) queueDraw({ seq: msg.seq, image: null, result: msg });
  }

  // The object set changed (someone edited it) or a get_objects reply.
  function onObjects(msg) {
    if (!Array.isArray(msg.objects)) return;
    state.objects = msg.objects;
    resetObjects(msg.objects);
    const names = new Set(msg.objects.map((o) => o.name));
    for (const n of state.trails.keys()) if (!names.has(n)) state.trails.delete(n);
  }

  function onStatus(msg) {
    state.lastStatus = msg;
    const detail = msg.message ? `: ${msg.message}` : '';
    if (msg.source === 'lost') statusBanner = { kind: 'warn', text: `Source lost${detail}. Waiting for it to come back\u2026` };
    else if (msg.source === 'eof') statusBanner = { kind: 'info', text: `End of input${detail}.` };
    else statusBanner = null;
    renderBanner();
  }

  function onError(msg) {
    state.lastError = msg;
    errorBanner = {
      text: `Error${msg.code !== undefined ? ` ${msg.code}` : ''}: ${msg.message || 'unknown'}`,
      until: performance.now() + ERROR_SHOWN_MS,
    };
    renderBanner();
  }

  function renderBanner() {
    let kind = null;
    let text = '';
    if (statusBanner && statusBanner.kind === 'warn') ({ kind, text } = statusBanner);
    else if (errorBanner && performance.now() < errorBanner.until) { kind = 'error'; text = errorBanner.text; }
    else if (statusBanner) ({ kind, text } = statusBanner);
    if (!kind) {
      el.banner.hidden = true;
      return;
    }
    el.banner.className = `banner banner-${kind}`;
    setText(el.banner, text);
    el.banner.hidden = false;
  }

  // Preview decoding: at most one JPEG decodes at a time; while it does, only
  // the newest preview waits (older ones are dropped, like the daemon does).
  let decoding = false;
  let pendingPreview = null;

  function onPreview(buf) {
    if (buf.byteLength <= PREVIEW_HEADER_BYTES) return;
    const dv = new DataView(buf);
    // "TRKP"
    if (dv.getUint8(0) !== 0x54 || dv.getUint8(1) !== 0x52 || dv.getUint8(2) !== 0x4b || dv.getUint8(3) !== 0x50) return;
    const p = {
      seq: Number(dv.getBigUint64(4, true)),
      previewW: dv.getUint16(12, true),
      previewH: dv.getUint16(14, true),
      frameW: dv.getUint16(16, true),
      frameH: dv.getUint16(18, true),
      jpeg: new Blob([new Uint8Array(buf, PREVIEW_HEADER_BYTES)], { type: 'image/jpeg' }),
    };
    const now = performance.now();
    state.previewsReceived++;
    state.lastPreview = { seq: p.seq, previewW: p.previewW, previewH: p.previewH, frameW: p.frameW, frameH: p.frameH };
    previewRate.tick(now);
    lastPreviewAt = now;
    if (decoding) pendingPreview = p;
    else decodePreview(p);
  }

  function decodePreview(p) {
    decoding = true;
    createImageBitmap(p.jpeg)
      .then((image) => {
        setFrameSize(p.frameW, p.frameH);
        // A missing result (dropped for a slow client) leaves the picture bare
        // rather than showing a box from another moment.
        queueDraw({ seq: p.seq, image, result: results.get(p.seq) || null });
      })
      .catch(() => { /* a corrupt JPEG: skip it, the next one will come */ })
      .finally(() => {
        decoding = false;
        if (pendingPreview) {
          const next = pendingPreview;
          pendingPreview = null;
          decodePreview(next);
        }
      });
  }

  // --- connection -----------------------------------------------------------------

  let ws = null;
  let backoff = BACKOFF_MIN_MS;
  let retryAt = 0;
  let lastMessageAt = 0;

  function wsUrl() {
    // ?ws=ws://host:port/ws points the page at another daemon (development).
    const q = new URLSearchParams(location.search);
    const override = q.get('ws');
    if (override) return override;
    // ?token=... (the daemon's --control-token) is passed on: it allows edits.
    const token = q.get('token');
    return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}/ws` +
           (token ? `?token=${encodeURIComponent(token)}` : '');
  }

  function connect() {
    retryAt = 0;
    setConn('connecting');
    let sock;
    try {
      sock = new WebSocket(wsUrl());
    } catch (e) {
      scheduleReconnect();
      return;
    }
    sock.binaryType = 'arraybuffer';
    ws = sock;
    state.send = (obj) => {
      if (ws !== sock || sock.readyState !== WebSocket.OPEN) return false;
      sock.send(JSON.stringify(obj));
      return true;
    };
    sock.onopen = () => {
      if (ws !== sock) return;
      state.connected = true;
      state.connects++;
      connectedAt = performance.now();
      lastMessageAt = connectedAt;
      setConn('connected');
    };
    sock.onmessage = (ev) => {
      if (ws !== sock) return;
      lastMessageAt = performance.now();
      // A daemon that talks is healthy: the next outage starts from the short delay.
      backoff = BACKOFF_MIN_MS;
      if (typeof ev.data === 'string') onText(ev.data);
      else onPreview(ev.data);
    };
    sock.onclose = () => {
      if (ws !== sock) return;
      ws = null;
      state.connected = false;
      pendingPreview = null;
      scheduleReconnect();
    };
    // An error is always followed by close, which does the work.
    sock.onerror = () => {};
  }

  function scheduleReconnect() {
    const delay = backoff;
    backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
    retryAt = performance.now() + delay;
    setConn('disconnected');
    setTimeout(connect, delay);
  }

  function setConn(what) {
    el.conn.className = `badge badge-${what}`;
    setText(el.conn, what);
    canvas.classList.toggle('stale', what !== 'connected');
    refreshNote(performance.now());
    setText(el.state, what);
  }

  function refreshNote(now) {
    let note;
    if (state.connected) {
      if (!state.framesReceived) note = 'connected, waiting for frames\u2026';
      else if (previewsOn(now) && state.lastPreview) {
        note = `live \u00b7 preview ${state.lastPreview.previewW}\u00d7${state.lastPreview.previewH}`;
      } else note = 'live \u00b7 preview off: overlays on a plain background';
    } else if (retryAt) {
      const s = Math.max(0, (retryAt - now) / 1000);
      note = `daemon unreachable \u00b7 retrying in ${s.toFixed(1)} s`;
    } else note = 'connecting\u2026';
    setText(el.note, note);
  }

  // --- periodic panel refresh ---------------------------------------------------

  function refreshPanel() {
    const now = performance.now();
    state.resultsFps = resultsRate.rate(now);
    state.previewFps = previewRate.rate(now);
    setText(el.rfps, fmt(state.resultsFps, 1));
    setText(el.pfps, fmt(state.previewFps, 1));

    const s = state.lastStats;
    if (s) {
      setText(el.sfps, fmt(s.fps, 1));
      setText(el.frames, s.frames !== undefined ? String(s.frames) : '\u2013');
      setText(el.drops, s.drops !== undefined ? String(s.drops) : '\u2013');
      setText(el.clients, s.clients !== undefined ? String(s.clients) : '\u2013');
      setText(el.rss, typeof s.rss_kb === 'number' ? `${(s.rss_kb / 1024).toFixed(1)} MiB` : '\u2013');
    }

    const f = state.lastFrame;
    setText(el.lat, fmt(state.latencyMs, 1));
    const l = (f && f.latency) || {};
    setText(el.lq, fmt(l.queue_ms, 2));
    setText(el.lu, fmt(l.upload_ms, 2));
    setText(el.lk, fmt(l.kernel_ms, 2));
    setText(el.lp, fmt(l.process_ms, 2));
    const med = (s && s.latency_median) || {};
    setText(el.ls, fmt(med.send_ms, 2));
    setText(el.lt, fmt(med.total_ms, 2));
    updateObjectRows(f);

    // Once previews stop (switched off), keep the view current from results.
    if (state.connected && f && !previewsOn(now) && (!shown || shown.seq !== f.seq)) {
      queueDraw({ seq: f.seq, image: null, result: f });
    }
    if (state.connected && now - lastMessageAt > SILENCE_MS && ws) ws.close();
    if (errorBanner && now >= errorBanner.until) {
      errorBanner = null;
      renderBanner();
    }
    refreshNote(now);
  }

  // --- start -------------------------------------------------------------------------

  new ResizeObserver(() => {
    if (fitCanvas() && shown) draw(shown);
  }).observe(stageBox);
  window.addEventListener('resize', () => {
    if (fitCanvas() && shown) draw(shown);
  });
  fitCanvas();
  ctx.fillStyle = '#1b1f24';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  setInterval(refreshPanel, PANEL_EVERY_MS);
  connect();
})();
