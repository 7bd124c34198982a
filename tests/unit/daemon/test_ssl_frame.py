#!/usr/bin/env python3
"""The --ssl output's mapping from a frame result (daemon/out/ssl.h), read
by a real decoder: ssl_frame fills frame results by hand (see ssl_frame.c)
and writes the packets; python3-protobuf, with our schema compiled by
protoc (test_ssl_decode.py's load_protos), must read back every field:
frame_number (the seq's low 32 bits), times, camera_id; balls (listed
blobs with a world point, largest first, confidence = mass over the
largest's; the centroid when none are listed); robots per team (markers
seen, with a world pose and id >= 0, of patterns with a team), positions
and heights scaled from cm to mm, orientation in radians in [-pi, pi];
the geometry packet's camera calibration against the known camera
(ssl_frame.c's CAM_*): the quaternion rotates as R, t and the camera's
position in mm, and ssl-vision's own projection (q p + t, divided by z,
times the focal length, plus the principal point) puts floor points on the
pixels the known camera gives.

usage: test_ssl_frame.py SSL_FRAME PROTO_DIR
"""
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "protocol"))
from test_ssl_decode import check, f32, failures, load_protos  # noqa: E402


def read(wrap_pb, tmp, name):
    w = wrap_pb.SSL_WrapperPacket()
    with open(os.path.join(tmp, name), "rb") as f:
        w.ParseFromString(f.read())
    check(w.HasField("detection") and not w.HasField("geometry"), f"{name}: a detection frame")
    check(w.source == wrap_pb.SSL_SOURCE_OTHER, f"{name}: source OTHER")
    return w.detection


def check_ball(name, b, conf, area, x, y, px, py):
    check(math.isclose(b.confidence, conf) and b.area == area, f"{name} confidence, area")
    check(b.x == f32(x) and b.y == f32(y), f"{name} x, y = ({x}, {y}) mm: ({b.x}, {b.y})")
    check(b.pixel_x == f32(px) and b.pixel_y == f32(py), f"{name} pixel_x, pixel_y")
    check(not b.HasField("z"), f"{name} z absent")


# (id, x, y, orientation rad, pixel_x, pixel_y, confidence, height) per team,
# in marker order.
YELLOW = [(0, -4500, 3000, -math.pi / 2, 110, 210, 1, 150),
          (15, 5, -5, -math.pi / 6, 160.25, 260.75, 0.25, 150)]
BLUE = [(3, 500, -250, math.pi / 2, 100.5, 200.5, 0.75, 145),
        (9, -10, 10, math.pi, 170, 270, 0.5, 145)]


def check_robots(name, d):
    for team, got, want in (("yellow", d.robots_yellow, YELLOW), ("blue", d.robots_blue, BLUE)):
        check(len(got) == len(want), f"{name}: {len(want)} {team} robots, got {len(got)}")
        for r, (rid, x, y, o, px, py, conf, h) in zip(got, want):
            what = f"{name} {team} {rid}"
            check(r.HasField("robot_id") and r.robot_id == rid, f"{what}: robot_id {r.robot_id}")
            check(r.x == f32(x) and r.y == f32(y), f"{what}: x, y ({r.x}, {r.y})")
            check(r.HasField("orientation") and math.isclose(r.orientation, f32(o), abs_tol=1e-6)
                  and -math.pi - 1e-6 <= r.orientation <= math.pi + 1e-6,
                  f"{what}: orientation {r.orientation}, want {o}")
            check(r.pixel_x == f32(px) and r.pixel_y == f32(py), f"{what}: pixels")
            check(math.isclose(r.confidence, conf), f"{what}: confidence")
            check(r.HasField("height") and r.height == f32(h), f"{what}: height {r.height}")


def mat(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) for j in range(3)] for i in range(3)]


def known_camera():
    """R (field -> camera) and the centre (cm) of ssl_frame.c's camera."""
    a, b = math.radians(10), math.radians(20)
    rx = [[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]]
    rz = [[math.cos(b), -math.sin(b), 0], [math.sin(b), math.cos(b), 0], [0, 0, 1]]
    return mat(rx, mat(rz, [[1, 0, 0], [0, -1, 0], [0, 0, -1]])), [50, -20, 300]


def quat_rotate(q, v):
    """v rotated by the unit quaternion q = (x, y, z, w), as ssl-vision's
    rotateVectorByQuaternion: q v q*."""
    x, y, z, w = q
    tx, ty, tz = 2 * (y * v[2] - z * v[1]), 2 * (z * v[0] - x * v[2]), 2 * (x * v[1] - y * v[0])
    return [v[0] + w * tx + y * tz - z * ty, v[1] + w * ty + z * tx - x * tz,
            v[2] + w * tz + x * ty - y * tx]


def check_calib(g):
    check(len(g.calib) == 1, f"geometry: one camera calibration, got {len(g.calib)}")
    if not g.calib:
        return
    c = g.calib[0]
    r, centre = known_camera()
    t = [-sum(r[i][k] * centre[k] for k in range(3)) * 10 for i in range(3)]  # mm
    q = (c.q0, c.q1, c.q2, c.q3)
    check(c.camera_id == 5 and c.pixel_image_width == 1280 and c.pixel_image_height == 720,
          "calib: camera 5, 1280x720")
    check(abs(math.hypot(*q) - 1) < 1e-6 and c.q3 >= 0, f"calib: a unit quaternion, q3 >= 0: {q}")
    for j in range(3):  # the quaternion turns the world's axes as R does
        e = [1.0 if k == j else 0.0 for k in range(3)]
        got = quat_rotate(q, e)
        check(all(abs(got[i] - r[i][j]) < 1e-5 for i in range(3)), f"calib: q turns axis {j} as R")
    check(all(abs(a - b) < 1e-3 * 3000 * 1e-3 for a, b in zip((c.tx, c.ty, c.tz), t)),
          f"calib: t = {(c.tx, c.ty, c.tz)}, want {t} mm")
    world = (c.derived_camera_world_tx, c.derived_camera_world_ty, c.derived_camera_world_tz)
    check(all(abs(a - 10 * b) < 3e-3 for a, b in zip(world, centre)),
          f"calib: camera at {world}, want {[10 * x for x in centre]} mm")
    check(c.focal_length == 800 and (c.principal_point_x, c.principal_point_y) == (640, 360)
          and c.distortion == 0, "calib: focal length, principal point, no distortion")
    for fx, fy in ((0, 0), (-1200, 900), (2000, -700), (500, 500)):  # field points, mm
        p = quat_rotate(q, [fx, fy, 0])
        p = [p[i] + (c.tx, c.ty, c.tz)[i] for i in range(3)]
        u = c.focal_length * p[0] / p[2] + c.principal_point_x
        v = c.focal_length * p[1] / p[2] + c.principal_point_y
        k = [fx / 10 - centre[0], fy / 10 - centre[1], -centre[2]]
        kc = [sum(r[i][j] * k[j] for j in range(3)) for i in range(3)]
        ku, kv = 800 * kc[0] / kc[2] + 640, 800 * kc[1] / kc[2] + 360
        check(math.hypot(u - ku, v - kv) < 0.01,
              f"calib: field ({fx}, {fy}) mm projects to ({u:.3f}, {v:.3f}), "
              f"the known camera says ({ku:.3f}, {kv:.3f})")


def main():
    ssl_frame, proto_dir = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        _, _, wrap_pb = load_protos(proto_dir, tmp)
        subprocess.run([ssl_frame, tmp], check=True)

        d = read(wrap_pb, tmp, "frame.bin")
        check(d.frame_number == 77, f"frame_number: the seq's low 32 bits ({d.frame_number})")
        check(d.t_capture == 1795000000.5 and d.t_sent == 1795000000.625, "t_capture, t_sent")
        check(d.camera_id == 5, "camera_id")
        check(len(d.balls) == 2, f"2 balls (the blob without a world point left out): {len(d.balls)}")
        if len(d.balls) == 2:
            check_ball("ball 0", d.balls[0], 1.0, 400, -125, 72.5, 320.5, 240.25)
            check_ball("ball 1", d.balls[1], 0.125, 50, 300, -200, 600.75, 30.5)
        check_robots("frame", d)

        d = read(wrap_pb, tmp, "aggregate.bin")
        check(d.frame_number == 78 and d.t_capture == 1.5 and d.t_sent == 2.5, "aggregate: frame")
        check(len(d.balls) == 1, "aggregate: one ball, the object's centroid")
        if d.balls:
            check_ball("aggregate ball", d.balls[0], 1.0, 550, -10, 10, 333, 222)
        check_robots("aggregate", d)

        d = read(wrap_pb, tmp, "noball.bin")
        check(d.t_capture == 3 and d.t_sent == 4 and d.camera_id == 5, "noball: frame")
        check(len(d.balls) == 0 and len(d.robots_yellow) == 0 and len(d.robots_blue) == 0,
              "noball: nothing seen")

        w = wrap_pb.SSL_WrapperPacket()
        with open(os.path.join(tmp, "geometry.bin"), "rb") as f:
            w.ParseFromString(f.read())
        check(w.HasField("geometry") and not w.HasField("detection"), "geometry.bin: geometry")
        check_calib(w.geometry)
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    print("ssl frames decoded: every field as the frame result says")
    return 0


if __name__ == "__main__":
    sys.exit(main())
