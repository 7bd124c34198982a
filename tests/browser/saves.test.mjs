// Browser test of saves that keep every setting (issue 23, item 1): the
// objects file uses every key of config/OBJECTS.md (each object key, the
// camera, the pre-filter, a calibration with lens parameters), and each kind
// of page edit is saved in turn: nothing, a tune (a slider, blobs, coast on
// an object with an explicit colour and tracking; a slider on one whose
// colour is the default), a taught object (added, not saved, before the
// calibration: the case), a calibration (its own save writes only
// the calibration: the taught object stays out of the file until the main
// Save), a delete. After each save the file is read back and compared with
// the previous file plus exactly that edit: any other difference fails.
//
//   node saves.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip (ffmpeg CLI, lossless ffv1) is a 640x360 gray frame with a red
// 40x40 square at (100, 100), a blue one at (400, 200) and a yellow one at
// (300, 260).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clickFrame, dragFrame, fail, launchChromium, makeClip, near, openPage, startOnClip, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const YELLOW_BOX = [300, 260, 339, 299];

// Every key: red has each object key away from its default, blue has none
// but min_mass (which the writer always writes); the camera section is in
// the form saves write it (OBJECTS.md, camera: "as controls in setting
// order").
const ORIGINAL = {
  objects: [
    { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255], min_mass: 20, blobs: 4,
      min_area: 30, connectivity: 4, track: true, coast_frames: 7, color: '#c01010' },
    { name: 'blue', space: 'hsv', lo: [215, 120, 80], hi: [245, 255, 255], min_mass: 1 },
  ],
  camera: { controls: { auto_exposure: 1, white_balance_automatic: 0,
                        exposure_time_absolute: 100, gain: 10, white_balance_temperature: 4500,
                        brightness: 128 } },
  prefilter: { gaussian: 0.5 },
  calibration: {
    unit: 'mm',
    points: [[10, 10, 0, 0], [630, 12, 1000, 0], [628, 350, 1000, 600], [12, 348, 0, 600]],
    camera_matrix: { fx: 612, fy: 608, cx: 320.5, cy: 180.25 },
    distortion: [-0.05, 0.01, 0.001, -0.0007, -0.002],
  },
};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-saves-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'squares.mkv');
const sq = (x, y, c) => `drawbox=x=${x}:y=${y}:w=40:h=40:color=${c}:t=fill`;
makeClip(clip, [sq(100, 100, '0xE02828'), sq(400, 200, '0x2850E0'), sq(300, 260, '0xE0D020')].join(','));
const objs = path.join(outDir, 'objects.json');
fs.writeFileSync(objs, JSON.stringify(ORIGINAL, null, 2));
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir);

const readFile = () => JSON.parse(fs.readFileSync(objs, 'utf8'));
const clone = (v) => JSON.parse(JSON.stringify(v));

// Where a and b differ ('' when they do not): key order is not a
// difference, numbers are equal within 1e-9 (the calibration's clicked
// pixels come back with the fewest digits that read back the same).
function diff(a, b, at = '') {
  if (typeof a === 'number' && typeof b === 'number')
    return near(a, b, 1e-9 * Math.max(1, Math.abs(a))) ? '' : `${at}: ${a} != ${b}`;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object')
    return a === b ? '' : `${at}: ${JSON.stringify(a)} != ${JSON.stringify(b)}`;
  if (Array.isArray(a) !== Array.isArray(b)) return `${at}: array and object`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) {
    if (!(k in a)) return `${at}.${k}: missing from the file`;
    if (!(k in b)) return `${at}.${k}: in the file, not expected (${JSON.stringify(a[k])})`;
    const d = diff(a[k], b[k], `${at}.${k}`);
    if (d) return d;
  }
  return '';
}

// Presses Save and waits for its ack; then the file must be `want`.
async function saveAndCompare(page, want, what) {
  const before = await page.evaluate(() => window.trackdTest.tune.saved);
  await page.click('#t-save');
  await page.waitForFunction((b) => {
    const s = window.trackdTest.tune.saved;
    return s && JSON.stringify(s) !== JSON.stringify(b);
  }, before, { timeout: 10000 }).catch(async () => fail(`${what}: no save (${await page.textContent('#t-msg')})`));
  const got = readFile();
  fs.writeFileSync(path.join(outDir, `after-${what.replace(/\W+/g, '-')}.json`), JSON.stringify(got, null, 2));
  const d = diff(got, want);
  if (d) fail(`${what}: the saved file differs from the previous one plus the edit at ${d}`);
  console.log(`${what}: saved file = previous + the edit`);
}

// Waits until the daemon's definition of name satisfies fn (its "objects"
// broadcast after an edit), returns it.
async function waitDef(page, name, fn, what) {
  const deadline = Date.now() + 10000;
  let d = null;
  while (Date.now() < deadline) {
    d = await page.evaluate((n) => window.trackdTest.objects.find((o) => o.name === n) || null, name);
    if (d && fn(d)) return d;
    await page.waitForTimeout(100);
  }
  fail(`${what}: the daemon's ${name} is ${JSON.stringify(d)}`);
}

async function clickRow(page, name) {
  await page.locator('#objects tr', { hasText: name }).first().click();
  await page.waitForFunction((n) => window.trackdTest.tune.editing === n, name, { timeout: 5000 })
    .catch(() => fail(`clicking ${name}'s row did not open it`));
}

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, () => window.trackdTest &&
    window.trackdTest.previewsReceived > 1 && window.trackdTest.lastFrame);
  let want = clone(ORIGINAL);

  // 0. Save with no edit: the file as it was.
  await saveAndCompare(page, want, 'no edit');

  // 1. Tune red (explicit colour, tracking): V lo, blobs and coast.
  await clickRow(page, 'red');
  await page.fill('#t-lo2', '90');
  await page.fill('#t-blobs', '3');
  await page.fill('#t-coast', '12');
  await waitDef(page, 'red', (d) => d.lo[2] === 90 && d.blobs === 3 && d.coast_frames === 12, 'tune red');
  await page.click('#t-done');
  want.objects[0].lo[2] = 90;
  want.objects[0].blobs = 3;
  want.objects[0].coast_frames = 12;
  // Blue's colour is the default: it follows the box and stays unwritten.
  await clickRow(page, 'blue');
  await page.fill('#t-hi0', '250');
  await waitDef(page, 'blue', (d) => d.hi[0] === 250, 'tune blue');
  await page.click('#t-done');
  want.objects[1].hi[0] = 250;
  await saveAndCompare(page, want, 'tune');

  // 2. Teach yellow and Add it, unsaved; then 3. a calibration is saved:
  // the file gets the new points and nothing else (red keeps its tracking,
  // every other key stays, the taught yellow stays out); then the main Save
  // writes yellow.
  await page.click('#t-teach');
  const [x0, y0, x1, y1] = YELLOW_BOX;
  await dragFrame(page, [x0 + 5, y0 + 5], [x1 - 5, y1 - 5], FRAME_W, FRAME_H);
  await page.waitForFunction(() => window.trackdTest.tune.lastSample, null, { timeout: 10000 })
    .catch(() => fail('no sample reply for yellow'));
  const minMass = Number(await page.inputValue('#t-min-mass'));
  await page.fill('#t-name', 'yellow');
  await page.click('#t-add');
  const yellow = await waitDef(page, 'yellow', () => true, 'teach yellow');
  await page.click('#t-done');
  const taught = { name: 'yellow', space: yellow.space, lo: yellow.lo, hi: yellow.hi,
                   min_mass: minMass };
  if (yellow.min_area !== 1) taught.min_area = yellow.min_area;
  if (minMass <= 1 || yellow.min_mass !== minMass)
    fail(`taught yellow: min mass ${minMass} on the form, ${yellow.min_mass} in the daemon`);

  await page.click('#c-mode');
  const corners = [[20, 20], [620, 20], [620, 340], [20, 340]];
  const world = [[0, 0], [2000, 0], [2000, 1000], [0, 1000]];
  // The mode starts from the calibration in use: its 4 points are undone.
  for (let i = 0; i < 4; i++) await page.click('#c-undo');
  // Each click adds its point (the harness scrolls the view into sight first:
  // the teach form's focused fields may have scrolled the page).
  for (const [i, c] of corners.entries()) {
    await clickFrame(page, c, FRAME_W, FRAME_H);
    await page.waitForFunction((n) => window.trackdTest.calib.points.length === n, i + 1,
                               { timeout: 5000 })
      .catch(() => fail(`calibration click ${i + 1} added no point`));
  }
  for (let i = 0; i < 4; i++) {
    await page.fill(`input[aria-label="point ${i + 1} world x"]`, String(world[i][0]));
    await page.fill(`input[aria-label="point ${i + 1} world y"]`, String(world[i][1]));
  }
  await page.click('#c-save');
  await page.waitForFunction(() => window.trackdTest.calib.saved, null, { timeout: 10000 })
    .catch(async () => fail(`no calibration save: ${await page.textContent('#t-msg')}`));
  const clicked = await page.evaluate(() => window.trackdTest.calib.points);
  want.calibration.points = clicked.map((p, i) => [p.px, p.py, world[i][0], world[i][1]]);
  const got = readFile();
  fs.writeFileSync(path.join(outDir, 'after-calibration.json'), JSON.stringify(got, null, 2));
  const d = diff(got, want);
  if (d) fail(`calibration: the saved file differs from the previous one plus the edit at ${d}`);
  const said = await page.textContent('#t-msg');
  if (!/calibration of 4 points saved to .*nothing else in the file changed/.test(said))
    fail(`calibration save: the page says "${said}"`);
  console.log('calibration: saved file = previous + the calibration alone (red still tracked, ' +
              'unsaved yellow not written)');
  // Live frames still have red's instances.
  await page.waitForFunction(() => {
    const f = window.trackdTest.lastFrame;
    const r = f && f.objects.find((o) => o.name === 'red');
    return r && Array.isArray(r.instances) && r.instances.length > 0;
  }, null, { timeout: 10000 }).catch(() => fail('red lost its instances after the calibration save'));
  want.objects.push(taught);
  await saveAndCompare(page, want, 'teach');

  // 4. Delete blue.
  await clickRow(page, 'blue');
  await page.click('#t-remove');
  await page.waitForFunction(() => !window.trackdTest.objects.some((o) => o.name === 'blue'), null,
                             { timeout: 10000 }).catch(() => fail('blue was not removed'));
  want.objects.splice(1, 1);
  await saveAndCompare(page, want, 'delete');
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('saves keep every setting: ok');
} finally {
  if (browser) await browser.close();
  await stop(daemon);
}
