#!/usr/bin/python3
"""Integration: blob lists (objects with "blobs") on clips generated here.

Three red and two green balls (radius R) move over a gray checkered
background; two of the red balls cross, overlapping for a few frames. The
clips are made at test time (raw RGB frames piped to the ffmpeg CLI) and
`trackd --input CLIP --objects FILE --fast --output -` runs on them with
"blobs": 4 and min_area set. A ball is *apart* in a frame when every other
ball of its colour has its centre at least 2R + GAP away, a gap of GAP
pixels between the disks: more than the one pixel an 8-connected mask
bridges, plus the blur below.

- rgb.mkv (ffv1 bgr0, lossless): every pixel is exactly as drawn, so each
  colour's blob list must equal, field for field, the list a plain flood
  fill here computes from the drawn masks (merged pair included); green
  uses connectivity 4 and red 8.
- x264.mp4 (yuv420p, crf 16) and noisy.mp4 (the same with ffmpeg's noise
  filter on each RGB channel, sigma about 20, and 3x3 specks of the ball
  colours scattered away from the balls): every apart ball is found in every
  frame as exactly one blob, centroid and mass within the tolerances below;
  no blob comes from a speck (min_area 60 is above any speck's footprint);
  lists never exceed K and are ordered by mass; the aggregate fields are
  byte for byte those of the same clip with blobs off.
- Over WebSocket (rgb.mkv, paced, --loop): the hello's objects and limits
  carry the blob keys and frame messages equal the run's NDJSON lines.

Tolerances (4:2:0 clips). Chroma is one sample per 2x2 block, so a ball's
edge is blurred by up to one pixel; the block grid does not move with the
ball, so the error is not symmetric: up to ~0.5 px of centroid bias, and
x264's ringing adds to it. test_file_tracking.py measured 0.42 px worst on
R = 14 disks and allows 1.0 px; the same holds here (R = 11: the edge bias
is a property of the edge, not of the radius; measured 0.65 px worst). Noise flips the
classification of edge pixels at random: with about 2 pi R = 69 edge pixels
each flipping independently (at worst with probability 1/2) at up to R from
the centre, the centroid moves by sqrt(69 / 4) R / (pi R^2) = 0.12 px (one
sigma); 5 sigma gives 0.6 px more: 1.6 px for noisy.mp4 (measured 0.51 px
worst: x264 smooths part of the noise away). Mass: the 1-px
blurred rim is 2 pi R / (pi R^2) = 18% of the disk: 20% (x264) and 25%
(noisy, which also loses interior pixels to the noise tails).
A speck is 3x3 pixels; chroma blur widens its footprint to at most 5x5 =
25 pixels, well below min_area 60; a ball has ~380 pixels, its blurred rim
cannot bring it below 60.

BACKEND selects the backend under test (default cpu, the fast CPU twin, which
is what `auto` picks on a machine without a GPU; TRK_TEST_BLOB_BACKEND=cuda on
the GPU machine). check_other_backend runs `--backend cpu-ref`, the
definition, on the same clip: its lists must be exactly the same.
"""
import asyncio
import json
import math
import os
import random
import subprocess
import sys
import tempfile

import websockets

from daemon_proc import start_trackd, stop_trackd

BACKEND = os.environ.get("TRK_TEST_BLOB_BACKEND", "cpu")

W, H, FPS, N = 320, 240, 30, 40
R = 11
GAP = 4
K = 4
MIN_AREA = 60
RED, GREEN = (225, 35, 35), (35, 190, 60)
# (colour, start centre, velocity px/frame). Red A and B cross in the upper
# band (centres closest near frame 21); the rest keep apart from every other
# ball, of either colour, so no disk ever hides another's pixels except
# within the crossing pair.
BALLS = [
    ("red", RED, (50.0, 60.0), (5.0, 0.2)),
    ("red", RED, (260.0, 66.0), (-5.0, -0.1)),
    ("red", RED, (60.0, 205.0), (3.0, -0.1)),
    ("green", GREEN, (280.0, 120.0), (-4.0, 0.3)),
    ("green", GREEN, (40.0, 165.0), (3.0, 0.0)),
]
OBJECTS = {"objects": [
    {"name": "red", "space": "hsv", "lo": [350, 120, 100], "hi": [10, 255, 255],
     "blobs": K, "min_area": MIN_AREA},
    {"name": "green", "space": "rgb", "lo": [0, 140, 10], "hi": [90, 255, 110],
     "blobs": K, "min_area": MIN_AREA, "connectivity": 4},
]}
NAMES = [o["name"] for o in OBJECTS["objects"]]
SPECKS = 24  # per frame in the noisy clip


def centre(i, f):
    (_, _, (x, y), (vx, vy)) = BALLS[i]
    return x + vx * f, y + vy * f


def disk_pixels(cx, cy):
    return [(x, y) for y in range(max(0, int(cy - R) - 1), min(H, int(cy + R) + 2))
            for x in range(max(0, int(cx - R) - 1), min(W, int(cx + R) + 2))
            if (x - cx) ** 2 + (y - cy) ** 2 <= R * R]


def specks(f):
    """Seeded 3x3 specks (top-left corner, colour) at least R + 8 from every
    ball centre, so none touches a ball."""
    rng = random.Random(1000 + f)
    out = []
    while len(out) < SPECKS:
        x, y = rng.randrange(0, W - 3), rng.randrange(0, H - 3)
        if all(math.hypot(x + 1 - cx, y + 1 - cy) > R + 8
               for cx, cy in (centre(i, f) for i in range(len(BALLS)))):
            out.append((x, y, RED if rng.random() < 0.5 else GREEN))
    return out


def frame(f, with_specks):
    """The frame's RGB bytes and, per object name, the set of its pixels."""
    buf = bytearray()
    row = bytearray()
    for x in range(W):
        v = 90 + ((x // 16) % 2) * 30
        row += bytes((v, v, v))
    for _ in range(H):
        buf += row
    masks = {n: set() for n in NAMES}

    def paint(x, y, rgb):
        o = (y * W + x) * 3
        buf[o:o + 3] = bytes(rgb)
        for n, c in (("red", RED), ("green", GREEN)):
            (masks[n].add if c == rgb else masks[n].discard)((x, y))

    for i, (_, rgb, _, _) in enumerate(BALLS):
        for x, y in disk_pixels(*centre(i, f)):
            paint(x, y, rgb)
    if with_specks:
        for x0, y0, rgb in specks(f):
            for y in range(y0, y0 + 3):
                for x in range(x0, x0 + 3):
                    paint(x, y, rgb)
    return bytes(buf), masks


def make_clip(path, codec_args, with_specks=False, vf=None):
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{W}x{H}", "-r", str(FPS), "-i", "-"]
    if vf:
        cmd += ["-vf", vf]
    p = subprocess.Popen(cmd + codec_args + [path], stdin=subprocess.PIPE)
    for f in range(N):
        p.stdin.write(frame(f, with_specks)[0])
    p.stdin.close()
    if p.wait() != 0:
        sys.exit(f"ffmpeg failed making {path}")


def run(trackd, clip, objs, backend=BACKEND, ok=True):
    out = subprocess.run([trackd, "--input", clip, "--objects", objs, "--fast", "--output", "-",
                          "--no-server", "--log-level", "warn", "--backend", backend],
                         capture_output=True, text=True, timeout=180)
    if not ok:
        return out
    if out.returncode != 0:
        sys.exit(f"trackd --backend {backend} exited {out.returncode} on {clip}: {out.stderr}")
    msgs = [json.loads(line) for line in out.stdout.splitlines()]
    if len(msgs) != N:
        sys.exit(f"{clip}: expected {N} NDJSON lines, got {len(msgs)}")
    return msgs


def write_objects(d, name, change):
    """OBJECTS with change(obj) applied to each object, as a file in d."""
    doc = json.loads(json.dumps(OBJECTS))
    for o in doc["objects"]:
        change(o)
    path = os.path.join(d, name)
    with open(path, "w") as fh:
        json.dump(doc, fh)
    return path


def flood_blobs(mask, conn):
    """The blob list of a pixel set by the definition (gpu/backend.h): a
    plain flood fill, min_area, mass descending then first pixel, at most K."""
    steps = [(1, 0), (-1, 0), (0, 1), (0, -1)]
    if conn == 8:
        steps += [(1, 1), (1, -1), (-1, 1), (-1, -1)]
    seen, blobs = set(), []
    for start in sorted(mask, key=lambda p: (p[1], p[0])):
        if start in seen:
            continue
        seen.add(start)
        todo, pix = [start], []
        while todo:
            x, y = todo.pop()
            pix.append((x, y))
            for dx, dy in steps:
                q = (x + dx, y + dy)
                if q in mask and q not in seen:
                    seen.add(q)
                    todo.append(q)
        if len(pix) < MIN_AREA:
            continue
        per = sum(1 for x, y in pix for dx, dy in steps[:4] if (x + dx, y + dy) not in mask)
        xs, ys = [p[0] for p in pix], [p[1] for p in pix]
        blobs.append({"mass": len(pix), "sx": sum(xs), "sy": sum(ys),
                      "bbox": [min(xs), min(ys), max(xs), max(ys)], "perimeter": per,
                      "first": start[1] * W + start[0]})
    blobs.sort(key=lambda b: (-b["mass"], b["first"]))
    return blobs[:K]


def apart(i, f):
    cx, cy = centre(i, f)
    return all(math.hypot(cx - ox, cy - oy) >= 2 * R + GAP
               for j, (ox, oy) in ((j, centre(j, f)) for j in range(len(BALLS)))
               if j != i and BALLS[j][0] == BALLS[i][0])


def aggregate(o):
    return {k: v for k, v in o.items() if k != "blobs"}


def check_lists(msgs, clip):
    """Structure every list must have: present for blobs-on objects, at most
    K, masses non-increasing, every blob's centroid in its box."""
    for f, m in enumerate(msgs):
        for o in m["objects"]:
            b = o.get("blobs")
            assert isinstance(b, list), f"{clip} frame {f}: {o['name']} has no blobs list: {o}"
            assert len(b) <= K, f"{clip} frame {f}: {len(b)} blobs > K = {K}"
            for a, c in zip(b, b[1:]):
                assert a["mass"] >= c["mass"], f"{clip} frame {f}: not by mass: {b}"
            for c in b:
                x0, y0, x1, y1 = c["bbox"]
                assert x0 <= c["cx"] <= x1 and y0 <= c["cy"] <= y1, (clip, f, c)


def check_exact(msgs, clip):
    """Lossless clip: each list equals the flood fill of the drawn masks."""
    merged = 0
    for f, m in enumerate(msgs):
        masks = frame(f, False)[1]
        for o in m["objects"]:
            d = OBJECTS["objects"][o["id"]]
            want = flood_blobs(masks[o["name"]], d.get("connectivity", 8))
            got = o["blobs"]
            assert len(got) == len(want), f"{clip} frame {f} {o['name']}: {got} vs {want}"
            for g, w in zip(got, want):
                assert (g["mass"], g["bbox"], g["perimeter"]) == \
                    (w["mass"], w["bbox"], w["perimeter"]), f"{clip} frame {f}: {g} vs {w}"
                assert abs(g["cx"] - w["sx"] / w["mass"]) <= 0.005 + 1e-9 and \
                    abs(g["cy"] - w["sy"] / w["mass"]) <= 0.005 + 1e-9, (clip, f, g, w)
            if o["name"] == "red" and len(want) == 2:
                merged += 1
    # The crossing is in the clip: some frames have the pair as one blob.
    assert merged > 0, "no frame has the crossing red pair merged"
    print(f"{clip}: {N} frames, every blob list equals the flood fill ({merged} with the pair "
          f"merged)")


def check_balls(msgs, clip, pos_tol, mass_tol, with_specks):
    worst, checked, merged = 0.0, 0, 0
    for f, m in enumerate(msgs):
        by_name = {o["name"]: o["blobs"] for o in m["objects"]}
        for i, (name, _, _, _) in enumerate(BALLS):
            cx, cy = centre(i, f)
            area = len(disk_pixels(cx, cy))
            near = [b for b in by_name[name]
                    if b["bbox"][0] <= cx + R + 1 and b["bbox"][2] >= cx - R - 1
                    and b["bbox"][1] <= cy + R + 1 and b["bbox"][3] >= cy - R - 1]
            if not apart(i, f):
                # The crossing pair while overlapping: one blob holds both.
                j = 1 - i
                ox, oy = centre(j, f)
                if i < 2 and math.hypot(cx - ox, cy - oy) < 2 * R:
                    both = [b for b in near if b["bbox"][0] <= min(cx, ox) and
                            b["bbox"][2] >= max(cx, ox)]
                    assert len(both) == 1, f"{clip} frame {f}: pair not one blob: {near}"
                    merged += i == 0
                continue
            if len(near) != 1:
                sys.exit(f"{clip} frame {f}: {name} ball {i} at ({cx:.2f},{cy:.2f}) is "
                         f"{len(near)} blobs: {by_name[name]}")
            b = near[0]
            err = math.hypot(b["cx"] - cx, b["cy"] - cy)
            worst = max(worst, err)
            if err > pos_tol:
                sys.exit(f"{clip} frame {f}: {name} ball {i} blob at ({b['cx']},{b['cy']}), "
                         f"expected ({cx:.2f},{cy:.2f}): error {err:.2f} > {pos_tol}")
            if abs(b["mass"] - area) > mass_tol * area:
                sys.exit(f"{clip} frame {f}: {name} ball {i} blob mass {b['mass']} vs {area}")
            checked += 1
        # Every listed blob is a ball (or the merged pair), never a speck.
        for name, blobs in by_name.items():
            for b in blobs:
                bx, by = b["cx"], b["cy"]
                if not any(name == BALLS[i][0] and
                           math.hypot(bx - centre(i, f)[0], by - centre(i, f)[1]) <= R + 2
                           or (i == 0 and name == "red" and
                               math.hypot(bx - (centre(0, f)[0] + centre(1, f)[0]) / 2,
                                          by - (centre(0, f)[1] + centre(1, f)[1]) / 2) <= R)
                           for i in range(len(BALLS))):
                    sys.exit(f"{clip} frame {f}: {name} blob {b} is no ball "
                             f"({'a speck or noise' if with_specks else 'unexpected'})")
    assert merged > 0, f"{clip}: the crossing pair never overlapped"
    print(f"{clip}: {checked} apart balls, each one blob; worst centroid error {worst:.3f} px "
          f"(tolerance {pos_tol}); pair merged in {merged} frames; no other blobs")


def check_aggregate(trackd, clip, msgs, d):
    """The aggregate fields with blobs off are those with blobs on, and blobs
    off means no "blobs" key at all."""
    off = run(trackd, clip, write_objects(d, "off.json", lambda o: o.update(blobs=0)))
    for f, (a, b) in enumerate(zip(off, msgs)):
        for oa, ob in zip(a["objects"], b["objects"]):
            assert "blobs" not in oa, f"blobs off but listed: {oa}"
            assert oa == aggregate(ob), f"{clip} frame {f}: aggregate {oa} vs {aggregate(ob)}"
    print(f"{os.path.basename(clip)}: aggregate fields identical with blobs off")


def check_specks_seen(trackd, clip, d):
    """Control for the speck check: with min_area 1 the specks do reach the
    lists (so min_area is what keeps them out), the lists are cut at K and
    the balls, the largest, come first."""
    msgs = run(trackd, clip, write_objects(d, "area1.json", lambda o: o.update(min_area=1)))
    check_lists(msgs, clip + " (min_area 1)")
    full, small = 0, 0
    for m in msgs:
        for o in m["objects"]:
            b = o["blobs"]
            full += len(b) == K
            small += sum(1 for x in b if x["mass"] < MIN_AREA)
    assert small > 0, "with min_area 1 no speck was listed: the speck check proves nothing"
    assert full > 0, "with min_area 1 no list reached K"
    print(f"{os.path.basename(clip)} with min_area 1: {small} speck blobs listed, {full} lists cut at K = {K}")


def check_other_backend(trackd, clip, objs, ref):
    """--backend cpu-ref (the definition) gives exactly BACKEND's lists."""
    out = run(trackd, clip, objs, backend="cpu-ref", ok=False)
    assert out.returncode == 0, f"--backend cpu-ref exited {out.returncode}: {out.stderr}"
    msgs = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(msgs) == N
    for a, b in zip(msgs, ref):
        assert a["objects"] == b["objects"], f"cpu-ref differs from {BACKEND}: {a} vs {b}"
    print(f"--backend cpu-ref: the same blob lists as {BACKEND}")


def check_websocket(trackd, clip, objs, d):
    """Over WebSocket: the hello's objects carry the blob keys, and frame
    messages are the very NDJSON lines of the same run (one encoder)."""
    ndjson = os.path.join(d, "ws_run.ndjson")
    log = open(os.path.join(d, "ws_trackd.log"), "w+")
    p, port = start_trackd(trackd, ["--input", clip, "--loop", "--objects", objs, "--output",
                                    ndjson, "--backend", BACKEND, "--log-level", "warn"], log)

    async def take():
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
            hello = json.loads(await asyncio.wait_for(ws.recv(), 10))
            frames = []
            while len(frames) < 5:
                m = await asyncio.wait_for(ws.recv(), 10)
                if isinstance(m, str) and json.loads(m)["type"] == "frame":
                    frames.append(m)
            return hello, frames

    try:
        hello, frames = asyncio.run(take())
    finally:
        stop_trackd(p)
    assert p.returncode == 0, f"trackd exited {p.returncode}"
    assert hello["type"] == "hello", hello
    lim = hello["limits"]
    assert (lim["max_blobs"], lim["max_min_area"], lim["connectivity"]) == (64, 268435456, [4, 8])
    got = [(o["blobs"], o["min_area"], o["connectivity"]) for o in hello["objects"]]
    want = [(o["blobs"], o["min_area"], o.get("connectivity", 8)) for o in OBJECTS["objects"]]
    assert got == want, f"hello objects {got} vs the file's {want}"
    with open(ndjson) as fh:
        lines = {json.loads(line)["seq"]: line.rstrip("\n") for line in fh}
    for m in frames:
        seq = json.loads(m)["seq"]
        assert seq in lines, f"WebSocket frame {seq} not in the NDJSON output"
        assert m == lines[seq], f"frame {seq}: WebSocket {m} vs NDJSON {lines[seq]}"
        assert all("blobs" in o for o in json.loads(m)["objects"]), m
    print(f"WebSocket: hello carries the blob keys; {len(frames)} frames equal their NDJSON lines")


def main():
    trackd = sys.argv[1]
    print(f"backend: {BACKEND}")
    with tempfile.TemporaryDirectory() as d:
        objs = os.path.join(d, "objs.json")
        with open(objs, "w") as fh:
            json.dump(OBJECTS, fh)
        rgb = os.path.join(d, "rgb.mkv")
        make_clip(rgb, ["-c:v", "ffv1", "-pix_fmt", "bgr0"])
        msgs = run(trackd, rgb, objs)
        check_lists(msgs, "rgb.mkv")
        check_exact(msgs, "rgb.mkv")
        check_aggregate(trackd, rgb, msgs, d)
        check_websocket(trackd, rgb, objs, d)

        x264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "16", "-pix_fmt", "yuv420p"]
        clean = os.path.join(d, "x264.mp4")
        make_clip(clean, x264)
        msgs = run(trackd, clean, objs)
        check_lists(msgs, "x264.mp4")
        check_balls(msgs, "x264.mp4", 1.0, 0.20, False)

        noisy = os.path.join(d, "noisy.mp4")
        make_clip(noisy, x264, with_specks=True,
                  vf="format=gbrp,noise=alls=36:allf=t:all_seed=4242")
        msgs = run(trackd, noisy, objs)
        check_lists(msgs, "noisy.mp4")
        check_balls(msgs, "noisy.mp4", 1.6, 0.25, True)
        check_aggregate(trackd, noisy, msgs, d)
        check_specks_seen(trackd, noisy, d)
        check_other_backend(trackd, noisy, objs, msgs)
    print("blob clips: all passed")


if __name__ == "__main__":
    main()
