#!/usr/bin/python3
"""Integration: --ssl, SSL-Vision packets from the real daemon to a real
protobuf decoder.

A top-down SSL scene clip (ssl_scene.py: robots with the standard covers,
an orange ball, known poses) is tracked by trackd with an objects file
whose calibration maps pixels to field millimetres (the field's centre in
the middle of the frame, +y up, 0.45 px per mm as the scene is drawn) and
--ssl udp://127.0.0.1:PORT to a python3 socket (unicast; then the same to
the league's group 224.5.23.2 on the loopback interface, skipped where the
host does not let a socket join it there). Every
datagram is decoded by python3-protobuf with our schema (protoc), and:
  1. geometry: a packet with the --ssl-field size on the first frame and
     every --ssl-geometry-every frames, before that frame's detection;
  2. detection: one per frame the NDJSON output lists (same run), frame
     numbers = its seqs, increasing; camera_id = --camera-id; t_capture
     <= t_sent, both within the run's wall-clock time; the ball (the
     --ssl-ball object) within 1 px of the scene's truth and its x, y the
     calibration's millimetres of the truth;
  3. robots, when the objects have patterns with a team (after markers
     are in, with the league's presets): each robot is a truth robot of
     its team and id in that frame, within 2 px /
     5 deg; without patterns, no robots;
  4. refusals: objects without a calibration, in "px", or an --ssl-ball
     that is no object: exit 78 with the reason; a malformed --ssl: 64;
     a host that does not resolve: 69;
  5. live (--loop, real time): the page's set_objects dropping the
     calibration stops the packets (said in the log), one in metres
     starts them again, with x, y still millimetres (scaled by 1000).

usage: test_ssl_out.py TRACKD PROTO_DIR
"""
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "unit", "protocol"))
from test_ssl_decode import load_protos  # noqa: E402
from daemon_proc import start_trackd, stop_trackd  # noqa: E402
import websockets  # noqa: E402
from ws_rpc import WsClient  # noqa: E402

FRAMES, W, H, SCALE, FPS = 24, 640, 480, 0.45, 30
GEOMETRY_EVERY = 10
BALL = {"name": "ball", "space": "rgb", "lo": [200, 80, 0], "hi": [255, 160, 60], "blobs": 1}
failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def to_mm(px, py):
    """The calibration's world point of pixel (px, py): field mm, +y up."""
    return (px - W / 2) / SCALE, -(py - H / 2) / SCALE


def calibration(unit="mm"):
    corners = [(0, 0), (W, 0), (W, H), (0, H)]
    return {"unit": unit, "points": [[x, y, *to_mm(x, y)] for x, y in corners]}


def write_objects(d, name, **top):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump({"objects": [BALL], **top}, f)
    return path


def receive(sock, packets, stop):
    """Reads datagrams into packets until stop is set and none is left."""
    sock.settimeout(0.2)
    while True:
        try:
            packets.append(sock.recv(65536))
        except socket.timeout:
            if stop.is_set():
                return


def run_ssl(trackd, clip, objects, tmp, sock=None, extra=()):
    """trackd on the clip with --ssl to a local socket (sock: one bound to
    a multicast group, with extra options): (packets, NDJSON frames,
    wall-clock start, end, log)."""
    if sock is None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    packets, stop = [], threading.Event()
    reader = threading.Thread(target=receive, args=(sock, packets, stop))
    reader.start()
    out = os.path.join(tmp, "out.ndjson")
    t0 = time.time()
    p = subprocess.run([trackd, "--input", clip, "--objects", objects, "--no-server", "--fast",
                        "--output", out, "--ssl", f"udp://{host}:{port}",
                        "--camera-id", "3", "--ssl-field", "12000x9000",
                        "--ssl-geometry-every", str(GEOMETRY_EVERY), *extra],
                       capture_output=True, text=True, timeout=120)
    t1 = time.time()
    stop.set()
    reader.join()
    sock.close()
    expect(p.returncode == 0, f"trackd --ssl exits 0 (got {p.returncode})")
    with open(out) as f:
        frames = [json.loads(line) for line in f if line.strip()]
    return packets, frames, t0, t1, p.stderr


def check_packets(wrap_pb, packets, frames, t0, t1, truth):
    decoded = []
    for raw in packets:
        w = wrap_pb.SSL_WrapperPacket()
        w.ParseFromString(raw)  # raises on a malformed packet
        decoded.append(w)
    expect(all(w.source == wrap_pb.SSL_SOURCE_OTHER for w in decoded),
           f"{len(decoded)} packets decoded, each SSL_SOURCE_OTHER")
    seqs = [fr["seq"] for fr in frames]
    dets = [w.detection for w in decoded if w.HasField("detection")]
    expect([d.frame_number for d in dets] == seqs and len(seqs) == FRAMES,
           f"a detection frame per frame, frame numbers = the NDJSON seqs ({len(dets)} of "
           f"{len(seqs)}, {FRAMES} in the clip)")
    expect(all(a < b for a, b in zip(seqs, seqs[1:])), "frame numbers increasing")
    expect(all(d.camera_id == 3 for d in dets), "camera_id 3 (--camera-id)")
    expect(all(t0 - 1 <= d.t_capture <= d.t_sent <= t1 + 1 for d in dets),
           "t_capture <= t_sent, both within the run (wall clock, s since the epoch)")

    # Geometry: before the detection of frames 0, 10, 20 (frames seen).
    geo_at = [i for i, w in enumerate(decoded) if w.HasField("geometry")]
    det_index = [i for i, w in enumerate(decoded) if w.HasField("detection")]
    want = [det_index[k] - 1 for k in range(0, len(det_index), GEOMETRY_EVERY)]
    expect(geo_at == want, f"geometry packets just before frames 0, {GEOMETRY_EVERY}, ... "
           f"(at {geo_at}, want {want})")
    expect(all(not w.HasField("detection") for w in decoded if w.HasField("geometry")),
           "geometry packets apart from detections")
    for w in decoded:
        if w.HasField("geometry"):
            f = w.geometry.field
            expect((f.field_length, f.field_width, f.goal_width, f.goal_depth,
                    f.boundary_width) == (12000, 9000, 1000, 180, 300),
                   "geometry: --ssl-field 12000x9000, goal 1000x180, boundary 300")
            break

    # The ball against the scene's truth.
    worst_px = worst_mm = 0.0
    one_ball = True
    for d in dets:
        bx, by = truth[d.frame_number]["ball"]
        one_ball &= len(d.balls) == 1
        for b in d.balls[:1]:
            worst_px = max(worst_px, math.hypot(b.pixel_x - bx, b.pixel_y - by))
            tx, ty = to_mm(bx, by)
            worst_mm = max(worst_mm, math.hypot(b.x - tx, b.y - ty))
            one_ball &= b.area > 0 and b.confidence == 1
    expect(one_ball, "one ball per frame (blobs 1), area > 0, confidence 1")
    expect(worst_px < 1.0, f"ball pixel within 1 px of the truth (worst {worst_px:.3f})")
    expect(worst_mm < 1.0 / SCALE + 0.5,
           f"ball x, y within the mm of 1 px of the truth (worst {worst_mm:.2f} mm)")
    return dets


def parse(wrap_pb, data):
    w = wrap_pb.SSL_WrapperPacket()
    w.ParseFromString(data)
    return w


def check_robots(dets, truth, have_patterns):
    n = sum(len(d.robots_blue) + len(d.robots_yellow) for d in dets)
    if not have_patterns:
        expect(n == 0, "no robots without patterns")
        return
    expect(n > 0, f"robots seen ({n})")
    bad = []
    for d in dets:
        tr = truth[d.frame_number]["robots"]
        bx, by = truth[d.frame_number]["ball"]
        # ssl_scene.py draws the ball over a cover it meets: such a robot's
        # dots are partly hidden, its pose is not judged.
        hidden = {(t["team"], t["id"]) for t in tr
                  if math.hypot(t["x"] - bx, t["y"] - by) < (90 + 21.5) * SCALE}
        for team, robots in (("blue", d.robots_blue), ("yellow", d.robots_yellow)):
            for r in robots:
                if (team, r.robot_id) in hidden:
                    continue
                match = [t for t in tr if t["team"] == team and t["id"] == r.robot_id]
                ok = 0 <= r.robot_id <= 15 and any(
                    math.hypot(r.pixel_x - t["x"], r.pixel_y - t["y"]) < 2
                    and abs(math.remainder(math.degrees(r.orientation) - t["heading"], 360)) < 5
                    for t in match)
                if not ok:
                    bad.append((d.frame_number, team, r.robot_id))
    expect(not bad, f"every robot a truth robot of its team and id, pose within 2 px / 5 deg "
           f"(wrong: {bad[:5]})")


class Live(WsClient):
    """Follows the newest frame seq and pairs replies with requests."""

    def __init__(self, ws):
        self.seq = -1
        super().__init__(ws)

    def on_message(self, j):
        if j.get("type") == "frame":
            self.seq = j["seq"]
        else:
            super().on_message(j)

    async def until_seq(self, seq, timeout=20):
        t0 = time.monotonic()
        while self.seq < seq and time.monotonic() - t0 < timeout:
            await asyncio.sleep(0.02)
        return self.seq if self.seq >= seq else None


async def live_steps(port):
    """Drops the calibration, then sets one in metres; returns the frame
    ranges [first, last] without and with it again (None: timed out)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=None) as ws:
        c = Live(ws)
        ranges = []
        for calib in (None, {"unit": "m", "points": [[x, y, wx / 1000, wy / 1000] for
                                                     x, y, wx, wy in calibration()["points"]]}):
            if await c.until_seq(0) is None:
                return None
            r = await c.req({"type": "set_objects", "objects": [BALL], "calibration": calib})
            expect(r is not None and r.get("type") == "ack",
                   f"set_objects with calibration {calib and calib['unit']}: ack ({r})")
            # The processing thread takes a new set before its next frame:
            # 5 frames on, it is surely in use.
            first = await c.until_seq(c.seq + 5)
            last = first is not None and await c.until_seq(first + 10)
            if not last:
                return None
            ranges.append((first, last))
        return ranges


def check_live(trackd, clip, objects, tmp, wrap_pb):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    packets, stop = [], threading.Event()
    reader = threading.Thread(target=receive, args=(sock, packets, stop))
    reader.start()
    log_path = os.path.join(tmp, "live.log")
    p = None
    try:
        with open(log_path, "w") as log:
            p, port = start_trackd(trackd, ["--input", clip, "--objects", objects, "--loop",
                                            "--ssl", f"127.0.0.1:{sock.getsockname()[1]}"], log)
            ranges = asyncio.run(live_steps(port))
    finally:
        stop_trackd(p)
        stop.set()
        reader.join()
        sock.close()
    expect(ranges is not None, "the live run's frames came (set_objects twice)")
    if not ranges:
        return
    dets = {}
    for raw in packets:
        w = wrap_pb.SSL_WrapperPacket()
        w.ParseFromString(raw)
        if w.HasField("detection"):
            dets[w.detection.frame_number] = w.detection
    (a0, a1), (b0, b1) = ranges
    sent = [n for n in range(a0, a1 + 1) if n in dets]
    expect(not sent, f"no calibration: frames {a0}..{a1} not sent (sent: {sent[:5]})")
    missing = [n for n in range(b0, b1 + 1) if n not in dets]
    expect(not missing, f"calibration in m: frames {b0}..{b1} sent (missing: {missing[:5]})")
    with open(clip + ".truth.json") as f:
        truth = json.load(f)["frames"]
    worst = 0.0
    for n in range(b0, b1 + 1):
        if n in dets and dets[n].balls:
            tx, ty = to_mm(*truth[n % FRAMES]["ball"])
            worst = max(worst, math.hypot(dets[n].balls[0].x - tx, dets[n].balls[0].y - ty))
        else:
            worst = math.inf
    expect(worst < 1.0 / SCALE + 0.5, f"calibration in m: balls still in mm (worst {worst:.2f})")
    with open(log_path) as f:
        log = f.read()
    expect("no packets are sent until a calibration in mm, cm or m is set" in log
           and "have a calibration in m: sending again" in log,
           "the log says when packets stop and start again")


def check_multicast(trackd, clip, objects, tmp, wrap_pb):
    """To the league's group on the loopback interface, when this host lets
    a socket join it there (else said and skipped: unicast is tested)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("224.5.23.2", 0))  # the league's group, a port of our own
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     socket.inet_aton("224.5.23.2") + socket.inet_aton("127.0.0.1"))
    except OSError as e:
        print(f"SKIP ssl multicast: cannot join 224.5.23.2 on the loopback interface: {e}")
        s.close()
        return
    packets, frames, _, _, log = run_ssl(trackd, clip, objects, tmp, s,
                                         ("--udp-iface", "lo", "--udp-ttl", "1"))
    dets = []
    for raw in packets:
        w = wrap_pb.SSL_WrapperPacket()
        w.ParseFromString(raw)
        if w.HasField("detection"):
            dets.append(w.detection.frame_number)
    expect("(multicast)" in log and dets == [fr["seq"] for fr in frames] and dets,
           f"multicast to 224.5.23.2 on lo: a detection per frame ({len(dets)} of {len(frames)})")


def check_refusals(trackd, clip, tmp):
    cases = [
        (["--objects", write_objects(tmp, "nocal.json")], 78, "has no \"calibration\""),
        (["--objects", write_objects(tmp, "px.json", calibration=calibration("px"))], 78,
         "calibration in \"px\""),
        (["--objects", write_objects(tmp, "cm.json", calibration=calibration()),
          "--ssl-ball", "puck"], 78, "--ssl-ball puck"),
    ]
    for args, code, text in cases:
        p = subprocess.run([trackd, "--input", clip, "--no-server", "--frames", "1",
                            "--ssl", "127.0.0.1:10006"] + args,
                           capture_output=True, text=True, timeout=60)
        expect(p.returncode == code and text in p.stderr,
               f"{args[-1]}: exit {code} saying {text!r} (got {p.returncode}: "
               f"{p.stderr.strip().splitlines()[-1:] if p.stderr.strip() else ''})")
    objs = os.path.join(tmp, "cm.json")
    p = subprocess.run([trackd, "--input", clip, "--no-server", "--objects", objs,
                        "--ssl", "udp://127.0.0.1"], capture_output=True, text=True, timeout=60)
    expect(p.returncode == 64 and "--ssl" in p.stderr, f"--ssl without a port: exit 64 "
           f"({p.returncode})")
    p = subprocess.run([trackd, "--input", clip, "--no-server", "--objects", objs, "--frames", "1",
                        "--ssl", "no-such-host.invalid:10006"], capture_output=True, text=True,
                       timeout=60)
    expect(p.returncode == 69 and "cannot resolve" in p.stderr,
           f"--ssl to a name that does not resolve: exit 69 ({p.returncode})")


def main():
    trackd, proto_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        _, _, wrap_pb = load_protos(proto_dir, tmp)
        clip = os.path.join(tmp, "field.mkv")
        subprocess.run([sys.executable, os.path.join(HERE, "ssl_scene.py"), clip,
                        "--frames", str(FRAMES), "--size", f"{W}x{H}", "--robots", "4",
                        "--scale", str(SCALE), "--fps", str(FPS)], check=True, timeout=300)
        with open(clip + ".truth.json") as f:
            truth = {fr["frame"]: fr for fr in json.load(f)["frames"]}
        doc = {"calibration": calibration()}
        objects = write_objects(tmp, "field.json", **doc)
        packets, frames, t0, t1, log = run_ssl(trackd, clip, objects, tmp)
        expect("sending SSL-Vision packets to 127.0.0.1:" in log, "the log says where it sends")
        dets = check_packets(wrap_pb, packets, frames, t0, t1, truth)
        check_robots(dets, truth, have_patterns=bool(doc.get("patterns")))
        # The league's presets (examples/ssl-field.json: both teams' standard
        # 16-id patterns and the ball) with the same calibration: robots.
        with open(os.path.join(HERE, "..", "..", "examples", "ssl-field.json")) as f:
            preset = json.load(f)
        preset["calibration"] = calibration()
        field = os.path.join(tmp, "preset.json")
        with open(field, "w") as f:
            json.dump(preset, f)
        packets, frames, t0, t1, log = run_ssl(trackd, clip, field, tmp)
        dets = [p.detection for p in (parse(wrap_pb, b) for b in packets) if p.HasField("detection")]
        check_robots(dets, truth, have_patterns=True)
        seen = sum(len(d.robots_blue) + len(d.robots_yellow) for d in dets)
        apart = sum(1 for d in dets for r in truth[d.frame_number]["robots"]
                    if not r["touching"] and math.hypot(
                        r["x"] - truth[d.frame_number]["ball"][0],
                        r["y"] - truth[d.frame_number]["ball"][1]) >= (90 + 21.5) * SCALE)
        expect(seen >= apart, f"every robot apart from the others sent ({seen} of {apart} at least)")
        check_multicast(trackd, clip, objects, tmp, wrap_pb)
        check_refusals(trackd, clip, tmp)
        check_live(trackd, clip, objects, tmp, wrap_pb)
    if failures:
        print(f"{len(failures)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
