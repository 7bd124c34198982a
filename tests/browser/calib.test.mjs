// Browser test of the calibration mode (issue 15): the user clicks 4 points
// on the video, types their world coordinates and the unit, saves; the real
// daemon then sends wx, wy with every centroid and the page shows them; a
// set with three points on one line is refused with the daemon's message;
// Remove calibration takes it away again. Saves go to the objects file: the
// first finds none there and writes the whole set (the page says so), the
// removal writes only the calibration section (the page says so too).
//
//   node calib.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip (ffmpeg CLI, lossless ffv1) is a 640x360 gray frame with a red
// 40x40 square at (300, 160): its centroid is (319.5, 179.5). The points
// clicked are the corners of the rectangle (100, 80)..(540, 300), called
// (0, 0)..(1000, 500) mm: the map is then affine, and the square's world
// point is ((319.5 - 100) / 440 * 1000, (179.5 - 80) / 220 * 500) mm, up
// to the clicks' quantisation to screen pixels (checked within 5 mm, about
// two frame pixels).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clickFrame as clickFrameAt, fail, freePort, launchChromium, near, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const CORNERS = [[100, 80], [540, 80], [540, 300], [100, 300]];
const WORLD = [[0, 0], [1000, 0], [1000, 500], [0, 500]];
const WANT = [(319.5 - 100) / 440 * 1000, (179.5 - 80) / 220 * 500];

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-calib-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'square.mkv');
execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
  `color=c=0x808080:s=${FRAME_W}x${FRAME_H}:r=30`, '-vf',
  'drawbox=x=300:y=160:w=40:h=40:color=0xE02828:t=fill',
  '-t', '3', '-c:v', 'ffv1', '-pix_fmt', 'yuv420p', clip]);
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255] }] }));
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const port = await freePort();
const daemon = spawn(trackd, ['--input', clip, '--loop', '--objects', objs,
                              '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                              '--log-level', 'warn'],
                     { stdio: ['ignore', 'ignore', log] });

const clickFrame = (page, xy) => clickFrameAt(page, xy, FRAME_W, FRAME_H);

const readFile = () => JSON.parse(fs.readFileSync(objs, 'utf8'));

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(() => window.trackdTest && window.trackdTest.lastFrame, null,
                             { timeout: 20000 }).catch(() => fail('no frame within 20 s'));
  const hello = await page.evaluate(() => window.trackdTest.hello);
  if (hello.calibration !== null) fail(`hello.calibration should be null: ${JSON.stringify(hello.calibration)}`);

  // 1. Calibrate: 4 clicks, world x, y typed, unit, Save.
  await page.click('#c-mode');
  let scale = 1;
  for (const c of CORNERS) scale = await clickFrame(page, c);
  const st = await page.evaluate(() => window.trackdTest.calib);
  if (!st.active || st.points.length !== 4) fail(`calibration mode: ${JSON.stringify(st)}`);
  const tol = 1 / scale + 0.01;   // a click lands within half a screen pixel, both ways
  st.points.forEach((p, i) => {
    if (!near(p.px, CORNERS[i][0], tol) || !near(p.py, CORNERS[i][1], tol))
      fail(`click ${i + 1} at frame (${p.px}, ${p.py}), expected (${CORNERS[i]}) within ${tol}`);
  });
  const marks = await page.$$eval('.calib-mark', (m) => m.map((e) => e.textContent));
  if (marks.join(',') !== '1,2,3,4') fail(`numbered markers on the video: ${marks}`);
  for (let i = 0; i < 4; i++) {
    await page.fill(`input[aria-label="point ${i + 1} world x"]`, String(WORLD[i][0]));
    await page.fill(`input[aria-label="point ${i + 1} world y"]`, String(WORLD[i][1]));
  }
  await page.fill('#c-unit', 'mm');
  // No file there yet (gone since start): the calibration save writes the
  // whole set, and the page says so.
  fs.unlinkSync(objs);
  await page.click('#c-save');
  await page.waitForFunction(() => window.trackdTest.calib.saved, null, { timeout: 10000 })
    .catch(async () => fail(`no save; message: ${await page.textContent('#t-msg')}`));
  const first = await page.evaluate(() => window.trackdTest.calib.saved);
  const said = await page.textContent('#t-msg');
  if (!first.whole || !/no file yet, so the whole set \(1 object\) was saved/.test(said))
    fail(`a calibration save with no file: ack ${JSON.stringify(first)}, page says "${said}"`);
  const file = readFile();
  if (file.objects.length !== 1 || file.objects[0].name !== 'red')
    fail(`no file: the whole set was not written: ${JSON.stringify(file.objects)}`);
  const cal = file.calibration;
  if (!cal || cal.unit !== 'mm' || cal.points.length !== 4 ||
      cal.points.some((p, i) => !near(p[0], CORNERS[i][0], tol) || !near(p[1], CORNERS[i][1], tol) ||
                                p[2] !== WORLD[i][0] || p[3] !== WORLD[i][1]))
    fail(`the saved file's calibration: ${JSON.stringify(cal)}`);
  console.log(`saved: ${JSON.stringify(cal)}`);

  // 2. Frames carry wx, wy; the table shows them.
  const red = await page.waitForFunction(() => {
    const f = window.trackdTest.lastFrame;
    const o = f && f.objects[0];
    return o && typeof o.wx === 'number' ? o : null;
  }, null, { timeout: 10000 }).catch(() => fail('frames never carried wx, wy'));
  const r0 = await red.jsonValue();
  if (!near(r0.wx, WANT[0], 5) || !near(r0.wy, WANT[1], 5))
    fail(`red at (${r0.wx}, ${r0.wy}) mm, expected (${WANT.map((v) => v.toFixed(1))}) within 5`);
  console.log(`red: pixel (${r0.cx}, ${r0.cy}) -> world (${r0.wx}, ${r0.wy}) mm`);
  await page.waitForFunction(() => /mm/.test(document.querySelector('#objects td.centroid').textContent),
                             null, { timeout: 5000 })
    .catch(async () => fail(`the table shows no world point: ${await page.textContent('#objects')}`));
  const status = await page.textContent('#c-status');
  if (!/4 points, unit mm/.test(status)) fail(`status line: ${status}`);
  await page.screenshot({ path: path.join(outDir, 'calibrated.png') });

  // 3. Three points on one line: the daemon refuses with its message, the
  // file keeps the calibration.
  await page.click('#c-mode');
  for (let i = 0; i < 4; i++) await page.click('#c-undo');
  for (const c of [[100, 80], [320, 81], [540, 80], [540, 300]]) await clickFrame(page, c);
  for (let i = 0; i < 4; i++) {
    await page.fill(`input[aria-label="point ${i + 1} world x"]`, String(i * 100));
    await page.fill(`input[aria-label="point ${i + 1} world y"]`, String(i % 2 ? 300 : 0));
  }
  await page.click('#c-save');
  await page.waitForFunction(() => /lie on one line/.test(document.getElementById('t-msg').textContent),
                             null, { timeout: 5000 })
    .catch(async () => fail(`no collinear error shown: ${await page.textContent('#t-msg')}`));
  console.log(`refused: ${await page.textContent('#t-msg')}`);
  if (JSON.stringify(readFile().calibration) !== JSON.stringify(cal)) fail('the refused set changed the file');
  await page.click('#c-cancel');

  // 4. Remove calibration: frames lose wx, wy, the file loses the section.
  const before = (await page.evaluate(() => window.trackdTest.calib.saved)) || null;
  await page.click('#c-remove');
  await page.waitForFunction((b) => {
    const s = window.trackdTest.calib.saved;
    return s && JSON.stringify(s) !== JSON.stringify(b) && window.trackdTest.calib.current === null;
  }, before, { timeout: 10000 }).catch(() => fail('Remove calibration did not save'));
  await page.waitForFunction(() => {
    const f = window.trackdTest.lastFrame;
    return f && !('wx' in f.objects[0]);
  }, null, { timeout: 5000 }).catch(() => fail('frames still carry wx after removal'));
  if ('calibration' in readFile()) fail('the file still has a calibration after removal');
  const removed = await page.textContent('#t-msg');
  if (!/calibration removal saved to .*nothing else in the file changed/.test(removed))
    fail(`after removal the page says "${removed}"`);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('calibration mode: ok');
} finally {
  if (browser) await browser.close();
  await stop(daemon);
}
