#!/usr/bin/python3
"""Capture -> WebSocket client latency of several trackd configurations,
measured in alternating rounds on one machine (so load that comes and goes
hits them alike), with the median over the rounds of each run's figures.

    bench/latency_ab.py [--rounds 3] [--frames 600] [--preview] [--client socket] \\
        LABEL=TRACKD[:ARG,ARG...] ... -- COMMON_TRACKD_ARGS...

Each configuration is a label, a trackd binary and its own extra arguments
(comma-separated); COMMON_TRACKD_ARGS go to every run. Each run is one
tests/device/latency_probe.py row: total p50/p99 and each stage's p50/p99
(queue, process, handoff, deliver, write: PROTOCOL.md section 3). A binary
older than the stage stamps reports totals only (and its t_capture has 1 ms
steps). Example (docs/BENCHMARKS.md, capture to client, CPU backend):

    bench/latency_ab.py before=/tmp/old/trackd after=build/daemon/trackd \\
        spin=build/daemon/trackd:--spin,on -- --backend cpu --size 640x480 --fps 60 \\
        --log-level warn --no-preview
"""
import os
import re
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(here, "..", "tests", "device", "latency_probe.py")
STAGES = ("queue", "process", "handoff", "deliver", "write")


def main():
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    opts, common = argv[:cut], argv[cut + 1:]
    rounds, frames, preview, client, cfgs = 3, 600, False, None, []
    i = 0
    while i < len(opts):
        a = opts[i]
        if a == "--rounds":
            rounds = int(opts[i + 1])
            i += 1
        elif a == "--frames":
            frames = int(opts[i + 1])
            i += 1
        elif a == "--preview":
            preview = True
        elif a == "--client":
            client = opts[i + 1]  # the probe's client: aiohttp (its default) or socket
            i += 1
        elif "=" in a:
            label, rest = a.split("=", 1)
            binary, _, extra = rest.partition(":")
            cfgs.append((label, binary, [x for x in extra.split(",") if x]))
        else:
            sys.exit(f"latency_ab: what is {a!r}? (LABEL=TRACKD[:ARGS] or --rounds/--frames/--preview/--client)")
        i += 1
    if not cfgs:
        sys.exit(__doc__)
    runs = {c[0]: [] for c in cfgs}
    for r in range(rounds):
        for label, binary, extra in cfgs:
            cmd = [sys.executable, PROBE, binary, "--frames", str(frames), "--label", label]
            if preview:
                cmd.append("--preview")
            if client:
                cmd += ["--client", client]
            out = subprocess.run(cmd + ["--"] + common + extra, capture_output=True, text=True)
            lines = out.stdout.strip().splitlines()
            if out.returncode or not lines:
                print(f"round {r + 1} {label}: failed: {out.stdout}{out.stderr}", flush=True)
                continue
            p50, p99 = (float(x) for x in lines[0].split()[-3:-1])
            st = {m.group(1): (float(m.group(2)), float(m.group(3)))
                  for m in re.finditer(r"(\w+) ([\d.]+)/([\d.]+)", lines[1] if len(lines) > 1 else "")}
            runs[label].append((p50, p99, st))
            print(f"round {r + 1} {lines[0]}\n        {lines[1].strip() if len(lines) > 1 else ''}",
                  flush=True)
    print(f"\nmedians over {rounds} rounds (ms; stages p50/p99)")
    for label, v in runs.items():
        if not v:
            continue
        med = statistics.median
        stg = "  ".join(f"{k} {med([x[2][k][0] for x in v if k in x[2]]):.3f}/"
                        f"{med([x[2][k][1] for x in v if k in x[2]]):.3f}"
                        for k in STAGES if any(k in x[2] for x in v))
        print(f"{label:<28} p50 {med([x[0] for x in v]):6.3f}  p99 {med([x[1] for x in v]):6.3f}  {stg}")


if __name__ == "__main__":
    main()
