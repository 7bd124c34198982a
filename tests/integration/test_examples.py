#!/usr/bin/python3
"""Integration: each example client in examples/ against the real daemon.

    test_examples.py TRACKD SOURCE_DIR python-ws|node-ws|udp|c-ws [C_CLIENT]

Starts trackd on the demo scene with --output (the truth) and, for udp,
--udp to the example's port; runs the example for FRAMES frames and checks
that it exits 0 and prints "frame SEQ: name (cx, cy), ..." lines for
increasing seqs whose objects and positions are those of the NDJSON line of
the same seq (positions to the example's one decimal). node-ws exits 77
(skipped) when node or the ws package (npm ci --prefix examples/node) is
missing.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

from daemon_proc import start_trackd, stop_trackd

FRAMES = 15
# Boxes around some of the demo scene's ball colours (daemon/demo.c).
DEMO_BOXES = [("red", [200, 10, 10], [255, 75, 75]), ("green", [10, 170, 30], [75, 230, 95]),
              ("blue", [10, 50, 200], [75, 115, 255]), ("yellow", [205, 185, 10], [255, 255, 75])]
LINE = re.compile(r"^frame (\d+):(.*)$")
OBJ = re.compile(r" ([^,()]+?) \((-?[\d.]+), (-?[\d.]+)\)(?:,|$)")


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(out):
    frames = []
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            fail(f"unexpected output line: {line!r}")
        found = list(OBJ.finditer(m.group(2)))
        if sum(len(o.group(0)) for o in found) != len(m.group(2)):
            fail(f"unexpected objects in {line!r}")
        objs = [(o.group(1), float(o.group(2)), float(o.group(3))) for o in found]
        frames.append((int(m.group(1)), objs))
    return frames


def main():
    trackd, src, kind = sys.argv[1], sys.argv[2], sys.argv[3]
    ex = os.path.join(src, "examples")
    udp_port = free_udp_port()
    if kind == "python-ws":
        cmd = lambda url, port: [sys.executable, os.path.join(ex, "ws_client.py"), url,
                                 str(FRAMES)]
    elif kind == "node-ws":
        node = shutil.which("node")
        if not node or not os.path.isdir(os.path.join(ex, "node", "node_modules", "ws")):
            print("SKIPPED: the Node.js example needs node and the ws package "
                  "(run: npm ci --prefix examples/node)", file=sys.stderr)
            sys.exit(77)
        cmd = lambda url, port: [node, os.path.join(ex, "node", "ws_client.mjs"), url,
                                 str(FRAMES)]
    elif kind == "c-ws":
        cmd = lambda url, port: [sys.argv[4], "127.0.0.1", str(port), str(FRAMES)]
    elif kind == "udp":
        cmd = lambda url, port: [sys.executable, os.path.join(ex, "udp_listener.py"),
                                 str(udp_port), str(FRAMES)]
    else:
        fail(f"unknown example {kind}")
    with tempfile.TemporaryDirectory() as d:
        truth_path = os.path.join(d, "out.ndjson")
        log = open(os.path.join(d, "trackd.log"), "w+")
        args = ["--size", "320x240", "--fps", "30", "--backend", "cpu", "--output", truth_path]
        if kind == "udp":
            # Objects enough for frames over 1400 bytes: the example joins
            # the parts (PROTOCOL.md section 9).
            objs = os.path.join(d, "objects.json")
            with open(objs, "w") as f:
                json.dump({"objects": [{"name": f"{n} {i} " + "x" * 40, "space": "rgb",
                                        "lo": lo, "hi": hi}
                                       for i in range(4) for n, lo, hi in DEMO_BOXES]}, f)
            args += ["--udp", f"127.0.0.1:{udp_port}", "--objects", objs]
        p, port = start_trackd(trackd, args, log)
        try:
            r = subprocess.run(cmd(f"ws://127.0.0.1:{port}/ws", port), capture_output=True,
                               text=True, timeout=60, cwd=d)
        finally:
            stop_trackd(p)  # flushes the NDJSON file
        print(r.stdout, end="")
        if r.returncode != 0:
            log.seek(0)
            fail(f"{kind} example exited {r.returncode}: {r.stderr}\ntrackd log:\n{log.read()}")
        with open(truth_path) as f:
            truth = {m["seq"]: m for m in map(json.loads, f)}
    frames = parse(r.stdout)
    if len(frames) != FRAMES:
        fail(f"{len(frames)} frames printed, want {FRAMES}")
    seqs = [s for s, _ in frames]
    if any(b <= a for a, b in zip(seqs, seqs[1:])):
        fail(f"seqs not increasing: {seqs}")
    for seq, objs in frames:
        t = truth.get(seq)
        if t is None:
            fail(f"frame {seq} is not in trackd's output")
        want = [(o["name"], o["cx"], o["cy"]) for o in t["objects"] if o["found"]]
        if not want:
            fail(f"frame {seq}: the demo scene should show objects")
        if [n for n, _, _ in objs] != [n for n, _, _ in want] or any(
                abs(a[1] - b[1]) > 0.051 or abs(a[2] - b[2]) > 0.051 for a, b in zip(objs, want)):
            fail(f"frame {seq}: printed {objs}, trackd's output has {want}")
    print(f"ok: the {kind} example printed {FRAMES} frames equal to trackd's output")


if __name__ == "__main__":
    main()
