#!/usr/bin/python3
"""Attack: files that decode badly or oddly (issue 11, item 7, the file parts).

Clips made here with the ffmpeg CLI, then damaged in Python:
  1. no frame decodes: a PNG clip (NUT and Matroska) whose every PNG
     signature is wiped. trackd must say why in FFmpeg's words ("no frame
     could be decoded", not "backend failure" or 0 frames and exit 0) and
     exit 66; with --loop too (it must not spin).
  2. some frames damaged: every other PNG signature wiped. The good frames
     are tracked, the damaged ones counted in a warning, exit 0.
  3. a 16384x16 frame (rawvideo in NUT): the hello's preview is at least one
     row high (the preview math, not 16 * 640 / 16384 = 0), previews arrive
     with a non-zero size, frames are tracked.
Prints `attack: bad_files tried=N survived=N`.
"""
import asyncio
import json
import os
import time

from attack import (Daemon, case_attack, check, check_preview, connect, ffmpeg, read_ndjson,
                    run_file)

PNG_SIG = b"\x89PNG\r\n\x1a\n"


def wipe_signatures(src, dst, every):
    """Copies src to dst with every `every`-th PNG signature zeroed."""
    data = open(src, "rb").read().split(PNG_SIG)
    out = data[0]
    for i, part in enumerate(data[1:]):
        out += (b"\0" * len(PNG_SIG) if i % every == 0 else PNG_SIG) + part
    open(dst, "wb").write(out)
    return len(data) - 1


def no_frame_case(trackd, d, good, objs):
    ok = True
    # NUT and Matroska: FFmpeg reports the damage differently (per packet in
    # NUT; in Matroska the decoder just gives no frame).
    mkv = os.path.join(d, "good.mkv")
    ffmpeg("-i", good, "-c", "copy", mkv)
    for src, extra in ((good, []), (good, ["--loop"]), (mkv, [])):
        ext = os.path.splitext(src)[1]
        bad = os.path.join(d, "nodecode" + ext)
        n = wipe_signatures(src, bad, 1)
        what = f"no frame decodes ({ext}{' --loop' if extra else ''})"
        log = os.path.join(d, "nodecode.log")
        rc = run_file(trackd, ["-i", bad, "--objects", objs, "-o", os.path.join(d, "x.ndjson"),
                               *extra], log, timeout=60)
        text = open(log).read()
        ok &= check(rc == 66, f"{what}: exit 66 (got {rc})")
        ok &= check("no frame could be decoded" in text and "png decoder" in text,
                    f"{what}: the log says no frame could be decoded, naming the decoder")
        ok &= check("backend failure" not in text, f"{what}: not called a backend failure")
        print(f"({n} packets, all damaged)")
    return ok


def damaged_case(trackd, d, good, objs):
    bad = os.path.join(d, "half.nut")
    n = wipe_signatures(good, bad, 2)
    log, out = os.path.join(d, "half.log"), os.path.join(d, "half.ndjson")
    rc = run_file(trackd, ["-i", bad, "--objects", objs, "-o", out], log, timeout=60)
    text = open(log).read()
    ok = check(rc == 0, f"half damaged: exit 0 (got {rc})")
    frames = read_ndjson(out)
    ok &= check(len(frames) == n // 2, f"half damaged: the {n // 2} good frames tracked "
                f"(got {len(frames)})")
    ok &= check(all(f["objects"][0]["found"] for f in frames), "half damaged: the square found in each")
    ok &= check(f"{n - n // 2} of {n} video packets could not be decoded" in text,
                f"half damaged: the log counts the {n - n // 2} damaged packets")
    return ok


async def wide_client(url):
    ws = await connect(url)
    hello = json.loads(await ws.recv())
    await ws.send(json.dumps({"type": "subscribe", "preview": True}))
    previews, frames = [], 0
    end = time.monotonic() + 20  # previews come at most every 0.1 s: plenty
    try:
        while len(previews) < 2 and time.monotonic() < end:
            raw = await asyncio.wait_for(ws.recv(), end - time.monotonic())
            if isinstance(raw, bytes):
                previews.append(raw)
            elif json.loads(raw)["type"] == "frame":
                frames += 1
    except Exception:
        pass
    await ws.close()
    return hello, previews, frames


def wide_case(trackd, d, objs):
    clip = os.path.join(d, "wide.nut")
    ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=16384x16:r=10:d=30,"
           "drawbox=x=8000:y=4:w=100:h=8:color=red:t=fill", "-c:v", "rawvideo",
           "-pix_fmt", "rgb24", clip)
    with Daemon(trackd, ["-i", clip, "--objects", objs, "--loop"], d) as dm:
        hello, previews, frames = asyncio.get_event_loop().run_until_complete(
            wide_client(dm.url))
    pv = hello["preview"]
    ok = check((hello["width"], hello["height"]) == (16384, 16), f"16384x16: hello size "
               f"{hello['width']}x{hello['height']}")
    ok &= check(pv["width"] >= 1 and pv["height"] == max(1, 16 * pv["width"] // 16384),
                f"16384x16: hello.preview {pv['width']}x{pv['height']} is at least one row")
    ok &= check(frames > 0, f"16384x16: frames tracked ({frames})")
    ok &= check(len(previews) > 0, f"16384x16: previews arrive ({len(previews)})")
    for data in previews:
        errs, _ = check_preview(data, set())
        ok &= check(not errs, f"16384x16: preview well formed ({errs})")
    return ok


def cases(trackd, d, objs):
    good = os.path.join(d, "good.nut")
    ffmpeg("-f", "lavfi", "-i", "color=c=gray:s=64x48:r=10:d=2,"
           "drawbox=x=10:y=10:w=20:h=20:color=red:t=fill", "-c:v", "png", good)
    for case in (no_frame_case, damaged_case):
        yield case(trackd, d, good, objs)
    yield wide_case(trackd, d, objs)


if __name__ == "__main__":
    case_attack("bad_files", cases)
