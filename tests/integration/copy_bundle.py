"""Helpers for the --record-storage copy tests (integration and attack).

A copy bundle of an MJPEG *camera* needs a camera that sends MJPEG (vivid
does not), so mjpeg_camera_bundle() makes one the way the camera would have:
trackd records an MJPEG file (real FFmpeg encoded it) as a raw bundle, and
the file's JPEG packets, copied out unchanged by the ffmpeg command, are put
in frames.mjpeg with index lines naming each one, the manifest made version
3 with storage copy. The camera source decodes a JPEG with the same
libavcodec decoder into the same I420 the file source handed on, so its
replay must verify identical against the recorded results.
"""
import glob
import json
import os
import shutil
import subprocess


def encode_clip(frames, w, h, path, fps, codec):
    """A clip of raw RGB24 frames, encoded by the ffmpeg CLI with the
    output options codec."""
    p = subprocess.Popen(["ffmpeg", "-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "-s", f"{w}x{h}", "-r", str(fps), "-i", "-", *codec, path],
                         stdin=subprocess.PIPE)
    for fb in frames:
        p.stdin.write(fb)
    p.stdin.close()
    return p.wait() == 0


def mjpeg_clip(frames, w, h, path, fps=25):
    """An MJPEG AVI (4:2:0, full range) of raw RGB24 frames, by the ffmpeg CLI."""
    return encode_clip(frames, w, h, path, fps,
                       ["-c:v", "mjpeg", "-pix_fmt", "yuvj420p", "-q:v", "3"])


def mjpeg_camera_bundle(raw_bundle, clip, out):
    """raw_bundle (trackd --record of clip, raw) as a camera's copy bundle
    in out; returns the JPEGs' (offset, size) in frames.mjpeg."""
    shutil.copytree(raw_bundle, out)
    jpgs = os.path.join(out, "jpg")
    os.mkdir(jpgs)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-i", clip, "-c:v", "copy", "-f", "image2",
                    os.path.join(jpgs, "%05d.jpg")], check=True)
    packets = [open(p, "rb").read() for p in sorted(glob.glob(os.path.join(jpgs, "*.jpg")))]
    shutil.rmtree(jpgs)
    where, off = [], 0
    with open(os.path.join(out, "frames.mjpeg"), "wb") as f:
        for p in packets:
            f.write(p)
            where.append((off, len(p)))
            off += len(p)
    lines = open(os.path.join(out, "index.ndjson")).read().splitlines()
    with open(os.path.join(out, "index.ndjson"), "w") as f:
        for line in lines:
            e = json.loads(line)
            o, n = where[e["seq"]]
            e.update(offset=o, file="frames.mjpeg", copy="mjpeg", packet_size=n)
            f.write(json.dumps(e) + "\n")
    open(os.path.join(out, "frames.raw"), "wb").close()
    m = json.load(open(os.path.join(out, "manifest.json")))
    m["version"], m["frames"]["storage"] = 3, "copy"
    m["source"].update(kind="camera", input="/dev/video0")
    for k in ("input_size", "input_sha256"):
        m["source"].pop(k, None)
    json.dump(m, open(os.path.join(out, "manifest.json"), "w"), indent=2)
    return where
