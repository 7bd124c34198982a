#!/usr/bin/python3
"""Where a camera's slow frames go (issue 31): reads trackd's NDJSON output
(`--output F.ndjson`, a paced run) and prints, per `latency` stage, p50, p99
and the maximum (with backend_ms, also host_ms = process_ms - backend_ms,
trackd's own work, and overhead_ms = backend_ms - kernel_ms - upload_ms,
the backend's calls beyond its timed GPU work: launches, waits, copies
back), then the slow frames (process_ms above --slow-ms): how many,
their stages' medians, and how their `seq` falls modulo --period (the focus
check's `--focus-every`, 30 by default: a periodic cause shows as one
residue). A measurement, not a test.

    tests/device/frame_split.py F.ndjson [--label NAME] [--skip 60]
        [--slow-ms 1.0] [--period 30]
"""
import argparse
import collections
import json
import statistics


def pct(xs, q):
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ndjson")
    ap.add_argument("--label", default="")
    ap.add_argument("--skip", type=int, default=60, help="first frames left out (warm-up)")
    ap.add_argument("--slow-ms", type=float, default=1.0)
    ap.add_argument("--period", type=int, default=30)
    a = ap.parse_args()
    frames = []
    with open(a.ndjson) as f:
        for line in f:
            try:
                m = json.loads(line)
            except ValueError:
                continue
            if m.get("type") == "frame" and isinstance(m.get("latency"), dict):
                L = m["latency"]
                # trackd's own host work in the frame (backend_ms: its calls).
                if isinstance(L.get("backend_ms"), (int, float)):
                    L["host_ms"] = L["process_ms"] - L["backend_ms"]
                    L["overhead_ms"] = L["backend_ms"] - L["kernel_ms"] - L["upload_ms"]
                frames.append(m)
    frames = frames[a.skip:]
    if not frames:
        print(f"{a.label}: no frames")
        return 1
    stages = [k for k in frames[0]["latency"] if isinstance(frames[0]["latency"][k], (int, float))]
    print(f"== {a.label}: {len(frames)} frames (first {a.skip} left out)")
    for k in stages:
        xs = [m["latency"][k] for m in frames if isinstance(m["latency"].get(k), (int, float))]
        print(f"  {k:12s} p50 {pct(xs, 0.5):7.3f}  p99 {pct(xs, 0.99):7.3f}  max {max(xs):7.3f}")
    slow = [m for m in frames if m["latency"].get("process_ms", 0) > a.slow_ms]
    print(f"  slow (process_ms > {a.slow_ms}): {len(slow)} of {len(frames)}"
          f" ({100.0 * len(slow) / len(frames):.2f} %)")
    if slow:
        for k in stages:
            xs = [m["latency"][k] for m in slow if isinstance(m["latency"].get(k), (int, float))]
            print(f"    {k:12s} median {statistics.median(xs):7.3f}")
        res = collections.Counter(m.get("seq", -1) % a.period for m in slow)
        print(f"    seq mod {a.period} (residue: count): "
              + ", ".join(f"{r}: {c}" for r, c in res.most_common(8)))
        print("    passes: " + ", ".join(f"{p}: {c}" for p, c in
                                        collections.Counter(m.get("pass", "?") for m in slow).items()))
        print("    first seqs: " + " ".join(str(m.get("seq")) for m in slow[:20]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
