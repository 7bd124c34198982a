#!/usr/bin/python3
"""Integration: the focus check (--focus-every) end to end, on real trackd.

1. Sharpness falls monotonically with blur. One lossless FFV1 clip of
   FFmpeg's test pattern (a static frame: no moving counter) per blur level
   (gblur sigma 0, 0.8, 1.6, 3.2, 6.4); trackd plays each in a loop with
   --focus-every 1 and /metrics' trackd_focus_sharpness is read once 3
   samples are in. Every frame of a clip is the same picture, so each level
   has one exact figure: the test demands strictly less at each level.
2. /healthz reports the loss, and the log and stats follow. A clip sharp for
   its first 30 frames and blurred (sigma 3.2) after: the baseline is learnt
   from the sharp frames (the first 5 samples), then /healthz answers 200
   "ok; focus lost: ..." and trackd_focus_lost is 1; the log has the
   warning; the page's stats message carries "focus" with state "lost", and
   systemd's STATUS= line (NOTIFY_SOCKET) ends in "focus lost (N% ...)".
   With --loop the sharp part comes back: the log then says "focus back"
   (the rate limit, TRK_FOCUS_LOG_S, is 30 s; the run waits for it, bounded).
   A "focus" message sets the baseline (a value, "now"; bad ones refused):
   set to the blurred figure, /healthz is plain "ok" again.
   --focus-every 0: no trackd_focus_* metrics, /healthz plain "ok".
3. Bad values are refused with exit 64 (usage), naming the option.
"""
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_proc import http_get, start_trackd, stop_trackd, wait_for  # noqa: E402

TRACKD = sys.argv[1]
FAILS = []
BLURS = [0, 0.8, 1.6, 3.2, 6.4]


def expect(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def get(port, path):
    st, body = http_get(port, path, timeout=10)
    return st, body.decode()


def metric(text, name):
    m = re.search(rf"^{name} (\S+)$", text, re.M)
    return float(m.group(1)) if m else None


def make_clip(path, vf, frames=40):
    # testsrc2 without motion: one frame, repeated (loop filter).
    src = "testsrc2=s=320x240:r=10:d=0.1,loop=loop=-1:size=1:start=0"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", src, "-vf", vf,
                    "-frames:v", str(frames), "-pix_fmt", "yuv420p", "-c:v", "ffv1", path],
                   check=True, timeout=120)


async def stats_focus(port):
    """The "focus" of the first stats message that says "lost" (10 s at
    most), else the last one seen."""
    st = None
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
        end = time.monotonic() + 10
        while time.monotonic() < end:
            try:
                m = await asyncio.wait_for(ws.recv(), end - time.monotonic())
            except asyncio.TimeoutError:
                break
            if isinstance(m, str):
                j = json.loads(m)
                if j.get("type") == "stats" and "focus" in j:
                    st = j["focus"]
                    if st["state"] == "lost":
                        break
    return st


async def focus_requests(port, bodies):
    """Sends {"type":"focus", **body} for each body; their replies."""
    out = []
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
        for i, body in enumerate(bodies):
            await ws.send(json.dumps({"type": "focus", "id": i, **body}))
            end = time.monotonic() + 10
            reply = {}
            while time.monotonic() < end:
                try:
                    m = json.loads(await asyncio.wait_for(ws.recv(), end - time.monotonic()))
                except asyncio.TimeoutError:
                    break
                except (TypeError, ValueError):
                    continue  # a binary preview
                if isinstance(m, dict) and m.get("id") == i:
                    reply = m
                    break
            out.append(reply)
    return out


def status_line(sock, text):
    """The first datagram waiting on sock that holds text, else None."""
    while True:
        try:
            m = sock.recv(4096).decode(errors="replace")
        except (socket.timeout, BlockingIOError):
            return None
        if text in m:
            return m


def blur(s):
    return f"gblur=sigma={s}" if s else "null"


def run(clip, log, *extra):
    return start_trackd(TRACKD, ["-i", clip, "--loop", "--backend", "cpu", "--threads", "1",
                                 *extra], log)


with tempfile.TemporaryDirectory() as d:
    # 1. Monotonic fall with blur.
    sharp = []
    for s in BLURS:
        clip = os.path.join(d, f"blur{s}.mkv")
        make_clip(clip, blur(s))
        with open(os.path.join(d, f"blur{s}.log"), "w") as log:
            p, port = run(clip, log, "--focus-every", "1")
            try:
                text = wait_for(lambda: (lambda t: t if (metric(t, "trackd_focus_samples_total")
                                                         or 0) >= 3 else None)(
                    get(port, "/metrics")[1]), 60)
            finally:
                stop_trackd(p)
        v = metric(text or "", "trackd_focus_sharpness")
        print(f"blur sigma {s}: sharpness {v}")
        expect(v is not None and v > 0, f"blur {s}: a sharpness ({v})")
        sharp.append(v or 0)
    expect(all(a > b for a, b in zip(sharp, sharp[1:])),
           f"sharpness falls strictly as the blur grows: {sharp}")

    # 2. Focus lost after the learnt baseline; /healthz, log, stats, recovery.
    clip = os.path.join(d, "bumped.mkv")
    make_clip(clip, "gblur=sigma=3.2:enable='gte(n,30)'", frames=60)
    logp = os.path.join(d, "bumped.log")
    # systemd's status line too: NOTIFY_SOCKET to a datagram socket here.
    note = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    note.bind(os.path.join(d, "notify"))
    note.settimeout(0.2)
    os.environ["NOTIFY_SOCKET"] = os.path.join(d, "notify")
    with open(logp, "w") as log:
        p, port = run(clip, log, "--focus-every", "1", "--focus-warn", "0.6")
        del os.environ["NOTIFY_SOCKET"]
        try:
            lost = wait_for(lambda: (lambda r: r if "focus lost" in r[1] else None)(
                get(port, "/healthz")), 60)
            expect(lost is not None and lost[0] == 200 and lost[1].startswith("ok; focus lost: "),
                   f"/healthz while blurred: 200 'ok; focus lost: ...' ({lost})")
            status = wait_for(lambda: status_line(note, "focus lost"), 10)
            expect(status is not None and re.search(r"^STATUS=tracking .*, focus lost \(\d+% of "
                                                    r"its sharpness\)$", status, re.M),
                   f"the systemd status says focus lost ({status})")
            m = get(port, "/metrics")[1]
            expect(metric(m, "trackd_focus_baseline") is not None and
                   abs(metric(m, "trackd_focus_baseline") - sharp[0]) < 1e-3 * sharp[0],
                   f"the baseline learnt is the sharp clip's figure "
                   f"({metric(m, 'trackd_focus_baseline')} vs {sharp[0]})")
            # The stats message (1 Hz) says the same, for the page.
            st = asyncio.run(stats_focus(port))
            expect(st is not None and st["state"] == "lost" and st["warn"] == 0.6 and
                   st["baseline"] > 0 and st["sharpness"] < 0.6 * st["baseline"],
                   f"stats message carries focus lost: {st}")
            back = wait_for(lambda: "focus back" in open(logp).read(), 70)
            expect(back, "the log says 'focus back' when the sharp frames return")
            # The baseline set to the blurred picture's figure: no loss any more.
            replies = asyncio.run(focus_requests(port, [
                {"baseline": sharp[3]}, {"baseline": "now"}, {"baseline": 0},
                {"baseline": 2000}, {"baseline": "later"}, {}]))
            print("focus replies:", replies)
            expect(replies[0].get("type") == "ack" and abs(replies[0]["baseline"] - sharp[3]) < 1e-3,
                   f"focus baseline S: ack with it ({replies[0]})")
            expect(replies[1].get("type") == "ack" and replies[1]["baseline"] > 0,
                   f"focus baseline now: ack with the newest sharpness ({replies[1]})")
            expect([r.get("code") for r in replies[2:]] ==
                   ["out_of_range", "out_of_range", "bad_field", "bad_field"],
                   f"bad baselines refused ({[r.get('code') for r in replies[2:]]})")
            asyncio.run(focus_requests(port, [{"baseline": sharp[3]}]))
            ok = wait_for(lambda: get(port, "/healthz") == (200, "ok\n") and
                          metric(get(port, "/metrics")[1], "trackd_focus_lost") == 0, 20)
            expect(ok, "with the blurred figure as baseline /healthz says plain ok")
        finally:
            stop_trackd(p)
    text = open(logp).read()
    expect(re.search(r"warn.*focus lost: sharpness", text) is not None,
           "the log warns 'focus lost'")
    expect(text.count("focus lost") == 1,
           f"one 'focus lost' line within the rate limit ({text.count('focus lost')})")

    # --focus-every 0: off.
    with open(os.path.join(d, "off.log"), "w") as log:
        p, port = run(clip, log, "--focus-every", "0")
        try:
            wait_for(lambda: get(port, "/healthz")[0] == 200, 30)
            time.sleep(4)  # past the blurred frames
            h, m = get(port, "/healthz"), get(port, "/metrics")[1]
        finally:
            stop_trackd(p)
    expect(h == (200, "ok\n") and "trackd_focus" not in m,
           f"--focus-every 0: no focus metrics, /healthz {h}")

    # 3. Bad values.
    for args, opt in ((["--focus-warn", "0"], "--focus-warn"),
                      (["--focus-warn", "1.5"], "--focus-warn"),
                      (["--focus-every", "-1"], "--focus-every"),
                      (["--focus-baseline", "x"], "--focus-baseline")):
        r = subprocess.run([TRACKD, "--no-server", *args], capture_output=True, text=True,
                           timeout=30)
        expect(r.returncode == 64 and opt in r.stderr,
               f"{' '.join(args)}: exit 64 naming {opt} ({r.returncode}: {r.stderr.strip()})")

if FAILS:
    sys.exit(f"{len(FAILS)} failed: {FAILS}")
