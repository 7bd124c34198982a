#!/usr/bin/python3
"""Measures trackd's MQTT output on this machine (a measurement, not a test:
it asserts nothing; it prints numbers for docs/BENCHMARKS.md).

  latency   one trackd (demo 640x480 at 30 fps) publishing to a local
            mosquitto; in one process a paho subscriber (PREFIX/cam/frame)
            and a WebSocket client (/ws) receive the same frames; per
            frame: capture -> received (now - t_capture, CLOCK_MONOTONIC on
            both sides, t_capture in us since the latency branch, 1 ms before) and processed ->
            received (epoch now - wall_ms, us resolution), p50 and p99, MQTT
            beside WebSocket.
  fanout    4 trackd (demo 640x480, 30 fps, --no-server) into one broker,
            20 subscribers to PREFIX/+/frame (in 4 processes): frames each
            subscriber missed against what each trackd processed (its
            NDJSON), the trackd's own source drops, and the CPU of the
            broker and each trackd (share of one core).

    tests/measure/mqtt_measure.py build/daemon/trackd [--seconds 20]

Needs Debian's mosquitto, python3-paho-mqtt and python3-websockets.
"""
import argparse
import asyncio
import getpass
import json
import multiprocessing
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt
import websockets

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from daemon_proc import free_port, start_trackd, stop_trackd  # noqa: E402

NODELAY = True  # --nagle: the broker's default (set_tcp_nodelay false)
DEMO = ["--size", "640x480", "--fps", "30", "--backend", "cpu"]


def start_broker(tmp, port):
    conf = os.path.join(tmp, "mosquitto.conf")
    with open(conf, "w") as f:
        f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                f"user {getpass.getuser()}\nset_tcp_nodelay {'true' if NODELAY else 'false'}\n")
    p = subprocess.Popen([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-c", conf],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("mosquitto did not start")


def cpu_seconds(pid):
    """utime + stime of pid in seconds (/proc/PID/stat fields 14 and 15)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))] if v else float("nan")


def latency(trackd, seconds, tmp, bport):
    log = open(os.path.join(tmp, "latency-trackd.log"), "wb")
    p, wport = start_trackd(trackd, [*DEMO, "--no-preview", "--name", "lat", "--mqtt",
                                     f"mqtt://127.0.0.1:{bport}/m"], log)
    got = {"mqtt": [], "ws": []}
    stop = threading.Event()

    def on_msg(c, u, m):
        now_m, now_w = time.monotonic(), time.time() * 1e3
        if not stop.is_set():
            f = json.loads(m.payload)
            got["mqtt"].append(((now_m - f["t_capture"]) * 1e3, now_w - f["wall_ms"]))

    c = mqtt.Client()
    c.on_message = on_msg
    c.connect("127.0.0.1", bport)
    c.subscribe("m/lat/frame")
    c.loop_start()

    async def ws():
        async with websockets.connect(f"ws://127.0.0.1:{wport}/ws") as w:
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                m = await asyncio.wait_for(w.recv(), 5)
                now_m, now_w = time.monotonic(), time.time() * 1e3
                if isinstance(m, str):
                    f = json.loads(m)
                    if f.get("type") == "frame":
                        got["ws"].append(((now_m - f["t_capture"]) * 1e3, now_w - f["wall_ms"]))
    asyncio.run(ws())
    stop.set()
    c.loop_stop()
    stop_trackd(p)
    log.close()
    print(f"latency over {seconds} s, demo 640x480 at 30 fps, cpu backend, one trackd, "
          f"loopback broker; ms:")
    print(f"  {'path':10} {'frames':>6} {'capture->rx p50':>16} {'p99':>7} "
          f"{'processed->rx p50':>18} {'p99':>7}")
    for k in ("mqtt", "ws"):
        cap = [a for a, b in got[k]]
        proc = [b for a, b in got[k]]
        print(f"  {k:10} {len(cap):6d} {pct(cap, .5):16.2f} {pct(cap, .99):7.2f} "
              f"{pct(proc, .5):18.3f} {pct(proc, .99):7.3f}")


def subscriber_proc(bport, n, seconds, q):
    """n subscribers to m/+/frame in this process; puts {sub: {cam: [seq]}}."""
    seqs = [dict() for _ in range(n)]
    clients = []
    for i in range(n):
        c = mqtt.Client()

        def on_msg(c, u, m, i=i):
            f = json.loads(m.payload)
            seqs[i].setdefault(f["camera"], []).append(f["seq"])
        c.on_message = on_msg
        c.connect("127.0.0.1", bport)
        c.subscribe("m/+/frame")
        c.loop_start()
        clients.append(c)
    time.sleep(seconds)
    for c in clients:
        c.loop_stop()
        c.disconnect()
    q.put(seqs)


def fanout(trackd, seconds, tmp, bport, broker):
    q = multiprocessing.Queue()
    subs = [multiprocessing.Process(target=subscriber_proc, args=(bport, 5, seconds + 4, q))
            for _ in range(4)]
    for s in subs:
        s.start()
    time.sleep(2)  # subscribed before the first frame
    procs = []
    for k in range(4):
        log = open(os.path.join(tmp, f"fan-{k}.log"), "wb")
        args = [trackd, *DEMO, "--no-server", "--name", f"cam{k}", "--output",
                os.path.join(tmp, f"cam{k}.ndjson"), "--mqtt", f"mqtt://127.0.0.1:{bport}/m"]
        procs.append((subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log), log))
    time.sleep(1)
    t0 = time.monotonic()
    c0 = [cpu_seconds(p.pid) for p, _ in procs] + [cpu_seconds(broker.pid)]
    time.sleep(seconds)
    c1 = [cpu_seconds(p.pid) for p, _ in procs] + [cpu_seconds(broker.pid)]
    dt = time.monotonic() - t0
    results = [q.get() for _ in subs]
    for p, log in procs:
        p.terminate()
        p.wait(10)
        log.close()
    for s in subs:
        s.join()
    gaps, received, processed, src_drops = 0, 0, 0, 0
    for k in range(4):
        with open(os.path.join(tmp, f"cam{k}.ndjson")) as f:
            nd = [json.loads(l)["seq"] for l in f if l.endswith("\n")]
        processed += len(nd)
        src_drops += sum(b - a - 1 for a, b in zip(nd, nd[1:]))
        for proc_seqs in results:
            for s in proc_seqs:
                got = s.get(f"cam{k}", [])
                received += len(got)
                if got:
                    want = [x for x in nd if got[0] <= x <= got[-1]]
                    gaps += len(set(want) - set(got))
                else:
                    gaps += len(nd)
    print(f"fan-out over {dt:.1f} s: 4 trackd (demo 640x480 at 30 fps, cpu backend) -> one "
          f"mosquitto -> 20 subscribers of m/+/frame")
    print(f"  frames processed by the 4 trackd: {processed} (source drops, frames the pipeline "
          f"skipped for a newer one: {src_drops})")
    print(f"  frame messages received by the 20 subscribers: {received}; missing against "
          f"what trackd processed (gaps): {gaps}")
    cpu = [(b - a) / dt * 100 for a, b in zip(c0, c1)]
    print(f"  CPU, % of one core: trackd " + ", ".join(f"{x:.1f}" for x in cpu[:4]) +
          f"; mosquitto {cpu[4]:.1f}")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trackd")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--nagle", action="store_true",
                    help="leave the broker's set_tcp_nodelay at its default, false")
    a = ap.parse_args()
    global NODELAY
    NODELAY = not a.nagle
    print(f"broker: mosquitto, set_tcp_nodelay {str(NODELAY).lower()}")
    tmp = tempfile.mkdtemp(prefix="trackd-mqtt-measure-")
    bport = free_port()
    broker = start_broker(tmp, bport)
    try:
        latency(a.trackd, a.seconds, tmp, bport)
        fanout(a.trackd, a.seconds, tmp, bport, broker)
    finally:
        broker.terminate()
        broker.wait(10)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
