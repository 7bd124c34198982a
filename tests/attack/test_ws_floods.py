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
import socket
import sys
import tempfile
import time

from attack import (FAILS, SANITIZED, TRIED, Daemon, check, close_answer, finish, is_json, report,
                    start_reader, until, ws_frame, ws_open)


def main():
    with tempfile.TemporaryDirectory() as d:
        with Daemon(sys.argv[1], ["--size", "160x90", "--fps", "50", "--backend", "cpu",
                                  "--no-preview"], d) as dm:
            run(dm)
            check(dm.alive(), "trackd still running")
    report("ws_floods", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


def run(dm):
    port = dm.port
    alone = start_reader(port, 3)()
    print("alone:", alone)
    rss0 = dm.rss_kb()

    # 16 MB declared (text, and binary): the first 64 KiB are enough to be
    # closed. The payload is masked properly, so it is valid UTF-8 text.
    for opcode in (0x1, 0x2):
        t0 = time.monotonic()
        got, _ = close_answer(port, [ws_frame(b"x" * 65536, opcode=opcode, length=16 << 20)])
        check(got == 1009, f"a 16 MB frame (opcode {opcode}) is closed with 1009 (got {got}) "
              f"after {time.monotonic() - t0:.2f} s")

    # Fragments past 1 MiB.
    got, n = close_answer(port, [ws_frame(b"{" + b" " * 8191, fin=False)] +
                          [ws_frame(b" " * 8192, opcode=0x0, fin=False) for _ in range(200)])
    sent = max(0, n - 1) * 8192
    check(got == 1009, f"a fragmented message past 1 MiB is closed with 1009 (got {got}, "
          f"{sent} bytes sent)")

    # Over 64 KiB, under 1 MiB: an error, and the connection goes on.
    s = ws_open(port)
    s.sendall(ws_frame(json.dumps({"type": "ping", "pad": "p" * 70000})))
    op, _ = until(s, is_json("error", "code", "too_large"))
    s.sendall(ws_frame(json.dumps({"type": "ping", "id": "after"})))
    op2, _ = until(s, is_json("pong", "id", "after"))
    check(op == 0x1 and op2 == 0x1, "a 70000-byte message gets too_large, then a pong")
    s.close()

    # Ping flood, never reading, beside the reader.
    read = start_reader(port, 5)
    time.sleep(1)
    s = ws_open(port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.settimeout(0.5)
    pings = 0
    end = time.monotonic() + 3
    blob = (ws_frame(b"p" * 100, opcode=0x9) * 50 +
            ws_frame(json.dumps({"type": "ping", "id": 1})) * 50)
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
    rss1 = dm.rss_kb()
    s.close()
    check(during["max_gap"] < 1.0,
          f"results kept flowing during the ping flood (longest gap {during['max_gap']:.2f} s)")
    check(during["rate"] >= 0.7 * alone["rate"],
          f"result rate during the flood {during['rate']:.1f}/s vs {alone['rate']:.1f}/s")
    if not SANITIZED:
        check(rss1 - rss0 < 16 * 1024, f"daemon memory bounded: {rss0} kB -> {rss1} kB")
    report("ping_flood", tried=pings, survived=pings if dm.alive() else 0)


if __name__ == "__main__":
    main()
