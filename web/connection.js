// The WebSocket to the daemon: connects, reconnects with a doubling delay
// while the daemon is unreachable, and closes a connection that has gone
// silent. Messages go to the handlers given to start(); only the newest
// socket's events count, so a late event of an old one changes nothing.

// Reconnect delay doubles from MIN to MAX while the daemon is unreachable.
const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 5000;
// The daemon sends stats at 1 Hz; this long without any message means the
// TCP connection is dead without the socket knowing (e.g. a cable pulled).
const SILENCE_MS = 15000;

let handlers = null;   // {onText, onBinary, onClose, onState}
let ws = null;
let backoff = BACKOFF_MIN_MS;
let retryAt = 0;
let lastMessageAt = 0;
let connected = false;
let connects = 0;      // successful opens, so tests can see a reconnect
let connectedAt = 0;

export const isConnected = () => connected;
export const connectCount = () => connects;
// When the current connection opened (performance.now()), 0 before any.
export const openedAt = () => connectedAt;
// When the next attempt is due (performance.now()), 0 while none is waiting.
export const nextRetryAt = () => retryAt;

// handlers.onText(string), onBinary(ArrayBuffer), onClose() and
// onState('connecting' | 'connected' | 'disconnected').
export function start(h) {
  handlers = h;
  connect();
}

// Sends one JSON message; false when not connected.
export function send(obj) {
  if (!ws || ws.readyState !== WebSocket.OPEN) return false;
  ws.send(JSON.stringify(obj));
  return true;
}

// Called periodically: a connection that has said nothing for too long is
// closed, which reconnects.
export function checkSilence(now) {
  if (connected && now - lastMessageAt > SILENCE_MS && ws) ws.close();
}

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
  handlers.onState('connecting');
  let sock;
  try {
    sock = new WebSocket(wsUrl());
  } catch (e) {
    scheduleReconnect();
    return;
  }
  sock.binaryType = 'arraybuffer';
  ws = sock;
  sock.onopen = () => {
    if (ws !== sock) return;
    connected = true;
    connects++;
    connectedAt = performance.now();
    lastMessageAt = connectedAt;
    handlers.onState('connected');
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return;
    lastMessageAt = performance.now();
    // A daemon that talks is healthy: the next outage starts from the short delay.
    backoff = BACKOFF_MIN_MS;
    if (typeof ev.data === 'string') handlers.onText(ev.data);
    else handlers.onBinary(ev.data);
  };
  sock.onclose = () => {
    if (ws !== sock) return;
    ws = null;
    connected = false;
    handlers.onClose();
    scheduleReconnect();
  };
  // An error is always followed by close, which does the work.
  sock.onerror = () => {};
}

function scheduleReconnect() {
  const delay = backoff;
  backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  retryAt = performance.now() + delay;
  handlers.onState('disconnected');
  setTimeout(connect, delay);
}
