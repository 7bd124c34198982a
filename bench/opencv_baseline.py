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
import json
import os
import platform
import time

import cv2
import numpy as np

from baseline_scenes import arg_parser, load_scene, scene_paths, timed_runs


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


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

    def run_once():
        t0 = time.perf_counter()
        res = track_once(img, boxes)
        return (time.perf_counter() - t0) * 1e3, res

    med, mn, n, res = timed_runs(run_once, warmup, iters, max_seconds)
    masses = [int(r[0]) for r in res] if res else []
    return med, mn, n, masses


def main():
    ap = arg_parser(__doc__, "--opencv", warmup=1, iters=7, max_seconds=15.0)
    ap.add_argument("--threads", default="1,0",
                    help="comma list: 1 = one thread, 0 = OpenCV default (all cores)")
    args = ap.parse_args()

    metas = scene_paths(args.scenes)
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
