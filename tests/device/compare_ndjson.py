#!/usr/bin/env python3
"""Compares two trackd NDJSON files field by field, ignoring timing fields
(t_capture, wall_ms, latency, backend, upload_bytes: host-to-device bytes
are 0 on CPU backends). Integer results must be identical.
Exit 0 when equal; prints the first difference otherwise."""
import json
import sys

IGNORE = {"t_capture", "wall_ms", "latency", "backend", "upload_bytes"}


def strip(m):
    return {k: v for k, v in m.items() if k not in IGNORE}


a = open(sys.argv[1]).read().splitlines()
b = open(sys.argv[2]).read().splitlines()
if len(a) != len(b) or not a:
    sys.exit(f"line counts differ or empty: {len(a)} vs {len(b)}")
for i, (x, y) in enumerate(zip(a, b)):
    mx, my = strip(json.loads(x)), strip(json.loads(y))
    if mx != my:
        sys.exit(f"line {i} differs:\n{json.dumps(mx)[:600]}\n{json.dumps(my)[:600]}")
found = sum(o["found"] for line in a for o in json.loads(line)["objects"])
print(f"identical: {len(a)} frames, {found} object detections")
