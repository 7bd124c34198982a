#!/usr/bin/python3
"""Attack: a hostile publisher on the cameras' prefix against trackd-fuse.

A real mosquitto, a real trackd (the demo scene with a calibration, camera
"cam") and trackd-fuse subscribed. While trackd publishes, a paho client
floods the prefix for a few seconds: payloads that are not JSON, JSON that
is not an object, nesting 100,000 deep, a 200 KB string, frames of 100
made-up cameras (more than the 32 a fuser follows), frames with absurd
numbers, configs whose calibration does not solve, statuses of made-up
cameras. Checked:
  - the fuser lives through it (and exits 0 on SIGTERM; under ASan/UBSan:
    nothing reported), its RSS stays under 64 MB (skipped under ASan);
  - the real camera's world messages keep coming during the flood and after
    it, with its objects;
  - the log is not flooded: the table-full line once, bad payloads at most
    one line per 10 s (a bounded count of lines in all).

    test_fuse_hostile.py TRACKD TRACKD_FUSE DEMO_OBJECTS_JSON
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as mqtt

from attack import check, finish, report, wait_until
from daemon_proc import free_port
from mqtt_proc import Broker, Sub

TRACKD, FUSE, DEMO_OBJS = sys.argv[1], sys.argv[2], sys.argv[3]
SANITIZED = os.environ.get("TRK_SANITIZE") == "1"
CAL = {"unit": "mm", "points": [[0, 0, 0, 0], [320, 0, 1000, 0], [320, 240, 1000, 750],
                                [0, 240, 0, 750]]}


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def payloads():
    """(topic tail, payload) of the flood, about 2,000 messages."""
    frame = {"type": "frame", "seq": 1, "width": 320, "height": 240, "wall_ms": 0,
             "latency": {"queue_ms": 0, "process_ms": 0},
             "objects": [{"name": "red", "found": True, "cx": 1e308, "cy": -1e308,
                          "instances": [{"id": 2 ** 62, "cx": 1e300, "cy": 5, "vx": 1e300,
                                         "vy": -1e300, "lost": 0}] * 64}],
             "markers": [{"pattern": "p", "id": -1, "wx": 1e308, "wy": 1e308,
                          "wheading": 1e308, "lost": 0}] * 64}
    bad_cal = {"type": "objects", "objects": [], "calibration": {
        "points": [[0, 0, 0, 0], [1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]}}
    out = []
    for i in range(20):
        out += [(f"evil{i}/frame", b"\xff\xfe not json"), (f"evil{i}/frame", b"[1,2,3]"),
                (f"evil{i}/frame", b"[" * 100000), (f"evil{i}/frame", b'"' + b"x" * 200000 + b'"'),
                (f"evil{i}/config", json.dumps(bad_cal).encode()),
                (f"evil{i}/status", b'{"online":"yes"}')]
    for k in range(1500):
        frame["wall_ms"] = time.time() * 1e3 + (k % 7) * 1e9
        out.append((f"fake{k % 100}/frame", json.dumps(frame).encode()))
    return out


def main():
    tmp = tempfile.mkdtemp(prefix="fuse-hostile-")
    broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")
    broker.start()
    url = f"mqtt://127.0.0.1:{broker.port}/hz"
    with open(DEMO_OBJS) as f:
        objs = json.load(f)
    objs["calibration"] = CAL
    objs_path = os.path.join(tmp, "cam.json")
    with open(objs_path, "w") as f:
        json.dump(objs, f)
    flog_path = os.path.join(tmp, "fuse.log")
    flog = open(flog_path, "wb")
    fuse = subprocess.Popen([FUSE, "--mqtt", url], stderr=flog)
    tlog = open(os.path.join(tmp, "trackd.log"), "wb")
    cam = subprocess.Popen([TRACKD, "--name", "cam", "--objects", objs_path, "--mqtt", url,
                            "--no-server", "--size", "320x240", "--fps", "15", "--backend", "cpu",
                            "--no-preview"], stdout=subprocess.DEVNULL, stderr=tlog)
    sub = Sub(broker.port, ["hz/world/frame"])

    def worlds_with_cam(since):
        return [m for m in (json.loads(p) for t, r, p in sub.take("hz/world/frame")[since:])
                if "cam" in m["cameras"] and m["objects"]]

    try:
        check(wait_until(lambda: len(worlds_with_cam(0)) >= 10, 20),
              "the real camera's objects are fused before the flood", counted=False)
        evil = mqtt.Client(client_id="evil")
        evil.connect("127.0.0.1", broker.port)
        evil.loop_start()
        n0 = len(sub.take("hz/world/frame"))
        sent = 0
        done = threading.Event()

        def flood():
            nonlocal sent
            for tail, p in payloads():
                evil.publish("hz/" + tail, p, 0)
                sent += 1
                if sent % 100 == 0:
                    time.sleep(0.2)  # a few seconds of it, the camera between
            done.set()

        threading.Thread(target=flood, daemon=True).start()
        done.wait(120)
        during = worlds_with_cam(n0)
        check(fuse.poll() is None, f"the fuser lives through {sent} hostile messages")
        check(len(during) >= 10, f"the camera's world messages kept coming during the flood "
              f"({len(during)})")
        n1 = len(sub.take("hz/world/frame"))
        check(wait_until(lambda: len(worlds_with_cam(n1)) >= 10, 20),
              "and after it, with the camera's objects")
        if not SANITIZED:
            kb = rss_kb(fuse.pid)
            check(kb < 64 * 1024, f"the fuser's RSS after the flood: {kb} kB < 64 MB")
        evil.loop_stop()
        evil.disconnect()
    finally:
        sub.close()
        cam.terminate()
        cam.wait(20)
        fuse.terminate()
        rc = fuse.wait(20)
        broker.stop()
        flog.close()
    with open(flog_path, errors="replace") as f:
        log = f.read()
    check(rc == 0 and "ERROR: AddressSanitizer" not in log and "runtime error" not in log,
          f"the fuser exits 0 on SIGTERM, no sanitizer report (rc {rc})")
    lines = log.splitlines()
    full = sum("more than 32 cameras" in l for l in lines)
    bad = sum("is ignored" in l for l in lines)
    check(full == 1, f"the camera table full is logged once ({full})")
    check(0 < bad <= 5 and len(lines) < 100,
          f"bad payloads logged at most once per 10 s ({bad} lines; {len(lines)} in all)")
    report("fuse_hostile", tried=sent, survived=int(fuse.returncode == 0))
    finish()


if __name__ == "__main__":
    main()
