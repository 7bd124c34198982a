#!/usr/bin/python3
"""Reads a trackd bundle (trackd --record DIR; docs/RECORDING.md) without
trackd, with the Python standard library alone (and, for a bundle stored as
FFV1, the ffmpeg command to decode it).

    read_bundle.py DIR              summary: source, frames, object sets, results
    read_bundle.py DIR --ppm SEQ F  writes frame SEQ as a binary PPM (RGB) to F

As a module: Bundle(DIR).frames() yields (index entry, pixel bytes) in order,
.object_sets() the sets with the first frame each applies to, .results() the
frame messages. Lines cut by a recording that stopped (no newline at the end)
are left out, as trackd --replay does.
"""
import json
import os
import subprocess
import sys

FORMAT, VERSIONS = "trackd-bundle", (1, 2)

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

    def frame(self, entry):
        """The pixels of one index entry: the planes one after another."""
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
