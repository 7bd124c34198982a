"""What trackd-bench's two baselines (opencv_baseline.py, torch_baseline.py)
share: their command line, the scenes `trackd-bench --dump-scenes DIR`
writes, and the timing loop's rule. Imported from the baselines' own
directory (Python puts a script's directory first on sys.path)."""
import argparse
import glob
import json
import os
import statistics
import sys
import time

import numpy as np


def arg_parser(doc, consumer, warmup, iters, max_seconds):
    """The options both baselines take; consumer is the trackd-bench option
    that reads the output file (--opencv, --torch)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("scenes", help="directory written by trackd-bench --dump-scenes")
    ap.add_argument("--json", required=True, help=f"output file for trackd-bench {consumer}")
    ap.add_argument("--warmup", type=int, default=warmup)
    ap.add_argument("--iters", type=int, default=iters)
    ap.add_argument("--max-seconds", type=float, default=max_seconds,
                    help="per scene and setting, after at least 3 timed runs")
    return ap


def scene_paths(scenes_dir):
    """DIR/scene_*.json by width, height and object count; exits when there
    are none."""
    def order(path):
        with open(path) as f:
            meta = json.load(f)
        return tuple(meta[k] for k in ("width", "height", "objects"))

    metas = sorted(glob.glob(os.path.join(scenes_dir, "scene_*.json")), key=order)
    if not metas:
        sys.exit(f"no scene_*.json in {scenes_dir}: run trackd-bench --dump-scenes first")
    return metas


def load_scene(meta_path):
    """(meta, img): the scene's JSON and its RGB24 frame as an [H, W, 3]
    uint8 array. Only rgb objects are accepted: the libraries' HSV and YCbCr
    conventions differ from trackd's (OpenCV's hue is 0..179, other
    rounding), so only rgb boxes compare like for like."""
    with open(meta_path) as f:
        meta = json.load(f)
    w, h = meta["width"], meta["height"]
    raw = os.path.join(os.path.dirname(meta_path), meta["pixels"])
    img = np.fromfile(raw, dtype=np.uint8)
    if img.size != w * h * 3:
        raise ValueError(f"{raw}: {img.size} bytes, expected {w * h * 3}")
    for d in meta["defs"]:
        if d["space"] != "rgb":
            raise ValueError(f"{meta_path}: object {d['name']} is {d['space']}, only rgb supported")
    return meta, img.reshape(h, w, 3)


def timed_runs(run_once, warmup, iters, max_seconds):
    """Calls run_once() warmup times, then until iters timed runs; slow cases
    (4K, 256 objects: seconds per frame) stop once max_seconds have passed,
    but never with fewer than 3 samples. run_once returns (ms, result).
    Returns (median ms, min ms, timed runs, the last result)."""
    res = None
    for _ in range(warmup):
        _, res = run_once()
    times = []
    start = time.perf_counter()
    while len(times) < iters:
        ms, res = run_once()
        times.append(ms)
        if len(times) >= 3 and time.perf_counter() - start > max_seconds:
            break
    return statistics.median(times), min(times), len(times), res
