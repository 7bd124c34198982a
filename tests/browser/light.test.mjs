// Browser test of the Light card (issue 27): the real daemon plays a
// light_scene.py clip (light 100 % -> 45 %, white balance drifting, a grey
// card; looped at its pace) with "illumination" (the card) and "adapt" on
// every object. The page shows one row per object with three drift bars
// (their numbers the frames' range.drift), the card stays hidden without
// the light keys' "range" in frames; Reset all and an object's Reset are
// acknowledged (the message line says so); Keep & save, once the light has
// fallen, writes the file: red's V lower bound below the taught one and
// the reference's means in "illumination".
//
//   node light.test.mjs TRACKD WEB_ROOT OUT_DIR
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail, launchChromium, openPage, startOnClip, stop, waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const here = path.dirname(fileURLToPath(import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-light-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'light.mkv');
execFileSync('/usr/bin/python3', [path.join(here, '..', 'integration', 'light_scene.py'), clip,
  '--frames', '150']);
const taught = JSON.parse(fs.readFileSync(`${clip}.objects.json`, 'utf8'));
const truth = JSON.parse(fs.readFileSync(`${clip}.truth.json`, 'utf8'));
const objs = path.join(outDir, 'objects.json');
const on = JSON.parse(JSON.stringify(taught));
on.illumination = { reference: 'patch', rect: truth.card };
for (const d of on.objects) d.adapt = {};
fs.writeFileSync(objs, JSON.stringify(on, null, 1));
const taughtRedV = taught.objects.find((d) => d.name === 'red').lo[2];

const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir,
  ['--backend', 'cpu']);
let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors,
    () => !document.getElementById('light').hidden &&
          document.querySelectorAll('#light-rows tr').length === 5);
  const rows = await page.evaluate(() => [...document.querySelectorAll('#light-rows tr')].map(
    (tr) => ({ name: tr.dataset.name, bars: tr.querySelectorAll('.drift-fill').length,
               drift: tr.dataset.drift, nums: [...tr.querySelectorAll('.drift .num')]
                 .map((n) => n.textContent).join(',') })));
  for (const r of rows) {
    if (r.bars !== 3) fail(`${r.name}: ${r.bars} drift bars`);
    if (r.drift !== r.nums) fail(`${r.name}: bar numbers ${r.nums} != frame drift ${r.drift}`);
  }
  const names = rows.map((r) => r.name).sort().join(',');
  if (names !== 'ball,blue,magenta,red,yellow') fail(`light rows: ${names}`);
  console.log(`light rows: ${names}`);

  const line = () => page.evaluate(() => document.getElementById('t-msg').textContent);
  await page.click('#light-reset');
  await page.waitForFunction(() => /reset/.test(document.getElementById('t-msg').textContent),
    null, { timeout: 5000 }).catch(async () => fail(`Reset all: line "${await line()}"`));
  await page.click('#light-rows tr[data-name="red"] .light-reset-one');
  await page.waitForFunction(() => /^red: range reset/.test(document.getElementById('t-msg')
    .textContent), null, { timeout: 5000 }).catch(async () => fail(`Reset red: "${await line()}"`));
  console.log('resets acknowledged');

  // Keep once red's box has followed the light down (the clip loops: 5 s).
  await page.waitForFunction((v) => {
    const tr = document.querySelector('#light-rows tr[data-name="red"]');
    const m = tr && /box \[(\d+),(\d+),(\d+)\]/.exec(tr.title);
    return m && Number(m[3]) < v - 20;
  }, taughtRedV, { timeout: 20000 }).catch(() => fail('red\'s box never went down'));
  await page.click('#light-keep');
  await page.waitForFunction(() => /saved to/.test(document.getElementById('t-msg').textContent),
    null, { timeout: 5000 }).catch(async () => fail(`Keep & save: "${await line()}"`));
  const kept = JSON.parse(fs.readFileSync(objs, 'utf8'));
  const red = kept.objects.find((d) => d.name === 'red');
  if (!(red.lo[2] < taughtRedV)) fail(`kept red V lower bound ${red.lo[2]}, taught ${taughtRedV}`);
  if (!kept.illumination || !Array.isArray(kept.illumination.means))
    fail(`kept file without means: ${JSON.stringify(kept.illumination)}`);
  console.log(`kept: red lo ${JSON.stringify(red.lo)} (taught V ${taughtRedV}), means ` +
              `${JSON.stringify(kept.illumination.means)}`);
  await page.screenshot({ path: path.join(outDir, 'light.png') });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser light: passed (screenshot in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
