// Browser test of the axes toggle (issue 26): the real daemon measures a
// generated clip of spinning shapes (tests/integration/spin_scene.py: a red
// 120 x 40 ellipse, tracked, and a blue 100 x 24 rectangle with one blob),
// and with "axes" on the page draws each instance's and blob's major axis
// (web/axes.js): a white line through the centroid along `orientation`,
// `major` to each side. Off, nothing is drawn; on, the drawn line's centre,
// angle and length are the frame's and the canvas is white on it; the
// frame's majors are the shapes' (a filled ellipse's major is a quarter of
// its length; a w-long bar's sqrt((w^2 - 1) / 12)); off again, the picture
// shows there.
//
//   node axes.test.mjs TRACKD WEB_ROOT OUT_DIR
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, launchChromium, near, openPage, startOnClip, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MAJOR = { red: 30, blue: Math.sqrt((100 * 100 - 1) / 12) };

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-axes-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'spin.mkv');
execFileSync('/usr/bin/python3', [path.join(root, 'tests', 'integration', 'spin_scene.py'), clip,
  '--frames', '30', '--size', `${FRAME_W}x${FRAME_H}`]);
const set = JSON.parse(fs.readFileSync(`${clip}.truth.json`, 'utf8')).objects;
Object.assign(set.objects[0], { blobs: 1, track: true });
Object.assign(set.objects[1], { blobs: 1 });
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify(set));
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir, ['--backend', 'cpu']);

// The shape of object name in frame f whose axis the page draws: the red
// object's instance, the blue object's blob.
function shapeOf(f, name) {
  const o = f.objects.find((x) => x.name === name);
  if (!o) return null;
  return name === 'red' ? (o.instances || [])[0] : (o.blobs || [])[0];
}

// Waits for a drawing (on a preview, with its own frame's result) whose
// axes number n, and reads the canvas at the probe points of each of the
// frame's shapes (a quarter major and three quarters from the centroid,
// both ways along the frame's orientation: the whitest pixel of the 3 x 3
// around each), in the same go.
async function drawing(page, n, what) {
  const got = await page.waitForFunction(([n, names]) => {
    const t = window.trackdTest;
    const d = t.lastDrawn;
    const f = t.lastFrame;
    if (!d || !d.preview || !d.matched || !f || d.seq !== f.seq || !Array.isArray(d.axes) ||
        d.axes.length !== n) return null;
    const c = document.getElementById('view');
    const ctx = c.getContext('2d');
    const sx = c.width / f.width, sy = c.height / f.height;
    const probes = {};
    for (const name of names) {
      const o = f.objects.find((x) => x.name === name);
      const s = o && (name === 'red' ? (o.instances || [])[0] : (o.blobs || [])[0]);
      if (!s) return null;
      const a = (s.orientation * Math.PI) / 180;
      probes[name] = [-0.75, -0.25, 0.25, 0.75].map((k) => {
        const x = Math.round((s.cx + k * s.major * Math.cos(a) + 0.5) * sx);
        const y = Math.round((s.cy - k * s.major * Math.sin(a) + 0.5) * sy);
        // The whitest pixel around it: a 2-pixel line off the pixel grid
        // covers a neighbour more than the pixel itself.
        const px = ctx.getImageData(x - 1, y - 1, 3, 3).data;
        let best = [0, 0, 0];
        for (let i = 0; i < 36; i += 4) {
          if (Math.min(px[i], px[i + 1], px[i + 2]) > Math.min(...best)) best = [px[i], px[i + 1], px[i + 2]];
        }
        return best;
      });
    }
    return { axes: d.axes, frame: f, cw: c.width, ch: c.height, probes };
  }, [n, ['red', 'blue']], { timeout: 20000 }).catch(async () => {
    const d = await page.evaluate(() => window.trackdTest.lastDrawn);
    fail(`${what}: never a drawing with ${n} axes: ${JSON.stringify(d && d.axes)}`);
  });
  return got.jsonValue();
}

const white = (p) => p.every((v) => v > 200);

let browser;
try {
  await waitListening(port, daemon, path.join(outDir, 'trackd.log'));
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors,
                              () => window.trackdTest && window.trackdTest.hello);
  if (await page.isChecked('#v-axes')) fail('the axes toggle starts on');
  let st = await drawing(page, 0, 'axes off');
  for (const name of ['red', 'blue']) {
    if (st.probes[name].every(white)) fail(`axes off: ${name}'s axis is white: ${st.probes[name]}`);
  }

  await page.check('#v-axes');
  st = await drawing(page, 2, 'axes on');
  const sx = st.cw / FRAME_W, sy = st.ch / FRAME_H;
  for (const [name, kind, obj] of [['red', 'instance', 0], ['blue', 'blob', 1]]) {
    const s = shapeOf(st.frame, name);
    const d = st.axes.find((x) => x.obj === obj);
    if (!d || d.kind !== kind) fail(`${name}: no ${kind} axis drawn: ${JSON.stringify(st.axes)}`);
    if (!near(s.major, MAJOR[name], 0.02 * MAJOR[name]))
      fail(`${name}: major ${s.major}, the shape's is ${MAJOR[name].toFixed(2)}`);
    if (!near(d.cx, (s.cx + 0.5) * sx, 1) || !near(d.cy, (s.cy + 0.5) * sy, 1))
      fail(`${name}: axis through ${d.cx}, ${d.cy} for the centroid ${s.cx}, ${s.cy}`);
    // Along the orientation, counter-clockwise on screen; major to each side.
    const a = (Math.atan2(-(d.y0 - d.cy) / sy, (d.x0 - d.cx) / sx) * 180) / Math.PI;
    const diff = Math.abs((((a - s.orientation) % 360) + 540) % 360 - 180);
    if (diff > 0.5) fail(`${name}: axis at ${a.toFixed(2)} deg, orientation ${s.orientation}`);
    const half = Math.hypot((d.x0 - d.cx) / sx, (d.y0 - d.cy) / sy);
    const other = Math.hypot((d.x1 - d.cx) / sx, (d.y1 - d.cy) / sy);
    if (!near(half, s.major, 0.05) || !near(other, s.major, 0.05))
      fail(`${name}: axis ${half.toFixed(2)} + ${other.toFixed(2)} px, major ${s.major}`);
    if (!st.probes[name].every(white)) fail(`${name}: the axis is not white on the canvas: ${JSON.stringify(st.probes[name])}`);
  }
  await page.screenshot({ path: path.join(outDir, 'axes.png') });

  await page.uncheck('#v-axes');
  st = await drawing(page, 0, 'axes off again');
  for (const name of ['red', 'blue']) {
    if (st.probes[name].every(white)) fail(`axes off again: ${name}'s axis still white`);
  }
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser axes: passed (screenshot in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
