// Browser test of the page's "Save rewind" button (issue 29): the daemon
// runs a clip with --rewind 1s; the button's save_rewind ack names a new
// folder in --rewind-dir, the page says so, and the folder becomes a bundle
// that trackd --replay --verify finds identical. Pressed again at once, the
// refusal (--rewind-gap) shows as an error on the same line.
//
//   node rewind.test.mjs TRACKD WEB_ROOT OUT_DIR
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fail, launchChromium, makeClip, openPage, startOnClip, stop,
         waitListening } from './harness.mjs';

const [trackd, webRoot, outDir] = process.argv.slice(2);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'trackd-rewind-'));
fs.mkdirSync(outDir, { recursive: true });
const clip = path.join(tmp, 'square.mkv');
makeClip(clip, 'drawbox=x=100:y=100:w=40:h=40:color=0xE02828:t=fill');
const objs = path.join(tmp, 'objects.json');
fs.writeFileSync(objs, JSON.stringify({ objects: [
  { name: 'red', space: 'hsv', lo: [345, 120, 80], hi: [15, 255, 255] }] }));
const rdir = path.join(tmp, 'saves');
fs.mkdirSync(rdir);
const { daemon, port } = await startOnClip(trackd, clip, objs, webRoot, outDir,
                                           ['--rewind', '1s', '--rewind-dir', rdir,
                                            '--rewind-gap', '600']);
let browser;
try {
  await waitListening(port, daemon);
  browser = await launchChromium();
  const errors = [];
  const page = await openPage(browser, port, errors, () => window.trackdTest &&
    window.trackdTest.previewsReceived > 1 && window.trackdTest.lastFrame);
  // A second of frames first, so the buffer holds some with results.
  await page.waitForTimeout(1500);
  await page.click('#t-rewind');
  await page.waitForFunction(() => /saving the last seconds to /.test(
    document.getElementById('t-msg').textContent), null, { timeout: 10000 })
    .catch(() => fail('the page did not show the save_rewind ack'));
  const said = await page.textContent('#t-msg');
  const dir = said.replace(/^.*saving the last seconds to /, '').trim();
  if (path.dirname(dir) !== rdir) fail(`the ack names ${dir}, not a folder in ${rdir}`);
  // The bundle is complete once its manifest has "end" (written last).
  const manifest = path.join(dir, 'manifest.json');
  for (let i = 0; i < 100; i++) {
    if (fs.existsSync(manifest) && JSON.parse(fs.readFileSync(manifest, 'utf8')).end) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const m = JSON.parse(fs.readFileSync(manifest, 'utf8'));
  if (!m.end || !(m.end.frames > 0) || m.rewind.trigger !== 'request')
    fail(`the saved bundle is not complete: ${JSON.stringify(m.end)} ${JSON.stringify(m.rewind)}`);
  // Again at once: the gap refuses it, on the same line, as an error.
  await page.click('#t-rewind');
  await page.waitForFunction(() => {
    const l = document.getElementById('t-msg');
    return l.classList.contains('bad') && /--rewind-gap/.test(l.textContent);
  }, null, { timeout: 10000 }).catch(() => fail('a save within --rewind-gap was not shown refused'));
  const r = spawnSync(trackd, ['--replay', dir, '--verify', '--fast', '--no-server'],
                      { encoding: 'utf8' });
  if (r.status !== 0 || !/ 0 differ: identical/.test(r.stdout))
    fail(`the saved bundle does not replay identically (${r.status}): ${r.stdout} ${r.stderr}`);
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log(`save rewind from the page: ${m.end.frames} frames in ${dir}, replayed identically: ok`);
} finally {
  if (browser) await browser.close();
  await stop(daemon);
  fs.rmSync(tmp, { recursive: true, force: true });
}
