#!/usr/bin/python3
"""Attack: thousands of connect/disconnect cycles of every kind.

    test_churn.py TRACKD [--cycles N] [--threads T] [--max-seconds S]

T threads run N cycles in all against the real daemon (demo scene, an
objects file), each cycle one of:
  tcp        connect, close
  reset      connect, reset (SO_LINGER 0)
  http       GET / (a file from the web root), read the answer, close
  partial    half an HTTP request, then reset
  ws         WebSocket handshake, read the hello, send a close frame, close
  ws_reset   WebSocket handshake, reset without reading anything
  reload     WebSocket handshake, reload_objects (the daemon opens the
             objects file), wait for the reply, close
  oversize   WebSocket handshake, start a 1 MiB text message, reset midway
Meanwhile one client reads results throughout. Afterwards the daemon's open
descriptors (/proc/PID/fd) come back to the level before, its resident memory
is flat (within 4 MiB; not checked under ASan), it still answers, and the
reading client was served throughout. Bounded: stops at --max-seconds even
if not all cycles ran (it says so; the figures count what ran).
"""
import socket
import tempfile
import threading
import time

from attack import (RED_HSV, SANITIZED, TOKEN, Daemon, Reader, abort, check, finish, parse_args,
                    report, wait_until, write_objects, ws_frame, ws_open, ws_read_json_until,
                    ws_send_json)

KINDS = ("tcp", "reset", "http", "partial", "ws", "ws_reset", "reload", "oversize")


def cycle(port, path, kind):
    """One cycle; returns True when the daemon behaved as expected."""
    if kind in ("tcp", "reset", "http", "partial"):
        s = socket.create_connection(("127.0.0.1", port), 10)
        try:
            if kind == "tcp":
                s.close()
            elif kind == "reset":
                abort(s)
            elif kind == "partial":
                s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                abort(s)
            else:
                s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
                data = b""
                while True:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    if b"</html>" in data.lower():
                        break
                s.close()
                return data.startswith(b"HTTP/1.1 200")
            return True
        finally:
            s.close()
    s = ws_open(port, path)
    try:
        if kind == "ws":
            ok = ws_read_json_until(s, lambda m: m.get("type") == "hello", 10) is not None
            s.sendall(ws_frame(b"\x03\xe8", opcode=0x8))
            s.close()
            return ok
        if kind == "ws_reset":
            abort(s)
            return True
        if kind == "reload":
            ws_send_json(s, {"type": "reload_objects", "id": "r"})
            m = ws_read_json_until(s, lambda m: m.get("id") == "r", 10)
            s.close()
            return bool(m and m.get("type") in ("ack", "error")
                        and (m["type"] == "ack" or m.get("code") == "busy"))
        # oversize: a frame header announcing 1 MiB, then part of it
        big = ws_frame(b"x" * (1 << 20))
        s.sendall(big[:200000])
        abort(s)
        return True
    finally:
        s.close()


def main():
    a = parse_args(cycles=3000, threads=4, max_seconds=90.0)
    with tempfile.TemporaryDirectory() as d:
        objs = write_objects(d, RED_HSV)
        with Daemon(a.trackd, ["--size", "320x180", "--fps", "30", "--backend", "cpu",
                               "--objects", objs, "--preview-fps", "10",
                               "--stats-interval", "0"], d, token=TOKEN) as dm:
            reader = Reader(dm.port)
            reader.start()
            # Warm-up: one of each kind, so lazily made buffers exist before
            # the baseline.
            for k in KINDS:
                cycle(dm.port, dm.path, k)
            time.sleep(2.0)
            wait_until(lambda: reader.stats and reader.stats.get("clients") == 1, 10)
            fds0, rss0 = dm.fds(), dm.rss_kb()
            print(f"before: {fds0} fds, rss {rss0} kB")

            lock = threading.Lock()
            counts = {"done": 0, "ok": 0, "errors": 0}
            bad = []
            next_i = [0]
            deadline = time.monotonic() + a.max_seconds

            def worker():
                while time.monotonic() < deadline:
                    with lock:
                        i = next_i[0]
                        next_i[0] += 1
                    if i >= a.cycles:
                        return
                    kind = KINDS[i % len(KINDS)]
                    try:
                        ok = cycle(dm.port, dm.path, kind)
                    except OSError as e:
                        ok = False
                        kind += f" ({e!r})"
                    with lock:
                        counts["done"] += 1
                        counts["ok" if ok else "errors"] += 1
                        if not ok and len(bad) < 5:
                            bad.append(kind)

            t0 = time.monotonic()
            ts = [threading.Thread(target=worker) for _ in range(a.threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            took = time.monotonic() - t0
            print(f"{counts['done']} cycles in {took:.1f} s ({counts['errors']} unexpected: {bad})")
            check(counts["done"] == a.cycles or took >= a.max_seconds,
                  f"all {a.cycles} cycles ran, or the time ran out")
            check(counts["errors"] == 0, f"every cycle got the expected answer ({bad})")
            check(dm.alive(), "trackd is alive after the churn")

            # Descriptors: the daemon closes what lws and the file worker
            # opened; give it a moment to see the last closes.
            fds = wait_until(lambda: dm.fds() <= fds0, 15)
            check(fds, f"descriptors back to {fds0} (now {dm.fds()})")
            rss = dm.rss_kb()
            if SANITIZED:
                print(f"rss {rss0} -> {rss} kB (ASan build: not checked)")
            else:
                check(rss - rss0 <= 4096, f"rss flat: {rss0} -> {rss} kB")
            check(wait_until(lambda: reader.stats and reader.stats.get("clients") == 1, 10),
                  f"stats.clients back to 1 ({reader.stats and reader.stats.get('clients')})")
            t_end = time.monotonic()
            check(reader.error is None and reader.frames_since(t0) > 0 and
                  wait_until(lambda: reader.frames_since(t_end) > 0, 10),
                  f"the reading client was served during and after (error {reader.error})")
            check(all(b > a for a, b in zip(reader.seqs, reader.seqs[1:])),
                  "the reader's seq is strictly increasing")
            s = ws_open(dm.port)
            ws_send_json(s, {"type": "ping", "id": "end"})
            check(ws_read_json_until(s, lambda m: m.get("id") == "end", 10) is not None,
                  "a new client is served after the churn")
            s.close()
            reader.stop.set()
            reader.join(5)
            report("churn", tried=counts["done"], survived=counts["ok"] if dm.alive() else 0,
                   fd_growth=dm.fds() - fds0, rss_growth_kb=(rss - rss0) if not SANITIZED
                   else "n/a")
    finish()


if __name__ == "__main__":
    main()
