#!/usr/bin/python3
"""OpenCV blob baseline for `trackd-bench --experiment blobs`: per colour
cv2.inRange + cv2.connectedComponentsWithStats (8-connected) on the very
scenes the experiment runs.

`trackd-bench --experiment blobs --dump-scenes DIR` writes every blob scene
as DIR/blobs_WxH_CxN_{clean,noisy}.rgb (raw RGB24) + .json (the objects, with
blobs, min_area and connectivity); this script times one frame's worth of
OpenCV's connected components on them, colour by colour, and writes a JSON
file that `trackd-bench --experiment blobs --opencv-blobs FILE` reads for its
"x cv" and "x cv-fast" ratios. Run it with Debian's python3-opencv
(/usr/bin/python3); it is a benchmark-only dependency.

Variants (each per scene and thread setting):
  default        cv2.connectedComponentsWithStats(mask, connectivity=8): 32-bit
                 labels, OpenCV's default algorithm (what a user writes first)
  16u-ALGO       cv2.connectedComponentsWithStatsWithAlgorithm(mask, 8, CV_16U,
                 cv2.CCL_ALGO) for ALGO in default, wu, grana, spaghetti,
                 bolelli: 16-bit labels and each labelling algorithm; the
                 benchmark takes the fastest that gave the default's answer
  inrange-only   the masks alone (what the labelling costs on top of them)
threads: 1 = cv2.setNumThreads(1); 0 = OpenCV's default pool (all cores).

Output (documented in bench/README.md):
  {"tool": "opencv_blobs", "opencv": "4.6.0", "machine": {...},
   "scenes": [{"width": 1920, "height": 1080, "colours": 8, "per_colour": 16,
               "noisy": 0, "seed": ..., "variant": "default", "threads": 1,
               "median_ms": 150.2, "per_colour_ms": 18.8, "min_ms": ..., "iters": 7,
               "check": [{"count": 16, "top": [[area, x0, y0, x1, y1], ...]}, ...]},
              ...]}
check (default variant only): per colour, the components with area >= the
object's min_area, largest first, the first K (= the object's blobs) plus
every further one as large as the K-th (ties), and how many there are in all;
trackd-bench checks its own blob lists against it.
"""
import glob
import json
import os
import platform
import sys
import time

import cv2
import numpy as np

from baseline_scenes import arg_parser, load_scene, timed_runs

ALGOS = [("default", "CCL_DEFAULT"), ("wu", "CCL_WU"), ("grana", "CCL_GRANA"),
         ("spaghetti", "CCL_SPAGHETTI"), ("bolelli", "CCL_BOLELLI")]


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def blob_scenes(scenes_dir):
    """DIR/blobs_*.json by size, colours and noise; exits when there are none."""
    def order(path):
        with open(path) as f:
            m = json.load(f)
        return (m["width"], m["height"], m["colours"], bool(m["noisy"]))

    metas = sorted(glob.glob(os.path.join(scenes_dir, "blobs_*.json")), key=order)
    if not metas:
        sys.exit(f"no blobs_*.json in {scenes_dir}: run "
                 "trackd-bench --experiment blobs --dump-scenes first")
    return metas


def label_fn(variant):
    """The labelling call of one variant: mask -> (n, labels, stats, centroids)."""
    if variant == "default":
        return lambda m: cv2.connectedComponentsWithStats(m, connectivity=8)
    algo = getattr(cv2, dict(ALGOS)[variant[4:]])
    return lambda m: cv2.connectedComponentsWithStatsWithAlgorithm(m, 8, cv2.CV_16U, algo)


def frame_once(img, boxes, label):
    """One frame: every colour's mask and, unless label is None, its
    components' stats (background row 0 dropped)."""
    out = []
    for lo, hi in boxes:
        mask = cv2.inRange(img, lo, hi)
        if label is not None:
            out.append(label(mask)[2][1:])
    return out


def check_of(stats_per_colour, defs):
    """The per-colour lists trackd-bench checks against (see the module doc)."""
    check = []
    for stats, d in zip(stats_per_colour, defs):
        min_area = max(1, d.get("min_area", 0))
        k = d["blobs"]
        comps = [(int(s[cv2.CC_STAT_AREA]), int(s[cv2.CC_STAT_LEFT]), int(s[cv2.CC_STAT_TOP]),
                  int(s[cv2.CC_STAT_LEFT] + s[cv2.CC_STAT_WIDTH] - 1),
                  int(s[cv2.CC_STAT_TOP] + s[cv2.CC_STAT_HEIGHT] - 1))
                 for s in stats if s[cv2.CC_STAT_AREA] >= min_area]
        comps.sort(key=lambda c: (-c[0], c[2], c[1], c[4], c[3]))
        top = comps[:k]
        if top:
            top += [c for c in comps[k:] if c[0] == top[-1][0]]
        check.append({"count": len(comps), "top": [list(c) for c in top]})
    return check


def main():
    ap = arg_parser(__doc__, "--opencv-blobs", warmup=1, iters=7, max_seconds=15.0)
    ap.add_argument("--threads", default="1,0",
                    help="comma list: 1 = one thread, 0 = OpenCV default (all cores)")
    ap.add_argument("--variants", default="default,16u-default,16u-wu,16u-grana,"
                    "16u-spaghetti,16u-bolelli,inrange-only", help="comma list (see above)")
    args = ap.parse_args()
    variants = args.variants.split(",")
    for v in variants:
        if v not in ("default", "inrange-only") and not (v.startswith("16u-") and v[4:] in dict(ALGOS)):
            sys.exit(f"unknown variant {v}")

    threads = [int(t) for t in args.threads.split(",")]
    results = []
    print(f"# opencv_blobs: OpenCV {cv2.__version__}, {cpu_name()}, {os.cpu_count()} cores")
    print(f"{'scene':<28} {'variant':<14} {'thr':>4} {'median_ms':>10} {'per_colour':>10} "
          f"{'iters':>5}")
    for mp in blob_scenes(args.scenes):
        meta, img = load_scene(mp)
        defs = meta["defs"]
        if any(d.get("connectivity", 8) != 8 for d in defs):
            sys.exit(f"{mp}: only 8-connected objects are compared")
        # Pixels and boxes are both R,G,B: inRange is per channel.
        boxes = [(np.array(d["lo"], np.uint8), np.array(d["hi"], np.uint8)) for d in defs]
        scene = (f"{meta['width']}x{meta['height']} {meta['colours']}x{meta['per_colour']} "
                 f"{'noisy' if meta['noisy'] else 'clean'}")
        want = None
        for t in threads:
            # 0 asks for OpenCV's default pool; setNumThreads(0) would mean
            # "no threading", so the default is restored with -1.
            cv2.setNumThreads(1 if t == 1 else (t if t > 1 else -1))
            for v in variants:
                label = None if v == "inrange-only" else label_fn(v)

                def run_once():
                    t0 = time.perf_counter()
                    res = frame_once(img, boxes, label)
                    return (time.perf_counter() - t0) * 1e3, res

                try:
                    med, mn, n, res = timed_runs(run_once, args.warmup, args.iters,
                                                 args.max_seconds)
                except cv2.error as e:  # e.g. more labels than 16 bits hold
                    print(f"# {scene} {v} thr {t}: OpenCV error: {str(e).strip()}", flush=True)
                    continue
                entry = {"width": meta["width"], "height": meta["height"],
                         "objects": meta["objects"], "colours": meta["colours"],
                         "per_colour": meta["per_colour"], "noisy": int(bool(meta["noisy"])),
                         "seed": meta.get("seed"), "variant": v, "threads": t,
                         "median_ms": round(med, 4), "min_ms": round(mn, 4),
                         "per_colour_ms": round(med / meta["colours"], 4), "iters": n}
                if label is not None:
                    got = check_of(res, defs)
                    if want is None:
                        want = got
                    if got != want:
                        # A variant that labels differently is not a faster
                        # way to the same answer: left out of "fastest".
                        print(f"# {scene} {v} thr {t}: components differ from the default "
                              "path; left out", flush=True)
                        continue
                    if v == "default":
                        entry["check"] = got
                results.append(entry)
                print(f"{scene:<28} {v:<14} {t:>4} {med:>10.3f} {med / meta['colours']:>10.3f} "
                      f"{n:>5}", flush=True)
    out = {"tool": "opencv_blobs", "opencv": cv2.__version__,
           "machine": {"cpu": cpu_name(), "cores": os.cpu_count(),
                       "os": f"{platform.system()} {platform.release()} {platform.machine()}",
                       "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
           "scenes": results}
    with open(args.json, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
