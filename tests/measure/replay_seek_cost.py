#!/usr/bin/python3
"""Measures a seek in the replay of a copy bundle whose frames are its
input file's, by reference (docs/RECORDING.md, "How fast"): a clip made by
the ffmpeg CLI (testsrc2 with noise, WxH, FRAMES at 30 fps) as MJPEG (every
frame a key frame) and as H.264 (a key frame every GOP frames, B-frames) is
recorded with `--record-storage copy`; then `trackd --replay B --paused
--backend cpu` takes a seeded sequence of SEEKS seeks over the frames
(forward and back) from a real WebSocket client, each timed from the
request to the replay message that shows its frame. Each TRACKD given
(e.g. one built before a change and one after) runs the same sequence on
the same bundles, alternated, ROUNDS times; the median and max of each
binary's seeks are printed, all seeks and the seeks back apart.
A measurement, not a test: numbers depend on the machine and its load.

    replay_seek_cost.py TRACKD [TRACKD...] [--size WxH] [--frames N] [--gop G]
                        [--seeks S] [--rounds R]
"""
import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import websockets  # noqa: E402

from daemon_proc import start_trackd, stop_trackd  # noqa: E402
from test_bundle_view import Client  # noqa: E402


def make_clip(path, size, frames, codec):
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size={size}:rate=30,noise=alls=20:allf=t", "-frames:v",
                    str(frames), *codec, path], check=True)


def record(trackd, clip, bundle):
    subprocess.run([trackd, "--input", clip, "--fast", "--no-server", "--backend", "cpu",
                    "--record", bundle, "--record-storage", "copy"], check=True,
                   capture_output=True, timeout=600)


async def seek_times(port, targets):
    """(ms, went back) of each seek in targets."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True, 60)
        out, at = [], 0
        for k in targets:
            t0 = time.monotonic()
            a = await c.ask({"type": "replay_seek", "frame": k})
            if a["type"] != "ack":
                raise RuntimeError(f"seek {k}: {a}")
            m = await c.replay(lambda j: j["frame"] == k, 120)
            if m["error"] is not None:
                raise RuntimeError(f"seek {k}: {m['error']}")
            out.append(((time.monotonic() - t0) * 1e3, k < at))
            at = k
        return out


def measure(trackd, bundle, targets, tmp):
    log = open(os.path.join(tmp, "replay.log"), "w")
    p = None
    try:
        p, port = start_trackd(trackd, ["--replay", bundle, "--paused", "--backend", "cpu"], log)
        return asyncio.run(seek_times(port, targets))
    finally:
        stop_trackd(p)
        log.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trackd", nargs="+")
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--gop", type=int, default=30)
    ap.add_argument("--seeks", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trackd-seekcost-")
    rng = random.Random(7)
    targets = [rng.randrange(a.frames) for _ in range(a.seeks)]
    clips = {
        "mjpeg": ("clip.avi", ["-c:v", "mjpeg", "-q:v", "3", "-pix_fmt", "yuvj420p"]),
        "h264": ("clip.mp4", ["-c:v", "libx264", "-preset", "veryfast", "-g", str(a.gop),
                              "-bf", "3", "-pix_fmt", "yuv420p"]),
    }
    try:
        for name, (file, codec) in clips.items():
            clip, bundle = os.path.join(tmp, file), os.path.join(tmp, name)
            make_clip(clip, a.size, a.frames, codec)
            record(a.trackd[0], clip, bundle)
            times = {t: [] for t in a.trackd}
            for _ in range(a.rounds):
                for t in a.trackd:
                    times[t] += measure(t, bundle, targets, tmp)
            print(f"{name} {a.size}, {a.frames} frames"
                  f"{'' if name == 'mjpeg' else f', a key frame every {a.gop}'}, "
                  f"{a.seeks} seeks x {a.rounds} rounds:")
            for t, ms in times.items():
                back = [m for m, b in ms if b]
                all_ms = [m for m, _ in ms]
                print(f"  {t}: median {statistics.median(all_ms):.0f} ms, max "
                      f"{max(all_ms):.0f} ms; {len(back)} seeks back: median "
                      f"{statistics.median(back):.0f} ms, max {max(back):.0f} ms")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
