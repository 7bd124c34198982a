#!/usr/bin/python3
"""Integration: each example client in examples/ against the real daemon.

    test_examples.py TRACKD SOURCE_DIR python-ws|node-ws|udp|c-ws [C_CLIENT]

Starts trackd on the demo scene with --output (the truth) and, for udp,
--udp to the example's port; runs the example for FRAMES frames and checks
that it exits 0 and prints "frame SEQ: name (cx, cy), ..." lines for
increasing seqs whose objects and positions are those of the NDJSON line of
the same seq (positions to the example's one decimal), each followed by the
frame's instances of tracked objects ("  name #ID at (cx, cy) moving (vx,
vy) px/frame[, lost for N frames]") and blobs of the objects that list them
and are not tracked ("  name blob at (cx, cy), MASS px"), again those of
trackd's output. The objects file tracks red and lists green's blobs. node-ws exits 77
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
# Boxes around some of the demo scene's ball colours (daemon/source/demo.c).
DEMO_BOXES = [("red", [200, 10, 10], [255, 75, 75]), ("green", [10, 170, 30], [75, 230, 95]),
              ("blue", [10, 50, 200], [75, 115, 255]), ("yellow", [205, 185, 10], [255, 255, 75])]
LINE = re.compile(r"^frame (\d+):(.*)$")
OBJ = re.compile(r" ([^,()]+?) \((-?[\d.]+), (-?[\d.]+)\)(?:,|$)")
NUM = r"(-?[\d.]+)"
INSTANCE = re.compile(rf"^  (.+?) #(\d+) at \({NUM}, {NUM}\) moving \({NUM}, {NUM}\) px/frame"
                      r"(?:, lost for (\d+) frames)?$")
BLOB = re.compile(rf"^  (.+?) blob at \({NUM}, {NUM}\), (\d+) px$")


def definition(name, lo, hi):
    """The demo box as an object: red tracked, green with its blobs listed."""
    o = {"name": name, "space": "rgb", "lo": lo, "hi": hi, "min_mass": 20}
    if name.startswith("red"):
        o.update(blobs=2, track=True)
    elif name.startswith("green"):
        o.update(blobs=3)
    return o


def fail(msg):
    sys.exit(f"FAIL: {msg}")


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse(out):
    """[(seq, [(name, cx, cy)], [detail])]; a detail is ("#", name, id, cx, cy,
    vx, vy, lost) or ("blob", name, cx, cy, mass)."""
    frames = []
    for line in out.splitlines():
        m, i, b = LINE.match(line), INSTANCE.match(line), BLOB.match(line)
        if i and frames:
            frames[-1][2].append(("#", i.group(1), int(i.group(2)),
                                  *(float(i.group(k)) for k in range(3, 7)), int(i.group(7) or 0)))
            continue
        if b and frames:
            frames[-1][2].append(("blob", b.group(1), float(b.group(2)), float(b.group(3)),
                                  int(b.group(4))))
            continue
        if not m:
            fail(f"unexpected output line: {line!r}")
        found = list(OBJ.finditer(m.group(2)))
        if sum(len(o.group(0)) for o in found) != len(m.group(2)):
            fail(f"unexpected objects in {line!r}")
        objs = [(o.group(1), float(o.group(2)), float(o.group(3))) for o in found]
        frames.append((int(m.group(1)), objs, []))
    return frames


def details(t):
    """What the example should print under frame t (an NDJSON line)."""
    out = []
    for o in t["objects"]:
        out += [("#", o["name"], i["id"], i["cx"], i["cy"], i["vx"], i["vy"], i["lost"])
                for i in o.get("instances", [])]
        if "instances" not in o:
            out += [("blob", o["name"], b["cx"], b["cy"], b["mass"]) for b in o.get("blobs", [])]
    return out


def same(got, want):
    """Printed details against trackd's: names, ids, masses and lost counts
    exact, positions to one decimal, velocities to two."""
    if len(got) != len(want):
        return False
    for g, w in zip(got, want):
        if g[:2] != w[:2] or len(g) != len(w):
            return False
        nums = [(2, 0), (3, 0.051), (4, 0.051), (5, 0.0051), (6, 0.0051), (7, 0)] if g[0] == "#" \
            else [(2, 0.051), (3, 0.051), (4, 0)]
        if any(abs(g[k] - w[k]) > tol for k, tol in nums):
            return False
    return True


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
        objs = os.path.join(d, "objects.json")
        with open(objs, "w") as f:
            if kind == "udp":
                # Objects enough for frames over 1400 bytes: the example
                # joins the parts (PROTOCOL.md section 9).
                json.dump({"objects": [definition(f"{n} {i} " + "x" * 40, lo, hi)
                                       for i in range(4) for n, lo, hi in DEMO_BOXES]}, f)
            else:
                json.dump({"objects": [definition(*box) for box in DEMO_BOXES]}, f)
        args += ["--objects", objs]
        if kind == "udp":
            args += ["--udp", f"127.0.0.1:{udp_port}"]
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
    seqs = [s for s, _, _ in frames]
    if any(b <= a for a, b in zip(seqs, seqs[1:])):
        fail(f"seqs not increasing: {seqs}")
    kinds = set()
    for seq, objs, extra in frames:
        t = truth.get(seq)
        if t is None:
            fail(f"frame {seq} is not in trackd's output")
        want = [(o["name"], o["cx"], o["cy"]) for o in t["objects"] if o["found"]]
        if not want:
            fail(f"frame {seq}: the demo scene should show objects")
        if [n for n, _, _ in objs] != [n for n, _, _ in want] or any(
                abs(a[1] - b[1]) > 0.051 or abs(a[2] - b[2]) > 0.051 for a, b in zip(objs, want)):
            fail(f"frame {seq}: printed {objs}, trackd's output has {want}")
        if not same(extra, details(t)):
            fail(f"frame {seq}: printed instances and blobs {extra}, trackd's output has "
                 f"{details(t)}")
        kinds |= {e[0] for e in extra}
    if kinds != {"#", "blob"}:
        fail(f"the frames printed should show instances and blobs (printed: {sorted(kinds)})")
    print(f"ok: the {kind} example printed {FRAMES} frames, their instances and blobs equal to "
          "trackd's output")


if __name__ == "__main__":
    main()
