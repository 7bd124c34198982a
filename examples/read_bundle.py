#!/usr/bin/python3
"""Reads a trackd bundle (trackd --record DIR; docs/RECORDING.md) without
trackd, with the Python standard library alone (and, for a bundle stored as
FFV1 or as copied bytes, the ffmpeg command to decode it).

Bundles with --record-storage copy (version 3) hold an MJPEG camera's JPEGs
(frames.mjpeg) and name a file input's frames by number: both are decoded by
the ffmpeg command (one run per JPEG, one for the whole input file), which
uses the libavcodec decoders trackd used, so the bytes are the ones trackd
tracked. The input file is checked first (size, SHA-256, block CRCs); a
file that is missing or not the recorded one raises ValueError naming it
and the offset where it differs.

    read_bundle.py DIR              summary: source, frames, object sets, results
    read_bundle.py DIR --ppm SEQ F  writes frame SEQ as a binary PPM (RGB) to F

As a module: Bundle(DIR).frames() yields (index entry, pixel bytes) in order,
.object_sets() the sets with the first frame each applies to, .results() the
frame messages. Lines cut by a recording that stopped (no newline at the end)
are left out, as trackd --replay does.
"""
import hashlib
import json
import os
import subprocess
import sys
import zlib

FORMAT, VERSIONS = "trackd-bundle", (1, 2, 3)

# --record-storage ffv1: the planar or padded form each format is stored in
# (FFV1 codes no packed YUV and no 8-bit planar RGB), as ffmpeg names it.
TWIN = {"rgb24": "bgr0", "bgr24": "bgr0", "rgba": "bgra", "bgra": "bgra",
        "yuyv": "yuv422p", "nv12": "yuv420p", "i420": "yuv420p"}


def plane_layout(fmt, w, h):
    """(row bytes, rows) of each plane, without padding (gpu/image.h)."""
    cw, ch = (w + 1) // 2, (h + 1) // 2
    return {
        "rgb24": [(3 * w, h)], "bgr24": [(3 * w, h)],
        "rgba": [(4 * w, h)], "bgra": [(4 * w, h)],
        "yuyv": [(4 * cw, h)],
        "nv12": [(w, h), (2 * cw, ch)],
        "i420": [(w, h), (cw, ch), (cw, ch)],
    }[fmt]


def _lines(path):
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break  # cut by a failure: the bundle ends before it
            yield json.loads(raw)


class Bundle:
    def __init__(self, path):
        self.path = path
        with open(os.path.join(path, "manifest.json")) as f:
            self.manifest = json.load(f)
        if self.manifest.get("format") != FORMAT or self.manifest.get("version") not in VERSIONS:
            raise ValueError(f"{path}: not a {FORMAT} bundle of version {VERSIONS}")
        self.index = list(_lines(os.path.join(path, "index.ndjson")))
        self.decoded = {}  # ffv1: file -> its frames in its twin form
        self.input_frames = None  # copy: the input file's frames, decoded

    def _ffv1(self, entry):
        """An ffv1 entry's frame, decoded by ffmpeg (the whole file once)."""
        name = entry["file"]
        if name not in self.decoded:
            r = subprocess.run(["ffmpeg", "-v", "error", "-i", os.path.join(self.path, name),
                                "-f", "rawvideo", "-pix_fmt", TWIN[entry["format"]], "-"],
                               capture_output=True, check=True)
            w, h = entry["width"], entry["height"]
            if entry["format"] == "yuyv":
                w += w & 1  # stored one column wider: every luma sample of a row
            n = {"bgr0": 4 * w * h, "bgra": 4 * w * h, "yuv422p": 2 * w * h,
                 "yuv420p": w * h + 2 * ((w + 1) // 2) * ((h + 1) // 2)}[TWIN[entry["format"]]]
            self.decoded[name] = [r.stdout[i:i + n] for i in range(0, len(r.stdout), n)]
        frames = self.decoded[name]
        if entry["packet"] >= len(frames):
            raise ValueError(f"{name} ends before frame {entry['seq']}")
        return from_twin(entry, frames[entry["packet"]])

    def _mjpeg(self, entry):
        """A copied JPEG, decoded as trackd's camera source does: 4:2:0 as it
        is, 4:2:2 with every other chroma row (I420)."""
        with open(os.path.join(self.path, "frames.mjpeg"), "rb") as f:
            f.seek(entry["offset"])
            jpeg = f.read(entry["packet_size"])
        if len(jpeg) != entry["packet_size"]:
            raise ValueError(f"frames.mjpeg ends inside frame {entry['seq']} "
                             f"(at byte {entry['offset']})")
        r = subprocess.run(["ffmpeg", "-v", "error", "-f", "mjpeg", "-i", "-", "-f", "rawvideo",
                            "-"], input=jpeg, capture_output=True)
        w, h = entry["width"], entry["height"]
        cw, ch = (w + 1) // 2, (h + 1) // 2
        t = r.stdout
        if r.returncode or len(t) not in (w * h + 2 * cw * ch, w * h + 2 * cw * h):
            raise ValueError(f"frames.mjpeg: frame {entry['seq']} at byte {entry['offset']} "
                             f"does not decode: {r.stderr.decode()[-200:]}")
        if len(t) == w * h + 2 * cw * ch:
            return t
        u, v = t[w * h:w * h + cw * h], t[w * h + cw * h:]
        keep = b"".join(p[2 * y * cw:(2 * y + 1) * cw] for p in (u, v) for y in range(ch))
        return t[:w * h] + keep

    def check_input(self):
        """The input file a copy bundle refers to is the recorded one."""
        src = self.manifest["source"]
        path, blocks = src["input"], src["input_blocks"]
        if not os.path.exists(path):
            raise ValueError(f"{path}: missing (the bundle's frames are in it, by reference)")
        size, sha = os.path.getsize(path), hashlib.sha256()
        with open(path, "rb") as f:
            for i, want in enumerate(blocks["crc32"]):
                chunk = f.read(blocks["block"])
                sha.update(chunk)
                if len(chunk) < blocks["block"] and size != src["input_size"]:
                    break  # a cut or a longer file: said below
                if "%08x" % zlib.crc32(chunk) != want:
                    raise ValueError(f"{path}: not the file recorded: bytes "
                                     f"{i * blocks['block']}..{i * blocks['block'] + len(chunk)} "
                                     f"differ from it")
        if size != src["input_size"] or sha.hexdigest() != src["input_sha256"]:
            raise ValueError(f"{path}: not the file recorded: {size} bytes, the recorded one "
                             f"{src['input_size']}")

    def _input(self, entry):
        """Frame `frame` of the input file, decoded by ffmpeg in the format
        trackd kept it in (the whole file once; --loop passes wrap)."""
        if self.input_frames is None:
            self.check_input()
            fmt, w, h = entry["format"], entry["width"], entry["height"]
            pix = {"i420": "yuvj420p" if entry["full_range"] else "yuv420p", "nv12": "nv12",
                   "yuyv": "yuyv422", "rgb24": "rgb24", "bgr24": "bgr24", "rgba": "rgba",
                   "bgra": "bgra"}[fmt]
            r = subprocess.run(["ffmpeg", "-v", "error", "-i", self.manifest["source"]["input"],
                                "-map", "0:v:0", "-vsync", "passthrough", "-sws_flags", "point",
                                "-f", "rawvideo", "-pix_fmt", pix, "-"],
                               capture_output=True, check=True)
            n = sum(rb * rows for rb, rows in plane_layout(fmt, w, h))
            self.input_frames = [r.stdout[i:i + n] for i in range(0, len(r.stdout), n)]
        if not self.input_frames:
            raise ValueError(f"{self.manifest['source']['input']}: no frame decodes")
        k = entry["frame"]
        if k >= len(self.input_frames) and not self.manifest["source"].get("input_loop"):
            raise ValueError(f"{self.manifest['source']['input']} ends before frame {k}")
        return self.input_frames[k % len(self.input_frames)]

    def frame(self, entry):
        """The pixels of one index entry: the planes one after another."""
        if entry.get("copy") == "mjpeg":
            return self._mjpeg(entry)
        if entry.get("copy") == "input":
            return self._input(entry)
        if self.manifest["frames"]["storage"] == "ffv1":
            return self._ffv1(entry)
        with open(os.path.join(self.path, self.manifest["frames"]["file"]), "rb") as f:
            f.seek(entry["offset"])
            data = f.read(entry["size"])
        if len(data) != entry["size"]:
            raise ValueError(f"frames.raw ends inside frame {entry['seq']}")
        return data

    def frames(self):
        for e in self.index:
            yield e, self.frame(e)

    def object_sets(self):
        """(first_seq, objects JSON) in order."""
        for v in _lines(os.path.join(self.path, "objects.ndjson")):
            with open(os.path.join(self.path, v["file"])) as f:
                yield v["first_seq"], json.load(f)

    def results(self):
        return _lines(os.path.join(self.path, "results.ndjson"))


def from_twin(entry, t):
    """A frame's bytes from the form ffmpeg decoded it to (TWIN)."""
    fmt, w, h = entry["format"], entry["width"], entry["height"]
    if fmt in ("bgra", "i420"):
        return bytes(t)
    if fmt in ("rgb24", "bgr24", "rgba"):
        step = 4 if fmt == "rgba" else 3
        order = {"rgb24": (2, 1, 0), "bgr24": (0, 1, 2), "rgba": (2, 1, 0, 3)}[fmt]
        out = bytearray(w * h * step)
        for c in range(step):
            out[c::step] = t[order[c]::4]
        return bytes(out)
    if fmt == "yuyv":
        cw = (w + 1) // 2
        y, u, v = t[:2 * cw * h], t[2 * cw * h:3 * cw * h], t[3 * cw * h:]
        out = bytearray(4 * cw * h)
        out[0::4], out[2::4], out[1::4], out[3::4] = y[0::2], y[1::2], u, v
        return bytes(out)
    cn = ((w + 1) // 2) * ((h + 1) // 2)  # nv12: U and V planes interleaved again
    uv = bytearray(2 * cn)
    uv[0::2], uv[1::2] = t[w * h:w * h + cn], t[w * h + cn:]
    return bytes(t[:w * h]) + bytes(uv)


def to_rgb(entry, data):
    """RGB24 bytes of an rgb24 / bgr24 / rgba / bgra frame (YUV formats:
    convert with your own matrix; the entry says which)."""
    fmt = entry["format"]
    if fmt == "rgb24":
        return data
    step, order = {"bgr24": (3, (2, 1, 0)), "rgba": (4, (0, 1, 2)), "bgra": (4, (2, 1, 0))}[fmt]
    out = bytearray(len(data) // step * 3)
    for c in range(3):
        out[c::3] = data[order[c]::step]
    return bytes(out)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    b = Bundle(argv[1])
    if len(argv) == 5 and argv[2] == "--ppm":
        e = next(e for e in b.index if e["seq"] == int(argv[3]))
        with open(argv[4], "wb") as f:
            f.write(b"P6\n%d %d\n255\n" % (e["width"], e["height"]))
            f.write(to_rgb(e, b.frame(e)))
        return
    m = b.manifest
    print(f"source: {m['source']['description']} (trackd {m['trackd']})")
    print(f"frames: {len(b.index)}", end="")
    if b.index:
        print(f", seq {b.index[0]['seq']}..{b.index[-1]['seq']}, {b.index[0]['format']} "
              f"{b.index[0]['width']}x{b.index[0]['height']}", end="")
    print()
    for first, objs in b.object_sets():
        print(f"objects from frame {first}: {[o['name'] for o in objs['objects']]}")
    print(f"results: {sum(1 for _ in b.results())} frame messages")


if __name__ == "__main__":
    main(sys.argv)
