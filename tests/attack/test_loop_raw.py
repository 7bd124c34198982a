#!/usr/bin/python3
"""Attack: --loop on inputs that cannot seek (issue 11, item 6).

A raw .h264 elementary stream (FFmpeg cannot seek it: EPERM) made here with
the ffmpeg CLI, a red square at a known place. trackd --loop --frames N must
go round the file several times: exit 0, N result lines, pts strictly
increasing across the loops, the square found in every frame. The same on a
seekable .mp4 of the same video, for comparison.
Prints `attack: loop_raw tried=N survived=N`.
"""
import os

from attack import case_attack, check, ffmpeg, read_ndjson, run_file

FRAMES = 100  # the clip has 30: three and a bit loops


def case(trackd, d, clip, objs):
    name = os.path.basename(clip)
    out, log = os.path.join(d, name + ".ndjson"), os.path.join(d, name + ".log")
    rc = run_file(trackd, ["--loop", "--frames", str(FRAMES), "-i", clip, "--objects", objs,
                           "-o", out], log)
    ok = check(rc == 0, f"{name}: --loop exits 0 (got {rc})")
    if rc:
        print(open(log).read()[-600:])
    frames = read_ndjson(out)
    ok &= check(len(frames) == FRAMES, f"{name}: {FRAMES} frames over the loops (got {len(frames)})")
    pts = [f["pts"] for f in frames]
    ok &= check(all(b > a for a, b in zip(pts, pts[1:])), f"{name}: pts strictly increasing "
                "across the loops")
    ok &= check(all(f["objects"][0]["found"] and
                    all(abs(a - b) <= 1 for a, b in zip(f["objects"][0]["bbox"], [40, 30, 79, 69]))
                    for f in frames), f"{name}: the square found in every frame of every loop")
    return ok


def cases(trackd, d, objs):
    src = ["-f", "lavfi", "-i", "color=c=gray:s=160x120:r=30:d=1,"
           "drawbox=x=40:y=30:w=40:h=40:color=red:t=fill", "-c:v", "libx264",
           "-pix_fmt", "yuv420p"]
    for ext in ("h264", "mp4"):
        clip = os.path.join(d, "clip." + ext)
        ffmpeg(*src, clip)
        yield case(trackd, d, clip, objs)


if __name__ == "__main__":
    case_attack("loop_raw", cases)
