#!/usr/bin/python3
"""Integration: the denoising pre-filter end to end, as a user meets it.

A real FFmpeg clip (lossless FFV1, 4:2:0) of a red 60x60 square on grey with
heavy per-channel noise (ffmpeg noise=alls=30, new each frame). Without the
pre-filter an HSV box tuned on the square matches noise all over the frame:
the bounding box is the whole frame and the centroid is pulled away. With the
objects file's "prefilter": {"gaussian": 2} the square is found alone in every
frame. --prefilter overrides the file both ways, the CPU backends agree, and
bad values are refused with the exit codes of README.md.

Tolerance: the square covers x 100..159, y 80..139 (even coordinates, so its
4:2:0 chroma is not shared with grey), centre (129.5, 109.5). A symmetric blur
does not move a symmetric shape's centroid; what remains is the noise the blur
leaves (sigma 30 / (2 sqrt(pi) 2) ~ 4 levels, far inside the box), so 1 pixel
is a generous bound (runs give ~0.2). The box may grow by the pixels whose
blurred edge still passes: 3 at most.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

TRACKD = sys.argv[1]
X0, Y0, S = 100, 80, 60
CX, CY = X0 + (S - 1) / 2, Y0 + (S - 1) / 2


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


def track(clip, objs, *extra):
    r = subprocess.run([TRACKD, "-i", clip, "-c", objs, "--no-server", "--fast", "-o", "-", *extra],
                       capture_output=True, text=True, timeout=120)
    expect(r.returncode == 0, f"trackd {' '.join(extra)} exits 0 ({r.stderr.strip()[-300:]})")
    frames = [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]
    return [f["objects"][0] for f in frames if f.get("type") == "frame"]


def write(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


with tempfile.TemporaryDirectory() as d:
    clip = os.path.join(d, "noisy.mkv")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"color=c=0x707070:s=320x240:d=1:r=10,"
                    f"drawbox=x={X0}:y={Y0}:w={S}:h={S}:color=0xc02828:t=fill,noise=alls=30:allf=t",
                    "-pix_fmt", "yuv420p", "-c:v", "ffv1", clip], check=True, timeout=120)
    red = {"name": "red", "space": "hsv", "lo": [340, 120, 100], "hi": [20, 255, 255]}
    raw_objs, pf_objs = os.path.join(d, "raw.json"), os.path.join(d, "pf.json")
    write(raw_objs, {"objects": [red]})
    write(pf_objs, {"objects": [red], "prefilter": {"gaussian": 2}})

    raw = track(clip, raw_objs)
    expect(len(raw) == 10, f"10 frames tracked ({len(raw)})")
    err_raw = statistics.median(abs(o["cx"] - CX) + abs(o["cy"] - CY) for o in raw)
    whole = sum(o["bbox"] == [0, 0, 319, 239] for o in raw)
    print(f"raw: median centroid error {err_raw:.2f} px, whole-frame bbox in {whole}/10 frames")
    expect(err_raw > 4 and whole >= 5, "without the pre-filter the noise matches all over the frame")

    filt = track(clip, pf_objs)
    expect(len(filt) == 10, "10 frames with the pre-filter")
    for i, o in enumerate(filt):
        x0, y0, x1, y1 = o["bbox"]
        expect(o["found"] and abs(o["cx"] - CX) <= 1 and abs(o["cy"] - CY) <= 1 and
               X0 - 3 <= x0 <= X0 + 1 and Y0 - 3 <= y0 <= Y0 + 1 and
               X0 + S - 2 <= x1 <= X0 + S + 2 and Y0 + S - 2 <= y1 <= Y0 + S + 2,
               f"frame {i} with \"prefilter\": the square alone: centroid ({o['cx']}, {o['cy']}), "
               f"bbox {o['bbox']}")

    # --prefilter overrides the file both ways, and the backends agree.
    expect(track(clip, pf_objs, "--prefilter", "0") == raw, "--prefilter 0 turns the file's off")
    expect(track(clip, raw_objs, "--prefilter", "2") == filt, "--prefilter 2 on a file without one")
    expect(track(clip, pf_objs, "--backend", "cpu-ref") == filt,
           "cpu-ref gives the same results as cpu with the pre-filter")

    # Bad values: usage (64) and configuration (78) errors that say where.
    r = subprocess.run([TRACKD, "-i", clip, "--no-server", "--prefilter", "4.5"],
                       capture_output=True, text=True, timeout=60)
    expect(r.returncode == 64 and "--prefilter SIGMA in pixels (0..4; 0 = off)" in r.stderr,
           f"--prefilter 4.5 exits 64 with the form ({r.stderr.strip()})")
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"objects": [],\n "prefilter": {"gaussian": "2"}}\n')
    r = subprocess.run([TRACKD, "-i", clip, "-c", bad, "--no-server", "-o", os.devnull],
                       capture_output=True, text=True, timeout=60)
    expect(r.returncode == 78 and
           f"{bad}:2:28: prefilter.gaussian must be a number, not a string" in r.stderr,
           f"a bad \"prefilter\" exits 78 with file:line:col ({r.stderr.strip()})")
print("test_prefilter: all checks passed")
