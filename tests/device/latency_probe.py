#!/usr/bin/python3
"""Capture -> client latency of trackd's WebSocket results, the way a client
on the same host sees it: the frame message's t_capture (CLOCK_MONOTONIC
seconds when the frame was captured or decoded, PROTOCOL.md section 3)
against this process's CLOCK_MONOTONIC when the message arrived. p50, p99
and max over N frames after a warm-up. A measurement, not a test.

    tests/device/latency_probe.py TRACKD [--frames 600] [--warmup 60]
        [--preview] [--client aiohttp|socket] [--label NAME] -- TRACKD_ARGS...

It starts trackd with TRACKD_ARGS on a free loopback port (daemon_proc.py,
as bench/net_latency.py does), connects one aiohttp WebSocket client (on
the device python3 has aiohttp, not websockets), subscribes with or
without previews (--preview: the JPEG encoder then runs on every preview
the rate allows, as with a browser open) and prints one table row;
--header prints the header. bench/net_latency.py measures the same span
from wall_ms + queue_ms + process_ms (two clocks); this uses the one
monotonic clock, t_capture, which is what issue 14's figures compare.

Two clients (--client): aiohttp (default; an asyncio client as a Python
program would use) and socket, a minimal RFC 6455 client on a blocking
socket that stamps a message as soon as its last byte is read, before
any parsing, as a C client in a robot's control loop would (this probe's
own overhead removed from the figure: the asyncio loop's wake-up and
aiohttp's frame handling). Both stamp before json.loads.

Under each row, where the time went (p50/p99 of each stage, ms; they add
up to the total frame by frame, PROTOCOL.md section 3):
  queue    t_capture -> processing starts (latency.queue_ms)
  process  -> results ready (latency.process_ms)
  handoff  -> the message's encoding begins (latency.handoff_ms)
  deliver  -> received here: encoding, the WebSocket thread's wake-up and
           write, the kernel, and this client's own wake-up and parsing
  write    the server's share of deliver: hand-off -> socket write
           returned (stats ws.write_ms over the run's intervals: median of
           their p50s, max of their p99s)
A daemon older than handoff_ms gets "deliver" from results ready on.
"""
import argparse
import asyncio
import json
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
# daemon_proc.py: next to this file in the device bundle, else the repository's.
sys.path[:0] = [here, os.path.join(here, "..", "integration")]
from daemon_proc import start_trackd, stop_trackd  # noqa: E402

try:
    import aiohttp  # noqa: E402  (the device has it; --client socket needs nothing)
except ImportError:
    aiohttp = None

HEADER = f"{'case':<40}{'frames':>7}{'p50 ms':>9}{'p99 ms':>9}{'max ms':>9}"


def pct(v, p):
    """The p-th percentile, nearest rank (bench/net_latency.py's rule)."""
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


STAGES = ("queue", "process", "handoff", "deliver")


async def probe(url, frames, warmup, preview, timeout):
    """Per measured frame: (total, queue, process, handoff, deliver) in ms;
    and the stats messages' ws.write_ms objects seen meanwhile."""
    lat = []
    writes = []
    seen = 0
    async with aiohttp.ClientSession() as s:
        async with s.ws_connect(url, max_msg_size=0) as ws:
            await ws.send_str(json.dumps({"type": "subscribe", "preview": preview}))
            deadline = time.monotonic() + timeout
            while len(lat) < frames and time.monotonic() < deadline:
                try:
                    m = await ws.receive(timeout=1.0)
                except asyncio.TimeoutError:
                    continue
                t = time.clock_gettime(time.CLOCK_MONOTONIC)
                if m.type == aiohttp.WSMsgType.BINARY:
                    continue  # a preview
                if m.type != aiohttp.WSMsgType.TEXT:
                    break  # closed: the file ended
                seen = account(json.loads(m.data), t, seen, warmup, lat, writes)
    return lat, writes


class RawWs:
    """A blocking WebSocket client (RFC 6455, client side): handshake, masked
    text frames out, frames in (pong to pings; a close ends it)."""

    def __init__(self, port, timeout):
        import base64
        import socket
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                        "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
                       .encode())
        self.buf = bytearray()
        while b"\r\n\r\n" not in self.buf:
            chunk = self.s.recv(4096)
            if not chunk:
                raise ConnectionError("closed during the handshake")
            self.buf += chunk
        head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(head.split(b"\r\n")[0].decode(errors="replace"))
        self.buf = bytearray(rest)

    def send(self, op, data):
        n = len(data)
        hdr = bytearray([0x80 | op])
        if n < 126:
            hdr.append(0x80 | n)
        elif n < 65536:
            hdr += bytes([0x80 | 126]) + n.to_bytes(2, "big")
        else:
            hdr += bytes([0x80 | 127]) + n.to_bytes(8, "big")
        mask = os.urandom(4)
        self.s.sendall(bytes(hdr) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def frame(self):
        """(opcode, payload, t): t = CLOCK_MONOTONIC when its last byte was
        read. Fragmented messages are not expected from trackd."""
        while True:
            b = self.buf
            n, at = (b[1] & 0x7F, 2) if len(b) >= 2 else (None, 0)
            if n == 126:
                n, at = (int.from_bytes(b[2:4], "big"), 4) if len(b) >= 4 else (None, 0)
            elif n == 127:
                n, at = (int.from_bytes(b[2:10], "big"), 10) if len(b) >= 10 else (None, 0)
            if n is not None and len(b) >= at + n:
                t = time.clock_gettime(time.CLOCK_MONOTONIC)
                op, data = b[0] & 0x0F, bytes(b[at:at + n])
                del b[:at + n]
                return op, data, t
            chunk = self.s.recv(1 << 16)
            if not chunk:
                return 8, b"", time.clock_gettime(time.CLOCK_MONOTONIC)
            self.buf += chunk


def probe_socket(port, frames, warmup, preview, timeout):
    """probe() with RawWs."""
    lat, writes, seen = [], [], 0
    ws = RawWs(port, timeout=2.0)
    ws.send(1, json.dumps({"type": "subscribe", "preview": preview}).encode())
    deadline = time.monotonic() + timeout
    import socket
    while len(lat) < frames and time.monotonic() < deadline:
        try:
            op, data, t = ws.frame()
        except socket.timeout:
            continue
        if op == 9:
            ws.send(10, data)
            continue
        if op == 8:
            break  # closed: the file ended
        if op != 1:
            continue  # a preview (binary) or a pong
        msg = json.loads(data)
        seen = account(msg, t, seen, warmup, lat, writes)
    ws.s.close()
    return lat, writes


def account(msg, t, seen, warmup, lat, writes):
    """Adds one message received at t (CLOCK_MONOTONIC s) to lat / writes;
    returns the frame count seen so far."""
    if msg.get("type") == "stats" and seen > warmup:
        w = msg.get("ws", {}).get("write_ms")
        if w and w.get("p50") is not None:
            writes.append(w)
    if msg.get("type") != "frame":
        return seen
    seen += 1
    if seen > warmup:
        total = (t - msg["t_capture"]) * 1e3
        L = msg.get("latency", {})
        q, pr, h = L.get("queue_ms", 0), L.get("process_ms", 0), L.get("handoff_ms", 0)
        lat.append((total, q, pr, h, total - q - pr - h))
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--frames", type=int, default=600)
    ap.add_argument("--warmup", type=int, default=60)
    ap.add_argument("--preview", action="store_true")
    ap.add_argument("--client", choices=("aiohttp", "socket"), default="aiohttp")
    ap.add_argument("--label", default="")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--header", action="store_true")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.args = argv[cut + 1:]
    if a.header:
        print(HEADER)
    log = open(os.devnull, "w")
    p, port = start_trackd(os.path.abspath(a.trackd), a.args, log)
    try:
        if a.client == "aiohttp" and aiohttp is None:
            sys.exit("latency_probe: no aiohttp here; use --client socket")
        if a.client == "socket":
            lat, writes = probe_socket(port, a.frames, a.warmup, a.preview, a.timeout)
        else:
            lat, writes = asyncio.run(probe(f"http://127.0.0.1:{port}/ws", a.frames, a.warmup,
                                            a.preview, a.timeout))
    finally:
        stop_trackd(p)
    label = a.label or " ".join(a.args)
    if not lat:
        print(f"{label:<40}{0:>7}  no frames (is trackd's server on?)")
        sys.exit(1)
    tot = [x[0] for x in lat]
    print(f"{label:<40}{len(lat):>7}{pct(tot, 50):>9.3f}{pct(tot, 99):>9.3f}{max(tot):>9.3f}")
    parts = []
    for i, name in enumerate(STAGES, 1):
        v = [x[i] for x in lat]
        parts.append(f"{name} {pct(v, 50):.3f}/{pct(v, 99):.3f}")
    if writes:
        parts.append(f"write {pct([w['p50'] for w in writes], 50):.3f}/"
                     f"{max(w['p99'] for w in writes):.3f}")
    print("    p50/p99 ms: " + "  ".join(parts))


if __name__ == "__main__":
    main()
