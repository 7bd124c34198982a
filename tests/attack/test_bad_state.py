#!/usr/bin/python3
"""Attack: hostile state.bin files in rewind bundles (issue 29;
docs/RECORDING.md, "The state before the first frame").

A rewind save of the demo scene with a tracked red object (SIGUSR1
mid-run) holds state.bin; the good bundle replays --verify identically.
Copies of it get state.bin damaged: cut at many lengths, bytes appended,
and single bytes changed at seeded random offsets (instance counts, sizes,
ids, doubles that turn NaN, tags, the layout words). Each replay must exit
65 naming state.bin and a byte, or run to its end (exit 0 when the change
did not matter, 1 when --verify sees a difference): never a crash, a hang
or a sanitizer report. A second save has the red object's range following
the light ("adapt", "illumination" grey-world): its state.bin's light
section (after the tag LGHT) is cut inside and has single bytes changed
(gains, references, drifts, boxes, the next plan's blob boxes), the same
rules. Prints `attack: bad_state tried=N survived=N`.
"""
import glob
import json
import os
import random
import shutil
import subprocess

from attack import SANITIZER_MARKS, case_attack, check
from test_rewind import run_signalled  # tests/integration, on attack's path

TRACKED_RED = {"objects": [{"name": "red", "space": "rgb", "lo": [150, 0, 0],
                            "hi": [255, 90, 90], "blobs": 4, "track": True}]}


LIT_RED = {"objects": [dict(TRACKED_RED["objects"][0], adapt={})],
           "illumination": {"reference": "grey-world"}}


def rewind_save(trackd, d, objects=TRACKED_RED, name="tracked"):
    """A rewind bundle saved by SIGUSR1 mid-run; its path or None."""
    objs = os.path.join(d, name + ".json")
    json.dump(objects, open(objs, "w"))
    rdir = os.path.join(d, name + "-saves")
    os.makedirs(rdir)
    run_signalled(trackd, ["--size", "160x120", "--fps", "30", "--frames", "90", "--objects",
                           objs, "--rewind", "1s", "--rewind-dir", rdir],
                  os.path.join(d, name + ".ndjson"), os.path.join(d, name + ".log"))
    saved = glob.glob(rdir + "/rewind-*")
    return saved[0] if len(saved) == 1 else None


def replay(trackd, bundle):
    try:
        r = subprocess.run([trackd, "--no-server", "--fast", "--replay", bundle, "--verify"],
                           capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def mutants(data, rng):
    """(name, bytes) of the damaged state.bin files."""
    for n in (0, 7, 8, 19, 20, 47, 48, len(data) // 2, len(data) - 1):
        yield f"cut at {n}", data[:n]
    yield "8 bytes appended", data + b"\x00" * 8
    for _ in range(24):
        at = rng.randrange(len(data))
        b = bytearray(data)
        b[at] ^= rng.randrange(1, 256)
        yield f"byte {at} changed", bytes(b)
    # The first instance's cx (after the 48-byte header and counts, the
    # object's 8 bytes and 40-byte track, its id and 80-byte blob): NaN.
    nan = bytearray(data)
    nan[184:192] = b"\x00\x00\x00\x00\x00\x00\xf8\x7f"
    yield "a NaN position", bytes(nan)


def light_mutants(data, rng):
    """(name, bytes): the light section cut inside and changed."""
    at = data.rfind(b"LGHT")
    for n in (at, at + 4, at + 15, at + 16, (at + len(data)) // 2, len(data) - 1):
        yield f"light: cut at {n}", data[:n]
    for _ in range(24):
        k = rng.randrange(at, len(data))
        b = bytearray(data)
        b[k] ^= rng.randrange(1, 256)
        yield f"light: byte {k} changed", bytes(b)


def cases(trackd, d, objs):
    yield from attack_save(trackd, d, TRACKED_RED, "tracked", mutants)
    yield from attack_save(trackd, d, LIT_RED, "lit", light_mutants)


def attack_save(trackd, d, objects, what, make):
    good = rewind_save(trackd, d, objects, what)
    yield check(good and os.path.exists(os.path.join(good, "state.bin")),
                f"{what}: a rewind save with state.bin ({good})")
    if not good:
        return
    rc, out = replay(trackd, good)
    yield check(rc == 0 and " 0 differ: identical" in out,
                f"{what}: the good bundle replays identically ({rc})")
    data = open(os.path.join(good, "state.bin"), "rb").read()
    yield check(data.rfind(b"LGHT") > 0, f"{what}: state.bin has a light section (version 2)")
    rng = random.Random(29)
    for i, (name, bad) in enumerate(make(data, rng)):
        bundle = os.path.join(d, f"{what}-bad{i}")
        shutil.copytree(good, bundle)
        open(os.path.join(bundle, "state.bin"), "wb").write(bad)
        rc, out = replay(trackd, bundle)
        clean = not any(m in out for m in SANITIZER_MARKS)
        named = rc != 65 or "state.bin: at byte" in out
        last = out.strip().splitlines()[-1][:160] if out.strip() else ""
        yield check(rc in (0, 1, 65) and clean and named,
                    f"{name}: exit {rc}, {'named' if named else 'NOT named'} ({last})")
        shutil.rmtree(bundle)


if __name__ == "__main__":
    case_attack("bad_state", cases)
