#!/usr/bin/python3
"""Integration: the replay's transport (the page's bundle view; PROTOCOL.md
"Replay", docs/RECORDING.md "The page's bundle view") with the real daemon
and a real WebSocket client, on bundles recorded from the demo here.

  1. `trackd --replay B --paused`: starts paused at frame 0; play moves on,
     pause stops (/healthz says "ok; replay paused", no stall); seek shows that frame with its recorded result (no
     difference); step -1 / +1 move one frame; bad requests (a seek past the
     end or before 0, a step before frame 0, a run with from > to, a delta
     of 2, missing fields) get an error and the connection stays;
  2. a re-run of frames 10..40 without edits: 31 compared, 0 differ; then
     update_object raises red's min_mass to the median of its recorded
     masses in that range: the re-run's differing count is exactly the
     frames whose recorded red mass is below it, the first one named, and
     "objects" says "edited";
  3. tracked objects ("track": true, roi mode): after a seek to an unplayed
     frame (the tracker starts over there), a re-run of 30..50 starts from
     the state kept at frame 0 and is identical (0 differ);
  4. FFV1 storage: seeks forward and back decode the right frames (0
     differ on a re-run after seeking back and forth);
  5. the end: with --paused the replay pauses at its last frame
     ("at_end") instead of ending, and play from there starts again at 0;
  6. copy storage (an MJPEG clip of the demo bundle's frames, made by the
     ffmpeg command): a file by reference and an MJPEG camera's frames.mjpeg
     (copy_bundle.py) seek forward and back to the recorded results, and
     re-run identically; a JPEG overwritten while the replay plays: a seek
     to it pauses with the error naming frames.mjpeg and the byte, the next
     one still reads; an H.264 clip by reference (B-frames, a key frame
     every 12: a seek back starts at the key frame before its target) seeks
     and re-runs identically too; the referenced file cut while the replay plays:
     a seek past the cut pauses with the error naming the file, the daemon
     stays, and a seek back before the cut reads the file again (from the
     key frame at or before it), with no error.
  7. ranges that follow the light (light_scene.py's clip recorded with
     "illumination" and "adapt" on, LIGHT_N frames): after a first pass
     (a run of every frame), a seek back, a step back and a re-run of a
     range starting at its own kept state give the recorded results: the
     kept states carry the light's (gains, drifts, boxes), so a jump does
     not take the adaptation of the frame processed before it.
`test_bundle_view.py TRACKD light` runs section 7 alone (ctest
bundle_view_light); without it, 1..6.
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile

import websockets

from copy_bundle import encode_clip, mjpeg_camera_bundle, mjpeg_clip
from daemon_proc import http_get, start_trackd, stop_trackd

FAILS = []
N = 90


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def record(trackd, bundle, extra=()):
    r = subprocess.run([trackd, "--size", "320x240", "--fps", "30", "--frames", str(N),
                        "--record", bundle, "--fast", "--no-server", *extra],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"recording failed ({r.returncode}): {r.stderr[-800:]}")


def recorded_results(bundle):
    with open(os.path.join(bundle, "results.ndjson")) as f:
        return [json.loads(line) for line in f]


class Client:
    """One WebSocket connection: requests with ids, the replay messages."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 1
        self.frames = {}   # seq -> frame message
        # Messages read since the last request while waiting for another:
        # a reply and the broadcasts it caused may come in either order.
        self.backlog = []

    async def recv(self, pred, timeout=20):
        for k, j in enumerate(self.backlog):
            if pred(j):
                del self.backlog[:k + 1]
                return j
        self.backlog.clear()
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            left = end - loop.time()
            if left <= 0:
                raise TimeoutError("no such message in time")
            m = await asyncio.wait_for(self.ws.recv(), left)
            if not isinstance(m, str):
                continue
            j = json.loads(m)
            if j.get("type") == "frame":
                self.frames[j["seq"]] = j
                if len(self.frames) > 400:
                    self.frames.pop(min(self.frames))
            if pred(j):
                return j
            self.backlog.append(j)
            del self.backlog[:-500]

    async def ask(self, msg):
        """The reply (ack or error) to msg; what comes meanwhile is kept."""
        i = self.next_id
        self.next_id += 1
        self.backlog.clear()
        await self.ws.send(json.dumps({**msg, "id": i}))
        kept = []

        def reply(j):
            if j.get("id") == i and j.get("type") in ("ack", "error"):
                return True
            kept.append(j)
            return False
        r = await self.recv(reply)
        self.backlog = kept
        return r

    async def replay(self, pred, timeout=20):
        return await self.recv(lambda j: j.get("type") == "replay" and pred(j), timeout)

    async def run(self, frm, to):
        a = await self.ask({"type": "replay_run", "from": frm, "to": to})
        if a["type"] != "ack":
            return a
        self.last = await self.replay(lambda j: j["run"] and j["run"]["from"] == frm and
                                      j["run"]["to"] == to and j["run"]["done"], 60)
        return self.last["run"]


async def transport(port, bundle):
    res = recorded_results(bundle)
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        first = await c.replay(lambda j: True)
        check(first["frame"] == 0 and first["paused"] and first["frames"] == N and
              first["bundle"] == os.path.basename(bundle),
              f"--paused: starts paused at frame 0 of {N} ({first['bundle']})")

        # Play moves on, pause stops it.
        a = await c.ask({"type": "replay_play"})
        check(a["type"] == "ack", "replay_play acked")
        m = await c.replay(lambda j: not j["paused"] and j["frame"] >= 3)
        a = await c.ask({"type": "replay_pause"})
        check(a["type"] == "ack", "replay_pause acked")
        m = await c.replay(lambda j: j["paused"])
        stopped_at = m["frame"]
        try:
            later = await c.replay(lambda j: j["frame"] != stopped_at, 1.5)
        except (TimeoutError, asyncio.TimeoutError):
            later = None
        check(later is None, f"paused at frame {stopped_at}: no frame after it for 1.5 s")
        await asyncio.sleep(2.5)   # past /healthz's stall limit (2 s)
        st, body = http_get(port, "/healthz")
        check(st == 200 and b"replay paused" in body, f"/healthz while paused: {st} {body!r}")

        # Seek: that frame, its result the recorded one.
        a = await c.ask({"type": "replay_seek", "frame": 50})
        check(a["type"] == "ack" and a["frame"] == 50, "replay_seek 50 acked with its frame")
        m = await c.replay(lambda j: j["frame"] == 50)
        f = c.frames.get(m["seq"])
        check(m["recorded_seq"] == 50 and m["recorded"] and m["recorded"]["seq"] == 50,
              "the replay message of frame 50 carries its recorded result")
        check(f is not None and m["differs"] is None and
              [o.get("cx") for o in f["objects"]] == [o.get("cx") for o in res[50]["objects"]],
              "frame 50's result now is the recorded one")
        check(abs(m["t"] - (res[50]["pts"] - res[0]["pts"])) < 1e-3, "its time is the recorded pts")
        for d, want in ((-1, 49), (1, 50)):
            a = await c.ask({"type": "replay_step", "delta": d})
            m = await c.replay(lambda j: j["frame"] == want)
            check(a["type"] == "ack" and m["paused"], f"replay_step {d:+d}: frame {want}")

        # Bad requests: an error each, the connection stays.
        bad = [({"type": "replay_seek", "frame": N}, "out_of_range"),
               ({"type": "replay_seek", "frame": -1}, "out_of_range"),
               ({"type": "replay_seek"}, "bad_field"),
               ({"type": "replay_seek", "frame": "3"}, "bad_field"),
               ({"type": "replay_step", "delta": 2}, "out_of_range"),
               ({"type": "replay_run", "from": 40, "to": 10}, "out_of_range"),
               ({"type": "replay_run", "from": 0, "to": N}, "out_of_range"),
               ({"type": "replay_run", "from": 0}, "bad_field")]
        for msg, code in bad:
            a = await c.ask(msg)
            check(a["type"] == "error" and a["code"] == code,
                  f"{json.dumps(msg)}: error {code} ({a.get('message')})")
        await c.ask({"type": "replay_seek", "frame": 0})
        await c.replay(lambda j: j["frame"] == 0)
        a = await c.ask({"type": "replay_step", "delta": -1})
        check(a["type"] == "error" and a["code"] == "out_of_range",
              f"a step before frame 0: out_of_range ({a.get('message')})")
        a = await c.ask({"type": "replay_seek", "frame": 5})
        check(a["type"] == "ack", "the connection stays after the errors")

        # A re-run without edits.
        run = await c.run(10, 40)
        check(run["compared"] == 31 and run["differ"] == 0 and run["first"] is None,
              f"re-run 10..40 without edits: {run['compared']} compared, {run['differ']} differ")

        # An edit: red's min_mass at the median of its recorded masses there.
        masses = sorted(r["objects"][0]["mass"] for r in res[10:41])
        thr = masses[len(masses) // 2]
        below = [k for k in range(10, 41) if res[k]["objects"][0]["mass"] < thr]
        a = await c.ask({"type": "update_object", "name": "red", "changes": {"min_mass": thr}})
        check(a["type"] == "ack", f"update_object red min_mass {thr}")
        run = await c.run(10, 40)
        check(0 < len(below) < 31, f"{len(below)} recorded frames have red below {thr}")
        check(run["compared"] == 31 and run["differ"] == len(below),
              f"re-run after the edit: {run['differ']} differ, {len(below)} expected")
        check(run["first"] is not None and run["first"]["frame"] == below[0] and
              "objects[0].found" in run["first"]["what"],
              f"the first difference: {run['first']}")
        check(c.last["objects"] == "edited", "the replay message says the set is edited")


async def tracked(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        await c.ask({"type": "replay_seek", "frame": 70})   # never played: starts over
        m = await c.replay(lambda j: j["frame"] == 70)
        # What the kept states are for: without its history the tracker's
        # result there is not the recorded one.
        check(m["differs"] is not None,
              f"tracked: frame 70 reached without its state differs ({m['differs']})")
        run = await c.run(30, 50)
        check(run["differ"] == 0 and run["compared"] == 21 and run["start"] == 0,
              f"tracked: re-run 30..50 after a seek: {run['differ']} differ, from the state "
              f"at frame {run['start']} ({run['first']})")
        run = await c.run(40, 60)
        check(run["differ"] == 0 and run["start"] >= 30,
              f"tracked: again 40..60: {run['differ']} differ, from frame {run['start']}")


async def at_end(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        await c.ask({"type": "replay_seek", "frame": N - 3})
        await c.replay(lambda j: j["frame"] == N - 3)
        await c.ask({"type": "replay_play"})
        m = await c.replay(lambda j: j.get("at_end"))
        check(m["frame"] == N - 1 and m["paused"], "--paused: the end pauses at the last frame")
        a = await c.ask({"type": "replay_play"})
        check(a["type"] == "ack" and a["frame"] == 0, "play at the end starts again at frame 0")
        await c.replay(lambda j: j["frame"] == 0)


async def seeks(port, what):
    """Seeks forward and back, then a re-run: the recorded results (FFV1
    and copy bundles)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        for k in (60, 20, 21, 80, 3):
            await c.ask({"type": "replay_seek", "frame": k})
            m = await c.replay(lambda j: j["frame"] == k)
            check(m["differs"] is None and m["error"] is None,
                  f"{what}: seek to {k}: the recorded result ({m['differs']}, {m['error']})")
        run = await c.run(40, 70)
        check(run["differ"] == 0 and run["compared"] == 31, f"{what}: re-run 40..70: {run}")


async def input_cut(port, clip):
    """The referenced file cut while the replay plays."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        await c.ask({"type": "replay_seek", "frame": 30})
        m = await c.replay(lambda j: j["frame"] == 30)
        check(m["error"] is None and m["differs"] is None, "copy input: frame 30 before the cut")
        data = open(clip, "rb").read()
        with open(clip, "r+b") as f:
            f.truncate(len(data) // 3)
        a = await c.ask({"type": "replay_seek", "frame": 85})
        m = await c.replay(lambda j: j.get("error"))
        check(a["type"] == "ack" and m["paused"] and os.path.realpath(clip) in m["error"]
              and m["frame"] != 85,
              f"copy input cut: a seek past the cut pauses, the error names the file "
              f"({m['error']})")
        a = await c.ask({"type": "replay_seek", "frame": 10})
        m = await c.replay(lambda j: j["frame"] == 10)
        check(a["type"] == "ack" and m["error"] is None and m["differs"] is None,
              f"copy input cut: a seek back before the cut reads frame 10 again ({m['error']})")


async def jpeg_damaged(port, bundle):
    """A JPEG of frames.mjpeg overwritten while the replay plays."""
    idx = [json.loads(line) for line in open(os.path.join(bundle, "index.ndjson"))]
    e = idx[50]
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        with open(os.path.join(bundle, "frames.mjpeg"), "r+b") as f:
            f.seek(e["offset"] + 2)
            f.write(b"\x00" * (e["packet_size"] - 2))
        a = await c.ask({"type": "replay_seek", "frame": 50})
        m = await c.replay(lambda j: j.get("error"))
        check(a["type"] == "ack" and m["paused"] and m["frame"] != 50 and
              f"frames.mjpeg at byte {e['offset']}" in m["error"],
              f"copy mjpeg: a JPEG overwritten: the seek to it pauses with the error ({m['error']})")
        await c.ask({"type": "replay_seek", "frame": 51})
        m = await c.replay(lambda j: j["frame"] == 51)
        check(m["error"] is None and m["differs"] is None, "copy mjpeg: the next JPEG still reads")


def copy_bundles(trackd, plain, tmp):
    """The demo bundle's frames as an MJPEG clip, recorded by reference and
    as an MJPEG camera's frames.mjpeg."""
    idx = [json.loads(line) for line in open(os.path.join(plain, "index.ndjson"))]
    raw = open(os.path.join(plain, "frames.raw"), "rb").read()
    w, h = idx[0]["width"], idx[0]["height"]
    check(all(e["format"] == "rgb24" for e in idx), "the demo bundle's frames are rgb24")
    clip = os.path.join(tmp, "clip.avi")
    check(mjpeg_clip([raw[e["offset"]:e["offset"] + e["size"]] for e in idx], w, h, clip, 30),
          "ffmpeg made the MJPEG clip")
    objs = os.path.join(plain, "objects", "0001.json")
    common = ["--input", clip, "--objects", objs, "--fast", "--no-server", "--record"]
    ref, rawb = os.path.join(tmp, "copy-ref"), os.path.join(tmp, "clip-raw")
    for args in ([ref, "--record-storage", "copy"], [rawb]):
        r = subprocess.run([trackd, *common, *args], capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, f"recorded the clip {args[1:]} ({r.stderr[-300:]})")
    lines = [json.loads(line) for line in open(os.path.join(ref, "index.ndjson"))]
    check(len(lines) == N and all(e.get("copy") == "input" for e in lines),
          f"the by-reference bundle names {N} frames of the clip")
    with_daemon(trackd, ref, tmp, "copy-input", lambda port: seeks(port, "copy input"))
    # An H.264 clip (B-frames, a key frame every 12) by reference: a seek
    # starts at the key frame before its target, the frames as recorded.
    h264 = os.path.join(tmp, "clip.mp4")
    check(encode_clip([raw[e["offset"]:e["offset"] + e["size"]] for e in idx], w, h, h264, 30,
                      ["-c:v", "libx264", "-preset", "veryfast", "-bf", "3", "-g", "12",
                       "-pix_fmt", "yuv420p"]), "ffmpeg made the H.264 clip")
    ref264 = os.path.join(tmp, "copy-ref-h264")
    r = subprocess.run([trackd, "--input", h264, "--objects", objs, "--fast", "--no-server",
                        "--record", ref264, "--record-storage", "copy"],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"recorded the H.264 clip by reference ({r.stderr[-300:]})")
    with_daemon(trackd, ref264, tmp, "copy-input-h264", lambda port: seeks(port, "copy H.264"))
    cam = os.path.join(tmp, "copy-mjpeg")
    mjpeg_camera_bundle(rawb, clip, cam)
    with_daemon(trackd, cam, tmp, "copy-mjpeg", lambda port: seeks(port, "copy mjpeg"))
    with_daemon(trackd, cam, tmp, "copy-jpeg-damaged", lambda port: jpeg_damaged(port, cam))
    with_daemon(trackd, ref, tmp, "copy-cut", lambda port: input_cut(port, clip))


LIGHT_N = 120


def light_bundle(trackd, tmp):
    """light_scene.py's clip recorded with illumination on its grey card
    and adapt on every object: the bundle's path."""
    here = os.path.dirname(os.path.abspath(__file__))
    clip = os.path.join(tmp, "light.mkv")
    subprocess.run([sys.executable, os.path.join(here, "light_scene.py"), clip, "--frames",
                    str(LIGHT_N)], check=True)
    objs = json.load(open(clip + ".objects.json"))
    objs["illumination"] = {"reference": "patch",
                            "rect": json.load(open(clip + ".truth.json"))["card"]}
    for d in objs["objects"]:
        d["adapt"] = {}
    path = os.path.join(tmp, "light.json")
    json.dump(objs, open(path, "w"))
    bundle = os.path.join(tmp, "lit")
    r = subprocess.run([trackd, "--input", clip, "--objects", path, "--record", bundle, "--fast",
                        "--no-server"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"recording failed ({r.returncode}): {r.stderr[-800:]}")
    return bundle


async def lit(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        await c.replay(lambda j: True)
        run = await c.run(0, LIGHT_N - 1)
        check(run["differ"] == 0 and run["compared"] == LIGHT_N,
              f"light: the first pass: {run['compared']} compared, {run['differ']} differ")
        for k, how in ((70, {"type": "replay_seek", "frame": 70}),
                       (69, {"type": "replay_step", "delta": -1})):
            await c.ask(how)
            m = await c.replay(lambda j: j["frame"] == k)
            check(m["differs"] is None and m["error"] is None,
                  f"light: {how['type']} to {k}: the recorded result ({m['differs']})")
        run = await c.run(40, 60)
        check(run["differ"] == 0 and run["compared"] == 21 and run["start"] == 40,
              f"light: re-run 40..60 from its kept state: {run['differ']} differ, from frame "
              f"{run['start']} ({run['first']})")


def with_daemon(trackd, bundle, tmp, name, fn):
    log = open(os.path.join(tmp, f"{name}.log"), "w")
    p = None
    try:
        p, port = start_trackd(trackd, ["--replay", bundle, "--paused"], log)
        asyncio.run(fn(port))
    except Exception as e:  # noqa: BLE001 - reported as a failure with the log
        import traceback
        traceback.print_exc()
        check(False, f"{name}: {type(e).__name__}: {e}")
    finally:
        stop_trackd(p)
        log.close()
    text = open(log.name).read()
    # Under the ASan/UBSan build a report makes this fail too.
    check(p is not None and p.returncode == 0 and
          not any(m in text for m in ("Sanitizer", "runtime error:")),
          f"{name}: trackd exits 0, no sanitizer report ({p and p.returncode})")
    if FAILS:
        print(text[-3000:])


def main():
    trackd = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="trackd-bundleview-")
    if sys.argv[2:] == ["light"]:
        try:
            with_daemon(trackd, light_bundle(trackd, tmp), tmp, "light", lit)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"{len(FAILS)} failure(s)" if FAILS else "all ok")
        sys.exit(1 if FAILS else 0)
    try:
        plain = os.path.join(tmp, "plain")
        record(trackd, plain)
        with_daemon(trackd, plain, tmp, "transport", lambda port: transport(port, plain))
        with_daemon(trackd, plain, tmp, "end", at_end)

        objs = json.load(open(os.path.join(plain, "objects", "0001.json")))
        for o in objs["objects"]:
            o["track"] = True
            o["blobs"] = 1
        tracked_objs = os.path.join(tmp, "tracked.json")
        json.dump(objs, open(tracked_objs, "w"))
        tb = os.path.join(tmp, "tracked")
        record(trackd, tb, ["--objects", tracked_objs, "--mode", "roi"])
        passes = {json.loads(line)["pass"] for line in open(os.path.join(tb, "results.ndjson"))}
        check("roi" in passes, f"the tracked recording used roi passes ({sorted(passes)})")
        with_daemon(trackd, tb, tmp, "tracked", tracked)

        fb = os.path.join(tmp, "ffv1")
        record(trackd, fb, ["--record-storage", "ffv1"])
        with_daemon(trackd, fb, tmp, "ffv1", lambda port: seeks(port, "ffv1"))

        copy_bundles(trackd, plain, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failure(s)" if FAILS else "all ok")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
