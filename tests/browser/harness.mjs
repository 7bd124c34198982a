// Shared pieces of the browser tests: failing loudly, a free loopback port,
// starting the real daemon on a clip and waiting for it to listen, stopping
// it, launching Debian's chromium headless through playwright-core, opening
// a page, clicking and dragging over the video, reading screen pixels, and
// the clips.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { chromium } from 'playwright-core';

export function fail(msg) {
  console.error(`FAIL: ${msg}`);
  process.exitCode = 1;
  throw new Error(msg);
}

export const near = (a, b, tol) => Math.abs(a - b) <= tol;

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

// Waits until trackd (process proc) accepts connections on port; fails when
// it exits or does not within 10 s, first printing its log file when given.
export async function waitListening(port, proc, logPath = null) {
  const failWithLog = (msg) => {
    if (logPath) console.error(fs.readFileSync(logPath, 'utf8'));
    fail(msg);
  };
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) failWithLog(`trackd exited ${proc.exitCode} at start`);
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.end(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  failWithLog('trackd did not listen within 10 s');
}

// SIGTERM, then SIGKILL after 10 s; resolves with the exit code, or the
// signal's name when a signal ended it (before or after this call).
export function stop(p) {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) return resolve(p.exitCode ?? p.signalCode);
    const kill = setTimeout(() => p.kill('SIGKILL'), 10000);
    p.on('exit', (code, signal) => { clearTimeout(kill); resolve(code ?? signal); });
    p.kill('SIGTERM');
  });
}

// launch() gives every run a fresh temporary profile of its own. The flags keep
// chromium off the (closed) network.
export function launchChromium() {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Drags the mouse from frame pixel a to frame pixel b over the video canvas
// (frame fw x fh pixels), through two intermediate points as a hand would.
// The view's place in the viewport, after scrolling it into view: a focused
// form field elsewhere may have scrolled the page, and a mouse event outside
// the viewport reaches nothing.
export async function viewRect(page) {
  return page.evaluate(() => {
    const v = document.getElementById('view');
    v.scrollIntoView({ block: 'nearest', inline: 'nearest', behavior: 'instant' });
    const b = v.getBoundingClientRect();
    return { left: b.left, top: b.top, width: b.width, height: b.height };
  });
}

export async function dragFrame(page, a, b, fw, fh) {
  const r = await viewRect(page);
  const cx = (x) => r.left + ((x + 0.5) * r.width) / fw;
  const cy = (y) => r.top + ((y + 0.5) * r.height) / fh;
  await page.mouse.move(cx(a[0]), cy(a[1]));
  await page.mouse.down();
  await page.mouse.move(cx((a[0] + b[0]) / 2), cy((a[1] + b[1]) / 2), { steps: 4 });
  await page.mouse.move(cx(b[0]), cy(b[1]), { steps: 4 });
  await page.mouse.up();
}

// The colours [r, g, b] on screen at viewport points [[x, y], ...] (CSS
// pixels, device scale 1): a real screenshot, decoded by the browser itself.
export async function screenPixels(page, points) {
  const png = await page.screenshot();
  return page.evaluate(async ([b64, pts]) => {
    const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const img = await createImageBitmap(new Blob([bytes], { type: 'image/png' }));
    const c = new OffscreenCanvas(img.width, img.height);
    const ctx = c.getContext('2d');
    ctx.drawImage(img, 0, 0);
    return pts.map(([x, y]) =>
      Array.from(ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data.slice(0, 3)));
  }, [png.toString('base64'), points]);
}

// Writes the teaching clip with the ffmpeg CLI (H.264 in MP4, as users have):
// 3 s of a 640x360 gray frame with a red 60x60 square at (100, 100) and a
// blue 80x60 one at (400, 200).
export function makeSquaresClip(file) {
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
    'color=c=0x808080:s=640x360:r=30', '-vf',
    'drawbox=x=100:y=100:w=60:h=60:color=0xE02828:t=fill,' +
    'drawbox=x=400:y=200:w=80:h=60:color=0x2850E0:t=fill',
    '-t', '3', '-c:v', 'libx264', '-crf', '12', '-pix_fmt', 'yuv420p', file]);
}

// Writes a lossless clip (ffv1, yuv420p: exact colours) of a w x h gray
// frame at 30 fps for seconds, with the ffmpeg filters vf drawn on it; with
// more lavfi inputs (each "color=..." source), vf is a -filter_complex.
export function makeClip(file, vf, { w = 640, h = 360, seconds = 3, inputs = [] } = {}) {
  const more = inputs.flatMap((i) => ['-f', 'lavfi', '-i', i]);
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
    `color=c=0x808080:s=${w}x${h}:r=30`, ...more, inputs.length ? '-filter_complex' : '-vf', vf,
    '-t', String(seconds), '-c:v', 'ffv1', '-pix_fmt', 'yuv420p', file]);
}

// trackd on clip (looped) with objects file objs, serving webRoot on a free
// loopback port, stderr in OUT_DIR/trackd.log: {daemon, port}. Wait for it
// with waitListening (inside the try whose finally stops it).
export async function startOnClip(trackd, clip, objs, webRoot, outDir, extra = []) {
  const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
  const port = await freePort();
  const daemon = spawn(trackd, ['--input', clip, '--loop', '--objects', objs,
                                '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                                '--log-level', 'warn', ...extra],
                       { stdio: ['ignore', 'ignore', log] });
  return { daemon, port };
}

// The daemon's page on port in a browser context of its own (its own
// window, as another user's), page errors pushed to errors; resolves once
// ready() (evaluated in the page) holds. viewport: the window's CSS size
// (default 1280x1000; a phone's, e.g. { width: 390, height: 844 }).
export async function openPage(browser, port, errors, ready,
                               { viewport = { width: 1280, height: 1000 } } = {}) {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(ready, null, { timeout: 20000 })
    .catch(() => fail(`the page was not ready within 20 s: ${ready}`));
  return page;
}

// Clicks frame pixel [x, y] of the video (frame fw x fh); returns the CSS
// pixels per frame pixel.
export async function clickFrame(page, [x, y], fw, fh) {
  const r = await viewRect(page);
  await page.mouse.click(r.left + ((x + 0.5) * r.width) / fw, r.top + ((y + 0.5) * r.height) / fh);
  return r.width / fw;
}
