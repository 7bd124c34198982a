// Browser test of per-viewer mask views (issue 23, item 2): the mask view
// belongs to each page. Page A ticks "show mask" for red: A's video shows
// the mask, page B's the picture. A closes with the box ticked: B still
// shows the picture and a page C opened after shows it too. B then teaches
// a range over the blue square and ticks "show mask" before Add: B shows
// that range's mask, C the picture.
//
//   node views.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip (ffmpeg CLI, lossless ffv1) is a 640x360 gray frame with a red
// 40x40 square at (100, 100) and a blue one at (400, 200). Colours are read
// from real screenshots, inside each square away from the overlay's box and
// cross: white (mask) or the square's colour (picture).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dragFrame, fail, launchChromium, makeClip, near, openPage, screenPixels, startOnClip,
         stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const RED_AT = [107, 131];    // inside the red square, off its centre cross
const BLUE_AT = [407, 231];
const WHITE = [255, 255, 255];
const RED = [224, 40, 40];
const BLUE = [40, 80, 224];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-views-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'squares.mkv');
const sq = (x, y, c) => `drawbox=x=${x}:y=${y}:w=40:h=40:color=${c}:t=fill`;
makeClip(clip, [sq(100, 100, '0xE02828'), sq(400, 200, '0x2850E0')].join(','));
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255] }] }));
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir);
const ready = () => window.trackdTest && window.trackdTest.previewsReceived > 1;

// The screen colour at frame pixel [x, y] of the page's video.
async function colourAt(page, [x, y]) {
  const r = await page.evaluate(() => {
    const b = document.getElementById('view').getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
  const [px] = await screenPixels(page, [[r.left + ((x + 0.5) * r.width) / FRAME_W,
                                          r.top + ((y + 0.5) * r.height) / FRAME_H]]);
  return px;
}
const isColour = (px, rgb) => px.every((v, i) => near(v, rgb[i], 40));

// Waits (bounded) until the page shows rgb at point, after at least two new
// previews (so what is checked is not a picture from before the change).
async function waitColour(page, point, rgb, what) {
  const start = await page.evaluate(() => window.trackdTest.previewsReceived);
  const deadline = Date.now() + 10000;
  let px = null;
  while (Date.now() < deadline) {
    const n = await page.evaluate(() => window.trackdTest.previewsReceived);
    if (n >= start + 2) {
      px = await colourAt(page, point);
      if (isColour(px, rgb)) return;
    }
    await page.waitForTimeout(150);
  }
  await page.screenshot({ path: path.join(outDir, `${what.replace(/\W+/g, '-')}.png`) });
  fail(`${what}: colour ${JSON.stringify(px)} at frame ${point}, expected ~${rgb}`);
}

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const a = await openPage(browser, port, errors, ready);
  const b = await openPage(browser, port, errors, ready);

  // 1. A's mask view: A sees the mask, B the picture.
  await a.locator('#objects tr', { hasText: 'red' }).first().click();
  await a.check('#t-mask');
  await a.waitForFunction(() => {
    const k = window.trackdTest.tune.lastAck;
    return k && k.request === 'preview' && k.mask === 'red';
  }, null, { timeout: 5000 }).catch(() => fail('A: mask not acknowledged'));
  await waitColour(a, RED_AT, WHITE, 'A shows red as a mask');
  await waitColour(b, RED_AT, RED, 'B shows the picture while A shows the mask');
  console.log('A: mask view; B: picture');

  // 2. A closes with the box ticked: B and a new page C show the picture.
  await a.context().close();
  await waitColour(b, RED_AT, RED, 'B after A closed');
  const c = await openPage(browser, port, errors, ready);
  await waitColour(c, RED_AT, RED, 'C opened after A closed');
  const maskBox = await c.isChecked('#t-mask');
  if (maskBox) fail('C: "show mask" is ticked on a new page');
  console.log('A closed: B and C show the picture');

  // 3. B: a taught range's mask before Add; C unaffected.
  await b.click('#t-teach');
  await dragFrame(b, [405, 205], [434, 234], FRAME_W, FRAME_H);
  await b.waitForFunction(() => window.trackdTest.tune.lastSample, null, { timeout: 10000 })
    .catch(() => fail('B: no sample reply over blue'));
  await b.check('#t-mask');
  await b.waitForFunction(() => {
    const k = window.trackdTest.tune.lastAck;
    return k && k.request === 'preview' && k.mask && typeof k.mask === 'object';
  }, null, { timeout: 5000 }).catch(() => fail('B: the candidate range mask not acknowledged'));
  await waitColour(b, BLUE_AT, WHITE, 'B shows the taught range before Add');
  await waitColour(c, BLUE_AT, BLUE, 'C shows the picture while B shows a range');
  await b.screenshot({ path: path.join(outDir, 'candidate-mask.png') });
  // Unticked, B's picture comes back.
  await b.uncheck('#t-mask');
  await waitColour(b, BLUE_AT, BLUE, 'B after unticking');
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('mask views per page: ok');
} finally {
  if (browser) await browser.close();
  await stop(daemon);
}
