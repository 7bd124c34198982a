#!/usr/bin/python3
"""Spinning elongated shapes with known truth (issue 26, orientation).

A red filled ellipse and a blue filled rectangle on grey, each drifting
slowly while it turns at its own constant rate (degrees per frame,
counter-clockwise on screen positive), hard-edged (a pixel is in a shape
when its centre is) and in exact colours, so every object's mask is exactly
the rendered shape. Written lossless (FFV1, RGB) with the truth per frame:
for each shape its drawn angle, and the second moments of its rendered mask
turned into orientation, major and minor the way PROTOCOL.md defines them
(degrees [0, 180) counter-clockwise on screen from +x; the standard
deviations along and across the major axis), computed here in numpy,
independently of trackd.

Used by tests/integration/test_orientation.py and the browser test of the
page's axes (tests/browser/axes.test.mjs).

    python3 spin_scene.py OUT.mkv [--frames N] [--size WxH] [--fps F]
                                  # writes OUT and OUT.truth.json
"""
import argparse
import json
import math

import numpy as np

from ssl_scene import write_clip

GREY = (128, 128, 128)
# name, colour, kind, (length, width) in px (the ellipse's full axes),
# start centre as fractions of the frame, drift px/frame, start angle, turn
# in degrees per frame. The ellipse turns through 0/180 within 60 frames.
SHAPES = [
    ("red", (230, 30, 30), "ellipse", (120.0, 40.0), (0.28, 0.5), (1.0, 0.2), 150.0, 3.0),
    ("blue", (30, 60, 230), "rect", (100.0, 24.0), (0.72, 0.5), (-0.5, -0.1), 20.0, -2.0),
]


def mask_of(kind, size, cx, cy, deg, w, h):
    """The pixels whose centres lie in the shape (pixel (x, y) has centre
    x, y as in trackd)."""
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = xs - cx, ys - cy
    a = math.radians(deg)
    # along the axis: (cos, -sin) on screen (y down); across: (sin, cos)
    u = dx * math.cos(a) - dy * math.sin(a)
    v = dx * math.sin(a) + dy * math.cos(a)
    half_l, half_w = size[0] / 2, size[1] / 2
    if kind == "ellipse":
        return (u / half_l) ** 2 + (v / half_w) ** 2 <= 1.0
    return (np.abs(u) <= half_l) & (np.abs(v) <= half_w)


def shape_of(mask):
    """orientation, major, minor of the mask's pixels from their second
    moments (population covariance; the axis counter-clockwise on screen)."""
    ys, xs = np.nonzero(mask)
    x, y = xs.astype(np.float64), ys.astype(np.float64)
    vx, vy = x.var(), y.var()
    cxy = ((x - x.mean()) * (y - y.mean())).mean()
    half = (vx - vy) / 2
    r = math.hypot(half, cxy)
    l1, l2 = (vx + vy) / 2 + r, max((vx + vy) / 2 - r, 0.0)
    # screen y is down: the counter-clockwise angle uses -cxy
    deg = math.degrees(0.5 * math.atan2(-2 * cxy, vx - vy)) % 180.0
    return {"mass": int(x.size), "cx": float(x.mean()), "cy": float(y.mean()),
            "orientation": deg, "major": math.sqrt(l1), "minor": math.sqrt(l2)}


def scene(frames, w, h):
    """Yields (RGB frame, truth) per frame."""
    for f in range(frames):
        img = np.empty((h, w, 3), np.uint8)
        img[:] = GREY
        truth = {}
        for name, rgb, kind, size, (fx, fy), (vx, vy), deg0, turn in SHAPES:
            cx, cy, deg = fx * w + vx * f, fy * h + vy * f, deg0 + turn * f
            m = mask_of(kind, size, cx, cy, deg, w, h)
            img[m] = rgb
            t = shape_of(m)
            t.update({"angle": deg % 180.0, "turn": turn})
            truth[name] = t
        yield img, truth


def objects():
    """The objects file for the scene: each colour exactly (an RGB box of
    +-10 around it: nothing else in the frame is near)."""
    return {"objects": [{"name": name, "space": "rgb", "lo": [max(0, c - 10) for c in rgb],
                         "hi": [min(255, c + 10) for c in rgb]}
                        for name, rgb, *_ in SHAPES]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--fps", type=int, default=30)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    truths = write_clip(a.out, w, h, a.fps, scene(a.frames, w, h))
    with open(a.out + ".truth.json", "w") as f:
        json.dump({"size": [w, h], "fps": a.fps, "objects": objects(), "frames": truths}, f)


if __name__ == "__main__":
    main()
