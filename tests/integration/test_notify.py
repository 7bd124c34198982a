#!/usr/bin/python3
"""Integration: systemd's notification protocol (sd_notify(3)) spoken by the
real trackd to a real AF_UNIX datagram socket the test binds, as systemd's
NOTIFY_SOCKET is for a Type=notify unit.

  1. demo scene, WATCHDOG_USEC=1 s and WATCHDOG_PID set to trackd's own pid
     (exec through sh, as systemd runs it): READY=1 once the page is served,
     STATUS= "tracking N fps, 0 clients" lines, WATCHDOG=1 at about half
     the interval, RELOADING=1 then READY=1 around a SIGHUP reload,
     STOPPING=1 on SIGTERM and exit 0;
  2. a stalled source still pets: a camera that is not there (READY=1 at
     once, status "waiting for camera ..."), and a FIFO input that delivered
     frames and then went quiet (status "no frames from the source");
  3. a stalled pipeline stops petting: --output - into a pipe nobody reads
     (4 KiB) blocks the processing thread in write(2); the status says
     "stalled", no WATCHDOG=1 comes for 3 s (6 intervals), and once the
     pipe is read again the pets come back;
  4. WATCHDOG_PID naming another process: READY=1 but no WATCHDOG=1
     (sd_watchdog_enabled's rule); a port that is taken: exit 69 and no
     READY=1.
Counts are "at least" with slack: the CI machine is small and loaded.
"""
import fcntl
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_proc import free_port  # noqa: E402

TRACKD = os.path.abspath(sys.argv[1])
EXAMPLE_OBJECTS = os.path.abspath(sys.argv[2])
FAILS = []
DEMO = ["--size", "320x180", "--backend", "cpu", "--no-preview"]
WATCHDOG_USEC = 1000000  # pets due every 0.5 s


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


class Notify:
    """The manager's end: a datagram socket, and every message that came,
    as (monotonic time, {field: value}), collected by a thread."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.1)
        self.msgs = []
        self.lock = threading.Lock()
        self.quit = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.quit:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            fields = dict(line.split("=", 1) for line in data.decode().split("\n") if "=" in line)
            with self.lock:
                self.msgs.append((time.monotonic(), fields))

    def close(self):
        self.quit = True
        self.thread.join()
        self.sock.close()

    def since(self, t0, key=None):
        with self.lock:
            return [(t, m) for t, m in self.msgs if t >= t0 and (key is None or key in m)]

    def wait(self, pred, t0=0, timeout=10):
        """The first message since t0 for which pred(fields) holds: (t, fields), or None."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for t, m in self.since(t0):
                if pred(m):
                    return t, m
            time.sleep(0.05)
        return None

    def pets(self, t0, t1=None):
        return [t for t, m in self.since(t0, "WATCHDOG") if t1 is None or t < t1]


def start(d, args, env_extra, stdout=subprocess.DEVNULL, wrap_pid=False, name="trackd"):
    """Starts trackd with NOTIFY_SOCKET at a fresh socket in d; returns
    (process, Notify, port, log path). wrap_pid: exec through sh with
    WATCHDOG_PID=$$, so the variable names trackd's own pid."""
    sock_path = os.path.join(d, name + ".notify")
    n = Notify(sock_path)
    port = free_port()
    env = dict(os.environ)
    env.pop("WATCHDOG_PID", None)
    env.update(NOTIFY_SOCKET=sock_path, **env_extra)
    cmd = [TRACKD, "--listen", f"127.0.0.1:{port}", *args]
    if wrap_pid:
        cmd = ["/bin/sh", "-c", 'WATCHDOG_PID=$$; export WATCHDOG_PID; exec "$@"', "sh", *cmd]
    log_path = os.path.join(d, name + ".log")
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=log, cwd=d)
    return p, n, port, log_path


def stop(p, n, timeout=10):
    t = time.monotonic()
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return t


def is_ready(m):
    return m.get("READY") == "1"


def log_text(path):
    with open(path) as f:
        return f.read()


def page_served(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as r:
            return r.status == 200 and b"<html" in r.read().lower()
    except OSError:
        return False


def case_demo(d):
    objects = os.path.join(d, "objects.json")
    shutil.copy(EXAMPLE_OBJECTS, objects)
    p, n, port, log = start(d, [*DEMO, "--objects", objects], {"WATCHDOG_USEC": str(WATCHDOG_USEC)},
                            wrap_pid=True, name="demo")
    try:
        r = n.wait(is_ready)
        check(r is not None, "demo: READY=1 arrives")
        if r is None:
            return
        t_ready = r[0]
        # READY=1 means the server listens and the page is there: right now,
        # without retrying.
        check(page_served(port), "demo: the page is served as soon as READY=1 arrived")
        check(r[1].get("STATUS", "").startswith("started: demo scene"),
              f"demo: READY=1 carries the status ({r[1].get('STATUS')!r})")
        st = n.wait(lambda m: re.fullmatch(r"tracking \d+\.\d fps, 0 clients", m.get("STATUS", "")),
                    t_ready)
        check(st is not None, "demo: STATUS= says 'tracking N fps, 0 clients'")
        time.sleep(4)
        pets = n.pets(t_ready, t_ready + 4)
        # Due every 0.5 s: 8 in 4 s; at least 4 with slack for a loaded machine.
        check(len(pets) >= 4, f"demo: at least 4 WATCHDOG=1 in 4 s at WATCHDOG_USEC=1 s ({len(pets)})")
        check("systemd watchdog on" in log_text(log), "demo: the log says the watchdog is on")

        t_hup = time.monotonic()
        p.send_signal(signal.SIGHUP)
        rel = n.wait(lambda m: m.get("RELOADING") == "1", t_hup)
        check(rel is not None, "SIGHUP: RELOADING=1")
        done = n.wait(lambda m: is_ready(m) and m.get("STATUS", "").startswith("reloaded"), t_hup)
        check(done is not None and rel is not None and done[0] >= rel[0],
              "SIGHUP: then READY=1 with STATUS=reloaded ...")

        t_term = stop(p, n)
        s = n.wait(lambda m: m.get("STOPPING") == "1", t_term, timeout=5)
        check(s is not None, "SIGTERM: STOPPING=1")
        check(p.returncode == 0, f"SIGTERM: exit 0 ({p.returncode})")
        check(len([1 for _, m in n.since(0, "STOPPING")]) == 1, "SIGTERM: STOPPING=1 only once")
    finally:
        stop(p, n)
        n.close()


def case_absent_camera(d):
    dev = os.path.join(d, "video-missing")
    p, n, port, log = start(d, ["--device", dev, "--backend", "cpu"],
                            {"WATCHDOG_USEC": str(WATCHDOG_USEC)}, name="absent")
    try:
        r = n.wait(is_ready)
        check(r is not None and f"waiting for camera {dev}" in r[1].get("STATUS", ""),
              f"absent camera: READY=1 at once, status waiting ({r and r[1].get('STATUS')!r})")
        if r is None:
            return
        check(page_served(port), "absent camera: the page is served meanwhile")
        time.sleep(3)
        pets = n.pets(r[0], r[0] + 3)
        check(len(pets) >= 3, f"absent camera: still petting the watchdog ({len(pets)} in 3 s)")
        st = n.since(r[0] + 0.5, "STATUS")
        check(st and all("waiting for camera" in m["STATUS"] for _, m in st),
              "absent camera: STATUS= keeps saying it waits")
    finally:
        stop(p, n)
        n.close()


def y4m_frame(w, h, v):
    return b"FRAME\n" + bytes([v]) * (w * h) + bytes([128]) * (w * h // 2)


def case_quiet_fifo(d):
    fifo = os.path.join(d, "in.y4m")
    os.mkfifo(fifo)
    w, h, sent = 160, 120, threading.Event()
    release = threading.Event()

    def feed():
        # Some frames, then nothing while the write end stays open: FFmpeg
        # waits in read(2) on the capture thread.
        with open(fifo, "wb") as f:
            f.write(b"YUV4MPEG2 W%d H%d F30:1 Ip A1:1 C420jpeg\n" % (w, h))
            for i in range(30):
                f.write(y4m_frame(w, h, i * 7 % 256))
            f.flush()
            sent.set()
            release.wait(30)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    p, n, port, log = start(d, ["--input", fifo, "--backend", "cpu", "--no-preview"],
                            {"WATCHDOG_USEC": str(WATCHDOG_USEC)}, name="fifo")
    try:
        r = n.wait(is_ready)
        check(r is not None, "quiet FIFO: READY=1")
        if r is None:
            return
        q = n.wait(lambda m: m.get("STATUS", "").startswith("no frames from the source"), r[0])
        check(q is not None, "quiet FIFO: status 'no frames from the source for N s'")
        if q:
            time.sleep(3)
            pets = n.pets(q[0], q[0] + 3)
            check(len(pets) >= 3, f"quiet FIFO: still petting the watchdog ({len(pets)} in 3 s)")
    finally:
        release.set()
        stop(p, n)
        n.close()
        feeder.join(5)


def drain(fd):
    while os.read(fd, 65536):
        pass


def case_stalled_pipeline(d):
    rfd, wfd = os.pipe()
    fcntl.fcntl(wfd, 1031, 4096)  # F_SETPIPE_SZ: full after a few result lines
    p, n, port, log = start(d, [*DEMO, "--output", "-"], {"WATCHDOG_USEC": str(WATCHDOG_USEC)},
                            stdout=wfd, name="stalled")
    os.close(wfd)
    reader = None
    try:
        r = n.wait(is_ready)
        check(r is not None, "stalled pipeline: READY=1")
        if r is None:
            return
        s = n.wait(lambda m: m.get("STATUS", "").startswith("stalled"), r[0], timeout=15)
        check(s is not None, f"stalled pipeline: STATUS= says stalled ({s and s[1]['STATUS']!r})")
        if s is None:
            return
        time.sleep(3)
        pets = n.pets(s[0])
        check(not pets, f"stalled pipeline: no WATCHDOG=1 for 3 s after the stall ({len(pets)})")
        check("the pipeline is stalled" in log_text(log), "stalled pipeline: the log says so")

        # Someone reads the results again: the thread goes on, pets resume.
        reader = threading.Thread(target=drain, args=(rfd,), daemon=True)
        t_read = time.monotonic()
        reader.start()
        back = n.wait(lambda m: "WATCHDOG" in m, t_read)
        check(back is not None, "stalled pipeline: pets resume once the output is read")
        t_term = stop(p, n)
        check(n.wait(lambda m: m.get("STOPPING") == "1", t_term, timeout=5) is not None,
              "stalled pipeline: STOPPING=1 after it went on")
    finally:
        if reader is None:  # unblock the writer so that trackd can stop
            reader = threading.Thread(target=drain, args=(rfd,), daemon=True)
            reader.start()
        stop(p, n)
        n.close()
        reader.join(5)
        os.close(rfd)


def case_foreign_watchdog_pid(d):
    p, n, port, log = start(d, DEMO, {"WATCHDOG_USEC": str(WATCHDOG_USEC), "WATCHDOG_PID": "1"},
                            name="foreign")
    try:
        r = n.wait(is_ready)
        check(r is not None, "WATCHDOG_PID=1: READY=1 still")
        time.sleep(2)
        check(not n.pets(0), "WATCHDOG_PID=1 (not trackd): no WATCHDOG=1")
    finally:
        stop(p, n)
        n.close()


def case_port_taken(d):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        sock_path = os.path.join(d, "taken.notify")
        n = Notify(sock_path)
        env = dict(os.environ, NOTIFY_SOCKET=sock_path)
        r = subprocess.run([TRACKD, "--listen", f"127.0.0.1:{taken}", *DEMO], env=env, cwd=d,
                           capture_output=True, timeout=30)
        time.sleep(0.3)
        check(r.returncode == 69, f"port taken: exit 69 ({r.returncode})")
        check(not any(is_ready(m) for _, m in n.since(0)), "port taken: no READY=1")
        n.close()


with tempfile.TemporaryDirectory() as d:
    for case in (case_demo, case_absent_camera, case_quiet_fifo, case_stalled_pipeline,
                 case_foreign_watchdog_pid, case_port_taken):
        print(f"-- {case.__name__}", flush=True)
        case(d)
if FAILS:
    sys.exit(f"{len(FAILS)} check(s) failed")
print("all notify checks passed")
