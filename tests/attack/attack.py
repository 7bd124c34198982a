"""Shared helpers of the attack suite (tests/attack/), the one home of each:
start the real trackd and watch it from /proc, run it on files, make clips
with the ffmpeg CLI, speak WebSocket and HTTP over raw sockets, record checks
and report figures.

    attack.py read PORT SECONDS   read results for SECONDS, print one JSON line:
                                  {"results": N, "rate": HZ, "max_gap": S}
                                  (start_reader runs it as its own process, so
                                  an attacker in the test process cannot slow
                                  the reader down)

The daemon start and the WebSocket client come from tests/integration
(daemon_proc.py, ws_client.py), imported, not copied. Every test prints one
line `attack: NAME key=value ...` (report()) that tests/attack/report.py
collects into docs/RELIABILITY.md; the keys it tabulates are `clients`
(clients held at once), `tried` (attacks tried), `survived` (faults
survived) and `lost_bytes`.

Under the ASan/UBSan build (ctest sets TRK_SANITIZE=1, see
tests/attack/CMakeLists.txt) RSS is not a measure of leaks: ASan's quarantine
keeps freed memory resident. Tests then skip their RSS bounds; LeakSanitizer
checks for leaks when the daemon exits, and Daemon.stop() fails on any
sanitizer report in the daemon's log.
"""
import argparse
import base64
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
# tests/integration, on the path above; re-exported for the tests.
import ws_client  # noqa: E402,F401  (connect, check_* schemas)
from daemon_proc import start_trackd, stop_trackd  # noqa: E402,F401
from ws_client import check_preview, connect  # noqa: E402,F401

SANITIZED = os.environ.get("TRK_SANITIZE") == "1"
# Tests that send control messages run trackd with this --control-token and
# connect with ?token=, so they reach the control handlers whatever the
# loopback policy for unauthenticated clients is.
TOKEN = "attack-suite-" + "t" * 20
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "SUMMARY: UndefinedBehaviorSanitizer")
# One red object, in RGB (for the synthetic clips' pure red squares) and in
# HSV (for the demo scene's red disc).
RED_RGB = {"objects": [{"name": "red", "space": "rgb", "lo": [150, 0, 0], "hi": [255, 90, 90]}]}
RED_HSV = {"objects": [{"name": "red", "space": "hsv", "lo": [346, 110, 70],
                        "hi": [14, 255, 255]}]}
FAILS = []
# Checks made so far: the `tried` figure of the tests that count each check
# as one attack.
TRIED = [0]


def check(cond, what, counted=True):
    """Records one check; the test exits 1 at the end if any failed.
    counted=False: a check of the harness, not an attack (not in TRIED)."""
    TRIED[0] += bool(counted)
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


def parse_args(**options):
    """TRACKD and --OPTION VALUE for each keyword (max_seconds: --max-seconds),
    of the keyword's type, defaulting to it."""
    ap = argparse.ArgumentParser()
    ap.add_argument("trackd")
    for name, default in options.items():
        ap.add_argument("--" + name.replace("_", "-"), type=type(default), default=default)
    return ap.parse_args()


def wait_until(pred, timeout, step=0.1):
    """Polls pred() until true or timeout; returns its last value."""
    end = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() >= end:
            return v
        time.sleep(step)


# ------------------------------------------------------------------- files

def ffmpeg(*args):
    """The ffmpeg CLI, quiet, overwriting; raises if it fails."""
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", *args], check=True)


def write_objects(d, objects, name="objects.json"):
    """An objects file in folder d; returns its path."""
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump(objects, f)
    return path


def run_file(trackd, args, log, timeout=120, **kw):
    """`trackd --no-server --fast ARGS` with stderr to the file named log;
    returns its exit status, or "timeout" (killed after timeout s). kw goes
    to subprocess.run."""
    with open(log, "w") as lf:
        try:
            return subprocess.run([trackd, "--no-server", "--fast", *args], stderr=lf,
                                  timeout=timeout, **kw).returncode
        except subprocess.TimeoutExpired:
            return "timeout"


def read_ndjson(path):
    with open(path) as f:
        return [json.loads(ln) for ln in f]


def case_attack(name, cases):
    """The frame of the tests that count one attack per case: cases(trackd,
    d, objs) runs in a temporary folder d that holds objs (an objects file
    with RED_RGB) and yields one result per case (true: survived); then the
    attack line `attack: NAME tried=N survived=N` and the exit status."""
    with tempfile.TemporaryDirectory() as d:
        results = [bool(ok) for ok in cases(sys.argv[1], d, write_objects(d, RED_RGB))]
    report(name, tried=len(results), survived=sum(results))
    finish()


# ------------------------------------------------------------------ daemon

class Daemon:
    """The real trackd on a free loopback port, stderr to DIR/trackd.log.
    token: run with --control-token TOKEN; self.path is the WebSocket path
    that authenticates (ws_open(dm.port, dm.path)). As a context manager it
    stops the daemon at the end and checks that it exited 0."""

    def __init__(self, trackd, args, d, token=None):
        self.log_path = os.path.join(d, "trackd.log")
        self.log = open(self.log_path, "w+")
        if token:
            args = [*args, "--control-token", token]
        self.path = f"/ws?token={token}" if token else "/ws"
        self.p, self.port = start_trackd(trackd, args, self.log)
        self.pid = self.p.pid
        self.url = f"ws://127.0.0.1:{self.port}/ws"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        rc = self.stop()
        check(rc == 0, f"trackd exits 0 on SIGTERM (exit {rc})")
        if FAILS:
            print(self.log_text()[-3000:])
        return False

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
            check(False, f"trackd did not stop within {timeout} s of signal {sig}", False)
        text = self.log_text()
        bad = [m for m in SANITIZER_MARKS if m in text]
        check(not bad, f"no sanitizer report in the daemon's log {bad or ''}", False)
        if bad:
            i = min(text.find(m) for m in bad)
            print(text[max(0, i - 200):i + 3000])
        check(rc >= 0, f"trackd ended by itself, not by signal {-rc if rc < 0 else ''}", False)
        return rc


# --------------------------------------------------- raw WebSocket (RFC 6455)
# Hand-built frames, including the ones a real client library refuses to
# send (unmasked, bad close codes, lying lengths).

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


def ws_open(port, path="/ws", version="13", after=b"", rcvbuf=None, timeout=10):
    """A raw socket that has completed the WebSocket handshake; nothing after
    the response is consumed. after: bytes sent in the same write as the
    request (which a client must not do). rcvbuf: a small SO_RCVBUF for
    clients that are meant to stall. Raises ConnectionError when the server
    does not answer 101."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    s.sendall(handshake_bytes(port, path, version) + after)
    head = read_head(s)
    if not head.startswith(b"HTTP/1.1 101"):
        s.close()
        raise ConnectionError(f"handshake refused: {head[:80]!r}")
    return s


def xor_mask(data, key):
    """data XOR the repeated 4-byte key, as one big-integer operation (a
    byte loop takes a second per MiB)."""
    if not data:
        return b""
    k = (key * (len(data) // 4 + 1))[:len(data)]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(len(data), "big")


def ws_frame(payload, opcode=0x1, fin=True, mask=True, length=None):
    """One client frame (masked, as clients must, unless mask=False).
    length: the length to declare (default the real one)."""
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
    return head + key + xor_mask(payload, key)


def close_frame(code=None, reason=b"", raw=None):
    payload = raw if raw is not None else (struct.pack("!H", code) + reason if code else b"")
    return ws_frame(payload, opcode=0x8)


def ws_send_json(s, obj):
    s.sendall(ws_frame(json.dumps(obj)))


def ws_read_frame(s):
    """One server frame: (opcode, payload). Raises ConnectionError at EOF and
    on a masked frame (a server must not mask)."""

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
            op, data = ws_read_frame(s)
        except socket.timeout:
            return "timeout", None
        except (OSError, ConnectionError):
            return "eof", None
        if want(op, data):
            return op, data


def ws_read_json_until(s, pred, timeout=10):
    """Reads frames until a text message m with pred(m); returns m, or None
    on timeout or close."""
    got = []

    def want(op, data):
        if op == 0x1:
            m = json.loads(data)
            if pred(m):
                got.append(m)
                return True
        return op == 0x8

    until(s, want, timeout)
    return got[0] if got else None


def close_code(s, timeout=5):
    """The code of the server's close frame (None: closed without one,
    "timeout": neither)."""
    op, data = until(s, lambda op, d: op == 0x8, timeout)
    if op == "timeout":
        return "timeout"
    if op == "eof" or len(data) < 2:
        return None
    return struct.unpack("!H", data[:2])[0]


def close_answer(port, frames):
    """Sends the frames (bytes each) on a new connection, stopping at the
    first the server refuses (it may close first); returns (the code of the
    server's close frame as close_code() gives it, how many frames went
    out)."""
    s = ws_open(port)
    sent = 0
    try:
        for f in frames:
            s.sendall(f)
            sent += 1
    except OSError:
        pass
    got = close_code(s)
    s.close()
    return got, sent


def is_json(type_, key=None, value=None):
    """A want() for until(): a text message of this type (and key == value)."""
    def want(op, data):
        if op != 0x1:
            return False
        m = json.loads(data)
        return m.get("type") == type_ and (key is None or m.get(key) == value)
    return want


def abort(s):
    """Closes with a TCP reset (SO_LINGER 0): a client that vanishes."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()


def http_get(port, raw_path, timeout=5, source=None):
    """GET raw_path exactly as given (no client-side normalisation):
    (status, body); status None when the server closed without an answer.
    source: the local address to connect from (another loopback one)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
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


# ----------------------------------------------------------- result readers

class Reader(threading.Thread):
    """A client (a thread) that reads everything (previews off); keeps frame
    seqs and times and the latest stats. Subclasses see the other messages
    in other(m)."""

    def __init__(self, port, path="/ws"):
        super().__init__(daemon=True)
        self.s = ws_open(port, path)
        ws_send_json(self.s, {"type": "subscribe", "preview": False})
        self.seqs, self.times, self.stats = [], [], None
        self.error = None
        self.stop = threading.Event()

    def run(self):
        self.s.settimeout(1.0)
        try:
            while not self.stop.is_set():
                try:
                    op, data = ws_read_frame(self.s)
                except socket.timeout:
                    continue
                if op != 0x1:
                    continue
                m = json.loads(data)
                if m.get("type") == "frame":
                    self.seqs.append(m["seq"])
                    self.times.append(time.monotonic())
                elif m.get("type") == "stats":
                    self.stats = m
                else:
                    self.other(m)
        except Exception as e:  # noqa: BLE001 - reported by the checks
            self.error = repr(e)

    def other(self, m):
        pass

    def frames_since(self, t):
        return sum(1 for x in self.times if x >= t)


def read_results(port, seconds):
    """Reads results for seconds: how many, their rate, the longest gap
    between two of them (from the first on), and the first and last frame's
    seq (a lossless source numbers every frame it makes: last - first + 1
    results were published meanwhile)."""
    s = ws_open(port)
    s.sendall(ws_frame(json.dumps({"type": "subscribe", "preview": False})))
    times, seqs = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            op, data = ws_read_frame(s)
        except socket.timeout:
            break
        if op == 0x1 and b'"type":"frame"' in data[:40]:
            times.append(time.monotonic())
            m = re.search(rb'"seq":(\d+)', data[:200])
            if m:
                seqs.append(int(m.group(1)))
    s.close()
    gaps = [b - a for a, b in zip(times, times[1:])]
    span = times[-1] - times[0] if len(times) > 1 else 0
    return {"results": len(times), "rate": (len(times) - 1) / span if span else 0.0,
            "max_gap": max(gaps + [end - times[-1] if times else seconds]),
            "first_seq": seqs[0] if seqs else None, "last_seq": seqs[-1] if seqs else None}


def start_reader(port, seconds):
    """read_results in its own process, started now; returns a function that
    waits for it and gives its figures."""
    r = subprocess.Popen([sys.executable, os.path.abspath(__file__), "read", str(port),
                          str(seconds)], stdout=subprocess.PIPE, text=True)
    return lambda: json.loads(r.communicate(timeout=60)[0].strip().splitlines()[-1])


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "read":
        print(json.dumps(read_results(int(sys.argv[2]), float(sys.argv[3]))), flush=True)
    else:
        sys.exit(__doc__)
