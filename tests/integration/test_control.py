#!/usr/bin/python3
"""Integration: the control protocol (PROTOCOL.md section 5) against the real
daemon with a real WebSocket client (Debian's python3-websockets).

Starts trackd on the demo scene with an objects file, then:
  1. every control message, good: get/add/update/rename/remove/set objects,
     sample (point and rectangle), preview (width, rate, mask), save, reload;
     edits show up in the next frames' names and in an "objects" broadcast;
  2. every control message malformed: wrong field types, unknown commands,
     huge values, invalid JSON, oversize messages; each gets an error reply
     naming the problem and the connection stays usable;
  3. teaching: an object built from a sample's suggested box is found where
     the sampled ball is;
  4. the mask preview agrees with the object's mass (decoded with ffmpeg);
  5. save_objects writes the file atomically (no temporary left) and the file
     loads back identical to the live set; reload_objects re-reads it;
  6. SIGHUP with a broken file keeps the old objects; with a good one applies
     it;
  7. stats carry the measured send and total latency (the page's panel);
  8. --control-token: control messages are "unauthorized" until the client
     authenticates ({"type":"auth"} or ?token=), results flow regardless;
  9. on 0.0.0.0 a token is generated, printed in the page URL, and required (we connect
     over loopback: only loopback traffic is possible here).
"""
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import websockets

from daemon_proc import free_port, start_trackd

FAILS = []
# How long to keep aiming samples at the moving red ball (nominally the first
# lands; generous for a loaded machine, where each try lags by more frames).
SAMPLE_DEADLINE_S = 20


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


class Client:
    """One connection; keeps the latest frame, objects broadcast, previews."""

    def __init__(self, ws):
        self.ws = ws
        self.replies = {}
        self.frames = []
        self.objects_msgs = []
        self.previews = []
        self.next_id = 1
        self.task = asyncio.ensure_future(self._reader())
        self.closed = False
        self.stats = None

    async def _reader(self):
        try:
            async for m in self.ws:
                if isinstance(m, bytes):
                    self.previews.append(m)
                    del self.previews[:-5]
                    continue
                j = json.loads(m)
                t = j.get("type")
                if t == "frame":
                    self.frames.append(j)
                    del self.frames[:-600]  # previews lag results: seconds of them on a busy machine
                elif t == "stats":
                    self.stats = j
                elif t == "objects" and "id" not in j:
                    self.objects_msgs.append(j)
                elif "id" in j:
                    self.replies[j["id"]] = j
                elif t == "error":
                    self.replies.setdefault("noid", []).append(j)
        except websockets.ConnectionClosed:
            pass
        self.closed = True

    async def raw(self, text, rid, timeout=5):
        await self.ws.send(text)
        t0 = time.monotonic()
        while rid not in self.replies and time.monotonic() - t0 < timeout:
            await asyncio.sleep(0.01)
        return self.replies.pop(rid, None)

    async def req(self, msg, timeout=5):
        rid = self.next_id
        self.next_id += 1
        msg = dict(msg, id=rid)
        return await self.raw(json.dumps(msg), rid, timeout)

    async def frame_after(self, t, timeout=5):
        """The first frame received after wall time t (ms)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for f in self.frames:
                if f["wall_ms"] > t:
                    return f
            await asyncio.sleep(0.02)
        return None


def err_code(r):
    return r and r.get("type") == "error" and r.get("code")


def obj(name, space="rgb", lo=(200, 0, 0), hi=(255, 80, 80), **kw):
    return dict(name=name, space=space, lo=list(lo), hi=list(hi), **kw)


def same_defs(a, b):
    key = lambda o: (o["name"], o["space"], o["lo"], o["hi"], o.get("min_mass", 1))
    return [key(o) for o in a] == [key(o) for o in b]


def count_white(jpeg, d):
    """Pixels > 127 in a JPEG, decoded to grey by the ffmpeg CLI."""
    path = os.path.join(d, "mask.jpg")
    with open(path, "wb") as f:
        f.write(jpeg)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt",
                          "gray", "-"], capture_output=True, check=True).stdout
    return sum(1 for b in raw if b > 127)


async def main_async(trackd, d):
    objs_path = os.path.join(d, "objects.json")
    with open(objs_path, "w") as f:
        json.dump({"objects": [
            obj("red", "hsv", (346, 110, 70), (14, 255, 255)),
            obj("green", "hsv", (100, 110, 70), (140, 255, 255)),
        ]}, f)
    log = open(os.path.join(d, "trackd.log"), "w+")
    p, port = start_trackd(trackd, ["--size", "640x360", "--fps", "30", "--objects", objs_path,
                                    "--preview-fps", "10", "--stats-interval", "0"], log)
    url = f"ws://127.0.0.1:{port}/ws"
    try:
        async with websockets.connect(url, max_size=None) as ws:
            c = Client(ws)
            await asyncio.sleep(0.5)

            # ---- 1. good messages
            r = await c.req({"type": "get_objects"})
            check(r and r["type"] == "objects" and [o["name"] for o in r["objects"]] ==
                  ["red", "green"], "get_objects lists the file's objects")
            r = await c.req({"type": "add_object", "object": obj("tmp1")})
            check(r and r["type"] == "ack" and r.get("object_id") == 2, f"add_object acks id 2: {r}")
            await asyncio.sleep(0.2)
            check(c.objects_msgs and [o["name"] for o in c.objects_msgs[-1]["objects"]] ==
                  ["red", "green", "tmp1"], "add_object broadcasts the new set")
            f = await c.frame_after(time.time() * 1e3 + 100)
            check(f and [o["name"] for o in f["objects"]] == ["red", "green", "tmp1"],
                  "frames after add_object carry the new object")
            r = await c.req({"type": "update_object", "object_id": 2,
                             "object": obj("tmp2", "ycbcr", (0, 0, 0), (255, 255, 255))})
            check(r and r["type"] == "ack" and r.get("object_id") == 2, f"update_object: {r}")
            f = await c.frame_after(time.time() * 1e3 + 100)
            check(f and f["objects"][2]["name"] == "tmp2" and f["objects"][2]["mass"] == 640 * 360,
                  "update_object: an everything-box counts every pixel")
            r = await c.req({"type": "rename_object", "name": "tmp2", "new_name": "tmp3"})
            check(r and r["type"] == "ack", f"rename_object by name: {r}")
            r = await c.req({"type": "get_objects"})
            check(r and r["objects"][2]["name"] == "tmp3", "rename_object took effect")
            r = await c.req({"type": "remove_object", "name": "tmp3"})
            check(r and r["type"] == "ack", f"remove_object: {r}")
            r = await c.req({"type": "get_objects"})
            check(r and len(r["objects"]) == 2, "remove_object took effect")
            r = await c.req({"type": "set_objects", "objects": [obj("a"), obj("b")]})
            check(r and r.get("count") == 2, f"set_objects: {r}")
            r = await c.req({"type": "set_objects", "objects": [
                obj("red", "hsv", (346, 110, 70), (14, 255, 255)),
                obj("green", "hsv", (100, 110, 70), (140, 255, 255))]})
            check(r and r.get("count") == 2, "set_objects back to red/green")

            # ---- 2. malformed messages: each names the problem, connection stays
            bad = [
                ('{"type":"add_object","id":"b1"', "b1", "bad_json"),
                ('{"type":"frobnicate","id":"b2"}', "b2", "unknown_type"),
                ('{"type":"add_object","id":"b3","object":5}', "b3", "bad_field"),
                ('{"type":"add_object","id":"b4","object":{"name":"x","space":"rgb",'
                 '"lo":[0,0,0],"hi":[300,0,0]}}', "b4", "invalid_object"),
                ('{"type":"add_object","id":"b5","object":{"name":"red","space":"rgb",'
                 '"lo":[0,0,0],"hi":[1,1,1]}}', "b5", "duplicate_name"),
                ('{"type":"add_object","id":"b6","object":{"name":"x","space":"luv",'
                 '"lo":[0,0,0],"hi":[1,1,1]}}', "b6", "invalid_object"),
                ('{"type":"remove_object","id":"b7","object_id":"1"}', "b7", "bad_field"),
                ('{"type":"remove_object","id":"b8","object_id":99999999999}', "b8",
                 "out_of_range"),
                ('{"type":"remove_object","id":"b9","object_id":7}', "b9", "not_found"),
                ('{"type":"remove_object","id":"b10","name":"nope"}', "b10", "not_found"),
                ('{"type":"remove_object","id":"b11"}', "b11", "bad_field"),
                ('{"type":"update_object","id":"b12","object_id":0,"object":{"name":"green",'
                 '"space":"rgb","lo":[0,0,0],"hi":[1,1,1]}}', "b12", "duplicate_name"),
                ('{"type":"rename_object","id":"b13","object_id":0,"new_name":7}', "b13",
                 "bad_field"),
                ('{"type":"rename_object","id":"b14","object_id":0,"new_name":""}', "b14",
                 "invalid_object"),
                ('{"type":"rename_object","id":"b15","object_id":0,"new_name":"' + "x" * 200 +
                 '"}', "b15", "invalid_object"),
                ('{"type":"set_objects","id":"b16","objects":{}}', "b16", "bad_field"),
                ('{"type":"set_objects","id":"b17","objects":[' +
                 ",".join(json.dumps(obj(f"o{i}")) for i in range(300)) + "]}", "b17",
                 "too_many_objects"),
                ('{"type":"set_objects","id":"b18","objects":[{"name":"a","space":"rgb",'
                 '"lo":[0,0,0],"hi":[1,1,1]},{"name":"a","space":"rgb","lo":[0,0,0],'
                 '"hi":[1,1,1]}]}', "b18", "duplicate_name"),
                ('{"type":"sample","id":"b19","x":"1","y":2}', "b19", "bad_field"),
                ('{"type":"sample","id":"b20","x":100000,"y":2}', "b20", "out_of_range"),
                ('{"type":"sample","id":"b21","x":1}', "b21", "bad_field"),
                ('{"type":"sample","id":"b22","x":1,"y":1,"radius":1000}', "b22",
                 "out_of_range"),
                ('{"type":"sample","id":"b23","x":1,"y":1,"w":5}', "b23", "bad_field"),
                ('{"type":"preview","id":"b24","fps":"fast"}', "b24", "bad_field"),
                ('{"type":"preview","id":"b25","fps":1e300}', "b25", "out_of_range"),
                ('{"type":"preview","id":"b26","width":1}', "b26", "out_of_range"),
                ('{"type":"preview","id":"b27","mask":"nope"}', "b27", "not_found"),
                ('{"type":"preview","id":"b28","mask":3}', "b28", "bad_field"),
                ('{"type":"add_object","id":"b29","object":{"name":"x","space":"rgb",'
                 '"lo":[0,0,0],"hi":[1,1,1e999]}}', "b29", "bad_json"),
                ('{"type":"get_objects","id":"b30","x":' + "9" * 30 + "}", "b30", "bad_json"),
                ('{"type":"add_object","id":"b31","pad":"' + "x" * 70000 + '"}', None,
                 "too_large"),
                ('{"type":"auth","id":"b32","token":5}', "b32", None),
            ]
            for text, rid, code in bad:
                if rid is None:
                    await ws.send(text)
                    await asyncio.sleep(0.3)
                    errs = c.replies.pop("noid", [])
                    check(any(e["code"] == code for e in errs), f"oversize -> {code}: {errs}")
                    continue
                if code == "bad_json":  # no id can be read back from bad JSON
                    await ws.send(text)
                    await asyncio.sleep(0.3)
                    errs = c.replies.pop("noid", [])
                    check(len(errs) == 1 and errs[0]["code"] == code and errs[0]["message"],
                          f"{text[:60]}... -> {code}: {errs}")
                    continue
                r = await c.raw(text, rid)
                if code is None:  # auth with no token configured: accepted
                    check(r and r["type"] == "ack", f"auth without a token configured: {r}")
                    continue
                check(err_code(r) == code and r.get("message"),
                      f"{text[:60]}... -> {code}: {r and r.get('message')}")
            r = await c.req({"type": "ping"})
            check(r and r["type"] == "pong" and not c.closed, "connection still open after errors")
            r = await c.req({"type": "get_objects"})
            check(r and [o["name"] for o in r["objects"]] == ["red", "green"],
                  "failed requests changed nothing")

            # ---- 3. sample a ball and teach it as a new object
            # The ball moves, and the sample is taken on a frame processed
            # after the request arrives: on a busy machine that is several
            # frames after the newest one this client has seen. So aim where
            # the ball will be: its velocity from the two newest frames,
            # extrapolated by the lag (in frames) the last reply showed; retry
            # until the sample lands on it, within a generous deadline.
            lag, r, red, f = 1, None, {"found": False}, None
            deadline = time.monotonic() + SAMPLE_DEADLINE_S
            while time.monotonic() < deadline:
                await asyncio.sleep(0.1)
                f0, f = c.frames[-2], c.frames[-1]
                red, red0 = f["objects"][0], f0["objects"][0]
                if not (red["found"] and red0["found"]) or f["seq"] <= f0["seq"]:
                    continue
                n = f["seq"] - f0["seq"]
                cx = red["cx"] + (red["cx"] - red0["cx"]) / n * lag
                cy = red["cy"] + (red["cy"] - red0["cy"]) / n * lag
                cx, cy = min(max(round(cx), 0), 639), min(max(round(cy), 0), 359)
                r = await c.req({"type": "sample", "x": cx, "y": cy, "radius": 2})
                if r and r.get("type") == "sample":
                    lag = max(1, r["seq"] - f["seq"])
                # Landed: every sampled pixel is the red ball (230, 40, 40
                # with noise), judged by the range the reply's RGB box spans.
                # Other balls cross the red one's path, and a square on an
                # edge would teach a box that takes in its neighbour too.
                box = r and r.get("type") == "sample" and r["suggest_all"]["rgb"]
                if box and box["lo"][0] >= 150 and box["hi"][1] <= 110 and box["hi"][2] <= 110:
                    break
            check(red["found"], "the demo's red ball is found")
            check(r and r["type"] == "sample" and r["n"] == 25 and r["seq"] >= f["seq"],
                  f"sample at the red ball: {r}")
            if r and r["type"] == "sample":
                h = r["hsv"][0]
                check(h >= 340 or h <= 20, f"sampled hue {h} is red")
                sug = r["suggest"]
                check(sug["space"] == "hsv" and sorted(r["suggest_all"]) ==
                      ["hsv", "lab", "rg", "rgb", "ycbcr"], "suggest boxes in every space")
                lab = r["suggest_all"]["lab"]
                check(lab["lo"][0] == 0 and lab["hi"][0] == 255 and
                      r["suggest_all"]["rg"]["lo"][2] == 10,
                      f"lab and rg suggestions leave the light open: {r['suggest_all']}")
                r2 = await c.req({"type": "add_object", "object": dict(sug, name="taught")})
                check(r2 and r2["type"] == "ack", f"add the taught object: {r2}")
                r2 = await c.req({"type": "add_object", "object": dict(lab, name="taught_lab")})
                check(r2 and r2["type"] == "ack", f"add the lab-taught object: {r2}")
                f2 = await c.frame_after(time.time() * 1e3 + 100)
                rr = f2 and f2["objects"][0]
                for name in ("taught", "taught_lab"):
                    t = f2 and next((o for o in f2["objects"] if o["name"] == name), None)
                    check(t and t["found"] and abs(t["cx"] - rr["cx"]) < 6 and
                          abs(t["cy"] - rr["cy"]) < 6,
                          f"{name} found at the red ball: {t and (t['cx'], t['cy'])} vs "
                          f"{rr and (rr['cx'], rr['cy'])}")
                    await c.req({"type": "remove_object", "name": name})
            r = await c.req({"type": "sample", "x": 10, "y": 20, "w": 30, "h": 40})
            check(r and r["type"] == "sample" and r["n"] == 1200 and r["rect"] == [10, 20, 39, 59],
                  f"rectangle sample: {r and r.get('rect')}")

            # ---- 4. preview size and mask
            r = await c.req({"type": "preview", "width": 320, "fps": 5, "mask": "green"})
            check(r and r["type"] == "ack" and r["width"] == 320 and r["mask"] == "green",
                  f"preview ack: {r}")
            await asyncio.sleep(1.0)
            # Frames are kept: the preview's own frame went out before it (results never wait
            # for previews), possibly before the preview was asked for here.
            c.previews.clear()
            while not c.previews:
                await asyncio.sleep(0.05)
            pv = c.previews[-1]
            seq = int.from_bytes(pv[4:12], "little")
            pw, ph = int.from_bytes(pv[12:14], "little"), int.from_bytes(pv[14:16], "little")
            check((pw, ph) == (320, 180), f"preview is {pw}x{ph}")
            t0 = time.monotonic()
            fr = None
            while fr is None and time.monotonic() - t0 < 3:
                fr = next((x for x in c.frames if x["seq"] == seq), None)
                await asyncio.sleep(0.05)
            if fr:
                mass = fr["objects"][1]["mass"]
                white = count_white(pv[20:], d)
                expect = mass * (320 / 640) ** 2
                check(mass > 0 and abs(white - expect) <= 0.25 * expect + 20,
                      f"mask white pixels {white} ~ mass {mass} x 1/4 = {expect:.0f}")
            else:
                check(False, "frame for the mask preview")
            await c.req({"type": "preview", "width": 640, "mask": None})

            # ---- 5. save atomically, file == live set, reload
            await c.req({"type": "add_object", "object": obj("saved", "rgb", (1, 2, 3),
                                                             (4, 5, 6), min_mass=7)})
            r = await c.req({"type": "save_objects"})
            check(r and r["type"] == "ack" and r["path"] == objs_path and r["count"] == 3,
                  f"save_objects: {r}")
            live = (await c.req({"type": "get_objects"}))["objects"]
            with open(objs_path) as fh:
                saved = json.load(fh)["objects"]
            check(same_defs(live, saved), "saved file == live set")
            check(sorted(os.listdir(d)) == ["objects.json", "trackd.log"] or
                  not any(n.startswith(".") or "tmp" in n for n in os.listdir(d)),
                  f"no temporary file left: {os.listdir(d)}")
            r = await c.req({"type": "reload_objects"})
            check(r and r.get("count") == 3, f"reload_objects: {r}")
            again = (await c.req({"type": "get_objects"}))["objects"]
            check(again == live, "reloaded set identical (colours too)")

            # ---- 6. SIGHUP
            with open(objs_path, "w") as fh:
                fh.write('{"objects": [{"name": "x", "space": "rgb", "lo": [0,0,0]}]}')
            p.send_signal(signal.SIGHUP)
            await asyncio.sleep(0.6)
            now = (await c.req({"type": "get_objects"}))["objects"]
            check(now == live, "SIGHUP with a broken file keeps the old objects")
            log.flush()
            log.seek(0)
            text = log.read()
            check("reload rejected" in text and "objects.json:1:" in text,
                  "the rejection is logged with file:line:col")
            with open(objs_path, "w") as fh:
                json.dump({"objects": [obj("hup")]}, fh)
            p.send_signal(signal.SIGHUP)
            await asyncio.sleep(0.6)
            now = (await c.req({"type": "get_objects"}))["objects"]
            check([o["name"] for o in now] == ["hup"], "SIGHUP with a good file applies it")
            check(c.objects_msgs and [o["name"] for o in c.objects_msgs[-1]["objects"]] == ["hup"],
                  "SIGHUP reload is broadcast")
            r = await c.req({"type": "reload_objects"})
            check(r and r.get("count") == 1, "reload_objects after SIGHUP")
    finally:
        p.terminate()
        p.wait(10)

    # ---- 7. access control
    p, port = start_trackd(trackd, ["--size", "320x180", "--control-token", "s3cret",
                                    "--stats-interval", "0.3"], log)
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            c = Client(ws)
            r = await c.req({"type": "get_objects"})
            check(err_code(r) == "unauthorized", f"no token -> unauthorized: {r}")
            r = await c.req({"type": "ping"})
            check(r and r["type"] == "pong", "ping needs no token")
            f = await c.frame_after(0)
            check(f is not None, "results flow without the token")
            for _ in range(50):  # WebSocket stats come every second
                if c.stats:
                    break
                await asyncio.sleep(0.1)
            lm = c.stats and c.stats["latency_median"]
            check(lm and isinstance(lm["send_ms"], (int, float)) and lm["send_ms"] >= 0 and
                  lm["total_ms"] >= lm["process_ms"] and lm["total_ms"] >= lm["send_ms"],
                  f"stats carry measured send/total latency: {lm}")
            r = await c.req({"type": "auth", "token": "wrong"})
            check(err_code(r) == "unauthorized", "wrong token -> unauthorized")
            r = await c.req({"type": "auth", "token": "s3cret"})
            check(r and r["type"] == "ack" and r.get("ok") is True, f"auth: {r}")
            r = await c.req({"type": "get_objects"})
            check(r and r["type"] == "objects", "after auth control messages work")
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws?token=s3cret") as ws:
            c = Client(ws)
            r = await c.req({"type": "get_objects"})
            check(r and r["type"] == "objects", "?token= in the URL authenticates")
    finally:
        p.terminate()
        p.wait(10)

    # ---- 9. listening beyond loopback: a token is generated and printed
    port = free_port()
    glog = os.path.join(d, "generated.log")
    with open(glog, "w") as gl:
        p = subprocess.Popen([trackd, "--listen", f"0.0.0.0:{port}", "--size", "320x180",
                              "--stats-interval", "0"], stdout=subprocess.DEVNULL, stderr=gl)
    try:
        token = None
        for _ in range(100):
            with open(glog) as gl:
                m = re.search(r"web UI on http://\S+/\?token=([0-9a-f]{32})", gl.read())
            if m:
                token = m.group(1)
                break
            time.sleep(0.1)
        check(token is not None, "the web UI URL carries a 32-hex-digit token on a non-loopback "
              "listener")
        for _ in range(50):  # the log line comes once the port is bound; be safe
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            c = Client(ws)
            r = await c.req({"type": "get_objects"})
            check(err_code(r) == "unauthorized", "0.0.0.0 listener: control needs the token")
            f = await c.frame_after(0)
            check(f is not None, "0.0.0.0 listener: results flow without it")
            r = await c.req({"type": "auth", "token": token})
            check(r and r.get("ok") is True, "the printed token authenticates")
            r = await c.req({"type": "get_objects"})
            check(r and r["type"] == "objects", "then control messages work")
    finally:
        p.terminate()
        p.wait(10)
        log.close()


def main():
    trackd = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        asyncio.run(main_async(trackd, d))
    if FAILS:
        sys.exit(f"FAIL: {len(FAILS)} checks failed")
    print("PASS")


if __name__ == "__main__":
    main()
