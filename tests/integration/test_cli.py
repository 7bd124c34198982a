#!/usr/bin/python3
"""Integration: trackd's command line and exit codes, as a user meets them."""
import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TRACKD = sys.argv[1]
README = sys.argv[2] if len(sys.argv) > 2 else None


def run(*args, timeout=60):
    return subprocess.run([TRACKD, *args], capture_output=True, text=True, timeout=timeout)


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


r = run("--help")
expect(r.returncode == 0 and "Usage: trackd" in r.stdout, "--help exits 0 with usage")
options = re.findall(r"--([a-z][a-z-]+)", r.stdout.split("Options:")[1])
expect(len(options) >= 20, f"--help lists {len(options)} options")
if README:
    text = open(README).read()
    missing = [o for o in options if f"--{o}" not in text]
    expect(not missing, f"README documents every option (missing: {missing})")

# --help is where a new user looks for cameras.
intro = r.stdout.split("Options:")[0]
expect("camera" in intro and "--device" in intro and "--list-devices" in intro,
       "--help's intro and examples mention cameras (--device, --list-devices)")
if README:
    # Each option's README row names it in its first cell (a row with an
    # empty first cell still "documents" the option somewhere in the text).
    first_cells = [m.group(1) for m in re.finditer(r"^\| `([^`]*)` \|", text, re.M)]
    bad = [o for o in options if not any(re.search(rf"--{o}\b", c) for c in first_cells)]
    expect(not bad, f"README options table: every option in its row's first cell (not: {bad})")



def help_at_terminal(columns):
    """--help as a terminal of `columns` columns shows it (a real pty)."""
    import fcntl
    import pty
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    p = subprocess.Popen([TRACKD, "--help"], stdout=slave, stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its side
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(timeout=30)
    return p.returncode, out.decode().replace("\r\n", "\n")


# --help fits its reader: 80 columns piped, the terminal's width at one, never
# past 100; the options come in groups.
longest = max(map(len, r.stdout.splitlines()))
expect(longest <= 80, f"--help piped: no line over 80 columns (longest {longest})")
for columns, most in ((60, 60), (120, 100)):
    rc, text = help_at_terminal(columns)
    widths = [len(line) for line in text.splitlines()]
    expect(rc == 0 and max(widths) <= most and max(widths) > most - 10,
           f"--help at a {columns}-column terminal: lines up to {most} (longest {max(widths)})")
groups = re.findall(r"^([A-Z][^\n]*):$", r.stdout.split("Options:")[1], re.M)
expect(groups[:7] == ["Input (where frames come from)", "Objects (what to track)",
                      "Tracking (how objects are searched for)", "Outputs (where results go)",
                      "Web page and WebSocket", "Operations (logs, metrics, information)",
                      "Performance (backend, decoding, threads)"],
       f"--help groups the options: {groups}")

# The stats log line: every 10 s by default, every second at --log-level
# debug. Judged against the run's own length ("done: N frames in T s"), not
# against a clock here.
for level, every in (("info", 10), ("debug", 1)):
    r = run("--no-server", "--frames", "45", "--fps", "30", "--size", "160x120", "--output",
            os.devnull, "--log-level", level)
    m = re.search(r"done: \d+ frames in ([\d.]+) s", r.stderr)
    stats = len(re.findall(r"pipeline: [\d.]+ fps, \d+ frames", r.stderr))
    took = float(m.group(1)) if m else 0
    expect(r.returncode == 0 and m and stats <= took / every + 1 and stats >= int(took / every) - 1
           and (level == "info" or stats >= 1),
           f"--log-level {level}: {stats} stats lines in {took} s (one per {every} s)")

r = run("--version")
expect(r.returncode == 0 and re.match(r"trackd \d+\.\d+\.\d+", r.stdout), "--version")

r = run("--no-such-option")
expect(r.returncode == 64 and "unknown option" in r.stderr, "unknown option exits 64")
r = run("--frames", "zero")
expect(r.returncode == 64 and "--frames" in r.stderr, "bad value exits 64 naming the option")
r = run("--backend", "gpu-magic")
expect(r.returncode == 64, "unknown backend exits 64")

# A bad value is answered with the form the option expects, for every
# option whose value is checked.
bad_values = [
    (["--frames", "0"], "--frames N, a whole number >= 1, e.g."),
    (["--listen", "8080"], "--listen ADDR:PORT, e.g."),
    (["--backend", "gpu-magic"], "--backend auto, cpu, cpu-ref or cuda"),
    (["--threads", "-1"], "--threads N (0..256"),
    (["--size", "1280"], "--size WxH, e.g. 1280x720"),
    (["--size", "1280x720p"], "--size WxH, e.g. 1280x720"),
    (["--size", "8x8"], "--size WxH, e.g. 1280x720 (each 16..16384)"),
    (["--fps", "0"], "--fps N (0.1..1000)"),
    (["--format", "h264"], "--format auto, yuyv, mjpeg, nv12 or rgb24"),
    (["--control", "brightness"], "--control NAME=VALUE"),
    (["--preview-width", "8"], "--preview-width N pixels (16..4096)"),
    (["--preview-fps", "fast"], "--preview-fps N (0.1..240)"),
    (["--preview-quality", "101"], "--preview-quality N (1..100)"),
    (["--stats-interval", "-1"], "--stats-interval SECONDS (0..3600"),
    (["--log-level", "loud"], "--log-level error, warn, info or debug"),
    (["--control-token", ""], "--control-token TOKEN, 1..127 characters"),
    (["--mqtt-max-age", "0"], "--mqtt-max-age SECONDS (0.05..60)"),
]
for args, form in bad_values:
    # Should a bad value pass, a short headless run exits 0 and fails here.
    r = run(*args, "--no-server", "--frames", "1", "--output", os.devnull)
    expect(r.returncode == 64 and f"invalid value '{args[1]}' for {args[0]}: expected {form}" in r.stderr,
           f"{' '.join(args)!r}: exit 64 with the expected form ({r.stderr.strip()})")
r = run("--size")
expect(r.returncode == 64 and "--size needs a value: expected --size WxH, e.g. 1280x720" in r.stderr,
       f"a missing value names the form too ({r.stderr.strip()})")
r = run("-i")
expect(r.returncode == 64 and "needs a value: expected --input FILE" in r.stderr,
       f"a missing short-option value names the long form ({r.stderr.strip()})")

# Listing cameras on a machine with none says so (stderr; exit 0, stdout
# stays a clean list).
r = run("--list-devices")
expect(r.returncode == 0, f"--list-devices exits 0 ({r.stderr.strip()})")
if not r.stdout.strip():
    expect("no camera found" in r.stderr, f"--list-devices with no camera says so: {r.stderr.strip()!r}")
else:
    print("note: this machine has cameras; skipping the no-camera check")

with tempfile.TemporaryDirectory() as d:
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"objects": [\n  {"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [300, 1, 1]}\n]}\n')
    r = run("--objects", bad, "--no-server", "--frames", "1")
    expect(r.returncode == 78, f"config error exits 78 (got {r.returncode})")
    expect(re.search(re.escape(bad) + r":2:\d+: ", r.stderr), f"config error names file:line:col: {r.stderr.strip()}")

    missing = os.path.join(d, "missing.json")
    r = run("--objects", missing, "--no-server", "--frames", "1")
    expect(r.returncode == 78 and f"{missing}:1:1:" in r.stderr, "missing objects file exits 78 with file:1:1")

    r = run("--input", os.path.join(d, "nope.mp4"), "--no-server", "--frames", "1")
    expect(r.returncode == 66, f"missing input exits 66 (got {r.returncode})")

    # The demo scene runs with no arguments but these (no server, few frames).
    out = os.path.join(d, "demo.ndjson")
    r = run("--no-server", "--frames", "5", "--fast", "--output", out)
    expect(r.returncode == 0, f"demo run exits 0 ({r.stderr.strip()[-300:]})")
    lines = open(out).read().splitlines()
    expect(len(lines) == 5, "demo writes one NDJSON line per frame")

    # Without a usable GPU: cuda is refused clearly, auto falls back with one line.
    r = run("--backend", "cuda", "--no-server", "--frames", "1", "--fast", "--output", out)
    if r.returncode == 0:
        print("note: a usable GPU is present; skipping the no-GPU checks")
    else:
        cuda_err = r.stderr
        expect(r.returncode == 69 and "--backend cuda" in r.stderr, f"cuda without GPU exits 69: {r.stderr.strip()}")
        r = run("--backend", "auto", "--no-server", "--frames", "1", "--fast", "--output", out)
        expect(r.returncode == 0 and r.stderr.count("using the CPU backend") == 1,
               "auto falls back to the CPU with one log line")
        try:
            ctypes.CDLL("libcuda.so.1")
            has_driver = True
        except OSError:
            has_driver = False
        if not has_driver and "built without CUDA" not in cuda_err:
            # No NVIDIA driver at all is normal: one plain line, none of the
            # CUDA runtime's "driver version is insufficient" alarm...
            expect("no NVIDIA driver/GPU found: using the CPU backend" in r.stderr
                   and "insufficient" not in r.stderr,
                   f"auto without an NVIDIA driver says so plainly: {r.stderr.strip()}")
            # ...while --backend cuda keeps the real error.
            expect("no NVIDIA driver found" in cuda_err and "CUDA runtime:" in cuda_err,
                   f"--backend cuda without a driver gives the real error: {cuda_err.strip()}")

    # A clip for the option-combination checks.
    clip = os.path.join(d, "clip.mp4")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    "testsrc=size=64x48:rate=10", "-t", "0.5", "-pix_fmt", "yuv420p", clip], check=True)
    r = run("--input", clip, "--size", "320x240", "--fps", "5", "--no-server", "--fast", "--output", out)
    expect(r.returncode == 0 and "--size is ignored with --input" in r.stderr
           and "--fps is ignored with --input" in r.stderr,
           f"--size/--fps with --input are warned about: {r.stderr.strip()}")
    expect("64x48" in r.stderr, "the file keeps its own size")
    r = run("--input", clip, "--no-server", "--fast")
    expect(r.returncode == 0 and "results go nowhere" in r.stderr,
           f"--no-server without --output warns: {r.stderr.strip()}")
    r = run("--input", clip, "--no-server", "--fast", "--output", out)
    expect(r.returncode == 0 and "results go nowhere" not in r.stderr and "ignored" not in r.stderr,
           "no warning when every option has an effect")

    # Files FFmpeg cannot read as video: exit 66 with that said plainly.
    # FFmpeg's tty demuxer takes a .txt of prose for ANSI art: still no video.
    prose = "Notes for the lab session.\n\nThe red ball is tracked by its colour.\n" * 20
    for name, body in (("notes.txt", prose), ("notes", "hello\n"), ("data.mp4", "x" * 4000)):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(body)
        r = run("--input", path, "--no-server", "--fast", "--output", out)
        expect(r.returncode == 66 and f"cannot open {path}: not a video file FFmpeg can read" in r.stderr
               and "backend failure" not in r.stderr,
               f"non-video input {name}: exit 66, 'not a video file' ({r.stderr.strip()[-200:]})")

    # A camera path that does not exist: said once, clearly, and waited for
    # (cameras can be plugged in later); no "lost" for a camera never seen.
    cam = os.path.join(d, "video7")
    p = subprocess.Popen([TRACKD, "--device", cam, "--no-server", "--output", out,
                          "--stats-interval", "0.1"], stderr=subprocess.PIPE, text=True)
    err_lines = []
    deadline = time.monotonic() + 30
    # Past a few stats lines the capture thread has long tried the device.
    while sum("fps" in l for l in err_lines) < 5 and time.monotonic() < deadline:
        line = p.stderr.readline()
        if not line:
            break
        err_lines.append(line)
    running = p.poll() is None
    p.send_signal(signal.SIGTERM)
    rest = p.communicate(timeout=30)[1]
    log = "".join(err_lines) + rest
    expect(running, "trackd keeps waiting for a missing camera")
    expect(p.returncode == 0, f"SIGTERM while waiting exits 0 (got {p.returncode})")
    expect(log.count(f"{cam} does not exist") == 1 and "waiting for it" in log,
           f"a missing camera is said once to not exist, and waited for")
    expect(" lost " not in log, f"a camera never seen is not reported lost: {log.strip()[:800]}")

    # A camera path that is there but is no camera: exit 66 at once with the
    # reason, no waiting (a regular file, a folder, a character device that
    # is not V4L2). tests/camera does V4L2 nodes without video capture.
    notes = os.path.join(d, "notes.txt")
    for path, why in ((notes, "it is a regular file, not a camera device"),
                      (d, "it is a directory, not a camera device"),
                      ("/dev/null", "it is not a V4L2 device")):
        r = run("--device", path, "--no-server", "--output", out, timeout=30)
        expect(r.returncode == 66 and f"cannot use {path} as a camera: {why}" in r.stderr
               and "waiting" not in r.stderr,
               f"--device {path}: exit 66, '{why}' ({r.stderr.strip()[-300:]})")
    # One trackd may not open: 66 too, naming the permission (root may open
    # anything, so as nobody where setpriv can make it so).
    if os.geteuid() == 0 and shutil.which("setpriv"):
        os.chmod(d, 0o755)
        locked = os.path.join(d, "video9")
        with open(locked, "w"):
            pass
        os.chmod(locked, 0o600)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", TRACKD,
                            "--device", locked, "--no-server", "--output", "/dev/null"],
                           capture_output=True, text=True, timeout=30)
        expect(r.returncode == 66 and "Permission denied" in r.stderr and "video group" in r.stderr
               and "waiting" not in r.stderr,
               f"--device that this user may not open: exit 66 ({r.stderr.strip()[-300:]})")

# --check-config: the loader's verdict, nothing else started.
with tempfile.TemporaryDirectory() as d:
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "config",
                           "objects.example.json")
    good = os.path.join(d, "good.json")
    with open(example) as src, open(good, "w") as f:
        f.write(src.read())
    r = run("--check-config", good)
    expect(r.returncode == 0 and r.stdout == f"{good}: ok, 4 objects\n" and not r.stderr,
           f"--check-config on the example: exit 0, 'FILE: ok, 4 objects' ({r.stdout!r} {r.stderr!r})")
    one = os.path.join(d, "one.json")
    with open(one, "w") as f:
        f.write('{"objects": [{"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [9, 9, 9]}]}\n')
    r = run("--check-config", one)
    expect(r.returncode == 0 and r.stdout == f"{one}: ok, 1 object\n", f"one object: {r.stdout!r}")

    # Every rule of the loader, each answered with file:line:col and 78.
    bad_files = {
        "range.json": ('{"objects": [\n  {"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [300, 1, 1]}\n]}\n',
                       ":2:", "out of range"),
        "dup.json": ('{"objects": [\n  {"name": "a", "space": "rgb", "lo": [0, 0, 0], "hi": [1, 1, 1]},\n'
                     '  {"name": "a", "space": "rgb", "lo": [0, 0, 0], "hi": [1, 1, 1]}\n]}\n', ":3:", ""),
        "syntax.json": ('{"objects": [\n  {"name": "x",,}\n]}\n', ":2:", ""),
        "key.json": ('{"objects": [\n  {"name": "x", "space": "rgb", "lo": [0, 0, 0], "hi": [1, 1, 1],\n'
                     '   "colour": "#fff"}\n]}\n', ":3:", "colour"),
    }
    for name, (body, where, what) in bad_files.items():
        path = os.path.join(d, name)
        with open(path, "w") as f:
            f.write(body)
        r = run("--check-config", path)
        expect(r.returncode == 78 and re.search(re.escape(path + where) + r"\d+: ", r.stderr)
               and what in r.stderr and not r.stdout,
               f"--check-config {name}: exit 78 with file:line:col ({r.stderr.strip()})")
    missing = os.path.join(d, "missing.json")
    r = run("--check-config", missing)
    expect(r.returncode == 78 and f"{missing}:1:1:" in r.stderr, f"a missing file: 78 ({r.stderr.strip()})")

    # No source, no listener: with an --input that does not exist (66 if
    # opened) and a --listen port already taken (69 if bound) it still
    # answers 0, at once.
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = run("--check-config", good, "--input", os.path.join(d, "nope.mp4"), "--listen",
                f"127.0.0.1:{port}", timeout=20)
        expect(r.returncode == 0 and r.stdout == f"{good}: ok, 4 objects\n",
               f"--check-config opens neither the source nor the listener ({r.returncode}, {r.stderr.strip()})")

# --rt-priority: the capture and processing threads (and the WebSocket
# thread) run SCHED_FIFO at N when the kernel allows it; when it does not,
# trackd says so once per thread and runs on at normal priority. Never
# silent either way. Threads are read from /proc while it runs.
def thread_policies(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{t}/stat").read()
        except OSError:
            continue
        comm = st[st.index("(") + 1:st.rindex(")")]
        f = st[st.rindex(")") + 2:].split()
        out[comm] = (int(f[38]), int(f[37]))  # policy, rt_priority
    return out


def rt_run(prefix, preexec=None):
    p = subprocess.Popen([*prefix, TRACKD, "--frames", "60", "--fps", "30", "--size", "160x120",
                          "--no-server", "--output", "/dev/null", "--rt-priority", "7"],
                         stderr=subprocess.PIPE, text=True, preexec_fn=preexec)
    time.sleep(1.0)
    pol = thread_policies(p.pid)
    err = p.communicate(timeout=30)[1]
    return p.returncode, pol, err


import resource  # noqa: E402
rc, pol, err = rt_run([])
refused = "cannot have real-time priority 7" in err
want = (0, 0) if refused else (1, 7)  # SCHED_OTHER or SCHED_FIFO at 7
expect(rc == 0 and pol.get("trk-process") == want and pol.get("trk-capture") == want,
       f"--rt-priority 7: {'refused, said so' if refused else 'granted'}; threads {pol} ({err.strip()})")
# Refused on purpose: no RLIMIT_RTPRIO and (as root) no CAP_SYS_NICE.
no_rt = lambda: resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0))  # noqa: E731
prefix = []
if os.geteuid() == 0 and shutil.which("capsh"):
    prefix = ["capsh", "--drop=cap_sys_nice", "--", "-c", 'exec "$@"', "trackd"]
rc, pol, err = rt_run(prefix, no_rt)
warned = [ln for ln in err.splitlines() if "cannot have real-time priority 7" in ln]
expect(rc == 0 and len(warned) == 2 and "capture" in err and "processing" in err
       and pol.get("trk-process") == (0, 0),
       f"--rt-priority refused: exit 0, one warning per thread, normal priority ({err.strip()})")
print("cli: all passed")
