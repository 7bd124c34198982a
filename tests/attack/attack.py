"""Shared helpers of the attack suite (tests/attack/): start the real trackd,
watch it from /proc, speak WebSocket over raw sockets, report figures.

The daemon start and the WebSocket client come from tests/integration
(daemon_proc.py, ws_client.py), imported, not copied. Every test prints one
line `attack: NAME key=value ...` that tests/attack/report.py collects into
docs/RELIABILITY.md; the keys it tabulates are `clients` (clients held at
once), `tried` (attacks tried), `survived` (faults survived) and `lost_bytes`.

Under the ASan/UBSan build (ctest sets TRK_SANITIZE=1, see
tests/attack/CMakeLists.txt) RSS is not a measure of leaks: ASan's quarantine
keeps freed memory resident. Tests then skip their RSS bounds; LeakSanitizer
checks for leaks when the daemon exits, and stop() fails on any sanitizer
report in the daemon's log.
"""
import base64
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import daemon_proc  # noqa: E402  (tests/integration, on the path above)
import ws_client  # noqa: E402,F401  (re-exported for the tests: connect, check_* schemas)

SANITIZED = os.environ.get("TRK_SANITIZE") == "1"
# Tests that send control messages run trackd with this --control-token and
# connect with ?token=, so they reach the control handlers whatever the
# loopback policy for unauthenticated clients is.
TOKEN = "attack-suite-" + "t" * 20
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: UndefinedBehaviorSanitizer")
FAILS = []


def check(cond, what):
    """Records one check; the test exits 1 at the end if any failed."""
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)
    return cond


def report(name, **figures):
    """The one line report.py collects: `attack: NAME key=value ...`."""
    print(f"attack: {name} " + " ".join(f"{k}={v}" for k, v in figures.items()), flush=True)


def finish():
    if FAILS:
        print(f"{len(FAILS)} check(s) failed:", *FAILS, sep="\n  ")
        sys.exit(1)
    print("all checks passed")


# ------------------------------------------------------------------ daemon

class Daemon:
    """The real trackd on a free loopback port, stderr to DIR/trackd.log.
    token: run with --control-token TOKEN; self.path is the WebSocket path
    that authenticates (ws_open(dm.port, dm.path))."""

    def __init__(self, trackd, args, d, token=None):
        self.log_path = os.path.join(d, "trackd.log")
        self.log = open(self.log_path, "w+")
        if token:
            args = [*args, "--control-token", token]
        self.path = f"/ws?token={token}" if token else "/ws"
        self.p, self.port = daemon_proc.start_trackd(trackd, args, self.log)
        self.pid = self.p.pid
        self.url = f"ws://127.0.0.1:{self.port}/ws"

    def alive(self):
        return self.p.poll() is None

    def rss_kb(self):
        """Resident memory now, from /proc/PID/status (VmRSS)."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc status")

    def fds(self):
        """Open file descriptors now, from /proc/PID/fd."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops the daemon; returns its exit status. A sanitizer report in
        its log or a death by signal fails the test."""
        if self.alive():
            self.p.send_signal(sig)
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
            check(False, f"trackd did not stop within {timeout} s of signal {sig}")
        text = self.log_text()
        bad = [m for m in SANITIZER_MARKS if m in text]
        check(not bad, f"no sanitizer report in the daemon's log {bad or ''}")
        if bad:
            i = min(text.find(m) for m in bad)
            print(text[max(0, i - 200):i + 3000])
        check(rc >= 0, f"trackd ended by itself, not by signal {-rc if rc < 0 else ''}")
        return rc


# --------------------------------------------------- raw WebSocket (RFC 6455)

def ws_open(port, path="/ws", rcvbuf=None, timeout=10):
    """A raw socket that has completed the WebSocket handshake. The response
    is read byte by byte, so nothing after it is consumed. rcvbuf: a small
    SO_RCVBUF for clients that are meant to stall."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            s.close()
            raise ConnectionError(f"closed during the handshake: {head[:80]!r}")
        head += b
    if not head.startswith(b"HTTP/1.1 101"):
        s.close()
        raise ConnectionError(f"handshake refused: {head[:80]!r}")
    return s


def ws_frame(payload, opcode=0x1, fin=True, mask=True):
    """One client frame (masked, as clients must)."""
    if isinstance(payload, str):
        payload = payload.encode()
    n = len(payload)
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
    return head + key + xor_mask(payload, key)


def xor_mask(data, key):
    """data XOR the repeated 4-byte key, as one big-integer operation (a
    byte loop takes a second per MiB)."""
    if not data:
        return b""
    k = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(len(data), "big")


def ws_send_json(s, obj):
    s.sendall(ws_frame(json.dumps(obj)))


def ws_read_frame(s):
    """Reads one server frame: (opcode, payload). Raises on EOF."""

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
    key = need(4) if b1 & 0x80 else None
    data = need(n)
    if key:
        data = xor_mask(data, key)
    return b0 & 0x0F, data


def ws_read_json_until(s, pred, timeout=10):
    """Reads frames until a text message m with pred(m); returns m, or None
    on timeout or close."""
    end = time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            s.settimeout(max(0.01, end - time.monotonic()))
            op, data = ws_read_frame(s)
            if op == 0x1:
                m = json.loads(data)
                if pred(m):
                    return m
            elif op == 0x8:
                return None
    except (OSError, ConnectionError):
        return None
    return None


def abort(s):
    """Closes with a TCP reset (SO_LINGER 0): a client that vanishes."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def wait_until(pred, timeout, step=0.1):
    """Polls pred() until true or timeout; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)
