#!/usr/bin/python3
"""Integration: trackd-fuse, two trackd cameras through a real mosquitto.

One scene on a field (mm) is rendered as two clips made here: camera a
sees x from -50 to 1050, camera b from 550 to 1650, with some perspective
(known homographies, pixel -> world), overlapping in between. Clip b's frame
k shows the scene PHASE_MS later than clip a's, and its trackd is started
PHASE_MS later, so the two cameras' frames come in different phases. Two
red balls cross the field in opposite directions (each handed over from
one camera to the other through the overlap); three green balls stand
still: one in the overlap, one seen by a only, one by b only. Each trackd
(--input CLIP --name a|b --mqtt ...) has the calibration of its camera;
trackd-fuse subscribes to both through the broker.

Run 1, both cameras as they are:
  - in every world message both cameras contributed to, every ball is found
    once: 2 red, 3 green objects, none twice (the overlap merges);
  - each red ball keeps one global id from one end of the field to the
    other, and was seen by a alone, by both, and by b alone on its way;
  - the standing balls' world error is within what the pixel error allows:
    trackd's centroid of the drawn disk is off its true centre by e_px
    (computed here from the same raster) plus 0.005 px (cx, cy rounding);
    the world error of one camera is at most sigma_max(J) (e_px + 0.005) +
    half a step of the printed decimals, J the homography's Jacobian at the
    point (world mm per pixel); a merged position is a weighted mean of the
    cameras' estimates, so within the largest of their bounds.
Run 2, camera b behind a proxy that delays its broker traffic by LAG_MS (3
frames), and camera a killed (kill -9) mid-run:
  - b is reported late (in "late", its behind_ms at least 2 frames) in most
    world messages while a runs, and the fuser does not wait for it: the
    median of sent_ms - wall_ms stays under the lag less a frame (waiting for
    b's frame of the same instant would take the whole lag);
  - the broker's last will marks a offline: the world messages list it in
    "offline", b's objects go on flowing with their global ids, and the
    fuser's log says both.
Moving balls are not checked for world accuracy: a paced file's frame is
released late on a busy machine while its pixels show the scene on time,
so their error there depends on the machine's load, not on the fuser.
"""
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from mqtt_proc import Broker, Sub, wait_for
from daemon_proc import free_port

TRACKD, FUSE = sys.argv[1], sys.argv[2]
W, H, FPS = 320, 240, 30
N = 210  # 7 s
PHASE_MS = 15.0
LAG_MS = 100.0
R = 8  # px
GATE = 60.0  # mm
FAILS = []
CAMS = {
    "a": [(0, 0, -50, 0), (W, 0, 1050, 0), (W, H, 1100, 800), (0, H, -100, 800)],
    "b": [(0, 0, 550, 0), (W, 0, 1650, 0), (W, H, 1700, 800), (0, H, 500, 800)],
}
GREEN = [(800.0, 420.0), (250.0, 200.0), (1350.0, 640.0)]  # overlap, a only, b only
RED_RGB, GREEN_RGB = (225, 35, 35), (35, 190, 60)


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def homography(pairs):
    """H (3x3) with world ~ H (px, py, 1), exact for the 4 pairs."""
    a = []
    for px, py, wx, wy in pairs:
        a.append([px, py, 1, 0, 0, 0, -wx * px, -wx * py, -wx])
        a.append([0, 0, 0, px, py, 1, -wy * px, -wy * py, -wy])
    _, _, vt = np.linalg.svd(np.array(a, dtype=float))
    h = vt[-1].reshape(3, 3)
    return h / h[2, 2]


def apply(h, x, y):
    v = h @ np.array([x, y, 1.0])
    return v[0] / v[2], v[1] / v[2]


def red_world(k, t_s):
    """Red ball k at scene time t_s: a left to right along y = 300, b right
    to left along y = 560, 1400 mm in the clip's length."""
    span = 1400.0 * min(max(t_s / (N / FPS), 0.0), 1.0)
    return (100.0 + span, 300.0) if k == 0 else (1500.0 - span, 560.0)


def disk_mask(cx, cy):
    yy, xx = np.mgrid[0:H, 0:W]
    return (xx - cx) ** 2 + (yy - cy) ** 2 <= R * R


def render(hinv, f, phase_ms):
    t = f / FPS + phase_ms / 1e3
    img = np.empty((H, W, 3), np.uint8)
    img[:] = 100
    img[:, (np.arange(W) // 16) % 2 == 1] = 125
    for k in range(2):
        img[disk_mask(*apply(hinv, *red_world(k, t)))] = RED_RGB
    for g in GREEN:
        img[disk_mask(*apply(hinv, *g))] = GREEN_RGB
    return img.tobytes()


def make_clip(path, hinv, phase_ms):
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{W}x{H}", "-r", str(FPS), "-i", "-", "-c:v", "ffv1", path]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    for f in range(N):
        p.stdin.write(render(hinv, f, phase_ms))
    p.stdin.close()
    if p.wait() != 0:
        sys.exit(f"ffmpeg failed making {path}")


def objects_file(path, pairs):
    objs = {"objects": [
        {"name": "red", "space": "hsv", "lo": [350, 120, 100], "hi": [10, 255, 255],
         "blobs": 4, "min_area": 12, "track": True, "coast_frames": 5},
        {"name": "green", "space": "rgb", "lo": [0, 140, 10], "hi": [90, 255, 110],
         "blobs": 4, "min_area": 12, "track": True, "coast_frames": 5}],
        "calibration": {"unit": "mm", "points": [list(p) for p in pairs]}}
    with open(path, "w") as f:
        json.dump(objs, f)


def bound(h, hinv, wx, wy, decimals):
    """The derived world error bound of one camera for a ball standing at
    (wx, wy), or None when the camera does not see all of it."""
    cx, cy = apply(hinv, wx, wy)
    if not (R + 1 < cx < W - R - 2 and R + 1 < cy < H - R - 2):
        return None
    m = disk_mask(cx, cy)
    yy, xx = np.nonzero(m)
    e_px = math.hypot(xx.mean() - cx, yy.mean() - cy) + 0.005 * math.sqrt(2)
    d = 1e-3
    j = np.array([[(apply(h, cx + d, cy)[i] - apply(h, cx - d, cy)[i]) / (2 * d),
                   (apply(h, cx, cy + d)[i] - apply(h, cx, cy - d)[i]) / (2 * d)]
                  for i in range(2)])
    return np.linalg.norm(j, 2) * e_px + math.sqrt(2) * 0.5 * 10 ** -decimals + 1e-6


class DelayProxy:
    """A TCP proxy on loopback that hands every chunk on, both ways, delay_s
    after it came: a camera whose network lags."""

    def __init__(self, target_port, delay_s):
        self.delay, self.target = delay_s, target_port
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.port = self.srv.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            u = socket.create_connection(("127.0.0.1", self.target))
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src, dst):
        q, cv = [], threading.Condition()

        def writer():
            while True:
                with cv:
                    while not q:
                        cv.wait()
                    due, data = q.pop(0)
                time.sleep(max(0.0, due - time.monotonic()))
                try:
                    if data is None:
                        dst.shutdown(socket.SHUT_WR)
                        return
                    dst.sendall(data)
                except OSError:
                    return

        threading.Thread(target=writer, daemon=True).start()
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            with cv:
                q.append((time.monotonic() + self.delay, data or None))
                cv.notify()
            if not data:
                return

    def close(self):
        self.srv.close()


def worlds(sub, since=0):
    return [json.loads(p) for t, r, p in sub.take("fz/world/frame")][since:]


def start_cam(tmp, cam, url, log):
    return subprocess.Popen([TRACKD, "--input", os.path.join(tmp, f"{cam}.mkv"), "--objects",
                             os.path.join(tmp, f"{cam}.json"), "--name", cam, "--mqtt", url,
                             "--no-server", "--backend", "cpu", "--log-level", "warn"],
                            stdout=subprocess.DEVNULL, stderr=log)


def by_name(w, name):
    return [o for o in w["objects"] if o["name"] == name]


def check_run1(msgs, hs, decimals):
    both = [w for w in msgs[5:] if set(w["cameras"]) == {"a", "b"}]
    check(len(both) > N // 2, f"run 1: {len(both)} world messages from both cameras "
          f"(of {len(msgs)})")
    dup = [w["seq"] for w in both if len(by_name(w, "red")) != 2 or len(by_name(w, "green")) != 3]
    check(not dup, f"run 1: every ball found once in every fused message (not in {dup[:5]})")
    ids = {0: set(), 1: set()}
    views = {0: [], 1: []}
    for w in both:
        for o in by_name(w, "red"):
            k = 0 if o["wy"] < 430 else 1
            ids[k].add(o["id"])
            cams = "+".join(sorted(o["cameras"]))
            if not views[k] or views[k][-1] != cams:
                views[k].append(cams)
    for k, want in ((0, ["a", "a+b", "b"]), (1, ["b", "a+b", "a"])):
        check(len(ids[k]) == 1, f"run 1: red ball {k} kept one global id ({sorted(ids[k])})")
        check(views[k] == want, f"run 1: red ball {k} handed over {want} ({views[k]})")
    for g, (gx, gy) in enumerate(GREEN):
        lim = max(b for b in (bound(h, hinv, gx, gy, decimals) for h, hinv in hs.values())
                  if b is not None)
        errs = [math.hypot(o["wx"] - gx, o["wy"] - gy) for w in both for o in by_name(w, "green")
                if math.hypot(o["wx"] - gx, o["wy"] - gy) < GATE]
        check(len(errs) == len(both) and max(errs) <= lim,
              f"run 1: green ball {g} world error {max(errs or [0]):.4f} mm <= derived bound "
              f"{lim:.4f} mm in all {len(errs)}/{len(both)} messages")
    ov = [o for w in both for o in by_name(w, "green") if abs(o["wx"] - GREEN[0][0]) < GATE]
    check(all(sorted(o["cameras"]) == ["a", "b"] for o in ov),
          "run 1: the overlap's green ball is merged from both cameras")


def check_run2(msgs, t_kill_wall, log_text):
    before = [w for w in msgs if w["sent_ms"] < t_kill_wall and "b" in w["cameras"] and
              "a" in w["cameras"]]
    late = [w for w in before if "b" in w["late"] and "a" not in w["late"]]
    behind = sorted(s["behind_ms"] for w in before for s in w["sources"] if s["camera"] == "b")
    check(len(before) > 20 and len(late) >= 0.8 * len(before),
          f"run 2: b reported late in {len(late)} of {len(before)} messages while a ran")
    check(behind and behind[len(behind) // 2] >= 2e3 / FPS,
          f"run 2: b's median behind_ms {behind[len(behind) // 2] if behind else None} >= 2 frames")
    waits = sorted(w["sent_ms"] - w["wall_ms"] for w in before)
    check(waits and waits[len(waits) // 2] < LAG_MS - 1e3 / FPS,
          f"run 2: not waited for b: median sent_ms - wall_ms "
          f"{waits[len(waits) // 2] if waits else float('nan'):.1f} ms < the lag less a frame, "
          f"{LAG_MS - 1e3 / FPS:.1f} ms (waiting for its frame of the instant would take the lag)")
    after = [w for w in msgs if "a" in w["offline"]]
    check(len(after) > 20 and all(w["cameras"] == ["b"] for w in after),
          f"run 2: after kill -9 of a, {len(after)} world messages list it offline, b alone used")
    check(after and not [s for s in after[-1]["sources"] if s["camera"] == "a" and s["online"]],
          "run 2: the sources show a offline")
    g3 = [o["id"] for w in before + after for o in by_name(w, "green")
          if math.hypot(o["wx"] - GREEN[2][0], o["wy"] - GREEN[2][1]) < GATE]
    check(len(set(g3)) == 1 and len(g3) >= len(before) + len(after),
          f"run 2: b's standing ball flows on with one id through a's death ({set(g3)})")
    check("camera b is late" in log_text and "camera a offline: connection lost" in log_text,
          "run 2: the fuser's log says b is late and a went offline")


def check_usage():
    """Bad command lines: exit 64 with a line that names what is wrong; a
    --listen port that is taken: exit 69, said."""
    for args, says in ((["--gate", "5"], "--mqtt URL is required"),
                       (["--mqtt", "http://x"], "only mqtt:// URLs"),
                       (["--mqtt", "mqtt://h:99999"], "bad port"),
                       (["--mqtt", "mqtt://h/a/#"], "without wildcards"),
                       (["--mqtt", "mqtt://h", "--gate", "-1"], "--gate -1"),
                       (["--mqtt", "mqtt://h", "--window", "x"], "--window x"),
                       (["--mqtt", "mqtt://h", "--name", "a/b"], "--name a/b"),
                       (["--mqtt", "mqtt://h", "--listen", "nowhere"], "--listen nowhere"),
                       (["--mqtt", "mqtt://h", "extra"], "extra: no arguments")):
        r = subprocess.run([FUSE, *args], capture_output=True, text=True, timeout=10)
        check(r.returncode == 64 and says in r.stderr,
              f"usage error {args}: exit 64 saying {says!r} ({r.returncode}: {r.stderr.strip()})")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = subprocess.run([FUSE, "--mqtt", "mqtt://127.0.0.1:1", "--listen",
                            f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=10)
    check(r.returncode == 69 and str(port) in r.stderr,
          f"--listen on a taken port: exit 69, said ({r.returncode}: {r.stderr.strip()[-120:]})")


def main():
    check_usage()
    tmp = tempfile.mkdtemp(prefix="trackd-fuse-")
    hs = {}
    for cam, pairs in CAMS.items():
        h = homography(pairs)
        hs[cam] = (h, np.linalg.inv(h))
        make_clip(os.path.join(tmp, f"{cam}.mkv"), hs[cam][1], PHASE_MS if cam == "b" else 0.0)
        objects_file(os.path.join(tmp, f"{cam}.json"), pairs)
    broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")  # as the README asks
    broker.start()
    flog_path = os.path.join(tmp, "fuse.log")
    flog = open(flog_path, "wb")
    fuse = subprocess.Popen([FUSE, "--mqtt", f"mqtt://127.0.0.1:{broker.port}/fz", "--gate",
                             str(GATE)], stderr=flog)
    sub = Sub(broker.port, ["fz/world/#", "fz/+/config"])
    logs = {c: open(os.path.join(tmp, f"{c}.log"), "wb") for c in CAMS}
    procs = []
    try:
        check(wait_for(lambda: any(json.loads(p)["online"] for t, r, p in
                                   sub.take("fz/world/status")), 10),
              "the fuser's status is online (retained)")
        print("== run 1: two cameras", flush=True)
        url = f"mqtt://127.0.0.1:{broker.port}/fz"
        procs = [start_cam(tmp, "a", url, logs["a"])]
        time.sleep(PHASE_MS / 1e3)
        procs.append(start_cam(tmp, "b", url, logs["b"]))
        for p in procs:
            check(p.wait(60) == 0, "run 1: trackd played its clip and stopped cleanly")
        time.sleep(0.5)
        msgs = worlds(sub)
        decimals = [json.loads(p)["calibration"]["decimals"] for t, r, p in sub.take("fz/")
                    if t.endswith("/config")]
        check(len(decimals) >= 2, f"both cameras' retained config came ({decimals})")
        check_run1(msgs, hs, max(decimals or [0]))

        print("== run 2: b lags, a is killed", flush=True)
        n1 = len(msgs)
        proxy = DelayProxy(broker.port, LAG_MS / 1e3)
        procs = [start_cam(tmp, "a", url, logs["a"])]
        time.sleep(PHASE_MS / 1e3)
        procs.append(start_cam(tmp, "b", f"mqtt://127.0.0.1:{proxy.port}/fz", logs["b"]))
        time.sleep(N / FPS / 2)
        t_kill = time.time() * 1e3
        procs[0].kill()
        procs[0].wait()
        check(procs[1].wait(60) == 0, "run 2: b played its clip to the end")
        time.sleep(0.5)
        proxy.close()
        flog.flush()
        with open(flog_path, errors="replace") as f:
            log_text = f.read()
        check_run2(worlds(sub, n1), t_kill, log_text)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        sub.close()
        fuse.terminate()
        check(fuse.wait(10) == 0, "the fuser stops cleanly on SIGTERM")
        broker.stop()
        if FAILS:
            with open(flog_path, errors="replace") as f:
                print("--- fuse log (last 40 lines)\n" + "".join(f.readlines()[-40:]))
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        sys.exit(f"{len(FAILS)} checks failed")


if __name__ == "__main__":
    main()
