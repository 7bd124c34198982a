#!/usr/bin/python3
"""Integration: --record, --replay and --verify (docs/RECORDING.md) with the
real daemon, a real WebSocket client and examples/read_bundle.py.

  1. the demo recorded with a teach edit mid-run (add_object over the
     WebSocket): the bundle has both object sets, the second tied to the
     first frame whose result names the new object; replay --verify is
     identical on cpu and cpu-ref; a changed recorded result is found
     (exit 1, frame and field named);
  2. a generated file (raw RGB frames through the ffmpeg CLI): the recorded
     pixels are bit-exact the frames made; replay --verify identical on cpu
     and cpu-ref; the same as FFV1 (--record-storage ffv1): its frames are
     the raw bundle's and it replays identically;
  3. a disk that fills (a 2 MB tmpfs): recording stops with a clear error,
     tracking goes on (every frame's result in --output), the bundle replays
     identically up to the failure; a read-only folder (a tmpfs mounted
     read-only): nothing is recorded, the error says why, tracking goes on;
  3b. rotation: --record-max with --record-rotate 2 makes 3+ parts and keeps
     the newest 2, each replaying identically on cpu and cpu-ref with a
     tracked object (state.bin); likewise --record-max-time; a live daemon
     lists the parts kept; a teach edit while rotating lands in the right
     parts; bad values exit 64;
  4. damaged bundles: frames.raw cut short and a broken index line give
     exit 65 naming the file and the offset; no bundle gives exit 66.
Sections 3 need root (mount); without it they are reported and skipped.
"""
import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import websockets

from daemon_proc import start_trackd, stop_trackd

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import read_bundle  # noqa: E402

FAILS = []
W, H, N = 96, 64, 40


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def run(trackd, args, timeout=120, cwd=None):
    return subprocess.run([trackd, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd)


def replay_identical(trackd, bundle, backend, what, cwd=None):
    r = run(trackd, ["--replay", bundle, "--verify", "--fast", "--no-server",
                     "--backend", backend], cwd=cwd)
    ok = r.returncode == 0 and " 0 differ: identical" in r.stdout
    check(ok, f"{what}: replay --verify identical on {backend}")
    if not ok:
        print(r.stdout[-1500:], r.stderr[-1500:])


async def teach_mid_run(port, log):
    """Waits for some frames, adds an object, waits for frames naming it."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        seen = 0
        while seen < 10:
            m = await asyncio.wait_for(ws.recv(), 20)
            if isinstance(m, str) and json.loads(m).get("type") == "frame":
                seen += 1
        await ws.send(json.dumps({"type": "add_object", "id": 1, "object": {
            "name": "taught", "space": "rgb", "lo": [200, 0, 0], "hi": [255, 90, 90]}}))
        for _ in range(400):
            m = await asyncio.wait_for(ws.recv(), 20)
            if isinstance(m, str):
                j = json.loads(m)
                if j.get("type") == "frame" and any(o["name"] == "taught" for o in j["objects"]):
                    return True
    return False


def demo_with_teach(trackd, tmp):
    bundle = os.path.join(tmp, "demo")
    with open(os.path.join(tmp, "demo.log"), "w") as log:
        p, port = start_trackd(trackd, ["--size", "320x240", "--fps", "30", "--frames", "150",
                                        "--record", bundle, "--no-preview"], log)
        try:
            taught = asyncio.run(teach_mid_run(port, log))
            p.wait(60)
        finally:
            stop_trackd(p)
    check(taught, "demo: frames after the teach edit carry the new object")
    check(p.returncode == 0, f"demo: trackd exits 0 ({p.returncode})")
    b = read_bundle.Bundle(bundle)
    sets = list(b.object_sets())
    check(len(sets) == 2 and sets[0][0] == 0 and sets[1][0] > 0,
          f"demo: two object sets, the second from a later frame ({[s[0] for s in sets]})")
    results = list(b.results())
    if len(sets) == 2:
        first = sets[1][0]
        named = [r["seq"] for r in results if any(o["name"] == "taught" for o in r["objects"])]
        check(named and named[0] == first and all(s >= first for s in named),
              f"demo: results name the taught object from frame {first} on exactly")
        check("taught" in [o["name"] for o in sets[1][1]["objects"]],
              "demo: the second set holds the taught object")
    check(len(b.index) == 150 and len(results) == 150,
          f"demo: 150 frames and results recorded ({len(b.index)}, {len(results)})")
    check(b.manifest["source"]["kind"] == "demo" and "--record" in b.manifest["command"],
          "demo: the manifest names the source and the command line")
    for backend in ("cpu", "cpu-ref"):
        replay_identical(trackd, bundle, backend, "demo")
    # --objects with --replay: that set throughout, so the results part.
    objs = os.path.join(tmp, "only-red.json")
    with open(objs, "w") as f:
        json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 0, 0],
                                "hi": [255, 80, 80]}]}, f)
    r = run(trackd, ["--replay", bundle, "--objects", objs, "--verify", "--fast", "--no-server"])
    check(r.returncode == 1 and "frame 0 differs" in r.stdout,
          f"demo: --replay with other --objects uses them (verify: differs at frame 0; "
          f"{r.returncode}: {r.stdout.strip()[:160]})")
    # A recorded result changed: --verify names the frame and the field.
    changed = os.path.join(tmp, "demo-changed")
    shutil.copytree(bundle, changed)
    lines = open(os.path.join(changed, "results.ndjson")).read().splitlines()
    j = json.loads(lines[20])
    j["objects"][0]["found"] = not j["objects"][0]["found"]
    lines[20] = json.dumps(j)
    open(os.path.join(changed, "results.ndjson"), "w").write("\n".join(lines) + "\n")
    r = run(trackd, ["--replay", changed, "--verify", "--fast", "--no-server"])
    check(r.returncode == 1 and f"frame {j['seq']} differs: field objects[0].found" in r.stdout,
          f"demo: a changed result gives exit 1 naming frame and field ({r.returncode}: "
          f"{r.stdout.strip()[:200]})")
    return bundle


def frame_bytes(f):
    """Frame f of the clip: a red disk moving right on a gray ramp."""
    buf = bytearray()
    for y in range(H):
        for x in range(W):
            if (x - 10 - f) ** 2 + (y - 30) ** 2 <= 64:
                buf += bytes((230, 30, 30))
            else:
                buf += bytes(((x * 2 + y) & 255,) * 3)
    return bytes(buf)


def file_clip(trackd, tmp):
    clip = os.path.join(tmp, "clip.nut")
    p = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-s", f"{W}x{H}", "-r", "25", "-i", "-", "-c:v", "rawvideo",
                          "-pix_fmt", "rgb24", clip], stdin=subprocess.PIPE)
    frames = [frame_bytes(f) for f in range(N)]
    for fb in frames:
        p.stdin.write(fb)
    p.stdin.close()
    check(p.wait() == 0, "file: ffmpeg made the clip")
    objs = os.path.join(tmp, "objs.json")
    with open(objs, "w") as f:
        json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 0, 0],
                                "hi": [255, 80, 80]}]}, f)
    bundle = os.path.join(tmp, "file")
    r = run(trackd, ["--input", clip, "--objects", objs, "--fast", "--no-server",
                     "--record", bundle])
    check(r.returncode == 0, f"file: recorded ({r.returncode}) {r.stderr[-300:]}")
    b = read_bundle.Bundle(bundle)
    got = [(e, data) for e, data in b.frames()]
    check(len(got) == N and all(e["format"] == "rgb24" for e, _ in got),
          f"file: {N} rgb24 frames recorded ({len(got)})")
    check(all(data == frames[i] for i, (_, data) in enumerate(got)),
          "file: every recorded frame is bit-exact the frame given to ffmpeg")
    check([e["pts"] for e, _ in got] == [round(i / 25, 6) for i in range(len(got))],
          "file: the recorded pts are the clip's")
    src = b.manifest["source"]
    digest = hashlib.sha256(open(clip, "rb").read()).hexdigest()
    check(src["input"] == clip and src.get("input_size") == os.path.getsize(clip)
          and src.get("input_sha256") == digest,
          "file: the manifest names the input with its size and SHA-256")
    # The example's command line: the summary, and a frame as a PPM.
    script = os.path.join(HERE, "..", "..", "examples", "read_bundle.py")
    ppm = os.path.join(tmp, "f7.ppm")
    r = subprocess.run([sys.executable, script, bundle], capture_output=True, text=True)
    check(r.returncode == 0 and f"frames: {N}, seq 0..{N - 1}, rgb24 {W}x{H}" in r.stdout
          and "objects from frame 0: ['red']" in r.stdout and f"results: {N}" in r.stdout,
          f"read_bundle.py summarises the bundle: {r.stdout.strip()}")
    r = subprocess.run([sys.executable, script, bundle, "--ppm", "7", ppm])
    check(r.returncode == 0 and open(ppm, "rb").read() == b"P6\n%d %d\n255\n" % (W, H)
          + frames[7], "read_bundle.py --ppm writes frame 7 exactly")
    for backend in ("cpu", "cpu-ref"):
        replay_identical(trackd, bundle, backend, "file")
    # The same clip stored as FFV1 (--record-storage ffv1): the frames read
    # back are the raw bundle's, byte for byte, and it replays identically.
    lossless = os.path.join(tmp, "file-ffv1")
    r = run(trackd, ["--input", clip, "--objects", objs, "--fast", "--no-server",
                     "--record", lossless, "--record-storage", "ffv1"])
    c = read_bundle.Bundle(lossless)
    check(r.returncode == 0 and c.manifest["version"] == 2
          and c.manifest["frames"]["storage"] == "ffv1"
          and os.path.exists(os.path.join(lossless, "frames-0001.mkv")),
          f"file ffv1: recorded as version 2, frames-0001.mkv ({r.returncode})")
    check([d for _, d in c.frames()] == [d for _, d in got],
          "file ffv1: every frame decodes to the raw bundle's bytes")
    for backend in ("cpu", "cpu-ref"):
        replay_identical(trackd, lossless, backend, "file ffv1")
    cut = os.path.join(tmp, "file-ffv1-cut")
    shutil.copytree(lossless, cut)
    mkv = os.path.join(cut, "frames-0001.mkv")
    os.truncate(mkv, os.path.getsize(mkv) // 2)
    r = run(trackd, ["--replay", cut, "--fast", "--no-server"])
    check(r.returncode == 65 and "frames-0001.mkv: frame" in r.stderr
          and "the file ends before it" in r.stderr and "index.ndjson line" in r.stderr,
          f"file ffv1 cut short: exit 65 naming the file, the frame and the index line "
          f"({r.returncode}: {r.stderr.strip()[-240:]})")
    return bundle


def size_limit(trackd, tmp):
    """--record-max: the recording stops at the limit, tracking goes on."""
    bundle = os.path.join(tmp, "limited")
    out = os.path.join(tmp, "limited.ndjson")
    r = run(trackd, ["--size", "160x120", "--frames", "60", "--fast", "--no-server",
                     "--record", bundle, "--record-max", "1", "--output", out])
    lines = open(out).read().splitlines()
    b = read_bundle.Bundle(bundle)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(bundle) for f in fs)
    check(r.returncode == 0 and len(lines) == 60, f"--record-max: tracking goes on ({len(lines)})")
    check(0 < len(b.index) < 60 and total <= 1_000_000 + 4096,
          f"--record-max 1: {len(b.index)} frames, {total} bytes")
    check("size limit" in (b.manifest.get("end", {}).get("stopped") or ""),
          f"--record-max: the manifest says why it stopped ({b.manifest.get('end')})")
    replay_identical(trackd, bundle, "cpu", "--record-max")


def tracked_objects(tmp):
    """The demo's red ball as a tracked object, so state.bin matters."""
    path = os.path.join(tmp, "tracked.json")
    with open(path, "w") as f:
        json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 10, 10],
                                "hi": [255, 75, 75], "blobs": 4, "track": True}]}, f)
    return path


def parts_replay(trackd, root, what, want, out):
    """The parts left in root: want of them, the newest (their frames the
    last of --output's, without a gap), each a bundle starting mid-run with
    its set and state.bin, replaying identically on cpu and cpu-ref."""
    names = sorted(os.listdir(root))
    check(len(names) == want, f"{what}: {want} parts remain ({names})")
    live = [json.loads(x) for x in open(out).read().splitlines()]
    seqs = []
    for i, name in enumerate(names):
        part = os.path.join(root, name)
        b = read_bundle.Bundle(part)
        end = b.manifest.get("end", {})
        last = i == len(names) - 1
        check(end.get("stopped") is None if last else
              (end.get("stopped") == "rotated" and end.get("next") == names[i + 1]),
              f"{what}: {name}'s end says {'nothing stopped it' if last else 'rotated, next'}"
              f" ({end})")
        results = list(b.results())
        seqs += [x["seq"] for x in b.index]
        check(b.index and [x["seq"] for x in b.index] == [r["seq"] for r in results],
              f"{what}: {name} has each frame's result ({len(b.index)}, {len(results)})")
        check(os.path.exists(os.path.join(part, "state.bin")) and b.index[0]["seq"] > 0,
              f"{what}: {name} starts mid-run (seq {b.index[0]['seq']}) with state.bin")
        insts = [x for o in results[0]["objects"] for x in o.get("instances", [])]
        check(insts and insts[0]["id"] >= 1,
              f"{what}: {name}'s first frame carries a tracked instance ({insts[:1]})")
        for backend in ("cpu", "cpu-ref"):
            replay_identical(trackd, part, backend, f"{what} {name}")
    check(seqs == [x["seq"] for x in live[-len(seqs):]],
          f"{what}: the parts hold the run's last {len(seqs)} frames, in order, none missing")
    return names


def rotation(trackd, tmp):
    """--record-max with --record-rotate 2: 3+ parts made, the newest 2 kept;
    without state.bin a part's tracked instances differ."""
    root = os.path.join(tmp, "rotated")
    out = os.path.join(tmp, "rotated.ndjson")
    # 160x120 rgb24 frames are 57600 bytes: about 17 to a 1 MB part.
    r = run(trackd, ["--size", "160x120", "--frames", "90", "--fast", "--no-server",
                     "--objects", tracked_objects(tmp), "--record", root, "--record-max", "1",
                     "--record-rotate", "2", "--output", out])
    check(r.returncode == 0 and len(open(out).read().splitlines()) == 90,
          f"rotate: tracking goes on, every result in --output ({r.returncode}) "
          f"{r.stderr[-300:]}")
    check(r.stderr.count("deleted the oldest part") >= 1,
          "rotate: 3 or more parts were made, the oldest deleted")
    names = parts_replay(trackd, root, "rotate", 2, out)
    for name in names:
        total = sum(os.path.getsize(os.path.join(dp, f))
                    for dp, _, fs in os.walk(os.path.join(root, name)) for f in fs)
        check(total <= 1_000_000 + 8192, f"rotate: {name} is within 1 MB ({total})")
    bare = os.path.join(tmp, "rotated-no-state")
    shutil.copytree(os.path.join(root, names[0]), bare)
    os.unlink(os.path.join(bare, "state.bin"))
    r = run(trackd, ["--replay", bare, "--verify", "--fast", "--no-server"])
    check(r.returncode != 0 and "DIFFERENT" in r.stdout,
          f"rotate: without state.bin the part replays differently ({r.returncode})")


def duration(trackd, tmp):
    """--record-max-time 1s at 30 fps (the demo's capture times, paced):
    parts of 30 frames; --record-rotate 3 keeps the newest 3; without
    rotation the recording stops at 1 s of frames."""
    root = os.path.join(tmp, "timed")
    out = os.path.join(tmp, "timed.ndjson")
    r = run(trackd, ["--size", "160x120", "--fps", "30", "--frames", "150", "--no-server",
                     "--objects", tracked_objects(tmp), "--record", root,
                     "--record-max-time", "1s", "--record-rotate", "3", "--output", out])
    check(r.returncode == 0, f"max-time: trackd exits 0 ({r.returncode}) {r.stderr[-300:]}")
    names = parts_replay(trackd, root, "max-time", 3, out)
    for name in names[:-1]:
        idx = read_bundle.Bundle(os.path.join(root, name)).index
        span = idx[-1]["t_capture"] - idx[0]["t_capture"]
        nxt = read_bundle.Bundle(os.path.join(root, names[names.index(name) + 1])).index
        check(span < 1.0 <= nxt[0]["t_capture"] - idx[0]["t_capture"],
              f"max-time: {name} holds under 1 s of frames and the next starts past it "
              f"({span:.3f} s, {len(idx)} frames)")
    stopped = os.path.join(tmp, "timed-stop")
    r = run(trackd, ["--size", "160x120", "--fps", "30", "--frames", "60", "--no-server",
                     "--record", stopped, "--record-max-time", "1s"])
    b = read_bundle.Bundle(stopped)
    span = b.index[-1]["t_capture"] - b.index[0]["t_capture"] if b.index else -1
    check(r.returncode == 0 and 0 <= span < 1.0 and len(b.index) < 60 and
          "duration limit" in (b.manifest.get("end", {}).get("stopped") or ""),
          f"max-time without rotation: stops under 1 s ({span:.3f} s, {len(b.index)} frames, "
          f"{b.manifest.get('end')})")
    replay_identical(trackd, stopped, "cpu", "max-time stop")


async def list_bundles(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "list_bundles", "id": 7}))
        for _ in range(1000):
            m = await asyncio.wait_for(ws.recv(), 20)
            if isinstance(m, str) and json.loads(m).get("type") == "bundles":
                return json.loads(m)["bundles"]
    return None


def rotation_listed(trackd, tmp):
    """A live daemon rotating its recording lists the parts kept (the page's
    bundle list), each as a record bundle."""
    root = os.path.join(tmp, "listed")
    with open(os.path.join(tmp, "listed.log"), "w") as log:
        p, port = start_trackd(trackd, ["--size", "160x120", "--fps", "30", "--no-preview",
                                        "--record", root, "--record-max-time", "1s",
                                        "--record-rotate", "2"], log)
        try:
            for _ in range(600):  # until part 3 is made (part 1 then deleted), at most 60 s
                if os.path.isdir(os.path.join(root, "part-0003")) and \
                        not os.path.isdir(os.path.join(root, "part-0001")):
                    break
                if p.poll() is not None:
                    break
                time.sleep(0.1)
            bundles = asyncio.run(list_bundles(port))
        finally:
            stop_trackd(p)
    names = sorted(b["name"] for b in bundles or [])
    nums = [int(n[5:]) for n in names if n.startswith("part-")]
    check(bundles and all(b["kind"] == "record" and b["dir"] == os.path.realpath(
        os.path.join(root, b["name"])) for b in bundles) and len(nums) == len(names) and
          2 <= len(nums) <= 3 and nums == list(range(nums[0], nums[0] + len(nums))) and
          nums[0] >= 2,
          f"rotate: list_bundles names the parts kept as record bundles ({names})")


def rotation_teach(trackd, tmp):
    """A teach edit mid-run while rotating by time (all parts kept): the
    parts after it start with the taught set, the one it falls in has both,
    and every part replays identically."""
    root = os.path.join(tmp, "taught-parts")
    with open(os.path.join(tmp, "taught-parts.log"), "w") as log:
        p, port = start_trackd(trackd, ["--size", "160x120", "--fps", "30", "--frames", "150",
                                        "--no-preview", "--record", root,
                                        "--record-max-time", "1s", "--record-rotate", "100"],
                               log)
        try:
            taught = asyncio.run(teach_mid_run(port, log))
            p.wait(60)
        finally:
            stop_trackd(p)
    check(taught and p.returncode == 0, f"rotate+teach: taught mid-run, exit 0 ({p.returncode})")
    names = sorted(os.listdir(root))
    sets = []
    for name in names:
        part = os.path.join(root, name)
        b = read_bundle.Bundle(part)
        versions = [json.load(open(os.path.join(part, v["file"])))
                    for v in map(json.loads, open(os.path.join(part, "objects.ndjson")))]
        sets.append([sorted(o["name"] for o in v["objects"]) for v in versions])
        replay_identical(trackd, part, "cpu", f"rotate+teach {name}")
    changed = [i for i, v in enumerate(sets) if len(v) == 2]
    check(len(names) >= 3 and len(changed) == 1 and
          all(len(v) == 1 and "taught" not in v[0] for v in sets[:changed[0]]) and
          all(len(v) == 1 and "taught" in v[0] for v in sets[changed[0] + 1:]),
          f"rotate+teach: the sets by part follow the edit ({sets})")


def bad_limits(trackd, tmp):
    """Bad --record-max-time / --record-rotate values: exit 64, said why."""
    d = os.path.join(tmp, "never")
    for args, want in ((["--record-max-time", "0"], "invalid value '0' for --record-max-time"),
                       (["--record-max-time", "-2m"], "invalid value '-2m' for --record-max-time"),
                       (["--record-max-time", "soon"], "invalid value 'soon'"),
                       (["--record-max", "1", "--record-rotate", "-1"],
                        "invalid value '-1' for --record-rotate"),
                       (["--record-max", "1", "--record-rotate", "x"],
                        "invalid value 'x' for --record-rotate"),
                       (["--record-rotate", "2"], "--record-rotate needs --record-max")):
        r = run(trackd, ["--no-server", "--frames", "5", "--record", d, *args])
        check(r.returncode == 64 and want in r.stderr and not os.path.exists(d),
              f"{' '.join(args)}: exit 64, {want!r} ({r.returncode}: {r.stderr.strip()[-200:]})")


def mounted(path, opts):
    os.makedirs(path, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", path],
                          capture_output=True).returncode == 0


def failing_disk(trackd, tmp):
    """A 2 MB tmpfs fills; a read-only one cannot be written at all."""
    mnt = os.path.join(tmp, "small")
    if not mounted(mnt, "size=2m"):
        print("skip: cannot mount a tmpfs (not root): full-disk and read-only cases not run")
        return
    try:
        out = os.path.join(tmp, "full.ndjson")
        bundle = os.path.join(mnt, "b")
        r = run(trackd, ["--size", "320x240", "--frames", "60", "--fast", "--no-server",
                         "--record", bundle, "--output", out])
        lines = open(out).read().splitlines()
        check(r.returncode == 0 and len(lines) == 60,
              f"full disk: tracking goes on, every result in --output ({r.returncode}, "
              f"{len(lines)} lines)")
        check("recording to" in r.stderr and "stopped" in r.stderr
              and "No space left on device" in r.stderr,
              "full disk: the log says recording stopped and why")
        b = read_bundle.Bundle(bundle)
        check(0 < len(b.index) < 60, f"full disk: the bundle holds the frames before ({len(b.index)})")
        replay_identical(trackd, bundle, "cpu", "full disk")
    finally:
        subprocess.run(["umount", mnt])
    # A read-only folder (a tmpfs mounted read-only): nothing can be
    # recorded, tracking and outputs go on, the log says why.
    if not mounted(mnt, "size=1m,ro"):
        return
    try:
        out = os.path.join(tmp, "ro.ndjson")
        r = run(trackd, ["--size", "160x120", "--frames", "30", "--fast", "--no-server",
                         "--record", os.path.join(mnt, "b"), "--output", out])
        lines = open(out).read().splitlines()
        check(r.returncode == 0 and len(lines) == 30,
              f"read-only: tracking goes on ({r.returncode}, {len(lines)} results)")
        check("Read-only file system" in r.stderr and "nothing is recorded" in r.stderr,
              f"read-only: the log says nothing is recorded and why: {r.stderr[-400:]}")
    finally:
        subprocess.run(["umount", mnt])


def damaged(trackd, tmp, good):
    cut = os.path.join(tmp, "cut")
    shutil.copytree(good, cut)
    raw = os.path.join(cut, "frames.raw")
    os.truncate(raw, os.path.getsize(raw) - 100)
    r = run(trackd, ["--replay", cut, "--fast", "--no-server"])
    check(r.returncode == 65 and "frames.raw" in r.stderr and "ends at byte" in r.stderr,
          f"damaged: frames.raw cut short: exit 65 naming file and offset ({r.returncode}: "
          f"{r.stderr.strip()[-200:]})")
    bad = os.path.join(tmp, "bad")
    shutil.copytree(good, bad)
    idx = os.path.join(bad, "index.ndjson")
    lines = open(idx).read().splitlines(True)
    lines[3] = "{not json\n"
    open(idx, "w").write("".join(lines))
    r = run(trackd, ["--replay", bad, "--fast", "--no-server"])
    check(r.returncode == 65 and "index.ndjson:4 (byte" in r.stderr,
          f"damaged: a broken index line: exit 65 naming line and byte ({r.returncode}: "
          f"{r.stderr.strip()[-200:]})")
    r = run(trackd, ["--replay", os.path.join(tmp, "none"), "--fast", "--no-server"])
    check(r.returncode == 66 and "no bundle there" in r.stderr, f"no bundle: exit 66 ({r.returncode})")


def stopped_before_processing(trackd, tmp, good):
    """A run stopped by a signal has captured frames it never processed: the
    closed manifest says so (end.results < end.frames), and --verify leaves
    those last frames out. The same missing line in a bundle whose manifest
    counts every result is a difference."""
    for name, claims_all in (("unprocessed", False), ("lost-line", True)):
        d = os.path.join(tmp, name)
        shutil.copytree(good, d)
        res = os.path.join(d, "results.ndjson")
        lines = open(res).read().splitlines(True)
        open(res, "w").write("".join(lines[:-1]))
        man = os.path.join(d, "manifest.json")
        m = json.load(open(man))
        m["end"]["results"] = m["end"]["frames"] if claims_all else m["end"]["frames"] - 1
        json.dump(m, open(man, "w"))
        r = run(trackd, ["--replay", d, "--verify", "--fast", "--no-server"])
        if claims_all:
            check(r.returncode == 1 and "no recorded result" in r.stdout,
                  f"a results line lost from a complete bundle is a difference ({r.returncode}: "
                  f"{r.stdout.strip()[-200:]})")
        else:
            check(r.returncode == 0 and "1 frames at the end have no recorded result" in r.stdout
                  and " 0 differ: identical" in r.stdout,
                  f"the last frame a stopped run never processed is left out ({r.returncode}: "
                  f"{r.stdout.strip()[-300:]})")


def main():
    trackd = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="trk-record-")
    try:
        demo_with_teach(trackd, tmp)
        good = file_clip(trackd, tmp)
        size_limit(trackd, tmp)
        rotation(trackd, tmp)
        duration(trackd, tmp)
        rotation_listed(trackd, tmp)
        rotation_teach(trackd, tmp)
        bad_limits(trackd, tmp)
        failing_disk(trackd, tmp)
        damaged(trackd, tmp, good)
        stopped_before_processing(trackd, tmp, good)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        sys.exit(f"{len(FAILS)} check(s) failed")
    print("all record checks passed")


if __name__ == "__main__":
    main()
