#!/usr/bin/python3
"""Integration: --hwdec and --decode-only with the real trackd on clips made
here with the ffmpeg CLI (8-bit and 10-bit H.264).

Without a usable GPU (CI): --hwdec auto decodes in software, results
identical to --hwdec none; the missing GPU is said in one line (the CPU
backend's), without brackets inside brackets, the decoder's line at debug
level; --hwdec cuda exits
69 with the reason, for a file and for a camera (before opening it); --hwdec bogus is a usage error (64); --decode-only
prints the clip's frame count. On a machine with a GPU the same script
checks the NVDEC side instead (one line saying the GPU decodes, --hwdec cuda
runs); tests/device/run-on-device.sh compares its results with software
decoding there.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

TRACKD = sys.argv[1]
FRAMES = 45
failed = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failed.append(what)


def trackd(*args):
    return subprocess.run([TRACKD, *args], capture_output=True, text=True, timeout=120)


def decode_lines(stderr):
    return [l for l in stderr.splitlines() if re.search(r"hwdec: .*: decoding ", l)]


def nesting(line):
    """How deep brackets go in line: "a (b)" 1, "a (b (c))" 2."""
    depth = deepest = 0
    for c in line:
        depth += {"(": 1, ")": -1}.get(c, 0)
        deepest = max(deepest, depth)
    return deepest


def results(path):
    """The NDJSON's per-frame results without timing fields."""
    skip = {"t_capture", "wall_ms", "latency", "backend", "upload_bytes"}
    with open(path) as f:
        return [{k: v for k, v in json.loads(l).items() if k not in skip} for l in f]


def main():
    tmp = tempfile.mkdtemp(prefix="trk-hwdec-")
    clip, clip10 = os.path.join(tmp, "clip.mp4"), os.path.join(tmp, "clip10.mp4")
    for path, pix in ((clip, "yuv420p"), (clip10, "yuv420p10le")):
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "testsrc2=size=320x240:rate=30", "-frames:v", str(FRAMES), "-c:v",
                        "libx264", "-pix_fmt", pix, path], check=True)
    objs = os.path.join(tmp, "objs.json")
    with open(objs, "w") as f:
        json.dump({"objects": [
            {"name": "red", "space": "hsv", "lo": [340, 100, 80], "hi": [20, 255, 255]},
            {"name": "bright", "space": "ycbcr", "lo": [180, 0, 0], "hi": [255, 255, 255]},
        ]}, f)
    common = ["--fast", "--no-server", "--objects", objs]

    # auto: exactly one line saying how the clip is decoded.
    out_auto, out_none = os.path.join(tmp, "auto.ndjson"), os.path.join(tmp, "none.ndjson")
    r = trackd("--input", clip, *common, "--output", out_auto)
    check(r.returncode == 0, f"--hwdec auto runs (exit {r.returncode})")
    lines = decode_lines(r.stderr)
    gpu = bool(lines) and "on the GPU" in lines[0]
    if gpu:
        check(len(lines) == 1, f"--hwdec auto: one line on decoding, got {lines}")
    else:
        said = [l for l in r.stderr.splitlines() if re.search(r"GPU|CUDA", l)]
        check(len(said) == 1 and "using the CPU backend" in said[0] and nesting(said[0]) <= 1,
              f"no GPU: one line says so, no brackets in brackets: {said}")
        r = trackd("--input", clip, *common, "--output", os.devnull, "--log-level", "debug")
        lines = decode_lines(r.stderr)
        check(len(lines) == 1 and "decoding h264 in software: no usable GPU" in lines[0],
              f"no GPU, --log-level debug: the decoder's line too: {lines}")
    r = trackd("--input", clip, *common, "--output", out_none, "--hwdec", "none")
    check(r.returncode == 0, "--hwdec none runs")
    lines = decode_lines(r.stderr)
    check(len(lines) == 1 and "in software: --hwdec none" in lines[0],
          f"--hwdec none: one line, software: {lines}")
    a, b = results(out_auto), results(out_none)
    check(len(a) == FRAMES and a == b,
          f"auto and none give identical results ({len(a)} and {len(b)} frames)")
    check(any(o["found"] for m in a for o in m["objects"]), "the objects are found in the clip")

    # --hwdec cuda: honoured, or exit 69 at start with the reason.
    r = trackd("--input", clip, *common, "--output", os.path.join(tmp, "cuda.ndjson"),
               "--hwdec", "cuda")
    if gpu:
        check(r.returncode == 0, "GPU: --hwdec cuda runs")
    else:
        check(r.returncode == 69, f"no GPU: --hwdec cuda exits 69 (got {r.returncode})")
        said = [l for l in r.stderr.splitlines() if "--hwdec cuda" in l]
        check(len(said) == 1 and "cannot decode on the GPU: no usable GPU, " in said[0]
              and nesting(said[0]) <= 1, f"no GPU: --hwdec cuda says why: {said}")
        check(not os.path.exists(os.path.join(tmp, "cuda.ndjson")) or
              os.path.getsize(os.path.join(tmp, "cuda.ndjson")) == 0,
              "no GPU: --hwdec cuda tracks nothing")
    # A camera (MJPEG through NVDEC): the same refusal at start, before the
    # device is opened (none exists here; with a GPU trackd would wait for it).
    if not gpu:
        try:
            r = subprocess.run([TRACKD, "--device", "/dev/video-trk-absent", "--no-server",
                                "--hwdec", "cuda"], capture_output=True, text=True, timeout=30)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired:
            rc, err = "none: still waiting for the camera after 30 s", ""
        check(rc == 69 and "--hwdec cuda: cannot decode on the GPU: no usable GPU" in err,
              f"no GPU: camera with --hwdec cuda exits 69 saying why (exit {rc})")
    # A CPU backend reads host memory: --hwdec cuda cannot be honoured anywhere.
    r = trackd("--input", clip, *common, "--hwdec", "cuda", "--backend", "cpu")
    check(r.returncode == 69 and "the cpu backend reads host memory" in r.stderr,
          f"--hwdec cuda --backend cpu exits 69 saying why (got {r.returncode})")

    # A bad value is a usage error naming the forms.
    r = trackd("--input", clip, "--hwdec", "bogus")
    check(r.returncode == 64 and "expected --hwdec auto, cuda or none" in r.stderr,
          f"--hwdec bogus exits 64 (got {r.returncode}: {r.stderr.strip()[:200]})")

    # 10-bit video: software decoding everywhere (NVDEC would give P010).
    r = trackd("--input", clip10, *common, "--output", os.devnull)
    lines = decode_lines(r.stderr)
    if gpu:
        check(r.returncode == 0 and len(lines) == 1 and "in software" in lines[0]
              and "P010" in lines[0], f"GPU, 10-bit clip: one line, software, naming P010: {lines}")
    else:  # the CPU backend's line said it
        check(r.returncode == 0 and not lines, f"no GPU, 10-bit clip: no decoder line: {lines}")

    # --decode-only: the frame count on stdout, nothing tracked.
    r = trackd("--input", clip, "--decode-only")
    m = re.search(r"decode-only: (\d+) frames in [0-9.]+ s, [0-9.]+ fps, [0-9.]+ ms CPU per frame",
                  r.stdout)
    check(r.returncode == 0 and m and int(m.group(1)) == FRAMES,
          f"--decode-only prints {FRAMES} frames: {r.stdout.strip()!r}")
    r = trackd("--input", clip, "--decode-only", "--frames", "10", "--hwdec", "none")
    check(r.returncode == 0 and "decode-only: 10 frames in" in r.stdout,
          f"--decode-only --frames 10 stops at 10: {r.stdout.strip()!r}")
    r = trackd("--input", os.path.join(tmp, "missing.mp4"), "--decode-only")
    check(r.returncode == 66, f"--decode-only on a missing file exits 66 (got {r.returncode})")

    shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        sys.exit(f"{len(failed)} check(s) failed")
    print("all hwdec checks passed" + (" (GPU)" if gpu else " (no GPU)"))


main()
