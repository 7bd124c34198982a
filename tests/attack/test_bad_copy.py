#!/usr/bin/python3
"""Attack: damaged --record-storage copy bundles (version 3) for --replay
(issue 29; docs/RECORDING.md, "Copy storage").

Two good bundles are made from an MJPEG clip that real FFmpeg encodes: the
file recorded by reference (--record-storage copy), and the same frames as an
MJPEG camera's bundle (frames.mjpeg holding the clip's JPEG packets as they
came: tests/integration/copy_bundle.py). Copies of them are damaged one way
each: frames.mjpeg missing, cut, a JPEG's start marker gone, a JPEG blanked
past its marker (found only when its frame is decoded), a JPEG of another
size in a frame's place, packet_size huge, offsets negative or past the end,
an index naming another file or an unknown copy kind; for the file by
reference, the input flipped, cut, longer, gone, a folder, a FIFO (never
read), frame numbers jumping ahead (with input_loop: would read for ever) or
going back, the manifest's input_blocks missing or junk. Each must give exit
65 with the error naming the file (and the byte or line where it shows),
never a crash, a hang or a replay of wrong pixels; the good ones replay
identically. Under ASan/UBSan this also checks the replay's memory.
Prints `attack: bad_copy tried=N survived=N`.
"""
import json
import os
import shutil
import subprocess
import sys

from attack import case_attack, check
from test_bad_bundles import edit_index, replay

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from copy_bundle import mjpeg_camera_bundle, mjpeg_clip  # noqa: E402

W, H, N = 64, 48, 12


def frame(f):
    return b"".join(bytes((230, 30, 30)) if (x - 8 - 2 * f) ** 2 + (y - 24) ** 2 <= 49
                    else bytes(((x * 3 + y) & 255,) * 3) for y in range(H) for x in range(W))


def on_bundle(change):
    """test_bad_bundles' change(path) as this test's change(path, input)."""
    return lambda path, _input: change(path)


def edit_line(line_no, edit):
    """Rewrites index line line_no (0-based) with edit(dict)."""
    return on_bundle(edit_index(line_no, edit))


def edit_manifest(edit):
    """Rewrites manifest.json with edit(dict)."""
    def change(path, _input):
        p = os.path.join(path, "manifest.json")
        j = json.load(open(p))
        edit(j)
        json.dump(j, open(p, "w"))
    return change


def poke_mjpeg(k, data_of):
    """Overwrites JPEG k of frames.mjpeg with data_of(its bytes)."""
    def change(path, _input):
        e = json.loads(open(os.path.join(path, "index.ndjson")).read().splitlines()[k])
        with open(os.path.join(path, "frames.mjpeg"), "r+b") as f:
            f.seek(e["offset"])
            old = f.read(e["packet_size"])
            f.seek(e["offset"])
            f.write(data_of(old))
    return change


def blank(old):
    return old[:2] + bytes(len(old) - 2)


def cut_mjpeg(path, _input):
    p = os.path.join(path, "frames.mjpeg")
    os.truncate(p, os.path.getsize(p) - 100)


def other_size_jpeg(d):
    """A small JPEG (16x16) of a real encoder, for a frame's place."""
    out = os.path.join(d, "small.jpg")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "color=red:size=16x16", "-frames:v", "1", "-pix_fmt", "yuvj420p", out],
                   check=True)
    return open(out, "rb").read()


def swap_in(jpeg):
    """Frame 5's JPEG replaced by jpeg (appended, its index line moved)."""
    def change(path, _input):
        p = os.path.join(path, "frames.mjpeg")
        at = os.path.getsize(p)
        open(p, "ab").write(jpeg)
        edit_line(5, lambda j: j.update(offset=at, packet_size=len(jpeg)))(path, _input)
    return change


def input_change(fn):
    """A change to the input file the by-reference bundle names."""
    return lambda path, inp: fn(inp)


def flip(inp):
    data = bytearray(open(inp, "rb").read())
    data[len(data) // 2] ^= 0xff
    open(inp, "wb").write(data)


def to_fifo(inp):
    os.remove(inp)
    os.mkfifo(inp)


def to_folder(inp):
    os.remove(inp)
    os.mkdir(inp)


CAMERA = {
    "frames.mjpeg missing": (lambda p, i: os.remove(os.path.join(p, "frames.mjpeg")),
                             "frames.mjpeg: cannot open"),
    "frames.mjpeg cut": (cut_mjpeg, "frames.mjpeg: frame 11 is bytes"),
    "start marker gone": (poke_mjpeg(3, lambda o: b"\0\0" + o[2:]), "frames.mjpeg: frame 3 at byte"),
    "JPEG blanked": (poke_mjpeg(6, blank), "frames.mjpeg at byte"),
    "packet_size huge": (edit_line(2, lambda j: j.update(packet_size=2**62)),
                         "frames.mjpeg: frame 2"),
    "packet_size negative": (edit_line(2, lambda j: j.update(packet_size=-4)),
                             "index.ndjson:3"),
    "offset negative": (edit_line(1, lambda j: j.update(offset=-1)),
                        "index.ndjson:2"),
    "offset past the end": (edit_line(4, lambda j: j.update(offset=2**40)),
                            "frames.mjpeg: frame 4"),
    "another file": (edit_line(0, lambda j: j.update(file="../../etc/passwd")),
                     "index.ndjson:1"),
    "unknown copy": (edit_line(0, lambda j: j.update(copy="h264")),
                     "index.ndjson:1"),
}

BY_REFERENCE = {
    "input flipped": (input_change(flip), "not the file recorded: bytes"),
    "input cut": (input_change(lambda i: os.truncate(i, os.path.getsize(i) - 10)),
                  "not the file recorded: it ends at byte"),
    "input longer": (input_change(lambda i: open(i, "ab").write(b"x")),
                     "not the file recorded: it is"),
    "input gone": (input_change(os.remove), "cannot read it: No such file"),
    "input a folder": (input_change(to_folder), "not a regular file"),
    "input a FIFO": (input_change(to_fifo), "not a regular file"),
    "frame far ahead": (edit_line(3, lambda j: j.update(frame=2**40)),
                        "index.ndjson:4"),
    "frame far ahead, looping": (lambda p, i: (
        edit_manifest(lambda j: j["source"].update(input_loop=True))(p, i),
        edit_line(3, lambda j: j.update(frame=2**40))(p, i)), "index.ndjson:4"),
    "frame going back": (edit_line(5, lambda j: j.update(frame=1)), "index.ndjson:6"),
    "frame past the file": (lambda p, i: [edit_line(k, lambda j: j.update(
        frame=j["frame"] + 500))(p, i) for k in range(N - 1, 3, -1)], "ends before frame"),
    "no input_blocks": (edit_manifest(lambda j: j["source"].pop("input_blocks")),
                        "input_blocks is missing"),
    "input_blocks junk": (edit_manifest(lambda j: j["source"].update(
        input_blocks={"block": 0, "crc32": "zz"})), "input_blocks is missing"),
    "crc32 junk": (edit_manifest(lambda j: j["source"]["input_blocks"].update(
        crc32=["zz", 5])), "not the file recorded"),
    "block of 1 byte": (edit_manifest(lambda j: j["source"][
        "input_blocks"].update(block=1)), "not the file recorded: bytes 0..1 "),
}


def cases(trackd, d, objs):
    avi = os.path.join(d, "clip.avi")
    mjpeg_clip([frame(f) for f in range(N)], W, H, avi)
    ref = os.path.join(d, "ref")
    raw = os.path.join(d, "raw")
    for bundle, extra in ((raw, []), (ref, ["--record-storage", "copy"])):
        subprocess.run([trackd, "--no-server", "--fast", "--input", avi, "--objects", objs,
                        "--record", bundle] + extra, check=True, capture_output=True, timeout=120)
    cam = os.path.join(d, "cam")
    mjpeg_camera_bundle(raw, avi, cam)
    for good in (cam, ref):
        rc, out = replay(trackd, good, verify=True)
        yield check(rc == 0 and "identical" in out,
                    f"the good {os.path.basename(good)} bundle replays identically ({rc})")
    CAMERA["another size in frame 5's place"] = (swap_in(other_size_jpeg(d)),
                                                 "frame 5 decodes as i420 16x16")
    for group, good in ((CAMERA, cam), (BY_REFERENCE, ref)):
        for name, (change, names) in group.items():
            slug = name.replace(" ", "_").replace(",", "").replace("'", "")
            bundle = os.path.join(d, slug)
            shutil.copytree(good, bundle)
            # Each by-reference case damages its own copy of the input.
            inp = os.path.join(d, slug + ".avi")
            shutil.copy(avi, inp)
            edit_manifest(lambda j: j["source"].update(input=inp)
                      if good == ref else None)(bundle, inp)
            change(bundle, inp)
            rc, out = replay(trackd, bundle, verify=True)
            last = out.strip().splitlines()[-1][:200] if out.strip() else ""
            yield check(rc == 65 and names in out and "--replay:" in out,
                        f"{name}: exit 65 naming {names!r} ({rc}: {last})")


if __name__ == "__main__":
    case_attack("bad_copy", cases)
