// Shared pieces of the browser tests: failing loudly, a free loopback port,
// waiting for the real daemon to listen, stopping it, and launching Debian's
// chromium headless through playwright-core.
import net from 'node:net';
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

export async function waitListening(port, proc) {
  for (let i = 0; i < 100; i++) {
    if (proc.exitCode !== null) fail(`trackd exited ${proc.exitCode} at start`);
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.end(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  fail('trackd did not listen within 10 s');
}

export function stop(p) {
  return new Promise((resolve) => {
    if (p.exitCode !== null) return resolve(p.exitCode);
    p.on('exit', (code) => resolve(code));
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
