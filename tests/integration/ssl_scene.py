#!/usr/bin/python3
"""Top-down RoboCup small-size scenes with known truth (issue 26).

Robots wear the league's standard 2010 pattern (a team-coloured centre dot,
four pink/green dots whose colours give the id 0..15, see
examples/ssl-blue.json), the ball is orange, the carpet dark green. Every
frame is drawn at 4x4 supersampling (anti-aliased edges, as a camera sees
them), with Gaussian noise, and the truth of each frame is returned: each
robot's team, id, centre (px), heading (degrees counter-clockwise on screen
from +x) and whether it touches another robot, and the ball's centre.

Used by the marker tests (through the daemon, on lossless and H.264 clips)
and the marker benchmark. Numbers in millimetres follow the league's rules:
robot diameter 180, the cover's flat front 55 from the centre, centre dot
50, other dots 40 at 65 from the centre (front pair 35 forward and 54.77 to
each side, back pair 54.77 back and 35 to each side), ball 43.

    python3 ssl_scene.py OUT.mkv [--frames N] [--size WxH] [--robots N]
                         [--h264] [--seed S]   # writes OUT and OUT.truth.json
"""
import argparse
import json
import math
import subprocess
import sys

import numpy as np

# The standard pattern's dots: slot (x forward, y left, mm) and, per id,
# the colour of each slot (P pink, G green), as in the league's pattern
# image, ids in raster order.
DOTS = [(35.0, 54.772), (35.0, -54.772), (-54.772, 35.0), (-54.772, -35.0)]
STD16 = ["PPGP", "GPGP", "GGGP", "PGGP", "PPPG", "GPPG", "GGPG", "PGPG",
         "GGGG", "PPPP", "PPGG", "GGPP", "GPGG", "GPPP", "PGGG", "PGPP"]

CARPET = (25, 95, 35)
COVER = (20, 20, 20)
COLOURS = {"blue": (30, 70, 250), "yellow": (245, 225, 30), "P": (250, 50, 200),
           "G": (70, 235, 70), "ball": (255, 120, 0)}
ROBOT_R, FRONT, CENTRE_R, DOT_R, DOT_DIST, BALL_R = 90.0, 55.0, 25.0, 20.0, 65.0, 21.5
SS = 4  # supersampling per axis


def robot_paths(n, w, h, scale, frames, rng):
    """n robots on slow circles and lines that stay in the frame; headings
    turn at their own rates. Returns per frame a list of (x, y, heading)."""
    margin = (ROBOT_R + 10) * scale
    out = []
    params = []
    cols = max(1, int(math.ceil(math.sqrt(n * w / h))))
    rows = int(math.ceil(n / cols))
    for i in range(n):
        cx = margin + (w - 2 * margin) * ((i % cols) + 0.5) / cols
        cy = margin + (h - 2 * margin) * ((i // cols) + 0.5) / rows
        params.append((cx, cy, rng.uniform(0, 2 * math.pi), rng.uniform(0.01, 0.04),
                       rng.uniform(0, 360), rng.uniform(-6, 6)))
    amp = 0.25 * min((w - 2 * margin) / cols, (h - 2 * margin) / max(rows, 1))
    for f in range(frames):
        poses = []
        for cx, cy, ph, om, h0, turn in params:
            x = cx + amp * math.cos(ph + om * f)
            y = cy + 0.6 * amp * math.sin(ph + 1.3 * om * f)
            poses.append((x, y, (h0 + turn * f) % 360.0))
        out.append(poses)
    return out


def draw_frame(w, h, robots, ball, scale, rng, noise):
    """robots: [(team, id, x, y, heading)] px and degrees; ball (x, y) or
    None. Returns an HxWx3 uint8 frame."""
    big = np.empty((h * SS, w * SS, 3), np.float32)
    big[:] = CARPET
    yy, xx = np.mgrid[0:h * SS, 0:w * SS].astype(np.float32)
    xx = (xx + 0.5) / SS - 0.5  # sample positions in frame pixels
    yy = (yy + 0.5) / SS - 0.5
    for team, rid, x, y, hd in robots:
        r = ROBOT_R * scale + 2
        x0, x1 = int(max(0, (x - r) * SS)), int(min(w * SS, (x + r + 1) * SS))
        y0, y1 = int(max(0, (y - r) * SS)), int(min(h * SS, (y + r + 1) * SS))
        sx, sy = xx[y0:y1, x0:x1] - x, yy[y0:y1, x0:x1] - y
        th = math.radians(hd)
        # robot frame: forward along heading (screen y down -> negate)
        fx = (sx * math.cos(th) - sy * math.sin(th)) / scale
        fy = (-sx * math.sin(th) - sy * math.cos(th)) / scale
        tile = big[y0:y1, x0:x1]
        cover = (fx * fx + fy * fy <= ROBOT_R ** 2) & (fx <= FRONT)
        tile[cover] = COVER
        spots = [(0.0, 0.0, CENTRE_R, team)]
        spots += [(dx, dy, DOT_R, STD16[rid][k]) for k, (dx, dy) in enumerate(DOTS)]
        for dx, dy, rad, col in spots:
            m = (fx - dx) ** 2 + (fy - dy) ** 2 <= rad ** 2
            tile[m] = COLOURS[col]
    if ball is not None:
        bx, by = ball
        m = (xx - bx) ** 2 + (yy - by) ** 2 <= (BALL_R * scale) ** 2
        big[m] = COLOURS["ball"]
    img = big.reshape(h, SS, w, SS, 3).mean(axis=(1, 3))
    if noise > 0:
        img += rng.normal(0, noise, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def touching(poses, i, scale):
    x, y = poses[i][0], poses[i][1]
    return any(j != i and math.hypot(p[0] - x, p[1] - y) < 2 * ROBOT_R * scale + 2
               for j, p in enumerate(poses))


def scene(frames, w, h, n_robots, scale, seed, noise=2.0):
    """Yields (frame, truth) for each frame."""
    rng = np.random.default_rng(seed)
    paths = robot_paths(n_robots, w, h, scale, frames, rng)
    for f in range(frames):
        robots = []
        for i, (x, y, hd) in enumerate(paths[f]):
            team = "blue" if i % 2 == 0 else "yellow"
            robots.append((team, (i // 2) % 16, x, y, hd))
        ball = (w * (0.2 + 0.6 * (f % 97) / 97.0), h * 0.5 + 0.3 * h * math.sin(f / 13.0))
        img = draw_frame(w, h, robots, ball, scale, rng, noise)
        truth = {"frame": f, "ball": list(ball), "robots": [
            {"team": t, "id": i, "x": x, "y": y, "heading": hd,
             "touching": touching(paths[f], k, scale)}
            for k, (t, i, x, y, hd) in enumerate(robots)]}
        yield img, truth


def write_clip(out, w, h, fps, frames, h264=False):
    """Pipes the RGB frames of (frame, truth) pairs to the ffmpeg CLI, into
    out (H.264, yuv420p, crf 16; else FFV1, lossless RGB); returns the
    truths in frame order."""
    codec = (["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "16", "-preset", "fast"]
             if h264 else ["-c:v", "ffv1", "-pix_fmt", "bgr0"])
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{w}x{h}", "-r", str(fps), "-i", "-"] + codec + [out]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    truths = []
    for img, truth in frames:
        proc.stdin.write(img.tobytes())
        truths.append(truth)
    proc.stdin.close()
    if proc.wait() != 0:
        sys.exit("ffmpeg failed")
    return truths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--robots", type=int, default=8)
    ap.add_argument("--scale", type=float, default=0.45, help="px per mm")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--h264", action="store_true", help="H.264 (yuv420p, crf 16); else FFV1")
    ap.add_argument("--seed", type=int, default=26)
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    truths = write_clip(a.out, w, h, a.fps, scene(a.frames, w, h, a.robots, a.scale, a.seed),
                        a.h264)
    with open(a.out + ".truth.json", "w") as f:
        json.dump({"size": [w, h], "scale": a.scale, "frames": truths}, f)


if __name__ == "__main__":
    main()
