// The top-down page of trackd-fuse (--listen) in headless Chromium, with
// everything real: a mosquitto started here, two trackd (the demo scene,
// 320x240, --name a and b) each with its own calibration publishing to it,
// and trackd-fuse subscribed, serving fuse/web.
//  - both cameras' footprints are drawn, each filled in its own colour where
//    only it sees (pixels read back from a screenshot), both listed "ok";
//  - kill -9 of b: its last will makes the page show it offline (the table
//    and a faint dashed footprint) while a's world messages keep coming.
// Usage: run.sh fuse.test.mjs TRACKD TRACKD_FUSE FUSE_WEB_DIR OUT_DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  fail, freePort, launchChromium, openPage, screenPixels, stop, waitListening,
} from './harness.mjs';

const [trackd, fuse, webRoot, outDir] = process.argv.slice(2);
fs.mkdirSync(outDir, { recursive: true });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fuse-page-'));
const CAL = {
  a: [[0, 0, 0, 0], [320, 0, 1000, 0], [320, 240, 1000, 750], [0, 240, 0, 750]],
  b: [[0, 0, 600, 0], [320, 0, 1600, 0], [320, 240, 1600, 750], [0, 240, 600, 750]],
};
const BG = [0x1b, 0x2a, 0x1b];
const procs = [];
const errors = [];

function hex(c) { return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)); }

// The fill of a footprint where only it lies: its colour at 0.22 over the
// field's background (index.html, app.js).
function fill(color) { return hex(color).map((v, i) => Math.round(0.22 * v + 0.78 * BG[i])); }

async function main() {
  const mport = await freePort();
  const conf = path.join(tmp, 'mosquitto.conf');
  fs.writeFileSync(conf, `listener ${mport} 127.0.0.1\nallow_anonymous true\npersistence false\n`
    + `user ${os.userInfo().username}\nset_tcp_nodelay true\n`);
  const broker = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: 'ignore' });
  procs.push(broker);
  await waitListening(mport, broker);
  const url = `mqtt://127.0.0.1:${mport}/pg`;
  const port = await freePort();
  const flog = fs.openSync(path.join(outDir, 'fuse.log'), 'w');
  const fz = spawn(fuse, ['--mqtt', url, '--listen', `127.0.0.1:${port}`, '--web-root', webRoot,
    '--gate', '60'], { stdio: ['ignore', 'ignore', flog] });
  procs.push(fz);
  await waitListening(port, fz);
  const cams = {};
  for (const cam of ['a', 'b']) {
    const objs = path.join(tmp, `${cam}.json`);
    fs.writeFileSync(objs, JSON.stringify({
      objects: [{ name: 'red', space: 'hsv', lo: [350, 120, 100], hi: [10, 255, 255] }],
      calibration: { unit: 'mm', points: CAL[cam] },
    }));
    const log = fs.openSync(path.join(outDir, `trackd-${cam}.log`), 'w');
    cams[cam] = spawn(trackd, ['--name', cam, '--objects', objs, '--mqtt', url, '--no-server',
      '--size', '320x240', '--fps', '15', '--backend', 'cpu', '--no-preview'],
    { stdio: ['ignore', 'ignore', log] });
    procs.push(cams[cam]);
  }
  const browser = await launchChromium();
  try {
    const page = await openPage(browser, port, errors, () => window.fuseView
      && window.fuseView.footprints.filter((f) => f.online).length === 2);
    const view = await page.evaluate(() => window.fuseView);
    const rows = await page.$$eval('#cams tr', (trs) => trs.map((tr) => [tr.dataset.camera,
      tr.children[1].textContent]));
    if (JSON.stringify(rows.map((r) => r[0]).sort()) !== '["a","b"]'
        || rows.some((r) => r[1] === 'offline')) fail(`the table lists a and b online: ${rows}`);
    // Each footprint's own part: a's left quarter, b's right quarter (the
    // overlap is 600..1000 of 0..1600): its fill colour there.
    for (const f of view.footprints) {
      const xs = f.points.map((p) => p[0]), ys = f.points.map((p) => p[1]);
      const x0 = Math.min(...xs), x1 = Math.max(...xs), ym = (Math.min(...ys) + Math.max(...ys)) / 2;
      const x = f.camera === 'a' ? x0 + 0.2 * (x1 - x0) : x1 - 0.2 * (x1 - x0);
      const pts = [-12, 0, 12].map((d) => [x + d, ym + 30]);
      const got = await screenPixels(page, pts);
      const want = fill(f.color);
      const ok = got.filter((px) => px.every((v, i) => Math.abs(v - want[i]) <= 6)).length;
      if (ok < 2) fail(`footprint ${f.camera} filled ${want}: got ${JSON.stringify(got)}`);
      console.log(`ok: footprint ${f.camera} drawn in ${f.color} (${ok}/3 pixels)`);
    }
    // Both cameras' clocks synced by the fuser (a few requests after they
    // appear): the table says so with the error bound.
    await page.waitForFunction(() => [...document.querySelectorAll('#cams tr')]
      .filter((tr) => /^sync \u00b1\d+\.\d\d ms$/.test(tr.children[5].textContent)).length === 2,
    null, { timeout: 20000 })
      .then(() => console.log('ok: both cameras\' clocks shown synced'))
      .catch(() => fail('the page did not show both cameras\' clocks synced within 20 s'));
    await page.screenshot({ path: path.join(outDir, 'fuse-both.png') });

    // harness stop() waits for an 'exit' that a process killed here already
    // had: wait for it now and leave it out of the clean-up.
    const gone = new Promise((r) => cams.b.once('exit', r));
    cams.b.kill('SIGKILL');
    await gone;
    procs.splice(procs.indexOf(cams.b), 1);
    await page.waitForFunction(() => {
      const row = document.querySelector('#cams tr[data-camera="b"]');
      return row && row.children[1].textContent === 'offline';
    }, null, { timeout: 20000 }).catch(() => fail('the page did not show b offline within 20 s'));
    const seq0 = await page.evaluate(() => window.fuseView.seq);
    await page.waitForFunction((s) => window.fuseView.seq > s + 5, seq0, { timeout: 20000 })
      .catch(() => fail('a\'s world messages stopped after b died'));
    const after = await page.evaluate(() => window.fuseView.footprints);
    const fa = after.find((f) => f.camera === 'a'), fb = after.find((f) => f.camera === 'b');
    if (!fa || !fa.online || !fb || fb.online) fail(`after kill -9: a online, b offline (${JSON.stringify(after.map((f) => [f.camera, f.online]))})`);
    const state = await page.$eval('#cams tr[data-camera="a"]', (tr) => tr.children[1].textContent);
    if (state !== 'ok' && state !== 'late') fail(`a is still used after b died (${state})`);
    await page.screenshot({ path: path.join(outDir, 'fuse-b-offline.png') });
    console.log('ok: b shown offline after kill -9, a flowing on');
    if (errors.length) fail(`page errors: ${errors}`);
  } finally {
    await browser.close();
  }
}

try {
  await main();
  console.log('fuse page: all checks passed');
} catch (e) {
  if (!process.exitCode) { console.error(e); process.exitCode = 1; }
} finally {
  for (const p of procs.reverse()) await stop(p);
  fs.rmSync(tmp, { recursive: true, force: true });
}
