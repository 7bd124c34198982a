#!/usr/bin/python3
"""Integration: --record-storage copy (docs/RECORDING.md, "Copy storage")
with the real daemon, real FFmpeg-made clips and examples/read_bundle.py.

  1. file inputs by reference, an RGB clip (NUT) and an MJPEG one (AVI): the
     bundle is version 3, holds no frame bytes (frames.raw empty), names the
     input by absolute path with its size, SHA-256 and block CRC-32s (checked
     here with hashlib and zlib), and each index line the frame's number in
     the file; its results are a raw recording's, read_bundle.py decodes the
     raw recording's frames byte for byte, and replay --verify is identical
     on cpu and cpu-ref, from another working directory too;
  2. --loop: frames of the second pass named by their number across passes,
     replayed identically;
  3. the input damaged after recording: a flipped byte (exit 65 naming the
     file and the bytes that differ), cut short (65, where it ends), gone
     (65, the file named); read_bundle.py says the same;
  4. an MJPEG camera's bundle (frames.mjpeg: the clip's JPEG packets as they
     came; see copy_bundle.py for why no camera) replays identically through
     the camera's decoder, and read_bundle.py decodes it to the same pixels;
  5. the demo with copy: nothing to copy, stored raw (said), replays
     identically; --hwdec cuda with copy: refused (exit 64).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib

from copy_bundle import mjpeg_camera_bundle, mjpeg_clip
from test_record import FAILS, N, H, W, check, frame_bytes, replay_identical, run

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))
import read_bundle  # noqa: E402


def untimed(results):
    """Frame messages without the fields that measure the run."""
    drop = ("t_capture", "wall_ms", "latency", "upload_bytes")
    return [{k: v for k, v in r.items() if k not in drop} for r in results]


def clips(tmp):
    frames = [frame_bytes(f) for f in range(N)]
    nut = os.path.join(tmp, "clip.nut")
    p = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-s", f"{W}x{H}", "-r", "25", "-i", "-", "-c:v", "rawvideo",
                          "-pix_fmt", "rgb24", nut], stdin=subprocess.PIPE)
    for fb in frames:
        p.stdin.write(fb)
    p.stdin.close()
    check(p.wait() == 0, "ffmpeg made the RGB clip")
    avi = os.path.join(tmp, "clip.avi")
    check(mjpeg_clip(frames, W, H, avi), "ffmpeg made the MJPEG clip")
    return nut, avi


def by_reference(trackd, tmp, clip, objs, what):
    name = what.replace(" ", "-")
    raw, copy = os.path.join(tmp, name + "-raw"), os.path.join(tmp, name + "-copy")
    common = ["--input", clip, "--objects", objs, "--fast", "--no-server", "--record"]
    r1 = run(trackd, common + [raw])
    r2 = run(trackd, common + [copy, "--record-storage", "copy"])
    check(r1.returncode == 0 and r2.returncode == 0,
          f"{what}: recorded raw and copy ({r1.returncode}, {r2.returncode})")
    a, b = read_bundle.Bundle(raw), read_bundle.Bundle(copy)
    m = b.manifest
    check(m["version"] == 3 and m["frames"]["storage"] == "copy",
          f"{what}: the copy bundle is version 3, storage copy")
    check(os.path.getsize(os.path.join(copy, "frames.raw")) == 0
          and not os.path.exists(os.path.join(copy, "frames.mjpeg")),
          f"{what}: the copy bundle holds no frame bytes")
    data = open(clip, "rb").read()
    src, blocks = m["source"], m["source"].get("input_blocks", {})
    crcs = ["%08x" % zlib.crc32(data[i:i + blocks.get("block", 1)])
            for i in range(0, len(data), blocks.get("block", len(data) or 1))]
    check(src["input"] == os.path.realpath(clip) and src.get("input_size") == len(data)
          and src.get("input_sha256") == hashlib.sha256(data).hexdigest()
          and blocks.get("crc32") == crcs and src.get("input_loop") is False,
          f"{what}: the manifest names the input by absolute path, size, SHA-256, block CRCs")
    check([(e.get("copy"), e.get("frame"), "offset" in e) for e in b.index]
          == [("input", i, False) for i in range(N)],
          f"{what}: each index line names its frame of the input")
    check(untimed(b.results()) == untimed(a.results()),
          f"{what}: the copy recording's results are the raw recording's")
    check([d for _, d in b.frames()] == [d for _, d in a.frames()],
          f"{what}: read_bundle.py decodes the raw recording's frames byte for byte")
    elsewhere = os.path.join(tmp, "elsewhere")
    os.makedirs(elsewhere, exist_ok=True)
    for backend in ("cpu", "cpu-ref"):
        replay_identical(trackd, copy, backend, what, cwd=elsewhere)
    print(f"     {what}: raw bundle {du(raw)} bytes, copy bundle {du(copy)} bytes")
    return copy


def du(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def looped(trackd, tmp, clip, objs):
    bundle = os.path.join(tmp, "loop-copy")
    r = run(trackd, ["--input", clip, "--loop", "--frames", str(N + 25), "--objects", objs,
                     "--fast", "--no-server", "--record", bundle, "--record-storage", "copy"])
    b = read_bundle.Bundle(bundle)
    check(r.returncode == 0 and [e["frame"] for e in b.index] == list(range(N + 25))
          and b.manifest["source"]["input_loop"] is True,
          f"--loop: {N + 25} frames named across the passes, input_loop in the manifest")
    check([d for _, d in b.frames()][N:] == [d for _, d in b.frames()][:25],
          "--loop: read_bundle.py gives the second pass's frames as the first's")
    replay_identical(trackd, bundle, "cpu", "--loop")


def damaged(trackd, tmp, objs, nut):
    clip = os.path.join(tmp, "victim.nut")
    shutil.copy(nut, clip)
    bundle = os.path.join(tmp, "victim-copy")
    run(trackd, ["--input", clip, "--objects", objs, "--fast", "--no-server", "--record",
                 bundle, "--record-storage", "copy"])
    m = read_bundle.Bundle(bundle).manifest["source"]
    block, size = m["input_blocks"]["block"], m["input_size"]
    real = os.path.realpath(clip)
    at = size // 2
    data = bytearray(open(clip, "rb").read())
    data[at] ^= 0x55
    open(clip, "wb").write(data)
    lo = at // block * block
    r = run(trackd, ["--replay", bundle, "--fast", "--no-server"])
    check(r.returncode == 65 and f"{real}: not the file recorded: bytes {lo}.." in r.stderr,
          f"a flipped byte in the input: exit 65 naming it and bytes {lo}.. "
          f"({r.returncode}: {r.stderr.strip()[-200:]})")
    try:
        list(read_bundle.Bundle(bundle).frames())
        said = ""
    except ValueError as e:
        said = str(e)
    check(f"bytes {lo}.." in said, f"read_bundle.py says so too ({said})")
    data[at] ^= 0x55
    open(clip, "wb").write(data[:size - 1000])
    r = run(trackd, ["--replay", bundle, "--fast", "--no-server"])
    check(r.returncode == 65 and f"it ends at byte {size - 1000}, the recorded one at byte "
          f"{size}" in r.stderr, f"the input cut short: exit 65 with where it ends "
          f"({r.returncode}: {r.stderr.strip()[-200:]})")
    os.remove(clip)
    r = run(trackd, ["--replay", bundle, "--fast", "--no-server"])
    check(r.returncode == 65 and f"{real}: cannot read it: No such file" in r.stderr,
          f"the input gone: exit 65 naming it ({r.returncode}: {r.stderr.strip()[-200:]})")
    open(clip, "wb").write(data)
    r = run(trackd, ["--replay", bundle, "--verify", "--fast", "--no-server"])
    check(r.returncode == 0 and "identical" in r.stdout, "the input put back: identical again")


def camera(trackd, tmp, objs, avi):
    raw = os.path.join(tmp, "MJPEG-file-raw")  # by_reference's raw recording of avi
    cam = os.path.join(tmp, "mjpeg-camera")
    mjpeg_camera_bundle(raw, avi, cam)
    for backend in ("cpu", "cpu-ref"):
        replay_identical(trackd, cam, backend, "MJPEG camera bundle")
    check([d for _, d in read_bundle.Bundle(cam).frames()]
          == [d for _, d in read_bundle.Bundle(raw).frames()],
          "MJPEG camera bundle: read_bundle.py decodes each JPEG to the pixels trackd tracked")


def gpu_decoding(trackd, tmp, clip):
    """--hwdec cuda with copy: refused (the replay decodes in software)."""
    r = run(trackd, ["--input", clip, "--hwdec", "cuda", "--fast", "--no-server", "--record",
                     os.path.join(tmp, "hw"), "--record-storage", "copy"])
    check(r.returncode == 64 and "--record-storage copy needs software decoding" in r.stderr
          and not os.path.exists(os.path.join(tmp, "hw")),
          f"--hwdec cuda with copy: exit 64, said why, nothing recorded ({r.returncode})")


def demo(trackd, tmp):
    bundle = os.path.join(tmp, "demo-copy")
    r = run(trackd, ["--size", "160x120", "--frames", "20", "--fast", "--no-server",
                     "--record", bundle, "--record-storage", "copy"])
    b = read_bundle.Bundle(bundle)
    check(r.returncode == 0 and "no compressed frames to copy" in r.stderr
          and os.path.getsize(os.path.join(bundle, "frames.raw")) == 20 * 160 * 120 * 3
          and all("copy" not in e for e in b.index),
          "the demo with copy: stored raw, and said")
    replay_identical(trackd, bundle, "cpu", "the demo with copy")


def main():
    trackd = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        objs = os.path.join(tmp, "objs.json")
        with open(objs, "w") as f:
            json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 0, 0],
                                    "hi": [255, 80, 80]}]}, f)
        nut, avi = clips(tmp)
        by_reference(trackd, tmp, nut, objs, "RGB file")
        by_reference(trackd, tmp, avi, objs, "MJPEG file")
        looped(trackd, tmp, nut, objs)
        damaged(trackd, tmp, objs, nut)
        camera(trackd, tmp, objs, avi)
        demo(trackd, tmp)
        gpu_decoding(trackd, tmp, avi)
    print(f"{len(FAILS)} failed" if FAILS else "all passed")
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
