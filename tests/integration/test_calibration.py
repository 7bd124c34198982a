#!/usr/bin/python3
"""Integration: world coordinates (the objects file's "calibration") on a
clip with known positions, and the calibration through the control protocol.

The clip (ffv1 bgr0, lossless) shows red and green disks moving over a gray
background; every pixel is as drawn, so each centroid trackd reports is the
exact mean of a disk's pixels, computed here too. The scene is a floor seen
in perspective: H_TRUE (pixel -> world, cm) has its horizon at y = 30, inside
the frame. The calibration gives 4 point pairs: the corners of a 100 x 140 cm
rectangle on the floor and their pixels by H_TRUE's inverse, so the solved
map is H_TRUE and the expected wx, wy are H_TRUE(centroid).

1. NDJSON (--fast): every centroid (aggregate and blob) of a disk below the
   horizon has wx, wy within half a step of the last decimal (plus 1e-9
   relative) of H_TRUE's point, written with exactly the decimals the rule
   gives (OBJECTS.md: 1/100 pixel at the calibration points' centre); a
   disk above the horizon has wx, wy null while cx, cy are numbers; an
   object not found has null.
2. Without the calibration the frames carry no wx, wy (same clip).
3. WebSocket (--loop): the hello's calibration has the unit, the points as
   given, the decimals and a homography equal to H_TRUE up to scale;
   set_objects without "calibration" keeps it, with null removes it (frames
   lose wx, wy; the objects broadcast says null), with a new one (the world
   in metres) brings wx, wy in metres back; a bad one is refused with the
   loader's message and changes nothing; save_objects writes it to the file,
   which loads back with the same calibration.
"""
import asyncio
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

import websockets

from daemon_proc import start_trackd, stop_trackd
from ws_rpc import WsClient

W, H, FPS, N = 320, 240, 30, 24
R = 8
RED, GREEN = (225, 35, 35), (35, 190, 60)
# (colour, start centre, velocity px/frame)
BALLS = [
    ("red", RED, (60.0, 200.0), (8.0, -3.5)),
    ("green", GREEN, (250.0, 150.0), (-5.0, 2.0)),
    ("green", GREEN, (40.0, 14.0), (9.0, 0.0)),   # above the horizon (y = 30)
]
H_TRUE = [1.0, 0.0, -160.0, 0.0, 0.0, 100.0, 0.0, 0.01, -0.3]
WORLD = [(-50.0, 60.0), (50.0, 60.0), (50.0, 200.0), (-50.0, 200.0)]
OBJECTS = [
    {"name": "red", "space": "hsv", "lo": [350, 120, 100], "hi": [10, 255, 255]},
    {"name": "green", "space": "rgb", "lo": [0, 140, 10], "hi": [90, 255, 110], "blobs": 2},
    {"name": "blue", "space": "rgb", "lo": [0, 0, 200], "hi": [60, 60, 255]},  # never seen
]
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def apply(h, x, y):
    w = h[6] * x + h[7] * y + h[8]
    return (h[0] * x + h[1] * y + h[2]) / w, (h[3] * x + h[4] * y + h[5]) / w, w


def pixel_of(wx, wy):
    """H_TRUE's inverse for this H_TRUE: wy = 100 / W, W = 0.01 y - 0.3,
    wx = (x - 160) / W."""
    w = 100.0 / wy
    return wx * w + 160.0, (w + 0.3) / 0.01


CALIB = {"unit": "cm", "points": [[*pixel_of(wx, wy), wx, wy] for wx, wy in WORLD]}


def decimals_for(h, pts):
    """OBJECTS.md's rule: the fewest decimals (0..6) whose step is at most
    the world size of 1/100 pixel at the centroid of the calibration pixels."""
    cx = sum(p[0] for p in pts) / len(pts)
    cy = sum(p[1] for p in pts) / len(pts)
    e = 1e-3
    x0, y0, _ = apply(h, cx, cy)
    x1, y1, _ = apply(h, cx + e, cy)
    x2, y2, _ = apply(h, cx, cy + e)
    det = ((x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)) / (e * e)
    px = math.sqrt(abs(det))
    return min(6, max(0, math.ceil(-math.log10(px / 100) - 1e-9)))


def centre(i, f):
    (_, _, (x, y), (vx, vy)) = BALLS[i]
    return x + vx * f, y + vy * f


def disk(cx, cy):
    return [(x, y) for y in range(max(0, int(cy - R) - 1), min(H, int(cy + R) + 2))
            for x in range(max(0, int(cx - R) - 1), min(W, int(cx + R) + 2))
            if (x - cx) ** 2 + (y - cy) ** 2 <= R * R]


def make_clip(path):
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{W}x{H}", "-r", str(FPS), "-i", "-", "-c:v", "ffv1", "-pix_fmt", "bgr0", path]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    for f in range(N):
        buf = bytearray(bytes((110, 110, 110)) * (W * H))
        for i, (_, rgb, _, _) in enumerate(BALLS):
            for x, y in disk(*centre(i, f)):
                buf[(y * W + x) * 3:(y * W + x) * 3 + 3] = bytes(rgb)
        p.stdin.write(bytes(buf))
    p.stdin.close()
    if p.wait() != 0:
        sys.exit("ffmpeg failed")


def write_objects(path, calib):
    doc = {"objects": OBJECTS}
    if calib is not None:
        doc["calibration"] = calib
    with open(path, "w") as fh:
        json.dump(doc, fh)


def expected(pix):
    """(cx, cy) exact and (wx, wy) by H_TRUE, None above the horizon."""
    cx = sum(p[0] for p in pix) / len(pix)
    cy = sum(p[1] for p in pix) / len(pix)
    wx, wy, w = apply(H_TRUE, cx, cy)
    return cx, cy, ((wx, wy) if w > 0 else None)


def check_world(where, got, want, dec, raw):
    """got: a centroid dict (cx, cy, wx, wy); want: (cx, cy, world or None)."""
    cx, cy, world = want
    ok_c = got.get("cx") is not None and abs(got["cx"] - cx) <= 0.005 + 1e-9
    if world is None:
        return ok_c and got.get("wx") is None and got.get("wy") is None and "wx" in got
    tol = 0.5 * 10 ** -dec + 1e-9 * max(abs(world[0]), abs(world[1]), 1)
    return (ok_c and got.get("wx") is not None and abs(got["wx"] - world[0]) <= tol
            and abs(got["wy"] - world[1]) <= tol)


def run_ndjson(trackd, clip, objs):
    out = subprocess.run([trackd, "--input", clip, "--objects", objs, "--fast", "--output", "-",
                          "--no-server", "--log-level", "info"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        sys.exit(f"trackd exited {out.returncode}: {out.stderr}")
    lines = out.stdout.splitlines()
    if len(lines) != N:
        sys.exit(f"expected {N} NDJSON lines, got {len(lines)}")
    return lines, out.stderr


def test_ndjson(trackd, clip, d):
    dec = decimals_for(H_TRUE, CALIB["points"])
    objs = os.path.join(d, "calib.json")
    write_objects(objs, CALIB)
    lines, log = run_ndjson(trackd, clip, objs)
    check(f'wx, wy with {dec} decimals' in log and 'world unit "cm"' in log,
          f"the log says the calibration and its decimals ({dec})")
    bad_agg, bad_blob, bad_fmt, above, nulls = [], [], [], 0, 0
    number = re.compile(r'"w[xy]":(-?\d+(?:\.(\d+))?)')
    for f, line in enumerate(lines):
        m = json.loads(line)
        for num in number.finditer(line):
            if len(num.group(2) or "") != dec:
                bad_fmt.append((f, num.group(1)))
        red, green, blue = m["objects"]
        want_red = expected(disk(*centre(0, f)))
        if not check_world("red", red, want_red, dec, line):
            bad_agg.append((f, "red", red, want_red))
        # green: aggregate of two disks, one above the horizon.
        both = disk(*centre(1, f)) + disk(*centre(2, f))
        want_g = expected(both)
        if not check_world("green", green, want_g, dec, line):
            bad_agg.append((f, "green", green, want_g))
        # blobs: equal masses here, so match by position.
        for b in green["blobs"]:
            i = min((1, 2), key=lambda k: math.dist(centre(k, f), (b["cx"], b["cy"])))
            want_b = expected(disk(*centre(i, f)))
            above += want_b[2] is None
            if not check_world("blob", b, want_b, dec, line):
                bad_blob.append((f, b, want_b))
        nulls += blue["cx"] is None and blue["wx"] is None and blue["wy"] is None
    check(not bad_agg, f"aggregate wx, wy = H_TRUE(centroid) within half a step of {dec} "
          f"decimals in all {N} frames (first misses: {bad_agg[:2]})")
    check(not bad_blob, f"blob wx, wy likewise, null above the horizon (first misses: "
          f"{bad_blob[:2]})")
    check(above == N, f"the blob above the horizon was seen in every frame ({above}/{N})")
    check(not bad_fmt, f"every wx, wy has exactly {dec} decimals (first: {bad_fmt[:3]})")
    check(nulls == N, f"an object not found has wx, wy null ({nulls}/{N})")

    plain = os.path.join(d, "plain.json")
    write_objects(plain, None)
    lines2, _ = run_ndjson(trackd, clip, plain)
    check(all('"wx"' not in ln for ln in lines2), "without a calibration: no wx, wy")


class Client(WsClient):
    def __init__(self, ws):
        self.frames, self.broadcasts, self.hello = [], [], None
        super().__init__(ws)

    def on_message(self, j):
        t = j.get("type")
        if t == "hello":
            self.hello = j
        elif t == "frame":
            self.frames.append(j)
            del self.frames[:-20]
        elif t == "objects" and "id" not in j:
            self.broadcasts.append(j)
        else:
            super().on_message(j)

    async def frame_where(self, pred, timeout=5):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for f in list(self.frames):
                if pred(f):
                    return f
            await asyncio.sleep(0.02)
        return None


async def ws_checks(port, objs_path, dec):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Client(ws)
        t0 = time.monotonic()
        while c.hello is None and time.monotonic() - t0 < 5:
            await asyncio.sleep(0.02)
        cal = c.hello and c.hello.get("calibration")
        check(cal is not None and cal["unit"] == "cm" and cal["points"] == CALIB["points"]
              and cal["decimals"] == dec, f"hello.calibration: unit, points as given, decimals "
              f"({cal and {k: cal[k] for k in ('unit', 'decimals', 'rms')}})")
        if cal:
            h = cal["homography"]
            s = H_TRUE[8] / h[8]
            err = max(abs(a * s - b) for a, b in zip(h, H_TRUE))
            check(err < 1e-9, f"hello.calibration.homography = H_TRUE up to scale ({err:.2g})")
        f = await c.frame_where(lambda f: f["objects"][0].get("wx") is not None)
        check(f is not None, "frames carry wx, wy")

        r = await c.req({"type": "set_objects", "objects": OBJECTS})
        check(r and r["type"] == "ack", f"set_objects without calibration: {r}")
        r = await c.req({"type": "get_objects"})
        check(r and r.get("calibration") and r["calibration"]["points"] == CALIB["points"],
              "... keeps the calibration (get_objects)")

        n = len(c.broadcasts)
        r = await c.req({"type": "set_objects", "objects": OBJECTS, "calibration": None})
        check(r and r["type"] == "ack", f"set_objects with calibration null: {r}")
        check(len(c.broadcasts) > n and c.broadcasts[-1]["calibration"] is None,
              "the objects broadcast says calibration null")
        t = time.time() * 1000
        f = await c.frame_where(lambda f: f["wall_ms"] > t + 50)
        check(f is not None and "wx" not in f["objects"][0], "frames lose wx, wy")

        metres = {"unit": "m", "points": [[p[0], p[1], p[2] / 100, p[3] / 100]
                                          for p in CALIB["points"]]}
        r = await c.req({"type": "set_objects", "objects": OBJECTS, "calibration": metres})
        check(r and r["type"] == "ack", f"set_objects with a calibration in metres: {r}")
        t = time.time() * 1000
        f = await c.frame_where(lambda f: f["wall_ms"] > t + 50
                                and f["objects"][0].get("wx") is not None)
        if f:
            red = f["objects"][0]
            wx, wy, _ = apply(H_TRUE, red["cx"], red["cy"])
            # cx, cy are rounded to 0.01 px: allow for that (and the decimals).
            e1 = abs(red["wx"] - wx / 100) + abs(red["wy"] - wy / 100)
            check(e1 < 1e-4, f"wx, wy now in metres ({red['wx']}, {red['wy']} vs "
                  f"{wx / 100:.4f}, {wy / 100:.4f})")
        else:
            check(False, "frames carry wx, wy again")

        bad = {"unit": "m", "points": metres["points"][:3]}
        r = await c.req({"type": "set_objects", "objects": OBJECTS, "calibration": bad})
        check(r and r["type"] == "error" and r["code"] == "invalid_object"
              and "calibration.points has 3 point pairs" in r["message"],
              f"a bad calibration is refused with the loader's message: {r}")
        r = await c.req({"type": "get_objects"})
        check(r and r["calibration"] and r["calibration"]["unit"] == "m",
              "... and changes nothing")

        r = await c.req({"type": "save_objects"})
        check(r and r["type"] == "ack", f"save_objects: {r}")
        with open(objs_path) as fh:
            saved = json.load(fh)
        check(saved.get("calibration") == metres,
              f"the saved file has the calibration as given: {saved.get('calibration')}")
        c.task.cancel()


def main():
    trackd = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        clip = os.path.join(d, "floor.mkv")
        make_clip(clip)
        test_ndjson(trackd, clip, d)

        objs = os.path.join(d, "live.json")
        write_objects(objs, CALIB)
        with open(os.path.join(d, "trackd.log"), "w") as log:
            p, port = start_trackd(trackd, ["--input", clip, "--objects", objs, "--loop"], log)
            try:
                asyncio.run(ws_checks(port, objs, decimals_for(H_TRUE, CALIB["points"])))
            finally:
                stop_trackd(p)
    if FAILS:
        print(f"{len(FAILS)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
