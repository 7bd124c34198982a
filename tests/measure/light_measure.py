#!/usr/bin/python3
"""Measures tracking under falling light on a light_scene.py clip (a
measurement, not a test: it asserts nothing; it prints numbers for
docs/BENCHMARKS.md).

Per light band: the share of truth instances found and the mean centroid
error (tests/integration/light_eval.py), for trackd (cpu backend, --mode
full and roi) with the taught ranges fixed, with illumination compensation
(the grey card as the reference patch), with adaptation ("adapt": {}),
with both ("adapt-wide": adaptation with max_drift 140, hue 12), and for OpenCV (cv2.inRange on the frame converted to each
object's space with trackd's integer conversions, the same taught ranges,
then connectedComponentsWithStats and the components' centroids, area >=
min_area, the largest two).

    tests/measure/light_measure.py build/daemon/trackd [--clip CLIP]
        [--variants fixed,comp,adapt,both] [--no-opencv]
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import light_eval  # noqa: E402
import light_scene  # noqa: E402


def objects_variant(objs, truth, variant):
    o = copy.deepcopy(objs)
    if variant in ("comp", "both"):
        o["illumination"] = {"reference": "patch", "rect": truth["card"]}
    if variant in ("adapt", "both"):
        for d in o["objects"]:
            d["adapt"] = {}
    if variant == "adapt-wide":  # a guard rail wide enough for a 55 % light drop
        for d in o["objects"]:
            d["adapt"] = {"max_drift": [12 if d["space"] == "hsv" else 140, 140, 140]}
    return o


def run_trackd(trackd, clip, objs, mode, tmp):
    path = os.path.join(tmp, "objects.json")
    with open(path, "w") as fh:
        json.dump(objs, fh)
    out = subprocess.run([trackd, "--input", clip, "--objects", path, "--fast", "--output", "-",
                          "--no-server", "--log-level", "error", "--backend", "cpu",
                          "--mode", mode], capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"trackd exited {out.returncode}: {out.stderr}")
    return light_eval.from_ndjson(out.stdout.splitlines())


def frames_of(clip, w, h):
    p = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-i", clip, "-f", "rawvideo",
                          "-pix_fmt", "rgb24", "-"], stdout=subprocess.PIPE)
    while True:
        buf = p.stdout.read(w * h * 3)
        if len(buf) < w * h * 3:
            break
        yield np.frombuffer(buf, np.uint8).reshape(h, w, 3)
    p.wait()


def run_opencv(clip, objs, truth):
    import cv2
    w, h = truth["size"]
    out = []
    for img in frames_of(clip, w, h):
        flat = img.reshape(-1, 3)
        conv = {"rgb": flat.astype(np.uint16),
                "hsv": light_scene.rgb_to_hsv(flat).astype(np.uint16),
                "ycbcr": light_scene.rgb_to_ycbcr(flat).astype(np.uint16)}
        det = {}
        for d in objs["objects"]:
            c = conv[d["space"]].reshape(h, w, 3)
            lo, hi = list(d["lo"]), list(d["hi"])
            if d["space"] == "hsv" and lo[0] > hi[0]:
                m = cv2.inRange(c, np.array([lo[0]] + lo[1:]), np.array([359] + hi[1:]))
                m |= cv2.inRange(c, np.array([0] + lo[1:]), np.array([hi[0]] + hi[1:]))
            else:
                m = cv2.inRange(c, np.array(lo), np.array(hi))
            n, _, stats, cent = cv2.connectedComponentsWithStats(m, connectivity=8)
            comps = sorted((int(stats[i, cv2.CC_STAT_AREA]), tuple(cent[i])) for i in range(1, n)
                           if stats[i, cv2.CC_STAT_AREA] >= d.get("min_area", 1))
            det[d["name"]] = [c for _, c in comps[::-1][:d.get("blobs", 1)]]
        out.append(det)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--clip")
    ap.add_argument("--variants", default="fixed,comp,adapt,both")
    ap.add_argument("--no-opencv", action="store_true")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clip = a.clip
        if not clip:
            clip = os.path.join(tmp, "light.mkv")
            subprocess.run([sys.executable, os.path.join(HERE, "..", "integration",
                                                         "light_scene.py"), clip], check=True)
        truth = json.load(open(clip + ".truth.json"))
        objs = json.load(open(clip + ".objects.json"))
        print(f"{'':28s} bands {' | '.join(light_eval.BANDS)}")
        for v in a.variants.split(","):
            for mode in ("full", "roi"):
                det = run_trackd(a.trackd, clip, objects_variant(objs, truth, v), mode, tmp)
                print(light_eval.line(f"trackd {v} {mode}", light_eval.score(truth, det)),
                      flush=True)
        if not a.no_opencv:
            print(light_eval.line("opencv fixed", light_eval.score(
                truth, run_opencv(clip, objs, truth))))


if __name__ == "__main__":
    main()
