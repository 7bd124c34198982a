#!/usr/bin/python3
"""A real WebSocket client for trackd: measures, checks the wire protocol.

Run with Debian's /usr/bin/python3 (python3-websockets). Modes:

  measure (default)  connect, check the hello, read for --duration seconds:
                     counts, rates, seq order, schema (--check-schema),
                     previews, latency (client clock - wall_ms).
  --stall            connect, subscribe (previews on), then never read, with
                     a small receive buffer, for --duration seconds.
  --protocol-tests   subprotocols, path rejection, error replies for bad
                     input, fragmentation, ping/pong, subscribe on/off,
                     control message round trip; the connection must stay
                     usable throughout.
  --http-check       GET / over HTTP: 200 and an HTML page (--expect-text).

Exit status: 0 all checks passed, 1 a check failed, 2 could not connect.
--json-report FILE writes what was measured (see report() below).

Usable against the test harness and against the real daemon, e.g.
  ws_client.py --url ws://127.0.0.1:8080/ws --duration 5 --expect-min 100 \
      --check-schema --json-report out.json
"""

import argparse
import asyncio
import base64
import json
import math
import os
import socket
import struct
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import websockets

PROTOCOL_VERSION = 1
PREVIEW_MAGIC = b"TRKP"
PREVIEW_HDR = 20


class Failures:
    """Collects check failures; a few examples of each kind are kept."""

    def __init__(self):
        self.items = []
        self.counts = {}

    def add(self, kind, text):
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.counts[kind] <= 5:
            self.items.append(f"{kind}: {text}")

    def __bool__(self):
        return bool(self.counts)


# ----------------------------------------------------------------- schema

def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(v))


def check_object_def(o, where):
    errs = []
    if not isinstance(o, dict):
        return [f"{where}: not an object"]
    if not is_int(o.get("id")) or o["id"] < 0:
        errs.append(f"{where}.id: {o.get('id')!r}")
    if not isinstance(o.get("name"), str):
        errs.append(f"{where}.name: {o.get('name')!r}")
    if o.get("space") not in ("rgb", "hsv", "ycbcr"):
        errs.append(f"{where}.space: {o.get('space')!r}")
    for k in ("lo", "hi"):
        v = o.get(k)
        if not (isinstance(v, list) and len(v) == 3 and all(is_int(x) and x >= 0 for x in v)):
            errs.append(f"{where}.{k}: {v!r}")
    if not is_int(o.get("min_mass")) or o["min_mass"] < 1:
        errs.append(f"{where}.min_mass: {o.get('min_mass')!r}")
    c = o.get("color")
    if not (isinstance(c, str) and len(c) == 7 and c[0] == "#"
            and all(ch in "0123456789abcdefABCDEF" for ch in c[1:])):
        errs.append(f"{where}.color: {c!r}")
    return errs


def check_hello(m):
    errs = []
    if m.get("version") != PROTOCOL_VERSION:
        errs.append(f"hello.version: {m.get('version')!r}")
    if not (isinstance(m.get("server"), str) and m["server"].startswith("trackd")):
        errs.append(f"hello.server: {m.get('server')!r}")
    for k in ("backend", "source"):
        if not isinstance(m.get(k), (str, type(None))):
            errs.append(f"hello.{k}: {m.get(k)!r}")
    for k in ("width", "height"):
        if not is_int(m.get(k)) or m[k] < 0:
            errs.append(f"hello.{k}: {m.get(k)!r}")
    p = m.get("preview")
    if not isinstance(p, dict) or not isinstance(p.get("enabled"), bool):
        errs.append(f"hello.preview: {p!r}")
    objs = m.get("objects")
    if not isinstance(objs, list):
        errs.append(f"hello.objects: {objs!r}")
    else:
        for i, o in enumerate(objs):
            errs += check_object_def(o, f"hello.objects[{i}]")
    return errs


def check_frame(m, objects_by_id):
    """objects_by_id: id -> object definition from the hello (for min_mass)."""
    errs = []
    if not is_int(m.get("seq")) or m["seq"] < 0:
        errs.append(f"seq: {m.get('seq')!r}")
    for k in ("pts", "t_capture", "wall_ms"):
        if not is_num(m.get(k)):
            errs.append(f"{k}: {m.get(k)!r}")
    w, h = m.get("width"), m.get("height")
    if not is_int(w) or w <= 0 or not is_int(h) or h <= 0:
        errs.append(f"size: {w!r}x{h!r}")
        w = h = None
    lat = m.get("latency")
    if not isinstance(lat, dict):
        errs.append(f"latency: {lat!r}")
    else:
        for k in ("queue_ms", "upload_ms", "kernel_ms", "process_ms", "backend_ms"):
            if not is_num(lat.get(k)) or lat[k] < 0:
                errs.append(f"latency.{k}: {lat.get(k)!r}")
        # The backend's calls are part of processing (both rounded to 3 decimals).
        if is_num(lat.get("backend_ms")) and is_num(lat.get("process_ms")) \
                and lat["backend_ms"] > lat["process_ms"] + 0.0015:
            errs.append(f"latency.backend_ms {lat['backend_ms']} > process_ms {lat['process_ms']}")
    objs = m.get("objects")
    if not isinstance(objs, list):
        return errs + [f"objects: {objs!r}"]
    for i, o in enumerate(objs):
        where = f"objects[{i}]"
        if not isinstance(o, dict):
            errs.append(f"{where}: not an object")
            continue
        if o.get("id") != i:
            errs.append(f"{where}.id: {o.get('id')!r}")
        if not isinstance(o.get("name"), str):
            errs.append(f"{where}.name: {o.get('name')!r}")
        mass = o.get("mass")
        if not is_int(mass) or mass < 0:
            errs.append(f"{where}.mass: {mass!r}")
            continue
        if not isinstance(o.get("found"), bool):
            errs.append(f"{where}.found: {o.get('found')!r}")
        d = objects_by_id.get(i)
        if d is not None and isinstance(o.get("found"), bool):
            if o["found"] != (mass >= d.get("min_mass", 1)):
                errs.append(f"{where}.found={o['found']} with mass {mass}, "
                            f"min_mass {d.get('min_mass')}")
        if mass == 0:
            if o.get("found") is True:
                errs.append(f"{where}: found with mass 0")
            for k in ("cx", "cy", "bbox"):
                if k not in o or o[k] is not None:
                    errs.append(f"{where}.{k} must be null when mass is 0: {o.get(k)!r}")
            continue
        cx, cy, bb = o.get("cx"), o.get("cy"), o.get("bbox")
        if not is_num(cx) or not is_num(cy):
            errs.append(f"{where}.cx/cy: {cx!r}, {cy!r}")
            continue
        if not (isinstance(bb, list) and len(bb) == 4 and all(is_int(v) for v in bb)):
            errs.append(f"{where}.bbox: {bb!r}")
            continue
        x0, y0, x1, y1 = bb
        if not (0 <= x0 <= x1 and 0 <= y0 <= y1):
            errs.append(f"{where}.bbox order: {bb!r}")
        if w is not None and (x1 >= w or y1 >= h):
            errs.append(f"{where}.bbox outside {w}x{h}: {bb!r}")
        # Centroid inside the box (2-decimal rounding may touch the edges).
        if not (x0 - 0.005 <= cx <= x1 + 0.005 and y0 - 0.005 <= cy <= y1 + 0.005):
            errs.append(f"{where}: centroid ({cx}, {cy}) outside bbox {bb!r}")
        if mass > (x1 - x0 + 1) * (y1 - y0 + 1):
            errs.append(f"{where}: mass {mass} larger than bbox area")
    return errs


def check_stats(m):
    errs = []
    for k in ("fps", "uptime_s"):
        if not is_num(m.get(k)):
            errs.append(f"stats.{k}: {m.get(k)!r}")
    for k in ("frames", "drops", "clients"):
        if not is_int(m.get(k)) or m[k] < 0:
            errs.append(f"stats.{k}: {m.get(k)!r}")
    if not isinstance(m.get("latency_median"), dict):
        errs.append(f"stats.latency_median: {m.get('latency_median')!r}")
    return errs


def check_status(m):
    if m.get("source") not in ("ok", "lost", "eof", "error"):
        return [f"status.source: {m.get('source')!r}"]
    if not isinstance(m.get("message"), (str, type(None))):
        return [f"status.message: {m.get('message')!r}"]
    return []


def check_error(m):
    errs = []
    if not isinstance(m.get("code"), str) or not m["code"]:
        errs.append(f"error.code: {m.get('code')!r}")
    if not isinstance(m.get("message"), str):
        errs.append(f"error.message: {m.get('message')!r}")
    return errs


def check_preview(data, frame_seqs):
    """Checks a binary preview message; returns (errors, seq)."""
    if len(data) < PREVIEW_HDR + 4 or data[:4] != PREVIEW_MAGIC:
        return [f"preview header: {data[:8]!r}"], None
    seq, pw, ph, fw, fh = struct.unpack_from("<QHHHH", data, 4)
    errs = []
    if pw == 0 or ph == 0 or fw == 0 or fh == 0:
        errs.append(f"preview sizes {pw}x{ph} of {fw}x{fh}")
    jpeg = data[PREVIEW_HDR:]
    if jpeg[:2] != b"\xff\xd8" or jpeg[-2:] != b"\xff\xd9":
        errs.append("preview payload is not a complete JPEG (SOI..EOI)")
    return errs, seq


# ----------------------------------------------------------------- helpers

def percentile(values, p):
    if not values:
        return None
    v = sorted(values)
    k = min(len(v) - 1, max(0, int(math.ceil(p / 100.0 * len(v))) - 1))
    return v[k]


async def connect(url, subprotocol=None, **kw):
    args = dict(max_size=16 * 1024 * 1024, compression=None, open_timeout=10,
                ping_interval=None, close_timeout=2)
    if subprotocol:
        args["subprotocols"] = [subprotocol]
    args.update(kw)
    return await websockets.connect(url, **args)


async def recv_json_until(ws, pred, timeout, seen=None):
    """Reads messages until pred(msg) for a JSON text message; returns it or
    None on timeout. Other messages are appended to seen (if a list)."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        try:
            raw = await asyncio.wait_for(ws.recv(), timeout=left)
        except asyncio.TimeoutError:
            return None
        if isinstance(raw, str):
            m = json.loads(raw)
            if pred(m):
                return m
            if seen is not None:
                seen.append(m)
        elif seen is not None:
            seen.append(raw)


# ----------------------------------------------------------------- measure

async def measure(args, fails):
    rep = {"url": args.url, "mode": "measure", "subprotocol": args.subprotocol}
    try:
        ws = await connect(args.url, args.subprotocol)
    except Exception as e:  # noqa: BLE001 - any failure to connect is reported
        rep["connect_error"] = repr(e)
        return rep, 2
    counts = {}
    seqs = []
    recv_times = []
    latencies = []
    preview_seqs = []
    objects_by_id = {}
    hello = None
    last_ws = None
    first = True
    t0 = time.monotonic()
    try:
        if args.no_preview:
            await ws.send(json.dumps({"type": "subscribe", "preview": False}))
        await ws.send(json.dumps({"type": "ping", "id": "measure-ping"}))
        pong_seen = False
        end = t0 + args.duration
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=left)
            except asyncio.TimeoutError:
                break
            now_wall = time.time() * 1e3
            now = time.monotonic()
            if isinstance(raw, bytes):
                counts["preview"] = counts.get("preview", 0) + 1
                errs, pseq = check_preview(raw, None)
                for e in errs:
                    fails.add("preview", e)
                if pseq is not None:
                    preview_seqs.append(pseq)
                first = False
                continue
            try:
                m = json.loads(raw)
            except ValueError as e:
                fails.add("json", f"{e}: {raw[:80]!r}")
                continue
            t = m.get("type") if isinstance(m, dict) else None
            counts[t] = counts.get(t, 0) + 1
            if first and t != "hello":
                fails.add("hello", f"first message is {t!r}, not hello")
            first = False
            errs = []
            if t == "hello":
                hello = m
                errs = check_hello(m)
                objects_by_id = {o.get("id"): o for o in m.get("objects", [])
                                 if isinstance(o, dict)}
            elif t == "frame":
                if args.check_schema:
                    errs = check_frame(m, objects_by_id)
                s = m.get("seq")
                if is_int(s):
                    if seqs and s <= seqs[-1]:
                        fails.add("seq", f"seq {s} after {seqs[-1]}")
                    seqs.append(s)
                    recv_times.append(now)
                if is_num(m.get("wall_ms")):
                    latencies.append(now_wall - m["wall_ms"])
            elif t == "stats":
                errs = check_stats(m)
                if isinstance(m.get("ws"), dict):
                    last_ws = m["ws"]
            elif t == "status":
                errs = check_status(m)
            elif t == "error":
                errs = check_error(m)
                fails.add("server-error", json.dumps(m)[:200])
            elif t == "pong":
                pong_seen = pong_seen or m.get("id") == "measure-ping"
            if args.check_schema:
                for e in errs:
                    fails.add("schema", e)
        if not pong_seen:
            fails.add("pong", "no pong for the ping sent at connect")
    except websockets.ConnectionClosed as e:
        fails.add("closed", f"connection closed early: {e}")
    finally:
        await ws.close()
    n = len(seqs)
    rep.update({
        "hello": hello,
        "counts": counts,
        "results": n,
        "seq_first": seqs[0] if seqs else None,
        "seq_last": seqs[-1] if seqs else None,
        "seq_span": (seqs[-1] - seqs[0] + 1) if seqs else 0,
        "seq_missing": (seqs[-1] - seqs[0] + 1 - n) if seqs else 0,
        "rate_hz": ((n - 1) / (recv_times[-1] - recv_times[0])
                    if n > 1 and recv_times[-1] > recv_times[0] else 0.0),
        # Longest wait between two results: a stream that stops shows here
        # whatever the machine's speed.
        "max_gap_s": max((b - a for a, b in zip(recv_times, recv_times[1:])), default=None),
        "last_stats_ws": last_ws,
        "previews": len(preview_seqs),
        "latency_ms": {
            "median": percentile(latencies, 50),
            "p99": percentile(latencies, 99),
            "max": max(latencies) if latencies else None,
        },
        "duration_s": time.monotonic() - t0,
    })
    if hello is None:
        fails.add("hello", "no hello received")
    if args.expect_min is not None and n < args.expect_min:
        fails.add("count", f"{n} results, expected at least {args.expect_min}")
    return rep, 0


# ------------------------------------------------------------------- stall

def stall(args, fails):
    """A client that subscribes to everything and never reads. Raw socket so
    the receive buffer is really small and nothing reads behind our back."""
    u = urllib.parse.urlsplit(args.url)
    host, port = u.hostname, u.port or 80
    path = (u.path or "/") + (f"?{u.query}" if u.query else "")
    rep = {"url": args.url, "mode": "stall"}
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        s.connect((host, port))
    except OSError as e:
        rep["connect_error"] = repr(e)
        return rep, 2
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
               "Sec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1)  # byte by byte: read nothing past the handshake
        if not chunk:
            fails.add("stall", "connection closed during the handshake")
            return rep, 2
        head += chunk
    if not head.startswith(b"HTTP/1.1 101"):
        fails.add("stall", f"handshake refused: {head[:60]!r}")
        return rep, 2
    payload = json.dumps({"type": "subscribe", "preview": True}).encode()
    mask = os.urandom(4)
    frame = bytes([0x81, 0x80 | len(payload)]) + mask + bytes(
        b ^ mask[i % 4] for i, b in enumerate(payload))
    s.sendall(frame)
    time.sleep(args.duration)
    s.close()
    rep["stalled_s"] = args.duration
    return rep, 0


# --------------------------------------------------------- protocol tests

async def protocol_tests(args, fails):
    rep = {"url": args.url, "mode": "protocol-tests", "checks": []}

    def ok(name):
        rep["checks"].append(name)

    # 1. No subprotocol: served (any WebSocket library must work).
    try:
        ws = await connect(args.url)
    except Exception as e:  # noqa: BLE001
        rep["connect_error"] = repr(e)
        return rep, 2
    hello = await recv_json_until(ws, lambda m: True, 5)
    if not hello or hello.get("type") != "hello":
        fails.add("hello", f"first message without subprotocol: {hello!r}")
    elif ws.subprotocol is not None:
        fails.add("subprotocol", f"server chose {ws.subprotocol!r} though none was asked")
    else:
        ok("no-subprotocol")

    # 2. Subprotocol trackd.v1 is accepted and echoed.
    try:
        ws2 = await connect(args.url, "trackd.v1")
        if ws2.subprotocol != "trackd.v1":
            fails.add("subprotocol", f"asked trackd.v1, got {ws2.subprotocol!r}")
        h2 = await recv_json_until(ws2, lambda m: True, 5)
        if not h2 or h2.get("type") != "hello":
            fails.add("hello", f"first message with trackd.v1: {h2!r}")
        else:
            ok("subprotocol-trackd.v1")
        await ws2.close()
    except Exception as e:  # noqa: BLE001
        fails.add("subprotocol", f"trackd.v1 refused: {e!r}")

    # 3. WebSocket upgrades on other paths are refused.
    u = urllib.parse.urlsplit(args.url)
    other = urllib.parse.urlunsplit((u.scheme, u.netloc, "/not-ws", "", ""))
    try:
        ws3 = await connect(other)
        await ws3.close()
        fails.add("path", f"upgrade on {other} was accepted")
    except Exception:  # noqa: BLE001 - refusal is the expected outcome
        ok("other-path-refused")

    # 4. Malformed input: an error reply each, connection stays open.
    cases = [
        ("not json", "bad_json", None),
        ("", "bad_json", None),
        ('{"type":"ping"', "bad_json", None),
        ("[1,2,3]", "not_object", None),
        ('"ping"', "not_object", None),
        ("{}", "bad_type", None),
        ('{"type":5,"id":7}', "bad_type", 7),
        ('{"type":null,"id":"n"}', "bad_type", "n"),
        ('{"type":"no_such_type","id":"abc"}', "unknown_type", "abc"),
        ('{"type":"subscribe","preview":"yes","id":3}', "bad_field", 3),
        ('{"type":"ping","type":"ping"}', "bad_json", None),
        ("x" * 70000, "too_large", None),
        (b"\x00\x01\x02", "binary", None),
    ]
    for text, code, rid in cases:
        await ws.send(text)
        m = await recv_json_until(ws, lambda m: isinstance(m, dict) and m.get("type") == "error", 5)
        label = text[:30] if isinstance(text, str) else repr(text)
        if not m:
            fails.add("error-reply", f"no error reply for {label!r}")
            continue
        if m.get("code") != code:
            fails.add("error-code", f"{label!r}: code {m.get('code')!r}, expected {code!r}")
        if rid is not None and m.get("id") != rid:
            fails.add("error-id", f"{label!r}: id {m.get('id')!r}, expected {rid!r}")
        errs = check_error(m)
        for e in errs:
            fails.add("schema", e)
        if m.get("code") == code:
            ok(f"error-{code}")

    # 5. Ping/pong, also fragmented and large (reassembly across chunks).
    async def ping(payload, pid, label):
        await ws.send(payload)
        m = await recv_json_until(ws, lambda m: isinstance(m, dict) and m.get("type") == "pong", 5)
        if not m or m.get("id") != pid:
            fails.add("pong", f"{label}: got {m!r}")
        else:
            ok(label)

    await ping(json.dumps({"type": "ping", "id": 42}), 42, "ping-after-errors")
    await ping(['{"type":"pi', 'ng","id":', '"frag"}'], "frag", "ping-fragmented")
    big = json.dumps({"type": "ping", "id": "big", "pad": "p" * 60000})
    await ping(big, "big", "ping-60k")

    # 6. subscribe: previews off, then on again.
    await ws.send(json.dumps({"type": "subscribe", "preview": False, "id": "off"}))
    m = await recv_json_until(ws, lambda m: isinstance(m, dict) and m.get("type") == "ack"
                              and m.get("id") == "off", 5)
    if not m or m.get("preview") is not False:
        fails.add("subscribe", f"ack for preview off: {m!r}")
    else:
        seen = []
        await recv_json_until(ws, lambda m: False, args.preview_wait, seen)
        n = sum(1 for x in seen if isinstance(x, bytes))
        if n:
            fails.add("subscribe", f"{n} previews after preview off was acknowledged")
        else:
            ok("preview-off")
    await ws.send(json.dumps({"type": "subscribe", "preview": True, "id": "on"}))
    m = await recv_json_until(ws, lambda m: isinstance(m, dict) and m.get("type") == "ack"
                              and m.get("id") == "on", 5)
    if not m or m.get("preview") is not True:
        fails.add("subscribe", f"ack for preview on: {m!r}")
    elif args.expect_previews:
        end = time.monotonic() + args.preview_wait
        got = False
        while time.monotonic() < end and not got:
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=end - time.monotonic())
            except asyncio.TimeoutError:
                break
            if isinstance(raw, bytes):
                errs, _ = check_preview(raw, None)
                for e in errs:
                    fails.add("preview", e)
                got = True
        if not got:
            fails.add("subscribe", "no preview after preview on")
        else:
            ok("preview-on")

    # 7. A control message reaches the daemon and gets a reply with our id.
    if not args.no_control:
        await ws.send(json.dumps({"type": "sample", "id": "ctl-1", "x": 1, "y": 1}))
        m = await recv_json_until(ws, lambda m: isinstance(m, dict) and m.get("id") == "ctl-1", 5)
        if not m:
            fails.add("control", "no reply to a sample request")
        elif args.expect_control_error and (m.get("type") != "error"
                                            or m.get("code") != args.expect_control_error):
            fails.add("control", f"expected error {args.expect_control_error!r}, got {m!r}")
        else:
            rep["control_reply"] = m
            ok("control-reply")

    # 8. Still usable at the end.
    await ping(json.dumps({"type": "ping", "id": "last"}), "last", "ping-at-end")
    await ws.close()
    return rep, 0


# -------------------------------------------------------------------- http

def http_check(args, fails):
    u = urllib.parse.urlsplit(args.url)
    base = f"http://{u.netloc}"
    rep = {"url": base + "/", "mode": "http-check"}
    try:
        with urllib.request.urlopen(base + "/", timeout=10) as r:
            body = r.read().decode("utf-8", "replace")
            rep["status"] = r.status
            rep["content_type"] = r.headers.get("Content-Type")
    except Exception as e:  # noqa: BLE001
        rep["connect_error"] = repr(e)
        return rep, 2
    if rep["status"] != 200:
        fails.add("http", f"GET / status {rep['status']}")
    if "html" not in (rep["content_type"] or ""):
        fails.add("http", f"GET / content type {rep['content_type']!r}")
    want = args.expect_text or "<html"
    if want.lower() not in body.lower():
        fails.add("http", f"GET / does not contain {want!r}")
    try:
        urllib.request.urlopen(base + "/no-such-file-here.txt", timeout=10)
        fails.add("http", "a missing file did not give 404")
    except urllib.error.HTTPError as e:
        rep["missing_status"] = e.code
        if e.code != 404:
            fails.add("http", f"missing file status {e.code}")
    return rep, 0


# -------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="ws://HOST:PORT/ws")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds to measure/stall")
    ap.add_argument("--expect-min", type=int, help="fail with fewer result messages")
    ap.add_argument("--check-schema", action="store_true", help="validate every message")
    ap.add_argument("--json-report", help="write the measurements here")
    ap.add_argument("--subprotocol", help="ask for this subprotocol (default none)")
    ap.add_argument("--no-preview", action="store_true", help="subscribe with previews off")
    ap.add_argument("--stall", action="store_true", help="connect and never read")
    ap.add_argument("--protocol-tests", action="store_true", help="conformance checks")
    ap.add_argument("--no-control", action="store_true",
                    help="protocol tests: skip the control message round trip")
    ap.add_argument("--expect-control-error", metavar="CODE",
                    help="protocol tests: the control message must get this error code")
    ap.add_argument("--expect-previews", action="store_true",
                    help="protocol tests: the server sends previews")
    ap.add_argument("--preview-wait", type=float, default=1.0,
                    help="protocol tests: seconds to watch for previews")
    ap.add_argument("--http-check", action="store_true", help="GET / over HTTP")
    ap.add_argument("--expect-text", help="http check: text the page must contain")
    args = ap.parse_args()

    fails = Failures()
    if args.stall:
        rep, rc = stall(args, fails)
    elif args.protocol_tests:
        rep, rc = asyncio.run(protocol_tests(args, fails))
    elif args.http_check:
        rep, rc = http_check(args, fails)
    else:
        rep, rc = asyncio.run(measure(args, fails))
    rep["failures"] = fails.items
    rep["failure_counts"] = fails.counts
    rep["ok"] = rc == 0 and not fails
    if args.json_report:
        with open(args.json_report, "w", encoding="utf-8") as f:
            json.dump(rep, f, indent=1)
    summary = {k: rep.get(k) for k in ("mode", "results", "rate_hz", "max_gap_s", "seq_missing",
                                       "previews", "latency_ms", "checks") if k in rep}
    print(json.dumps(summary), file=sys.stderr)
    for line in fails.items:
        print("FAIL", line, file=sys.stderr)
    if rc:
        print("could not connect:", rep.get("connect_error"), file=sys.stderr)
        return rc
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
