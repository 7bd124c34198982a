#!/usr/bin/python3
"""Integration: trackd's MQTT sink (--mqtt) through a real broker (Debian's
mosquitto, started here on a free port) read by real subscribers (Debian's
python3-paho-mqtt).

  1. two trackd (demo scenes, --name cam-a and cam-b) publish to one broker:
     every topic's schema (frame, objects/<name>, status, config); each
     camera's frames arrive with no seq missing against that trackd's own
     NDJSON output (what it processed), each frame's objects on their own
     topics with the same seq; a later subscriber gets the retained status
     (online) and config (the object set); hello and frame carry the camera;
  2. kill -9 of one trackd: the broker publishes its last will, a retained
     "offline" status; the other camera goes on;
  3. the broker stops mid-run: trackd keeps processing frames (the counter
     in /metrics grows during the outage), counts the frames it could not
     publish, reconnects when the broker is back and publishes the retained
     status and config again (the new broker kept nothing); then a clean
     stop publishes "offline" with "trackd stopped";
  4. a broker that never answers at start, (a) a socket that accepts and
     never replies and (b) a port with nothing: trackd starts serving at
     once, processes frames, logs the failure once, stops cleanly; for (b)
     a broker started later on that port gets the frames;
  5. examples/mqtt_client.py prints positions from the real daemon+broker;
  6. mqtts:// to a broker whose certificate chains to --mqtt-ca (made here
     with openssl); without it, the system CAs refuse it (logged);
  7. bad --mqtt URLs and --name values are usage errors (exit 64) that say
     what is wrong.
"""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from daemon_proc import free_port, start_trackd, stop_trackd
from mqtt_proc import MOSQUITTO, Broker, Sub, wait_for

TRACKD = sys.argv[1]
EXAMPLE = sys.argv[2] if len(sys.argv) > 2 else None
FAILS = []
DEMO = ["--size", "320x240", "--fps", "30", "--backend", "cpu", "--no-preview"]
OBJ_KEYS = {"id", "name", "found", "mass", "cx", "cy", "bbox"}


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def metrics(port):
    """{name: value} of the unlabelled samples of GET /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r"^([a-z_]+) ([0-9.e+-]+)$", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def metrics_sum(port, name):
    """The sum of the labelled samples name{...} of GET /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(v) for v in re.findall(rf"^{name}{{[^}}]*}} ([0-9.e+-]+)$", text, re.M))


def retained(port, topic, timeout=5):
    """The retained messages a fresh subscriber to topic gets: [(topic, payload)]."""
    s = Sub(port, [topic])
    wait_for(lambda: s.take(), timeout)
    time.sleep(0.3)
    got = [(t, json.loads(p)) for t, r, p in s.take() if r]
    s.close()
    return got


def ndjson_seqs(path):
    seqs = []
    with open(path) as f:
        for line in f:
            if line.endswith("\n"):
                seqs.append(json.loads(line)["seq"])
    return seqs


def check_frames(sub, cam, ndjson):
    """Schema of cam's frame and object messages; no seq missing against the
    NDJSON trackd wrote (the frames it processed) over the span received."""
    msgs = sub.take(f"t/{cam}/")  # one snapshot: frames and their objects
    frames = [json.loads(p) for t, r, p in msgs if t == f"t/{cam}/frame"]
    check(len(frames) > 20, f"{cam}: frames arrive on t/{cam}/frame ({len(frames)})")
    if not frames:
        return
    bad = [f for f in frames if f.get("type") != "frame" or f.get("camera") != cam or
           not isinstance(f.get("seq"), int) or not isinstance(f.get("objects"), list) or
           any(not OBJ_KEYS <= set(o) for o in f["objects"])]
    check(not bad, f"{cam}: every frame message has type, camera, seq, objects with {sorted(OBJ_KEYS)}")
    seqs = [f["seq"] for f in frames]
    check(all(b > a for a, b in zip(seqs, seqs[1:])), f"{cam}: seq strictly increasing")
    # The NDJSON is written in blocks: compare up to its last whole line.
    nd = ndjson_seqs(ndjson)
    hi = min(seqs[-1], nd[-1] if nd else -1)
    done = [s for s in nd if seqs[0] <= s <= hi]
    got = [s for s in seqs if s <= hi]
    missing = sorted(set(done) - set(got))
    check(len(done) > 10 and got == done,
          f"{cam}: every frame trackd processed from seq {seqs[0]} to {hi} arrived "
          f"({len(got)} of {len(done)}; missing {missing[:10]})")
    names = [o["name"] for o in frames[0]["objects"]]
    objs = {}
    for t, r, p in msgs:
        if t.startswith(f"t/{cam}/objects/"):
            objs.setdefault(urllib.parse.unquote(t.split("/", 3)[3]), []).append(json.loads(p))
    check(sorted(objs) == sorted(names),
          f"{cam}: one objects/<name> topic per object ({sorted(objs)} vs {sorted(names)})")
    # The newest frame's objects may still be on their way: left out.
    by_seq = {f["seq"]: f for f in frames[:-1]}
    bad, count = [], {}
    for name, ms in objs.items():
        for o in ms:
            f = by_seq.get(o.get("seq"))
            if o.get("seq", 0) >= seqs[-1]:
                continue
            count[name] = count.get(name, 0) + 1
            want = f and next((x for x in f["objects"] if x["name"] == name), None)
            if not (o.get("type") == "object" and o.get("camera") == cam and
                    o.get("name") == name and want and
                    all(o.get(k) == want[k] for k in want) and
                    o.get("wall_ms") == f["wall_ms"] and o.get("t_capture") == f["t_capture"]):
                bad.append(o)
    check(not bad and all(n == len(by_seq) for n in count.values()),
          f"{cam}: each frame's objects come on objects/<name> with the frame's seq and "
          f"values ({len(bad)} differ; {count} of {len(by_seq)})")


def part_two_cameras(tmp, broker):
    print("== two cameras, one broker; last will on kill -9; broker restart", flush=True)
    sub = Sub(broker.port, ["t/#"])
    url = f"mqtt://127.0.0.1:{broker.port}/t"
    logs = {c: open(os.path.join(tmp, f"{c}.log"), "wb") for c in ("cam-a", "cam-b")}
    procs = {}
    for cam in ("cam-a", "cam-b"):
        procs[cam] = start_trackd(TRACKD, [*DEMO, "--name", cam, "--mqtt", url, "--output",
                                           os.path.join(tmp, f"{cam}.ndjson")], logs[cam])
    try:
        time.sleep(4)
        for cam in ("cam-a", "cam-b"):
            check_frames(sub, cam, os.path.join(tmp, f"{cam}.ndjson"))
        st = dict(retained(broker.port, "t/+/status"))
        for cam in ("cam-a", "cam-b"):
            s = st.get(f"t/{cam}/status")
            check(s is not None and s["online"] is True and s["camera"] == cam and
                  s["source"] == "ok" and s["server"].startswith("trackd "),
                  f"{cam}: retained status online, source ok ({s})")
        cf = dict(retained(broker.port, "t/+/config"))
        for cam in ("cam-a", "cam-b"):
            c = cf.get(f"t/{cam}/config")
            f = json.loads(sub.take(f"t/{cam}/frame")[-1][2])
            check(c is not None and c["type"] == "objects" and c["camera"] == cam and
                  [o["name"] for o in c["objects"]] == [o["name"] for o in f["objects"]] and
                  all({"space", "lo", "hi", "color"} <= set(o) for o in c["objects"]),
                  f"{cam}: retained config holds the object set")
        # The hello carries the camera too (the frame's was checked above).
        hello = ws_hello(procs["cam-a"][1])
        check(hello.get("camera") == "cam-a", f"hello carries the camera ({hello.get('camera')})")

        # kill -9: no DISCONNECT, so the broker sends the will.
        procs["cam-b"][0].kill()
        procs["cam-b"][0].wait()
        got = wait_for(lambda: any(json.loads(p).get("online") is False
                                   for t, r, p in sub.take("t/cam-b/status")), 10)
        st = dict(retained(broker.port, "t/cam-b/status"))
        s = st.get("t/cam-b/status", {})
        check(got and s.get("online") is False and s.get("message") == "connection lost",
              f"kill -9: the last will marks cam-b offline, retained ({s})")
        n_a = len(sub.take("t/cam-a/frame"))
        time.sleep(1)
        check(len(sub.take("t/cam-a/frame")) > n_a, "cam-a goes on after cam-b died")

        # The broker goes away and comes back (empty: no persistence).
        port_a = procs["cam-a"][1]
        m0 = metrics(port_a)
        check(m0.get("trackd_mqtt_connected") == 1 and m0.get("trackd_mqtt_connects_total") == 1,
              "metrics: connected once before the outage")
        sub.close()
        broker.stop()
        counts = []
        for _ in range(4):
            time.sleep(1)
            counts.append(metrics(port_a)["trackd_frames_processed_total"])
        m1 = metrics(port_a)
        check(all(b > a for a, b in zip(counts, counts[1:])),
              f"frames processed keep increasing while the broker is down ({counts})")
        check(m1.get("trackd_mqtt_connected") == 0, "metrics: not connected during the outage")
        dropped = metrics_sum(port_a, "trackd_mqtt_frames_dropped_total")
        check(dropped > 0, f"frames not published are counted ({dropped})")
        broker.start()
        sub = Sub(broker.port, ["t/#"])
        check(wait_for(lambda: metrics(port_a).get("trackd_mqtt_connects_total") == 2, 20),
              "trackd reconnects to the restarted broker")
        check(wait_for(lambda: len(sub.take("t/cam-a/frame")) > 10, 10),
              "frames arrive again after the reconnect")
        st = dict(retained(broker.port, "t/cam-a/#"))
        check(st.get("t/cam-a/status", {}).get("online") is True and "t/cam-a/config" in st,
              "status and config are retained again on the new broker")
        stats = ws_stats(port_a)
        check(stats.get("mqtt", {}).get("connected") is True and
              stats["mqtt"].get("dropped", 0) > 0 and stats["mqtt"].get("connects") == 2,
              f"the WebSocket stats carry the MQTT totals ({stats.get('mqtt')})")

        # A clean stop publishes "offline" itself.
        procs["cam-a"][0].send_signal(signal.SIGTERM)
        rc = procs["cam-a"][0].wait(15)
        check(rc == 0, f"cam-a stops cleanly (exit {rc})")
        s = dict(retained(broker.port, "t/cam-a/status")).get("t/cam-a/status", {})
        check(s.get("online") is False and s.get("message") == "trackd stopped",
              f"a clean stop leaves a retained offline status ({s})")
    finally:
        sub.close()
        for p, _ in procs.values():
            stop_trackd(p)
    for cam, f in logs.items():
        f.close()


def ws_hello(port):
    """The hello of a WebSocket connection to trackd on port."""
    import asyncio
    import websockets

    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            return json.loads(await ws.recv())
    return asyncio.run(go())


def ws_stats(port, timeout=5):
    """The first stats message of a WebSocket connection to trackd on port."""
    import asyncio
    import websockets

    async def go():
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                m = await asyncio.wait_for(ws.recv(), timeout)
                if isinstance(m, str) and json.loads(m).get("type") == "stats":
                    return json.loads(m)
        return {}
    return asyncio.run(go())


def part_never_answers(tmp):
    print("== a broker that never answers at start", flush=True)
    # (a) accepts, never replies.
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    held = []

    def accept():
        try:
            while True:
                held.append(lsock.accept()[0])
        except OSError:
            pass
    threading.Thread(target=accept, daemon=True).start()
    port_dead = lsock.getsockname()[1]
    port_none = free_port()
    for what, port in (("accepts, never replies", port_dead), ("nothing listening", port_none)):
        log_path = os.path.join(tmp, f"never-{port}.log")
        log = open(log_path, "wb")
        t0 = time.monotonic()
        p, wport = start_trackd(TRACKD, [*DEMO, "--name", "lonely", "--mqtt",
                                         f"mqtt://127.0.0.1:{port}/t"], log)
        started = time.monotonic() - t0
        try:
            check(started < 5, f"{what}: trackd serves at once ({started:.1f} s)")
            c0 = metrics(wport)["trackd_frames_processed_total"]
            time.sleep(7 if port == port_dead else 2)  # past the 5 s CONNACK limit
            m = metrics(wport)
            check(m["trackd_frames_processed_total"] > c0 and m.get("trackd_mqtt_connected") == 0,
                  f"{what}: frames are processed, not connected")
            text = open(log_path, errors="replace").read()
            fails = [l for l in text.splitlines() if "cannot connect to the broker" in l]
            why = "no answer to CONNECT" if port == port_dead else "refused"
            check(len(fails) == 1 and why in fails[0],
                  f"{what}: the failure is logged once, saying why ({fails})")
            if port == port_dead:
                check(len(held) >= 2, f"{what}: trackd gave up on the silent connection and "
                      f"tried again ({len(held)} connections)")
            else:
                broker = Broker(tmp, port)
                broker.start()
                sub = Sub(port, ["t/lonely/frame"])
                ok = wait_for(lambda: len(sub.take()) > 5, 20)
                check(ok, f"{what}: a broker started later gets the frames")
                sub.close()
            t1 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            rc = p.wait(15)
            check(rc == 0 and time.monotonic() - t1 < 6,
                  f"{what}: stops cleanly and promptly (exit {rc}, {time.monotonic() - t1:.1f} s)")
            if port != port_dead:
                broker.stop()
        finally:
            stop_trackd(p)
            log.close()
    lsock.close()
    for s in held:
        s.close()


def part_example(tmp, broker):
    if not EXAMPLE:
        return
    print("== examples/mqtt_client.py against the real daemon and broker", flush=True)
    log = open(os.path.join(tmp, "example-trackd.log"), "wb")
    # The demo's red ball tracked (instances), green's blobs listed.
    objs = os.path.join(tmp, "example-objects.json")
    with open(objs, "w") as f:
        json.dump({"objects": [
            {"name": "red", "space": "rgb", "lo": [200, 10, 10], "hi": [255, 75, 75],
             "min_mass": 20, "blobs": 2, "track": True},
            {"name": "green", "space": "rgb", "lo": [10, 170, 30], "hi": [75, 230, 95],
             "min_mass": 20, "blobs": 3}]}, f)
    p, _ = start_trackd(TRACKD, [*DEMO, "--name", "ex", "--objects", objs, "--mqtt",
                                 f"mqtt://127.0.0.1:{broker.port}"], log)
    try:
        r = subprocess.run(["/usr/bin/python3", EXAMPLE, "127.0.0.1", str(broker.port), "trackd",
                            "20"], capture_output=True, text=True, timeout=30)
        lines = r.stdout.splitlines()
        num = r"-?[0-9.]+"
        kinds = []  # per line: its object and what it is, checked against the line before
        for line in lines:
            m = (re.match(rf"^ex (red|green) x={num} y={num}$", line)
                 or re.match(rf"^ex (red) #\d+ x={num} y={num} vx={num} vy={num}( lost=\d+)?$", line)
                 or re.match(rf"^ex (green) blob x={num} y={num} mass=\d+$", line))
            kinds.append((m.group(1), "#" in line or "blob" in line) if m else None)
        positions = [k for k in kinds if k and not k[1]]
        # Each instance or blob line comes under its object's position line.
        placed = all(k and (not k[1] or (prev and prev[0] == k[0]))
                     for prev, k in zip([None] + kinds, kinds))
        check(r.returncode == 0 and len(positions) == 20 and placed
              and {k for k in kinds if k[1]} == {("red", True), ("green", True)},
              f"the example prints 20 positions 'camera name x= y=', the red instances "
              f"'#ID x= y= vx= vy=' and the green blobs 'blob x= y= mass=' under them "
              f"({lines[:6]}, rc {r.returncode}, {r.stderr[-300:]})")
    finally:
        stop_trackd(p)
        log.close()
    text = open(os.path.join(tmp, "example-trackd.log"), errors="replace").read()
    warns = [l for l in text.splitlines() if " mqtt: " in l and ("warn" in l or "error" in l)]
    check("frames published, 0 dropped" in text and not warns,
          f"a clean stop after a healthy run: everything published, no MQTT warning ({warns})")


def part_tls(tmp):
    """mqtts:// with --mqtt-ca: a CA and a server certificate made here with
    the openssl CLI, a mosquitto TLS listener (and a plain one for the
    subscriber)."""
    print("== mqtts:// with --mqtt-ca", flush=True)
    ssl = lambda *a: subprocess.run(["openssl", *a], cwd=tmp, check=True,
                                    capture_output=True)
    ssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
        "-days", "2", "-subj", "/CN=trackd test CA")
    ssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "srv.key", "-out", "srv.csr", "-subj",
        "/CN=localhost")
    with open(os.path.join(tmp, "ext.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    ssl("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "srv.pem", "-days", "2", "-extfile", "ext.cnf")
    os.chmod(os.path.join(tmp, "srv.key"), 0o644)
    tport = free_port()
    broker = Broker(tmp, free_port())
    with open(broker.conf, "a") as f:
        f.write(f"listener {tport} 127.0.0.1\nallow_anonymous true\ncafile {tmp}/ca.pem\n"
                f"certfile {tmp}/srv.pem\nkeyfile {tmp}/srv.key\n")
    broker.start()
    try:
        for ca, want in ((os.path.join(tmp, "ca.pem"), True), (None, False)):
            sub = Sub(broker.port, ["t/tls/frame"])
            log_path = os.path.join(tmp, f"tls-{want}.log")
            log = open(log_path, "wb")
            p, wport = start_trackd(TRACKD, [*DEMO, "--name", "tls", "--mqtt",
                                             f"mqtts://localhost:{tport}/t",
                                             *(["--mqtt-ca", ca] if ca else [])], log)
            try:
                got = wait_for(lambda: len(sub.take()) > 5, 10 if want else 3)
                if want:
                    check(got, "mqtts:// with --mqtt-ca: frames arrive through TLS")
                else:
                    text = open(log_path, errors="replace").read()
                    check(not got and "TLS" in text and
                          metrics(wport)["trackd_frames_processed_total"] > 0,
                          "mqtts:// with the system CAs refuses the test CA's broker, logs a "
                          "TLS error, tracking goes on")
            finally:
                stop_trackd(p)
                log.close()
                sub.close()
    finally:
        broker.stop()


def part_usage():
    print("== usage errors", flush=True)
    for args, says in (
            (["--mqtt", "http://x"], "mqtt:// or mqtts://"),
            (["--mqtt", "mqtt://"], "no broker host"),
            (["--mqtt", "mqtt://h:0"], "port"),
            (["--mqtt", "mqtt://h/a/+/b"], "wildcards"),
            (["--mqtt", "mqtt://h/a//b"], "empty level"),
            (["--mqtt", "mqtt://u:%zz@h"], "escape"),
            (["--name", "front door"], "A-Z a-z 0-9 . _ -"),
            (["--name", "x" * 65], "1..64"),
            (["--mqtt-ca", "/etc/hosts"], "--mqtt-ca needs an mqtts://"),
            (["--mqtt", "mqtt://h", "--mqtt-ca", "/etc/hosts"], "--mqtt-ca needs an mqtts://")):
        r = subprocess.run([TRACKD, *args, "--no-server", "--frames", "1"], capture_output=True,
                           text=True, timeout=20)
        check(r.returncode == 64 and says in r.stderr,
              f"{' '.join(args)[:40]}: exit 64 saying '{says}' (rc {r.returncode}: "
              f"{r.stderr.strip()[-200:]})")
    r = subprocess.run([TRACKD, "--mqtt", "mqtts://127.0.0.1:1", "--mqtt-ca", "/nonexistent.pem",
                        "--no-server", "--frames", "1"], capture_output=True, text=True, timeout=20)
    check(r.returncode == 66 and "/nonexistent.pem" in r.stderr,
          f"an unreadable --mqtt-ca: exit 66 naming it (rc {r.returncode})")


def main():
    if not os.path.exists(MOSQUITTO):
        print(f"FAIL: no mosquitto broker at {MOSQUITTO} (Debian package mosquitto)")
        return 1
    tmp = tempfile.mkdtemp(prefix="trackd-mqtt-")
    broker = Broker(tmp, free_port())
    broker.start()
    try:
        part_usage()
        part_two_cameras(tmp, broker)
        part_example(tmp, broker)
        part_never_answers(tmp)
        part_tls(tmp)
    finally:
        broker.stop()
    if FAILS:
        print(f"{len(FAILS)} check(s) failed; logs in {tmp}")
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("all MQTT checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
