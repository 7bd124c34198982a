// Browser test of the page's own view options (issue 30): on a phone-shaped
// window (390x844 CSS pixels) "Fit screen (carve)" gets a seam-carved
// preview of the stage's shape with the overlays on the objects; "Edges"
// draws the Canny edges into the picture; the Daemon card shows the focus
// reading.
//
//   node carve.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip (ffmpeg CLI, lossless ffv1): 640x360, a textured grey background
// (luma 128 + 50 sin(x/6) cos(y/9), so carving has energy to weigh and the
// edges view has edges) with a red 40x40 square at (100, 100) and a blue one
// at (400, 200), both tracked. Checks read real screenshots:
// - carved: the last preview is carved, narrower than the frame, and the
//   canvas has its aspect (portrait); two boxes are drawn, each over its own
//   square: the screen inside the box (a quarter in from its corner, off the
//   centroid cross) is the square's colour, and 6 CSS pixels outside each of
//   its sides is not;
// - edges: with "Edges" ticked near-white pixels appear in the picture
//   (the background's brightest is 178, 89 at the view's half brightness:
//   only drawn edges and the overlay's labels are white): 20 more grid points;
// - "Teach new object" turns carving off (teaching needs the whole
//   picture): the box unticks and uncarved previews come;
// - the Focus row reads a state ("learning" or "ok"); its "set" button sets
//   the baseline (the daemon's ack on the panel's message line).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, launchChromium, makeClip, near, openPage, screenPixels, startOnClip, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const PHONE = { width: 390, height: 844 };
const RED = [224, 40, 40];
const BLUE = [40, 80, 224];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-carve-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'textured.mkv');
const sq = (x, y, c) => `drawbox=x=${x}:y=${y}:w=40:h=40:color=${c}:t=fill`;
makeClip(clip, ["geq=lum='128+50*sin(X/6)*cos(Y/9)':cb=128:cr=128",
                sq(100, 100, '0xE02828'), sq(400, 200, '0x2850E0')].join(','));
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255] },
  { name: 'blue', space: 'hsv', lo: [215, 120, 80], hi: [235, 255, 255] }] }));
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir,
                                           ['--focus-every', '5']);
const ready = () => window.trackdTest && window.trackdTest.previewsReceived > 1;
const isColour = (px, rgb) => px.every((v, i) => near(v, rgb[i], 50));

// Screen points of a grid over the canvas (n x n).
async function canvasGrid(page, n) {
  const r = await page.evaluate(() => {
    const b = document.getElementById('view').getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
  const pts = [];
  for (let j = 0; j < n; j++)
    for (let i = 0; i < n; i++)
      pts.push([r.left + ((i + 0.5) * r.width) / n, r.top + ((j + 0.5) * r.height) / n]);
  return pts;
}

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, ready, { viewport: PHONE });

  // 1. Fit screen (carve).
  await page.check('#v-carve');
  const ok = await page.waitForFunction(() => {
    const t = window.trackdTest, p = t.lastPreview, d = t.lastDrawn;
    return p && p.carved && d && d.preview && d.matched && d.seq === p.seq && d.boxes.length === 2;
  }, null, { timeout: 20000 }).then(() => true, () => false);
  await page.screenshot({ path: path.join(outDir, 'carved.png') });
  if (!ok) fail(`no carved preview with two boxes: ${JSON.stringify(await page.evaluate(
    () => [window.trackdTest.lastPreview, window.trackdTest.lastDrawn]))}`);
  const st = await page.evaluate(() => {
    const c = document.getElementById('view');
    const b = c.getBoundingClientRect();
    return { p: window.trackdTest.lastPreview, d: window.trackdTest.lastDrawn,
             css: { left: b.left, top: b.top, width: b.width, height: b.height },
             backing: [c.width, c.height] };
  });
  const { p, d, css } = st;
  if (!(p.previewW < p.frameW && p.previewH <= p.frameH && p.previewW < p.previewH))
    fail(`the carved preview should be portrait and narrower than the frame: ${JSON.stringify(p)}`);
  if (Math.abs(css.width / css.height - p.previewW / p.previewH) > 0.03)
    fail(`the canvas ${css.width}x${css.height} should have the carved aspect ${p.previewW}x${p.previewH}`);
  console.log(`carved ${p.frameW}x${p.frameH} -> ${p.previewW}x${p.previewH}, canvas ${css.width}x${css.height}`);
  // Boxes are in canvas backing pixels: to CSS, then to the screen.
  const k = css.width / st.backing[0];
  for (const b of d.boxes) {
    const want = b.id === 0 ? RED : BLUE;
    const x0 = css.left + b.x0 * k, x1 = css.left + b.x1 * k;
    const y0 = css.top + b.y0 * k, y1 = css.top + b.y1 * k;
    const inside = [x0 + (x1 - x0) / 4, y0 + (y1 - y0) / 4];
    const my = (y0 + y1) / 2, mx = (x0 + x1) / 2;
    const outside = [[x0 - 6, my], [x1 + 6, my], [mx, y0 - 6], [mx, y1 + 6]];
    const px = await screenPixels(page, [inside, ...outside]);
    if (!isColour(px[0], want))
      fail(`box ${b.id} [${b.x0}, ${b.y0}, ${b.x1}, ${b.y1}] is not over its square: ${px[0]} inside`);
    px.slice(1).forEach((q, i) => {
      if (isColour(q, want)) fail(`box ${b.id}: its square reaches past the box's side ${i}: ${q}`);
    });
    console.log(`box ${b.id}: inside ${px[0]}, outside ${JSON.stringify(px.slice(1))}`);
  }

  // 2. Edges: none white before, some after.
  const white = async () => (await screenPixels(page, await canvasGrid(page, 48)))
    .filter((q) => q.every((v) => v >= 235)).length;
  const before = await white();
  await page.check('#v-edges');
  const start = await page.evaluate(() => window.trackdTest.previewsReceived);
  await page.waitForFunction((n) => window.trackdTest.previewsReceived >= n + 3, start,
                             { timeout: 20000 }).catch(() => fail('no previews after Edges'));
  const after = await white();
  await page.screenshot({ path: path.join(outDir, 'edges.png') });
  console.log(`near-white grid points: ${before} before Edges, ${after} after`);
  // Before: only the overlay's white labels, if a grid point falls on one.
  if (after < before + 20) fail(`Edges should draw white edges: ${before} -> ${after}`);

  // Teaching maps the video linearly to the frame: it turns carving off.
  await page.click('#t-teach');
  const plain = await page.waitForFunction(() => {
    const p = window.trackdTest.lastPreview;
    return !document.getElementById('v-carve').checked && p && !p.carved;
  }, null, { timeout: 20000 }).then(() => true, () => false);
  if (!plain) fail('"Teach new object" should turn carving off and bring the whole picture back');
  await page.click('#t-teach');   // teaching off again

  // 3. The focus reading.
  const focus = await page.waitForFunction(() => {
    const t = document.getElementById('p-focus').textContent;
    return /learning|ok/.test(t) && t;
  }, null, { timeout: 20000 }).then((h) => h.jsonValue(), () => null);
  if (!focus) fail(`the Focus row shows no reading: ${await page.textContent('#p-focus')}`);
  console.log(`Focus: ${focus}`);
  // "set" takes the sharpness now as the baseline: the daemon acknowledges.
  await page.click('#p-focus-set');
  const said = await page.waitForFunction(() => {
    const t = document.getElementById('t-msg').textContent;
    return /focus baseline set: sharpness \d/.test(t) && t;
  }, null, { timeout: 20000 }).then((h) => h.jsonValue(), () => null);
  if (!said) fail(`"set" was not acknowledged: ${await page.textContent('#t-msg')}`);
  console.log(said);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('carve: ok');
} finally {
  if (browser) await browser.close();
  stop(daemon);
}
