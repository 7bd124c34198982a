#!/usr/bin/python3
"""Attack: hostile bundles for --replay (issue 29; docs/RECORDING.md).

A small good bundle is recorded from the demo scene, then copies of it are
damaged one way each: index lines with huge, negative, missing or wrong-typed
fields, sizes that do not match the geometry or point past frames.raw, seq
going backwards, an unknown pixel format, a manifest of another version or
not JSON, an objects line escaping the folder ("../"), an objects file that
is not an objects file, frames.raw missing, a bundle with no frames. Each
must give exit 65 (66: no bundle) with an error naming the file, never a
crash, a hang or a replay of wrong pixels; the good one must replay
identically. Under ASan/UBSan this also checks the parser's memory.
Prints `attack: bad_bundles tried=N survived=N`.
"""
import json
import os
import shutil
import subprocess

from attack import case_attack, check


def record(trackd, d):
    bundle = os.path.join(d, "good")
    subprocess.run([trackd, "--no-server", "--fast", "--size", "64x48", "--frames", "12",
                    "--record", bundle], check=True, capture_output=True, timeout=120)
    return bundle


def replay(trackd, bundle, verify=False):
    try:
        r = subprocess.run([trackd, "--no-server", "--fast", "--replay", bundle]
                           + (["--verify"] if verify else []),
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def damaged_copy(good, d, name, change):
    """A copy of good named name, changed by change(path)."""
    path = os.path.join(d, name)
    shutil.copytree(good, path)
    change(path)
    return path


def edit_index(line_no, edit):
    """A change that rewrites index line line_no (0-based) with edit(dict)."""
    def change(path):
        p = os.path.join(path, "index.ndjson")
        lines = open(p).read().splitlines()
        j = json.loads(lines[line_no])
        edit(j)
        lines[line_no] = json.dumps(j)
        open(p, "w").write("\n".join(lines) + "\n")
    return change


def write(name, text):
    def change(path):
        open(os.path.join(path, name), "w").write(text)
    return change


def remove(name):
    return lambda path: os.remove(os.path.join(path, name))


CASES = {
    "huge size": (edit_index(2, lambda j: j.update(size=2**62)), "index.ndjson:3"),
    "negative offset": (edit_index(2, lambda j: j.update(offset=-5)), "index.ndjson:3"),
    "offset past the end": (edit_index(5, lambda j: j.update(offset=2**40)), "frames.raw"),
    "huge width": (edit_index(1, lambda j: j.update(width=2**31)), "index.ndjson:2"),
    "zero height": (edit_index(1, lambda j: j.update(height=0)), "index.ndjson:2"),
    "size off by one": (edit_index(1, lambda j: j.update(size=j["size"] - 1)), "index.ndjson:2"),
    "width as text": (edit_index(0, lambda j: j.update(width="64")), "index.ndjson:1"),
    "no offset": (edit_index(0, lambda j: j.pop("offset")), "index.ndjson:1"),
    "unknown format": (edit_index(0, lambda j: j.update(format="rgb48")), "index.ndjson:1"),
    "seq backwards": (edit_index(4, lambda j: j.update(seq=1)), "index.ndjson:5"),
    "index not objects": (write("index.ndjson", "[1,2]\n"), "index.ndjson:1"),
    "index binary": (write("index.ndjson", "\x00\xff\xfe{\n"), "index.ndjson:1"),
    "no frames": (write("index.ndjson", ""), "no frames"),
    "manifest version 99": (lambda p: open(os.path.join(p, "manifest.json"), "w").write(
        json.dumps({"format": "trackd-bundle", "version": 99})), "version 99"),
    "manifest not JSON": (write("manifest.json", "{\"format\": "), "manifest.json"),
    "objects escape": (write("objects.ndjson",
                             '{"version":1,"first_seq":0,"file":"../../etc/passwd"}\n'),
                       "objects.ndjson:1"),
    "objects file broken": (write("objects/0001.json", '{"objects": [{"name": 5}]}'),
                            "0001.json"),
    "no object set": (write("objects.ndjson", ""), "no object set"),
    "frames.raw missing": (remove("frames.raw"), "frames.raw"),
}


def cases(trackd, d, objs):
    good = record(trackd, d)
    rc, out = replay(trackd, good, verify=True)
    yield check(rc == 0 and "identical" in out, f"the good bundle replays identically ({rc})")
    for name, (change, names) in CASES.items():
        bundle = damaged_copy(good, d, name.replace(" ", "_"), change)
        rc, out = replay(trackd, bundle)
        yield check(rc == 65 and names in out and "--replay:" in out,
                    f"{name}: exit 65 naming {names!r} ({rc}: "
                    f"{out.strip().splitlines()[-1][:200] if out.strip() else ''})")
    rc, out = replay(trackd, os.path.join(d, "good", "manifest.json"))
    yield check(rc == 66 and "not a folder" in out, f"a file given as the bundle: exit 66 ({rc})")


if __name__ == "__main__":
    case_attack("bad_bundles", cases)
