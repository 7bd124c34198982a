#!/usr/bin/python3
"""Integration: clock sync (PROTOCOL.md, "sync") on loopback with real
components: trackd (demo scene) with --listen and --mqtt to a real
mosquitto, examples/clock_sync.py as the client, trackd-fuse syncing the
camera.

    test_clock_sync.py TRACKD TRACKD_FUSE EXAMPLES_DIR

On one host every clock offset is known: the client pretends its clock is
SKEW s fast (it adds SKEW to every timestamp it takes), so trackd's wall
clock is -SKEW from it, and its monotonic clock is (CLOCK_MONOTONIC -
CLOCK_REALTIME - SKEW), both read here. Checked:
  1. over the WebSocket and over MQTT, the least-delay sample's wall and
     monotonic offsets are within half its round trip of the truth;
  2. a request with a bad t0 gets a bad_field error, the connection lives;
  3. trackd-fuse's offset for the camera (sources[].clock_offset_ms) is
     within half its sync_delay_ms of the truth, and its fused instant is
     the camera frame's t_capture moved by that offset.
The offsets and delays measured are printed (docs/BENCHMARKS.md).
"""
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import websockets

from daemon_proc import free_port, start_trackd, stop_trackd
from mqtt_proc import Broker, Sub, wait_for

TRACKD, FUSE, EXAMPLES = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, EXAMPLES)
import clock_sync  # noqa: E402  (examples/clock_sync.py, the client under test)

DEMO = ["--size", "320x240", "--fps", "30", "--backend", "cpu", "--no-preview"]
SKEW = 1234.5678  # s: the client's clock is this much fast
N = 16
# Rounding of the reply's times (3 decimals of ms, 6 of s: 0.5 us each) and
# of doubles near 1.7e9 s.
SLACK_S = 3e-6
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def skewed():
    return time.time() + SKEW


def true_mono_offset():
    """trackd's monotonic clock minus the client's skewed clock, s."""
    a = time.monotonic()
    w = time.time()
    b = time.monotonic()
    return (a + b) / 2 - (w + SKEW)


def check_samples(how, samples):
    check(len(samples) >= N // 2, f"{how}: {len(samples)} of {N} sync replies came")
    if not samples:
        return
    wall, mono, delay = clock_sync.best(samples)
    truth_mono = true_mono_offset()
    bound = delay / 2 + SLACK_S
    check(0 <= delay < 1.0, f"{how}: least round trip {delay * 1e3:.3f} ms (0..1000)")
    check(abs(wall + SKEW) <= bound,
          f"{how}: wall offset {wall * 1e3:+.3f} ms vs true {-SKEW * 1e3:+.3f} ms: error "
          f"{(wall + SKEW) * 1e6:+.1f} us within +-{bound * 1e6:.1f} us")
    check(abs(mono - truth_mono) <= bound,
          f"{how}: monotonic offset error {(mono - truth_mono) * 1e6:+.1f} us within "
          f"+-{bound * 1e6:.1f} us")
    errs = sorted(abs(s[0] + SKEW) * 1e6 for s in samples)
    print(f"measured {how}: least delay {delay * 1e6:.1f} us, wall error of the best sample "
          f"{(wall + SKEW) * 1e6:+.1f} us; all {len(samples)} samples: error median "
          f"{errs[len(errs) // 2]:.1f} us max {errs[-1]:.1f} us, delay median "
          f"{sorted(s[2] for s in samples)[len(samples) // 2] * 1e6:.1f} us", flush=True)


async def bad_t0(url):
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "sync", "id": 1, "t0": "now"}))
        await ws.send(json.dumps({"type": "ping", "id": 2}))
        got = {}
        while len(got) < 2:
            j = json.loads(await asyncio.wait_for(ws.recv(), 5))
            if j.get("id") in (1, 2):
                got[j["id"]] = j
        return got


def check_fuser(port, tmp):
    sub = Sub(port, ["cs/world/frame", "cs/cs/frame"])
    log = open(os.path.join(tmp, "fuse.log"), "wb")
    fuse = subprocess.Popen([FUSE, "--mqtt", f"mqtt://127.0.0.1:{port}/cs"], stderr=log)
    try:
        def synced():
            return [w for t, r, p in sub.take("cs/world/frame")
                    for w in [json.loads(p)]
                    if w["sources"] and w["sources"][0]["clock"] == "sync"]
        check(wait_for(lambda: len(synced()) >= 20, 20), "fuser: world frames with the camera "
              "on the synced clock")
        ws = synced()
        frames = {json.loads(p)["seq"]: json.loads(p) for t, r, p in sub.take("cs/cs/frame")}
        if not ws:
            return
        w = ws[-1]
        s = w["sources"][0]
        truth_ms = (true_mono_offset() + SKEW) * 1e3  # monotonic minus (unskewed) wall
        bound = s["sync_delay_ms"] / 2 + 0.01
        check(abs(s["clock_offset_ms"] - truth_ms) <= bound,
              f"fuser: camera clock offset {s['clock_offset_ms']:.3f} ms, error "
              f"{(s['clock_offset_ms'] - truth_ms) * 1e3:+.1f} us within +-{bound * 1e3:.1f} us")
        print(f"measured fuser over MQTT: sync delay {s['sync_delay_ms'] * 1e3:.1f} us, offset "
              f"error {(s['clock_offset_ms'] - truth_ms) * 1e3:+.1f} us", flush=True)
        f = frames.get(s["seq"])
        check(f is not None and abs(w["wall_ms"] - (f["t_capture"] * 1e3 - s["clock_offset_ms"]))
              < 0.01, "fuser: the fused instant is the frame's t_capture moved by the offset")
    finally:
        fuse.terminate()
        check(fuse.wait(10) == 0, "the fuser stops cleanly")
        sub.close()


def main():
    tmp = tempfile.mkdtemp(prefix="trackd-sync-")
    broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")
    broker.start()
    log = open(os.path.join(tmp, "trackd.log"), "wb")
    p = None
    try:
        p, port = start_trackd(TRACKD, [*DEMO, "--name", "cs", "--mqtt",
                                        f"mqtt://127.0.0.1:{broker.port}/cs"], log)
        url = f"ws://127.0.0.1:{port}/ws"
        check_samples("WebSocket", asyncio.run(clock_sync.sync_ws(url, N, clock=skewed)))
        got = asyncio.run(bad_t0(url))
        check(got[1].get("type") == "error" and got[1].get("code") == "bad_field"
              and got[2].get("type") == "pong", "a sync with a string t0: bad_field, and the "
              "connection goes on")
        # trackd subscribes to its sync requests before it publishes its
        # status: once the status is in, requests are answered.
        st = Sub(broker.port, ["cs/cs/status"])
        check(wait_for(lambda: any(json.loads(p)["online"] for t, r, p in st.take()), 20),
              "trackd is online on the broker")
        st.close()
        check_samples("MQTT", clock_sync.sync_mqtt("127.0.0.1", broker.port, "cs", "cs", N,
                                                   clock=skewed))
        check_fuser(broker.port, tmp)
    finally:
        if p:
            stop_trackd(p)
        broker.stop()
    if FAILS:
        with open(os.path.join(tmp, "trackd.log"), errors="replace") as f:
            print("--- trackd log (last 20 lines)\n" + "".join(f.readlines()[-20:]))
        sys.exit(f"{len(FAILS)} checks failed")


if __name__ == "__main__":
    main()
