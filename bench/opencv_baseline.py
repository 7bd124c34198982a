#!/usr/bin/python3
"""OpenCV baseline for trackd-bench: per-object cv2.inRange + cv2.moments +
cv2.boundingRect on the very scenes the benchmark runs.

`trackd-bench --dump-scenes DIR` writes every standard scene as
DIR/scene_WxH_M.rgb (raw RGB24) + .json (the objects); this script times, per
scene, one frame's worth of the classic per-object OpenCV pipeline (what most
colour trackers do: one mask, one moments call, one bounding box per object)
and writes a JSON file that `trackd-bench --opencv FILE` reads to print its
"x opencv" ratios. Run it with Debian's python3-opencv (/usr/bin/python3);
it is a benchmark-only dependency, never a build dependency.

Output shape (documented in bench/README.md):
  {"tool": "opencv_baseline", "opencv": "4.6.0", "machine": {...},
   "scenes": [{"width": 1920, "height": 1080, "objects": 128,
               "variant": "per-object", "threads": 1, "median_ms": 418.0,
               "min_ms": ..., "iters": 7, "masses": [...]}, ...]}
threads: 1 = cv2.setNumThreads(1); 0 = OpenCV's default (all cores).
masses: cv2.moments' m00 per object, which trackd-bench checks against its own
results, so the two sides provably computed the same thing.
"""
import argparse
import glob
import json
import os
import platform
import statistics
import sys
import time

import cv2
import numpy as np


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_scene(meta_path):
    with open(meta_path) as f:
        meta = json.load(f)
    w, h = meta["width"], meta["height"]
    raw = os.path.join(os.path.dirname(meta_path), meta["pixels"])
    img = np.fromfile(raw, dtype=np.uint8)
    if img.size != w * h * 3:
        raise ValueError(f"{raw}: {img.size} bytes, expected {w * h * 3}")
    img = img.reshape(h, w, 3)
    for d in meta["defs"]:
        if d["space"] != "rgb":
            # OpenCV's HSV/YCrCb conventions differ from trackd's (hue 0..179,
            # other rounding): only rgb boxes compare like for like.
            raise ValueError(f"{meta_path}: object {d['name']} is {d['space']}, only rgb supported")
    return meta, img


def track_once(img, boxes):
    """One frame: every object's mask, moments and bounding box."""
    out = []
    for lo, hi in boxes:
        mask = cv2.inRange(img, lo, hi)
        m = cv2.moments(mask, binaryImage=True)
        rect = cv2.boundingRect(mask)
        out.append((m["m00"], m["m10"], m["m01"], rect))
    return out


def time_scene(img, defs, warmup, iters, max_seconds):
    # The pixels are R,G,B and so are the boxes: inRange is per channel, so
    # the channel order only has to agree, not be BGR.
    boxes = [(np.array(d["lo"], np.uint8), np.array(d["hi"], np.uint8)) for d in defs]
    res = None
    for _ in range(warmup):
        res = track_once(img, boxes)
    times = []
    start = time.perf_counter()
    while len(times) < iters:
        t0 = time.perf_counter()
        res = track_once(img, boxes)
        times.append((time.perf_counter() - t0) * 1e3)
        # Slow cases (4K, 256 objects: seconds per frame) stop early, but
        # never with fewer than 3 samples.
        if len(times) >= 3 and time.perf_counter() - start > max_seconds:
            break
    masses = [int(r[0]) for r in res] if res else []
    return statistics.median(times), min(times), len(times), masses


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenes", help="directory written by trackd-bench --dump-scenes")
    ap.add_argument("--json", required=True, help="output file for trackd-bench --opencv")
    ap.add_argument("--threads", default="1,0",
                    help="comma list: 1 = one thread, 0 = OpenCV default (all cores)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=7)
    ap.add_argument("--max-seconds", type=float, default=15.0,
                    help="per scene and thread setting, after at least 3 timed runs")
    args = ap.parse_args()

    metas = sorted(glob.glob(os.path.join(args.scenes, "scene_*.json")),
                   key=lambda p: tuple(json.load(open(p))[k] for k in ("width", "height", "objects")))
    if not metas:
        sys.exit(f"no scene_*.json in {args.scenes}: run trackd-bench --dump-scenes first")
    threads = [int(t) for t in args.threads.split(",")]
    results = []
    print(f"# opencv_baseline: OpenCV {cv2.__version__}, {cpu_name()}, {os.cpu_count()} cores")
    print(f"{'scene':<18} {'thr':>4} {'median_ms':>10} {'min_ms':>10} {'iters':>5}")
    for mp in metas:
        meta, img = load_scene(mp)
        for t in threads:
            # 0 asks for OpenCV's default pool; setNumThreads(0) would mean
            # "no threading", so the default is restored with -1.
            cv2.setNumThreads(1 if t == 1 else (t if t > 1 else -1))
            med, mn, n, masses = time_scene(img, meta["defs"], args.warmup, args.iters,
                                            args.max_seconds)
            scene = f"{meta['width']}x{meta['height']} m={meta['objects']}"
            print(f"{scene:<18} {t:>4} {med:>10.3f} {mn:>10.3f} {n:>5}", flush=True)
            results.append({"width": meta["width"], "height": meta["height"],
                            "objects": meta["objects"], "seed": meta.get("seed"),
                            "variant": "per-object", "threads": t,
                            "median_ms": round(med, 4), "min_ms": round(mn, 4), "iters": n,
                            "masses": masses})
    out = {"tool": "opencv_baseline", "opencv": cv2.__version__,
           "machine": {"cpu": cpu_name(), "cores": os.cpu_count(),
                       "os": f"{platform.system()} {platform.release()} {platform.machine()}",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
           "scenes": results}
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
