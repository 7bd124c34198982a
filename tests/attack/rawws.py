"""Raw-socket WebSocket and HTTP for the server attack tests (part D):
hand-built frames, including the ones a real client library refuses to send
(unmasked, bad close codes, lying lengths), and a result reader that runs as
its own process so an attacker in the test process cannot slow it down.

    rawws.py read PORT SECONDS   read results for SECONDS, print one JSON line:
                                 {"results": N, "rate": HZ, "max_gap": S}
"""
import base64
import json
import os
import socket
import struct
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import daemon_proc  # noqa: E402,F401  (tests/integration: start_trackd, free_port)


def attack_line(name, **figures):
    """The one line docs/RELIABILITY.md's script collects."""
    print(f"attack: {name} " + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def handshake_bytes(port, path="/ws", version="13", extra=""):
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: {version}\r\n{extra}\r\n").encode()


def read_head(s):
    """The HTTP response head, read byte by byte (nothing after it is taken);
    b"" when the server closed first."""
    head = b""
    while b"\r\n\r\n" not in head:
        try:
            b = s.recv(1)
        except OSError:
            return head
        if not b:
            return head
        head += b
    return head


def ws_open(port, path="/ws", version="13", after=b"", timeout=10):
    """A raw socket past the handshake (after: bytes sent in the same write as
    the request, which a client must not do). Raises ConnectionError when the
    server does not answer 101."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(handshake_bytes(port, path, version) + after)
    head = read_head(s)
    if not head.startswith(b"HTTP/1.1 101"):
        s.close()
        raise ConnectionError(f"handshake refused: {head[:80]!r}")
    return s


def frame(payload, opcode=0x1, fin=True, mask=True, length=None):
    """One client frame. length: the length to declare (default the real one)."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload) if length is None else length
    b0 = (0x80 if fin else 0) | opcode
    m = 0x80 if mask else 0
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(c ^ key[i % 4] for i, c in enumerate(payload))


def close_frame(code=None, reason=b"", raw=None):
    payload = raw if raw is not None else (struct.pack("!H", code) + reason if code else b"")
    return frame(payload, opcode=0x8)


def read_frame(s):
    """One server frame: (opcode, payload). Raises ConnectionError at EOF."""
    def need(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed")
            buf += chunk
        return buf

    b0, b1 = need(2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", need(2))[0]
    elif n == 127:
        n = struct.unpack("!Q", need(8))[0]
    if b1 & 0x80:
        raise ConnectionError("the server sent a masked frame")
    return b0 & 0x0F, need(n)


def until(s, want, timeout=5):
    """Reads frames until want(opcode, payload); returns (opcode, payload), or
    ("eof", None) when the connection ends first, ("timeout", None)."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return "timeout", None
        s.settimeout(left)
        try:
            op, data = read_frame(s)
        except socket.timeout:
            return "timeout", None
        except (OSError, ConnectionError):
            return "eof", None
        if want(op, data):
            return op, data


def close_code(s, timeout=5):
    """The code of the server's close frame (None: closed without one,
    "timeout": neither)."""
    op, data = until(s, lambda op, d: op == 0x8, timeout)
    if op == "timeout":
        return "timeout"
    if op == "eof" or len(data) < 2:
        return None
    return struct.unpack("!H", data[:2])[0]


def is_json(type_, key=None, value=None):
    def want(op, data):
        if op != 0x1:
            return False
        m = json.loads(data)
        return m.get("type") == type_ and (key is None or m.get(key) == value)
    return want


def http_get(port, raw_path, timeout=5):
    """GET raw_path exactly as given (no client-side normalisation):
    (status, body); status None when the server closed without an answer."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {raw_path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                  .encode())
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    if not data.startswith(b"HTTP/1."):
        return None, data
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def read_results(port, seconds):
    """Reads results for seconds: how many, their rate and the longest gap
    between two of them (from the first on)."""
    s = ws_open(port)
    s.sendall(frame(json.dumps({"type": "subscribe", "preview": False})))
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            op, data = read_frame(s)
        except socket.timeout:
            break
        if op == 0x1 and b'"type":"frame"' in data[:40]:
            times.append(time.monotonic())
    s.close()
    gaps = [b - a for a, b in zip(times, times[1:])]
    span = times[-1] - times[0] if len(times) > 1 else 0
    return {"results": len(times), "rate": (len(times) - 1) / span if span else 0.0,
            "max_gap": max(gaps + [end - times[-1] if times else seconds])}


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "read":
        print(json.dumps(read_results(int(sys.argv[2]), float(sys.argv[3]))), flush=True)
    else:
        sys.exit(__doc__)
