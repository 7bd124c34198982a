#!/usr/bin/python3
"""Measures what the light module costs per frame (a measurement, not a
test: it asserts nothing; it prints numbers for docs/BENCHMARKS.md).

trackd's demo scene at 1920x1080, --fast, --frames N, --backend cpu, with
M = 16 objects (the demo's 7 and 9 more boxes in every space that find
little), blobs 4 and "track": true on each; the light module runs inside
process_ms (daemon/pipeline.c: it moves the boxes before the results go
out), so the cost is the p10 process_ms with the light keys against
without them, runs alternated, the least median of R rounds kept:

  off       no light keys (today's trackd)
  patch     "illumination": a 48x32 patch
  grey      "illumination": grey-world over the whole frame (65536 samples)
  adapt     "adapt": {} on all 16
  both      grey-world + adapt

The demo scene's light is steady, so the boxes seldom move: the backend's
tables are rebuilt only when one does. --clip CLIP runs a light_scene.py
clip instead (its own objects; the light falls, the boxes move most
frames, so the rebuild is in).

    tests/measure/light_cost.py build/daemon/trackd [--frames 150] [--rounds 3] [--clip CLIP]
"""
import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile

EXTRA = [
    ("lime", "rgb", [120, 200, 0], [180, 255, 60]),
    ("navy", "rgb", [0, 0, 90], [40, 40, 160]),
    ("brown", "rgb", [110, 60, 20], [160, 100, 50]),
    ("pink", "hsv", [320, 60, 150], [345, 140, 255]),
    ("teal", "hsv", [160, 120, 60], [175, 255, 160]),
    ("violet", "hsv", [255, 120, 100], [280, 255, 255]),
    ("skin", "ycbcr", [120, 100, 135], [200, 120, 160]),
    ("sea", "ycbcr", [60, 140, 80], [120, 170, 110]),
    ("olive", "ycbcr", [60, 90, 120], [120, 120, 140]),
]


def demo_objects(trackd):
    out = subprocess.run([trackd, "--print-demo-objects"], capture_output=True, text=True)
    if out.returncode == 0 and out.stdout.strip().startswith("{"):
        return json.loads(out.stdout)
    # The demo's seven, as config/demo_objects.c has them.
    return {"objects": [
        {"name": "red", "space": "hsv", "lo": [348, 120, 100], "hi": [12, 255, 255]},
        {"name": "green", "space": "hsv", "lo": [116, 120, 100], "hi": [140, 255, 255]},
        {"name": "blue", "space": "ycbcr", "lo": [40, 180, 70], "hi": [140, 240, 120]},
        {"name": "yellow", "space": "rgb", "lo": [210, 190, 0], "hi": [255, 250, 80]},
        {"name": "magenta", "space": "hsv", "lo": [288, 120, 100], "hi": [312, 255, 255]},
        {"name": "cyan", "space": "hsv", "lo": [171, 120, 100], "hi": [195, 255, 255]},
        {"name": "orange", "space": "hsv", "lo": [18, 120, 100], "hi": [42, 255, 255]}]}


def variant(base, v):
    o = copy.deepcopy(base)
    if v == "patch":
        o["illumination"] = {"reference": "patch", "rect": [8, 8, 48, 32]}
    if v in ("grey", "both"):
        o["illumination"] = {"reference": "grey-world"}
    if v in ("adapt", "both"):
        for d in o["objects"]:
            d["adapt"] = {}
    return o


def median_process(trackd, args, objs, tmp):
    path = os.path.join(tmp, "o.json")
    with open(path, "w") as fh:
        json.dump(objs, fh)
    out = subprocess.run([trackd] + args + ["--objects", path, "--fast", "--output", "-",
                                            "--no-server", "--log-level", "error",
                                            "--backend", "cpu"],
                         capture_output=True, text=True, timeout=900)
    if out.returncode != 0:
        sys.exit(f"trackd exited {out.returncode}: {out.stderr}")
    ms = [json.loads(line)["latency"]["process_ms"] for line in out.stdout.splitlines()]
    ms = sorted(ms[5:])  # the first frames warm caches
    return ms[len(ms) // 10]  # the 10th percentile: the least disturbed by the load


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--frames", type=int, default=150)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clip")
    a = ap.parse_args()
    if a.clip:
        base = json.load(open(a.clip + ".objects.json"))
        truth = json.load(open(a.clip + ".truth.json"))
        args = ["--input", a.clip]
        variants = {"off": base, "patch": copy.deepcopy(base)}
        variants["patch"]["illumination"] = {"reference": "patch", "rect": truth["card"]}
        variants["both"] = copy.deepcopy(variants["patch"])
        for d in variants["both"]["objects"]:
            d["adapt"] = {}
    else:
        base = demo_objects(a.trackd)
        for name, space, lo, hi in EXTRA:
            base["objects"].append({"name": name, "space": space, "lo": lo, "hi": hi})
        for d in base["objects"]:
            d.update({"min_mass": 20, "blobs": 4, "min_area": 20, "track": True})
        args = ["--size", "1920x1080", "--frames", str(a.frames)]
        variants = {v: variant(base, v) for v in ("off", "patch", "grey", "adapt", "both")}
    best = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            for v, objs in variants.items():
                m = median_process(a.trackd, args, objs, tmp)
                best[v] = min(best.get(v, m), m)
                print(f"round {r} {v:6s} p10 process_ms {m:.3f}", flush=True)
    off = best["off"]
    for v, m in best.items():
        print(f"{v:6s} {m:.3f} ms  {100 * (m - off) / off:+.1f} %")


if __name__ == "__main__":
    main()
