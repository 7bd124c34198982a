#!/usr/bin/python3
"""Attack: connection floods and slow senders against the real trackd.

  1. Burst: with --max-clients 16, 300 raw TCP connections at once, each
     sending a WebSocket handshake, while a reader (its own process) takes
     results. Every connection beyond the cap gets an HTTP 503 (a clear
     answer, not a hang); the reader keeps getting results with no gap over
     1 s and at >= 0.7x its rate before the burst; once the burst is gone the
     cap is free again (16 clients connect).
  2. Slowloris: 10 connections sending a request head one byte every 0.5 s.
     The server closes each within the head timeout (5 s) plus slack; a new
     client is served meanwhile and the reader sees no gap over 1 s.

Usage: test_conn_limit.py TRACKD
"""
import socket
import sys
import tempfile
import time

from attack import (FAILS, TRIED, Daemon, check, finish, handshake_bytes, is_json, read_head,
                    report, start_reader, until, ws_open)

CAP, BURST, SLOW = 16, 300, 10


def burst(port):
    """BURST connections at once; returns {answer: count}."""
    socks = []
    for _ in range(BURST):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
    answers = {}
    for s in socks:
        s.setblocking(True)
        s.settimeout(10)
        try:
            s.sendall(handshake_bytes(port))
            head = read_head(s)
            kind = head[:12].decode(errors="replace") if head else "closed without answer"
        except OSError as e:
            kind = f"error {e.__class__.__name__}"
        answers[kind] = answers.get(kind, 0) + 1
    return socks, answers


def main():
    with tempfile.TemporaryDirectory() as d:
        with Daemon(sys.argv[1], ["--size", "160x90", "--fps", "50", "--backend", "cpu",
                                  "--no-preview", "--max-clients", str(CAP)], d) as dm:
            port = dm.port
            alone = start_reader(port, 3)()
            print("alone:", alone)
            read = start_reader(port, 5)
            time.sleep(1)
            socks, answers = burst(port)
            print("burst answers:", answers)
            for s in socks:
                s.close()
            during = read()
            print("during the burst:", during)
            ok101 = answers.get("HTTP/1.1 101", 0)
            refused = answers.get("HTTP/1.1 503", 0)
            check(ok101 <= CAP and ok101 + refused == BURST,
                  f"{BURST} connections: at most {CAP} served, every other one answered 503 "
                  f"({answers})")
            check(during["max_gap"] < 1.0,
                  f"results kept flowing during the burst (longest gap {during['max_gap']:.2f} s)")
            check(during["rate"] >= 0.7 * alone["rate"],
                  f"result rate during the burst {during['rate']:.1f}/s vs {alone['rate']:.1f}/s")
            time.sleep(0.5)  # the closes reach the server
            again = []
            try:
                for _ in range(CAP):
                    again.append(ws_open(port))
            except (OSError, ConnectionError) as e:
                print("reconnect failed:", e)
            check(len(again) == CAP, f"after the burst {CAP} clients connect again ({len(again)})")
            for s in again:
                s.close()
            time.sleep(0.5)

            # Slowloris.
            read = start_reader(port, 9)
            time.sleep(1)
            req = handshake_bytes(port)
            slow = [socket.create_connection(("127.0.0.1", port), timeout=10)
                    for _ in range(SLOW)]
            t0 = time.monotonic()
            closed_at = {}
            new_client_ok = None
            i = 0
            while len(closed_at) < SLOW and time.monotonic() - t0 < 12:
                for k, s in enumerate(slow):
                    if k in closed_at:
                        continue
                    try:
                        s.send(req[i % len(req):i % len(req) + 1])
                        s.setblocking(False)
                        try:
                            if s.recv(1) == b"":
                                closed_at[k] = time.monotonic() - t0
                        except BlockingIOError:
                            pass
                        s.setblocking(True)
                    except OSError:
                        closed_at[k] = time.monotonic() - t0
                if new_client_ok is None and time.monotonic() - t0 > 2:
                    c = ws_open(port)
                    new_client_ok = until(c, is_json("hello"), 3)[0] == 0x1
                    c.close()
                i += 1
                time.sleep(0.5)
            for s in slow:
                s.close()
            during = read()
            print("slow connections closed after (s):", sorted(closed_at.values()))
            check(len(closed_at) == SLOW and max(closed_at.values()) < 9,
                  f"every slow sender is cut off within 9 s ({len(closed_at)} of {SLOW})")
            check(new_client_ok is True, "a new client is served while the slow senders hang on")
            check(during["max_gap"] < 1.0,
                  f"results kept flowing beside slow senders (gap {during['max_gap']:.2f} s)")
            check(dm.alive(), "trackd still running")
        check("--max-clients" in dm.log_text(), "the log says why connections were refused")
    report("conn_limit", clients=BURST + SLOW, tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


if __name__ == "__main__":
    main()
