#!/usr/bin/python3
"""A lighting test clip with known truth (issue 27): coloured robots and a
ball on a field whose light falls from 100 % to 45 % while the white
balance drifts (red gain 1.15 -> 0.85, blue gain 0.85 -> 1.15), with a grey
card on the field.

The scene: a dark green carpet with white lines; five robots (discs of
radius 14 px: red, yellow, two blue, magenta) and an orange ball (radius
9 px) on slow circles that never overlap; a grey card (a light grey
rectangle, CARD) in the top left corner. Every surface has a fixed
texture (albedo varies +-12 % from pixel to pixel, the same in every
frame) and the discs are shaded (darker towards their rims, as a dome
under a top light), so that a range that the light leaves behind first
thins a mask, then breaks it into fragments, as a camera's do. Frames are
drawn at 2x2 supersampling, then

    pixel = clip(round(albedo * light * gain[c] + noise)),  noise ~ N(0, 1.5)

with light = 1 for the first HOLD frames, then falling linearly to 0.45
at frame N - HOLD, then 0.45; gain = (1.15, 1, 0.85) at light 1 moving
linearly with the light to (0.85, 1, 1.15) at 0.45.

Objects are taught on the first frame as a user does on the page: each
object's range is the per-channel min..max of its truth disks' inner
pixels (radius - 2) in the object's space, widened by MARGIN (hue: 4
degrees), written to OUT.objects.json with "blobs": 2, "min_area": 20,
"track": true. The truth (OUT.truth.json) gives per frame the light, the
gains and each object's instances (centre and radius in px: the truth
mask is the disk).

    python3 light_scene.py OUT.mkv [--frames N] [--size WxH] [--seed S]
    # writes OUT (FFV1, lossless, bgr0), OUT.truth.json, OUT.objects.json
"""
import argparse
import json
import math
import subprocess
import sys

import numpy as np

CARPET = (40, 105, 48)
LINE = (215, 215, 210)
CARD = (170, 170, 170)  # a grey card: equal channels, below clipping at gain 1.15
# name, space, albedo RGB, radius px, instances
OBJECTS = [
    ("red", "hsv", (190, 45, 40), 14, 1),
    ("yellow", "rgb", (200, 185, 40), 14, 1),
    ("blue", "ycbcr", (40, 70, 190), 14, 2),
    ("magenta", "rgb", (185, 50, 165), 14, 1),
    ("ball", "hsv", (205, 110, 25), 9, 1),
]
SS = 2
MARGIN = 8
HUE_MARGIN = 4
HOLD = 30
LIGHT_END = 0.45
GAIN_START = (1.15, 1.0, 0.85)
GAIN_END = (0.85, 1.0, 1.15)


def light_at(f, n):
    """Light level and (r, g, b) gains of frame f of n."""
    t = min(1.0, max(0.0, (f - HOLD) / max(1, n - 2 * HOLD)))
    light = 1.0 - (1.0 - LIGHT_END) * t
    gain = tuple(a + (b - a) * t for a, b in zip(GAIN_START, GAIN_END))
    return light, gain


def band_of(light):
    """Light bands of the reports: 0 bright (>= 0.9), 1 (0.75..0.9), 2
    (0.6..0.75), 3 dim (< 0.6)."""
    return 0 if light >= 0.9 else 1 if light >= 0.75 else 2 if light >= 0.6 else 3


def paths(w, h, frames, rng):
    """Per instance (object index, radius) and its centre per frame: slow
    circles around the cells of a grid, never overlapping."""
    inst = [(k, r) for k, (_, _, _, r, n) in enumerate(OBJECTS) for _ in range(n)]
    cols = 3
    rows = (len(inst) + cols - 1) // cols
    cw, ch = w / cols, (h - 60) / rows
    out = []
    for i, (k, r) in enumerate(inst):
        cx, cy = cw * (i % cols + 0.5), 60 + ch * (i // cols + 0.5)
        amp = 0.3 * min(cw, ch) - r
        ph, om = rng.uniform(0, 2 * math.pi), rng.uniform(0.015, 0.035)
        om *= 1 if i % 2 else -1
        out.append((k, r, [(cx + amp * math.cos(ph + om * f), cy + amp * math.sin(ph + om * f))
                           for f in range(frames)]))
    return out


def base_layer(w, h, rng):
    """The static field at supersampled resolution: carpet, lines, card."""
    big = np.empty((h * SS, w * SS, 3), np.float32)
    big[:] = CARPET
    big[:, (w // 2) * SS:(w // 2 + 2) * SS] = LINE
    big[(h - 20) * SS:(h - 18) * SS, :] = LINE
    big[8 * SS:40 * SS, 8 * SS:56 * SS] = CARD
    return big


def draw(base, texture, insts, f, light, gain, rng, w, h):
    big = base.copy()
    yy, xx = np.mgrid[0:h * SS, 0:w * SS].astype(np.float32)
    xx = (xx + 0.5) / SS - 0.5
    yy = (yy + 0.5) / SS - 0.5
    for k, r, path in insts:
        x, y = path[f]
        x0, x1 = int(max(0, (x - r - 2) * SS)), int(min(w * SS, (x + r + 3) * SS))
        y0, y1 = int(max(0, (y - r - 2) * SS)), int(min(h * SS, (y + r + 3) * SS))
        d2 = (xx[y0:y1, x0:x1] - x) ** 2 + (yy[y0:y1, x0:x1] - y) ** 2
        m = d2 <= r * r
        shade = 1.0 - 0.25 * d2[m] / (r * r)  # a dome: 75 % at the rim
        tile = big[y0:y1, x0:x1]
        tile[m] = np.array(OBJECTS[k][2], np.float32) * shade[:, None]
    img = big.reshape(h, SS, w, SS, 3).mean(axis=(1, 3)) * texture
    img = img * light * np.array(gain, np.float32)
    img += rng.normal(0, 1.5, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def rgb_to_hsv(p):
    """trackd's integer HSV (gpu/color.h) of an Nx3 int array."""
    r, g, b = (p[:, i].astype(np.int64) for i in range(3))
    mx, mn = p.max(axis=1).astype(np.int64), p.min(axis=1).astype(np.int64)
    d = mx - mn
    s = np.where(mx == 0, 0, (255 * d + mx // 2) // np.maximum(mx, 1))
    num = np.where(mx == r, 60 * (g - b), np.where(mx == g, 120 * d + 60 * (b - r),
                                                    240 * d + 60 * (r - g)))
    h = np.where(d == 0, 0, ((num + 360 * d + d // 2) // np.maximum(d, 1)) % 360)
    return np.stack([h, s, mx], axis=1)


def rgb_to_ycbcr(p):
    """trackd's BT.601 full-range Q16 conversion (gpu/color.h)."""
    r, g, b = (p[:, i].astype(np.int64) for i in range(3))

    def q(v):
        return np.clip((v + 32768) >> 16, 0, 255)
    y = q(19595 * r + 38470 * g + 7471 * b)
    cb = 128 + ((-11058 * r - 21710 * g + 32768 * b + 32768) >> 16)
    cr = 128 + ((32768 * r - 27439 * g - 5329 * b + 32768) >> 16)
    return np.stack([y, np.clip(cb, 0, 255), np.clip(cr, 0, 255)], axis=1)


def teach(img, insts):
    """Ranges from frame 0: per object the inner truth pixels' min..max in
    its space, widened by MARGIN."""
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    objs = []
    for k, (name, space, _, _, _) in enumerate(OBJECTS):
        m = np.zeros((h, w), bool)
        for kk, r, path in insts:
            if kk == k:
                x, y = path[0]
                m |= (xx - x) ** 2 + (yy - y) ** 2 <= (r - 2) ** 2
        p = img[m].astype(np.int64)
        if space == "rgb":
            c = p
        elif space == "ycbcr":
            c = rgb_to_ycbcr(p)
        else:
            c = rgb_to_hsv(p)
        lo = [int(max(0, c[:, i].min() - MARGIN)) for i in range(3)]
        hi = [int(min(255, c[:, i].max() + MARGIN)) for i in range(3)]
        if space == "hsv":
            hue = (c[:, 0] + 180) % 360 - 180  # red hues around 0 as -x..x
            lo[0] = int(hue.min() - HUE_MARGIN) % 360
            hi[0] = int(hue.max() + HUE_MARGIN) % 360
        objs.append({"name": name, "space": space, "lo": lo, "hi": hi, "min_mass": 20,
                     "blobs": 2, "min_area": 20, "track": True})
    return objs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--size", default="480x360")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=27)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    rng = np.random.default_rng(a.seed)
    insts = paths(w, h, a.frames, rng)
    texture = rng.uniform(0.88, 1.12, (h, w, 1)).astype(np.float32)
    base = base_layer(w, h, rng)
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{w}x{h}", "-r", str(a.fps), "-i", "-", "-c:v", "ffv1", "-pix_fmt", "bgr0",
           a.out]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    truths, objs = [], None
    for f in range(a.frames):
        light, gain = light_at(f, a.frames)
        img = draw(base, texture, insts, f, light, gain, rng, w, h)
        if f == 0:
            objs = teach(img, insts)
        proc.stdin.write(img.tobytes())
        truths.append({"frame": f, "light": light, "gain": list(gain), "band": band_of(light),
                       "objects": {name: [] for name, *_ in OBJECTS}})
        for k, r, path in insts:
            truths[-1]["objects"][OBJECTS[k][0]].append({"x": path[f][0], "y": path[f][1],
                                                         "r": r})
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit("ffmpeg failed")
    with open(a.out + ".truth.json", "w") as fh:
        json.dump({"size": [w, h], "card": [8, 8, 48, 32], "frames": truths}, fh)
    with open(a.out + ".objects.json", "w") as fh:
        json.dump({"objects": objs}, fh, indent=1)


if __name__ == "__main__":
    main()
