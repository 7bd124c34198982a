// Browser test of the page's bundle view (issue 29): a bundle recorded from
// the demo scene here is played by `trackd --replay DIR --paused`; the page
// shows the Replay card at frame 0; dragging the timeline with the mouse
// lands on the frame the slider says, whose preview and result are on
// screen together (and the result is the recorded one: no edits); a typed
// seek to frame 25 shows frame 25; the right arrow key and the step buttons
// move one frame; the "recorded" toggle draws the recorded boxes over the
// ones computed now, in the same places; a re-run of frames 5..20 counts 0
// differing frames. A live daemon with --rewind: its page shows no Replay
// card, and its Bundles button lists a rewind save with the command that
// opens it.
//
//   node replay.test.mjs TRACKD WEB_ROOT OUT_DIR
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, near, openPage, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-replay-'));
fs.mkdirSync(outDir, { recursive: true });
const bundle = path.join(tmp, 'demo-run');
const N = 60;
const rec = spawnSync(trackd, ['--size', '320x240', '--fps', '30', '--frames', String(N), '--record',
                               bundle, '--fast', '--no-server'], { encoding: 'utf8' });
if (rec.status !== 0) fail(`recording the demo failed (${rec.status}): ${rec.stderr}`);

const logPath = path.join(outDir, 'trackd.log');
const log = fs.openSync(logPath, 'w');
const port = await freePort();
const daemon = spawn(trackd, ['--replay', bundle, '--paused', '--listen', `127.0.0.1:${port}`,
                              '--web-root', webRoot, '--log-level', 'info'],
                     { stdio: ['ignore', 'ignore', log] });
let browser;

// Waits until the page shows bundle frame k: the Replay card says so, and
// the picture on the canvas is that frame's preview with its own result.
async function showsFrame(page, k, what) {
  await page.waitForFunction((k) => {
    const t = window.trackdTest;
    const r = t.replay.last;
    const d = t.lastDrawn;
    return r && r.frame === k && r.paused && d && d.seq === r.seq && d.preview && d.matched;
  }, k, { timeout: 15000 }).catch(async () => {
    const s = await page.evaluate(() => JSON.stringify({ last: window.trackdTest.replay.last &&
      { ...window.trackdTest.replay.last, recorded: undefined }, drawn: window.trackdTest.lastDrawn }));
    fail(`${what}: the page does not show frame ${k}: ${s}`);
  });
  // No edits: the result computed now is the recorded one of that frame.
  const same = await page.evaluate(() => {
    const t = window.trackdTest;
    const now = t.lastFrame;
    const then = t.replay.last.recorded;
    if (!now || !then || now.seq !== t.replay.last.seq) return `result ${now && now.seq} not shown`;
    for (let i = 0; i < then.objects.length; i++) {
      const a = then.objects[i];
      const b = now.objects[i];
      if (a.found !== b.found || (a.found && (a.cx !== b.cx || a.cy !== b.cy))) return `${a.name} differs`;
    }
    return null;
  });
  if (same) fail(`${what}: frame ${k}: ${same}`);
}

// A live daemon's page lists its rewind saves with the command that opens
// each (the Bundles button, list_bundles).
async function listsBundles() {
  const rdir = path.join(tmp, 'saves');
  fs.mkdirSync(rdir);
  const livePort = await freePort();
  const liveLog = fs.openSync(path.join(outDir, 'live.log'), 'w');
  const live = spawn(trackd, ['--size', '320x240', '--rewind', '1s', '--rewind-dir', rdir,
                              '--listen', `127.0.0.1:${livePort}`, '--web-root', webRoot,
                              '--log-level', 'warn'], { stdio: ['ignore', 'ignore', liveLog] });
  try {
    await waitListening(livePort, live, path.join(outDir, 'live.log'));
    const errors = [];
    const page = await openPage(browser, livePort, errors, () => window.trackdTest &&
      window.trackdTest.previewsReceived > 1);
    if (await page.isVisible('#replay')) fail('a live daemon\'s page shows the Replay card');
    await page.waitForTimeout(1200);
    await page.click('#t-rewind');
    await page.waitForFunction(() => /saving the last seconds to /.test(
      document.getElementById('t-msg').textContent), null, { timeout: 10000 })
      .catch(() => fail('the rewind save was not acked'));
    const dir = (await page.textContent('#t-msg')).replace(/^.*saving the last seconds to /, '').trim();
    for (let i = 0; i < 100 && !fs.existsSync(path.join(dir, 'manifest.json')); i++)
      await new Promise((r) => setTimeout(r, 100));
    await page.click('#t-bundles');
    await page.waitForFunction((d) => (window.trackdTest.bundles || []).some((b) => b.dir === d),
                               dir, { timeout: 10000 })
      .catch(async () => fail(`the Bundles list lacks ${dir}: ${await page.textContent('#t-bundle-list')}`));
    const text = await page.textContent('#t-bundle-list');
    if (!text.includes(`trackd --replay ${dir} --paused --listen 127.0.0.1:${livePort + 1}`))
      fail(`the list does not give the command to open it: ${text}`);
    if (errors.length) fail(`page errors (live): ${errors.join('; ')}`);
  } finally {
    await stop(live);
  }
}

try {
  await waitListening(port, daemon, logPath);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, () => window.trackdTest &&
    window.trackdTest.replay.shown && window.trackdTest.replay.last);
  // The page asks for its picture again (a seek of the frame shown: its
  // messages say not paused until that frame comes back), so the first
  // state is read once that has settled.
  const first = await page.waitForFunction(() => {
    const l = window.trackdTest.replay.last;
    return l && l.paused ? l : null;
  }, null, { timeout: 10000 }).then((h) => h.jsonValue())
    .catch(() => page.evaluate(() => window.trackdTest.replay.last));
  if (first.bundle !== 'demo-run' || first.frames !== N || !first.paused)
    fail(`the card's first state: ${first.bundle} ${first.frames} paused=${first.paused}`);
  if (!(await page.isVisible('#replay'))) fail('the Replay card is not visible');
  await showsFrame(page, 0, '--paused start');

  // A real drag of the timeline: it lands on the frame the slider shows.
  const box = await page.locator('#r-time').boundingBox();
  const y = box.y + box.height / 2;
  await page.mouse.move(box.x + 4, y);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.3, y, { steps: 5 });
  await page.mouse.move(box.x + box.width * 0.6, y, { steps: 5 });
  await page.mouse.up();
  const dragged = Number(await page.inputValue('#r-time'));
  if (!(dragged > N * 0.4 && dragged < N * 0.8)) fail(`the dragged slider says ${dragged}`);
  await showsFrame(page, dragged, 'after dragging the timeline');

  // Scrubbing to frame 25 exactly (what a drag fires: input events).
  await page.$eval('#r-time', (el) => {
    el.value = '25';
    el.dispatchEvent(new Event('input', { bubbles: true }));
  });
  await showsFrame(page, 25, 'scrubbed to 25');
  const pos = await page.textContent('#r-pos');
  if (!/frame 25 \/ 59/.test(pos)) fail(`the position line says "${pos}"`);

  // Step: the right arrow key (on the page, not in a field), then buttons.
  await page.locator('#r-pos').click();
  await page.keyboard.press('ArrowRight');
  await showsFrame(page, 26, 'right arrow');
  await page.click('#r-fwd');
  await showsFrame(page, 27, 'step button');
  await page.click('#r-back');
  await showsFrame(page, 26, 'step back button');

  // The recorded overlay: dashed boxes where the computed ones are.
  await page.check('#r-rec');
  await page.waitForFunction(() => {
    const t = window.trackdTest;
    const d = t.replay.recordedDrawn;
    return d && d.seq === t.lastDrawn.seq && d.recorded && d.boxes.length > 0;
  }, null, { timeout: 10000 }).catch(() => fail('the recorded overlay was not drawn'));
  const cmp = await page.evaluate(() => ({ rec: window.trackdTest.replay.recordedDrawn.boxes,
                                           now: window.trackdTest.lastDrawn.boxes }));
  for (const b of cmp.rec) {
    const n = cmp.now.find((x) => x.id === b.id);
    if (!n || !near(n.x0, b.x0, 1) || !near(n.y0, b.y0, 1) || !near(n.x1, b.x1, 1) || !near(n.y1, b.y1, 1))
      fail(`recorded box of object ${b.id} is not where the computed one is: ${JSON.stringify(b)} vs ${JSON.stringify(n)}`);
  }

  // Re-run frames 5..20 unchanged: nothing differs.
  await page.fill('#r-from', '5');
  await page.fill('#r-to', '20');
  await page.click('#r-run');
  await page.waitForFunction(() => /frames 5.20: 16 compared, 0 differ/.test(
    document.getElementById('r-result').textContent), null, { timeout: 20000 })
    .catch(async () => fail(`the re-run's account: "${await page.textContent('#r-result')}"`));
  await showsFrame(page, 20, 'the end of the re-run');
  await page.screenshot({ path: path.join(outDir, 'replay.png') });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  await listsBundles();
  console.log(`bundle view: card, drag to ${dragged}, scrub to 25, keys and buttons step, recorded overlay, re-run 0 differ, bundles listed: ok`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
