#!/usr/bin/python3
"""Integration: tracked instances ("track": true) through the daemon on
clips generated here, --mode roi against --mode full.

Three red balls (radius R) move over a gray checkered background: A and B
cross head-on at different speeds (4 and -2.5 px/frame), overlapping for a
few frames; C leaves through the right edge and comes back from it, moving
left, after more than coast_frames frames away. A green ball is an
untracked object. The clips are made at test time (raw RGB frames piped to
the ffmpeg CLI): rgb.mkv (ffv1, lossless) and x264.mp4 (yuv420p, crf 16:
4:2:0 chroma blurs the edges; the comparison between modes is exact all
the same, both modes see the same decoded frames).

`trackd --input CLIP --objects FILE --fast --output - --mode roi|full` runs
on each clip. A ball is *apart* in a frame when every other red ball has
its centre at least 2R + GAP away and *fully visible* when its disk lies
inside the frame with a pixel to spare. Checked:
- roi mode really works in regions: most frames are "pass": "roi" and
  instances are measured "via": "roi";
- for every apart, fully visible ball in every frame both modes have
  exactly one instance seen at it (centroid within TOL of the drawn centre)
  and the two have the same mass, centroid, box and perimeter, exactly;
- no id switch: in each mode every visit of a ball (A and B: the whole
  clip; C: before it leaves, after it comes back) has one id, no two visits
  share one, and C's id after its return is new (above every id seen
  before);
- the untracked green object's results are the same in both modes, and
  every tracked result is in `instances` with lost 0 and "via" set.
"""
import json
import os
import subprocess
import sys
import tempfile

W, H, FPS, N = 320, 240, 30, 72
R = 10
GAP = 4
TOL = 1.5  # px: identifies a ball's instance (4:2:0 edge bias is < 1 px)
RED, GREEN = (225, 35, 35), (35, 190, 60)
COAST = 10


def red_centre(k, f):
    """Centre of red ball k (0 = A, 1 = B, 2 = C) in frame f."""
    if k == 0:
        return 20 + 4.0 * f, 80 + 0.1 * f
    if k == 1:
        return 300 - 2.5 * f, 86.0
    # C: right at 5 px/frame, out past the right edge from frame 16; back
    # from the right at -5 px/frame, in view again from frame 36.
    if f < 30:
        return 250 + 5.0 * f, 180.0
    return 330 - 5.0 * (f - 35), 176.0


def green_centre(f):
    return 40 + 3.0 * f, 215 - 0.5 * f


def visit(k, f):
    """Which visit of ball k frame f belongs to (C: 0 before it left, 1
    after it came back)."""
    return 0 if k < 2 or f < 30 else 1


OBJECTS = {"objects": [
    {"name": "red", "space": "hsv", "lo": [350, 120, 100], "hi": [10, 255, 255],
     "blobs": 4, "min_area": 60, "track": True, "coast_frames": COAST},
    {"name": "green", "space": "rgb", "lo": [0, 140, 10], "hi": [90, 255, 110]},
]}


def disk(buf, cx, cy, rgb):
    for y in range(max(0, int(cy - R) - 1), min(H, int(cy + R) + 2)):
        for x in range(max(0, int(cx - R) - 1), min(W, int(cx + R) + 2)):
            if (x - cx) ** 2 + (y - cy) ** 2 <= R * R:
                o = (y * W + x) * 3
                buf[o:o + 3] = bytes(rgb)


def frame(f):
    row = bytearray()
    for x in range(W):
        v = 90 + ((x // 16) % 2) * 30
        row += bytes((v, v, v))
    buf = bytearray(row * H)
    disk(buf, *green_centre(f), GREEN)
    for k in range(3):
        disk(buf, *red_centre(k, f), RED)
    return bytes(buf)


def make_clip(path, codec_args):
    cmd = ["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
           "-s", f"{W}x{H}", "-r", str(FPS), "-i", "-"] + codec_args + [path]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE)
    for f in range(N):
        p.stdin.write(frame(f))
    p.stdin.close()
    if p.wait() != 0:
        sys.exit(f"ffmpeg failed making {path}")


def run(trackd, clip, objs, mode):
    out = subprocess.run([trackd, "--input", clip, "--objects", objs, "--fast", "--output", "-",
                          "--no-server", "--log-level", "warn", "--backend", "cpu",
                          "--mode", mode], capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        sys.exit(f"trackd --mode {mode} exited {out.returncode} on {clip}: {out.stderr}")
    msgs = [json.loads(line) for line in out.stdout.splitlines()]
    if len(msgs) != N:
        sys.exit(f"{clip} --mode {mode}: expected {N} NDJSON lines, got {len(msgs)}")
    return msgs


def apart_and_visible(k, f):
    cx, cy = red_centre(k, f)
    if cx - R < 1 or cx + R > W - 2 or cy - R < 1 or cy + R > H - 2:
        return False
    for j in range(3):
        if j != k:
            ox, oy = red_centre(j, f)
            if (ox - cx) ** 2 + (oy - cy) ** 2 < (2 * R + GAP) ** 2:
                return False
    return True


def check_clip(trackd, clip, objs, errors):
    runs = {m: run(trackd, clip, objs, m) for m in ("roi", "full")}
    name = os.path.basename(clip)

    def fail(msg):
        errors.append(f"{name}: {msg}")

    roi_passes = sum(m["pass"] == "roi" for m in runs["roi"])
    via_roi = sum(i["via"] == "roi" for m in runs["roi"] for i in m["objects"][0]["instances"])
    if roi_passes < N // 2 or via_roi < N:
        fail(f"roi mode used regions in {roi_passes} frames ({via_roi} instances via roi)")
    if any(m["pass"] != "full" or m["rounds"] != 1 for m in runs["full"]):
        fail("--mode full made a frame that was not one full pass")

    ids = {m: {} for m in runs}  # mode -> (ball, visit) -> set of ids
    first_seen = {m: {} for m in runs}  # mode -> id -> frame it first appeared
    compared = 0
    for f in range(N):
        got = {}
        for mode, msgs in runs.items():
            red, green = msgs[f]["objects"]
            insts = red["instances"]
            for i in insts:
                first_seen[mode].setdefault(i["id"], f)
                if i["lost"] == 0 and i["via"] not in ("roi", "full"):
                    fail(f"frame {f} {mode}: instance {i['id']} seen without via")
            seen = [i for i in insts if i["lost"] == 0]
            if sorted((b["cx"], b["cy"]) for b in red["blobs"]) != \
                    sorted((i["cx"], i["cy"]) for i in seen):
                fail(f"frame {f} {mode}: red's blobs are not its seen instances")
            for k in range(3):
                if not apart_and_visible(k, f):
                    continue
                cx, cy = red_centre(k, f)
                near = [i for i in seen if abs(i["cx"] - cx) <= TOL and abs(i["cy"] - cy) <= TOL]
                if len(near) != 1:
                    fail(f"frame {f} {mode}: ball {'ABC'[k]} at ({cx:.1f}, {cy:.1f}) has "
                         f"{len(near)} instances: {seen}")
                    continue
                got.setdefault(k, {})[mode] = near[0]
                ids[mode].setdefault((k, visit(k, f)), set()).add(near[0]["id"])
        for k, by_mode in got.items():
            if len(by_mode) != 2:
                continue
            a, b = by_mode["roi"], by_mode["full"]
            for key in ("mass", "cx", "cy", "bbox", "perimeter"):
                if a[key] != b[key]:
                    fail(f"frame {f}: ball {'ABC'[k]} {key} roi {a[key]} != full {b[key]}")
            compared += 1
        g = [m["objects"][1] for m in (runs["roi"][f], runs["full"][f])]
        if g[0] != g[1] or "instances" in g[0]:
            fail(f"frame {f}: untracked green differs: {g[0]} vs {g[1]}")
    if compared < 2 * N:
        fail(f"only {compared} ball-frames compared")
    for mode in runs:
        owner = {}
        for key, s in sorted(ids[mode].items()):
            if len(s) != 1:
                fail(f"{mode}: ball {'ABC'[key[0]]} visit {key[1]} had ids {sorted(s)}")
            for i in s:
                if owner.setdefault(i, key) != key:
                    fail(f"{mode}: id {i} used for {owner[i]} and {key}")
        if len(ids[mode]) != 4:
            fail(f"{mode}: visits seen {sorted(ids[mode])}")
        back = ids[mode].get((2, 1), set())
        if back:
            (cid,) = tuple(back)[:1]
            earlier = [i for i, f0 in first_seen[mode].items() if f0 < first_seen[mode][cid]]
            if earlier and cid <= max(earlier):
                fail(f"{mode}: C's id after its return, {cid}, is not new ({earlier})")
    return compared


def main():
    trackd = sys.argv[1]
    errors = []
    with tempfile.TemporaryDirectory() as d:
        objs = os.path.join(d, "objects.json")
        with open(objs, "w") as fh:
            json.dump(OBJECTS, fh)
        clips = [("rgb.mkv", ["-c:v", "ffv1", "-pix_fmt", "bgr0"]),
                 ("x264.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-crf", "16"])]
        for clip, args in clips:
            path = os.path.join(d, clip)
            make_clip(path, args)
            n = check_clip(trackd, path, objs, errors)
            print(f"{clip}: {n} ball-frames compared between roi and full mode")
    for e in errors[:40]:
        print(e, file=sys.stderr)
    if errors:
        sys.exit(f"{len(errors)} problem(s)")
    print("track_clip: ok")


if __name__ == "__main__":
    main()
