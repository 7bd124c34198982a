// Browser test of markers (issue 26): the real daemon finds the robots of a
// generated SSL scene (tests/integration/ssl_scene.py: 6 robots wearing the
// league's standard pattern, examples/ssl-field.json) and the page draws
// each of the frame's markers (web/markers.js) where the frame says, with
// its pattern, id and track id, and an arrow along its heading.
//
//   node markers.test.mjs TRACKD WEB_ROOT OUT_DIR
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, freePort, launchChromium, near, openPage, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 480, ROBOTS = 6;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-markers-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'ssl.mkv');
execFileSync('/usr/bin/python3', [path.join(root, 'tests', 'integration', 'ssl_scene.py'), clip,
  '--frames', '30', '--size', `${FRAME_W}x${FRAME_H}`, '--robots', String(ROBOTS)]);
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const port = await freePort();
const daemon = spawn(trackd, ['--input', clip, '--loop', '--objects',
                              path.join(root, 'examples', 'ssl-field.json'), '--backend', 'cpu',
                              '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                              '--log-level', 'warn'],
                     { stdio: ['ignore', 'ignore', log] });

let browser;
try {
  await waitListening(port, daemon, path.join(outDir, 'trackd.log'));
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors,
                              () => window.trackdTest && window.trackdTest.hello);
  // A drawing of the newest frame that has markers, with the canvas pixels
  // at each arrow's middle read in the same go (no redraw between).
  const got = await page.waitForFunction(() => {
    const t = window.trackdTest;
    const d = t.lastDrawn;
    const f = t.lastFrame;
    if (!d || !d.preview || !d.matched || !f || d.seq !== f.seq || !Array.isArray(f.markers)) return null;
    if (f.markers.length === 0 || !d.markers || d.markers.length !== f.markers.length) return null;
    const c = document.getElementById('view');
    const ctx = c.getContext('2d');
    const mid = d.markers.map((m) => Array.from(ctx.getImageData(Math.round((m.cx + m.hx) / 2),
      Math.round((m.cy + m.hy) / 2), 1, 1).data.slice(0, 3)));
    return { drawn: d.markers, frame: f.markers, cw: c.width, ch: c.height, mid };
  }, null, { timeout: 20000 }).catch(async () => {
    const d = await page.evaluate(() => window.trackdTest.lastDrawn);
    fail(`never a drawing with the frame's markers: ${JSON.stringify(d && d.markers)}`);
  });
  const st = await got.jsonValue();
  const sx = st.cw / FRAME_W, sy = st.ch / FRAME_H;
  if (st.frame.length < ROBOTS - 2) fail(`only ${st.frame.length} markers: ${JSON.stringify(st.frame)}`);
  st.frame.forEach((m, k) => {
    const d = st.drawn[k];
    if (d.pattern !== m.pattern || d.id !== m.id || d.track_id !== m.track_id)
      fail(`marker ${k} drawn as ${JSON.stringify(d)} for ${JSON.stringify(m)}`);
    if (!['blue', 'yellow'].includes(m.pattern) || m.id < 0 || m.id > 15) fail(`marker ${JSON.stringify(m)}`);
    if (!near(d.cx, (m.cx + 0.5) * sx, 1) || !near(d.cy, (m.cy + 0.5) * sy, 1))
      fail(`marker ${m.pattern} ${m.id} drawn at ${d.cx}, ${d.cy} for ${m.cx}, ${m.cy}`);
    // The arrow points along the heading: counter-clockwise on screen.
    const a = Math.atan2(-(d.hy - d.cy), d.hx - d.cx) * 180 / Math.PI;
    const diff = Math.abs(((a - m.heading) % 360 + 540) % 360 - 180);
    if (diff > 1) fail(`marker ${m.pattern} ${m.id}: arrow at ${a.toFixed(1)} deg, heading ${m.heading}`);
    if (!st.mid[k].every((v) => v > 200)) fail(`marker ${m.pattern} ${m.id}: arrow pixel ${st.mid[k]} is not white`);
  });
  await page.screenshot({ path: path.join(outDir, 'markers.png') });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser markers: ${st.frame.length} markers drawn; passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
