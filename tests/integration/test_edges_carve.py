#!/usr/bin/python3
"""Integration: the edges view and seam carving on real trackd, over HTTP and
the WebSocket preview.

The scene: a lossless FFV1 clip (yuv420p, every frame the same picture) of a
textured grey background (luma 128 + 50 sin(x/6) cos(y/9): energy everywhere)
with a red 40x40 box at (60, 40) and a blue 30x50 box at (200, 140), both
tracked (HSV boxes).

1. /snapshot.jpg?edges=1: the frame's Canny edges white over the picture at
   half brightness. Truth: trackd-bench --experiment canny on the frame's own
   Y plane (rule 1 of gpu/canny.h: YUV luma is the stored Y), sigma 1.4,
   thresholds 20/50 (the focus check's setting). Within JPEG loss, defined:
   a decoded pixel is an edge when its luma is >= 192 (edges are 255, the
   rest at most 127 before the JPEG); at most 0.5% of the edge pixels may
   differ either way (runs give 0).
2. /snapshot.jpg?w=160&h=200&fit=carve: exactly 160x200, and every tracked
   object's pixels are kept: each object's colour mask in the carved JPEG is
   its mask in the uncarved snapshot moved by one vector (the difference of
   their boxes' corners): same box size within 1 pixel, IoU after the move
   >= 0.9 (4:2:0 chroma smears a box edge by a pixel where carving put it
   on an odd column). Bad sizes are 400 with the reason.
3. The WebSocket preview with {"fit":"carve","size":[390,844]} (a phone,
   portrait): "TRKC" messages whose picture has the phone's aspect within a
   pixel, and whose JSON maps each object: its bbox equals the object's
   colour mask box in the carved picture within 1 pixel, and its centroid
   lies inside. A client that did not ask still gets "TRKP" at the full
   preview size. {"edges":true}: the preview has white edge pixels.
"""
import asyncio
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import websockets
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_proc import http_get as get, start_trackd, stop_trackd  # noqa: E402

TRACKD, BENCH = sys.argv[1], sys.argv[2]
W, H = 320, 240
FAILS = []
OBJS = {"objects": [
    {"name": "red", "space": "hsv", "lo": [340, 120, 80], "hi": [20, 255, 255]},
    {"name": "blue", "space": "hsv", "lo": [220, 120, 80], "hi": [260, 255, 255]}]}


def expect(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def snapshot(port, query):
    """The decoded JPEG of /snapshot.jpg?query (waits out 'no frame yet')."""
    end = time.monotonic() + 30
    while True:
        st, body = get(port, "/snapshot.jpg?" + query)
        if st == 200 or time.monotonic() > end:
            break
        time.sleep(0.2)
    expect(st == 200, f"/snapshot.jpg?{query}: 200 ({st})")
    return np.array(Image.open(io.BytesIO(body)).convert("RGB")) if st == 200 else None


def masks(rgb):
    """Red and blue masks of an RGB picture (the scene's saturated boxes)."""
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return {"red": (r > 140) & (g < 100) & (b < 100), "blue": (b > 140) & (r < 100) & (g < 100)}


def box(m):
    ys, xs = np.nonzero(m)
    return (xs.min(), ys.min(), xs.max(), ys.max()) if len(xs) else None


def grow(m, k):
    """m dilated (k > 0) or eroded (k < 0) by |k| pixels, 8-neighbourhood."""
    out = m.copy()
    for _ in range(abs(k)):
        p = np.pad(out, 1, constant_values=k < 0)
        nb = [p[1 + dy:p.shape[0] - 1 + dy, 1 + dx:p.shape[1] - 1 + dx]
              for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
        out = np.logical_or.reduce(nb) if k > 0 else np.logical_and.reduce(nb)
    return out


def moved_same(src, dst):
    """Whether dst is src moved by one vector (the difference of their boxes'
    centres), equal within JPEG loss: src's pixels 1 inside its edge all in
    dst, dst's pixels all within 1 of src's (4:2:0 chroma covers 2x2
    pixels: a box edge carving put on an odd column smears by one)."""
    bs, bd = box(src), box(dst)
    dx = round((bd[0] + bd[2] - bs[0] - bs[2]) / 2)
    dy = round((bd[1] + bd[3] - bs[1] - bs[3]) / 2)
    moved = np.zeros_like(dst)
    ys, xs = np.nonzero(src)
    ok = (ys + dy >= 0) & (ys + dy < dst.shape[0]) & (xs + dx >= 0) & (xs + dx < dst.shape[1])
    if not ok.all():
        return False, (dx, dy)
    moved[ys + dy, xs + dx] = True
    return bool((grow(moved, -1) <= dst).all() and (dst <= grow(moved, 1)).all()), (dx, dy)


async def previews(port, request, want):
    """Binary messages after sending request (None: none), until want
    arrived or 20 s passed: [(magic, header fields, json or None, rgb)]."""
    out = []
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=1 << 24) as ws:
        if request:
            await ws.send(json.dumps(request))
        end = time.monotonic() + 20
        acked = request is None
        while len(out) < want and time.monotonic() < end:
            try:
                m = await asyncio.wait_for(ws.recv(), end - time.monotonic())
            except asyncio.TimeoutError:
                break
            if isinstance(m, str):
                j = json.loads(m)
                if j.get("type") == "ack" and j.get("request") == "preview":
                    acked = True
                    print("ack:", m)
                elif j.get("type") == "error":
                    print("error:", m)
                continue
            if not acked:
                continue  # sent before the view changed
            magic = m[:4].decode()
            seq, pw, ph, fw, fh = struct.unpack("<QHHHH", m[4:20])
            body, info = m[20:], None
            if magic == "TRKC":
                (n,) = struct.unpack("<I", body[:4])
                info, body = json.loads(body[4:4 + n]), body[4 + n:]
            rgb = np.array(Image.open(io.BytesIO(body)).convert("RGB"))
            out.append((magic, (seq, pw, ph, fw, fh), info, rgb))
    return out


with tempfile.TemporaryDirectory() as d:
    clip, objs = os.path.join(d, "scene.mkv"), os.path.join(d, "objs.json")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
                    f"color=c=gray:s={W}x{H}:r=10:d=2,"
                    "geq=lum='128+50*sin(X/6)*cos(Y/9)':cb=128:cr=128,"
                    "drawbox=x=60:y=40:w=40:h=40:color=0xc02828:t=fill,"
                    "drawbox=x=200:y=140:w=30:h=50:color=0x2828c0:t=fill",
                    "-pix_fmt", "yuv420p", "-c:v", "ffv1", clip], check=True, timeout=120)
    with open(objs, "w") as f:
        json.dump(OBJS, f)
    # The frame's Y plane as stored, and the reference edges of it.
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", clip, "-frames:v", "1", "-f", "rawvideo",
                          "-pix_fmt", "yuv420p", "-"], check=True, capture_output=True).stdout
    ypgm, epgm = os.path.join(d, "y.pgm"), os.path.join(d, "e.pgm")
    with open(ypgm, "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (W, H) + raw[:W * H])
    subprocess.run([BENCH, "--experiment", "canny", "--image", ypgm, "--out", epgm, "--sigma",
                    "1.4", "--low", "20", "--high", "50", "--runners", "cpu", "--threads", "1"],
                   check=True, capture_output=True, timeout=60)
    ref = np.array(Image.open(epgm)) > 0

    log = open(os.path.join(d, "trackd.log"), "w")
    p, port = start_trackd(TRACKD, ["-i", clip, "-c", objs, "--loop", "--backend", "cpu",
                                    "--snapshot-rate", "0", "--preview-quality", "90"], log)
    try:
        # 1. Edges.
        e = snapshot(port, "edges=1")
        if e is not None:
            luma = np.array(Image.fromarray(e).convert("L"))
            det = luma >= 192
            diff = int((det ^ ref).sum())
            print(f"edges: reference {int(ref.sum())} pixels, snapshot {int(det.sum())}, "
                  f"differing {diff}")
            expect(ref.sum() > 1000 and diff <= 0.005 * ref.sum(),
                   f"edges snapshot == Canny of the frame within JPEG loss ({diff} differ)")

        # 2. Carved snapshot.
        plain = snapshot(port, "")
        carved = snapshot(port, "w=160&h=200&fit=carve")
        if plain is not None and carved is not None:
            expect(carved.shape[:2] == (200, 160), f"carved snapshot is 160x200 ({carved.shape})")
            ms, mc = masks(plain), masks(carved)
            for name in ("red", "blue"):
                bs, bc = box(ms[name]), box(mc[name])
                same, v = moved_same(ms[name], mc[name]) if bc else (False, None)
                expect(same, f"{name} keeps its pixels when carved: box {bs} -> {bc}, moved by {v}")
        for q, code in (("w=400&h=100&fit=carve", 400), ("w=100&fit=carve", 400),
                        ("w=100&h=100&fit=scale", 400), ("w=0&h=100&fit=carve", 400)):
            st, body = get(port, "/snapshot.jpg?" + q)
            expect(st == code, f"/snapshot.jpg?{q}: {code} ({st}: {body.decode().strip()})")

        # 3. The WebSocket preview, carved for a phone, and the edges view.
        got = asyncio.run(previews(port, {"type": "preview", "fit": "carve",
                                          "size": [390, 844]}, 3))
        carved = [g for g in got if g[0] == "TRKC"]
        expect(len(carved) >= 2, f"carved previews arrive ({len(carved)} of {len(got)})")
        for magic, (seq, pw, ph, fw, fh), info, rgb in carved[:2]:
            expect(rgb.shape[:2] == (ph, pw) and abs(pw / ph - 390 / 844) < 1 / ph + 1 / pw and
                   info["carved_from"] == [W, H],
                   f"preview {seq}: {pw}x{ph} has the phone's aspect, from {info['carved_from']}")
            m = masks(rgb)
            byid = {o["id"]: o for o in info["objects"]}
            for k, name in enumerate(("red", "blue")):
                o, b = byid.get(k), box(m[name])
                ok = o is not None and b is not None and all(
                    abs(int(o["bbox"][i]) - int(b[i])) <= 1 for i in range(4)) and \
                    o["bbox"][0] <= o["cx"] <= o["bbox"][2] and o["bbox"][1] <= o["cy"] <= o["bbox"][3]
                expect(ok, f"preview {seq}: {name}'s mapped box {o and o['bbox']} is its pixels' "
                           f"box {b}, centroid inside")
        plain = asyncio.run(previews(port, None, 1))
        expect(plain and plain[0][0] == "TRKP" and plain[0][1][1:3] == (W, H),
               "a client that did not ask gets the plain TRKP preview")
        edged = asyncio.run(previews(port, {"type": "preview", "edges": True}, 2))
        white = [int((np.array(Image.fromarray(g[3]).convert("L")) >= 192).sum()) for g in edged]
        expect(edged and all(g[0] == "TRKP" for g in edged) and white and white[-1] > 500,
               f"the edges view has edge pixels drawn in ({white})")
    finally:
        stop_trackd(p)
        log.close()

if FAILS:
    sys.exit(f"{len(FAILS)} failed: {FAILS}")
