#!/usr/bin/python3
"""Attack: the frame size changes mid-stream (issue 11, item 4).

Clips made here with the ffmpeg CLI: three H.264 segments, 320x240 then
640x480 then 320x240, each with a red square at a known place (in the big
segment it lies outside the small frame), joined as MPEG-TS, Matroska and a
raw .h264 elementary stream. For each, the real trackd (--fast, NDJSON):
every frame is tracked at its own size with the right box, none skipped,
exit 0. Then, paced, with WebSocket clients: every client learns each new
size (a status with width/height) before the first frame of that size, and a
client that connects after the change gets a hello with the new size.
Prints `attack: size_change tried=N survived=N`.
"""
import asyncio
import json
import os

from attack import Daemon, case_attack, check, connect, ffmpeg, read_ndjson, run_file

# (width, height, seconds at 30 fps, square x, y, side)
SEGMENTS = [(320, 240, 1, 20, 30, 40), (640, 480, 3, 500, 360, 60), (320, 240, 1, 200, 100, 30)]
FPS = 30


def make_clips(d):
    segs = []
    for i, (w, h, secs, x, y, side) in enumerate(SEGMENTS):
        seg = os.path.join(d, f"seg{i}.ts")
        ffmpeg("-f", "lavfi", "-i", f"color=c=gray:s={w}x{h}:r={FPS}:d={secs},"
               f"drawbox=x={x}:y={y}:w={side}:h={side}:color=red:t=fill",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "15", seg)
        segs.append(seg)
    clips = {}
    # MPEG-TS concatenates as bytes; the others are remuxed from it.
    clips["ts"] = os.path.join(d, "chg.ts")
    with open(clips["ts"], "wb") as out:
        for s in segs:
            out.write(open(s, "rb").read())
    clips["mkv"] = os.path.join(d, "chg.mkv")
    ffmpeg("-i", "concat:" + "|".join(segs), "-c", "copy", clips["mkv"])
    clips["h264"] = os.path.join(d, "chg.h264")
    ffmpeg("-i", "concat:" + "|".join(segs), "-c", "copy", "-bsf:v", "h264_mp4toannexb",
           "-f", "h264", clips["h264"])
    return clips


def expected(seq):
    """(width, height, bbox) of frame seq."""
    start = 0
    for w, h, secs, x, y, side in SEGMENTS:
        if seq < start + secs * FPS:
            return w, h, [x, y, x + side - 1, y + side - 1]
        start += secs * FPS
    return None


TOTAL = sum(s[2] for s in SEGMENTS) * FPS


def check_ndjson(trackd, d, kind, clip, objs):
    out = os.path.join(d, f"{kind}.ndjson")
    log = os.path.join(d, f"{kind}.log")
    rc = run_file(trackd, ["-i", clip, "--objects", objs, "-o", out], log)
    text = open(log).read()
    ok = check(rc == 0, f"{kind}: exit 0 (got {rc})")
    frames = read_ndjson(out)
    ok &= check(len(frames) == TOTAL, f"{kind}: all {TOTAL} frames tracked (got {len(frames)})")
    bad = []
    for f in frames:
        w, h, box = expected(f["seq"])
        o = f["objects"][0]
        # H.264 blurs the square's edge by a pixel at most.
        if (f["width"], f["height"]) != (w, h) or not o["found"] or \
                any(abs(a - b) > 1 for a, b in zip(o["bbox"], box)):
            bad.append((f["seq"], f["width"], f["height"], o["bbox"], box))
    ok &= check(not bad, f"{kind}: every frame at its own size with the square's box "
                f"(wrong: {bad[:3]})")
    ok &= check("0 skipped" in text and "failed on frame" not in text,
                f"{kind}: no frame skipped")
    ok &= check("frame size changed 2 times" in text, f"{kind}: the log counts 2 size changes")
    return ok


async def client(url, results, name, stop):
    """Reads until the close; checks that every frame's size was announced
    (hello, or a status with width/height) before the frame arrived."""
    ws = await connect(url)
    hello = json.loads(await ws.recv())
    known = (hello["width"], hello["height"])
    r = {"hello": hello, "unannounced": [], "statuses": [], "frames": 0, "first": None}
    results[name] = r
    try:
        while not stop.is_set():
            raw = await asyncio.wait_for(ws.recv(), 30)
            if not isinstance(raw, str):
                continue
            m = json.loads(raw)
            if m["type"] == "status" and "width" in m:
                if r["first"] is None:
                    r["first"] = ("status", m["width"], m["height"])
                r["statuses"].append((m["width"], m["height"]))
                known = (m["width"], m["height"])
            elif m["type"] == "frame":
                if r["first"] is None:
                    r["first"] = ("frame", m["width"], m["height"])
                r["frames"] += 1
                if (m["width"], m["height"]) != known:
                    r["unannounced"].append((m["seq"], m["width"], m["height"], known))
    except Exception:  # the close at the end of the file
        pass


async def ws_case(trackd, d, clip, objs):
    dm = Daemon(trackd, ["-i", clip, "--objects", objs], d)
    url = dm.url
    results, stop = {}, asyncio.Event()
    early = asyncio.ensure_future(client(url, results, "early", stop))
    # The late client connects once the early one was told about 640x480.
    for _ in range(200):
        await asyncio.sleep(0.05)
        if (640, 480) in results.get("early", {}).get("statuses", []):
            break
    late = asyncio.ensure_future(client(url, results, "late", stop))
    await asyncio.wait([early, late], timeout=60)
    stop.set()
    rc = dm.p.wait(timeout=30)  # the file's end
    ok = check(rc == 0, f"ws: exit 0 (got {rc})")
    e, l = results.get("early"), results.get("late")
    ok &= check(e and e["frames"] > 0 and not e["unannounced"],
                f"ws: the early client got every size before its frames "
                f"(unannounced: {e and e['unannounced'][:3]})")
    ok &= check(e and (640, 480) in e["statuses"] and e["statuses"][-1] == (320, 240),
                f"ws: status messages carried 640x480 and then 320x240 ({e and e['statuses']})")
    ok &= check(l and l["frames"] > 0 and not l["unannounced"],
                f"ws: the late client got every size before its frames "
                f"(unannounced: {l and l['unannounced'][:3]})")
    if l:
        h = l["hello"]
        # Its hello must agree with what it is shown first (the replayed
        # status, or the first frame): the size of the moment, not the start's.
        first = l["first"]
        ok &= check(first and (h["width"], h["height"]) == first[1:],
                    f"ws: the late client's hello says {h['width']}x{h['height']}, the size of "
                    f"the moment ({first})")
        pw, ph = h["preview"]["width"], h["preview"]["height"]
        ok &= check(0 < pw <= h["width"] and ph == max(1, h["height"] * pw // h["width"]),
                    f"ws: the late hello's preview size {pw}x{ph} fits {h['width']}x{h['height']}")
    return ok


def cases(trackd, d, objs):
    clips = make_clips(d)
    for kind in ("ts", "mkv", "h264"):
        yield check_ndjson(trackd, d, kind, clips[kind], objs)
    yield asyncio.get_event_loop().run_until_complete(ws_case(trackd, d, clips["ts"], objs))


if __name__ == "__main__":
    case_attack("size_change", cases)
