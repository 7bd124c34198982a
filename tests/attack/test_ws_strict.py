#!/usr/bin/python3
"""Attack: WebSocket frames and handshakes a conforming client never sends,
against the real trackd, with hand-built frames on raw sockets.

  - an unmasked frame (text, ping, or sent with the handshake) closes 1002;
  - Sec-WebSocket-Version other than 13 (99, 8, missing) gets 426 naming 13;
  - a close code that may not be sent (5000, 65535, 1005, 1006, 999) is
    answered with 1002, never echoed; a valid one (1000, 4000) is echoed;
  - text that is not UTF-8 closes 1007;
  - after all that a well-behaved client is served as before.

Usage: test_ws_strict.py TRACKD
"""
import json
import socket
import sys
import tempfile

from attack import (FAILS, TRIED, Daemon, check, close_answer, close_code, close_frame, finish,
                    handshake_bytes, is_json, read_head, report, until, ws_frame, ws_open)


def ping_json(i):
    return ws_frame(json.dumps({"type": "ping", "id": i}))


def main():
    with tempfile.TemporaryDirectory() as d:
        with Daemon(sys.argv[1], ["--size", "160x90", "--fps", "20", "--backend", "cpu",
                                  "--no-preview"], d) as dm:
            run(dm.port)
            check(dm.alive(), "trackd still running after every attack")
    report("ws_strict", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


def run(port):
    # A masked ping is answered: the baseline the other cases differ from.
    s = ws_open(port)
    s.sendall(ping_json(1))
    op, _ = until(s, is_json("pong", "id", 1))
    check(op == 0x1, "a masked JSON ping gets its pong")
    s.sendall(close_frame(1000))
    check(close_code(s) == 1000, "a close with 1000 is echoed with 1000")
    s.close()

    # Unmasked data frame: closed with 1002, the message is not acted on.
    s = ws_open(port)
    s.sendall(ws_frame(json.dumps({"type": "ping", "id": 2}), mask=False))
    op, data = until(s, lambda op, d: op == 0x8 or (op == 0x1 and b'"pong"' in d))
    check(op == 0x8 and data[:2] == b"\x03\xea",
          f"an unmasked text frame is answered with close 1002, not a pong "
          f"(got opcode {op!r} {data[:40] if data else data!r})")
    s.close()

    # Unmasked control frame (lws answers pings itself).
    got, _ = close_answer(port, [ws_frame(b"hi", opcode=0x9, mask=False)])
    check(got == 1002, "an unmasked ping frame is answered with close 1002")

    # Unmasked frame in the same packet as the handshake.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(handshake_bytes(port) + ws_frame(json.dumps({"type": "ping", "id": 3}), mask=False))
    head = read_head(s)
    check(head.startswith(b"HTTP/1.1 101") and close_code(s) == 1002,
          "an unmasked frame sent with the handshake closes 1002")
    s.close()

    # Masked frames after the same trick are fine.
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(handshake_bytes(port) + ping_json(4))
    read_head(s)
    op, _ = until(s, is_json("pong", "id", 4))
    check(op == 0x1, "a masked frame sent with the handshake is served")
    s.close()

    # WebSocket versions other than 13.
    for version in ("99", "8", "13x", None):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        req = handshake_bytes(port, version=version or "13")
        if version is None:
            req = b"".join(line for line in req.splitlines(True)
                           if not line.startswith(b"Sec-WebSocket-Version"))
        s.sendall(req)
        head = read_head(s)
        s.close()
        check(head.startswith(b"HTTP/1.1 426") and b"Sec-WebSocket-Version: 13" in head,
              f"Sec-WebSocket-Version {version}: 426 naming version 13 (got {head[:40]!r})")

    # Close codes: never echo one that may not be sent.
    for code in (5000, 65535, 1005, 1006, 999, 2999):
        got, _ = close_answer(port, [close_frame(code, b"bye")])
        check(got == 1002, f"close code {code} is answered with 1002 (got {got})")
    for code in (1001, 4000):
        got, _ = close_answer(port, [close_frame(code)])
        check(got == code, f"valid close code {code} is echoed (got {got})")
    got, _ = close_answer(port, [close_frame(raw=b"\x03")])  # one byte: not even a code
    check(got in (None, 1002), f"a 1-byte close payload is not echoed (got {got})")

    # Text that is not UTF-8.
    got, _ = close_answer(port, [ws_frame(b'{"type":"ping","id":"\xff\xfe"}')])
    check(got == 1007, f"text that is not UTF-8 closes with 1007 (got {got})")

    # Still serving a well-behaved client.
    s = ws_open(port)
    op, _ = until(s, is_json("frame"), 10)
    check(op == 0x1, "a new client gets results after the attacks")
    s.close()


if __name__ == "__main__":
    main()
