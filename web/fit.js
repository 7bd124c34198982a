// The view's own options (protocol/PROTOCOL.md, "preview"): "Edges" asks the
// daemon to draw the Canny edges into this page's preview (focus peaking:
// turn the focus ring until the edges of what matters are densest), "Fit
// screen" for a preview seam-carved to the stage's shape, the tracked
// objects kept whole and their boxes sent mapped (frames.js draws them).
// Both are this page's own view: other pages see the plain picture. A new
// connection starts plain, so the options are sent again after each hello.
// Teaching and calibrating need the uncarved picture: they turn carving off.

import { request, say } from './control.js';
import { stageBox } from './view.js';
import { $ } from './util.js';

const el = { edges: $('v-edges'), carve: $('v-carve') };
// A resize is sent once it has settled this long.
const RESIZE_SETTLE_MS = 300;

// The shape the carved preview should have: the stage's width by the height
// the canvas may take (view.js fitCanvas's bound), in CSS pixels.
function stageSize() {
  const w = Math.max(1, Math.floor(stageBox.clientWidth));
  const h = Math.max(1, Math.floor(Math.max(160, window.innerHeight * 0.72)));
  return [w, h];
}

let sentSize = null;

function send() {
  const msg = { type: 'preview', edges: el.edges.checked, fit: el.carve.checked ? 'carve' : 'scale' };
  if (el.carve.checked) msg.size = sentSize = stageSize();
  request(msg, null, (e) => say(`view: ${e.message}`, true));
}

// A new connection: the daemon forgot this page's view.
export function onHelloView() {
  if (el.edges.checked || el.carve.checked) send();
}

export function initFit() {
  el.edges.addEventListener('change', send);
  el.carve.addEventListener('change', send);
  // Teaching and calibrating map the video linearly to the frame, which a
  // carved picture is not: they turn carving off first (capture phase, so
  // before their own handlers).
  for (const id of ['t-teach', 'c-mode']) {
    $(id).addEventListener('click', () => {
      if (!el.carve.checked) return;
      el.carve.checked = false;
      send();
      say('Fit screen (carve) is off while teaching or calibrating: they need the whole picture');
    }, true);
  }
  let timer = null;
  window.addEventListener('resize', () => {
    if (!el.carve.checked) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const s = stageSize();
      if (!sentSize || s[0] !== sentSize[0] || s[1] !== sentSize[1]) send();
    }, RESIZE_SETTLE_MS);
  });
}
