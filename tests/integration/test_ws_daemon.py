#!/usr/bin/python3
"""Integration: the real trackd daemon with real WebSocket clients.

Starts trackd on the demo scene (640x360 at 100 fps, paced) on a free
loopback port, then with ws_client.py (Debian's python3-websockets):
  1. the page is served over HTTP at /;
  2. a client that asks for no subprotocol gets the hello, then frame messages
     that follow the schema, with seq strictly increasing, without a pause;
  3. the same measurement while a second client connects and never reads: the
     fast client is never held up by it (no pause in its results) while the
     server drops messages for the stalled one;
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
# The longest pause allowed between two results to one client. Nominally a
# result comes every 1/FPS s; a server or pipeline that waited for a stalled
# client would stop the stream altogether. Generous so that a loaded 2-core CI
# machine (other jobs, busy loops: tests/loaded.sh) never trips it; rates are
# printed, not asserted, because they depend on the machine's load.
MAX_GAP_S = 1.0
# How long the stalled client may take to fill the server's queue for it
# (nominally ~5 s: the loopback socket buffers absorb a few MB first).
STALL_WAIT_S = 60


def client(*args, check=True):
    r = subprocess.run(CLIENT + list(args), capture_output=True, text=True, timeout=60)
    print(r.stdout.strip())
    if check and r.returncode != 0:
        sys.exit(f"FAIL: ws_client {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def measure(url, report, what, seconds=SECONDS):
    client("--url", url, "--duration", str(seconds), "--check-schema", "--json-report", report)
    with open(report) as f:
        rep = json.load(f)
    gap = rep.get("max_gap_s")
    if rep["results"] < 2 or gap is None or gap >= MAX_GAP_S:
        sys.exit(f"FAIL: {what}: results paused: {rep['results']} results, longest gap {gap} s "
                 f"(limit {MAX_GAP_S} s)")
    return rep


def ws_dropped(rep):
    ws = rep.get("last_stats_ws") or {}
    return ws.get("messages_dropped")


def main():
    trackd, web_root = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "trackd.log"), "w+")
        p, port = start_trackd(trackd, ["--size", "640x360", "--fps", str(FPS), "--web-root",
                                        web_root, "--backend", "cpu"], log)
        url = f"ws://127.0.0.1:{port}/ws"
        try:
            client("--url", url, "--http-check", "--expect-text", "<html")
            alone = measure(url, os.path.join(d, "alone.json"), "alone")
            stall = subprocess.Popen(CLIENT + ["--url", url, "--stall", "--duration",
                                               str(STALL_WAIT_S + SECONDS + 10)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            try:
                # The kernel's socket buffers take megabytes before the
                # server's queue for the stalled client fills (seconds at this
                # rate): measure only once the server is dropping for it.
                at_stall = ws_dropped(alone) or 0
                deadline = time.monotonic() + STALL_WAIT_S
                while True:
                    probe = measure(url, os.path.join(d, "probe.json"), "while stalling", 2.0)
                    if (ws_dropped(probe) or 0) > at_stall:
                        break
                    if time.monotonic() > deadline:
                        sys.exit(f"FAIL: the server dropped nothing for the stalled client "
                                 f"within {STALL_WAIT_S} s: it is not stalled")
                beside = measure(url, os.path.join(d, "beside.json"), "beside a stalled client")
            finally:
                stall.terminate()
                stall.wait(10)
            print(f"fast client: {alone['rate_hz']:.1f} msg/s alone, {beside['rate_hz']:.1f} msg/s "
                  f"beside a stalled client; longest gap {alone['max_gap_s']:.3f} s alone, "
                  f"{beside['max_gap_s']:.3f} s beside")
            # The stall lasted the whole measurement: drops went on.
            before, after = ws_dropped(probe), ws_dropped(beside)
            print(f"server messages dropped: {at_stall} when the stall began, {before} when "
                  f"the measurement began, {after} at its end")
            if not isinstance(after, int) or after <= before:
                sys.exit("FAIL: the server stopped dropping for the stalled client")
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
