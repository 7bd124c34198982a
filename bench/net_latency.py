#!/usr/bin/python3
"""Measures capture -> client latency of trackd's network outputs, side by
side in one run: a UDP listener (--udp) and a WebSocket client (/ws), both
on loopback, both in this process. A measurement, not a test: it prints
p50/p99/max per output and asserts nothing.

    bench/net_latency.py TRACKD [--seconds 20] [--size 640x480] [--fps 30]
                                [--backend cpu] [--objects FILE]

Latency of a frame at a client = (the client's wall clock when the message
arrived - the message's wall_ms) + latency.queue_ms + latency.process_ms:
wall_ms is stamped when processing finished, and queue_ms + process_ms is
capture -> processing finished (PROTOCOL.md section 3), so the sum is
capture -> arrival, with both clocks the same host's. Each client reads on
its own thread (the WebSocket one runs an asyncio loop, Debian's
python3-websockets), so the numbers include a Python client's wake-up.
"""
import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from daemon_proc import start_trackd, stop_trackd  # noqa: E402

import websockets  # noqa: E402


def latency_ms(msg, t_recv_ms):
    """(capture -> arrival, results ready -> arrival) in ms."""
    lat, out = msg["latency"], t_recv_ms - msg["wall_ms"]
    return out + lat["queue_ms"] + lat["process_ms"], out


def udp_reader(sock, out, done):
    sock.settimeout(0.2)
    while not done.is_set():
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        t = time.time_ns() / 1e6
        msg = json.loads(data)
        if msg["part"] == msg["parts"]:  # a frame is whole with its last part
            out.append((msg["seq"], latency_ms(msg, t)))


def ws_reader(url, out, done):
    async def run():
        async with websockets.connect(url, max_size=None) as ws:
            await ws.send(json.dumps({"type": "subscribe", "preview": False}))
            while not done.is_set():
                try:
                    data = await asyncio.wait_for(ws.recv(), 0.2)
                except asyncio.TimeoutError:
                    continue
                t = time.time_ns() / 1e6
                if isinstance(data, bytes):
                    continue
                msg = json.loads(data)
                if msg["type"] == "frame":
                    out.append((msg["seq"], latency_ms(msg, t)))
    asyncio.run(run())


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--fps", default="30")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--objects")
    a = ap.parse_args()
    usock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    usock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    usock.bind(("127.0.0.1", 0))
    args = ["--size", a.size, "--fps", a.fps, "--backend", a.backend, "--stats-interval", "5",
            "--udp", f"127.0.0.1:{usock.getsockname()[1]}"]
    if a.objects:
        args += ["--objects", a.objects]
    log = open(os.devnull, "w")
    p, port = start_trackd(os.path.abspath(a.trackd), args, log)
    udp, ws, done = [], [], threading.Event()
    threads = [threading.Thread(target=udp_reader, args=(usock, udp, done)),
               threading.Thread(target=ws_reader, args=(f"ws://127.0.0.1:{port}/ws", ws, done))]
    for t in threads:
        t.start()
    try:
        time.sleep(1.0)  # warm-up: connection set-up, first frames
        n0 = (len(udp), len(ws))
        time.sleep(a.seconds)
        done.set()
        for t in threads:
            t.join()
    finally:
        stop_trackd(p)
    udp, ws = udp[n0[0]:], ws[n0[1]:]
    load = os.getloadavg()
    print(f"trackd {a.size} at {a.fps} fps, backend {a.backend}, {a.seconds:.0f} s, "
          f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("capture -> arrival, and (in brackets) results ready -> arrival, in ms")
    print(f"{'output':<18}{'frames':>7}{'p50':>18}{'p99':>18}{'max':>18}")
    for name, v in (("UDP listener", udp), ("WebSocket client", ws)):
        if not v:
            print(f"{name:<18}{0:>7}")
            continue
        cols = "".join(f"{pct([x[0] for _, x in v], q):>9.3f} ({pct([x[1] for _, x in v], q):>6.3f})"
                       for q in (50, 99, 100))
        print(f"{name:<18}{len(v):>7}{cols}")
    both = dict(udp)
    diff = [w[0] - both[s][0] for s, w in ws if s in both]
    if diff:
        print(f"WebSocket - UDP, same frame: p50 {pct(diff, 50):.3f} ms, p99 {pct(diff, 99):.3f} ms "
              f"({len(diff)} frames)")


if __name__ == "__main__":
    main()
