#!/usr/bin/python3
"""Measures trackd-fuse on this machine (a measurement, not a test: it
asserts nothing; it prints numbers for docs/BENCHMARKS.md).

A local mosquitto (started here, set_tcp_nodelay true), trackd-fuse subscribed to it, and in one
process per camera a paho publisher that sends that camera's frame messages
as trackd does (PREFIX/CAM/frame, QoS 1, with its retained config and
status first), paced at --fps with the cameras' phases spread over a
period, each frame with --markers markers and one tracked object instance
that all carry world points and velocities (the fields trackd sends with
`things`). Each frame's capture instant is its publish time (wall_ms = now,
queue and process 0). A paho subscriber takes PREFIX/world/frame.

Per world message:
  (the fuser's own stats line: a camera's frame handed over by libmosquitto
  -> its fused message handed back, the fuser's share alone)
  fuse     sent_ms - wall_ms: the last camera's frame published -> the fused
           message built (the broker's hop in, parsing, fusing);
  e2e      received - wall_ms: -> the fused message at a subscriber;
  gaps     world seq numbers the subscriber missed;
and the CPU (share of one core) of the fuser, the broker and the
publishers over the run.

    tests/measure/fuse_measure.py build/fuse/trackd-fuse [--cameras 2] [--fps 30]
        [--markers 0] [--seconds 20] [--trackd build/daemon/trackd]

With --trackd the cameras are real trackd instead (the demo scene, 640x480,
--backend cpu, the demo objects with a calibration; --markers is ignored):
then wall_ms is each frame's capture instant and e2e is capture -> fused
message at a subscriber, end to end.

Needs Debian's mosquitto and python3-paho-mqtt.
"""
import argparse
import json
import multiprocessing
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from mqtt_proc import Broker  # noqa: E402

CAL = {"unit": "mm", "points": [[0, 0, 0, 0], [640, 0, 2000, 0], [640, 480, 2000, 1500],
                                [0, 480, 0, 1500]]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def camera(port, prefix, cam, k, n_cams, fps, markers, seconds, start_at):
    """One camera's publisher (its own process)."""
    c = mqtt.Client(client_id=f"cam-{cam}")
    c.connect("127.0.0.1", port)
    c.loop_start()
    c.publish(f"{prefix}/{cam}/config", json.dumps(
        {"type": "objects", "camera": cam, "objects": [], "calibration": CAL}), 1, True)
    c.publish(f"{prefix}/{cam}/status", json.dumps(
        {"type": "status", "camera": cam, "online": True}), 1, True)
    period = 1.0 / fps
    t0 = start_at + period * k / n_cams
    seq = 0
    while True:
        due = t0 + seq * period
        if due > start_at + seconds:
            break
        time.sleep(max(0.0, due - time.time()))
        now = time.time() * 1e3
        x = 100 + 50 * k + (seq % 200) * 5.0
        mk = [{"pattern": "bot", "id": i, "track_id": 1000 * k + i + 1, "cx": 320, "cy": 240,
               "wx": 100.0 * i + k, "wy": 700.0 + k, "wvx": 0.0, "wvy": 0.0, "wheading": 90.0,
               "confidence": 0.9, "lost": 0} for i in range(markers)]
        msg = {"type": "frame", "camera": cam, "seq": seq, "width": 640, "height": 480,
               "t_capture": 0, "wall_ms": round(now, 3),
               "latency": {"queue_ms": 0, "process_ms": 0},
               "objects": [{"id": 0, "name": "ball", "found": True, "instances": [
                   {"id": 1, "cx": 320, "cy": 240, "wx": x, "wy": 300.0, "wvx": 150.0,
                    "wvy": 0.0, "vx": 1.6, "vy": 0.0, "lost": 0}]}],
               "markers": mk}
        c.publish(f"{prefix}/{cam}/frame", json.dumps(msg, separators=(",", ":")), 1)
        seq += 1
    time.sleep(0.5)
    c.loop_stop()
    c.disconnect()


def start_trackds(a, tmp, port, prefix):
    """--trackd: one real trackd per camera, the demo scene with the demo
    objects (written next to trackd by the build) and a calibration."""
    with open(os.path.join(os.path.dirname(a.trackd), "demo-objects.json")) as f:
        objs = json.load(f)
    objs["calibration"] = CAL
    path = os.path.join(tmp, "objects.json")
    with open(path, "w") as f:
        json.dump(objs, f)
    return [subprocess.Popen([a.trackd, "--name", f"c{k}", "--objects", path, "--mqtt",
                              f"mqtt://127.0.0.1:{port}/{prefix}", "--no-server", "--size",
                              "640x480", "--fps", f"{a.fps:g}", "--backend", "cpu", "--no-preview",
                              "--log-level", "warn"], stdout=subprocess.DEVNULL)
            for k in range(a.cameras)]


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p / 100 * len(v)))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("fuse")
    ap.add_argument("--cameras", type=int, default=2)
    ap.add_argument("--fps", type=float, default=30)
    ap.add_argument("--markers", type=int, default=0)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--trackd", help="real trackd cameras (the demo scene) instead of publishers")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fuse-measure-")
    # As the README asks of a broker: without it Nagle holds messages back.
    broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")
    broker.start()
    prefix = "m"
    log = open(os.path.join(tmp, "fuse.log"), "wb")
    fuse = subprocess.Popen([a.fuse, "--mqtt", f"mqtt://127.0.0.1:{broker.port}/{prefix}"],
                            stderr=log)
    got, lock = [], threading.Lock()

    def on_message(c, u, m):
        t = time.time() * 1e3
        with lock:
            got.append((t, m.payload))

    sub = mqtt.Client(client_id="measure-sub")
    sub.on_connect = lambda c, u, f, rc: c.subscribe(f"{prefix}/world/frame", 0)
    sub.on_message = on_message
    sub.connect("127.0.0.1", broker.port)
    sub.loop_start()
    time.sleep(1.0)
    start_at = time.time() + 1.0
    if a.trackd:
        cams = start_trackds(a, tmp, broker.port, prefix)
    else:
        cams = [multiprocessing.Process(target=camera, args=(
            broker.port, prefix, f"c{k}", k, a.cameras, a.fps, a.markers, a.seconds, start_at))
            for k in range(a.cameras)]
        for p in cams:
            p.start()
    time.sleep(max(0.0, start_at - time.time()) + 2.0)  # warm-up: not measured
    with lock:
        skip = len(got)
    c0 = {"fuse": cpu_s(fuse.pid), "broker": cpu_s(broker.proc.pid),
          "publishers": sum(cpu_s(p.pid) for p in cams)}
    w0 = time.monotonic()
    time.sleep(a.seconds - 3.0)
    w1 = time.monotonic()
    c1 = {"fuse": cpu_s(fuse.pid), "broker": cpu_s(broker.proc.pid),
          "publishers": sum(cpu_s(p.pid) for p in cams)}
    with lock:
        window = got[skip:]
    for p in cams:
        if a.trackd:
            p.terminate()
            p.wait(20)
        else:
            p.join(30)
    sub.loop_stop()
    fuse.terminate()
    fuse.wait(10)
    broker.stop()
    msgs = [(t, json.loads(p)) for t, p in window]
    fz = [m["sent_ms"] - m["wall_ms"] for t, m in msgs]
    e2e = [t - m["wall_ms"] for t, m in msgs]
    seqs = [m["seq"] for t, m in msgs]
    gaps = sum(b - a - 1 for a, b in zip(seqs, seqs[1:]) if b > a + 1)
    full = sum(len(m["cameras"]) == a.cameras for t, m in msgs)
    late = sum(bool(m["late"]) for t, m in msgs)
    n_obj = sorted(len(m["objects"]) + len(m["markers"]) for t, m in msgs)
    dt = w1 - w0
    what = "real trackd (demo 640x480, cpu)" if a.trackd else \
        f"{a.markers} markers + 1 instance each"
    print(f"{a.cameras} cameras x {a.fps:g} fps, {what}, "
          f"{dt:.1f} s measured: {len(msgs)} world messages ({len(msgs) / dt:.1f}/s), "
          f"{full} with every camera, {late} with a camera late, seq gaps {gaps}, "
          f"fused things per message p50 {pct(n_obj, 50)}")
    start = "the newest frame's capture" if a.trackd else "the last camera's frame published"
    print(f"  fuse ({start} -> fused message built) ms: "
          f"p50 {pct(fz, 50):.2f}  p99 {pct(fz, 99):.2f}  max {max(fz or [float('nan')]):.2f}")
    print(f"  end to end (-> subscriber) ms: p50 {pct(e2e, 50):.2f}  p99 {pct(e2e, 99):.2f}  "
          f"max {max(e2e or [float('nan')]):.2f}")
    print("  CPU (share of one core): " + ", ".join(
        f"{k} {(c1[k] - c0[k]) / dt * 100:.1f}%" for k in c0))
    log.close()
    with open(os.path.join(tmp, "fuse.log"), errors="replace") as f:
        for line in f:
            if "world frames/s" in line:
                print("  fuser's own stats line (frame in -> fused message out, in the fuser): "
                      + line.split(": ", 1)[1].strip())
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
