// Browser test of the Camera card on a camera with controls: the page of a
// trackd that runs on the vivid virtual camera under qemu (tests/camera/
// run_controls.py starts it and passes the page's address, token included,
// in TRK_PAGE_URL; it checks the driver with v4l2-ctl afterwards). vivid
// has automatic gain and gain (0..255) and no exposure or white balance:
// the card shows the Gain group only, with the driver's range; End on the
// slider sets gain 255, the auto box turns automatic gain on and the slider
// off, teaching then shows the warning about automatic modes, Save writes
// the camera section alone into the objects file, and the card follows an
// unplug and replug.
//
//   TRK_PAGE_URL=http://127.0.0.1:PORT/?token=T node camera_vivid.test.mjs
import { fail, launchChromium } from './harness.mjs';

const url = process.env.TRK_PAGE_URL;
if (!url) fail('TRK_PAGE_URL is not set (run by tests/camera/run_controls.py)');

const card = (page) => page.evaluate(() => {
  const q = (s) => document.querySelector(s);
  const slider = q('#cam-groups fieldset[data-group="gain"] input[type="range"]');
  const box = q('#cam-groups fieldset[data-group="gain"] input[type="checkbox"]');
  return {
    groups: [...document.querySelectorAll('#cam-groups fieldset')].map((f) => f.dataset.group),
    slider: slider && { min: slider.min, max: slider.max, step: slider.step, value: slider.value,
                        disabled: slider.disabled, shown: slider.nextElementSibling.textContent },
    auto: box && { checked: box.checked, disabled: box.disabled },
    note: q('#cam-note').textContent,
    state: window.trackdTest.camera,
  };
});

async function until(page, fn, arg, what) {
  await page.waitForFunction(fn, arg, { timeout: 60000 })
    .catch(async () => fail(`${what}: ${JSON.stringify(await card(page))}`));
}

let browser;
try {
  browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await until(page, () => window.trackdTest && window.trackdTest.camera.available === true, null,
              'the card never loaded the camera');
  let c = await card(page);
  const gain = c.state.controls.find((k) => k.name === 'gain');
  if (c.groups.join() !== 'gain' || !c.slider || !c.auto || c.slider.min !== '0' ||
      c.slider.max !== '255' || c.slider.step !== '1' || c.slider.value !== String(gain.value) ||
      c.slider.disabled || c.auto.checked || !c.note.includes('/dev/video0'))
    fail(`the Gain group as vivid has it (manual, 0..255): ${JSON.stringify(c)}`);
  console.log(`  card: ${c.groups}, gain ${c.slider.min}..${c.slider.max} at ${c.slider.value}`);

  // The slider by keyboard, as a user would: End is its maximum.
  await page.focus('#cam-groups input[type="range"]');
  await page.keyboard.press('End');
  await until(page, () => {
    const a = window.trackdTest.camera.lastAck;
    return a && a.name === 'gain' && a.value === 255;
  }, null, 'no set_camera ack for gain 255');
  await until(page, () => window.trackdTest.camera.controls.find((k) => k.name === 'gain').value === 255,
              null, 'the camera broadcast never had gain 255');
  console.log('  End on the slider: gain 255 acked and broadcast');

  // Automatic gain on: acked, and the slider is off while the camera sets it.
  await page.click('#cam-groups input[type="checkbox"]');
  await until(page, () => {
    const a = window.trackdTest.camera.lastAck;
    const s = document.querySelector('#cam-groups input[type="range"]');
    return a && a.name === 'gain_automatic' && a.value === 1 && s && s.disabled;
  }, null, 'automatic gain did not come on with the slider off');
  c = await card(page);
  if (!c.auto.checked || c.state.autoWarning !== null) fail(`after auto on: ${JSON.stringify(c)}`);
  console.log('  auto box: automatic gain on, slider disabled');

  // Teaching with an automatic mode on: the teach panel says so (vivid has
  // no white balance; its automatic gain takes the same path), and not
  // once teaching ends.
  const warned = () => {
    const w = document.getElementById('cam-auto-warn');
    const t = document.getElementById('cam-auto-text').textContent;
    return !w.hidden && /Automatic gain is on/.test(t) && window.trackdTest.camera.autoWarning === t;
  };
  await page.click('#t-teach');
  await until(page, warned, null, 'no warning about automatic gain while teaching');
  console.log(`  teaching: "${await page.textContent('#cam-auto-text')}"`);
  // Its "Lock it now" switches automatic gain off (the driver keeps the
  // gain it has), and the warning goes while teaching goes on.
  if (await page.textContent('#cam-lock') !== 'Lock it now') fail('the lock button is not offered');
  await page.click('#cam-lock');
  await until(page, () => {
    const a = window.trackdTest.camera.lastAck;
    return a && a.name === 'gain_automatic' && a.value === 0 &&
      document.getElementById('cam-auto-warn').hidden && window.trackdTest.camera.autoWarning === null;
  }, null, 'Lock now did not turn automatic gain off and end the warning');
  console.log('  Lock now: automatic gain off, the warning gone while teaching');
  // On again (the rest of the test saves it on): warned again.
  await page.click('#cam-groups input[type="checkbox"]');
  await until(page, warned, null, 'no warning once automatic gain was back on');
  await page.click('#t-teach');
  await until(page, () => document.getElementById('cam-auto-warn').hidden &&
    window.trackdTest.camera.autoWarning === null, null, 'the warning outlived teaching');
  // The card's Save: the objects file gets the section as set here and
  // nothing else (run_controls.py reads it in the VM).
  await page.click('#cam-save');
  await until(page, () => window.trackdTest.camera.saved !== null, null, 'no save_objects ack');
  c = await card(page);
  const said = await page.textContent('#cam-msg');
  if (c.state.saved.part !== 'camera' || c.state.saved.whole !== false ||
      !/camera settings saved to .*nothing else in the file changed/.test(said))
    fail(`the card's Save: ack ${JSON.stringify(c.state.saved)}, page says "${said}"`);
  console.log(`  Save: ${said}`);

  // Unplugged (run_controls.py unbinds vivid on @@UNPLUG and binds it
  // again on @@SAW-GONE): the card shows no controls while the camera is
  // gone and asks for them again when it is back.
  console.log('@@UNPLUG');
  await until(page, () => window.trackdTest.camera.stale === true &&
    !document.querySelector('#cam-groups fieldset') && document.getElementById('cam-save').hidden,
  null, 'the card did not show the camera gone');
  console.log(`  unplugged: "${await page.textContent('#cam-note')}"`);
  console.log('@@SAW-GONE');
  await until(page, () => window.trackdTest.camera.stale === false &&
    document.querySelector('#cam-groups fieldset[data-group="gain"] input[type="range"]'),
  null, 'the card did not come back with the camera');
  console.log('  plugged in again: the Gain group is back');
  if (errors.length) fail(`page errors: ${errors.join('; ')}`);
  console.log('PASS');
} finally {
  if (browser) await browser.close();
}
