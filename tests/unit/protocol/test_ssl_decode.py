#!/usr/bin/env python3
"""SSL-Vision packets (protocol/ssl_packet.h) read by a real decoder.

protoc (Debian's protobuf-compiler) compiles protocol/ssl/*.proto for
python3-protobuf, ssl_pack writes the packets, and the decoder must read
every field back with the values ssl_pack.c set. The schema's message and
field numbers are checked against the league's (ssl-vision's
messages_robocup_ssl_*.proto, listed here by hand), so a renumbered field
fails here even though encoder and decoder would agree with each other.

usage: test_ssl_decode.py SSL_PACK PROTO_DIR
"""
import importlib
import math
import os
import subprocess
import sys
import tempfile

# The league's numbers: message -> {field: number}.
LEAGUE = {
    "SSL_DetectionBall": {"confidence": 1, "area": 2, "x": 3, "y": 4, "z": 5,
                          "pixel_x": 6, "pixel_y": 7},
    "SSL_DetectionRobot": {"confidence": 1, "robot_id": 2, "x": 3, "y": 4,
                           "orientation": 5, "pixel_x": 6, "pixel_y": 7, "height": 8},
    "SSL_DetectionFrame": {"frame_number": 1, "t_capture": 2, "t_sent": 3,
                           "t_capture_camera": 8, "camera_id": 4, "balls": 5,
                           "robots_yellow": 6, "robots_blue": 7},
    "SSL_GeometryFieldSize": {"field_length": 1, "field_width": 2, "goal_width": 3,
                              "goal_depth": 4, "boundary_width": 5, "field_lines": 6,
                              "field_arcs": 7},
    "SSL_GeometryData": {"field": 1, "calib": 2, "models": 3},
    "SSL_WrapperPacket": {"detection": 1, "geometry": 2, "source": 3},
    # The tracked format (messages_robocup_ssl_detection_tracked.proto,
    # _wrapper_tracked.proto).
    "Vector2": {"x": 1, "y": 2},
    "Vector3": {"x": 1, "y": 2, "z": 3},
    "RobotId": {"id": 1, "team_color": 2},
    "TrackedBall": {"pos": 1, "vel": 2, "visibility": 3},
    "KickedBall": {"pos": 1, "vel": 2, "start_timestamp": 3, "stop_timestamp": 4,
                   "stop_pos": 5, "robot_id": 6},
    "TrackedRobot": {"robot_id": 1, "pos": 2, "orientation": 3, "vel": 4, "vel_angular": 5,
                     "visibility": 6},
    "TrackedFrame": {"frame_number": 1, "timestamp": 2, "balls": 3, "robots": 4,
                     "kicked_ball": 5, "capabilities": 6},
    "TrackerWrapperPacket": {"uuid": 1, "source_name": 2, "tracked_frame": 3},
}

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def f32(v):
    """v as a float32 round trip (what the wire carries)."""
    import struct
    return struct.unpack("f", struct.pack("f", v))[0]


def load_protos(proto_dir, tmp):
    """Compiles proto_dir's .proto files with protoc into tmp and imports
    them: (detection, geometry, wrapper) modules. Also used by the --ssl
    output's tests (tests/unit/daemon, tests/integration)."""
    protos = sorted(p for p in os.listdir(proto_dir) if p.endswith(".proto"))
    subprocess.run(["protoc", "--proto_path", proto_dir, "--python_out", tmp] + protos,
                   check=True)
    sys.path.insert(0, tmp)
    return tuple(importlib.import_module(m)
                 for m in ("ssl_detection_pb2", "ssl_geometry_pb2", "ssl_wrapper_pb2"))


def main():
    ssl_pack, proto_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        det_pb, geo_pb, wrap_pb = load_protos(proto_dir, tmp)
        subprocess.run([ssl_pack, tmp], check=True)
        track_pb = importlib.import_module("ssl_detection_tracked_pb2")
        wtrack_pb = importlib.import_module("ssl_wrapper_tracked_pb2")
        seen = set()
        for mod in (det_pb, geo_pb, wrap_pb, track_pb, wtrack_pb):
            for name, fields in LEAGUE.items():
                desc = mod.DESCRIPTOR.message_types_by_name.get(name)
                if desc is None:
                    continue
                seen.add(name)
                for field, number in fields.items():
                    got = desc.fields_by_name.get(field)
                    check(got is not None and got.number == number,
                          f"{name}.{field} is number {got.number if got else None}, the league's {number}")
        check(seen == set(LEAGUE), f"every league message is in the schema ({set(LEAGUE) - seen})")
        with open(os.path.join(tmp, "tracked.bin"), "rb") as f:
            t = wtrack_pb.TrackerWrapperPacket()
            t.ParseFromString(f.read())
        check_tracked(t, track_pb)
        packets = {}
        for name in ("detection", "geometry", "both", "empty"):
            with open(os.path.join(tmp, name + ".bin"), "rb") as f:
                w = wrap_pb.SSL_WrapperPacket()
                w.ParseFromString(f.read())  # raises on a malformed packet
                packets[name] = w
        check_detection(packets["detection"], wrap_pb)
        check_geometry(packets["geometry"])
        check(packets["both"].HasField("detection") and packets["both"].HasField("geometry"),
              "both: detection and geometry")
        check_detection(packets["both"], wrap_pb)
        check_geometry(packets["both"])
        e = packets["empty"]
        check(e.HasField("detection") and len(e.detection.balls) == 0
              and len(e.detection.robots_blue) == 0 and len(e.detection.robots_yellow) == 0,
              "empty frame: present, nothing in it")
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ssl packets decoded: every field as sent")
    return 0


def check_detection(w, wrap_pb):
    check(w.HasField("detection"), "detection present")
    check(w.source == wrap_pb.SSL_SOURCE_OTHER, "source SSL_SOURCE_OTHER")
    d = w.detection
    check(d.frame_number == 4000000000, "frame_number")
    check(d.t_capture == 1795000000.125 and d.t_sent == 1795000000.25, "times (doubles)")
    check(d.camera_id == 3, "camera_id")
    check(not d.HasField("t_capture_camera"), "t_capture_camera absent")
    check(len(d.balls) == 2, "2 balls")
    for i, b in enumerate(d.balls):
        check(b.confidence == 0.5 + 0.25 * i and b.area == 40 + i, f"ball {i} confidence, area")
        check(b.x == f32(-1000.5 + i) and b.y == f32(250.25 * i), f"ball {i} x, y")
        check(b.pixel_x == 10.5 + i and b.pixel_y == 20.5 + i, f"ball {i} pixels")
        check(not b.HasField("z"), f"ball {i} z absent")
    robots = list(d.robots_yellow) + list(d.robots_blue)
    check(len(d.robots_yellow) == 3 and len(d.robots_blue) == 2, "3 yellow, 2 blue")
    for i, r in enumerate(robots):
        check(r.confidence == 0.125 * (i + 1) and r.robot_id == 3 * i, f"robot {i} conf, id")
        check(r.x == f32(100.0 * i - 4500.0) and r.y == f32(3000.0 - 50.0 * i), f"robot {i} x, y")
        check(math.isclose(r.orientation, f32(-3.0 + 1.5 * i)), f"robot {i} orientation")
        check(r.pixel_x == f32(640.25 + i) and r.pixel_y == f32(360.75 - i), f"robot {i} pixels")
        check(r.HasField("height") == (i % 2 == 0), f"robot {i} height present iff set")
        if i % 2 == 0:
            check(r.height == 150.0, f"robot {i} height")


def check_tracked(t, pb):
    check(t.uuid == "6f1c1e4a-2b7e-4c55-9a0e-1b2c3d4e5f60" and t.source_name == "trackd-fuse",
          "tracked: uuid, source_name")
    f = t.tracked_frame
    check(f.frame_number == 4000000001 and f.timestamp == 1795000000.375,
          "tracked: frame_number, timestamp (double)")
    check(len(f.balls) == 2 and len(f.robots) == 3 and not f.HasField("kicked_ball")
          and len(f.capabilities) == 0, "tracked: 2 balls, 3 robots, no kick, no capabilities")
    b0, b1 = f.balls
    check((b0.pos.x, b0.pos.y, b0.pos.z) == (1.5, -2.25, 0) and b0.HasField("vel")
          and (b0.vel.x, b0.vel.y, b0.vel.z) == (0.5, -0.75, 0) and b0.visibility == 1,
          "tracked ball 0: pos, vel, visibility")
    check((b1.pos.x, b1.pos.y, b1.pos.z) == (-4.5, 3.0, 0.125) and not b1.HasField("vel")
          and b1.visibility == 0.5, "tracked ball 1: pos with height, no vel")
    for i, r in enumerate(f.robots):
        team = pb.TEAM_COLOR_BLUE if i == 1 else pb.TEAM_COLOR_YELLOW
        check(r.robot_id.id == 5 * i and r.robot_id.team_color == team, f"tracked robot {i} id")
        check(r.pos.x == f32(0.25 * i - 4.0) and r.pos.y == f32(2.5 - 0.5 * i)
              and r.orientation == f32(-3.0 + 2.5 * i), f"tracked robot {i} pose")
        check(r.HasField("vel") == (i == 2) and (i != 2 or (r.vel.x, r.vel.y) == (1.25, -0.5)),
              f"tracked robot {i} vel iff set")
        check(not r.HasField("vel_angular") and r.visibility == 1, f"tracked robot {i} rest")


def check_geometry(w):
    check(w.HasField("geometry"), "geometry present")
    f = w.geometry.field
    check((f.field_length, f.field_width, f.goal_width, f.goal_depth, f.boundary_width)
          == (9000, 6000, 1000, 180, 300), "field size")
    check(len(w.geometry.calib) == 0, "no camera calibration yet")


if __name__ == "__main__":
    sys.exit(main())
