// Browser test of the calibration page (the "done when"): a new user
// starts `trackd --input clip.mp4`, opens the page, teaches two objects by
// dragging over them, tunes one with a slider while its mask shows, saves,
// reloads the page (objects persist) and restarts trackd with the saved
// file (objects found again). Real daemon, headless Debian chromium via
// playwright-core; screenshots in OUT_DIR.
//
//   node teach.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip is made here with the ffmpeg CLI (H.264 in MP4, as users have):
// a 640x360 gray frame with a red 60x60 square at (100, 100) and a blue 80x60
// one at (400, 200); their centroids are (129.5, 129.5) and (439.5, 229.5).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, near, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const RED = { name: 'redsq', box: [100, 100, 159, 159], c: [129.5, 129.5], mass: 3600 };
const BLUE = { name: 'bluesq', box: [400, 200, 479, 259], c: [439.5, 229.5], mass: 4800 };

function startTrackd(args, port, log) {
  return spawn(trackd, ['--loop', '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                        '--backend', 'cpu', ...args], { stdio: ['ignore', 'ignore', log] });
}

// The newest frame's result for name, once fn(result) holds.
async function waitResult(page, name, fn, what, timeout = 10000) {
  const deadline = Date.now() + timeout;
  let r = null;
  while (Date.now() < deadline) {
    r = await page.evaluate((n) => {
      const f = window.trackd.lastFrame;
      return f ? f.objects.find((o) => o.name === n) || null : null;
    }, name);
    if (r && fn(r)) return r;
    await page.waitForTimeout(100);
  }
  fail(`${what}: last result ${JSON.stringify(r)}`);
}

// Drags from frame pixel a to frame pixel b over the video canvas.
async function dragFrame(page, a, b) {
  const r = await page.evaluate(() => {
    const b = document.getElementById('view').getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
  const cx = (x) => r.left + ((x + 0.5) * r.width) / FRAME_W;
  const cy = (y) => r.top + ((y + 0.5) * r.height) / FRAME_H;
  await page.mouse.move(cx(a[0]), cy(a[1]));
  await page.mouse.down();
  await page.mouse.move(cx((a[0] + b[0]) / 2), cy((a[1] + b[1]) / 2), { steps: 4 });
  await page.mouse.move(cx(b[0]), cy(b[1]), { steps: 4 });
  await page.mouse.up();
}

async function teach(page, obj) {
  const before = await page.evaluate(() => window.trackd.tune.lastSample);
  await page.click('#t-teach');
  // Drag over the inside of the square (its edges are blurred by H.264).
  const [x0, y0, x1, y1] = obj.box;
  await dragFrame(page, [x0 + 8, y0 + 8], [x1 - 8, y1 - 8]);
  await page.waitForFunction((b) => {
    const s = window.trackd.tune.lastSample;
    return s && JSON.stringify(s) !== JSON.stringify(b);
  }, before, { timeout: 5000 }).catch(() => fail(`no sample reply for ${obj.name}`));
  const s = await page.evaluate(() => window.trackd.tune.lastSample);
  console.log(`${obj.name}: sampled ${s.n} px in ${JSON.stringify(s.rect)}, suggest ` +
              `${JSON.stringify(s.suggest)}`);
  if (s.rect[0] < x0 || s.rect[2] > x1 || s.rect[1] < y0 || s.rect[3] > y1)
    fail(`sample rectangle ${s.rect} is not inside the square ${obj.box}`);
  await page.fill('#t-name', obj.name);
  await page.click('#t-add');
  const r = await waitResult(page, obj.name, (o) => o.found, `${obj.name} found after teaching`);
  if (!near(r.cx, obj.c[0], 1.5) || !near(r.cy, obj.c[1], 1.5) ||
      !near(r.mass, obj.mass, obj.mass * 0.1))
    fail(`${obj.name} at (${r.cx}, ${r.cy}) mass ${r.mass}, expected ${obj.c} mass ~${obj.mass}`);
  console.log(`${obj.name}: found at (${r.cx}, ${r.cy}), mass ${r.mass}`);
  return r;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-teach-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'clip.mp4');
execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
  `color=c=0x808080:s=${FRAME_W}x${FRAME_H}:r=30`, '-vf',
  'drawbox=x=100:y=100:w=60:h=60:color=0xE02828:t=fill,' +
  'drawbox=x=400:y=200:w=80:h=60:color=0x2850E0:t=fill',
  '-t', '3', '-c:v', 'libx264', '-crf', '12', '-pix_fmt', 'yuv420p', clip]);
const saved = path.join(outDir, 'objects.json');
fs.rmSync(saved, { force: true });
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const port = await freePort();
// No --objects: the user starts from nothing; save goes to --save-objects.
let daemon = startTrackd(['--input', clip, '--save-objects', saved], port, log);
let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(() => window.trackd && window.trackd.previewsReceived > 2 &&
                                   window.trackd.lastFrame, null, { timeout: 20000 })
    .catch(() => fail('no previews within 20 s'));

  // 1. Teach the red square; 2. a slider changes the result (mask on).
  await teach(page, RED);
  await page.check('#t-mask');
  await page.waitForFunction(() => window.trackd.tune.lastAck &&
                                   window.trackd.tune.lastAck.request === 'preview' &&
                                   window.trackd.tune.lastAck.mask === 'redsq',
                             null, { timeout: 5000 }).catch(() => fail('mask not acknowledged'));
  await page.waitForTimeout(800);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'teach-mask.png') });
  const vlo = await page.inputValue('#t-lo2');
  await page.fill('#t-lo2', '255');   // V >= 255: the red square (V ~224) no longer matches
  await waitResult(page, RED.name, (o) => !o.found && o.mass < 50, 'V lo slider at 255 hides it');
  console.log(`slider: V lo ${vlo} -> 255 hides ${RED.name}`);
  await page.fill('#t-lo2', vlo);
  await waitResult(page, RED.name, (o) => o.found && near(o.mass, RED.mass, RED.mass * 0.1),
                   'slider back restores it');
  console.log(`slider: V lo back to ${vlo} finds ${RED.name} again`);
  await page.click('#t-done');

  // 3. Teach the blue one, save.
  await teach(page, BLUE);
  await page.click('#t-done');
  await page.waitForTimeout(600);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'teach-two.png') });
  await page.click('#t-save');
  await page.waitForFunction(() => window.trackd.tune.saved, null, { timeout: 5000 })
    .catch(() => fail('no save ack'));
  const file = JSON.parse(fs.readFileSync(saved, 'utf8'));
  const names = file.objects.map((o) => o.name);
  if (JSON.stringify(names) !== JSON.stringify([RED.name, BLUE.name]))
    fail(`saved file has ${JSON.stringify(names)}`);
  console.log(`saved ${saved}: ${JSON.stringify(names)}`);

  // 4. Reload the page: the objects are still there.
  await page.reload();
  await page.waitForFunction(() => window.trackd.hello && window.trackd.lastFrame, null,
                             { timeout: 10000 }).catch(() => fail('no hello after reload'));
  const after = await page.evaluate(() => window.trackd.objects.map((o) => o.name));
  if (JSON.stringify(after) !== JSON.stringify([RED.name, BLUE.name]))
    fail(`after reload the page lists ${JSON.stringify(after)}`);
  console.log(`page reload: ${JSON.stringify(after)}`);

  // 5. Restart trackd with the saved file: both found where they are.
  await stop(daemon);
  daemon = startTrackd(['--input', clip, '--objects', saved], port, log);
  await waitListening(port, daemon);
  for (const o of [RED, BLUE]) {
    const r = await waitResult(page, o.name, (x) => x.found, `${o.name} after restart`, 20000);
    if (!near(r.cx, o.c[0], 1.5) || !near(r.cy, o.c[1], 1.5))
      fail(`${o.name} after restart at (${r.cx}, ${r.cy})`);
    console.log(`restart with the saved file: ${o.name} at (${r.cx}, ${r.cy})`);
  }
  await page.waitForTimeout(800);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'teach-restart.png') });

  // 6. Phone-sized screen: nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForTimeout(300);
  const sw = await page.evaluate(() => document.documentElement.scrollWidth);
  if (sw > 390) fail(`page is ${sw} px wide on a 390 px screen`);
  await page.screenshot({ path: path.join(outDir, 'teach-phone.png'), fullPage: true });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser teach: passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
