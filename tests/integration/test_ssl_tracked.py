#!/usr/bin/python3
"""Integration: trackd-fuse --ssl-tracked, the league's TrackerWrapperPacket
from the fused world, decoded by a real protobuf decoder.

A top-down SSL scene clip (ssl_scene.py: robots of both teams with the
standard covers, an orange ball) is tracked by a real trackd with the
league's presets (examples/ssl-field.json: patterns named blue and yellow,
the ball) and a calibration in field millimetres, publishing to a real
mosquitto; trackd-fuse fuses it and sends --ssl-tracked to a UDP socket
here. Every datagram is decoded by python3-protobuf with our schema (protoc
on protocol/ssl/), and each is checked field by field against the world
message of the same seq (frame_number): uuid (one UUID for the run),
source_name, timestamp (the fused instant in s), each ball (the "ball"
objects: position in m at height 0, velocity when the world has one,
visibility), each robot (the markers: team from the pattern's name, id,
position in m, orientation in rad in [-pi, pi], velocity, visibility), and
nothing else. Then: a world in "px" sends nothing (said in the log); bad
--ssl-tracked, --ssl-team and an unresolvable host exit 64 / 64 / 69.

usage: test_ssl_tracked.py TRACKD TRACKD_FUSE PROTO_DIR
"""
import json
import math
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unit", "protocol"))
from test_ssl_decode import load_protos  # noqa: E402
from daemon_proc import free_port  # noqa: E402
from mqtt_proc import Broker, Sub  # noqa: E402
from test_ssl_out import receive  # noqa: E402  (datagrams into a list until stopped)

TRACKD, FUSE, PROTO_DIR = sys.argv[1], sys.argv[2], sys.argv[3]
FRAMES, W, H, SCALE, FPS = 45, 640, 480, 0.45, 30
FAILS = []
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def to_mm(px, py):
    return (px - W / 2) / SCALE, -(py - H / 2) / SCALE


def objects(tmp, unit):
    with open(os.path.join(HERE, "..", "..", "examples", "ssl-field.json")) as f:
        preset = json.load(f)
    corners = [(0, 0), (W, 0), (W, H), (0, H)]
    pts = [[x, y, *to_mm(x, y)] if unit == "mm" else [x, y, x, y] for x, y in corners]
    preset["calibration"] = {"unit": unit, "points": pts}
    path = os.path.join(tmp, f"field-{unit}.json")
    with open(path, "w") as f:
        json.dump(preset, f)
    return path


def run(tmp, clip, objs, prefix, broker):
    """trackd on the clip into the broker, the fuser sending to a socket
    here: (decoded packets, world messages, the fuser's log)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    packets, stop = [], threading.Event()
    reader = threading.Thread(target=receive, args=(sock, packets, stop))
    reader.start()
    sub = Sub(broker.port, [f"{prefix}/world/frame"])
    url = f"mqtt://127.0.0.1:{broker.port}/{prefix}"
    flog = os.path.join(tmp, f"fuse-{prefix}.log")
    with open(flog, "wb") as log:
        fuse = subprocess.Popen([FUSE, "--mqtt", url, "--ssl-tracked",
                                 f"udp://127.0.0.1:{sock.getsockname()[1]}"], stderr=log)
        try:
            cam = subprocess.run([TRACKD, "--input", clip, "--objects", objs, "--name", "cam",
                                  "--mqtt", url, "--no-server", "--backend", "cpu",
                                  "--log-level", "warn"], capture_output=True, timeout=120)
            check(cam.returncode == 0, f"{prefix}: trackd played the clip ({cam.returncode})")
            time.sleep(0.5)  # the last world messages and packets
        finally:
            fuse.terminate()
            check(fuse.wait(10) == 0, f"{prefix}: the fuser stops cleanly")
    stop.set()
    reader.join()
    sock.close()
    worlds = [json.loads(p) for t, r, p in sub.take(f"{prefix}/world/frame")]
    sub.close()
    with open(flog, errors="replace") as f:
        return packets, worlds, f.read()


def near(a, b, tol):
    return abs(a - b) <= tol


def check_packet(pkt, w, uuids, stats):
    """Every field of one TrackerWrapperPacket against its world message."""
    bad = []
    uuids.add(pkt.uuid)
    tf = pkt.tracked_frame
    if pkt.source_name != "trackd-fuse":
        bad.append(f"source_name {pkt.source_name!r}")
    if not near(tf.timestamp, w["wall_ms"] / 1e3, 2e-6):
        bad.append(f"timestamp {tf.timestamp} vs {w['wall_ms'] / 1e3}")
    # World coordinates have the calibration's decimals; float32 in m.
    tol = 0.5e-3 * 10 ** -w.get("decimals", 0) + 1e-5
    balls = [o for o in w["objects"] if o["name"] == "ball"]
    if len(tf.balls) != len(balls):
        bad.append(f"{len(tf.balls)} balls, world {len(balls)}")
    for b, o in zip(tf.balls, balls):
        stats["balls"] += 1
        if not (near(b.pos.x, o["wx"] / 1e3, tol) and near(b.pos.y, o["wy"] / 1e3, tol)
                and b.pos.z == 0):
            bad.append(f"ball at {b.pos} vs {o['wx']}, {o['wy']} mm")
        if b.HasField("vel") != (o["wvx"] is not None) or (
                o["wvx"] is not None and not near(b.vel.x, o["wvx"] / 1e3, tol)):
            bad.append(f"ball vel {b.vel if b.HasField('vel') else None} vs {o['wvx']}")
        if b.visibility != 1:
            bad.append(f"ball visibility {b.visibility}")
    robots = [m for m in w["markers"] if m["pattern"] in ("yellow", "blue")]
    if len(tf.robots) != len(robots):
        bad.append(f"{len(tf.robots)} robots, world {len(robots)}")
    for r, m in zip(tf.robots, robots):
        stats["robots"] += 1
        team = 1 if m["pattern"] == "yellow" else 2
        if r.robot_id.id != m["marker"] or r.robot_id.team_color != team:
            bad.append(f"robot {r.robot_id} vs {m['pattern']} {m['marker']}")
        if not (near(r.pos.x, m["wx"] / 1e3, tol) and near(r.pos.y, m["wy"] / 1e3, tol)):
            bad.append(f"robot at {r.pos} vs {m['wx']}, {m['wy']} mm")
        a = math.radians(m["wheading"])
        a = a - 2 * math.pi if a > math.pi else a
        if not (-math.pi <= r.orientation <= math.pi and near(r.orientation, a, 2e-4)):
            bad.append(f"orientation {r.orientation} vs {m['wheading']} deg")
        if r.HasField("vel") != (m["wvx"] is not None) or (
                m["wvx"] is not None and not (near(r.vel.x, m["wvx"] / 1e3, tol)
                                              and near(r.vel.y, m["wvy"] / 1e3, tol))):
            bad.append(f"robot vel {r.vel if r.HasField('vel') else None} vs {m['wvx']}, "
                       f"{m['wvy']}")
        stats["robot_vel"] += r.HasField("vel")
        if r.visibility != 1:
            bad.append(f"robot visibility {r.visibility}")
    return bad


def main():
    tmp = tempfile.mkdtemp(prefix="trackd-ssl-tracked-")
    try:
        load_protos(PROTO_DIR, tmp)
        import ssl_wrapper_tracked_pb2 as wt
        clip = os.path.join(tmp, "field.mkv")
        subprocess.run([sys.executable, os.path.join(HERE, "ssl_scene.py"), clip, "--frames",
                        str(FRAMES), "--size", f"{W}x{H}", "--robots", "4", "--scale",
                        str(SCALE), "--fps", str(FPS)], check=True, timeout=300)
        broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")
        broker.start()
        try:
            raw, worlds, log = run(tmp, clip, objects(tmp, "mm"), "st", broker)
            pkts = {}
            for data in raw:
                p = wt.TrackerWrapperPacket()
                p.ParseFromString(data)
                pkts[p.tracked_frame.frame_number] = p
            check(len(worlds) >= FRAMES // 2, f"{len(worlds)} world messages")
            missing = [w["seq"] for w in worlds if w["seq"] not in pkts]
            check(not missing and len(pkts) == len(raw),
                  f"a packet for every world message, one each ({len(raw)} packets, missing "
                  f"{missing[:5]})")
            uuids, stats, bad = set(), {"balls": 0, "robots": 0, "robot_vel": 0}, []
            for w in worlds:
                if w["seq"] in pkts:
                    bad += [f"seq {w['seq']}: {b}" for b in check_packet(pkts[w["seq"]], w,
                                                                         uuids, stats)]
            check(not bad, f"every field matches the world message ({bad[:4]})")
            check(len(uuids) == 1 and UUID.match(next(iter(uuids), "")),
                  f"one UUID (version 4) for the run: {uuids}")
            check(stats["robots"] >= len(worlds) and stats["balls"] >= len(worlds) // 2
                  and stats["robot_vel"] > 0, f"{stats['robots']} robots ({stats['robot_vel']} "
                  f"with a velocity) and {stats['balls']} balls checked")
            check("sending SSL tracked packets" in log, "the fuser says where it sends")

            raw, worlds, log = run(tmp, clip, objects(tmp, "px"), "px", broker)
            check(worlds and not raw, f"a world in px: {len(worlds)} world messages, "
                  f"{len(raw)} packets")
            check('the world unit is "px"' in log, "and the log says why")
        finally:
            broker.stop()
        for args, code, says in (
                (["--ssl-tracked", "udp://127.0.0.1"], 64, "HOST:PORT"),
                (["--ssl-tracked", "127.0.0.1:5", "--ssl-team", "bot:red"], 64, "PATTERN:yellow"),
                (["--ssl-team", "bot:blue"], 64, "go with --ssl-tracked"),
                (["--ssl-tracked", "udp://no-such-host.invalid:10010"], 69, "no-such-host")):
            r = subprocess.run([FUSE, "--mqtt", "mqtt://127.0.0.1:1", *args],
                               capture_output=True, text=True, timeout=20)
            check(r.returncode == code and says in r.stderr,
                  f"{args}: exit {code} saying {says!r} ({r.returncode}: {r.stderr.strip()[-100:]})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILS:
        sys.exit(f"{len(FAILS)} checks failed")


if __name__ == "__main__":
    main()
