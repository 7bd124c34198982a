#!/usr/bin/python3
"""Integration: markers (issue 26) through the daemon on generated SSL scenes.

ssl_scene.py draws 8 robots (4 blue, 4 yellow, ids 0..3, the league's
standard pattern) and a ball over 60 frames of 640x480, with their truth;
the clips are made at test time: FFV1 (lossless) and H.264 (yuv420p, crf
16). `trackd --input CLIP --objects examples/ssl-field.json --fast --output -`
runs on each (the FFV1 clip with a calibration added: 0.45 px per mm, world
y up, so world points and headings are known too). Checked:
- every robot that touches no other (nor the ball) is found once in every frame (a marker
  with lost 0 at its centre) with its team (the pattern's name) and id;
- heading error p95 <= 2 degrees and centre error <= 0.5 px, over those;
- no marker where there is none: every found marker sits on a robot (any,
  touching ones included) and has that robot's team and id;
- each robot keeps one track_id through the clip, no two share one;
- with the calibration: wx, wy the centre in mm (to the pixel error's
  reach: 0.5 px is 1.2 mm), wheading the heading (the map keeps angles);
  the tracked ball's instances have wx, wy, wvx, wvy (mm, mm/s at 30 fps);
- --udp datagrams (split over objects, then markers) and --osc messages
  carry the same markers;
- backends cpu and cpu-ref give identical markers (assembly runs on the
  host from blob lists that are identical across backends).
"""
import json
import math
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
W, H, FRAMES, ROBOTS, SCALE, FPS = 640, 480, 60, 8, 0.45, 30
HEAD_P95, CENTRE_MAX = 2.0, 0.5
FIND_R = 6.0  # px: a marker this near a robot's centre is that robot's
ROBOT_R, BALL_R = 90.0, 21.5  # mm, as ssl_scene.py draws them


def make_clip(path, h264):
    cmd = [sys.executable, os.path.join(HERE, "ssl_scene.py"), path, "--frames", str(FRAMES),
           "--size", f"{W}x{H}", "--robots", str(ROBOTS), "--scale", str(SCALE)]
    subprocess.run(cmd + (["--h264"] if h264 else []), check=True)
    with open(path + ".truth.json") as f:
        return json.load(f)["frames"]


def calibrated_objects(tmp):
    """examples/ssl-field.json with a calibration: world mm = (px, -py) /
    SCALE (the floor map; the patterns' height needs a camera pose to
    matter, which a plain homography has not)."""
    with open(os.path.join(ROOT, "examples", "ssl-field.json")) as f:
        doc = json.load(f)
    pts = [[x, y, x / SCALE, -y / SCALE] for x, y in ((0, 0), (W, 0), (W, H), (0, H))]
    doc["calibration"] = {"unit": "mm", "points": pts}
    for o in doc["objects"]:
        if o["name"] == "ball":
            o["track"] = True  # its instance gets world points and velocities
    path = os.path.join(tmp, "field-cal.json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def run(trackd, clip, objs, backend):
    out = subprocess.run([trackd, "--input", clip, "--objects", objs, "--fast", "--output", "-",
                          "--no-server", "--log-level", "warn", "--backend", backend],
                         capture_output=True, text=True, timeout=240)
    if out.returncode != 0:
        sys.exit(f"trackd {backend} on {clip} exited {out.returncode}: {out.stderr}")
    frames = [json.loads(l) for l in out.stdout.splitlines() if l.startswith('{"type":"frame"')]
    if len(frames) != FRAMES:
        sys.exit(f"{clip}: {len(frames)} frames, want {FRAMES}")
    return frames


def ball_on(robot, ball):
    """The generator draws the ball over robots (a camera above would see
    the cover hide it): a robot the ball overlaps counts as touching."""
    return math.hypot(robot["x"] - ball[0], robot["y"] - ball[1]) < (ROBOT_R + BALL_R) * SCALE + 2


def angle_diff(a, b):
    d = abs(a - b) % 360.0
    return 360.0 - d if d > 180 else d


def p95(v):
    v = sorted(v)
    return v[min(len(v) - 1, int(math.ceil(0.95 * len(v))) - 1)]


def check_ball(frames):
    """The tracked ball's instances: world point and velocity per second
    (the clip's 30 fps) by the calibration's map, world y up."""
    fails, seen = [], 0
    for fr in frames:
        ball = next(o for o in fr["objects"] if o["name"] == "ball")
        for x in ball.get("instances", []):
            seen += 1
            want = (x["cx"] / SCALE, -x["cy"] / SCALE, x["vx"] * FPS / SCALE,
                    -x["vy"] * FPS / SCALE)
            got = (x["wx"], x["wy"], x["wvx"], x["wvy"])
            # cx, vx are rounded (2 and 3 decimals): their error, scaled
            if any(abs(g - w) > t for g, w, t in zip(got, want, (0.02, 0.02, 0.06, 0.06))):
                fails.append(f"frame {fr['seq']}: ball instance world {got}, want {want}")
    if not seen:
        fails.append("the tracked ball has no instances")
    return fails


def check(name, frames, truth, calibrated):
    fails, heads, centres, tracks = [], [], [], {}
    for fr, tr in zip(frames, truth):
        seq = fr["seq"]
        found = [m for m in fr.get("markers", []) if m["lost"] == 0]
        robots = tr["robots"]
        for m in found:  # no marker where there is none
            near = [r for r in robots if math.hypot(m["cx"] - r["x"], m["cy"] - r["y"]) < FIND_R]
            if len(near) != 1 or near[0]["team"] != m["pattern"] or near[0]["id"] != m["id"]:
                fails.append(f"frame {seq}: marker {m['pattern']} {m['id']} at "
                             f"({m['cx']}, {m['cy']}) is no robot of that team and id")
        for k, r in enumerate(robots):
            at = [m for m in found if math.hypot(m["cx"] - r["x"], m["cy"] - r["y"]) < FIND_R]
            if r["touching"] or ball_on(r, tr["ball"]):
                continue
            if len(at) != 1:
                fails.append(f"frame {seq}: robot {r['team']} {r['id']}: {len(at)} markers")
                continue
            m = at[0]
            heads.append(angle_diff(m["heading"], r["heading"]))
            centres.append(math.hypot(m["cx"] - r["x"], m["cy"] - r["y"]))
            tracks.setdefault(k, set()).add(m["track_id"])
            if calibrated:
                wx, wy = r["x"] / SCALE, -r["y"] / SCALE
                if math.hypot(m["wx"] - wx, m["wy"] - wy) > CENTRE_MAX / SCALE + 0.01:
                    fails.append(f"frame {seq}: robot {r['team']} {r['id']}: world "
                                 f"({m['wx']}, {m['wy']}) for ({wx:.2f}, {wy:.2f})")
                if angle_diff(m["wheading"], m["heading"]) > 0.02:
                    fails.append(f"frame {seq}: wheading {m['wheading']} for heading "
                                 f"{m['heading']}")
            elif "wx" in m:
                fails.append(f"frame {seq}: world keys without a calibration")
    if calibrated:
        fails += check_ball(frames)
    for k, ids in tracks.items():
        if len(ids) != 1:
            fails.append(f"robot {k}: track_ids {sorted(ids)}")
    all_ids = [next(iter(v)) for v in tracks.values() if len(v) == 1]
    if len(set(all_ids)) != len(all_ids):
        fails.append(f"robots share track_ids: {all_ids}")
    if not heads:
        fails.append("no robot measured")
    else:
        print(f"{name}: {len(heads)} robot-frames, heading error p95 {p95(heads):.3f} deg "
              f"(max {max(heads):.3f}), centre error max {max(centres):.3f} px")
        if p95(heads) > HEAD_P95:
            fails.append(f"heading error p95 {p95(heads):.3f} > {HEAD_P95}")
        if max(centres) > CENTRE_MAX:
            fails.append(f"centre error {max(centres):.3f} px > {CENTRE_MAX}")
    return [f"{name}: {f}" for f in fails]


def check_udp_osc(trackd, clip, objs):
    """--udp and --osc on the same clip (paced, not --fast: the senders'
    queues keep up): each frame's datagrams joined carry its NDJSON markers
    (frames over 1400 bytes split over objects, then markers); every OSC
    /trackd/<camera>/<pattern>/marker message is one of them (float32)."""
    import socket
    sys.path.insert(0, HERE)
    from test_udp_osc import Listener, osc_decode
    socks = []
    for _ in range(2):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    udp, osc = Listener(socks[0]), Listener(socks[1])
    out = subprocess.run([trackd, "--input", clip, "--objects", objs, "--output", "-",
                          "--no-server", "--log-level", "info", "--backend", "cpu", "--name", "ssl",
                          "--udp", f"127.0.0.1:{socks[0].getsockname()[1]}",
                          "--osc", f"127.0.0.1:{socks[1].getsockname()[1]}"],
                         capture_output=True, text=True, timeout=240)
    dgrams, oscs = udp.stop(), osc.stop()
    fails = []
    truth = {json.loads(l)["seq"]: json.loads(l) for l in out.stdout.splitlines()
             if l.startswith('{"type":"frame"')}
    parts = {}
    for d in dgrams:
        m = json.loads(d)
        parts.setdefault(m["seq"], {})[m["part"]] = m
    complete = 0
    for seq, got in parts.items():
        n = next(iter(got.values()))["parts"]
        if sorted(got) != list(range(1, n + 1)):
            continue
        complete += 1
        joined = [x for i in range(1, n + 1) for x in got[i]["markers"]]
        if joined != truth[seq]["markers"]:
            fails.append(f"udp seq {seq}: markers {joined} for {truth[seq]['markers']}")
    if complete < len(truth) // 2:
        fails.append(f"udp: only {complete} of {len(truth)} frames arrived whole")
    want = {}
    f32 = lambda v: struct.unpack(">f", struct.pack(">f", v))[0]
    for fr in truth.values():
        for m in fr["markers"]:
            key = (f"/trackd/ssl/{m['pattern']}/marker", "iiffffifff", str(m["id"]),
                   str(m["track_id"]))
            want.setdefault(key, []).append(m)
    n_markers = 0
    for d in oscs:
        msg = osc_decode(d)
        if not msg[0].endswith("/marker"):
            continue
        n_markers += 1
        cands = want.get(tuple(msg[:4]), [])
        # the frame's values are rounded (2 decimals): float32 of the exact
        # value is within 0.005 of them
        if not any(abs(float(msg[4]) - m["cx"]) <= 0.006 and abs(float(msg[5]) - m["cy"]) <= 0.006
                   and abs(float(msg[6]) - m["heading"]) <= 0.006 for m in cands):
            fails.append(f"osc message {msg} is no frame's marker")
    if n_markers < sum(len(f["markers"]) for f in truth.values()) // 2:
        fails.append(f"osc: {n_markers} marker messages")
    print(f"udp: {complete} frames whole, {len(dgrams)} datagrams; osc: {n_markers} marker messages")
    return [f"udp/osc: {f}" for f in fails[:10]]


def main():
    trackd = sys.argv[1]
    fails = []
    with tempfile.TemporaryDirectory() as tmp:
        field = os.path.join(ROOT, "examples", "ssl-field.json")
        cal = calibrated_objects(tmp)
        lossless = os.path.join(tmp, "ssl.mkv")
        truth = make_clip(lossless, False)
        cpu = run(trackd, lossless, cal, "cpu")
        fails += check("ffv1 cpu", cpu, truth, True)
        fails += check_udp_osc(trackd, lossless, cal)
        ref = run(trackd, lossless, cal, "cpu-ref")
        for a, b in zip(cpu, ref):
            if a["markers"] != b["markers"]:
                fails.append(f"frame {a['seq']}: cpu and cpu-ref markers differ:\n"
                             f"  {a['markers']}\n  {b['markers']}")
                break
        h264 = os.path.join(tmp, "ssl.mp4")
        truth = make_clip(h264, True)
        fails += check("h264 cpu", run(trackd, h264, field, "cpu"), truth, False)
    for f in fails[:40]:
        print("FAIL", f)
    if len(fails) > 40:
        print(f"... and {len(fails) - 40} more")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
