// The top-down page of trackd-fuse --listen: each world message (PROTOCOL.md
// section 12) drawn on a canvas, world y down as image y, scaled to fit every
// camera's footprint and every fused thing; per camera its health in a table.
// window.fuseView tells a test what the last drawing holds (screen points).
'use strict';

const canvas = document.getElementById('map');
const ctx = canvas.getContext('2d');
const PALETTE = ['#4aa3ff', '#ff8a3d', '#b07cff', '#3ddc97', '#ff5c8a', '#e6d84a', '#5ce1e6', '#c0c0c0'];
const camColor = new Map();
let last = null;

function colorOf(name) {
  if (!camColor.has(name)) camColor.set(name, PALETTE[camColor.size % PALETTE.length]);
  return camColor.get(name);
}

// World -> screen: the bounds of what there is to draw, with a margin, kept
// square (one unit is as long across as down).
function transform(msg, w, h) {
  const xs = [], ys = [];
  for (const s of msg.sources) for (const p of s.footprint || []) if (p) { xs.push(p[0]); ys.push(p[1]); }
  for (const o of [...msg.objects, ...msg.markers]) { xs.push(o.wx); ys.push(o.wy); }
  if (!xs.length) return null;
  const x0 = Math.min(...xs), x1 = Math.max(...xs), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const span = Math.max(x1 - x0, y1 - y0, 1e-9);
  const k = 0.9 * Math.min(w, h) / span;
  const ox = (w - k * (x1 - x0)) / 2 - k * x0, oy = (h - k * (y1 - y0)) / 2 - k * y0;
  return (x, y) => [ox + k * x, oy + k * y];
}

function drawFootprints(msg, tf, view) {
  for (const s of msg.sources) {
    const pts = (s.footprint || []).filter((p) => p).map((p) => tf(p[0], p[1]));
    if (pts.length < 3) continue;
    ctx.beginPath();
    pts.forEach(([x, y], i) => (i ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
    ctx.closePath();
    ctx.globalAlpha = s.online ? 0.22 : 0.06;
    ctx.fillStyle = colorOf(s.camera);
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.setLineDash(s.online ? [] : [6, 6]);
    ctx.strokeStyle = s.late ? '#fc6' : colorOf(s.camera);
    ctx.lineWidth = 2;
    ctx.stroke();
    ctx.setLineDash([]);
    const c = pts.reduce((a, p) => [a[0] + p[0] / pts.length, a[1] + p[1] / pts.length], [0, 0]);
    ctx.fillStyle = colorOf(s.camera);
    ctx.font = '13px system-ui';
    ctx.fillText(`${s.camera}${s.online ? '' : ' (offline)'}`, pts[0][0] + 6, pts[0][1] + 16);
    view.footprints.push({ camera: s.camera, online: s.online, points: pts, centre: c,
                           color: colorOf(s.camera) });
  }
}

function drawThings(msg, tf, view) {
  ctx.font = '12px system-ui';
  for (const o of msg.objects) {
    const [x, y] = tf(o.wx, o.wy);
    ctx.beginPath();
    ctx.arc(x, y, 6, 0, 2 * Math.PI);
    ctx.fillStyle = o.cameras.length > 1 ? '#fff' : colorOf(o.cameras[0] || '');
    ctx.fill();
    ctx.fillStyle = '#fff';
    ctx.fillText(`${o.name} #${o.id}`, x + 8, y - 8);
    view.objects.push({ id: o.id, name: o.name, x, y, cameras: o.cameras });
  }
  for (const m of msg.markers) {
    const [x, y] = tf(m.wx, m.wy);
    const a = ((m.wheading ?? 0) * Math.PI) / 180;
    ctx.save();
    ctx.translate(x, y);
    ctx.rotate(a);
    ctx.beginPath();
    ctx.moveTo(12, 0); ctx.lineTo(-7, 7); ctx.lineTo(-7, -7); ctx.closePath();
    ctx.fillStyle = '#ffd24a';
    ctx.fill();
    ctx.restore();
    ctx.fillStyle = '#fff';
    ctx.fillText(`${m.pattern}:${m.marker} #${m.id}`, x + 10, y + 14);
    view.markers.push({ id: m.id, x, y });
  }
}

function draw() {
  const r = canvas.getBoundingClientRect();
  if (canvas.width !== Math.round(r.width) || canvas.height !== Math.round(r.height)) {
    canvas.width = Math.round(r.width);
    canvas.height = Math.round(r.height);
  }
  ctx.clearRect(0, 0, canvas.width, canvas.height);
  const view = { seq: last ? last.seq : 0, footprints: [], objects: [], markers: [] };
  const tf = last && transform(last, canvas.width, canvas.height);
  if (tf) {
    drawFootprints(last, tf, view);
    drawThings(last, tf, view);
  }
  window.fuseView = view;
}

function cell(text, cls) {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function table(msg) {
  const body = document.getElementById('cams');
  body.replaceChildren(...msg.sources.map((s) => {
    const tr = document.createElement('tr');
    tr.dataset.camera = s.camera;
    const state = !s.online ? 'offline' : s.late ? 'late' : msg.cameras.includes(s.camera) ? 'ok' : 'stale';
    const ms = (v) => (v === null ? '-' : `${v.toFixed(0)} ms`);
    const name = cell(s.camera);
    name.style.color = colorOf(s.camera);
    // The camera's clock: synced (within half the sync round trip), or
    // still its wall clock (PROTOCOL.md section 12).
    const clock = s.clock === 'sync' && s.sync_delay_ms !== null
      ? `sync \u00b1${(s.sync_delay_ms / 2).toFixed(2)} ms` : 'wall';
    tr.append(name, cell(state, state), cell(ms(s.behind_ms)), cell(ms(s.delay_ms)),
              cell(s.fps === null ? '-' : s.fps.toFixed(1)), cell(clock));
    return tr;
  }));
  document.getElementById('summary').textContent =
    `${msg.objects.length} objects, ${msg.markers.length} markers (${msg.unit || 'no unit'}), seq ${msg.seq}`;
}

function connect() {
  const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
  const conn = document.getElementById('conn');
  ws.onopen = () => { conn.textContent = 'connected'; conn.className = 'ok'; };
  ws.onclose = () => {
    conn.textContent = 'disconnected; retrying';
    conn.className = 'offline';
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev) => {
    if (typeof ev.data !== 'string') return;
    const msg = JSON.parse(ev.data);
    if (msg.type === 'hello') document.title = `trackd-fuse: ${msg.camera}`;
    if (msg.type !== 'frame') return;
    last = msg;
    table(msg);
    requestAnimationFrame(draw);
  };
}

window.addEventListener('resize', () => requestAnimationFrame(draw));
connect();
