// Browser test of the calibration page (the "done when"): a new user
// starts `trackd --input clip.mp4`, opens the page, teaches two objects by
// dragging over them, tunes one with a slider while its mask shows, saves,
// reloads the page (objects persist) and restarts trackd with the saved
// file (objects found again). Real daemon, headless Debian chromium via
// playwright-core; screenshots in OUT_DIR.
//
//   node teach.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip is made with the ffmpeg CLI (harness.mjs makeSquaresClip: H.264
// in MP4, as users have): a 640x360 gray frame with a red 60x60 square at
// (100, 100) and a blue 80x60 one at (400, 200); their centroids are
// (129.5, 129.5) and (439.5, 229.5).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dragFrame, fail, freePort, launchChromium, makeSquaresClip, near, screenPixels, stop,
         waitListening } from './harness.mjs';

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
      const f = window.trackdTest.lastFrame;
      return f ? f.objects.find((o) => o.name === n) || null : null;
    }, name);
    if (r && fn(r)) return r;
    await page.waitForTimeout(100);
  }
  fail(`${what}: last result ${JSON.stringify(r)}`);
}

// Screen colours of the H lo or H hi slider's track at the given hue values.
// The thumb's centre runs from 7 px (half the thumb in style.css) to the
// width minus 7 px.
const ACCENT = [0x4d, 0xab, 0xff];   // style.css --accent: selected
const TRACK_OFF = [0x39, 0x41, 0x4c]; // style.css --track-off: not selected
async function hueTrack(page, which, values) {
  const id = `#t-${which}0`;
  await page.locator(id).scrollIntoViewIfNeeded();
  const r = await page.evaluate((sel) => {
    const b = document.querySelector(sel).getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  }, id);
  const pts = values.map((v) => [r.left + 7 + (v / 359) * (r.width - 14), r.top + r.height / 2]);
  return screenPixels(page, pts);
}
const isColour = (px, rgb) => px.every((v, i) => near(v, rgb[i], 12));

// Teaches obj by dragging over it; space: the form's space to add it in
// (the sample's suggestion for that space), else the suggested one (hsv).
async function teach(page, obj, space) {
  const before = await page.evaluate(() => window.trackdTest.tune.lastSample);
  await page.click('#t-teach');
  // On loopback without --control-token, teaching starts at once: no prompt.
  const gate = await page.evaluate(() => ({
    control_auth: window.trackdTest.hello.control_auth, teaching: window.trackdTest.tune.teaching,
    prompt: !document.getElementById('t-auth').hidden }));
  if (gate.control_auth !== false || !gate.teaching || gate.prompt)
    fail(`loopback, no token: ${JSON.stringify(gate)}`);
  // Drag over the inside of the square (its edges are blurred by H.264).
  const [x0, y0, x1, y1] = obj.box;
  await dragFrame(page, [x0 + 8, y0 + 8], [x1 - 8, y1 - 8], FRAME_W, FRAME_H);
  await page.waitForFunction((b) => {
    const s = window.trackdTest.tune.lastSample;
    return s && JSON.stringify(s) !== JSON.stringify(b);
  }, before, { timeout: 5000 }).catch(() => fail(`no sample reply for ${obj.name}`));
  const s = await page.evaluate(() => window.trackdTest.tune.lastSample);
  console.log(`${obj.name}: sampled ${s.n} px in ${JSON.stringify(s.rect)}, suggest ` +
              `${JSON.stringify(s.suggest)}`);
  if (s.rect[0] < x0 || s.rect[2] > x1 || s.rect[1] < y0 || s.rect[3] > y1)
    fail(`sample rectangle ${s.rect} is not inside the square ${obj.box}`);
  await page.fill('#t-name', obj.name);
  if (space) await page.selectOption('#t-space', space);
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
makeSquaresClip(clip);
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
  await page.waitForFunction(() => window.trackdTest && window.trackdTest.previewsReceived > 2 &&
                                   window.trackdTest.lastFrame, null, { timeout: 20000 })
    .catch(() => fail('no previews within 20 s'));

  // 1. Teach the red square; 2. a slider changes the result (mask on).
  await teach(page, RED);
  // Red's suggested hue range wraps through 0: the note says so, and both
  // hue sliders' tracks light up its two parts, 0..hi and lo..359.
  const [hlo, hhi] = await page.evaluate(() => ['t-lo0', 't-hi0'].map(
    (id) => Number(document.getElementById(id).value)));
  if (!(hlo > hhi)) fail(`red's suggested hue ${hlo}..${hhi} does not wrap through 0`);
  const note = await page.textContent('#t-hue-note');
  if (note !== `wraps through 0: ${hlo}..359 and 0..${hhi}`) fail(`hue note "${note}"`);
  // The sliders and the name field take their ranges from the daemon's
  // hello.limits (the page has no copies): hue 0..359, S and V 0..255,
  // names of at most 63 bytes.
  const ranges = await page.evaluate(() => ({
    max: ['t-lo0', 't-hi0', 't-lo1', 't-hi2'].map((id) => document.getElementById(id).max),
    name: document.getElementById('t-name').maxLength }));
  if (JSON.stringify(ranges) !== JSON.stringify({ max: ['359', '359', '255', '255'], name: 63 }))
    fail(`slider ranges and name length: ${JSON.stringify(ranges)}`);
  // Away from each slider's own thumb (at hlo on H lo, at hhi on H hi).
  const onLo = await hueTrack(page, 'lo', [hhi / 2, 180]);
  const onHi = await hueTrack(page, 'hi', [(hlo + 359) / 2, 180]);
  if (!isColour(onLo[0], ACCENT) || !isColour(onHi[0], ACCENT) ||
      !isColour(onLo[1], TRACK_OFF) || !isColour(onHi[1], TRACK_OFF))
    fail(`hue ${hlo}..${hhi}: track colours H lo ${JSON.stringify(onLo)}, ` +
         `H hi ${JSON.stringify(onHi)} (selected, not selected)`);
  console.log(`hue ${hlo}..${hhi}: "${note}", tracks lit at ${hhi / 2} and ${(hlo + 359) / 2}`);
  await page.check('#t-mask');
  await page.waitForFunction(() => window.trackdTest.tune.lastAck &&
                                   window.trackdTest.tune.lastAck.request === 'preview' &&
                                   window.trackdTest.tune.lastAck.mask === 'redsq',
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

  // 3. Teach the blue one (its hue does not wrap: one part, none near 0), save.
  await teach(page, BLUE);
  const [blo, bhi] = await page.evaluate(() => ['t-lo0', 't-hi0'].map(
    (id) => Number(document.getElementById(id).value)));
  const bnote = await page.textContent('#t-hue-note');
  if (!(blo < bhi) || bnote !== `hue ${blo}..${bhi}`) fail(`blue hue ${blo}..${bhi}, note "${bnote}"`);
  const offPx = [...await hueTrack(page, 'lo', [4, 355]), ...await hueTrack(page, 'hi', [4, 355])];
  if (!offPx.every((px) => isColour(px, TRACK_OFF)))
    fail(`blue hue ${blo}..${bhi}: tracks lit near 0: ${JSON.stringify(offPx)}`);
  console.log(`hue ${blo}..${bhi}: "${bnote}", nothing lit near 0`);
  await page.click('#t-done');

  // 3b. The red square again in lab, which separates light from colour: the
  // form takes the sample's lab box, L left open (0..255); found at the
  // same place; then removed again (the save below keeps the two).
  const REDLAB = { ...RED, name: 'redlab' };
  await teach(page, REDLAB, 'lab');
  const labBox = await page.evaluate(() => ['t-lo0', 't-hi0', 't-lo1', 't-hi1'].map(
    (id) => Number(document.getElementById(id).value)));
  if (labBox[0] !== 0 || labBox[1] !== 255 || !(labBox[2] > 128))
    fail(`lab box L ${labBox[0]}..${labBox[1]}, a from ${labBox[2]}: light not open or not red`);
  console.log(`${REDLAB.name}: lab L ${labBox[0]}..${labBox[1]}, a ${labBox[2]}..${labBox[3]}`);
  await page.click('#t-remove');
  await page.waitForFunction(() => !window.trackdTest.objects.some((o) => o.name === 'redlab'),
                             null, { timeout: 5000 }).catch(() => fail('redlab not removed'));
  await page.waitForTimeout(600);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(outDir, 'teach-two.png') });
  await page.click('#t-save');
  await page.waitForFunction(() => window.trackdTest.tune.saved, null, { timeout: 5000 })
    .catch(() => fail('no save ack'));
  const file = JSON.parse(fs.readFileSync(saved, 'utf8'));
  const names = file.objects.map((o) => o.name);
  if (JSON.stringify(names) !== JSON.stringify([RED.name, BLUE.name]))
    fail(`saved file has ${JSON.stringify(names)}`);
  console.log(`saved ${saved}: ${JSON.stringify(names)}`);

  // 4. Reload the page: the objects are still there.
  await page.reload();
  await page.waitForFunction(() => window.trackdTest.hello && window.trackdTest.lastFrame, null,
                             { timeout: 10000 }).catch(() => fail('no hello after reload'));
  const after = await page.evaluate(() => window.trackdTest.objects.map((o) => o.name));
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

  // 7. Editing needs the control token (--control-token; the same as
  //    listening beyond loopback): hello says so and the page asks for the
  //    token when Teach is clicked, before any drag.
  await stop(daemon);
  const TOKEN = `tok-${process.pid}`;
  const tokenArgs = ['--input', clip, '--objects', saved, '--control-token', TOKEN];
  daemon = startTrackd(tokenArgs, port, log);
  await waitListening(port, daemon);
  const p2 = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  p2.on('pageerror', (e) => errors.push(String(e)));
  await p2.goto(`http://127.0.0.1:${port}/`);
  await p2.waitForFunction(() => window.trackdTest.hello && window.trackdTest.previewsReceived > 2, null,
                           { timeout: 20000 }).catch(() => fail('token daemon: no previews'));
  if (await p2.evaluate(() => window.trackdTest.hello.control_auth) !== true)
    fail('hello.control_auth is not true with --control-token');
  const gate = () => p2.evaluate(() => ({
    teaching: window.trackdTest.tune.teaching, prompt: !document.getElementById('t-auth').hidden,
    msg: document.getElementById('t-msg').textContent }));
  await p2.click('#t-teach');
  let g = await gate();
  if (g.teaching || !g.prompt) fail(`Teach with a token required: ${JSON.stringify(g)}`);
  await p2.screenshot({ path: path.join(outDir, 'teach-token.png') });
  await p2.fill('#t-token', 'not-the-token');
  await p2.click('#t-unlock');
  await p2.waitForFunction(() => document.getElementById('t-msg').textContent === 'wrong control token',
                           null, { timeout: 5000 }).catch(() => fail('a wrong token was not refused'));
  g = await gate();
  if (g.teaching || !g.prompt) fail(`after a wrong token: ${JSON.stringify(g)}`);
  await p2.fill('#t-token', TOKEN);
  await p2.click('#t-unlock');
  await p2.waitForFunction(() => window.trackdTest.tune.teaching &&
                                 document.getElementById('t-auth').hidden, null, { timeout: 5000 })
    .catch(async () => fail(`the right token did not start teaching: ${JSON.stringify(await gate())}`));
  const [bx0, by0, bx1, by1] = BLUE.box;
  await dragFrame(p2, [bx0 + 8, by0 + 8], [bx1 - 8, by1 - 8], FRAME_W, FRAME_H);
  await p2.waitForFunction(() => window.trackdTest.tune.lastSample, null, { timeout: 5000 })
    .catch(async () => fail(`no sample after unlocking: ${JSON.stringify(await gate())}`));
  console.log('control token: asked before teaching, wrong one refused, right one teaches');
  // A restart is a new connection: the page authenticates again by itself.
  await p2.click('#t-done');
  await p2.evaluate(() => { window.oldHello = window.trackdTest.hello; });
  await stop(daemon);
  daemon = startTrackd(tokenArgs, port, log);
  await waitListening(port, daemon);
  await p2.waitForFunction(() => window.trackdTest.hello !== window.oldHello && window.trackdTest.tune.authed,
                           null, { timeout: 15000 }).catch(() => fail('no auth after reconnecting'));
  await p2.click('#t-teach');
  g = await gate();
  if (!g.teaching || g.prompt) fail(`Teach after reconnecting: ${JSON.stringify(g)}`);
  await p2.click('#t-teach');
  // The token in the page's address (?token=) needs no prompt either.
  const p3 = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  p3.on('pageerror', (e) => errors.push(String(e)));
  await p3.goto(`http://127.0.0.1:${port}/?token=${TOKEN}`);
  await p3.waitForFunction(() => window.trackdTest.hello && window.trackdTest.tune.authed, null,
                           { timeout: 10000 }).catch(() => fail('?token= not accepted'));
  await p3.click('#t-teach');
  if (!(await p3.evaluate(() => window.trackdTest.tune.teaching &&
                                document.getElementById('t-auth').hidden)))
    fail('?token=: Teach did not start at once');
  console.log('control token: re-sent after a restart; ?token= teaches at once');

  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser teach: passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
