// Browser test of painted colour classes (issue 27): on the built-in demo
// scene a user presses "Paint class", names the class "ball" and, in three
// paused frames, drags over the inside of the red ball: the page makes the
// class object (add_object with "class": "ball.lut") and sends each stroke
// (paint_class, the held frame's seq). Live again, "ball" is found where
// the demo's own "red" box finds the red ball, frame after frame, and
// nowhere else (its box inside red's, its mass no larger). A shift-drag
// over the ball takes colours out (fewer cells), Save writes ball.lut
// beside the objects file (the TRKCLASS format) and the file names it.
// Real daemon, headless chromium via playwright-core.
//
//   node paint.test.mjs TRACKD WEB_ROOT OUT_DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, freePort, launchChromium, openPage, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-paint-'));
fs.mkdirSync(outDir, { recursive: true });
const saveTo = path.join(tmp, 'objects.json');
const port = await freePort();
const log = fs.openSync(path.join(outDir, 'trackd.log'), 'w');
const daemon = spawn(trackd, ['--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
                              '--backend', 'cpu', '--save-objects', saveTo, '--log-level', 'warn'],
                     { stdio: ['ignore', 'ignore', log] });

// Pauses the video on a frame the daemon holds; its picture's red box in
// client pixels. A frame the daemon no longer keeps is refused (a loaded
// machine), and one where another ball crosses the red one would paint its
// colours too (the class's own box aside): tried again, at most 10 times.
async function pauseOnRed(page) {
  const apart = (a, b) => a.x1 + 4 < b.x0 || b.x1 + 4 < a.x0 || a.y1 + 4 < b.y0 || b.y1 + 4 < a.y0;
  for (let attempt = 0; attempt < 10; attempt++) {
    await page.click('#t-pause');
    const got = await page.waitForFunction(() => {
      const p = window.trackdTest.tune.paused;
      if (!p.paused) return { refused: true };
      return p.heldSeq !== null ? { seq: p.heldSeq } : null;
    }, null, { timeout: 5000 }).then((h) => h.jsonValue()).catch(() => fail('no answer to pause'));
    if (got.refused) continue;
    const still = await page.evaluate(() => {
      const c = document.getElementById('view');
      const r = c.getBoundingClientRect();
      return { drawn: window.trackdTest.lastDrawn, cw: c.width, ch: c.height,
               ball: window.trackdTest.objects.findIndex((o) => o.name === 'ball'),
               left: r.left, top: r.top, width: r.width, height: r.height };
    });
    const box = still.drawn.boxes.find((b) => b.id === 0);
    if (still.drawn.seq === got.seq && box &&
        still.drawn.boxes.every((b) => b.id === 0 || b.id === still.ball || apart(b, box))) {
      const sx = still.width / still.cw, sy = still.height / still.ch;
      return { seq: got.seq, x0: still.left + box.x0 * sx, y0: still.top + box.y0 * sy,
               x1: still.left + box.x1 * sx, y1: still.top + box.y1 * sy };
    }
    await resume(page); // no lone red ball on this picture: try another
    await page.waitForTimeout(200);
  }
  fail('could not pause on a frame with the red ball alone in 10 tries');
}

async function resume(page) {
  await page.click('#t-pause');
  await page.waitForFunction(() => !window.trackdTest.tune.paused.paused, null, { timeout: 5000 });
}

// One stroke over the middle half of box; the ack that follows.
async function stroke(page, box, remove) {
  const before = await page.evaluate(() => window.trackdTest.paint.lastAck);
  const w = box.x1 - box.x0, h = box.y1 - box.y0;
  if (remove) await page.keyboard.down('Shift');
  await page.mouse.move(box.x0 + w / 4, box.y0 + h / 4);
  await page.mouse.down();
  await page.mouse.move(box.x0 + w / 2, box.y0 + h / 2, { steps: 3 });
  await page.mouse.move(box.x1 - w / 4, box.y1 - h / 4, { steps: 3 });
  await page.mouse.up();
  if (remove) await page.keyboard.up('Shift');
  await page.waitForFunction((b) => {
    const p = window.trackdTest.paint;
    return p.lastError || (p.lastAck && JSON.stringify(p.lastAck) !== JSON.stringify(b));
  }, before, { timeout: 10000 }).catch(async () => fail(`no paint_class reply: ${await page.textContent('#t-msg')}`));
  const p = await page.evaluate(() => window.trackdTest.paint);
  if (p.lastError) fail(`paint_class refused: ${JSON.stringify(p.lastError)}`);
  return p.lastAck.cells;
}

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, () => {
    const f = window.trackdTest && window.trackdTest.lastFrame;
    const d = window.trackdTest && window.trackdTest.lastDrawn;
    return f && f.objects[0].name === 'red' && f.objects[0].found && d && d.preview;
  });

  // 1. Paint "ball" over the red ball in three held frames.
  await page.click('#t-paint');
  await page.fill('#t-paint-name', 'ball');
  let cells = 0;
  for (let i = 0; i < 3; i++) {
    const box = await pauseOnRed(page);
    cells = await stroke(page, box, false);
    console.log(`  stroke ${i + 1} on frame ${box.seq}: ${cells} cells`);
    await resume(page);
    await page.waitForTimeout(300); // the ball moves on: another shading
  }
  if (!(cells > 0)) fail(`no cells painted (${cells})`);
  const def = await page.evaluate(() => window.trackdTest.objects.find((o) => o.name === 'ball'));
  if (!def || def.space !== 'class') fail(`no class object "ball": ${JSON.stringify(def)}`);

  // 2. Live: "ball" is the red ball, frame after frame (20 frames).
  let seen = 0, lastSeq = -1;
  const deadline = Date.now() + 20000;
  while (seen < 20 && Date.now() < deadline) {
    const f = await page.evaluate(() => window.trackdTest.lastFrame);
    if (f.seq !== lastSeq) {
      lastSeq = f.seq;
      const red = f.objects.find((o) => o.name === 'red');
      const ball = f.objects.find((o) => o.name === 'ball');
      if (ball && red && red.found) {
        const inside = ball.found && ball.bbox[0] >= red.bbox[0] - 2 && ball.bbox[1] >= red.bbox[1] - 2 &&
          ball.bbox[2] <= red.bbox[2] + 2 && ball.bbox[3] <= red.bbox[3] + 2;
        const near = ball.found && Math.hypot(ball.cx - red.cx, ball.cy - red.cy) < 3;
        if (!inside || !near || ball.mass > red.mass)
          fail(`frame ${f.seq}: ball ${JSON.stringify(ball)} is not the red ball ${JSON.stringify(red)}`);
        seen++;
      }
    }
    await page.waitForTimeout(50);
  }
  if (seen < 20) fail(`only ${seen} frames with both red and ball found`);
  console.log(`ball found on the red ball in ${seen} frames`);
  await page.screenshot({ path: path.join(outDir, 'painted.png') });

  // 3. A shift-drag takes the ball's colours out: fewer cells.
  const box = await pauseOnRed(page);
  const after = await stroke(page, box, true);
  await resume(page);
  if (!(after < cells)) fail(`shift-drag removed nothing: ${cells} -> ${after} cells`);
  console.log(`shift-drag: ${cells} -> ${after} cells`);

  // 4. Save: ball.lut beside the objects file, which names it.
  await page.click('#t-save');
  await page.waitForFunction(() => window.trackdTest.tune.saved, null, { timeout: 10000 })
    .catch(() => fail('no save ack'));
  const lut = fs.readFileSync(path.join(tmp, 'ball.lut'));
  const set = JSON.parse(fs.readFileSync(saveTo, 'utf8'));
  const saved = set.objects.find((o) => o.name === 'ball');
  if (lut.length !== 32784 || lut.subarray(0, 8).toString() !== 'TRKCLASS' || lut.readUInt32LE(12) !== after)
    fail(`ball.lut: ${lut.length} bytes, header ${lut.subarray(0, 16).toString('hex')}`);
  if (!saved || saved.class !== 'ball.lut') fail(`the file's ball: ${JSON.stringify(saved)}`);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('painted class: ok');
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
