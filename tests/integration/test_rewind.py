#!/usr/bin/python3
"""Integration: --rewind (docs/RECORDING.md, "Rewind") with the real daemon,
a real WebSocket client, real signals and examples/read_bundle.py.

Each trigger saves a bundle that holds the last N seconds and no more: its
frames' t_capture span at most N, they are consecutive and end at (or just
before) the moment of the trigger, and the frame before the first was
already more than N seconds older than a frame captured by then (checked
against every frame's result in --output). Each replays --verify identical
on cpu and cpu-ref.
  1. save_rewind over the WebSocket: the ack names the folder; a second one
     at once is refused ("busy"); a daemon without --rewind answers
     "unsupported";
  2. SIGUSR1, the save stored as FFV1 (--record-storage ffv1);
  3. --rewind-on lost:K: a generated clip whose red disk vanishes at frame
     VANISH: the save ends at the frame where it was missing for K+1 frames;
  4. --rewind-on health: a clip with a 3 s hole in its timestamps (paced,
     so no frame for 3 s): /healthz turns bad ("pipeline stalled") and the
     save ends at the last frame before the hole;
  5. a full disk (a 1 MB tmpfs) and a read-only folder during a save:
     tracking and outputs go on (every result in --output, exit 0), the log
     says which save failed and why; the cut bundle stays readable.
  6. tracked objects and markers (a generated SSL scene, examples/
     ssl-field.json with "track" on for the robots and the ball): a save by
     SIGUSR1 mid-run holds state.bin and replays --verify identical on cpu
     and cpu-ref (ids, velocities, coasting, marker track ids as live); the
     same bundle without state.bin differs (the state is what makes it
     identical); a damaged state.bin (cut short, a wrong magic, an
     instance count out of range) is exit 65 naming state.bin and the byte.
  7. ranges that follow the light (light_scene.py's clip, "illumination" on
     its grey card and "adapt" on every object): a save by SIGUSR1 while
     the light falls starts with boxes moved from the taught ones and
     replays --verify identical on cpu and cpu-ref (state.bin's light
     section: gains, references, drifts, the next plan's blobs); the same
     state.bin cut back to version 1 (no light section) still loads but
     the replay differs: the light section is what makes it identical.
Section 5 needs root (mount); without it, it is reported and skipped.
Arguments after trackd name the sections to run (request, signal, lost,
health, tracked, disk, light); none: all but light, which ctest runs on its
own (rewind_light).
"""
import asyncio
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import websockets

from daemon_proc import start_trackd, stop_trackd
from test_record import mounted
from ws_rpc import WsClient

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import read_bundle  # noqa: E402

FAILS = []
W, H = 96, 64
N_S = 1.0  # --rewind in the tests, seconds


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def run(trackd, args, timeout=120):
    return subprocess.run([trackd, *args], capture_output=True, text=True, timeout=timeout)


def results_by_seq(path):
    return {j["seq"]: j for j in (json.loads(l) for l in open(path).read().splitlines() if l)}


def check_window(trackd, bundle, out, what, n_s=N_S, trigger=None):
    """The bundle holds consecutive frames over at most n_s seconds, the
    last ones before it was saved (the frame before its first was more than
    n_s older than a frame captured by then), and replays identically."""
    b = read_bundle.Bundle(bundle)
    seqs = [e["seq"] for e in b.index]
    res = results_by_seq(out)
    if not seqs:
        check(False, f"{what}: the bundle holds frames")
        return None
    span = b.index[-1]["t_capture"] - b.index[0]["t_capture"]
    check(span <= n_s + 1e-6, f"{what}: its frames span {span:.3f} s <= {n_s} s")
    check(seqs == list(range(seqs[0], seqs[-1] + 1)), f"{what}: frames {seqs[0]}..{seqs[-1]}, "
          f"none missing")
    check([r["seq"] for r in b.results()] == seqs, f"{what}: one result per frame")
    check(all(abs(res[e["seq"]]["t_capture"] - e["t_capture"]) < 1e-5 for e in b.index
              if e["seq"] in res), f"{what}: its frames are the run's (t_capture as in --output)")
    first = seqs[0]
    if first > 0:
        # Frames captured by the save: at most the pool's few ahead of the
        # last saved one (files and the demo wait for processing).
        later = [res[s]["t_capture"] for s in range(seqs[-1], seqs[-1] + 8) if s in res]
        older = max(later) - res[first - 1]["t_capture"] if later else 0
        check(older > n_s, f"{what}: frame {first - 1}, the one before, was {older:.3f} s older "
              f"than the newest captured by then: no more than the last {n_s} s, and all of them")
    if trigger:
        got = b.manifest.get("rewind", {}).get("trigger", "")
        check(got.startswith(trigger), f"{what}: the manifest says why: {got!r}")
    for backend in ("cpu", "cpu-ref"):
        r = run(trackd, ["--replay", bundle, "--verify", "--fast", "--no-server",
                         "--backend", backend])
        ok = r.returncode == 0 and " 0 differ: identical" in r.stdout
        check(ok, f"{what}: replay --verify identical on {backend}")
        if not ok:
            print(r.stdout[-1500:], r.stderr[-1500:])
    return b


async def wait_frames(c, n):
    """Until n frame messages went by (20 s at most)."""
    c.frames = 0
    t0 = time.monotonic()
    while c.frames < n and time.monotonic() - t0 < 20:
        await asyncio.sleep(0.02)
    return c.frames >= n


class Client(WsClient):
    frames = 0
    last_seq = -1

    def on_message(self, j):
        if j.get("type") == "frame":
            self.frames += 1
            self.last_seq = j["seq"]
        super().on_message(j)


async def request_saves(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        flowing = await wait_frames(c, 60)
        asked_at = c.last_seq
        a = await c.req({"type": "save_rewind"})
        b = await c.req({"type": "save_rewind"})
        return flowing, asked_at, a, b


def by_request(trackd, tmp):
    out = os.path.join(tmp, "req.ndjson")
    rdir = os.path.join(tmp, "req")
    os.makedirs(rdir)
    with open(os.path.join(tmp, "req.log"), "w") as log:
        p, port = start_trackd(trackd, ["--size", "160x120", "--fps", "30", "--frames", "150",
                                        "--no-preview", "--output", out, "--rewind", f"{N_S}s",
                                        "--rewind-dir", rdir, "--rewind-gap", "600"], log)
        try:
            flowing, asked_at, a, b = asyncio.run(request_saves(port))
            p.wait(60)
        finally:
            stop_trackd(p)
    check(flowing and p.returncode == 0, f"request: frames flowed, exit 0 ({p.returncode})")
    ok = a and a.get("type") == "ack" and a.get("request") == "save_rewind" and a.get("dir")
    check(ok, f"request: save_rewind is acked with the bundle's folder: {a}")
    check(b and b.get("type") == "error" and b.get("code") == "busy",
          f"request: a second save at once is refused as busy: {b}")
    if ok:
        check(os.path.dirname(a["dir"]) == rdir and a["dir"] in glob.glob(rdir + "/rewind-*"),
              f"request: the bundle is in --rewind-dir ({a['dir']})")
        bd = check_window(trackd, a["dir"], out, "request", trigger="request")
        if bd:
            # The door hands a frame to the WebSocket before the rewind
            # buffer: the one before the client's newest is in for sure.
            check(bd.index[-1]["seq"] >= asked_at - 1, f"request: it ends at the frames the "
                  f"client saw when asking ({bd.index[-1]['seq']} >= {asked_at} - 1)")
    # No --rewind: the message is unsupported, saying how to turn it on.
    with open(os.path.join(tmp, "off.log"), "w") as log:
        p, port = start_trackd(trackd, ["--size", "160x120", "--no-preview"], log)
        try:
            async def ask():
                async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
                    return await WsClient(ws).req({"type": "save_rewind"})
            r = asyncio.run(ask())
        finally:
            stop_trackd(p)
    check(r and r.get("code") == "unsupported" and "--rewind" in r.get("message", ""),
          f"no --rewind: save_rewind is unsupported, naming the option: {r}")


def run_signalled(trackd, args, out, log_path):
    """trackd --no-server --output out ARGS, SIGUSR1 once out holds 60
    result lines (20 s at most), to its end: (exit status, its log)."""
    with open(log_path, "w") as log:
        p = subprocess.Popen([trackd, "--no-server", "--output", out, *args], stderr=log)
        try:
            for _ in range(400):
                if os.path.exists(out) and len(open(out).read().splitlines()) >= 60:
                    break
                time.sleep(0.05)
            p.send_signal(signal.SIGUSR1)
            p.wait(60)
        finally:
            stop_trackd(p)
    return p.returncode, open(log_path).read()


def by_signal(trackd, tmp):
    out = os.path.join(tmp, "sig.ndjson")
    rdir = os.path.join(tmp, "sig")
    os.makedirs(rdir)
    rc, text = run_signalled(trackd, ["--size", "160x120", "--fps", "30", "--frames", "120",
                                      "--rewind", f"{N_S}s", "--rewind-dir", rdir,
                                      "--record-storage", "ffv1"], out,
                             os.path.join(tmp, "sig.log"))
    saved = glob.glob(rdir + "/rewind-*")
    check(rc == 0 and len(saved) == 1 and "SIGUSR1: saving the rewind buffer" in text,
          f"signal: SIGUSR1 saves one bundle ({rc}, {saved})")
    if saved:
        b = check_window(trackd, saved[0], out, "signal", trigger="signal")
        check(b and b.manifest["frames"]["storage"] == "ffv1",
              "signal: saved as FFV1 (--record-storage ffv1)")


def make_clip(path, n, vanish=None, hole_after=None):
    """n frames W x H at 25 fps: a red disk moving right on a gray ramp, gone
    from frame vanish on; hole_after: 3 s more between that frame and the
    next (a paced replay of it stalls)."""
    vf = ["-vf", f"setpts='N/25/TB+if(gt(N,{hole_after}),3/TB,0)'", "-fps_mode", "passthrough"] \
        if hole_after is not None else []
    p = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-s", f"{W}x{H}", "-r", "25", "-i", "-", *vf, "-c:v",
                          "rawvideo", "-pix_fmt", "rgb24", path], stdin=subprocess.PIPE)
    for f in range(n):
        buf = bytearray()
        for y in range(H):
            for x in range(W):
                disk = (vanish is None or f < vanish) and (x - 10 - f % 70) ** 2 + (y - 30) ** 2 <= 64
                buf += bytes((230, 30, 30)) if disk else bytes(((x * 2 + y) & 255,) * 3)
        p.stdin.write(bytes(buf))
    p.stdin.close()
    return p.wait() == 0


def red_objects(tmp):
    path = os.path.join(tmp, "red.json")
    with open(path, "w") as f:
        json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 0, 0],
                                "hi": [255, 80, 80]}]}, f)
    return path


def on_clip(trackd, tmp, name, clip, trigger):
    """trackd on clip (paced) with --rewind-on trigger, saves in tmp/name:
    (the run, the bundles saved in order, its --output)."""
    out = os.path.join(tmp, name + ".ndjson")
    rdir = os.path.join(tmp, name)
    os.makedirs(rdir)
    r = run(trackd, ["--input", clip, "--objects", red_objects(tmp), "--no-server", "--output",
                     out, "--rewind", f"{N_S}s", "--rewind-dir", rdir, "--rewind-on", trigger])
    return r, sorted(glob.glob(rdir + "/rewind-*")), out


def by_lost(trackd, tmp):
    vanish, k = 60, 5
    clip = os.path.join(tmp, "lost.nut")
    check(make_clip(clip, 90, vanish=vanish), "lost: ffmpeg made the clip")
    r, saved, out = on_clip(trackd, tmp, "lost", clip, f"lost:{k}")
    check(r.returncode == 0 and len(saved) == 1, f"lost: one bundle saved ({r.returncode}, "
          f"{saved}) {r.stderr[-300:]}")
    if saved:
        b = check_window(trackd, saved[0], out, "lost", trigger="lost: red not found for 6")
        if b:
            check(b.index[-1]["seq"] == vanish + k,
                  f"lost: it ends at the frame red was missing for {k + 1} frames "
                  f"({b.index[-1]['seq']} == {vanish + k})")


def by_health(trackd, tmp):
    hole = 40
    clip = os.path.join(tmp, "hole.nut")
    check(make_clip(clip, 50, hole_after=hole), "health: ffmpeg made the clip with a hole")
    r, saved, out = on_clip(trackd, tmp, "health", clip, "health")
    check(r.returncode == 0 and saved, f"health: a bundle saved ({r.returncode}, {saved}) "
          f"{r.stderr[-300:]}")
    if saved:
        b = check_window(trackd, saved[0], out, "health", trigger="health: pipeline stalled")
        if b:
            check(b.index[-1]["seq"] == hole, f"health: it ends at the last frame before the "
                  f"hole ({b.index[-1]['seq']} == {hole})")


def failing_save(trackd, tmp, mnt, opts, frames, what, error):
    """A save into mnt (a tmpfs mounted with opts) fails; tracking goes on."""
    if not mounted(mnt, opts):
        print(f"skip: cannot mount a tmpfs (not root): {what} not run")
        return
    try:
        out = os.path.join(tmp, what + ".ndjson")
        rc, text = run_signalled(trackd, ["--size", "160x120", "--fps", "30", "--frames",
                                          str(frames), "--rewind", "2s", "--rewind-dir", mnt],
                                 out, os.path.join(tmp, what + ".log"))
        lines = open(out).read().splitlines()
        check(rc == 0 and len(lines) == frames,
              f"{what}: tracking goes on, every result in --output ({rc}, "
              f"{len(lines)} of {frames})")
        check("rewind save to " + mnt in text and "failed" in text and error in text
              and "tracking goes on" in text,
              f"{what}: the log names the save, says it failed and why ({error})")
        for d in glob.glob(mnt + "/rewind-*"):
            b = read_bundle.Bundle(d)
            check(len(b.index) < 60, f"{what}: the cut bundle is readable ({len(b.index)} frames)")
    finally:
        subprocess.run(["umount", mnt])


def tracked_objects(tmp):
    """examples/ssl-field.json with "track" on for the robots and the ball."""
    j = json.load(open(os.path.join(HERE, "..", "..", "examples", "ssl-field.json")))
    for o in j["objects"]:
        if o["name"] in ("blue", "yellow", "ball"):
            o["track"] = True
    path = os.path.join(tmp, "ssl-tracked.json")
    json.dump(j, open(path, "w"))
    return path


def damaged_state(trackd, tmp, good, what, change, at):
    """A copy of bundle good with state.bin changed: exit 65 naming it and
    byte at (None: some byte)."""
    bad = os.path.join(tmp, "state-" + what.replace(" ", "-"))
    shutil.copytree(good, bad)
    path = os.path.join(bad, "state.bin")
    data = bytearray(open(path, "rb").read())
    open(path, "wb").write(change(data))
    r = run(trackd, ["--replay", bad, "--verify", "--fast", "--no-server"])
    want = f"{path}: at byte " + ("" if at is None else f"{at} of")
    check(r.returncode == 65 and want in r.stderr,
          f"state.bin {what}: exit 65 naming the file and byte {at} ({r.returncode}: "
          f"{r.stderr.strip()[-300:]})")


def by_tracked(trackd, tmp):
    clip = os.path.join(tmp, "ssl.mkv")
    subprocess.run([sys.executable, os.path.join(HERE, "ssl_scene.py"), clip, "--frames", "120",
                    "--size", "320x240", "--robots", "8"], check=True)
    out = os.path.join(tmp, "tracked.ndjson")
    rdir = os.path.join(tmp, "tracked")
    os.makedirs(rdir)
    rc, text = run_signalled(trackd, ["--input", clip, "--objects", tracked_objects(tmp),
                                      "--rewind", f"{N_S}s", "--rewind-dir", rdir], out,
                             os.path.join(tmp, "tracked.log"))
    saved = glob.glob(rdir + "/rewind-*")
    check(rc == 0 and len(saved) == 1, f"tracked: SIGUSR1 saves one bundle ({rc}, {saved})")
    if not saved:
        return
    state = os.path.join(saved[0], "state.bin")
    check(os.path.exists(state), "tracked: the save holds state.bin")
    b = read_bundle.Bundle(saved[0])
    first = next(iter(b.results()), {})
    insts = [i for o in first.get("objects", []) for i in o.get("instances", [])]
    check(b.index and b.index[0]["seq"] > 0 and insts and first.get("markers"),
          f"tracked: it starts mid-run with instances and markers "
          f"({len(insts)} instances, {len(first.get('markers', []))} markers)")
    # The live run resolved --mode auto to roi (cpu); the manifest says so
    # and the replays, cpu-ref's too (whose auto would be full), follow it.
    check(b.manifest.get("track_mode") == "roi", "tracked: the manifest names the mode, roi")
    check_window(trackd, saved[0], out, "tracked", trigger="signal")
    bare = os.path.join(tmp, "tracked-no-state")
    shutil.copytree(saved[0], bare)
    os.unlink(os.path.join(bare, "state.bin"))
    r = run(trackd, ["--replay", bare, "--verify", "--fast", "--no-server"])
    check(r.returncode != 0 and "DIFFERENT" in r.stdout and "starts mid-run" in r.stdout,
          f"tracked: without state.bin the replay differs and says why ({r.returncode})")
    # Header: 8 bytes magic, 4 version, 8 seq; then the tracker: 4 tag, 4
    # layout, 4 objects, 8 next id, 8 frames, and per object 4 instances.
    damaged_state(trackd, tmp, saved[0], "cut short", lambda d: d[:len(d) // 2], None)
    damaged_state(trackd, tmp, saved[0], "wrong magic", lambda d: b"X" + d[1:], 0)
    damaged_state(trackd, tmp, saved[0], "instance count",
                  lambda d: d[:48] + (1000).to_bytes(4, "little") + d[52:], 48)


def without_light(data):
    """state.bin as version 1 wrote it: the version word 1, no light
    section (its tag LGHT starts it, after the tracker's and markers')."""
    at = data.rfind(b"LGHT")
    return None if at < 0 else data[:8] + (1).to_bytes(4, "little") + data[12:at]


def by_light(trackd, tmp):
    clip = os.path.join(tmp, "light.mkv")
    subprocess.run([sys.executable, os.path.join(HERE, "light_scene.py"), clip, "--frames", "150"],
                   check=True)
    objs = json.load(open(clip + ".objects.json"))
    truth = json.load(open(clip + ".truth.json"))
    objs["illumination"] = {"reference": "patch", "rect": truth["card"]}
    for d in objs["objects"]:
        d["adapt"] = {}
    path = os.path.join(tmp, "light.json")
    json.dump(objs, open(path, "w"))
    out = os.path.join(tmp, "light.ndjson")
    rdir = os.path.join(tmp, "light")
    os.makedirs(rdir)
    rc, text = run_signalled(trackd, ["--input", clip, "--objects", path, "--rewind", f"{N_S}s",
                                      "--rewind-dir", rdir], out, os.path.join(tmp, "light.log"))
    saved = glob.glob(rdir + "/rewind-*")
    check(rc == 0 and len(saved) == 1, f"light: SIGUSR1 saves one bundle ({rc}, {saved})")
    if not saved:
        return
    b = read_bundle.Bundle(saved[0])
    first = next(iter(b.results()), {})
    taught = {d["name"]: (d["lo"], d["hi"]) for d in objs["objects"]}
    moved = [o["name"] for o in first.get("objects", [])
             if "range" in o and (o["range"]["lo"], o["range"]["hi"]) != taught[o["name"]]]
    check(b.index and b.index[0]["seq"] > 0 and moved,
          f"light: it starts mid-run with boxes moved from the taught ones ({moved})")
    check_window(trackd, saved[0], out, "light", trigger="signal")
    old = os.path.join(tmp, "light-v1")
    shutil.copytree(saved[0], old)
    state = os.path.join(old, "state.bin")
    cut = without_light(open(state, "rb").read())
    check(cut is not None, "light: state.bin has a light section")
    if cut is None:
        return
    open(state, "wb").write(cut)
    r = run(trackd, ["--replay", old, "--verify", "--fast", "--no-server"])
    check(r.returncode == 1 and "DIFFERENT" in r.stdout and "state.bin" not in r.stderr,
          f"light: a version 1 state.bin (no light section) loads, and the replay differs "
          f"({r.returncode}: {r.stdout.strip()[-200:]} {r.stderr.strip()[-200:]})")


def by_disk(trackd, tmp):
    mnt = os.path.join(tmp, "mnt")
    # 2 s of 160x120 RGB is 3.5 MB: a 1 MB disk fills during the save.
    failing_save(trackd, tmp, mnt, "size=1m", 120, "full disk", "No space left on device")
    failing_save(trackd, tmp, mnt, "size=1m,ro", 120, "read-only", "Read-only file system")


SECTIONS = {"request": by_request, "signal": by_signal, "lost": by_lost, "health": by_health,
            "tracked": by_tracked, "disk": by_disk, "light": by_light}


def main():
    trackd = sys.argv[1]
    names = sys.argv[2:] or [n for n in SECTIONS if n != "light"]
    tmp = tempfile.mkdtemp(prefix="trk-rewind-")
    try:
        for name in names:
            SECTIONS[name](trackd, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        sys.exit(f"{len(FAILS)} check(s) failed")
    print("all rewind checks passed")


if __name__ == "__main__":
    main()
