#!/usr/bin/env python3
"""On the GPU machine, inside the bundle (run-on-device.sh calls it): --hwdec
(issue 14) with the bundled daemon and clips.

1. NVDEC frames as device images against software decoding, both on the
   cuda backend: H.264 and HEVC 8-bit NDJSON must be identical
   (compare_ndjson.py), every frame with upload_bytes 0 (nothing crossed
   from the host), and the log must say the GPU decoded (no fallback).
   Blob lists and the pre-filter through device images too.
2. MJPEG (4:2:0): NVDEC's JPEG decoder against libavcodec's: not bit-exact
   (another IDCT); prints the largest differences (centroid px, mass %,
   bbox px) for README's statement. A 4:2:2 MJPEG clip is decoded in
   software with one line. A 10-bit clip likewise (P010).
3. Throughput on the 1080p60 H.264 clip (looped to FRAMES frames): --fast
   tracking with --hwdec cuda, --decode-only --hwdec cuda, --fast with
   --hwdec none and --decode-only --hwdec none: fps and host CPU time per
   frame (getrusage of the child: every thread), and for the tracking runs
   the backend call's p50/p99 per frame (NDJSON latency.process_ms: from
   an NVDEC surface vs from a pageable host frame), as lines for
   docs/BENCHMARKS.md, with the commands.
Exit 1 when a check fails (not for the measured numbers)."""
import json
import re
import resource
import subprocess
import sys
import time

FRAMES = 3000
failed = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        failed.append(what)


def trackd(args):
    """Runs ./trackd; returns (exit, stderr, stdout, wall s, child CPU s)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(["./trackd", *args], capture_output=True, text=True, timeout=600)
    t = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return p.returncode, p.stderr, p.stdout, t, cpu


def decode_lines(err):
    return [l for l in err.splitlines() if "hwdec:" in l]


def track(clip, objs, hwdec, out, extra=()):
    args = ["--backend", "cuda", "--hwdec", hwdec, "--input", clip, "--objects", objs,
            "--output", out, "--fast", "--no-server", *extra]
    print("+ trackd " + " ".join(args), flush=True)
    rc, err, _, _, _ = trackd(args)
    lines = decode_lines(err)
    check(rc == 0, f"{clip} --hwdec {hwdec}: exit {rc}")
    if rc != 0:
        print(err[-3000:])
        open(out, "w").close()  # compared as empty: that comparison fails too
    elif hwdec == "cuda":
        check(len(lines) == 1 and "on the GPU" in lines[0],
              f"{clip}: NVDEC decoded it, no fallback: {lines}")
        with open(out) as f:
            ub = [json.loads(l).get("upload_bytes") for l in f]
        check(ub and all(u == 0 for u in ub),
              f"{clip}: upload_bytes 0 on all {len(ub)} frames (first nonzero: "
              f"{next((u for u in ub if u), None)})")
    return lines


def identical(a, b):
    p = subprocess.run([sys.executable, "compare_ndjson.py", a, b], capture_output=True, text=True)
    print((p.stdout + p.stderr).strip())
    return p.returncode == 0


def tolerance(a, b):
    """Largest per-object differences between two NDJSON files."""
    la, lb = open(a).read().splitlines(), open(b).read().splitlines()
    worst = {"frames": min(len(la), len(lb)), "found_differs": 0, "centroid_px": 0.0,
             "mass_pct": 0.0, "bbox_px": 0, "identical_frames": 0}
    for x, y in zip(la, lb):
        ox, oy = json.loads(x)["objects"], json.loads(y)["objects"]
        same = True
        for p, q in zip(ox, oy):
            if p["found"] != q["found"]:
                worst["found_differs"] += 1
                same = False
                continue
            if not p["found"]:
                continue
            d = max(abs(p["cx"] - q["cx"]), abs(p["cy"] - q["cy"]))
            m = abs(p["mass"] - q["mass"]) / max(p["mass"], 1) * 100
            bb = max(abs(u - v) for u, v in zip(p["bbox"], q["bbox"]))
            same = same and d == 0 and m == 0 and bb == 0
            worst["centroid_px"] = max(worst["centroid_px"], d)
            worst["mass_pct"] = max(worst["mass_pct"], m)
            worst["bbox_px"] = max(worst["bbox_px"], bb)
        worst["identical_frames"] += same
    return worst


def main():
    print("== hwdec: NVDEC device images vs software decoding (cuda backend both)")
    for clip, name in (("clip420.mp4", "h264"), ("cliphevc.mp4", "hevc")):
        track(clip, "clip-objects.json", "none", f"hw-{name}-none.ndjson")
        track(clip, "clip-objects.json", "cuda", f"hw-{name}-cuda.ndjson")
        check(identical(f"hw-{name}-none.ndjson", f"hw-{name}-cuda.ndjson"),
              f"{name}: --hwdec cuda NDJSON identical to --hwdec none")
    # Blob lists, tracking and the pre-filter reading device images.
    for extra, tag in ((["--mode", "full"], "blobs"), (["--mode", "full", "--prefilter", "1.5"],
                                                       "blobs-pf")):
        track("clip420.mp4", "clip-blobs-objects.json", "none", f"hw-{tag}-none.ndjson", extra)
        track("clip420.mp4", "clip-blobs-objects.json", "cuda", f"hw-{tag}-cuda.ndjson", extra)
        check(identical(f"hw-{tag}-none.ndjson", f"hw-{tag}-cuda.ndjson"),
              f"{tag}: --hwdec cuda identical to none")

    print("== hwdec: MJPEG 4:2:0, NVDEC vs libavcodec (not bit-exact: measured)")
    track("clipmjpeg.mkv", "clip-objects.json", "none", "hw-mjpeg-none.ndjson")
    track("clipmjpeg.mkv", "clip-objects.json", "cuda", "hw-mjpeg-cuda.ndjson")
    w = tolerance("hw-mjpeg-none.ndjson", "hw-mjpeg-cuda.ndjson")
    print("MJPEG TOLERANCE (640x480 testsrc2, q 3, 7 objects): " + json.dumps(w), flush=True)
    for clip, why in (("clipmjpeg422.mkv", "4:2:2 JPEG"), ("clip10.mp4", "P010")):
        args = ["--backend", "cuda", "--hwdec", "auto", "--input", clip, "--objects",
                "clip-objects.json", "--fast", "--no-server", "--output", "/dev/null"]
        rc, err, _, _, _ = trackd(args)
        lines = decode_lines(err)
        print("\n".join(lines))
        check(rc == 0 and len(lines) == 1 and "software" in lines[0],
              f"{clip} ({why}): decoded in software with one line")
    rc, err, _, _, _ = trackd(["--backend", "cuda", "--hwdec", "cuda", "--input", "clip10.mp4",
                               "--fast", "--no-server"])
    check(rc == 69 and "P010" in err, f"clip10.mp4 --hwdec cuda: exit 69 naming P010 (got {rc})")

    print(f"== hwdec throughput: 1080p60 H.264 (clip1080p60.mp4, looped to {FRAMES} frames),"
          " cuda backend, 7 objects; CPU = the process's user+sys per frame (getrusage)")
    runs = [
        ("track --hwdec cuda", ["--fast", "--hwdec", "cuda"]),
        ("decode-only --hwdec cuda", ["--decode-only", "--hwdec", "cuda"]),
        ("track --hwdec none", ["--fast", "--hwdec", "none"]),
        ("decode-only --hwdec none", ["--decode-only", "--hwdec", "none"]),
    ]
    fps = {}
    for name, extra in runs:
        args = ["--backend", "cuda", "--input", "clip1080p60.mp4", "--loop", "--frames",
                str(FRAMES), "--objects", "clip-objects.json", "--no-server", "--no-progress",
                "--stats-interval", "0", *extra]
        nd = None
        if extra[0] == "--fast":  # per-frame latency of the backend call, from the NDJSON
            nd = f"bench-{extra[-1]}.ndjson"
            args += ["--output", nd]
        rc, err, out, wall, cpu = trackd(args)
        m = re.search(r"decode-only: (\d+) frames in ([0-9.]+) s, ([0-9.]+) fps", out) or \
            re.search(r"done: (\d+) frames in ([0-9.]+) s \(([0-9.]+) fps\)", err)
        check(rc == 0 and m is not None, f"{name}: exit {rc}")
        if not m:
            print(err[-2000:])
            continue
        n = int(m.group(1))
        fps[name] = float(m.group(3))
        print(f"BENCH {name:26s} {fps[name]:8.1f} fps  {cpu * 1e3 / n:6.3f} ms CPU/frame  "
              f"({n} frames, {wall:.2f} s wall)  cmd: trackd {' '.join(args)}", flush=True)
        if nd and rc == 0:
            lat = [json.loads(l)["latency"] for l in open(nd)]
            for key in ("process_ms", "upload_ms", "kernel_ms"):
                v = sorted(x[key] for x in lat)
                print(f"BENCH   {name}: {key} p50 {v[len(v) // 2] * 1e3:.1f} us, "
                      f"p99 {v[int(len(v) * 0.99)] * 1e3:.1f} us (the whole backend call per "
                      f"frame, 1080p, 7 objects)" if key == "process_ms" else
                      f"BENCH   {name}: {key} p50 {v[len(v) // 2] * 1e3:.1f} us", flush=True)
    if "track --hwdec cuda" in fps and "decode-only --hwdec cuda" in fps:
        print(f"BENCH ratio track/decode-only (NVDEC): "
              f"{fps['track --hwdec cuda'] / fps['decode-only --hwdec cuda']:.3f} (target >= 0.95)")
    if failed:
        print(f"HWDEC DEVICE CHECKS FAILED ({len(failed)}): {failed}")
        sys.exit(1)
    print("HWDEC DEVICE CHECKS PASSED")


main()
