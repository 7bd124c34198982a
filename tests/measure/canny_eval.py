#!/usr/bin/python3
"""The seed's quality evaluation of Canny (seed 000, digest A.2.2) on
synthetic images with known edges, ours beside OpenCV's Canny.

Images: W x H grey, a flat background (100) with non-overlapping rectangles,
discs and triangles whose levels differ from it by 30 or more, then
Gaussian noise of standard deviation N (0, 5, 10, 20, 30 grey levels),
clipped to bytes. Seeded: the same images every run.

Truth: the label map's boundary, one side of it: pixel p is an edge pixel
when its label differs from the label of its right or lower neighbour.

Runs, on each image, with the same sigma and thresholds:
  ours    trackd-bench --experiment canny --image IN --out E --smoothed S
          (our whole pipeline: luma, our integer Gaussian, Sobel, NMS,
          hysteresis, gpu/canny.h), runner cpu or cuda;
  opencv  cv2.Canny(S, low, high, apertureSize=3, L2gradient=True) on our
          smoothed image S (OpenCV's Canny has no smoothing of its own), so
          the two differ only in what follows the Gaussian.

Measures (the seed's, Boaventura & Gonzaga 2009), NI reference edge pixels,
NB detected ones, per image, then averaged per noise level:
  Pco = TP / max(NI, NB), Pnd = FN / max(NI, NB), Pfa = FP / max(NI, NB)
  - against the truth, matching tolerance d = 1 (Chebyshev): a truth pixel
    is found (TP) when a detected pixel lies within 1 pixel of it, else it
    is FN; a detected pixel with no truth pixel within 1 is FP. (A step
    between two pixels is equally well placed on either; the truth marks
    one side.)
  - ours against OpenCV as the reference, d = 0 (exact positions, the
    seed's own protocol of CudaCanny against ItkCanny: TP = pixels in
    both, FN = OpenCV's alone, FP = ours alone). gpu/canny.h's rules are
    OpenCV's (L2 gradient, Sobel 3x3 with replicated borders, the same
    sectors, ties and thresholds; outside neighbours 0), so the maps should
    be identical: --check fails on any pixel that differs.

Usage: canny_eval.py --bench build/bench/trackd-bench [--runner cpu|cuda]
       [--sigma 1.4 --low 20 --high 50] [--images 20] [--size 481x321]
       [--json out.json] [--check]
Needs numpy and OpenCV (Debian: python3-opencv; /usr/bin/python3 here).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

try:
    import cv2
except ImportError:  # pragma: no cover - reported, not hidden
    cv2 = None

NOISE = (0, 5, 10, 20, 30)


def scene(rng, w, h):
    """A label map and its grey image (before noise)."""
    lab = np.zeros((h, w), np.int32)
    img = np.full((h, w), 100.0)
    yy, xx = np.mgrid[0:h, 0:w]
    placed = 0
    for _ in range(400):
        if placed >= 14:
            break
        kind = rng.integers(3)
        cx, cy = rng.integers(8, w - 8), rng.integers(8, h - 8)
        r = int(rng.integers(8, max(9, min(w, h) // 6)))
        if kind == 0:
            m = (abs(xx - cx) <= r) & (abs(yy - cy) <= int(r * rng.uniform(0.4, 1.0)))
        elif kind == 1:
            m = (xx - cx) ** 2 + (yy - cy) ** 2 <= r * r
        else:
            a = rng.uniform(0, 2 * np.pi)
            pts = [(cx + r * np.cos(a + k * 2.1), cy + r * np.sin(a + k * 2.1)) for k in range(3)]
            m = np.ones((h, w), bool)
            for k in range(3):
                (x0, y0), (x1, y1) = pts[k], pts[(k + 1) % 3]
                m &= (x1 - x0) * (yy - y0) - (y1 - y0) * (xx - x0) >= 0
        if not m.any():
            continue
        # No overlap and a 3-pixel gap from every shape (and the border).
        grown = m.copy()
        for dy in range(-3, 4):
            for dx in range(-3, 4):
                grown |= np.roll(np.roll(m, dy, 0), dx, 1)
        if (lab[grown] != 0).any() or grown[:2].any() or grown[-2:].any() or \
                grown[:, :2].any() or grown[:, -2:].any():
            continue
        placed += 1
        lab[m] = placed
        img[m] = rng.choice([rng.integers(20, 71), rng.integers(130, 236)])
    return lab, img


def truth_of(lab):
    t = np.zeros(lab.shape, bool)
    t[:, :-1] |= lab[:, :-1] != lab[:, 1:]
    t[:-1, :] |= lab[:-1, :] != lab[1:, :]
    return t


def dilate(m, d):
    if d == 0:
        return m
    out = m.copy()
    p = np.pad(m, d)
    h, w = m.shape
    for dy in range(-d, d + 1):
        for dx in range(-d, d + 1):
            out |= p[d + dy:d + dy + h, d + dx:d + dx + w]
    return out


def measures(ref, det, d):
    ni, nb = int(ref.sum()), int(det.sum())
    tp = int((ref & dilate(det, d)).sum())
    fn = ni - tp
    fp = int((det & ~dilate(ref, d)).sum())
    den = max(ni, nb, 1)
    return tp / den, fn / den, fp / den


def write_pgm(path, a):
    with open(path, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (a.shape[1], a.shape[0]))
        f.write(np.ascontiguousarray(a, np.uint8).tobytes())


def read_pgm(path):
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(maxsplit=4)
    w, h = int(parts[1]), int(parts[2])
    return np.frombuffer(parts[4][:w * h], np.uint8).reshape(h, w)


def ours(args, img, tmp):
    src, e, s = (os.path.join(tmp, n) for n in ("in.pgm", "e.pgm", "s.pgm"))
    write_pgm(src, img)
    cmd = [args.bench, "--experiment", "canny", "--image", src, "--out", e, "--smoothed", s,
           "--sigma", str(args.sigma), "--low", str(args.low), "--high", str(args.high),
           "--runners", args.runner, "--threads", "1"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode:
        sys.exit("canny_eval: %s failed: %s" % (" ".join(cmd), r.stderr.strip()))
    return read_pgm(e) > 0, read_pgm(s), json.loads(r.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True)
    ap.add_argument("--runner", default="cpu", choices=("cpu", "cuda"))
    ap.add_argument("--sigma", type=float, default=1.4)
    ap.add_argument("--low", type=int, default=20)
    ap.add_argument("--high", type=int, default=50)
    ap.add_argument("--images", type=int, default=20)
    ap.add_argument("--size", default="481x321")
    ap.add_argument("--seed", type=int, default=2011)
    ap.add_argument("--json")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when any pixel differs from OpenCV's Canny")
    args = ap.parse_args()
    if cv2 is None:
        sys.exit("canny_eval: OpenCV (python3-opencv) is needed for the comparison")
    w, h = (int(v) for v in args.size.split("x"))
    rows = []
    print("canny_eval: %d images of %dx%d per noise level, sigma %.2f, low %d, high %d, "
          "runner %s, OpenCV %s" % (args.images, w, h, args.sigma, args.low, args.high,
                                    args.runner, cv2.__version__))
    print("%6s | %-26s | %-26s | %-26s" % ("noise", "ours vs truth (d=1)",
                                           "opencv vs truth (d=1)", "ours vs opencv (d=0)"))
    print("%6s | %8s %8s %8s | %8s %8s %8s | %8s %8s %8s" % (
        "", "Pco", "Pnd", "Pfa", "Pco", "Pnd", "Pfa", "Pco", "Pnd", "Pfa"))
    with tempfile.TemporaryDirectory() as tmp:
        for noise in NOISE:
            rng = np.random.default_rng(args.seed + noise)
            acc = np.zeros((3, 3))
            identical = differ = 0
            for _ in range(args.images):
                lab, clean = scene(rng, w, h)
                img = np.clip(np.rint(clean + rng.normal(0, noise, clean.shape)), 0, 255)
                det, sm, _ = ours(args, img.astype(np.uint8), tmp)
                cv = cv2.Canny(sm, args.low, args.high, apertureSize=3, L2gradient=True) > 0
                t = truth_of(lab)
                acc[0] += measures(t, det, 1)
                acc[1] += measures(t, cv, 1)
                acc[2] += measures(cv, det, 0)
                identical += int((cv == det).all())
                differ += int((cv != det).sum())
            acc /= args.images
            rows.append({"noise": noise, "ours_truth": acc[0].tolist(),
                         "opencv_truth": acc[1].tolist(), "ours_opencv": acc[2].tolist(),
                         "identical_maps": identical, "images": args.images,
                         "differing_px": differ})
            print("%6d | %8.4f %8.4f %8.4f | %8.4f %8.4f %8.4f | %8.4f %8.4f %8.4f  %d/%d maps "
                  "identical, %d px differ" % ((noise, *acc[0], *acc[1], *acc[2], identical,
                                                args.images, differ)))
    bad = sum(r["differing_px"] for r in rows)
    if args.check and bad:
        sys.exit("canny_eval: %d pixels differ from OpenCV's Canny" % bad)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"size": [w, h], "sigma": args.sigma, "low": args.low, "high": args.high,
                       "runner": args.runner, "opencv": cv2.__version__, "rows": rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
