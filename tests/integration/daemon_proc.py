"""Starting the real trackd daemon for integration tests: a free loopback
port, stderr to a log file, and waiting until the server accepts."""
import socket
import subprocess
import time
import urllib.error
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_trackd(trackd, args, log):
    """Starts `trackd --listen 127.0.0.1:PORT ARGS` with stderr to the open
    file log; returns (process, port) once the port accepts connections."""
    port = free_port()
    p = subprocess.Popen([trackd, "--listen", f"127.0.0.1:{port}", *args],
                         stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"trackd exited {p.returncode} at start")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return p, port
        except OSError:
            time.sleep(0.1)
    p.kill()
    raise RuntimeError("trackd did not start listening within 10 s")


def stop_trackd(p, timeout=10):
    """SIGTERM, then SIGKILL after timeout s; nothing when p is None or has
    already exited."""
    if p and p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def http_get(port, path, timeout=30):
    """(status, body bytes) of GET http://127.0.0.1:PORT/PATH, errors too."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_for(fn, timeout, step=0.2):
    """fn()'s first true value within timeout seconds, else the last one."""
    end = time.monotonic() + timeout
    v = fn()
    while not v and time.monotonic() < end:
        time.sleep(step)
        v = fn()
    return v
