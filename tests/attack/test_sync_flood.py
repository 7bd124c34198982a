#!/usr/bin/python3
"""Attack: a flood of clock sync requests (PROTOCOL.md section 9, Clock
sync) at trackd over a real mosquitto.

A real trackd (the demo scene, camera "cam") publishes to the broker; a
paho client floods PREFIX/cam/sync/request/ID for a few seconds: valid
requests far over the 200 a second trackd answers, payloads that are not
JSON, nesting 100,000 deep, a 200 KB string, other message types, a t0 that
is no number, client ids that are too long or hold bytes outside a camera
name's. Checked:
  - trackd lives through it, exits 0 on SIGTERM (under ASan/UBSan: nothing
    reported);
  - its frames keep coming during the flood;
  - replies go only to the valid ids, each a sync reply with its times, and
    never more than 200 in any second (counted over the whole flood:
    at most 200 x (its seconds + 1));
  - after it, a client's sync is answered again, with an offset within
    its bound.

    test_sync_flood.py TRACKD EXAMPLES_DIR
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

TRACKD, EXAMPLES = sys.argv[1], sys.argv[2]
sys.path.insert(0, EXAMPLES)
import clock_sync  # noqa: E402

SECONDS = 3.0
VALID = ["a", "b.c", "x-1_2"]


def payloads():
    """(client id, payload) of the flood's garbage, a few hundred messages."""
    out = []
    for i in range(20):
        out += [("bad", b"\xff\xfe not json"), ("bad", b"[1,2,3]"), ("bad", b"[" * 100000),
                ("bad", b'"' + b"x" * 200000 + b'"'), ("bad", b'{"type":"ping","id":1}'),
                ("bad", b'{"type":"sync","t0":"now"}'),
                ("y" * 100, b'{"type":"sync","t0":1}'),   # too long an id
                ("caf\xc3\xa9", b'{"type":"sync","t0":1}'),  # bytes outside a name's
                ("sp ace", b'{"type":"sync","t0":1}')]
    return out


def main():
    tmp = tempfile.mkdtemp(prefix="sync-flood-")
    broker = Broker(tmp, free_port(), "set_tcp_nodelay true\n")
    broker.start()
    tlog_path = os.path.join(tmp, "trackd.log")
    tlog = open(tlog_path, "wb")
    cam = subprocess.Popen([TRACKD, "--name", "cam", "--mqtt",
                            f"mqtt://127.0.0.1:{broker.port}/sf", "--no-server", "--size",
                            "320x240", "--fps", "15", "--backend", "cpu", "--no-preview"],
                           stdout=subprocess.DEVNULL, stderr=tlog)
    sub = Sub(broker.port, ["sf/cam/frame", "sf/cam/sync/reply/#", "sf/cam/status"])
    rc = None
    try:
        check(wait_until(lambda: any(json.loads(p)["online"] for t, r, p in
                                     sub.take("sf/cam/status")), 20)
              and wait_until(lambda: len(sub.take("sf/cam/frame")) >= 5, 20),
              "trackd publishes and is online", counted=False)
        evil = mqtt.Client(client_id="evil")
        evil.connect("127.0.0.1", broker.port)
        evil.loop_start()
        f0 = len(sub.take("sf/cam/frame"))
        sent = [0]
        t_start = time.monotonic()
        garbage = payloads()

        def flood():
            k = 0
            while time.monotonic() - t_start < SECONDS:
                cid = VALID[k % len(VALID)]
                evil.publish(f"sf/cam/sync/request/{cid}",
                             json.dumps({"type": "sync", "id": k, "t0": k}), 0)
                if k < len(garbage):
                    tail, p = garbage[k]
                    evil.publish("sf/cam/sync/request/" + tail, p, 0)
                k += 1
                sent[0] = k
                if k % 200 == 0:
                    time.sleep(0.05)

        th = threading.Thread(target=flood, daemon=True)
        th.start()
        th.join(SECONDS + 30)
        flood_s = time.monotonic() - t_start
        time.sleep(1.0)  # the last replies
        during = len(sub.take("sf/cam/frame")) - f0
        check(cam.poll() is None, f"trackd lives through {sent[0]} sync requests and "
              f"{len(garbage)} bad ones")
        check(during >= 10, f"its frames kept coming during the flood ({during})")
        replies = sub.take("sf/cam/sync/reply/")
        ids = {t.rsplit("/", 1)[1] for t, r, p in replies}
        check(ids <= set(VALID), f"replies only to the valid ids ({sorted(ids)[:5]})")
        ok = all(json.loads(p)["type"] == "sync" and "rx_mono" in json.loads(p)
                 for t, r, p in replies)
        check(ok, "every reply is a sync reply with its times")
        cap = 200 * (flood_s + 2)
        check(0 < len(replies) <= cap and len(replies) < sent[0],
              f"{len(replies)} replies to {sent[0]} requests in {flood_s:.1f} s: at most "
              f"200 a second ({cap:.0f})")
        time.sleep(1.0)  # a fresh second for the client
        samples = clock_sync.sync_mqtt("127.0.0.1", broker.port, "sf", "cam", 8)
        if samples:
            wall, mono, delay = clock_sync.best(samples)
            truth = time.monotonic() - time.time()
            check(abs(mono - truth) <= delay / 2 + 1e-5,
                  f"after the flood a client's sync is answered ({len(samples)} of 8), offset "
                  f"within its bound ({(mono - truth) * 1e6:+.0f} us, +-{delay / 2 * 1e6:.0f})")
        else:
            check(False, "after the flood a client's sync is answered")
        evil.loop_stop()
        evil.disconnect()
    finally:
        sub.close()
        cam.terminate()
        rc = cam.wait(20)
        broker.stop()
        tlog.close()
    with open(tlog_path, errors="replace") as f:
        log = f.read()
    check(rc == 0 and "ERROR: AddressSanitizer" not in log and "runtime error" not in log,
          f"trackd exits 0 on SIGTERM, no sanitizer report (rc {rc})")
    report("sync_flood", tried=sent[0], survived=int(rc == 0))
    finish()


if __name__ == "__main__":
    main()
