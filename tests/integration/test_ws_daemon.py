#!/usr/bin/python3
"""Integration: the real trackd daemon with real WebSocket clients.

Starts trackd on the demo scene (640x360 at 100 fps, paced) on a free
loopback port, then with ws_client.py (Debian's python3-websockets):
  1. the page is served over HTTP at /;
  2. a client that asks for no subprotocol gets the hello, then frame messages
     that follow the schema, with seq strictly increasing, at the demo rate;
  3. the same measurement while a second client connects and never reads: the
     fast client's rate must stay >= 0.9x of step 2 (same run, same machine);
  4. protocol conformance against the daemon: malformed messages get error
     replies and the connection stays usable.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from daemon_proc import start_trackd

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = [sys.executable, os.path.join(HERE, "ws_client.py")]
FPS, SECONDS = 100, 4.0


def client(*args, check=True):
    r = subprocess.run(CLIENT + list(args), capture_output=True, text=True, timeout=60)
    print(r.stdout.strip())
    if check and r.returncode != 0:
        sys.exit(f"FAIL: ws_client {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def measure(url, report):
    client("--url", url, "--duration", str(SECONDS), "--check-schema",
           "--expect-min", str(int(FPS * SECONDS * 0.7)), "--json-report", report)
    with open(report) as f:
        return json.load(f)


def main():
    trackd, web_root = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "trackd.log"), "w+")
        p, port = start_trackd(trackd, ["--size", "640x360", "--fps", str(FPS), "--web-root",
                                        web_root, "--backend", "cpu"], log)
        url = f"ws://127.0.0.1:{port}/ws"
        try:
            client("--url", url, "--http-check", "--expect-text", "<html")
            alone = measure(url, os.path.join(d, "alone.json"))
            stall = subprocess.Popen(CLIENT + ["--url", url, "--stall", "--duration",
                                               str(SECONDS + 3)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            time.sleep(1.0)  # let the stalled client's buffers fill up first
            beside = measure(url, os.path.join(d, "beside.json"))
            stall_out = stall.communicate(timeout=30)[0]
            print(stall_out.strip())
            ratio = beside["rate_hz"] / alone["rate_hz"]
            print(f"fast client: {alone['rate_hz']:.1f} msg/s alone, {beside['rate_hz']:.1f} msg/s "
                  f"beside a stalled client (ratio {ratio:.3f})")
            if ratio < 0.9:
                sys.exit("FAIL: a stalled client slowed the fast client")
            client("--url", url, "--protocol-tests", "--expect-previews", "--no-control")
            if p.poll() is not None:
                sys.exit(f"FAIL: trackd died (exit {p.returncode})")
        finally:
            p.terminate()
            rc = p.wait(10)
            log.seek(0)
            text = log.read()
        if rc != 0:
            sys.exit(f"FAIL: trackd exited {rc} on SIGTERM:\n{text[-3000:]}")
    print("ws daemon: all passed")


if __name__ == "__main__":
    main()
