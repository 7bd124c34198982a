#!/usr/bin/python3
"""Measures painted colour classes against boxes under falling light on a
light_scene.py clip (issue 27; a measurement, not a test: it asserts
nothing, it prints numbers for docs/BENCHMARKS.md "Light").

Every object of the clip is taught on frame 0 from its truth disks' inner
pixels (radius - 2), as light_scene.py teaches, in one space per run:

    rgb, hsv:  every channel, min..max widened by MARGIN (hue: 4 degrees);
    lab:       a and b (CIE, a* + 128, b* + 128) widened by MARGIN, L open;
    rg:        r and g (255 R / (R + G + B)) widened by MARGIN, I 10..255;
    class:     a painted class (config/OBJECTS.md "Classes"): the 64^3 RGB
               cells of those pixels, as the page's paint_class sets them;
    class x3:  the same painted in three frames, as a user paints over the
               object in a few frames: 0 (full light), the middle of the
               fall and the last frame (45 %); class x10: ten frames spread
               evenly over the clip;

then trackd (cpu backend, --fast, full mode) runs the clip and
tests/integration/light_eval.py scores the blobs: found share per light
band, centroid error, false blobs.

    tests/measure/class_measure.py build/daemon/trackd [--clip CLIP]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
import light_eval  # noqa: E402
import light_measure  # noqa: E402
import light_scene  # noqa: E402

MARGIN = light_scene.MARGIN


def inner_pixels(img, tframe, name):
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    m = np.zeros((h, w), bool)
    for t in tframe["objects"][name]:
        m |= (xx - t["x"]) ** 2 + (yy - t["y"]) ** 2 <= (t["r"] - 2) ** 2
    return img[m].astype(np.int64)


def lab_of(p):
    """CIE L*a*b* bytes (L* x 2.55, a* + 128, b* + 128) in floating point:
    trackd's integer lab (gpu/color.h) is within a byte of it."""
    v = p / 255.0
    lin = np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = lin @ m.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 216 / 24389, np.cbrt(xyz), (24389 / 27 * xyz + 16) / 116)
    L = 116 * f[:, 1] - 16
    a = 500 * (f[:, 0] - f[:, 1])
    b = 200 * (f[:, 1] - f[:, 2])
    return np.stack([np.round(2.55 * L), np.round(a) + 128, np.round(b) + 128], axis=1)


def rg_of(p):
    s = p.sum(axis=1)
    s1 = np.maximum(s, 1)
    r = np.where(s > 0, (255 * p[:, 0] + s // 2) // s1, 85)
    g = np.where(s > 0, (255 * p[:, 1] + s // 2) // s1, 85)
    return np.stack([r, g, (s + 1) // 3], axis=1)


def box(c, lo_open=(), fixed=None):
    lo = [int(max(0, c[:, i].min() - MARGIN)) for i in range(3)]
    hi = [int(min(255, c[:, i].max() + MARGIN)) for i in range(3)]
    for i in lo_open:
        lo[i], hi[i] = 0, 255
    if fixed:
        lo[2], hi[2] = fixed
    return lo, hi


def lut_bytes(pixels):
    """A class file (TRKCLASS v1) with the cells of pixels (N x 3 RGB)."""
    bits = np.zeros(64 * 64 * 64, bool)
    cells = (pixels[:, 0] >> 2) << 12 | (pixels[:, 1] >> 2) << 6 | pixels[:, 2] >> 2
    bits[cells] = True
    packed = np.packbits(bits.reshape(-1, 8)[:, ::-1], axis=1).reshape(-1)
    head = b"TRKCLASS" + (1).to_bytes(2, "little") + bytes([0, 6])
    return head + int(bits.sum()).to_bytes(4, "little") + packed.tobytes()


def objects_for(space, frames, truth, tmp, paint_frames):
    objs = []
    for name, *_ in light_scene.OBJECTS:
        d = {"name": name, "min_mass": 20, "blobs": 2, "min_area": 20}
        p0 = inner_pixels(frames[0], truth["frames"][0], name)
        if space == "rgb":
            d["space"] = "rgb"
            d["lo"], d["hi"] = box(p0)
        elif space == "hsv":
            c = light_scene.rgb_to_hsv(p0)
            d["space"] = "hsv"
            d["lo"], d["hi"] = box(c)
            hue = (c[:, 0] + 180) % 360 - 180
            d["lo"][0] = int(hue.min() - light_scene.HUE_MARGIN) % 360
            d["hi"][0] = int(hue.max() + light_scene.HUE_MARGIN) % 360
        elif space == "lab":
            d["space"] = "lab"
            d["lo"], d["hi"] = box(lab_of(p0), lo_open=(0,))
        elif space == "rg":
            d["space"] = "rg"
            d["lo"], d["hi"] = box(rg_of(p0), fixed=(10, 255))
        else:
            px = np.concatenate([inner_pixels(frames[f], truth["frames"][f], name)
                                 for f in paint_frames])
            d["class"] = f"{name}.lut"
            with open(os.path.join(tmp, d["class"]), "wb") as fh:
                fh.write(lut_bytes(px))
        objs.append(d)
    return {"objects": objs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--clip")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clip = a.clip
        if not clip:
            clip = os.path.join(tmp, "light.mkv")
            subprocess.run([sys.executable, os.path.join(HERE, "..", "integration",
                                                         "light_scene.py"), clip], check=True)
        truth = json.load(open(clip + ".truth.json"))
        w, h = truth["size"]
        frames = list(light_measure.frames_of(clip, w, h))
        n = len(frames)
        print(f"{'':28s} bands {' | '.join(light_eval.BANDS)}")
        for space, paint in (("rgb", None), ("hsv", None), ("lab", None), ("rg", None),
                             ("class", [0]), ("class x3", [0, n // 2, n - 1]),
                             ("class x10", list(range(0, n, n // 10))[:10])):
            objs = objects_for(space, frames, truth, tmp, paint)
            det = light_measure.run_trackd(a.trackd, clip, objs, "full", tmp)
            print(light_eval.line(space, light_eval.score(truth, det)), flush=True)


if __name__ == "__main__":
    main()
