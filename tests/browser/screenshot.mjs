// Regenerates the README's pictures of the web page from the real daemon and
// headless Debian chromium (playwright-core), at 1280x800:
//
//   web-ui-demo.png   the demo scene: every ball boxed, the objects table
//   web-ui-teach.png  teaching "redsq" on the squares clip, its mask shown
//
//   cd tests/browser && npm ci
//   node screenshot.mjs ../../build/daemon/trackd ../../web ../../docs/img
//
// Not a test (ctest does not run it), but it fails loudly when the page does
// not show what the pictures are meant to show.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dragFrame, fail, freePort, launchChromium, makeSquaresClip, stop, waitListening }
  from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
if (!trackd || !webRoot || !outDir) {
  console.error('usage: node screenshot.mjs TRACKD WEB_ROOT OUT_DIR');
  process.exit(64);
}
const VIEWPORT = { width: 1280, height: 800 };

async function withDaemon(args, fn) {
  const port = await freePort();
  const daemon = spawn(trackd, ['--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                                '--backend', 'cpu', '--log-level', 'warn', ...args],
                       { stdio: ['ignore', 'ignore', 'inherit'] });
  let browser;
  try {
    await waitListening(port, daemon);
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: VIEWPORT });
    await page.goto(`http://127.0.0.1:${port}/`);
    await page.waitForFunction(() => window.trackdTest.previewsReceived > 3 && window.trackdTest.lastStats,
                               null, { timeout: 20000 })
      .catch(() => fail('no previews and stats within 20 s'));
    await fn(page);
  } finally {
    if (browser) await browser.close();
    await stop(daemon);
  }
}

fs.mkdirSync(outDir, { recursive: true });

// 1. The demo scene, once the rates have a couple of seconds behind them.
await withDaemon([], async (page) => {
  await page.waitForTimeout(2500);
  const d = await page.evaluate(() => ({
    boxes: window.trackdTest.lastDrawn && window.trackdTest.lastDrawn.boxes.length,
    objects: window.trackdTest.objects.length,
  }));
  if (!d.objects || d.boxes !== d.objects) fail(`demo: ${d.boxes} boxes for ${d.objects} objects`);
  const out = path.join(outDir, 'web-ui-demo.png');
  await page.screenshot({ path: out });
  console.log(`wrote ${out} (${d.boxes} objects boxed)`);
});

// 2. Teaching: drag over the red square, add it as "redsq", show its mask.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-shot-'));
try {
  const clip = path.join(tmp, 'clip.mp4');
  makeSquaresClip(clip);
  await withDaemon(['--input', clip, '--loop', '--save-objects', path.join(tmp, 'o.json')],
                   async (page) => {
    await page.click('#t-teach');
    await dragFrame(page, [108, 108], [151, 151], 640, 360);
    await page.waitForFunction(() => window.trackdTest.tune.lastSample, null, { timeout: 5000 })
      .catch(() => fail('no sample reply'));
    await page.fill('#t-name', 'redsq');
    await page.click('#t-add');
    await page.waitForFunction(() => window.trackdTest.tune.editing === 'redsq', null, { timeout: 5000 })
      .catch(() => fail('redsq not added'));
    await page.check('#t-mask');
    await page.waitForFunction(() => {
      const a = window.trackdTest.tune.lastAck;
      return a && a.request === 'preview' && a.mask === 'redsq';
    }, null, { timeout: 5000 }).catch(() => fail('mask not acknowledged'));
    await page.waitForTimeout(1500);   // masked previews on screen, rates settled
    const out = path.join(outDir, 'web-ui-teach.png');
    await page.screenshot({ path: out });
    console.log(`wrote ${out}`);
  });
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
