#!/usr/bin/python3
"""Attack: oversized and flooding WebSocket clients against the real trackd,
while a reader (its own process) takes results.

  - a frame declaring 16 MB: closed 1009 at once, the daemon's memory flat;
  - a message fragmented into 8 KiB pieces past 1 MiB: closed 1009;
  - a 70000-byte message: a "too_large" error, the connection stays usable;
  - a ping flood (WebSocket pings and JSON pings, never reading): the daemon's
    memory bounded, the reader keeps its rate (>= 0.7x) with no gap over 1 s.

Usage: test_ws_floods.py TRACKD
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

from rawws import attack_line, close_code, frame, is_json, until, ws_open
from daemon_proc import start_trackd

HERE = os.path.dirname(os.path.abspath(__file__))
SANITIZED = os.environ.get("TRK_SANITIZE") == "1"  # ASan keeps freed memory: RSS means nothing
FAILS = []
TRIED = [0]


def check(cond, what):
    TRIED[0] += 1
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def reader(port, seconds):
    r = subprocess.Popen([sys.executable, os.path.join(HERE, "rawws.py"), "read", str(port),
                          str(seconds)], stdout=subprocess.PIPE, text=True)
    return lambda: json.loads(r.communicate(timeout=60)[0].strip().splitlines()[-1])


def main():
    trackd = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        log = open(os.path.join(d, "trackd.log"), "w+")
        p, port = start_trackd(trackd, ["--size", "160x90", "--fps", "50", "--backend", "cpu",
                                        "--no-preview"], log)
        try:
            run(p, port)
            check(p.poll() is None, "trackd still running")
        finally:
            p.terminate()
            rc = p.wait(20)
            log.seek(0)
            text = log.read()
        check(rc == 0, f"trackd exits 0 on SIGTERM (got {rc})")
        if FAILS:
            print(text[-2000:])
    attack_line("ws_floods", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    if FAILS:
        sys.exit(f"{len(FAILS)} check(s) failed: " + "; ".join(FAILS))


def run(p, port):
    alone = reader(port, 3)()
    print("alone:", alone)
    rss0 = rss_kb(p.pid)

    # 16 MB declared (text, and binary): the first 64 KiB are enough to be
    # closed. The payload is masked properly, so it is valid UTF-8 text.
    for opcode in (0x1, 0x2):
        s = ws_open(port)
        key = os.urandom(4)
        chunk = bytes(c ^ key[i % 4] for i, c in enumerate(b"x" * 65536))
        t0 = time.monotonic()
        try:
            s.sendall(bytes([0x80 | opcode, 0x80 | 127]) + (16 << 20).to_bytes(8, "big") + key +
                      chunk)
        except OSError:
            pass
        got = close_code(s)
        check(got == 1009, f"a 16 MB frame (opcode {opcode}) is closed with 1009 (got {got}) "
              f"after {time.monotonic() - t0:.2f} s")
        s.close()

    # Fragments past 1 MiB.
    s = ws_open(port)
    sent = 0
    try:
        s.sendall(frame(b"{" + b" " * 8191, fin=False))
        for _ in range(200):
            s.sendall(frame(b" " * 8192, opcode=0x0, fin=False))
            sent += 8192
    except OSError:
        pass
    got = close_code(s)
    check(got == 1009, f"a fragmented message past 1 MiB is closed with 1009 (got {got}, "
          f"{sent} bytes sent)")
    s.close()

    # Over 64 KiB, under 1 MiB: an error, and the connection goes on.
    s = ws_open(port)
    s.sendall(frame(json.dumps({"type": "ping", "pad": "p" * 70000})))
    op, _ = until(s, is_json("error", "code", "too_large"))
    s.sendall(frame(json.dumps({"type": "ping", "id": "after"})))
    op2, _ = until(s, is_json("pong", "id", "after"))
    check(op == 0x1 and op2 == 0x1, "a 70000-byte message gets too_large, then a pong")
    s.close()

    # Ping flood, never reading, beside the reader.
    read = reader(port, 5)
    time.sleep(1)
    s = ws_open(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(0.5)
    pings = 0
    end = time.monotonic() + 3
    blob = (frame(b"p" * 100, opcode=0x9) * 50 +
            frame(json.dumps({"type": "ping", "id": 1})) * 50)
    while time.monotonic() < end:
        try:
            s.sendall(blob)
            pings += 100
        except socket.timeout:
            time.sleep(0.05)  # the server stopped reading us: fine
        except OSError:
            break
    during = read()
    print(f"ping flood: {pings} pings sent; reader {during}")
    rss1 = rss_kb(p.pid)
    s.close()
    check(during["max_gap"] < 1.0,
          f"results kept flowing during the ping flood (longest gap {during['max_gap']:.2f} s)")
    check(during["rate"] >= 0.7 * alone["rate"],
          f"result rate during the flood {during['rate']:.1f}/s vs {alone['rate']:.1f}/s")
    if not SANITIZED:
        check(rss1 - rss0 < 16 * 1024, f"daemon memory bounded: {rss0} kB -> {rss1} kB")
    attack_line("ping_flood", tried=pings, survived=pings if p.poll() is None else 0)


if __name__ == "__main__":
    main()
