#!/usr/bin/env python3
"""The calibration maths against OpenCV (Debian's python3-opencv, a test-only
dependency): trackd's loader solves objects files (through calib_dump) and
the answers must match cv2.findHomography (method 0: DLT + Levenberg-Marquardt),
cv2.undistortPointsIter and cv2.perspectiveTransform within 1e-6, relative.

OpenCV's plain undistortPoints stops after 5 iterations; trackd iterates
until the point stops moving, so it is compared with undistortPointsIter
given a tight criterion (what the 5 steps approach).

usage: test_calib_opencv.py CALIB_DUMP
"""
import json
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

REL = 1e-6
DUMP = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def run_dump(doc, queries):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(doc, f)
        path = f.name
    try:
        text = "".join(" ".join(repr(v) for v in q) + "\n" for q in queries)
        r = subprocess.run([DUMP, path], input=text, capture_output=True, text=True, check=False)
    finally:
        os.unlink(path)
    if r.returncode != 0:
        raise SystemExit(f"calib_dump failed ({r.returncode}): {r.stderr}")
    return json.loads(r.stdout)


def rel_err(a, b):
    """Largest |a - b| relative to the size of b (a vector or matrix)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def homography_err(h_ours, h_cv):
    """The two homographies, each scaled to h22 = 1, compared as matrices
    (Frobenius norm of the difference over that of OpenCV's)."""
    a = np.asarray(h_ours, float).reshape(3, 3)
    b = np.asarray(h_cv, float).reshape(3, 3)
    a, b = a / a[2, 2], b / b[2, 2]
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def case(name, pix, world, queries, K=None, D=None):
    doc = {"objects": [], "calibration": {"unit": "mm", "points": [
        [float(p[0]), float(p[1]), float(w[0]), float(w[1])] for p, w in zip(pix, world)]}}
    if K is not None:
        doc["calibration"]["camera_matrix"] = {"fx": K[0, 0], "fy": K[1, 1], "cx": K[0, 2],
                                               "cy": K[1, 2]}
    if D is not None:
        doc["calibration"]["distortion"] = [float(v) for v in D]
    out = run_dump(doc, queries)
    src = np.asarray(pix, np.float64).reshape(-1, 1, 2)
    q = np.asarray(queries, np.float64).reshape(-1, 1, 2)
    if K is not None:
        crit = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 200, 1e-14)
        dist = np.asarray(D if D is not None else [0, 0, 0, 0], np.float64)
        src = cv2.undistortPointsIter(src, K, dist, None, K, criteria=crit)
        q = cv2.undistortPointsIter(q, K, dist, None, K, criteria=crit)
    h_cv, _ = cv2.findHomography(src, np.asarray(world, np.float64).reshape(-1, 1, 2), 0)
    w_cv = cv2.perspectiveTransform(q, h_cv).reshape(-1, 2)
    e = homography_err(out["h"], h_cv)
    check(e <= REL, f"{name}: homography differs from findHomography by {e:.3g} (relative)")
    extent = float(np.max(np.abs(np.asarray(world, float))))
    worst_u = worst_w = 0.0
    for i, p in enumerate(out["points"]):
        if K is not None:
            check(p["undistorted"] is not None, f"{name}: query {i} not undistorted")
            if p["undistorted"] is not None:
                u_cv = q.reshape(-1, 2)[i]
                worst_u = max(worst_u, float(np.max(np.abs(np.asarray(p["undistorted"]) - u_cv))
                                             / max(np.max(np.abs(u_cv)), 1.0)))
        check(p["world"] is not None, f"{name}: query {i} has no world point")
        if p["world"] is not None:
            worst_w = max(worst_w, float(np.max(np.abs(np.asarray(p["world"]) - w_cv[i])))
                          / max(float(np.max(np.abs(w_cv[i]))), extent))
    check(worst_u <= REL, f"{name}: undistorted points differ by {worst_u:.3g} (relative)")
    check(worst_w <= REL, f"{name}: world points differ by {worst_w:.3g} (relative)")
    print(f"{name}: H {e:.2g}, undistorted {worst_u:.2g}, world {worst_w:.2g} "
          f"(relative; limit {REL:g}); rms {out['rms']:.3g} mm, {out['decimals']} decimals")
    return out


def project(world, K, D, rvec, tvec):
    obj = np.hstack([np.asarray(world, float), np.zeros((len(world), 1))])
    img, _ = cv2.projectPoints(obj, rvec, tvec, K, np.asarray(D if D is not None else [], float))
    return img.reshape(-1, 2)


def heights(K, D, rvec, tvec, grid, rng):
    """World points at a height (trk_calib_to_world_at) and the camera's pose
    against OpenCV: exact floor points through the lens, the pose against
    cv2.solvePnP, and 3-D points at 0..300 mm projected by cv2.projectPoints
    must come back as their (X, Y) within REL."""
    pix = project(grid, K, D, rvec, tvec)
    Rcv, _ = cv2.Rodrigues(rvec)
    centre = -Rcv.T @ tvec
    up = 1.0 if centre[2] > 0 else -1.0   # heights go towards the camera
    pts = []
    for x, y in rng.uniform([0, 0], [800, 500], (30, 2)):
        for h in (0.0, 40.0, 150.0, 300.0):
            pts.append((float(x), float(y), h))
    obj = np.array([(x, y, up * h) for x, y, h in pts])
    img, _ = cv2.projectPoints(obj, rvec, tvec, K, D)
    img = img.reshape(-1, 2)
    queries = [(float(u), float(v), h) for (u, v), (_, _, h) in zip(img, pts)]
    doc = {"objects": [], "calibration": {"unit": "mm", "points": [
        [float(p[0]), float(p[1]), float(w[0]), float(w[1])] for p, w in zip(pix, grid)],
        "camera_matrix": {"fx": K[0, 0], "fy": K[1, 1], "cx": K[0, 2], "cy": K[1, 2]},
        "distortion": [float(v) for v in D]}}
    out = run_dump(doc, queries)
    ok, rv, tv = cv2.solvePnP(np.hstack([np.asarray(grid, float), np.zeros((len(grid), 1))]),
                              pix.reshape(-1, 1, 2), K, D, flags=cv2.SOLVEPNP_ITERATIVE)
    R_pnp, _ = cv2.Rodrigues(rv)
    check("rot" in out, "heights: no pose derived with a camera matrix")
    if "rot" not in out:
        return
    e_r = rel_err(np.asarray(out["rot"]).reshape(3, 3), R_pnp)
    e_t = rel_err(out["tvec"], tv.reshape(3))
    check(e_r <= REL and e_t <= REL, f"heights: pose differs from solvePnP: R {e_r:.3g}, t {e_t:.3g}")
    worst = floor_miss = 0.0
    for p, (x, y, h) in zip(out["points"], pts):
        check(p["world_at"] is not None, f"heights: {p['px']} at {h} mm has no world point")
        if p["world_at"] is None:
            continue
        worst = max(worst, float(np.max(np.abs(np.asarray(p["world_at"]) - (x, y)))) / 800)
        if h == 0.0:
            check(p["world_at"] == p["world"], f"heights: at 0 mm {p['world_at']} != {p['world']}")
        if h == 150.0 and p["world"] is not None:
            floor_miss = max(floor_miss, float(np.hypot(p["world"][0] - x, p["world"][1] - y)))
    check(worst <= REL, f"heights: world points at a height differ by {worst:.3g} (relative)")
    check(floor_miss > 1.0, "heights: the floor map should miss a 150 mm top (the case is too easy)")
    # Above the camera no ray gets there; without a camera matrix there is
    # no pose and a height changes nothing.
    above = run_dump(doc, [(float(img[0][0]), float(img[0][1]), 1e5)])["points"][0]
    check(above["world_at"] is None, f"heights: a point above the camera gave {above['world_at']}")
    del doc["calibration"]["camera_matrix"], doc["calibration"]["distortion"]
    flat = run_dump(doc, queries[:8])
    check("rot" not in flat, "heights: a pose without a camera matrix")
    for p in flat["points"]:
        check(p["world_at"] == p["world"], f"heights: no camera matrix, {p['world_at']} != {p['world']}")
    print(f"heights: pose R {e_r:.2g}, t {e_t:.2g}; world at 0..300 mm {worst:.2g} (relative; "
          f"limit {REL:g}); the floor map alone misses a 150 mm top by up to {floor_miss:.1f} mm")


def main():
    rng = np.random.default_rng(15)
    queries = [(float(x), float(y)) for x, y in rng.uniform([40, 30], [600, 450], (25, 2))]
    K = np.array([[612.0, 0, 331.5], [0, 608.0, 236.25], [0, 0, 1]])
    rvec = np.array([0.55, -0.12, 0.05])   # the camera looks down at the floor, tilted
    tvec = np.array([-400.0, -250.0, 1600.0])

    # 4 points, exact (no lens): a quadrilateral seen in perspective.
    world4 = [(0, 0), (800, 0), (800, 500), (0, 500)]
    pix4 = project(world4, K, None, rvec, tvec)
    case("4 points", pix4, world4, queries)

    # 4 points in another place and order of corners; world in metres-sized numbers.
    for k in range(3):
        quad = np.array([[100, 80], [540, 90], [560, 400], [90, 420]], float)
        quad += rng.uniform(-40, 40, quad.shape)
        case(f"4 random points #{k}", quad, [(0, 0), (2.4, 0), (2.4, 1.5), (0, 1.5)], queries)

    # A 5x4 grid with 0.5 px noise: least squares, OpenCV refines with LM.
    grid = [(x, y) for x in np.linspace(0, 800, 5) for y in np.linspace(0, 500, 4)]
    noisy = project(grid, K, None, rvec, tvec) + rng.normal(0, 0.5, (len(grid), 2))
    case("20 noisy points", noisy, grid, queries)

    # The lens: OpenCV's 5-coefficient model, points seen through it.
    D = np.array([-0.28, 0.09, 0.0012, -0.0007, -0.012])
    pixd = project(grid, K, D, rvec, tvec) + rng.normal(0, 0.3, (len(grid), 2))
    case("20 points, lens k1 k2 p1 p2 k3", pixd, grid, queries, K, D)
    D4 = D[:4]
    pix4d = project(world4, K, D4, rvec, tvec)
    case("4 points, lens k1 k2 p1 p2", pix4d, world4, queries, K, D4)
    case("4 points, camera matrix only", project(world4, K, None, rvec, tvec), world4, queries, K)

    heights(K, D, rvec, tvec, grid, rng)

    # Exactness: 4 points map onto their world points.
    out = run_dump({"objects": [], "calibration": {"unit": "mm", "points": [
        [float(p[0]), float(p[1]), float(w[0]), float(w[1])] for p, w in zip(pix4, world4)]}},
        [tuple(p) for p in pix4])
    for p, w in zip(out["points"], world4):
        err = float(np.max(np.abs(np.asarray(p["world"]) - np.asarray(w, float)))) / 800
        check(err <= 1e-9, f"4 points: {p['px']} maps to {p['world']}, not {w}")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all match OpenCV")
    return 0


if __name__ == "__main__":
    sys.exit(main())
