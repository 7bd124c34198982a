#!/usr/bin/python3
"""Scores detections on a light_scene.py clip against its truth (issue 27).

A truth instance (an object's disk: centre, radius r) is *found* in a
frame when one of that object's blobs has its centroid inside the disk;
its centroid error is the distance from the nearest such blob's centroid
to the disk's centre. A *false blob* is a blob whose centroid lies in no
disk of its object (r + 3 px). Blobs are the frame message's "blobs"
lists (what the pass found in that frame, in roi mode too: coasting
instances are not counted).

    score(truth, frames) -> {"found": [per band share], "err": [per band
        mean centroid error px], "false": count, "n": [per band instances]}

frames: per frame {name: [(cx, cy), ...]} blob centroids; from_ndjson
makes it from trackd's messages.
"""
import json
import math

BANDS = ["bright (>= 90 %)", "75-90 %", "60-75 %", "dim (< 60 %)"]


def from_ndjson(lines):
    out = []
    for line in lines:
        m = json.loads(line) if isinstance(line, str) else line
        if m.get("type") != "frame":
            continue
        out.append({o["name"]: [(b["cx"], b["cy"]) for b in o.get("blobs", [])]
                    for o in m["objects"]})
    return out


def score(truth, frames):
    nb = len(BANDS)
    found, n, err = [0] * nb, [0] * nb, [0.0] * nb
    false = 0
    for t, det in zip(truth["frames"], frames):
        band = t["band"]
        for name, insts in t["objects"].items():
            blobs = det.get(name, [])
            for tr in insts:
                n[band] += 1
                d = [math.hypot(bx - tr["x"], by - tr["y"]) for bx, by in blobs]
                d = [v for v in d if v <= tr["r"]]
                if d:
                    found[band] += 1
                    err[band] += min(d)
            for bx, by in blobs:
                if not any(math.hypot(bx - tr["x"], by - tr["y"]) <= tr["r"] + 3 for tr in insts):
                    false += 1
    return {"found": [f / max(1, k) for f, k in zip(found, n)],
            "err": [e / max(1, f) for e, f in zip(err, found)],
            "false": false, "n": n}


def line(label, s):
    cells = " ".join(f"{100 * f:6.1f}%" for f in s["found"])
    errs = " ".join(f"{e:5.2f}" for e in s["err"])
    return f"{label:28s} found {cells}  err px {errs}  false {s['false']}"


if __name__ == "__main__":
    import sys
    truth = json.load(open(sys.argv[1]))
    print(line(sys.argv[2], score(truth, from_ndjson(open(sys.argv[2])))))
