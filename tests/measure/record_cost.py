#!/usr/bin/python3
"""Measures what --record costs (docs/BENCHMARKS.md, "Recording"): the demo
scene at a size, --fast, N frames, run with and without --record into a
folder under TMP; prints the CPU time per frame (user + system of the whole
process, so the capture thread's copy and the writer thread's writes are
both in) and the bundle's bytes per frame, then bytes per minute at the
given rate. A measurement, not a test: numbers depend on the machine and
its load.

    record_cost.py TRACKD WxH FPS [FRAMES] [TMP] [-- TRACKD ARGS...]

Arguments after "--" go to both runs (--input CLIP for a clip instead of the
demo) or to the recording run only when they follow "--record-args"
(e.g. -- --record-args --record-storage ffv1).
"""
import os
import resource
import shutil
import subprocess
import sys
import tempfile


def cpu_of(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        sys.exit(f"{cmd}: exit {r.returncode}: {r.stderr[-500:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    argv, extra, rec_extra = sys.argv, [], []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
        if "--record-args" in extra:
            at = extra.index("--record-args")
            extra, rec_extra = extra[:at], extra[at + 1:]
    trackd, size, fps = argv[1], argv[2], float(argv[3])
    frames = int(argv[4]) if len(argv) > 4 else 240
    tmp = tempfile.mkdtemp(prefix="trk-rec-cost-", dir=argv[5] if len(argv) > 5 else None)
    base = [trackd, "--size", size, "--fps", str(fps), "--frames", str(frames), "--fast",
            "--no-server", "--backend", "cpu", *extra]
    try:
        runs = []
        for i in range(3):  # alternate, keep the least of each (a loaded machine adds, never subtracts)
            plain = cpu_of(base)
            bundle = os.path.join(tmp, f"b{i}")
            rec = cpu_of(base + ["--record", bundle, *rec_extra])
            size_b = sum(os.path.getsize(os.path.join(dp, f))
                         for dp, _, fs in os.walk(bundle) for f in fs)
            shutil.rmtree(bundle)
            runs.append((plain, rec, size_b))
        plain = min(r[0] for r in runs)
        rec = min(r[1] for r in runs)
        per_frame = runs[0][2] / frames
        print(f"{size} @ {fps:g} fps, {frames} frames: tracking alone {plain / frames * 1e3:.2f} ms "
              f"CPU/frame, with --record {rec / frames * 1e3:.2f} ms; recording "
              f"{(rec - plain) / frames * 1e3:.2f} ms CPU/frame "
              f"({(rec - plain) / frames * fps * 100:.0f}% of one core at {fps:g} fps); "
              f"{per_frame / 1e6:.2f} MB/frame, {per_frame * fps * 60 / 1e9:.1f} GB/minute")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
