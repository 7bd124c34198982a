// Browser test: the real trackd daemon serves the page, headless Chromium
// (Debian's, driven by playwright-core) loads it, and we check that the
// overlay for a known object is drawn where the object is, that the object
// list reports it, and that the page reconnects by itself after a restart.
//
//   node overlay.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip is made here with the ffmpeg CLI: a 640x360 gray frame with a
// solid red 60x60 square at (400, 100), lossless (ffv1, yuv420p; the square
// is aligned to the 2x2 chroma grid, so its box is exact: [400,100,459,159]).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, near, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const BOX = [400, 100, 459, 159];
const FRAME_W = 640, FRAME_H = 360;

function startTrackd(clip, objs, port, log, extra = []) {
  const p = spawn(trackd, ['--input', clip, '--loop', '--objects', objs, '--listen',
                           `127.0.0.1:${port}`, '--web-root', webRoot, '--log-level', 'warn',
                           '--backend', 'cpu', ...extra], { stdio: ['ignore', 'ignore', log] });
  return p;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-browser-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'square.mkv');
execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
  `color=c=0x808080:s=${FRAME_W}x${FRAME_H}:r=30`, '-vf',
  'drawbox=x=400:y=100:w=60:h=60:color=0xE02828:t=fill', '-t', '3', '-c:v', 'ffv1',
  '-pix_fmt', 'yuv420p', clip]);
const objs = path.join(tmp, 'objects.json');
// Red, then seven colours the clip does not have (a set the size of the
// demo's, so the objects table is as long as a user's): only red is found.
const absent = [['orange', 25, 40], ['yellow', 50, 65], ['green', 100, 140], ['cyan', 170, 190],
                ['blue', 215, 245], ['violet', 260, 280], ['magenta', 290, 320]];
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255] },
  ...absent.map(([name, h0, h1]) => ({ name, space: 'hsv', lo: [h0, 120, 80], hi: [h1, 255, 255] }))] }));
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const port = await freePort();
let daemon = startTrackd(clip, objs, port, log);
let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`);

  // 1. A preview with its matching result drawn over it, one box.
  await page.waitForFunction(() => {
    const d = window.trackdTest && window.trackdTest.lastDrawn;
    return d && d.preview && d.matched && d.boxes.length === 1 && window.trackdTest.previewsReceived > 3;
  }, null, { timeout: 20000 }).catch(() => fail('no preview with a matched overlay within 20 s'));
  // The camera's name (by default the clip's file name) in the Daemon card and the title.
  const cam = await page.evaluate(() => [document.getElementById('p-camera').textContent,
                                         document.title]);
  if (cam[0] !== 'square' || cam[1] !== 'trackd \u00b7 square')
    fail(`camera name shown as ${JSON.stringify(cam)}, want "square"`);
  const st = await page.evaluate(() => {
    const c = document.getElementById('view');
    return { cw: c.width, ch: c.height, drawn: window.trackdTest.lastDrawn,
             hello: window.trackdTest.hello, frame: window.trackdTest.lastFrame };
  });
  const sx = st.cw / FRAME_W, sy = st.ch / FRAME_H;
  const b = st.drawn.boxes[0];
  const want = [BOX[0] * sx, BOX[1] * sy, (BOX[2] + 1) * sx, (BOX[3] + 1) * sy];
  const got = [b.x0, b.y0, b.x1, b.y1];
  console.log(`canvas ${st.cw}x${st.ch}; overlay box ${JSON.stringify(got)}, expected ` +
              `${JSON.stringify(want.map((v) => +v.toFixed(1)))}`);
  got.forEach((v, i) => { if (!near(v, want[i], 2)) fail(`box edge ${i}: ${v} vs ${want[i]}`); });
  if (!near(b.cx, (429.5 + 0.5) * sx, 2) || !near(b.cy, (129.5 + 0.5) * sy, 2))
    fail(`centroid cross at (${b.cx}, ${b.cy})`);
  const fo = st.frame.objects[0];
  if (!fo.found || JSON.stringify(fo.bbox) !== JSON.stringify(BOX) || fo.mass !== 3600)
    fail(`frame result ${JSON.stringify(fo)}`);

  // 2. The canvas really has the overlay colour on the box's edges (middle of
  //    the top and left edges; the line is centred on the box edge).
  const colour = st.hello.objects[0].color;
  const rgb = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));
  const px = await page.evaluate(([pts]) => {
    const ctx = document.getElementById('view').getContext('2d');
    return pts.map(([x, y]) => Array.from(ctx.getImageData(x, y, 1, 1).data.slice(0, 3)));
  }, [[[Math.round((b.x0 + b.x1) / 2), b.y0], [b.x0, Math.round((b.y0 + b.y1) / 2)],
       [b.x1 - 1, Math.round((b.y0 + b.y1) / 2)]]]);
  for (const p of px)
    if (!p.every((v, i) => near(v, rgb[i], 3))) fail(`edge pixel ${p} is not the overlay ${colour}`);
  console.log(`edge pixels ${JSON.stringify(px)} = overlay colour ${colour}`);

  // 3. The object list: found, mass, centroid (429.5, 129.5).
  const row = await page.evaluate(() => Array.from(document.querySelectorAll('#objects tr'))
    .map((tr) => tr.innerText.replace(/\s+/g, ' ').trim()));
  const red = row.find((r) => r.startsWith('red'));
  const m = red && red.match(/(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?)/);
  if (!red || !/yes/.test(red) || !m || !near(+m[1], 429.5, 0.2) || !near(+m[2], 129.5, 0.2))
    fail(`object list row: ${JSON.stringify(row)}`);
  console.log(`object list: ${red}`);
  // Results first: at 1280x800, unscrolled, the picture and every row of the
  // objects table are on screen (the table is not pushed below the fold).
  const fold = await page.evaluate(() => {
    window.scrollTo(0, 0);
    const r = (e) => { const b = e.getBoundingClientRect(); return { top: b.top, bottom: b.bottom }; };
    return { h: window.innerHeight, y: window.scrollY, view: r(document.getElementById('view')),
             rows: Array.from(document.querySelectorAll('#objects tr')).map(r) };
  });
  if (fold.y !== 0 || fold.rows.length !== 1 + absent.length) fail(`fold check: ${JSON.stringify(fold)}`);
  for (const b of [fold.view, ...fold.rows])
    if (b.top < 0 || b.bottom > fold.h) fail(`not within the 1280x800 viewport: ${JSON.stringify(fold)}`);
  console.log(`1280x800: video bottom ${fold.view.bottom}, last object row bottom ` +
              `${fold.rows[fold.rows.length - 1].bottom} <= ${fold.h}`);
  // The daemon's 1 Hz stats reach the panel too (and make the screenshot whole).
  await page.waitForFunction(() => window.trackdTest.lastStats &&
                                   document.getElementById('p-sfps').textContent !== '\u2013',
                             null, { timeout: 5000 })
    .catch(() => fail('no stats shown within 5 s'));
  await page.screenshot({ path: path.join(outDir, 'overlay.png') });

  // 4. Kill the daemon and start it again on the same port: the page
  //    reconnects by itself (backoff 0.5 s .. 5 s) and draws fresh frames.
  const before = await page.evaluate(() => ({ c: window.trackdTest.connects, f: window.trackdTest.framesReceived }));
  // SIGKILL, as in a crash: no close handshake, the page only sees the TCP close.
  await new Promise((resolve) => { daemon.on('exit', resolve); daemon.kill('SIGKILL'); });
  await page.waitForFunction(() => !window.trackdTest.connected, null, { timeout: 10000 })
    .catch(() => fail('page did not notice the daemon going away'));
  daemon = startTrackd(clip, objs, port, log);
  await waitListening(port, daemon);
  await page.waitForFunction((c) => window.trackdTest.connected && window.trackdTest.connects > c,
                             before.c, { timeout: 15000 })
    .catch(() => fail('page did not reconnect within 15 s'));
  // Counted from the new connection only (the page ignores the old socket):
  // fresh results and previews arrive and are drawn with the box in place.
  const base = await page.evaluate(() => ({ f: window.trackdTest.framesReceived,
                                            p: window.trackdTest.previewsReceived }));
  await page.waitForFunction((b) => {
    const t = window.trackdTest;
    const d = t.lastDrawn;
    return t.framesReceived >= b.f + 10 && t.previewsReceived >= b.p + 3 &&
           d && d.preview && d.matched && d.boxes.length === 1;
  }, base, { timeout: 15000 }).catch(() => fail('no new frames and previews drawn after reconnecting'));
  const again = await page.evaluate(() => window.trackdTest.lastDrawn.boxes[0]);
  [again.x0, again.y0, again.x1, again.y1].forEach((v, i) => {
    if (!near(v, want[i], 2)) fail(`after reconnect, box edge ${i}: ${v} vs ${want[i]}`);
  });
  const after = await page.evaluate(() => window.trackdTest.framesReceived);
  console.log(`reconnected: connects ${before.c} -> more, frames ${before.f} -> ${base.f} ` +
              `(at reconnect) -> ${after}`);
  await page.waitForTimeout(500);   // let the "stale" dimming fade out of the picture
  await page.screenshot({ path: path.join(outDir, 'overlay-after-restart.png') });

  // 5. Previews off (--no-preview): the overlay is drawn for every result on a
  //    plain background, still at the frame's aspect ratio and in place.
  await stop(daemon);
  daemon = startTrackd(clip, objs, port, log, ['--no-preview']);
  await waitListening(port, daemon);
  const c2 = await page.evaluate(() => window.trackdTest.connects);
  await page.waitForFunction((c) => {
    const d = window.trackdTest.lastDrawn;
    return window.trackdTest.connects > c && d && !d.preview && d.matched && d.boxes.length === 1;
  }, c2, { timeout: 15000 }).catch(() => fail('no overlay on a plain background with --no-preview'));
  const np = await page.evaluate(() => {
    const c = document.getElementById('view');
    const px = Array.from(c.getContext('2d').getImageData(5, 5, 1, 1).data.slice(0, 3));
    return { cw: c.width, ch: c.height, box: window.trackdTest.lastDrawn.boxes[0], px };
  });
  if (!near(np.cw / np.ch, FRAME_W / FRAME_H, 0.01)) fail(`canvas ${np.cw}x${np.ch} is not 16:9`);
  const w2 = [BOX[0] * np.cw / FRAME_W, BOX[1] * np.ch / FRAME_H,
              (BOX[2] + 1) * np.cw / FRAME_W, (BOX[3] + 1) * np.ch / FRAME_H];
  [np.box.x0, np.box.y0, np.box.x1, np.box.y1].forEach((v, i) => {
    if (!near(v, w2[i], 2)) fail(`no-preview box edge ${i}: ${v} vs ${w2[i]}`);
  });
  // The clip's background is 0x808080; a plain background is not the picture.
  if (np.px.every((v) => near(v, 128, 12))) fail(`background ${np.px} looks like the preview`);
  console.log(`no preview: box ${JSON.stringify([np.box.x0, np.box.y0, np.box.x1, np.box.y1])} ` +
              `on background ${JSON.stringify(np.px)}`);
  await page.waitForTimeout(500);
  await page.screenshot({ path: path.join(outDir, 'overlay-no-preview.png') });

  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser: passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
