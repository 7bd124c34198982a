#!/usr/bin/python3
"""Integration: trackd's command line and exit codes, as a user meets them."""
import ctypes
import os
import re
import subprocess
import sys
import tempfile

TRACKD = sys.argv[1]
README = sys.argv[2] if len(sys.argv) > 2 else None


def run(*args, timeout=60):
    return subprocess.run([TRACKD, *args], capture_output=True, text=True, timeout=timeout)


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


r = run("--help")
expect(r.returncode == 0 and "Usage: trackd" in r.stdout, "--help exits 0 with usage")
options = re.findall(r"--([a-z][a-z-]+)", r.stdout.split("Options:")[1])
expect(len(options) >= 20, f"--help lists {len(options)} options")
if README:
    text = open(README).read()
    missing = [o for o in options if f"--{o}" not in text]
    expect(not missing, f"README documents every option (missing: {missing})")

r = run("--version")
expect(r.returncode == 0 and re.match(r"trackd \d+\.\d+\.\d+", r.stdout), "--version")

r = run("--no-such-option")
expect(r.returncode == 64 and "unknown option" in r.stderr, "unknown option exits 64")
r = run("--frames", "zero")
expect(r.returncode == 64 and "--frames" in r.stderr, "bad value exits 64 naming the option")
r = run("--backend", "gpu-magic")
expect(r.returncode == 64, "unknown backend exits 64")

with tempfile.TemporaryDirectory() as d:
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"objects": [\n  {"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [300, 1, 1]}\n]}\n')
    r = run("--objects", bad, "--no-server", "--frames", "1")
    expect(r.returncode == 78, f"config error exits 78 (got {r.returncode})")
    expect(re.search(re.escape(bad) + r":2:\d+: ", r.stderr), f"config error names file:line:col: {r.stderr.strip()}")

    missing = os.path.join(d, "missing.json")
    r = run("--objects", missing, "--no-server", "--frames", "1")
    expect(r.returncode == 78 and f"{missing}:1:1:" in r.stderr, "missing objects file exits 78 with file:1:1")

    r = run("--input", os.path.join(d, "nope.mp4"), "--no-server", "--frames", "1")
    expect(r.returncode == 66, f"missing input exits 66 (got {r.returncode})")

    # The demo scene runs with no arguments but these (no server, few frames).
    out = os.path.join(d, "demo.ndjson")
    r = run("--no-server", "--frames", "5", "--fast", "--output", out)
    expect(r.returncode == 0, f"demo run exits 0 ({r.stderr.strip()[-300:]})")
    lines = open(out).read().splitlines()
    expect(len(lines) == 5, "demo writes one NDJSON line per frame")

    # Without a usable GPU: cuda is refused clearly, auto falls back with one line.
    r = run("--backend", "cuda", "--no-server", "--frames", "1", "--fast", "--output", out)
    if r.returncode == 0:
        print("note: a usable GPU is present; skipping the no-GPU checks")
    else:
        cuda_err = r.stderr
        expect(r.returncode == 69 and "--backend cuda" in r.stderr, f"cuda without GPU exits 69: {r.stderr.strip()}")
        r = run("--backend", "auto", "--no-server", "--frames", "1", "--fast", "--output", out)
        expect(r.returncode == 0 and r.stderr.count("using the CPU backend") == 1,
               "auto falls back to the CPU with one log line")
        try:
            ctypes.CDLL("libcuda.so.1")
            has_driver = True
        except OSError:
            has_driver = False
        if not has_driver and "built without CUDA" not in cuda_err:
            # No NVIDIA driver at all is normal: one plain line, none of the
            # CUDA runtime's "driver version is insufficient" alarm...
            expect("no NVIDIA driver/GPU found: using the CPU backend" in r.stderr
                   and "insufficient" not in r.stderr,
                   f"auto without an NVIDIA driver says so plainly: {r.stderr.strip()}")
            # ...while --backend cuda keeps the real error.
            expect("no NVIDIA driver found" in cuda_err and "CUDA runtime:" in cuda_err,
                   f"--backend cuda without a driver gives the real error: {cuda_err.strip()}")
print("cli: all passed")
