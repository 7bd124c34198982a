// Browser test of teaching on the frame the user saw (issue 23, items 3 and
// 4): a green square crosses the video; the user pauses the video, waits
// (the live square moves far on), drags over the square in the still
// picture: the daemon samples that frame (the reply's seq is the held one,
// its colour green), the form offers a min mass from the sample's size (not
// 1), and the object added with it is found once the video resumes. A drag
// over the gray background warns (low saturation, most of the frame).
//
//   node teachframe.test.mjs TRACKD WEB_ROOT OUT_DIR
//
// The clip (ffmpeg CLI, lossless ffv1, 30 fps) is a 640x360 gray frame with
// a green 40x40 square at y = 60 whose x moves 8 pixels a frame (240 per
// second, wrapping at 600); after the pause the test waits until the live
// square is over 100 pixels from where the still picture shows it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dragFrame, fail, launchChromium, makeClip, openPage, startOnClip, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-teachframe-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'mover.mkv');
makeClip(clip, "[0][1]overlay=x='mod(n*8,600)':y=60:shortest=1",
         { seconds: 5, inputs: ['color=c=0x20C040:s=40x40:r=30'] });
// "mover" lets the page draw the square's box on each picture: where the
// user sees it.
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'mover', space: 'hsv', lo: [120, 120, 80], hi: [150, 255, 255] }] }));
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir);

// A new sample reply (after `before`).
async function nextSample(page, before, what) {
  await page.waitForFunction((b) => {
    const s = window.trackdTest.tune.lastSample;
    return s && JSON.stringify(s) !== JSON.stringify(b);
  }, before, { timeout: 10000 }).catch(async () => fail(`${what}: no sample reply (${await page.textContent('#t-msg')})`));
  return page.evaluate(() => window.trackdTest.tune.lastSample);
}

let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  // Ready: a picture with the square's box drawn on it.
  const page = await openPage(browser, port, errors, () => {
    const d = window.trackdTest && window.trackdTest.lastDrawn;
    return d && d.preview && d.matched && d.boxes.length === 1;
  });

  // 1. Pause: the daemon holds the frame on screen.
  // A frame that left the daemon's few kept ones before the request came
  // (a page far behind on a loaded machine) is refused and the page resumes,
  // saying "try again": as a user would, the test does, at most 3 times.
  let held = null;
  for (let attempt = 0; attempt < 3 && held === null; attempt++) {
    await page.click('#t-pause');
    const got = await page.waitForFunction(() => {
      const p = window.trackdTest.tune.paused;
      if (!p.paused) return { refused: true };
      return p.heldSeq !== null ? { seq: p.heldSeq } : null;
    }, null, { timeout: 5000 }).then((h) => h.jsonValue()).catch(() => fail('no answer to pause'));
    if (got.refused) console.log(`pause refused: ${await page.textContent('#t-msg')}`);
    else held = got.seq;
  }
  if (held === null) fail('pause not held in 3 tries');
  const still = await page.evaluate(() => ({
    drawn: window.trackdTest.lastDrawn, cw: document.getElementById('view').width }));
  if (still.drawn.seq !== held) fail(`held frame ${held}, the picture on screen is ${still.drawn.seq}`);
  const k = still.cw / FRAME_W;   // canvas pixels per frame pixel
  const box = still.drawn.boxes[0];
  const sq = [box.x0 / k, box.y0 / k, box.x1 / k, box.y1 / k];
  // The live square moves on (bounded wait: until it is 100 pixels away);
  // the picture stays.
  await page.waitForFunction((x) => {
    const f = window.trackdTest.lastFrame;
    const m = f && f.objects.find((o) => o.name === 'mover');
    return m && m.bbox && Math.abs(m.bbox[0] - x) > 100;
  }, sq[0], { timeout: 15000 }).catch(async () => fail(`the live square did not move on: ${JSON.stringify(await page.evaluate(() => window.trackdTest.lastFrame))}`));
  const after = await page.evaluate(() => ({
    seq: window.trackdTest.lastFrame.seq, drawn: window.trackdTest.lastDrawn.seq }));
  if (after.drawn !== held) fail(`paused: the picture changed to ${after.drawn} (held ${held})`);
  console.log(`paused on frame ${held}, square at ${sq.map((v) => v.toFixed(0))}; live now ${after.seq}`);

  // 2. Teach on the still picture: the held frame's green is sampled.
  await page.click('#t-teach');
  let before = await page.evaluate(() => window.trackdTest.tune.lastSample);
  await dragFrame(page, [sq[0] + 8, sq[1] + 8], [sq[2] - 8, sq[3] - 8], FRAME_W, FRAME_H);
  const s = await nextSample(page, before, 'green');
  console.log(`sample: seq ${s.seq}, rgb ${s.rgb}, hsv ${s.hsv}, rect ${s.rect}, share ${JSON.stringify(s.frame_share)}`);
  if (s.seq !== held) fail(`sampled frame ${s.seq}, not the held ${held}`);
  if (!(s.rgb[1] > 150 && s.rgb[0] < 90 && s.hsv[1] > 150))
    fail(`the sample is not the green square: rgb ${s.rgb} hsv ${s.hsv}`);
  if (!(await page.isHidden('#t-warn'))) fail(`a warning for a good sample: ${await page.textContent('#t-warn')}`);

  // 3. Min mass from the sample's size, not 1.
  const [x0, y0, x1, y1] = s.rect;
  const least = Math.round((x1 - x0 + 1) * (y1 - y0 + 1) * 0.1);
  const minMass = Number(await page.inputValue('#t-min-mass'));
  const minArea = Number(await page.inputValue('#t-min-area'));
  if (minMass !== least || minArea !== least || least <= 1)
    fail(`min mass ${minMass}, min area ${minArea}: expected ${least} (a tenth of the sample)`);
  await page.fill('#t-name', 'greenie');
  await page.click('#t-add');
  await page.waitForFunction((m) => window.trackdTest.objects.some(
    (o) => o.name === 'greenie' && o.min_mass === m), least, { timeout: 5000 })
    .catch(() => fail(`greenie not added with min_mass ${least}`));
  console.log(`added greenie with min_mass ${least}`);

  // 4. Resume: the daemon lets the frame go, the video is live, greenie found.
  await page.click('#t-pause');
  await page.waitForFunction(() => !window.trackdTest.tune.paused.paused, null, { timeout: 5000 });
  await page.waitForFunction(() => {
    const f = window.trackdTest.lastFrame;
    const g = f && f.objects.find((o) => o.name === 'greenie');
    return g && g.found && window.trackdTest.lastDrawn.seq > f.seq - 30;
  }, null, { timeout: 10000 }).catch(() => fail('greenie not found live after resuming'));

  // 5. A drag over the gray background: both warnings.
  await page.click('#t-done');
  await page.click('#t-teach');
  before = await page.evaluate(() => window.trackdTest.tune.lastSample);
  await dragFrame(page, [100, 200], [600, 340], FRAME_W, FRAME_H);
  const g = await nextSample(page, before, 'background');
  const warn = await page.textContent('#t-warn');
  if (await page.isHidden('#t-warn') || !/low saturation/.test(warn) || !/% of the frame/.test(warn))
    fail(`background sample (hsv ${g.hsv}, share ${JSON.stringify(g.frame_share)}): warning "${warn}"`);
  console.log(`background: "${warn}"`);
  await page.screenshot({ path: path.join(outDir, 'background-warning.png') });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('teaching on the frame seen: ok');
} finally {
  if (browser) await browser.close();
  await stop(daemon);
}
