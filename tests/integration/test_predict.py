#!/usr/bin/python3
"""Integration: latency-compensated positions (PROTOCOL.md, "predict_dt") on
the real daemon, demo scene (moving balls), red tracked with a calibration.

    test_predict.py TRACKD

  1. Without --predict: a client that subscribes with "predict":"send" gets
     every frame with "predict_dt" >= 0 and each instance's cx, cy moved by
     vx, vy x fps x predict_dt and wx, wy by wvx, wvy x predict_dt from the
     measured frame of the same seq that a plain client gets (which has no
     "predict_dt"); switching it off again gives measured frames.
  2. A client asking for a time ("predict": 0.25 s after the send) gets its
     positions moved by the hand-over interval plus that (predict_dt >=
     0.25); clients share a slot per time, at most 4 times at once: a fifth
     time is "busy", a time in use is shared. A bad predict value is a
     bad_field error; the connection goes on.
  3. With --predict send: the NDJSON output and the WebSocket client both
     carry predict_dt, each its own (the door hands NDJSON the frame first,
     so its interval is never longer than the WebSocket's), and both moved
     from one measured position.
"""
import asyncio
import json
import os
import sys
import tempfile

import websockets

from daemon_proc import start_trackd, stop_trackd

TRACKD = sys.argv[1]
FPS = 30
DEMO = ["--size", "1280x720", "--fps", str(FPS), "--backend", "cpu", "--no-preview"]
N = 20
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def objects_file(path):
    with open(path, "w") as f:
        json.dump({"objects": [{"name": "red", "space": "rgb", "lo": [200, 10, 10],
                                "hi": [255, 75, 75], "blobs": 4, "track": True}],
                   "calibration": {"unit": "mm", "points": [[0, 0, 0, 0], [1280, 0, 3200, 0],
                                                            [1280, 720, 3200, 1800],
                                                            [0, 720, 0, 1800]]}}, f)


def instances(frame):
    return {x["id"]: x for o in frame["objects"] for x in o.get("instances", [])}


def moved(pred, meas):
    """Whether pred's instances are meas's moved on by predict_dt: (bad, n,
    how many visibly moved)."""
    dt, bad, n, visible = pred["predict_dt"], [], 0, 0
    for i, m in instances(meas).items():
        p = instances(pred).get(i)
        if p is None:
            bad.append(f"seq {meas['seq']}: instance {i} missing")
            continue
        n += 1
        visible += abs(p["cx"] - m["cx"]) + abs(p["cy"] - m["cy"]) >= 0.03
        # Rounding: cx 2 decimals both, vx 3 decimals; wx 1 decimal (the
        # calibration's), wvx too.
        for k, v, tol in (("cx", "vx", 0.011 + 0.0005 * FPS * dt),
                          ("cy", "vy", 0.011 + 0.0005 * FPS * dt)):
            want = m[k] + m[v] * FPS * dt
            if abs(p[k] - want) > tol:
                bad.append(f"seq {meas['seq']} #{i} {k}: {p[k]} vs {want:.3f} (dt {dt})")
        for k, v in (("wx", "wvx"), ("wy", "wvy")):
            if m.get(v) is None:
                continue
            want = m[k] + m[v] * dt
            tol = 0.11 + 0.05 * dt
            if abs(p[k] - want) > tol:
                bad.append(f"seq {meas['seq']} #{i} {k}: {p[k]} vs {want:.3f} (dt {dt})")
    return bad, n, visible


async def frames(ws, n, keep):
    """The next n frame messages of ws into keep (by seq)."""
    got = 0
    while got < n:
        m = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if m.get("type") == "frame":
            keep[m["seq"]] = m
            got += 1


async def reply(ws, rid):
    while True:
        m = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if m.get("id") == rid:
            return m


async def subscribe(ws, predict, rid):
    await ws.send(json.dumps({"type": "subscribe", "predict": predict, "id": rid}))
    return await reply(ws, rid)


async def per_client(port):
    url = f"ws://127.0.0.1:{port}/ws"
    async with websockets.connect(url) as plain, websockets.connect(url) as pc, \
            websockets.connect(url) as later:
        ack = await subscribe(pc, "send", 1)
        check(ack.get("type") == "ack" and ack.get("predict") == "send",
              f"subscribe predict send acknowledged ({ack})")
        ack = await subscribe(later, 0.25, 1)
        check(ack.get("type") == "ack" and ack.get("predict") == 0.25,
              f"subscribe predict 0.25 acknowledged ({ack})")
        meas, pred, ahead = {}, {}, {}
        await asyncio.gather(frames(plain, N + 10, meas), frames(pc, N, pred),
                             frames(later, N, ahead))
        check(all(ahead[s]["predict_dt"] >= 0.25 for s in ahead),
              "predict 0.25: every predict_dt is the hand-over interval plus 0.25 s")
        bad, n, vis = [], 0, 0
        for s in (s for s in ahead if s in meas):
            b, k, v = moved(ahead[s], meas[s])
            bad += b
            n += k
            vis += v
        check(n >= N // 2 and not bad and vis >= n // 2,
              f"predict 0.25: {n} instances moved on by their velocities ({vis} visibly; "
              f"{bad[:3]})")
        check(all("predict_dt" not in m for m in meas.values()),
              "the plain client's frames carry no predict_dt")
        both = [s for s in pred if s in meas]
        check(len(both) >= N // 2, f"{len(both)} frames seen by both clients")
        check(all(pred[s]["predict_dt"] >= 0 for s in pred), "predict_dt >= 0 on every "
              "predicted frame")
        bad, n, vis = [], 0, 0
        for s in both:
            b, k, v = moved(pred[s], meas[s])
            bad += b
            n += k
            vis += v
        check(n >= N // 2 and not bad, f"{n} predicted instances are the measured ones moved on "
              f"by their velocities ({bad[:3]})")
        # Processing a 1280x720 frame takes milliseconds: a ball moving some
        # pixels a frame moves visibly in that time.
        check(vis > 0, f"{vis} of them visibly moved (>= 0.03 px)")
        dts = sorted(pred[s]["predict_dt"] for s in pred)
        print(f"measured predict_dt (WebSocket, per client): median {dts[len(dts) // 2] * 1e3:.3f}"
              f" ms, max {dts[-1] * 1e3:.3f} ms", flush=True)
        err = await subscribe(pc, "soon", 2)
        check(err.get("type") == "error" and err.get("code") == "bad_field",
              f"predict \"soon\" is bad_field ({err})")
        ack = await subscribe(pc, False, 3)
        check(ack.get("predict") is False, "predict switched off")
        # Slots: 0.25 is in use (later); three more times fill them.
        async with websockets.connect(url) as c1, websockets.connect(url) as c2, \
                websockets.connect(url) as c3, websockets.connect(url) as c4:
            acks = [await subscribe(c, t, 9) for c, t in ((c1, "send"), (c2, 0.5), (c3, 0.75))]
            check(all(a.get("type") == "ack" for a in acks), f"4 times at once ({acks})")
            err = await subscribe(c4, 0.125, 9)
            check(err.get("type") == "error" and err.get("code") == "busy",
                  f"a fifth time is busy ({err})")
            ack = await subscribe(c4, 0.5, 10)
            check(ack.get("predict") == 0.5, f"a time in use is shared ({ack})")
        later = {}
        await frames(pc, 5, later)
        # Frames queued before the switch may still be predicted ones.
        check("predict_dt" not in later[max(later)], "measured frames after switching off")


async def ws_frames(port):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
        got = {}
        await frames(ws, N, got)
        return got


def global_predict(got, ndjson):
    """got: the WebSocket client's frames; ndjson: the output, once written."""
    with open(ndjson) as f:
        nd = {m["seq"]: m for m in map(json.loads, f) if m.get("type", "frame") == "frame"}
    both = [s for s in got if s in nd]
    check(len(both) >= N // 2, f"--predict send: {len(both)} frames in NDJSON and WebSocket")
    check(all("predict_dt" in nd[s] and "predict_dt" in got[s] for s in both),
          "--predict send: both outputs carry predict_dt")
    check(all(nd[s]["predict_dt"] <= got[s]["predict_dt"] for s in both),
          "--predict send: NDJSON (handed the frame first) never has the longer interval")
    bad, n = [], 0
    for s in both:
        # The measured position both were moved from must be the same.
        a, b = instances(nd[s]), instances(got[s])
        for i in a:
            if i not in b:
                continue
            n += 1
            for k, v in (("cx", "vx"), ("cy", "vy")):
                ma = a[i][k] - a[i][v] * FPS * nd[s]["predict_dt"]
                mb = b[i][k] - b[i][v] * FPS * got[s]["predict_dt"]
                if abs(ma - mb) > 0.03:
                    bad.append(f"seq {s} #{i} {k}: {ma:.3f} vs {mb:.3f}")
    check(n >= N // 2 and not bad, f"--predict send: {n} instances, one measured position "
          f"behind both outputs ({bad[:3]})")


def main():
    tmp = tempfile.mkdtemp(prefix="trackd-predict-")
    objs = os.path.join(tmp, "objects.json")
    objects_file(objs)
    log = open(os.path.join(tmp, "trackd.log"), "wb")
    p, port = start_trackd(TRACKD, [*DEMO, "--objects", objs], log)
    try:
        asyncio.run(per_client(port))
    finally:
        stop_trackd(p)
    nd = os.path.join(tmp, "out.ndjson")
    p, port = start_trackd(TRACKD, [*DEMO, "--objects", objs, "--predict", "send", "--output",
                                    nd], log)
    try:
        got = asyncio.run(ws_frames(port))
    finally:
        stop_trackd(p)
    global_predict(got, nd)
    if FAILS:
        with open(os.path.join(tmp, "trackd.log"), errors="replace") as f:
            print("--- trackd log (last 20 lines)\n" + "".join(f.readlines()[-20:]))
        sys.exit(f"{len(FAILS)} checks failed")


if __name__ == "__main__":
    main()
