// Browser test of blobs (issue 12): the real daemon (its default backend: the
// fast CPU twin in CI) lists the separate pieces of one colour, and the
// page draws one box per blob with its rank, the aggregate box dashed; the
// edit form sets blobs, min_area and connectivity, and Save writes them.
//
//   node blobs.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip is made with the ffmpeg CLI, lossless (ffv1, yuv420p, every edge
// on the 2x2 chroma grid, so boxes and masses are exact): a 640x360 gray
// frame with red squares A 60x60 at (400, 100), B 40x40 at (100, 200) and
// C 20x20 at (140, 240) (B and C touch only at a corner: one blob when
// 8-connected, two when 4-connected), a red 4x4 speck at (300, 60), and a
// blue 40x40 square at (520, 260) whose object has blobs off.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, near, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const A = { mass: 3600, bbox: [400, 100, 459, 159] };
const B = { mass: 1600, bbox: [100, 200, 139, 239] };
const C = { mass: 400, bbox: [140, 240, 159, 259] };
const BC = { mass: 2000, bbox: [100, 200, 159, 259] };   // B and C 8-connected
const SPECK = { mass: 16, bbox: [300, 60, 303, 63] };
const RED_BOX = [100, 60, 459, 259];   // the aggregate: every red pixel
const BLUE_BOX = [520, 260, 559, 299];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-blobs-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'blobs.mkv');
const sq = (x, y, w, h, c) => `drawbox=x=${x}:y=${y}:w=${w}:h=${h}:color=${c}:t=fill`;
execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
  `color=c=0x808080:s=${FRAME_W}x${FRAME_H}:r=30`, '-vf',
  [sq(400, 100, 60, 60, '0xE02828'), sq(100, 200, 40, 40, '0xE02828'),
   sq(140, 240, 20, 20, '0xE02828'), sq(300, 60, 4, 4, '0xE02828'),
   sq(520, 260, 40, 40, '0x2850E0')].join(','),
  '-t', '3', '-c:v', 'ffv1', '-pix_fmt', 'yuv420p', clip]);
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255], blobs: 4, min_area: 50 },
  { name: 'blue', space: 'hsv', lo: [215, 120, 80], hi: [245, 255, 255] }] }));
const saved = path.join(outDir, 'objects-saved.json');
fs.rmSync(saved, { force: true });
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const port = await freePort();
const daemon = spawn(trackd, ['--input', clip, '--loop', '--objects', objs, '--save-objects', saved,
                              '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                              '--log-level', 'warn'],
                     { stdio: ['ignore', 'ignore', log] });

// Waits until the newest frame lists red's blobs with the boxes of want (in
// list order) and the last overlay drawn (on a preview, with its result)
// has as many blob boxes; returns {drawn, frame, cw, ch}. (The clip does not
// move, and each step changes the count: the overlay is the new setting's.)
async function waitBlobs(page, want, what) {
  const boxes = want.map((w) => w.bbox);
  const got = await page.waitForFunction((bx) => {
    const t = window.trackdTest;
    const d = t.lastDrawn;
    const f = t.lastFrame;
    if (!d || !d.preview || !d.matched || !f || d.blobs.length !== bx.length) return null;
    const red = f.objects.find((o) => o.name === 'red');
    if (!red || !Array.isArray(red.blobs) ||
        JSON.stringify(red.blobs.map((b) => b.bbox)) !== JSON.stringify(bx)) return null;
    const c = document.getElementById('view');
    return { drawn: d, frame: f, cw: c.width, ch: c.height };
  }, boxes, { timeout: 10000 }).catch(async () => {
    const last = await page.evaluate(() => window.trackdTest.lastFrame);
    fail(`${what}: red's blobs never became ${JSON.stringify(boxes)}; last frame ` +
         `${JSON.stringify(last && last.objects)}`);
  });
  return got.jsonValue();
}

// The canvas rectangle of frame box [x0,y0,x1,y1] (overlay.js boxRect).
const canvasRect = ([x0, y0, x1, y1], sx, sy) => [x0 * sx, y0 * sy, (x1 + 1) * sx, (y1 + 1) * sy];

// Checks that the page drew one box per blob of red, ranked in list order,
// where the blobs are, and that the masses are the blobs'.
function checkDrawn(st, want, what) {
  const sx = st.cw / FRAME_W, sy = st.ch / FRAME_H;
  const red = st.frame.objects.find((o) => o.name === 'red');
  const blue = st.frame.objects.find((o) => o.name === 'blue');
  if (JSON.stringify(red.blobs.map((b) => b.mass)) !== JSON.stringify(want.map((w) => w.mass)))
    fail(`${what}: blob masses ${JSON.stringify(red.blobs)}`);
  if ('blobs' in blue) fail(`${what}: blue has blobs off but its result has ${JSON.stringify(blue.blobs)}`);
  const drawn = st.drawn.blobs;
  if (drawn.length !== want.length || drawn.some((d) => d.id !== red.id))
    fail(`${what}: drew ${JSON.stringify(drawn)}, expected ${want.length} blob boxes of red`);
  drawn.forEach((d, i) => {
    const r = canvasRect(want[i].bbox, sx, sy);
    if (d.rank !== i + 1 || ![d.x0, d.y0, d.x1, d.y1].every((v, k) => near(v, r[k], 2)))
      fail(`${what}: blob box ${JSON.stringify(d)}, expected rank ${i + 1} at ${r}`);
    const b = red.blobs[i];
    if (!near(d.cx, (b.cx + 0.5) * sx, 1) || !near(d.cy, (b.cy + 0.5) * sy, 1))
      fail(`${what}: blob ${i + 1}'s centroid dot at (${d.cx}, ${d.cy}) for (${b.cx}, ${b.cy})`);
  });
  const agg = Object.fromEntries(st.drawn.boxes.map((b) => [b.id, b]));
  if (!agg[red.id] || agg[red.id].dashed !== true || !agg[blue.id] || agg[blue.id].dashed !== false)
    fail(`${what}: aggregate boxes ${JSON.stringify(st.drawn.boxes)} (red dashed, blue solid)`);
  console.log(`${what}: ${drawn.length} blob boxes, ranks ${drawn.map((d) => d.rank).join(',')}, ` +
              `masses ${red.blobs.map((b) => b.mass).join(',')}`);
}

let browser;
try {
  // A daemon without blobs refuses the objects file (exit 78): say why.
  await waitListening(port, daemon, path.join(outDir, 'trackd.log'));
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(() => window.trackdTest && window.trackdTest.hello, null,
                             { timeout: 20000 }).catch(() => fail('no hello within 20 s'));

  // 1. blobs 4, min_area 50, 8-connected: A, then B+C; the speck is dropped.
  //    The aggregate still covers every red pixel, the speck's too.
  const st = await waitBlobs(page, [A, BC], 'blobs 4, min_area 50');
  checkDrawn(st, [A, BC], 'blobs 4, min_area 50');
  const red = st.frame.objects.find((o) => o.name === 'red');
  if (JSON.stringify(red.bbox) !== JSON.stringify(RED_BOX) || red.mass !== A.mass + BC.mass + SPECK.mass)
    fail(`red's aggregate ${JSON.stringify(red)}`);

  // 2. On the canvas itself: each blob box's edges are in red's overlay
  //    colour, so is its rank tag (just inside the top-left corner, below
  //    the line); blue's solid box is colour all along its top edge, red's
  //    dashed one shows colour and picture by turns where no blob box is.
  const color = (await page.evaluate(() => window.trackdTest.hello.objects))
    .find((o) => o.name === 'red').color;
  const rgb = [1, 3, 5].map((i) => parseInt(color.slice(i, i + 2), 16));
  const blueBox = st.drawn.boxes.find((b) => b.dashed === false);
  const redBox = st.drawn.boxes.find((b) => b.dashed === true);
  const px = await page.evaluate(([blobs, rb, bb]) => {
    const ctx = document.getElementById('view').getContext('2d');
    const at = (x, y) => Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3));
    const row = (b, from, to) => {
      const out = [];
      for (let x = from; x < to; x += 1) out.push(at(x, b.y0));
      return out;
    };
    return {
      edges: blobs.map((b) => [at((b.x0 + b.x1) / 2, b.y0), at(b.x0, (b.y0 + b.y1) / 2),
                               at(b.x1 - 1, (b.y0 + b.y1) / 2), at((b.x0 + b.x1) / 2, b.y1 - 1)]),
      tags: blobs.map((b) => at(b.x0 + 4, b.y0 + 2)),
      // Red's top edge between x 160 and 290 (frame): above the blob boxes.
      redTop: row(rb, Math.round(rb.x0 + 60 * (rb.x1 - rb.x0) / 360), Math.round(rb.x0 + 190 * (rb.x1 - rb.x0) / 360)),
      blueTop: row(bb, bb.x0 + 2, bb.x1 - 2),
    };
  }, [st.drawn.blobs, redBox, blueBox]);
  const isRgb = (p, c) => p.every((v, i) => near(v, c[i], 3));
  px.edges.flat().forEach((p, k) => { if (!isRgb(p, rgb)) fail(`blob edge pixel ${k}: ${p} is not ${color}`); });
  px.tags.forEach((p, k) => { if (!isRgb(p, rgb)) fail(`rank tag ${k + 1}: pixel ${p} is not ${color}`); });
  const blueRgb = [1, 3, 5].map((i) => parseInt(blueBox.color.slice(i, i + 2), 16));
  if (!px.blueTop.every((p) => isRgb(p, blueRgb))) fail(`blue's box is not solid: ${JSON.stringify(px.blueTop)}`);
  const on = px.redTop.filter((p) => isRgb(p, rgb)).length;
  if (on === 0 || on === px.redTop.length)
    fail(`red's aggregate box is not dashed: ${on} of ${px.redTop.length} top-edge pixels in ${color}`);
  console.log(`canvas: blob edges and rank tags in ${color}; red's top edge dashed ` +
              `(${on}/${px.redTop.length} in colour), blue's solid`);
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(outDir, 'blobs.png') });

  // 3. The edit form: a click on red's row shows its blob settings, with
  //    the range the daemon allows.
  await page.click('#objects tr[data-id="0"]');
  await page.waitForSelector('#t-form:not([hidden])', { timeout: 5000 })
    .catch(() => fail('clicking red did not open the edit form'));
  const form = await page.evaluate(() => ['t-blobs', 't-min-area', 't-conn'].map((id) => {
    const e = document.getElementById(id);
    return [e.value, e.max];
  }));
  const maxBlobs = String(await page.evaluate(() => window.trackdTest.hello.limits.max_blobs || 64));
  if (JSON.stringify(form.map((f) => f[0])) !== JSON.stringify(['4', '50', '8']) || form[0][1] !== maxBlobs)
    fail(`red's form: ${JSON.stringify(form)} (want 4, 50, 8 and blobs at most ${maxBlobs})`);

  // 4. Each field applies from the next frame: 4-connected splits B and C;
  //    min_area 1 lists the speck (4 = K blobs); blobs 2 keeps the two largest.
  await page.selectOption('#t-conn', '4');
  checkDrawn(await waitBlobs(page, [A, B, C], 'connectivity 4'), [A, B, C], 'connectivity 4');
  await page.fill('#t-min-area', '1');
  checkDrawn(await waitBlobs(page, [A, B, C, SPECK], 'min_area 1'), [A, B, C, SPECK], 'min_area 1');
  await page.fill('#t-blobs', '2');
  checkDrawn(await waitBlobs(page, [A, B], 'blobs 2'), [A, B], 'blobs 2');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'blobs-edit.png') });
  // Out of range: said on the panel, nothing sent (still two blobs).
  await page.fill('#t-blobs', String(Number(maxBlobs) + 1));
  await page.waitForFunction((m) => document.getElementById('t-msg').textContent ===
                             `blobs must be a whole number 0..${m}`, maxBlobs, { timeout: 5000 })
    .catch(async () => fail(`blobs ${Number(maxBlobs) + 1}: panel says ` +
                            `"${await page.textContent('#t-msg')}"`));
  await page.waitForTimeout(500);
  checkDrawn(await waitBlobs(page, [A, B], 'after blobs 65'), [A, B], 'blobs 65 refused, still 2');
  await page.fill('#t-blobs', '2');

  // 5. Save writes them (min_area 1 is the default: the saver may leave it out).
  const before = await page.evaluate(() => window.trackdTest.tune.saved);
  await page.click('#t-save');
  await page.waitForFunction((b) => window.trackdTest.tune.saved &&
                             JSON.stringify(window.trackdTest.tune.saved) !== JSON.stringify(b),
                             before, { timeout: 5000 }).catch(() => fail('no save ack'));
  const file = JSON.parse(fs.readFileSync(saved, 'utf8'));
  const r = file.objects.find((o) => o.name === 'red');
  const b = file.objects.find((o) => o.name === 'blue');
  if (!r || r.blobs !== 2 || r.connectivity !== 4 || (r.min_area !== undefined && r.min_area !== 1) ||
      !b || ['blobs', 'min_area', 'connectivity'].some((k) => k in b))
    fail(`saved file: ${JSON.stringify(file.objects)}`);
  console.log(`saved: red ${JSON.stringify(r)}`);

  // 6. blobs 0 turns them off: no list, no blob boxes, the aggregate solid.
  await page.fill('#t-blobs', '0');
  // As in track.test.mjs: the first frame without a list marks the change,
  // and a drawing of it or a later frame must show no blob boxes.
  await page.waitForFunction(() => {
    const t = window.trackdTest;
    const f = t.lastFrame;
    const d = t.lastDrawn;
    const red = f && f.objects.find((o) => o.name === 'red');
    if (red && !('blobs' in red) && window.blobsOffSeq === undefined) window.blobsOffSeq = f.seq;
    return window.blobsOffSeq !== undefined && d && d.seq >= window.blobsOffSeq &&
           d.blobs.length === 0 && d.boxes.length === 2 &&
           d.boxes.every((x) => x.dashed === false);
  }, null, { timeout: 10000 }).catch(async () => fail(`blobs 0: last drawn ` +
    `${JSON.stringify(await page.evaluate(() => window.trackdTest.lastDrawn))}`));
  console.log('blobs 0: no blob boxes, red\'s aggregate box solid again');

  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser blobs: passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
