#!/usr/bin/python3
"""Many cameras on one host (issue 31): N trackd daemons side by side, each
with its own WebSocket client, and what each camera gets. A measurement,
not a test.

    tests/device/many_cameras.py TRACKD [--counts 1,4,8,16,32] [--seconds 20]
        [--warmup 2] [--fps 60] [--mps] [--spin-off] [--per-camera]
        [--label NAME] [--probe TRACKD_WS_PROBE] -- TRACKD_ARGS...

For each N in --counts: N daemons start with TRACKD_ARGS (each on its own
loopback port; e.g. `--input clip.mp4 --loop --backend cuda --objects
o.json` for files through NVDEC, or the demo scene `--size 1920x1080 --fps
60`), each gets one client process (latency_probe.py's socket client: it
stamps a frame message when its last byte is read) for --seconds after
--warmup seconds. Per camera: frames processed in the window against the
frames offered (--fps x the window), frames dropped and skipped (trackd's
/metrics counters over the window), p50/p99 capture -> client (ms) and the
p99 of its parts (queue, process: the frame message's latency fields;
deliver: from the hand-off to the client's read; --probe: the clients are
trackd-ws-probe, a C client, so no Python interpreter is in the span), and
host CPU per processed frame (the daemon's utime + stime from /proc over the
window), also split by thread: trk-capture (reading and decoding, the NVDEC
hand-off), trk-process (the backend call, blob lists, tracker, outputs) and
the rest ("other": main, WebSocket service, decoder and backend workers,
the focus check, previews; --per-camera names the named ones apart).
--spin-off runs every N a second time with `--spin off` added (row "off"):
the difference between the two rows is what the busy-waiting (--spin: the
paced hand-off and the WebSocket thread's wait for an expected result)
costs, the "off" row what the work itself costs; "poll" counts the daemons
that polled (trackd_spin: with --spin auto, those holding a spin slot).
Per N: the GPU's busy
share over the window (nvidia-smi's utilization.gpu sampled every 100 ms;
"-" without nvidia-smi), the slowest camera's rate, the most drops, the
worst p99, the medians of the rest. --mps starts the CUDA MPS
control daemon for the runs (and stops it after), to say whether it helps.

One line per N, then one per camera under it with --per-camera. Exit 0
unless a daemon failed to start or a client got no frames.
"""
import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [here, os.path.join(here, "..", "integration")]
from daemon_proc import start_trackd, stop_trackd  # noqa: E402
from latency_probe import pct, probe_socket  # noqa: E402


def metrics(port):
    """/metrics' unlabelled samples: {name: value}."""
    out = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            parts = line.split()
            if len(parts) == 2 and not line.startswith("#") and "{" not in parts[0]:
                out[parts[0]] = float(parts[1])
    return out


# The threads whose CPU time is shown apart (pipeline.c and focus.c name
# them); the rest (main, WebSocket service, decoder and backend workers) is
# "other". The row shows capture, process and other; --per-camera all.
THREADS = ("trk-capture", "trk-process", "trk-focus", "trk-preview", "trk-sampler")


def stat_s(path):
    """user + system CPU seconds of /proc/.../stat at path."""
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """The process's user + system CPU seconds so far, in all and per
    thread group: {"all": s, "trk-capture": s, "trk-process": s, "other": s}.
    A thread that ended in between is missing from the groups, not from
    "all"."""
    out = {"all": stat_s(f"/proc/{pid}/stat"), "other": 0.0, **{t: 0.0 for t in THREADS}}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            s = stat_s(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            continue  # ended meanwhile
        out[name if name in THREADS else "other"] += s
    return out


def client(port, frames, warmup, seconds, q, probe=None):
    if probe:
        # The C client (bench/ws_probe.c): one line per frame, the same five
        # numbers as latency_probe's tuples.
        r = subprocess.run([probe, str(port), str(frames), str(warmup), str(seconds + 30)],
                           capture_output=True, text=True)
        lat = [tuple(float(x) for x in line.split()) for line in r.stdout.splitlines()]
    else:
        lat, _ = probe_socket(port, frames, warmup, False, seconds + 30)
    q.put((port, lat))


class GpuBusy:
    """utilization.gpu sampled every 100 ms while running; mean() after."""

    def __init__(self):
        self.p = None
        self.samples = []
        if shutil.which("nvidia-smi"):
            self.p = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                 "-lms", "100"], stdout=subprocess.PIPE, text=True)
            self.t = threading.Thread(target=self._read, daemon=True)
            self.t.start()

    def _read(self):
        for line in self.p.stdout:
            try:
                self.samples.append(float(line.split(",")[0]))
            except ValueError:
                pass

    def stop(self):
        if self.p:
            self.p.terminate()
            self.p.wait()
        return statistics.mean(self.samples) if self.samples else None


def run_n(a, n, extra=()):
    log = open(os.devnull, "w")
    daemons = []
    try:
        for _ in range(n):
            daemons.append(start_trackd(os.path.abspath(a.trackd), [*a.args, *extra], log))
        time.sleep(a.warmup)
        q = mp.Queue()
        frames = int(a.seconds * a.fps)
        procs = [mp.Process(target=client, args=(port, frames, int(a.fps), a.seconds, q, a.probe))
                 for _, port in daemons]
        for p in procs:
            p.start()
        time.sleep(1.0)  # the clients' own warm-up second (latency_probe's warmup frames)
        gpu = GpuBusy()
        t0 = time.monotonic()
        m0 = {port: metrics(port) for _, port in daemons}
        c0 = {port: cpu_s(p.pid) for p, port in daemons}
        time.sleep(a.seconds - 1.0)
        m1 = {port: metrics(port) for _, port in daemons}
        c1 = {port: cpu_s(p.pid) for p, port in daemons}
        window = time.monotonic() - t0
        busy = gpu.stop()
        lat = dict(q.get(timeout=a.seconds + 60) for _ in procs)
        for p in procs:
            p.join(10)
    finally:
        for p, _ in daemons:
            stop_trackd(p)
    rows = []
    for _, port in daemons:
        d = {k: m1[port].get(k, 0) - m0[port].get(k, 0)
             for k in ("trackd_frames_processed_total", "trackd_frames_dropped_total",
                       "trackd_frames_skipped_total")}
        d["spin"] = m1[port].get("trackd_spin")
        got = d["trackd_frames_processed_total"]
        stages = lat.get(port) or []  # (total, queue, process, handoff, deliver) ms
        v = [x[0] for x in stages]
        rows.append({"fps": got / window, "share": got / (a.fps * window),
                     "dropped": d["trackd_frames_dropped_total"],
                     "skipped": d["trackd_frames_skipped_total"],
                     "p50": pct(v, 50) if v else None, "p99": pct(v, 99) if v else None,
                     "cpu_ms": (c1[port]["all"] - c0[port]["all"]) * 1e3 / got if got else None,
                     "split": {k: (c1[port][k] - c0[port][k]) * 1e3 / got if got else None
                               for k in (*THREADS, "other")},
                     "stage_p99": {k: pct([x[i] for x in stages], 99) if stages else None
                                   for i, k in ((1, "queue"), (2, "process"), (4, "deliver"))},
                     "spin": d["spin"], "n": len(v)})
    return rows, busy


def fmt(x, f="{:.3f}"):
    return "-" if x is None else f.format(x)


def median(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def print_row(a, n, spin, rows, busy):
    """One line for N cameras (medians over the cameras unless said), then
    one per camera with --per-camera."""
    p99s = [r["p99"] for r in rows if r["p99"] is not None]
    split = [fmt(median(r["split"][k] for r in rows)) for k in ("trk-capture", "trk-process")]
    split.append(fmt(median(r["cpu_ms"] - r["split"]["trk-capture"] - r["split"]["trk-process"]
                            if r["cpu_ms"] is not None else None for r in rows)))
    polling = sum(1 for r in rows if r["spin"])
    print(f"{n:>3} {spin or '-':>4} {polling:>4} {min(r['fps'] for r in rows):>8.2f} "
          f"{min(r['share'] for r in rows):>9.3f} "
          f"{max(r['dropped'] + r['skipped'] for r in rows):>8.0f} "
          f"{fmt(median(r['p50'] for r in rows)):>8} "
          f"{fmt(max(p99s) if p99s else None):>9} "
          f"{fmt(median(r['cpu_ms'] for r in rows)):>9} "
          f"{split[0]:>8} {split[1]:>8} {split[2]:>8} "
          f"{fmt(busy, '{:.0f}%'):>8}", flush=True)
    if a.per_camera:
        for i, r in enumerate(rows):
            print(f"      camera {i}: {'polls' if r['spin'] else 'sleeps'}, "
                  f"{r['fps']:.2f} fps, dropped {r['dropped']:.0f}, "
                  f"skipped {r['skipped']:.0f}, p50 {fmt(r['p50'])} p99 {fmt(r['p99'])} "
                  f"ms (p99 " + " ".join(f"{k} {fmt(v)}" for k, v in r["stage_p99"].items())
                  + f"), cpu {fmt(r['cpu_ms'])} ms/frame ("
                  + ", ".join(f"{k} {fmt(v)}" for k, v in r["split"].items() if v) + ")",
                  flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trackd")
    ap.add_argument("--counts", default="1,4,8,16,32")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=2)
    ap.add_argument("--fps", type=float, default=60)
    ap.add_argument("--mps", action="store_true")
    ap.add_argument("--per-camera", action="store_true")
    ap.add_argument("--label", default="")
    ap.add_argument("--spin-off", action="store_true")
    ap.add_argument("--probe", metavar="TRACKD_WS_PROBE",
                    help="the clients are this C probe (bench/ws_probe.c), not Python ones")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.args = argv[cut + 1:]
    if a.seconds < 3:
        sys.exit("many_cameras: --seconds 3 at least")
    if a.mps:
        subprocess.run(["nvidia-cuda-mps-control", "-d"], check=True)
    print(f"# {a.label or ' '.join(a.args)}{' (MPS)' if a.mps else ''}{' (C clients)' if a.probe else ''}")
    print(f"{'N':>3} {'spin':>4} {'poll':>4} {'min fps':>8} {'min share':>9} {'dropped':>8} {'p50 med':>8} "
          f"{'p99 worst':>9} {'cpu ms/fr':>9} {'capture':>8} {'process':>8} {'other':>8} "
          f"{'gpu busy':>8}")
    bad = False
    try:
        for n in (int(x) for x in a.counts.split(",")):
            for spin, extra in ((("as set", ()), ("off", ("--spin", "off"))) if a.spin_off
                                else (("as set", ()),)):
                rows, busy = run_n(a, n, extra)
                bad |= any(r["n"] == 0 for r in rows)
                print_row(a, n, "" if spin == "as set" else spin, rows, busy)
    finally:
        if a.mps:
            subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
