// trackd browser page: live preview with result overlays, the objects table,
// the daemon's numbers, teaching and editing objects. This module wires the
// others together: it routes the daemon's messages (protocol/PROTOCOL.md)
// to them and refreshes the panel a few times a second.
//
//   connection.js  the WebSocket: reconnects, silence watchdog
//   protocol.js    wire format: text messages, binary previews
//   session.js     the last hello and the daemon's limits in it
//   frames.js      results paired with previews, rates, latency
//   view.js        the canvas: size, what is shown, draw queue
//   overlay.js     drawing a result: boxes, centroids, names, trails
//   trails.js      recent centroids per object
//   objects.js     the objects table and object colours
//   status.js      Daemon, Rates and Latency cards, connection badge
//   banner.js      source lost / end of input / error banner
//   tune.js        teach and edit panel (teach.js, sliders.js, auth.js,
//                  control.js)
//   calib.js       world calibration: clicked points, their world x, y
//   fit.js         this page's view: edges (focus peaking), carved to fit
//   camera.js      camera controls: exposure, gain, white balance
//   patterns.js    marker patterns' colour slots: teach, re-assign
//   replay.js      the Replay card (trackd --replay): timeline, step, re-run
//
// The browser tests read window.trackdTest, set at the end: the one place
// the page exposes its state.

import { isAuthed } from './auth.js';
import * as banner from './banner.js';
import { calibState, initCalib, setCalibration } from './calib.js';
import * as camera from './camera.js';
import * as connection from './connection.js';
import { initFit, onHelloView } from './fit.js';
import * as frames from './frames.js';
import { definitions, setDefinitions, setWorldUnit, showResults } from './objects.js';
import { patternsState, setPatterns } from './patterns.js';
import { CONTROL_TYPES, PROTOCOL_VERSION, parseText } from './protocol.js';
import { currentHello, setHello } from './session.js';
import * as status from './status.js';
import { initLight, showLight } from './light.js';
import * as replay from './replay.js';
import { isTeaching, pauseState } from './teach.js';
import { initPaint, paintState } from './paint.js';
import { keepOnly } from './trails.js';
import { onControl, tuneState } from './tune.js';
import { initView, lastDrawnOverlay, redrawShown, setExtraOverlay, setFrameSize,
         setStale } from './view.js';

// The panel is text; refreshing it at every result would only burn CPU.
const PANEL_EVERY_MS = 250;

function onText(text) {
  const msg = parseText(text);
  if (!msg) return;
  if (msg.type === 'hello') setHello(msg);
  if (CONTROL_TYPES.includes(msg.type)) {
    try { onControl(msg); } catch (e) { console.error(e); }
  }
  switch (msg.type) {
    case 'hello': onHello(msg); break;
    case 'frame': frames.onFrame(msg); break;
    case 'stats': status.onStats(msg); break;
    case 'status': banner.showStatus(msg); break;
    case 'error': onError(msg); break;
    case 'objects': onObjects(msg); break;
    case 'replay': replay.onReplay(msg); break;
    default: break;   // newer daemons may send types this page does not know
  }
  try { camera.onMessage(msg); } catch (e) { console.error(e); }
}

function onHello(msg) {
  frames.forgetResults();
  replay.onHello();
  if (msg.version !== PROTOCOL_VERSION) {
    banner.showError(`Daemon speaks protocol version ${msg.version}; this page knows ${PROTOCOL_VERSION}.`);
  }
  setDefinitions(Array.isArray(msg.objects) ? msg.objects : []);
  onCalibration(msg.calibration);
  setPatterns(msg.patterns, msg.objects);
  setFrameSize(msg.width, msg.height);
  status.showHello(msg);
  banner.render();
  onHelloView();
}

// The object set changed (someone edited it) or a get_objects reply.
function onObjects(msg) {
  if (!Array.isArray(msg.objects)) return;
  setDefinitions(msg.objects);
  onCalibration(msg.calibration);
  setPatterns(msg.patterns, msg.objects);
  keepOnly(new Set(msg.objects.map((o) => o.name)));
}

// The set's world calibration (null: none; a daemon without them: undefined).
function onCalibration(cal) {
  setCalibration(cal || null);
  setWorldUnit(cal && typeof cal.unit === 'string' ? cal.unit : null);
}

function onError(msg) {
  banner.showError(`Error${msg.code !== undefined ? ` ${msg.code}` : ''}: ${msg.message || 'unknown'}`);
}

function onState(what) {
  setStale(what !== 'connected');
  status.showConnection(what);
}

function refresh() {
  const now = performance.now();
  status.refreshCards(now);
  showResults(frames.latestFrame());
  showLight(frames.latestFrame());
  frames.keepViewCurrent(now);
  connection.checkSilence(now);
  banner.expireError(now);
  status.refreshNote(now);
}

// What the browser tests (tests/browser) read, and nothing else: read-only
// views of the modules' state.
window.trackdTest = {
  get connected() { return connection.isConnected(); },
  get connects() { return connection.connectCount(); },   // successful opens
  get hello() { return currentHello(); },                  // the last hello message
  get objects() { return definitions(); },                 // object definitions (hello, "objects")
  get lastFrame() { return frames.latestFrame(); },        // the last "frame" message
  get framesReceived() { return frames.counts().framesReceived; },
  get previewsReceived() { return frames.counts().previewsReceived; },
  // The last preview's header: {seq, previewW, previewH, frameW, frameH, carved}.
  get lastPreview() { return frames.latestPreview(); },
  get lastStats() { return status.latestStats(); },        // the last "stats" message
  // The last overlay drawn (view.js): {seq, preview, matched, boxes:[{id, x0, y0,
  // x1, y1, cx, cy, color, dashed}], blobs:[{id, rank, x0, y0, x1, y1, cx, cy,
  // color}], instances:[{obj, id, x0, y0, x1, y1, cx, cy, lost, trail, color}],
  // markers, axes:[{obj, kind, id, cx, cy, x0, y0, x1, y1}] (axes.js; none while
  // its toggle is off)}, boxes and centroids in canvas pixels (overlay.js drawOverlay).
  get lastDrawn() { return lastDrawnOverlay(); },
  // The teach and edit panel: teaching, authed, editing, lastSample, lastAck, saved, paused.
  tune: {
    get teaching() { return isTeaching(); },
    get authed() { return isAuthed(); },
    get editing() { return tuneState().editing; },
    get lastSample() { return tuneState().lastSample; },
    get lastAck() { return tuneState().lastAck; },
    get saved() { return tuneState().saved; },
    get paused() { return pauseState(); },   // {paused, heldSeq}
  },
  // The calibration card: {active, points:[{px, py, wx, wy}], current (the
  // daemon's calibration), saved (the last save_objects ack)}.
  get calib() { return calibState(); },
  // The camera card: {available, reason, device, controls (the last "camera"
  // message's), lastAck, lastError, autoWarning (the teach panel's text on
  // automatic modes while teaching, null when not shown)}.
  get camera() { return camera.cameraState(); },
  // Painting a class (paint.js): {painting, lastAck ({cells}), lastError, made}.
  get paint() { return paintState(); },
  // The Patterns card: the set's patterns as the daemon sent them
  // ([{name, kind, team, center, dots, ids} or {name, kind, team, colors, id}]).
  get patterns() { return patternsState(); },
  // The Replay card: {shown, last (the last "replay" message), overlay (the
  // recorded overlay's toggle), recordedDrawn: {seq, recorded, boxes:[{id,
  // x0, y0, x1, y1}]} (the recorded result drawn last, canvas pixels)}.
  get replay() { return replay.replayState(); },
  // The teach card's Bundles list: the last list_bundles reply's bundles.
  get bundles() { return replay.bundlesState(); },
};

initView();
initFit();
initCalib();
initLight();
replay.initReplay(redrawShown);
setExtraOverlay(replay.drawRecorded);
camera.initCamera();
initPaint();
setInterval(refresh, PANEL_EVERY_MS);
connection.start({
  onText,
  onBinary: frames.onPreview,
  onClose: frames.dropPendingPreview,
  onState,
});
