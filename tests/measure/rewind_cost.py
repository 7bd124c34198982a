#!/usr/bin/python3
"""Measures what --rewind costs (docs/BENCHMARKS.md, "Rewind"): the demo
scene at a size and rate, --backend cpu.
  - CPU per frame: --fast, N frames, with and without --rewind 1s (the
    buffer full and recycling its buffers; least of 3 alternated runs);
  - memory: paced at the rate for SECONDS + 3 s with --rewind SECONDS, the
    peak resident size with it minus without (ru_maxrss), against the
    buffer's computed bytes (frames in the window x frame bytes).
A measurement, not a test: numbers depend on the machine and its load.

    rewind_cost.py TRACKD WxH FPS [SECONDS] [FRAMES]
"""
import resource
import subprocess
import sys


def run_child(cmd):
    """(CPU seconds, peak RSS in bytes) of one run; each run is measured in
    a fresh child of a fresh python so ru_maxrss is its own."""
    probe = ("import resource,subprocess,sys;r=subprocess.run(sys.argv[1:],capture_output=True);"
             "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
             "print(r.returncode,u.ru_utime+u.ru_stime,u.ru_maxrss*1024)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], capture_output=True, text=True)
    rc, cpu, rss = out.stdout.split()
    if rc != "0":
        sys.exit(f"{cmd}: exit {rc}")
    return float(cpu), int(rss)


def main():
    trackd, size, fps = sys.argv[1], sys.argv[2], float(sys.argv[3])
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 5
    frames = int(sys.argv[5]) if len(sys.argv) > 5 else 240
    w, h = map(int, size.split("x"))
    base = [trackd, "--size", size, "--fps", str(fps), "--no-server", "--backend", "cpu",
            "--rewind-max-mem", "100000"]
    fast = base + ["--fast", "--frames", str(frames)]
    plain = min(run_child(fast)[0] for _ in range(3))
    rew = min(run_child(fast + ["--rewind", "1s"])[0] for _ in range(3))
    paced = base + ["--frames", str(int((seconds + 3) * fps))]
    _, rss0 = run_child(paced)
    _, rss1 = run_child(paced + ["--rewind", f"{seconds}s"])
    frame = w * h * 3
    print(f"{size} @ {fps:g} fps: tracking alone {plain / frames * 1e3:.2f} ms CPU/frame, with "
          f"--rewind {rew / frames * 1e3:.2f} ms; rewind {(rew - plain) / frames * 1e3:.2f} ms "
          f"CPU/frame; --rewind {seconds:g}s: peak RSS +{(rss1 - rss0) / 1e6:.0f} MB "
          f"(computed {frame * fps * seconds / 1e6:.0f} MB: {frame * fps / 1e6:.1f} MB/s RGB24)")


if __name__ == "__main__":
    main()
