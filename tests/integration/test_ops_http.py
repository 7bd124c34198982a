#!/usr/bin/python3
"""Integration: the operations endpoints of the real trackd, read with a real
HTTP client (urllib), checked with Debian's promtool, scraped by a real
Prometheus, snapshots decoded with Debian's python3-pil.

  1. /metrics on the demo: the exposition parses (HELP and TYPE for every
     family, histogram buckets cumulative with +Inf == _count), `promtool
     check metrics` finds nothing, and the frame counter and the latency
     histograms grow as frames flow; --metrics-listen serves /metrics and
     /healthz there and nothing else (no page, no WebSocket, no snapshot);
     a --metrics-listen port that is taken: exit 69 naming the address;
  2. a real Prometheus (the Debian package's binary, a temporary config and
     storage folder) scrapes --metrics-listen and holds trackd's frame count;
  3. a still scene fed through a FIFO (YUV4MPEG written here): /healthz 200
     while frames flow; /snapshot.jpg is a JPEG of the frame's size whose
     pixels are the scene's; ?overlay=1 draws the object's box and centroid
     in its colour where the plain one has the scene; ?mask=red is white on
     the square and dark elsewhere; an unknown mask is 404; then the writer
     pauses (FIFO kept open): /healthz 503 "pipeline stalled", and 200 again
     once frames come back;
  4. a camera that is not there: /healthz 503 "source lost since", and the
     source_state metric says lost;
  5. token rules: with --control-token, /snapshot.jpg is 401 without it or
     with a wrong one, 200 with ?token= or "Authorization: Bearer"; /metrics
     and /healthz need none.
"""
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from PIL import Image

from daemon_proc import free_port, start_trackd, stop_trackd

TRACKD = sys.argv[1]
FAILS = []
DEMO = ["--size", "320x180", "--backend", "cpu", "--no-preview"]


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def get(port, path, headers=None, timeout=10):
    """(status, content type, body bytes) of GET http://127.0.0.1:PORT/PATH."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def wait_for(fn, timeout):
    """fn()'s first true value within timeout seconds, else the last one."""
    end = time.monotonic() + timeout
    v = fn()
    while not v and time.monotonic() < end:
        time.sleep(0.2)
        v = fn()
    return v


# ------------------------------------------------------------- exposition

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')


def parse_metrics(text):
    """{family: {"type", "help", "samples": [(name, {labels}, value)]}}; raises
    ValueError on a line that is not in the text format."""
    fams, labels_re = {}, re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            _, kind, name, rest = line.split(" ", 3)
            fams.setdefault(name, {"samples": []})[kind.lower()] = rest
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError(f"not a sample line: {line!r}")
        name, lab, value = m.group(1), m.group(2) or "", float(m.group(3))
        fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in fams else name
        if fam not in fams:
            raise ValueError(f"sample {name} before its HELP/TYPE")
        fams[fam]["samples"].append((name, dict(labels_re.findall(lab)), value))
    return fams


def value(fams, name, **labels):
    fam = re.sub(r"_(bucket|sum|count)$", "", name) if name not in fams else name
    for n, lab, v in fams.get(fam, {"samples": []})["samples"]:
        if n == name and all(lab.get(k) == w for k, w in labels.items()):
            return v
    return None


def check_exposition(fams, what):
    check(all("help" in f and "type" in f for f in fams.values()),
          f"{what}: every family has HELP and TYPE")
    hist = fams.get("trackd_stage_latency_seconds")
    check(hist is not None and hist["type"] == "histogram", f"{what}: latency histogram")
    stages = {lab["stage"] for _, lab, _ in hist["samples"]} if hist else set()
    check(stages == {"queue", "upload", "kernel", "process", "send", "total"},
          f"{what}: the six stages: {sorted(stages)}")
    for st in stages:
        b = [(lab["le"], v) for n, lab, v in hist["samples"]
             if n.endswith("_bucket") and lab["stage"] == st]
        vals = [v for _, v in b]
        ok = (vals == sorted(vals) and b[-1][0] == "+Inf"
              and b[-1][1] == value(fams, "trackd_stage_latency_seconds_count", stage=st))
        check(ok, f"{what}: {st} buckets cumulative, +Inf == count")
    for f, d in fams.items():
        if d["type"] == "counter":
            check(f.endswith("_total"), f"{what}: counter {f} ends in _total")


def promtool(text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True)
    out = (r.stdout + r.stderr).decode().strip()
    check(r.returncode == 0 and not out, f"{what}: promtool check metrics is clean: {out!r}")


def test_metrics(tmp):
    mport = free_port()
    log = open(os.path.join(tmp, "metrics.log"), "w")
    p, port = start_trackd(TRACKD, DEMO + ["--metrics-listen", f"127.0.0.1:{mport}"], log)
    try:
        st, ctype, body = get(port, "/metrics")
        check(st == 200 and ctype.startswith("text/plain; version=0.0.4"),
              f"/metrics 200 text/plain 0.0.4: {st} {ctype}")
        text = body.decode()
        fams = parse_metrics(text)
        check_exposition(fams, "/metrics")
        promtool(text, "/metrics")
        f1 = value(fams, "trackd_frames_processed_total")
        t1 = value(fams, "trackd_stage_latency_seconds_count", stage="total")
        check(value(fams, "trackd_info", backend="cpu") == 1, "trackd_info names the backend")
        check(value(fams, "trackd_source_state", state="ok") == 1, "source_state ok is 1")

        def grown():
            fams2 = parse_metrics(get(port, "/metrics")[2].decode())
            f2 = value(fams2, "trackd_frames_processed_total")
            t2 = value(fams2, "trackd_stage_latency_seconds_count", stage="total")
            return (f2, t2, fams2) if f2 > f1 + 5 and t2 > t1 else None
        g = wait_for(grown, 10)
        check(bool(g), f"frames and latency counts grow as frames flow (from {f1}, {t1})")
        if g:
            check(value(g[2], "trackd_objects_found") > 0, "objects found in the demo")
        # The rate is measured over a second of frames.
        fps = wait_for(lambda: value(parse_metrics(get(port, "/metrics")[2].decode()),
                                     "trackd_frames_per_second"), 10)
        check(fps and fps > 0, f"fps gauge above 0: {fps}")

        st, _, body = get(mport, "/metrics")
        check(st == 200 and "trackd_frames_processed_total" in parse_metrics(body.decode()),
              "--metrics-listen serves /metrics")
        st, _, body = get(mport, "/healthz")
        check(st == 200 and body == b"ok\n", f"--metrics-listen serves /healthz: {st} {body!r}")
        for path in ("/snapshot.jpg", "/", "/index.html"):
            st, _, _ = get(mport, path)
            check(st == 404, f"--metrics-listen: {path} is 404 ({st})")
        with socket.create_connection(("127.0.0.1", mport), 5) as s:
            s.sendall(b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                      b"Sec-WebSocket-Version: 13\r\n\r\n")
            s.settimeout(5)
            try:
                head = s.recv(200)
            except OSError:
                head = b""
        check(not head.startswith(b"HTTP/1.1 101"), f"--metrics-listen refuses WebSocket: {head[:40]!r}")

        # The port is now taken by this trackd: a second one must not start.
        r = subprocess.run([TRACKD, "--listen", f"127.0.0.1:{free_port()}", *DEMO,
                            "--metrics-listen", f"127.0.0.1:{mport}"],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 69 and f"127.0.0.1:{mport}" in r.stderr
              and "metrics-listen" in r.stderr,
              f"taken --metrics-listen port: exit 69 naming it ({r.returncode}: "
              f"{r.stderr.strip()[-200:]})")
        test_prometheus(tmp, mport)
    finally:
        stop_trackd(p)
        log.close()


def test_prometheus(tmp, mport):
    """A real Prometheus scrapes trackd's metrics listener."""
    prom = shutil.which("prometheus")
    check(prom is not None, "the prometheus binary is installed (Debian package prometheus)")
    if not prom:
        return
    cfg = os.path.join(tmp, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                "scrape_configs:\n  - job_name: trackd\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{mport}']\n")
    pport = free_port()
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    pr = subprocess.Popen([prom, f"--config.file={cfg}",
                           f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                           f"--web.listen-address=127.0.0.1:{pport}"],
                          stdout=log, stderr=log)
    try:
        def scraped():
            try:
                st, _, body = get(pport, "/api/v1/query?query=trackd_frames_processed_total",
                                  timeout=2)
            except OSError:
                return None
            m = re.search(rb'"value":\[[0-9.]+,"([0-9.e+]+)"\]', body)
            return float(m.group(1)) if st == 200 and m else None
        v = wait_for(scraped, 60)
        check(v is not None and v > 0, f"Prometheus scraped trackd_frames_processed_total = {v}")
        st, _, body = get(pport, "/api/v1/targets")
        check(b'"health":"up"' in body, "Prometheus sees the target up")
    finally:
        pr.terminate()
        try:
            pr.wait(20)
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
        log.close()


# ---------------------------------------------------------- still scene

W, H = 320, 240
SQ = (100, 80, 140, 120)  # x0, y0, x1, y1 (exclusive) of the red square
OBJECTS = ('{"objects": [{"name": "red", "space": "hsv", "lo": [340, 120, 100], '
           '"hi": [20, 255, 255], "color": "#00ff00"}]}')


def y4m_frame():
    """One 4:2:0 full-range frame: grey, a red square (even-aligned)."""
    y = bytearray([128] * (W * H))
    u = bytearray([128] * (W * H // 4))
    v = bytearray([128] * (W * H // 4))
    x0, y0, x1, y1 = SQ
    for r in range(y0, y1):
        y[r * W + x0:r * W + x1] = bytes([87] * (x1 - x0))
    for r in range(y0 // 2, y1 // 2):
        u[r * W // 2 + x0 // 2:r * W // 2 + x1 // 2] = bytes([96] * ((x1 - x0) // 2))
        v[r * W // 2 + x0 // 2:r * W // 2 + x1 // 2] = bytes([223] * ((x1 - x0) // 2))
    return b"FRAME\n" + bytes(y) + bytes(u) + bytes(v)


class Writer(threading.Thread):
    """Writes the still frame into the FIFO while `flowing` is set, 25 a
    second (trackd paces files anyway: a full pipe just blocks here)."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.flowing, self.quit = path, threading.Event(), threading.Event()
        self.flowing.set()

    def run(self):
        frame = y4m_frame()
        with open(self.path, "wb") as f:
            f.write(f"YUV4MPEG2 W{W} H{H} F25:1 Ip A1:1 C420jpeg\n".encode())
            while not self.quit.is_set():
                if self.flowing.is_set():
                    try:
                        f.write(frame)
                        f.flush()
                    except BrokenPipeError:
                        return
                    time.sleep(0.04)
                else:
                    time.sleep(0.05)


def jpeg(port, query=""):
    st, ctype, body = get(port, "/snapshot.jpg" + query)
    if st != 200 or ctype != "image/jpeg":
        return st, None
    return st, Image.open(io.BytesIO(body)).convert("RGB")


def near(px, want, tol=40):
    return all(abs(a - b) <= tol for a, b in zip(px, want))


def test_fifo(tmp):
    fifo = os.path.join(tmp, "in.y4m")
    os.mkfifo(fifo)
    objs = os.path.join(tmp, "objs.json")
    with open(objs, "w") as f:
        f.write(OBJECTS)
    w = Writer(fifo)
    w.start()
    log = open(os.path.join(tmp, "fifo.log"), "w")
    p = None
    try:
        p, port = start_trackd(TRACKD, ["--input", fifo, "--objects", objs, "--backend", "cpu",
                                        "--no-preview"], log)
        st = wait_for(lambda: get(port, "/healthz")[0] == 200, 10)
        check(st, "/healthz 200 while frames flow")

        st, plain = jpeg(port)
        check(plain is not None and plain.size == (W, H), f"/snapshot.jpg decodes, {W}x{H}: {st}")
        st, overlay = jpeg(port, "?overlay=1")
        st2, mask = jpeg(port, "?mask=red")
        if plain and overlay and mask:
            cx, cy = 120, 100
            check(near(plain.getpixel((20, 20)), (128, 128, 128)), "plain: grey background")
            check(near(plain.getpixel((cx - 10, cy + 10)), (220, 30, 30), 60),
                  f"plain: the red square {plain.getpixel((cx - 10, cy + 10))}")
            edge = (SQ[0], cy + 10)  # the box's left edge, off the centroid cross
            check(near(plain.getpixel(edge), (220, 30, 30), 60), "plain: no box on the edge")
            check(near(overlay.getpixel(edge), (0, 255, 0), 90),
                  f"overlay: the box in the object's colour {overlay.getpixel(edge)}")
            # The cross is 2 pixels thick: JPEG's 4:2:0 chroma mixes it with
            # the red around it, but its green stands out from the square's.
            arm = (cx + 4, cy)
            check(overlay.getpixel(arm)[1] > plain.getpixel(arm)[1] + 80,
                  f"overlay: the centroid cross {overlay.getpixel(arm)} on {plain.getpixel(arm)}")
            check(near(overlay.getpixel((20, 20)), (128, 128, 128)), "overlay: background kept")
            check(all(c > 200 for c in mask.getpixel((cx - 10, cy + 10))),
                  f"mask: the square is white {mask.getpixel((cx - 10, cy + 10))}")
            check(all(c < 60 for c in mask.getpixel((20, 20))),
                  f"mask: the rest is dark {mask.getpixel((20, 20))}")
        st, _, body = get(port, "/snapshot.jpg?mask=nope")
        check(st == 404 and b'no object named "nope"; the objects are: red' in body,
              f"unknown mask: 404 naming it and the objects there are ({st} {body!r})")

        w.flowing.clear()
        r = wait_for(lambda: (lambda s: s if s[0] == 503 else None)(get(port, "/healthz")), 20)
        check(r and b"pipeline stalled" in r[2],
              f"writer paused: /healthz 503 pipeline stalled ({r and r[2]!r})")
        w.flowing.set()
        st = wait_for(lambda: get(port, "/healthz")[0] == 200, 10)
        check(st, "frames again: /healthz 200")
    finally:
        w.quit.set()
        stop_trackd(p)
        log.close()


def test_lost_camera(tmp):
    log = open(os.path.join(tmp, "camera.log"), "w")
    p = None
    try:
        p, port = start_trackd(TRACKD, ["--device", "/dev/video-trackd-test-none",
                                        "--backend", "cpu", "--no-preview"], log)
        st, _, body = get(port, "/healthz")
        check(st == 503 and body.startswith(b"source lost since"),
              f"absent camera: /healthz 503 source lost ({st} {body!r})")
        fams = parse_metrics(get(port, "/metrics")[2].decode())
        check(value(fams, "trackd_source_state", state="lost") == 1, "source_state lost is 1")
        st, _, body = get(port, "/snapshot.jpg")
        check(st == 503, f"no frame yet: /snapshot.jpg 503 ({st} {body!r})")
    finally:
        stop_trackd(p)
        log.close()


def test_token(tmp):
    log = open(os.path.join(tmp, "token.log"), "w")
    p = None
    try:
        p, port = start_trackd(TRACKD, DEMO + ["--control-token", "s3cret"], log)
        wait_for(lambda: get(port, "/healthz")[0] == 200, 10)
        st, _, body = get(port, "/snapshot.jpg")
        check(st == 401 and b"token" in body, f"snapshot without the token: 401 ({st})")
        st, _, _ = get(port, "/snapshot.jpg?token=wrong")
        check(st == 401, f"snapshot with a wrong token: 401 ({st})")
        st, _, _ = get(port, "/snapshot.jpg", {"Authorization": "Bearer wrong"})
        check(st == 401, f"snapshot with a wrong bearer: 401 ({st})")
        st, ctype, _ = get(port, "/snapshot.jpg?token=s3cret&overlay=1")
        check(st == 200 and ctype == "image/jpeg", f"snapshot with ?token=: 200 ({st})")
        st, ctype, _ = get(port, "/snapshot.jpg", {"Authorization": "Bearer s3cret"})
        check(st == 200 and ctype == "image/jpeg", f"snapshot with a bearer token: 200 ({st})")
        check(get(port, "/metrics")[0] == 200, "metrics need no token")
        check(get(port, "/healthz")[0] == 200, "healthz needs no token")
    finally:
        stop_trackd(p)
        log.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for t in (test_metrics, test_fifo, test_lost_camera, test_token):
            try:
                t(tmp)
            except Exception as e:  # one broken part must not hide the others
                check(False, f"{t.__name__} raised {e!r}")
    if FAILS:
        print(f"{len(FAILS)} check(s) failed", flush=True)
        sys.exit(1)
    print("all ok")


if __name__ == "__main__":
    main()
