// Browser test of the Patterns card (issue 26: "the teach panel sets a
// pattern's colours"; web/patterns.js): the real daemon on a clip with the
// league's blue-team preset (examples/ssl-blue.json, copied: the test saves
// it). The card lists the pattern's slots (centre blue; dots pink, green)
// as swatches of those objects' colours; a slot's select re-assigns it
// (set_pattern), the daemon's answer redraws the card and Save writes the
// new colour into the file; a re-assignment that would make two ids alike
// is refused with the daemon's reason and the select goes back; clicking a
// slot's swatch then dragging over a square in the video teaches that
// object (its range becomes the sample's).
//
//   node patterns.test.mjs TRACKD WEB_ROOT OUT_DIR
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { dragFrame, fail, launchChromium, makeClip, openPage, startOnClip, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const FRAME_W = 640, FRAME_H = 360;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-patterns-'));
fs.mkdirSync(outDir, { recursive: true });
const objs = path.join(tmp, 'ssl-blue.json');
fs.copyFileSync(path.join(root, 'examples', 'ssl-blue.json'), objs);
// A pink square (a colour inside the preset's pink range, not at its
// centre) to teach pink from, and a green one.
const PINK_SQ = [100, 100, 159, 159];
const clip = path.join(tmp, 'squares.mkv');
makeClip(clip, 'drawbox=x=100:y=100:w=60:h=60:color=0xF040C8:t=fill,' +
               'drawbox=x=300:y=100:w=60:h=60:color=0x40E050:t=fill');

const hex = (rgbText) => {
  const m = /rgb\((\d+), (\d+), (\d+)\)/.exec(rgbText);
  return m ? `#${m.slice(1).map((v) => Number(v).toString(16).padStart(2, '0')).join('')}` : rgbText;
};

// The card as shown: per slot its key, the select's value and the swatch's
// colour (#rrggbb).
const shown = (page) => page.evaluate(() =>
  Array.from(document.querySelectorAll('#pat-list .pat-slot')).map((d) => ({
    slot: d.dataset.slot,
    value: d.querySelector('select').value,
    color: getComputedStyle(d.querySelector('.pat-swatch')).backgroundColor,
  })));

const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir, ['--backend', 'cpu']);
let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, () => window.trackdTest &&
    window.trackdTest.hello && document.querySelectorAll('#pat-list .pat-slot').length > 0);

  // The slots, with the objects' colours.
  const hello = await page.evaluate(() => window.trackdTest.hello);
  const colorOf = (name) => hello.objects.find((o) => o.name === name).color;
  const p = hello.patterns && hello.patterns[0];
  if (!p || p.name !== 'blue' || p.kind !== 'dots' || p.team !== 'blue' || p.center !== 'blue' ||
      JSON.stringify(p.dots) !== '["pink","green"]' || p.ids !== 16)
    fail(`hello.patterns: ${JSON.stringify(hello.patterns)}`);
  let slots = await shown(page);
  const want = [['center', 'blue'], ['dots:0', 'pink'], ['dots:1', 'green']];
  if (slots.length !== 3) fail(`slots: ${JSON.stringify(slots)}`);
  want.forEach(([slot, name], k) => {
    const s = slots[k];
    if (s.slot !== slot || s.value !== name || hex(s.color) !== colorOf(name))
      fail(`slot ${k}: ${JSON.stringify(s)}, want ${slot} ${name} in ${colorOf(name)}`);
  });

  // Pink's dots become green's: ids 0 and 1 alike. Refused, the select goes back.
  await page.selectOption('.pat-slot[data-slot="dots:0"] select', 'green');
  await page.waitForFunction(() => /would have the same colours/.test(
    document.getElementById('t-msg').textContent), null, { timeout: 10000 })
    .catch(async () => fail(`no refusal: ${await page.textContent('#t-msg')}`));
  slots = await shown(page);
  if (slots[1].value !== 'pink') fail(`refused, yet dots:0 shows ${slots[1].value}`);

  // Pink's dots become blue's (the centre's colour): taken, the card redraws.
  await page.selectOption('.pat-slot[data-slot="dots:0"] select', 'blue');
  await page.waitForFunction(() => {
    const p = window.trackdTest.patterns[0];
    return p && p.dots[0] === 'blue';
  }, null, { timeout: 10000 }).catch(() => fail('set_pattern not shown'));
  slots = await shown(page);
  if (slots[1].value !== 'blue' || hex(slots[1].color) !== colorOf('blue'))
    fail(`after re-assigning: ${JSON.stringify(slots[1])}`);
  // Saved, the file's ids have blue where they had pink.
  await page.click('#t-save');
  await page.waitForFunction(() => window.trackdTest.tune.saved, null, { timeout: 10000 })
    .catch(() => fail('no save ack'));
  const file = JSON.parse(fs.readFileSync(objs, 'utf8'));
  const ids0 = JSON.stringify(file.patterns[0].ids[0]);
  if (ids0 !== '["blue","blue","green","blue"]') fail(`saved ids[0]: ${ids0}`);
  // And back, so pink is a slot again.
  await page.selectOption('.pat-slot[data-slot="dots:0"] select', 'pink');
  await page.waitForFunction(() => window.trackdTest.patterns[0].dots[0] === 'pink', null,
                             { timeout: 10000 }).catch(() => fail('set_pattern back to pink'));

  // Teaching pink from its slot: a drag over the pink square.
  const before = await page.evaluate(() => window.trackdTest.objects.find((o) => o.name === 'pink'));
  await page.click('.pat-slot[data-slot="dots:0"] .pat-swatch');
  await page.waitForFunction(() => window.trackdTest.tune.teaching &&
    window.trackdTest.tune.editing === 'pink', null, { timeout: 10000 })
    .catch(() => fail('clicking the pink slot did not start teaching pink'));
  const [x0, y0, x1, y1] = PINK_SQ;
  await dragFrame(page, [x0 + 10, y0 + 10], [x1 - 10, y1 - 10], FRAME_W, FRAME_H);
  const after = await page.waitForFunction((b) => {
    const o = window.trackdTest.objects.find((d) => d.name === 'pink');
    return o && JSON.stringify([o.lo, o.hi]) !== JSON.stringify([b.lo, b.hi]) ? o : null;
  }, before, { timeout: 10000 }).catch(() => fail(`pink's range did not change: ${JSON.stringify(before)}`));
  const o = await after.jsonValue();
  const sample = await page.evaluate(() => window.trackdTest.tune.lastSample);
  if (!sample || o.space !== 'rgb') fail(`pink taught as ${JSON.stringify(o)}`);
  // The new box holds the sample's mean and is narrower than the preset's.
  const inside = sample.rgb.every((v, c) => o.lo[c] <= v && v <= o.hi[c]);
  const width = (x) => x.hi.reduce((s, h, c) => s + h - x.lo[c], 0);
  if (!inside || width(o) >= width(before))
    fail(`pink's box ${JSON.stringify([o.lo, o.hi])} for sample ${sample.rgb} (was ${JSON.stringify([before.lo, before.hi])})`);
  // The card's swatch follows the object's colour.
  slots = await shown(page);
  if (hex(slots[1].color) !== o.color) fail(`pink slot ${JSON.stringify(slots[1])}, pink ${o.color}`);
  await page.screenshot({ path: path.join(outDir, 'patterns.png'), fullPage: true });
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`browser patterns: slots shown, re-assigned, refused, saved and taught; passed (screenshots in ${outDir})`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
