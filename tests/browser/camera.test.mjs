// Browser test of the Camera card (issue 23, item 10) on sources without
// camera controls: the real daemon on the demo scene and on a video file.
// The card says why there are none and shows no controls; with a control
// token the card waits for it and loads once it is given. The card on a
// camera with controls runs against vivid under qemu (tests/camera,
// camera_vivid.test.mjs).
//
//   node camera.test.mjs TRACKD WEB_ROOT OUT_DIR
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-camera-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'clip.mkv');
execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
  'color=c=0x808080:s=160x120:r=10:d=2', '-c:v', 'ffv1', '-pix_fmt', 'yuv420p', clip]);

// trackd with args; its port and process.
async function daemon(name, args) {
  const port = await freePort();
  const log = fs.openSync(path.join(outDir, `${name}.log`), 'w');
  const p = spawn(trackd, [...args, '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                           '--log-level', 'warn'], { stdio: ['ignore', 'ignore', log] });
  await waitListening(port, p);
  return { port, p };
}

// The card as shown: its note, how many control groups and inputs, the
// unlock button, and the page's camera state.
const card = (page) => page.evaluate(() => ({
  note: document.getElementById('cam-note').textContent,
  groups: document.querySelectorAll('#cam-groups fieldset').length,
  inputs: document.querySelectorAll('#cam-groups input').length,
  unlock: !document.getElementById('cam-unlock').hidden,
  save: !document.getElementById('cam-save').hidden,
  none: document.getElementById('camera').classList.contains('cam-none'),
  state: window.trackdTest.camera,
}));

async function noControls(page, url, reason) {
  await page.goto(url);
  await page.waitForFunction(() => window.trackdTest && window.trackdTest.camera.available === false,
                             null, { timeout: 20000 })
    .catch(async () => fail(`${url}: the card never said "no controls": ${JSON.stringify(await card(page))}`));
  const c = await card(page);
  if (!c.note.includes(reason) || c.state.reason !== reason || c.groups || c.inputs || !c.none ||
      c.unlock || c.save)
    fail(`${url}: want the reason "${reason}" and no controls, got ${JSON.stringify(c)}`);
  console.log(`  ${url}: "${c.note}"`);
}

let browser;
const procs = [];
try {
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));

  const demo = await daemon('demo', []);
  procs.push(demo.p);
  await noControls(page, `http://127.0.0.1:${demo.port}/`, 'the demo scene has no camera controls');
  const file = await daemon('file', ['--input', clip, '--loop']);
  procs.push(file.p);
  await noControls(page, `http://127.0.0.1:${file.port}/`, 'a video file has no camera controls');

  // With a control token the card asks for it; given, the card loads.
  const locked = await daemon('locked', ['--control-token', 'sesame']);
  procs.push(locked.p);
  await page.goto(`http://127.0.0.1:${locked.port}/`);
  await page.waitForFunction(() => !document.getElementById('cam-unlock').hidden, null,
                             { timeout: 20000 })
    .catch(async () => fail(`no unlock button without the token: ${JSON.stringify(await card(page))}`));
  let c = await card(page);
  if (c.state.available !== null || c.inputs) fail(`locked card: ${JSON.stringify(c)}`);
  await page.click('#cam-unlock');
  await page.waitForSelector('#t-auth:not([hidden])', { timeout: 10000 })
    .catch(() => fail('the unlock button did not ask for the token'));
  await page.fill('#t-token', 'sesame');
  await page.click('#t-unlock');
  await page.waitForFunction(() => window.trackdTest.camera.available === false, null,
                             { timeout: 20000 })
    .catch(async () => fail(`the card did not load after the token: ${JSON.stringify(await card(page))}`));
  c = await card(page);
  if (c.unlock || !c.note.includes('the demo scene has no camera controls'))
    fail(`unlocked card: ${JSON.stringify(c)}`);
  console.log('  with --control-token: the card waited for the token, then loaded');
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('PASS');
} finally {
  if (browser) await browser.close();
  for (const p of procs) await stop(p);
}
