#!/usr/bin/python3
"""Recording a live camera with a teach edit mid-run (issue 29): boots the
vivid VM of run_controls.py (init_controls.sh: trackd on vivid with its web
server, a loopback port of this machine forwarded to it), restarts trackd
there with --record, and with a real WebSocket client waits for frames with
the file's object (vivid's green bar), then teaches it another range
(update_object with "changes", as the page's teach panel sends) that takes
the red bar, and waits for frames finding it there. trackd is stopped
(SIGTERM: the bundle is closed), and in the VM the bundle is replayed with
--verify on cpu and on cpu-ref. Judged here:

  - both replays exit 0, identical;
  - objects.ndjson holds both versions: the first from frame 0, the second
    from the first frame whose recorded result has the box on the red bar,
    every result before it on the green bar and every one from it on the
    red bar (so the version's first frame is exact);
  - the manifest says a camera, the index the driver's format as trackd
    chose it (the frames are the driver's buffers).

Then the same camera recorded with --record-storage copy: vivid offers no
MJPEG (its format list is printed and checked: if it ever does, this test
says so), so its raw frames have no compressed bytes and are stored raw,
and that bundle replays identically too. The MJPEG copy path is tested
without a camera (unit_daemon_record_copy, record_copy).

Exit 77 (skipped, loudly) where qemu, the kernel or the tools are missing.

usage: run_record.py TRACKD WORKDIR
"""
import asyncio
import json
import os
import re
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # nothing written into the source tree
import run_controls as rc  # noqa: E402

TOKEN = "camtest"  # init_controls.sh's --control-token
W, H = 320, 240    # init_controls.sh's --size
# vivid's 8 colour bars at 75%: green is the fourth, red the sixth.
GREEN = {"name": "bar", "space": "rgb", "lo": [0, 140, 0], "hi": [90, 255, 90]}
RED = {"lo": [140, 0, 0], "hi": [255, 90, 90]}
OBJECTS = {"objects": [GREEN], "camera": {"controls": {"osd_text_mode": 2}}}
GREEN_X, RED_X = 3.5 * W / 8 - 0.5, 5.5 * W / 8 - 0.5
VM_TIMEOUT_S = 540
FRAMES_BEFORE, FRAMES_AFTER = 8, 8


def on(o, x):
    return o["found"] and abs(o["cx"] - x) < 4


def on_bar(raw, x):
    """Whether a WebSocket message is a frame with the box on the bar at x."""
    if not isinstance(raw, str):
        return False
    m = json.loads(raw)
    return m.get("type") == "frame" and on(m["objects"][0], x)


async def frames_on(ws, x, n, what):
    """Waits (REPLY_S at most) for n frames with the box on the bar at x."""
    seen, end = 0, time.monotonic() + rc.REPLY_S
    while seen < n and time.monotonic() < end:
        seen += on_bar(await asyncio.wait_for(ws.recv(), rc.REPLY_S), x)
    if seen < n:
        rc.fail(f"only {seen} frames with the bar on {what}")


async def teach(url):
    """Frames on the green bar, the edit, frames on the red bar; the ack."""
    import websockets
    async with websockets.connect(url, max_size=None) as ws:
        c = rc.Client(ws)
        await c.next(lambda m: m.get("type") == "hello", "hello")
        await frames_on(ws, GREEN_X, FRAMES_BEFORE, "green before the edit")
        ack = await c.call({"type": "update_object", "object_id": 0, "changes": RED})
        if ack.get("type") != "ack":
            rc.fail(f"update_object: {ack}")
        await frames_on(ws, RED_X, FRAMES_AFTER, "red after the edit")
    print(f"  taught: {FRAMES_BEFORE}+ frames on the green bar, then {FRAMES_AFTER}+ on red")


def section(con, command, what):
    """Lines command prints in the guest (cat and the like), for what."""
    out = con.cmd(command)
    if not out:
        rc.fail(f"{what}: nothing from {command!r}", con)
    return out


def replay_identical(con, bundle, backend):
    out = con.cmd(f"trackd --replay {bundle} --verify --fast --no-server --backend {backend} "
                  f">/tmp/v.txt 2>&1; echo \"@@RC replay $?\"; tail -n 4 /tmp/v.txt")
    ok = "@@RC replay 0" in out and any(" 0 differ: identical" in l for l in out)
    if not ok:
        rc.fail(f"{bundle} on {backend}: replay --verify not identical:\n" + "\n".join(out), con)
    print(f"  {bundle} on {backend}: {[l for l in out if l.startswith('verify:')][-1]}")


def judge_bundle(con):
    objs = [json.loads(l) for l in section(con, "cat /tmp/rec/objects.ndjson", "objects.ndjson")
            if l.startswith("{")]
    if len(objs) != 2 or objs[0]["first_seq"] != 0 or objs[1]["first_seq"] <= 0:
        rc.fail(f"objects.ndjson: want two versions, the second from a later frame: {objs}", con)
    second = json.loads(" ".join(section(con, "cat /tmp/rec/objects/0002.json; echo",
                                         "objects/0002.json")))
    if (second["objects"][0]["lo"], second["objects"][0]["hi"]) != (RED["lo"], RED["hi"]):
        rc.fail(f"objects/0002.json is not the taught set: {second}", con)
    results = [json.loads(l) for l in section(con, "cat /tmp/rec/results.ndjson",
                                              "results.ndjson") if l.startswith("{")]
    first = objs[1]["first_seq"]
    before = [r["seq"] for r in results if r["seq"] < first]
    wrong = [r["seq"] for r in results
             if not on(r["objects"][0], GREEN_X if r["seq"] < first else RED_X)]
    if not before or wrong:
        rc.fail(f"results against version 2's first frame {first}: frames not on the bar of "
                f"their set: {wrong}", con)
    print(f"  objects.ndjson: version 2 from frame {first}; {len(before)} results on the green "
          f"bar before it, {len(results) - len(before)} on the red bar from it")
    manifest = json.loads(" ".join(section(con, "cat /tmp/rec/manifest.json", "manifest")))
    idx = [json.loads(l) for l in section(con, "head -n 1 /tmp/rec/index.ndjson", "index")
           if l.startswith("{")]
    # The driver's format as trackd chose it (the source's description names it).
    fourcc = re.search(r"\(vivid, (\w+) ", manifest["source"]["description"])
    if manifest["source"]["kind"] != "camera" or not idx or not fourcc or \
            idx[0]["format"] != fourcc.group(1).lower() or manifest["end"]["stopped"] is not None:
        rc.fail(f"manifest / index: {manifest['source']}, {idx}, {manifest.get('end')}", con)
    print(f"  manifest: camera {manifest['source']['input']}, {manifest['end']['frames']} frames "
          f"({manifest['end']['dropped']} not recorded: the writer fell behind), index "
          f"{idx[0]['format']} {idx[0]['width']}x{idx[0]['height']}")


def main():
    trackd, work = sys.argv[1], sys.argv[2]
    t0 = time.monotonic()
    proc, con, port, accel = rc.start_vm(trackd, work, OBJECTS)
    killer = threading.Timer(VM_TIMEOUT_S, proc.kill)
    killer.start()
    try:
        if con.wait(lambda l: l == "@@READY", 0, rc.READY_S) is None:
            rc.fail(f"trackd did not start in the VM within {rc.READY_S} s", con)
        formats = con.cmd("v4l2-ctl -d /dev/video0 --list-formats")
        fourccs = re.findall(r"'(\w{4})'", "\n".join(formats))
        print(f"VM ({accel}) up after {time.monotonic() - t0:.1f} s; vivid offers "
              f"{' '.join(fourccs)}")
        if not fourccs or "MJPG" in fourccs:
            rc.fail("vivid's formats are not as this test assumes (no MJPEG): "
                    f"{fourccs}; record its MJPEG with --record-storage copy here", con)
        url = f"ws://127.0.0.1:{port}/ws?token={TOKEN}"
        con.cmd("stop >/dev/null && start --no-preview --record /tmp/rec")
        asyncio.run(rc.connect_when_up(url, time.monotonic() + rc.READY_S))
        asyncio.run(teach(url))
        out = con.cmd("stop")
        if "@@RC trackd 0" not in out:
            rc.fail("trackd did not exit 0 on SIGTERM while recording", con)
        judge_bundle(con)
        for backend in ("cpu", "cpu-ref"):
            replay_identical(con, "/tmp/rec", backend)
        # --record-storage copy on a camera without MJPEG: stored raw.
        con.cmd("start --no-preview --record /tmp/rec2 --record-storage copy && logged 'recording to' "
                "&& sleep 3 && stop >/dev/null")
        man = json.loads(" ".join(section(con, "cat /tmp/rec2/manifest.json", "manifest")))
        copied = con.cmd("grep -c copy /tmp/rec2/index.ndjson")
        if man["version"] != 3 or man["frames"]["storage"] != "copy" or \
                man["end"]["frames"] < 1 or copied[-1:] != ["0"]:
            rc.fail(f"copy on vivid: {man}, index lines naming a copy: {copied}", con)
        replay_identical(con, "/tmp/rec2", "cpu")
        print(f"  copy on vivid's raw frames: {man['end']['frames']} frames stored raw (no compressed "
              "bytes to copy)")
        con.cmd("quit")
        if any("Sanitizer" in l for l in con.lines):
            rc.fail("a sanitizer report in the VM", con)
        proc.wait(timeout=60)
    finally:
        rc.end_vm(proc, killer, con, work)
    print(f"PASS ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
