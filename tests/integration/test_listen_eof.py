#!/usr/bin/python3
"""Integration: where the real trackd listens, the stats it sends, and how it
says goodbye, with real WebSocket clients (Debian's python3-websockets).

  1. --listen localhost:PORT, 127.0.0.2:PORT and [::1]:PORT serve the page and
     the WebSocket, and count as loopback: control messages need no token,
     and the announced URL carries none;
  2. --listen on an address this host does not have, a name that does not
     resolve, or a port another program listens on: exit 69 at once, the
     message naming the address and the reason;
  3. --listen 0.0.0.0:PORT: the "web UI on" line is a clickable URL with
     ?token=TOKEN, and that token (read back from the URL) unlocks control;
  4. --stats-interval 0: no stats log lines, but WebSocket "stats" still come;
  5. SIGTERM with a client connected: the client gets close code 1001;
  6. the end of a file (no --loop): a client gets a "status" eof, then a close
     frame 1000 "end of input"; a second client that never reads cannot keep
     the daemon alive: trackd exits 0 while that client still holds its
     connection.
"""
import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import websockets

from daemon_proc import free_port, stop_trackd as stop

TRACKD = sys.argv[1]
FAILS = []
DEMO = ["--size", "320x180", "--backend", "cpu", "--no-preview"]


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def bindable(family, addr):
    """Whether this host can bind addr (a probe for optional cases)."""
    try:
        with socket.socket(family) as s:
            s.bind((addr, 0))
        return True
    except OSError:
        return False


def wait_log(path, pattern, timeout=10):
    """The first match of pattern in the log file, waiting for it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(path) as f:
            m = re.search(pattern, f.read())
        if m:
            return m
        time.sleep(0.1)
    return None


def start(listen, args, log_path, connect_host):
    """trackd --listen LISTEN ARGS; returns the process once connect_host
    accepts on the port (None if it exited or never did)."""
    port = int(listen.rsplit(":", 1)[1])
    with open(log_path, "w") as log:
        p = subprocess.Popen([TRACKD, "--listen", listen, *args], stdout=subprocess.DEVNULL,
                             stderr=log)
    end = time.monotonic() + 10
    while time.monotonic() < end and p.poll() is None:
        try:
            socket.create_connection((connect_host, port), 0.2).close()
            return p
        except OSError:
            time.sleep(0.1)
    return p if p.poll() is None else None


async def recv_until(ws, pred, timeout=5):
    """The first JSON message that satisfies pred, or None."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        try:
            raw = await asyncio.wait_for(ws.recv(), left)
        except (asyncio.TimeoutError, websockets.ConnectionClosed):
            return None
        if isinstance(raw, str):
            m = json.loads(raw)
            if pred(m):
                return m
    return None


async def control_reply(url):
    """Connects, sends get_objects, returns the reply type (or error code)."""
    async with websockets.connect(url, ping_interval=None, open_timeout=5) as ws:
        hello = await recv_until(ws, lambda m: True)
        if not hello or hello.get("type") != "hello":
            return f"no hello: {hello!r}"
        await ws.send(json.dumps({"type": "get_objects", "id": "g"}))
        r = await recv_until(ws, lambda m: m.get("id") == "g")
        return r and (r.get("code") if r.get("type") == "error" else r.get("type"))


def loopback_cases(d):
    cases = [("localhost", "127.0.0.1", socket.AF_INET),
             ("127.0.0.2", "127.0.0.2", socket.AF_INET),
             ("[::1]", "::1", socket.AF_INET6)]
    for host, connect_host, family in cases:
        if not bindable(family, connect_host):
            print(f"SKIP: --listen {host}: this host cannot bind {connect_host}")
            continue
        port = free_port()
        log = os.path.join(d, "loop.log")
        p = start(f"{host}:{port}", DEMO + ["--stats-interval", "0"], log, connect_host)
        try:
            check(p is not None, f"--listen {host}:{port} accepts connections on {connect_host}")
            if not p:
                continue
            netloc = f"[{connect_host}]:{port}" if ":" in connect_host else f"{connect_host}:{port}"
            with urllib.request.urlopen(f"http://{netloc}/", timeout=10) as r:
                check(r.status == 200 and b"<html" in r.read().lower(),
                      f"--listen {host}: the page is served")
            reply = asyncio.run(control_reply(f"ws://{netloc}/ws"))
            check(reply == "objects", f"--listen {host} is loopback: control needs no token "
                                      f"(got {reply!r})")
            m = wait_log(log, r"web UI on (\S+)")
            check(m and "token=" not in m.group(1) and f":{port}/" in m.group(1),
                  f"--listen {host}: the announced URL has the port and no token "
                  f"({m and m.group(1)})")
        finally:
            stop(p)


def failing_cases(d):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    tport = taken.getsockname()[1]
    port = free_port()
    cases = [(f"127.0.0.1:{tport}", "Address already in use"),
             (f"nosuchhost.invalid:{port}", "nosuchhost.invalid")]
    if bindable(socket.AF_INET, "10.99.99.99"):
        print("SKIP: 10.99.99.99 is an address of this host")
    else:
        cases.append((f"10.99.99.99:{port}", "Cannot assign requested address"))
    for listen, reason in cases:
        t0 = time.monotonic()
        try:
            r = subprocess.run([TRACKD, "--listen", listen, *DEMO], capture_output=True,
                               text=True, timeout=20)
            rc, err = r.returncode, r.stderr
        except subprocess.TimeoutExpired as e:
            rc, err = "still running after 20 s", (e.stderr or b"").decode()
        check(rc == 69, f"--listen {listen}: exit 69 (got {rc})")
        check(listen in err and reason in err,
              f"--listen {listen}: the message names the address and says {reason!r}: "
              f"{err.strip().splitlines()[-1:]}")
        check("web UI on" not in err, f"--listen {listen}: no 'web UI on' line")
        print(f"   ({time.monotonic() - t0:.1f} s)")
    taken.close()


def token_url_case(d):
    port = free_port()
    log = os.path.join(d, "any.log")
    p = start(f"0.0.0.0:{port}", DEMO + ["--stats-interval", "0"], log, "127.0.0.1")
    try:
        check(p is not None, "--listen 0.0.0.0 accepts connections")
        m = wait_log(log, r"web UI on (\S+)")
        check(m is not None, "the web UI line is printed")
        if not (p and m):
            return
        url = urllib.parse.urlsplit(m.group(1))
        token = urllib.parse.parse_qs(url.query).get("token", [""])[0]
        check(url.scheme == "http" and url.port == port and re.fullmatch(r"[0-9a-f]{32}", token),
              f"the URL is http://HOST:{port}/?token=<32 hex digits>: {m.group(1)}")
        reply = asyncio.run(control_reply(f"ws://127.0.0.1:{port}/ws"))
        check(reply == "unauthorized", f"without the token control is refused ({reply!r})")
        reply = asyncio.run(control_reply(f"ws://127.0.0.1:{port}/ws?token={token}"))
        check(reply == "objects", f"the URL's token unlocks control ({reply!r})")
    finally:
        stop(p)


async def stats_and_sigterm(p, port, log):
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", ping_interval=None) as ws:
        st = await recv_until(ws, lambda m: m.get("type") == "stats", timeout=8)
        check(st is not None and st.get("frames", 0) > 0 and st.get("clients", 0) >= 1,
              f"--stats-interval 0: WebSocket stats still come ({st and {k: st.get(k) for k in ('fps', 'frames', 'clients')}})")
        with open(log) as f:
            text = f.read()
        check(not re.search(r"pipeline: [\d.]+ fps, \d+ frames", text),
              "--stats-interval 0: no stats lines in the log")
        p.send_signal(signal.SIGTERM)
        await recv_until(ws, lambda m: False, timeout=10)
        check(ws.close_code == 1001, f"SIGTERM: the client gets close code 1001 "
                                     f"(got {ws.close_code}, {ws.close_reason!r})")


def stats_case(d):
    port = free_port()
    log = os.path.join(d, "stats.log")
    p = start(f"127.0.0.1:{port}", DEMO + ["--stats-interval", "0"], log, "127.0.0.1")
    try:
        check(p is not None, "demo with --stats-interval 0 starts")
        if p:
            asyncio.run(stats_and_sigterm(p, port, log))
            check(p.wait(10) == 0, f"SIGTERM: exit 0 (got {p.returncode})")
    finally:
        stop(p)


def stalled_client(port):
    """Connects, subscribes to previews, then never reads (small receive
    buffer); returns the socket, which stays open until closed."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
               "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)  # byte by byte: nothing past the handshake is read
        if not chunk:
            break
        head += chunk
    payload = json.dumps({"type": "subscribe", "preview": True}).encode()
    mask = os.urandom(4)
    s.sendall(bytes([0x81, 0x80 | len(payload)]) + mask
              + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
    return s, head.startswith(b"HTTP/1.1 101")


async def eof_client(port):
    seen = []
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", ping_interval=None,
                                  max_size=None) as ws:
        try:
            async for raw in ws:
                if isinstance(raw, str):
                    m = json.loads(raw)
                    seen.append((m.get("type"), m.get("source")))
        except websockets.ConnectionClosed:
            pass
        return seen, ws.close_code, ws.close_reason


def eof_case(d):
    clip = os.path.join(d, "clip.mp4")
    # Noise compresses badly: the previews fill the stalled client's buffers.
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "nullsrc=s=640x360:r=30,geq=lum=random(1)*255:cb=128:cr=128", "-t", "3",
                    "-pix_fmt", "yuv420p", clip], check=True, timeout=120)
    port = free_port()
    log = os.path.join(d, "eof.log")
    p = start(f"127.0.0.1:{port}", ["--input", clip, "--backend", "cpu", "--preview-fps", "30",
                                    "--preview-quality", "95"], log, "127.0.0.1")
    stalled = None
    try:
        check(p is not None, "file source with a server starts")
        if not p:
            return
        stalled, ok = stalled_client(port)
        check(ok, "the stalled client completed its handshake")
        seen, code, reason = asyncio.run(eof_client(port))
        statuses = [s for t, s in seen if t == "status"]
        check(statuses[-1:] == ["eof"], f"the last status before the close is eof ({statuses})")
        check(seen and seen[-1] == ("status", "eof"), f"nothing after the eof status: {seen[-3:]}")
        check(code == 1000 and reason == "end of input",
              f"a close frame 1000 'end of input' (got {code}, {reason!r})")
        try:
            rc = p.wait(20)
        except subprocess.TimeoutExpired:
            rc = "still running 20 s after the close"
        check(rc == 0, f"trackd exits 0 while a client that never reads is connected (got {rc})")
        # It can never answer the close frame, so the wait must have run out.
        check(wait_log(log, r"1 client\(s\) did not finish closing", 1) is not None,
              "the log says the stalled client was dropped")
    finally:
        if stalled:
            stalled.close()
        stop(p)
        with open(log) as f:
            print("   log tail:", f.read().strip().splitlines()[-2:])


def main():
    with tempfile.TemporaryDirectory() as d:
        loopback_cases(d)
        failing_cases(d)
        token_url_case(d)
        stats_case(d)
        eof_case(d)
    if FAILS:
        sys.exit(f"FAIL: {len(FAILS)} check(s) failed:\n  " + "\n  ".join(FAILS))
    print("listen/stats/eof: all passed")


if __name__ == "__main__":
    main()
