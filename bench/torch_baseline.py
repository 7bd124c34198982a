#!/usr/bin/env python3
"""PyTorch baseline for trackd-bench: the same colour tracking written the
obvious ways in PyTorch, on the GPU, on the very scenes the benchmark runs.

`trackd-bench --dump-scenes DIR` writes every standard scene as
DIR/scene_WxH_M.rgb (raw RGB24) + .json (the objects). For each scene this
script uploads the frame once, then times (CUDA events, medians, after
warm-up; the frame stays on the GPU, so this is GPU time only, comparable
with the CUDA backend's kernel time) two variants:

  per-object  one masked reduction per object: a [H,W] mask, its sum, the
              x/y moment sums and the bounding box, M times;
  vectorized  all objects at once through an [M,H,W] boolean mask.

It writes a JSON file that `trackd-bench --torch FILE` and
`trackd-bench --experiment cuda-kernels --torch FILE` read for their
"x torch" ratios (the faster variant per scene):
  {"tool": "torch_baseline", "torch": "2.x", "device": "...",
   "scenes": [{"width": 1920, "height": 1080, "objects": 128,
               "variant": "vectorized", "median_ms": 13.4, "min_ms": ...,
               "iters": 10, "masses": [...]}, ...]}
masses are checked by cuda-kernels against the CPU reference, so both sides
provably computed the same thing. Run with the python3 that has torch (the
GPU machine's); it is a benchmark-only dependency.
"""
import json
import sys
import time

import torch

from baseline_scenes import arg_parser, load_scene, scene_paths, timed_runs


def bbox_from_any(any_cols, n):
    """First and last True along the last dim (-1, -1 when none)."""
    idx = torch.arange(n, device=any_cols.device)
    big = torch.full_like(idx, n)
    first = torch.where(any_cols, idx, big).amin(-1)
    last = torch.where(any_cols, idx, torch.full_like(idx, -1)).amax(-1)
    first = torch.where(first == n, torch.full_like(first, -1), first)
    return first, last


def per_object(img, lo, hi, xs, ys):
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    out = []
    for k in range(lo.shape[0]):
        m = ((r >= lo[k, 0]) & (r <= hi[k, 0]) & (g >= lo[k, 1]) & (g <= hi[k, 1]) &
             (b >= lo[k, 2]) & (b <= hi[k, 2]))
        cols = m.sum(0)  # [W]
        rows = m.sum(1)  # [H]
        mass = cols.sum()
        sx = (cols * xs).sum()
        sy = (rows * ys).sum()
        x0, x1 = bbox_from_any(cols > 0, cols.shape[0])
        y0, y1 = bbox_from_any(rows > 0, rows.shape[0])
        out.append(torch.stack([mass, sx, sy, x0, y0, x1, y1]))
    return torch.stack(out)


def vectorized(img, lo, hi, xs, ys):
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    v = lambda t: t.view(-1, 1, 1)
    m = ((r >= v(lo[:, 0])) & (r <= v(hi[:, 0])) & (g >= v(lo[:, 1])) & (g <= v(hi[:, 1])) &
         (b >= v(lo[:, 2])) & (b <= v(hi[:, 2])))  # [M,H,W]
    cols = m.sum(1)  # [M,W]
    rows = m.sum(2)  # [M,H]
    mass = cols.sum(1)
    sx = (cols * xs).sum(1)
    sy = (rows * ys).sum(1)
    x0, x1 = bbox_from_any(cols > 0, cols.shape[1])
    y0, y1 = bbox_from_any(rows > 0, rows.shape[1])
    return torch.stack([mass, sx, sy, x0, y0, x1, y1], 1)


def time_fn(fn, warmup, iters, max_seconds):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def run_once():
        e0.record()
        res = fn()
        e1.record()
        e1.synchronize()
        return e0.elapsed_time(e1), res

    return timed_runs(run_once, warmup, iters, max_seconds)


def main():
    ap = arg_parser(__doc__, "--torch", warmup=2, iters=10, max_seconds=10.0)
    ap.add_argument("--variants", default="per-object,vectorized")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("torch_baseline: no CUDA device visible to torch")
    dev = torch.device("cuda")
    metas = scene_paths(args.scenes)
    fns = {"per-object": per_object, "vectorized": vectorized}
    variants = args.variants.split(",")
    name = torch.cuda.get_device_name(0)
    print(f"# torch_baseline: torch {torch.__version__}, {name}; GPU time, CUDA-event medians")
    print(f"{'scene':<18} {'variant':<11} {'median_ms':>10} {'min_ms':>10} {'iters':>5}")
    results = []
    for mp in metas:
        meta, img_np = load_scene(mp)
        w, h, n = meta["width"], meta["height"], meta["objects"]
        if n == 0:
            continue
        img = torch.from_numpy(img_np).to(dev)
        lo = torch.tensor([d["lo"] for d in meta["defs"]], dtype=torch.uint8, device=dev)
        hi = torch.tensor([d["hi"] for d in meta["defs"]], dtype=torch.uint8, device=dev)
        xs = torch.arange(w, device=dev, dtype=torch.int64)
        ys = torch.arange(h, device=dev, dtype=torch.int64)
        first = None
        for vname in variants:
            fn = fns[vname]
            try:
                med, mn, it, res = time_fn(lambda: fn(img, lo, hi, xs, ys), args.warmup, args.iters,
                                           args.max_seconds)
            except torch.cuda.OutOfMemoryError:
                print(f"{w}x{h} m={n}: {vname} out of GPU memory, skipped")
                torch.cuda.empty_cache()
                continue
            res = res.cpu()
            if first is None:
                first = res
            elif not torch.equal(first, res):
                sys.exit(f"torch_baseline: variants disagree on {mp}")
            scene = f"{w}x{h} m={n}"
            print(f"{scene:<18} {vname:<11} {med:>10.3f} {mn:>10.3f} {it:>5}", flush=True)
            results.append({"width": w, "height": h, "objects": n, "seed": meta.get("seed"),
                            "variant": vname, "median_ms": round(med, 5), "min_ms": round(mn, 5),
                            "iters": it, "masses": [int(x) for x in res[:, 0].tolist()],
                            "sums": [[int(a), int(b)] for a, b in res[:, 1:3].tolist()],
                            "bboxes": [[int(v) for v in row] for row in res[:, 3:7].tolist()]})
        del img
        torch.cuda.empty_cache()
    out = {"tool": "torch_baseline", "torch": torch.__version__, "device": name,
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "scenes": results}
    with open(args.json, "w") as f:
        json.dump(out, f)
        f.write("\n")


if __name__ == "__main__":
    main()
