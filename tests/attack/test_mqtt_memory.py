#!/usr/bin/python3
"""Attack: MQTT memory stays flat, and the reconnects slow down, under
broker faults (issue 25, item 2).

    test_mqtt_memory.py TRACKD [--seconds S]

Two real trackd run side by side for S seconds (60 by default), each
publishing through a scripted proxy in front of its own real mosquitto:
  1. drop: the proxy closes every connection 0.3 s after accepting it (a
     broker that drops the connection on every frame). trackd backs off
     (0.5 s doubling to 8 s) also after connections the broker accepted, so
     it makes no more than 20 connections in the run (every 0.8 s it would
     make 75), says so in one log line, counts every frame published or
     dropped; its resident memory stays flat.
  2. slow + edits: the proxy reads 20 KB/s, and a control client edits an
     object of a 24-object set 10 times a second, each edit a new retained
     config (QoS 1) for the broker. Resident memory stays flat (only the
     newest config waits); after the edits stop, the broker's retained
     config is the last edit, not a stale one.
"Flat": the highest RSS of the last quarter of the run is at most 1 MiB over
the highest of the second quarter (after the warm-up); not checked under
ASan, whose quarantine keeps freed memory resident (LeakSanitizer checks at
exit). Prints `attack: mqtt_memory tried=N survived=N`.
"""
import json
import os
import re
import socket
import tempfile
import threading
import time

from attack import (SANITIZED, TOKEN, Daemon, check, finish, parse_args, report, ws_frame,
                    ws_open, ws_read_frame, write_objects)
from mqtt_rig import Broker, Proxy, mqtt_totals, ndjson_count, retained

DEMO = ["--size", "320x240", "--fps", "30", "--backend", "cpu", "--no-preview",
        "--stats-interval", "0"]
FLAT_KB = 1024


def objects(n):
    """The demo's red disc and n - 1 more objects, names o1..."""
    objs = [{"name": "red", "space": "hsv", "lo": [346, 110, 70], "hi": [14, 255, 255]}]
    for i in range(1, n):
        objs.append({"name": f"o{i}", "space": "hsv", "lo": [i * 10, 100, 100],
                     "hi": [i * 10 + 5, 255, 255]})
    return {"objects": objs}


class Editor(threading.Thread):
    """A control client that edits object o1 rate times a second until
    stopped, and reads (and drops) what the daemon sends meanwhile."""

    def __init__(self, port, path, rate=10):
        super().__init__(daemon=True)
        self.s = ws_open(port, path)
        self.rate, self.stop = rate, threading.Event()
        self.edits, self.last = 0, None
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        self.s.settimeout(1.0)
        while not self.stop.is_set():
            try:
                ws_read_frame(self.s)
            except socket.timeout:
                continue
            except (OSError, ConnectionError):
                return

    def run(self):
        while not self.stop.is_set():
            v = self.edits % 200
            obj = {"name": "o1", "space": "hsv", "lo": [10, 50 + v // 4, 100], "hi": [15, 255, 255]}
            self.s.sendall(ws_frame(json.dumps({"type": "update_object", "id": f"e{self.edits}",
                                                "name": "o1", "object": obj})))
            self.last = obj["lo"]
            self.edits += 1
            time.sleep(1.0 / self.rate)

    def close(self):
        self.stop.set()
        self.join(5)
        self.s.close()


def flat(name, samples):
    """samples: [(t, rss kB)] over the run; whether the last quarter stayed
    within FLAT_KB of the second."""
    if SANITIZED:
        print(f"skip {name}: RSS bound (ASan build)")
        return True
    t_end = samples[-1][0]
    q = t_end / 4
    second = max(r for t, r in samples if q <= t < 2 * q)
    last = max(r for t, r in samples if t >= 3 * q)
    return check(last - second <= FLAT_KB,
                 f"{name}: resident memory flat ({second} kB in the second quarter, {last} kB in "
                 f"the last; {last - second:+d} kB, bound {FLAT_KB})")


def accounting(name, dm, out):
    totals = mqtt_totals(dm.log_text())
    processed = ndjson_count(out)
    ok = check(totals is not None and totals["published"] + totals["dropped"] == processed,
               f"{name}: every one of the {processed} frames processed counted published or "
               f"dropped ({totals})")
    return ok, totals


def main():
    a = parse_args(seconds=60.0)
    results = []
    with tempfile.TemporaryDirectory() as d:
        b1, b2 = Broker(d), Broker(d)
        p1 = Proxy(b1.port, "drop", hold_s=0.3)
        p2 = Proxy(b2.port, "slow", rate=20000)
        os.mkdir(os.path.join(d, "drop"))
        os.mkdir(os.path.join(d, "edits"))
        out1, out2 = os.path.join(d, "drop.ndjson"), os.path.join(d, "edits.ndjson")
        objs = write_objects(d, objects(24))
        editor = None
        try:
            with Daemon(a.trackd, [*DEMO, "--name", "drop", "-o", out1, "--mqtt",
                                   f"mqtt://127.0.0.1:{p1.port}/t"],
                        os.path.join(d, "drop")) as dm1, \
                 Daemon(a.trackd, [*DEMO, "--name", "edits", "-o", out2, "-c", objs, "--mqtt",
                                   f"mqtt://127.0.0.1:{p2.port}/t"],
                        os.path.join(d, "edits"), token=TOKEN) as dm2:
                editor = Editor(dm2.port, dm2.path)
                editor.start()
                t0 = time.monotonic()
                rss1, rss2 = [], []
                while time.monotonic() - t0 < a.seconds and dm1.alive() and dm2.alive():
                    t = time.monotonic() - t0
                    rss1.append((t, dm1.rss_kb()))
                    rss2.append((t, dm2.rss_kb()))
                    time.sleep(1.0)
                editor.close()
                check(dm1.alive() and dm2.alive(), "both trackd run through")
                edits, last = editor.edits, editor.last
                # The newest config reaches the broker once the slow proxy has
                # passed what was before it.
                got = {}

                def newest():
                    c = retained(b2.port, "t/edits/config", timeout=2)
                    got["c"] = c
                    o1 = c and next((o for o in c["objects"] if o["name"] == "o1"), None)
                    return o1 is not None and o1["lo"] == last

                end = time.monotonic() + 20
                while not newest() and time.monotonic() < end:
                    time.sleep(0.5)
                o1 = got["c"] and next((o for o in got["c"]["objects"] if o["name"] == "o1"), None)
                results.append(check(o1 is not None and o1["lo"] == last,
                                     f"edits: the retained config is the last of {edits} edits "
                                     f"(lo {last}; the broker has {o1 and o1['lo']})"))
            ok1, t1 = accounting("drop", dm1, out1)
            ok2, t2 = accounting("edits", dm2, out2)
            log1 = dm1.log_text()
            conns = t1["connections"] if t1 else -1
            ok1 &= check(3 <= conns <= 20 and p1.accepted <= 21,
                         f"drop: the connections back off ({conns} accepted by trackd's count, "
                         f"{p1.accepted} by the proxy's, in {a.seconds:.0f} s)")
            said = re.findall(r"accepted the connection and it ended", log1)
            ok1 &= check(len(said) == 1, f"drop: one log line says the broker drops the "
                         f"connection ({len(said)})")
            ok1 &= flat("drop", rss1)
            ok2 &= check(edits >= a.seconds * 5, f"edits: {edits} edits sent")
            ok2 &= flat("edits", rss2)
            results += [ok1, ok2]
        finally:
            if editor:
                editor.stop.set()
            p1.close()
            p2.close()
            b1.stop()
            b2.stop()
    report("mqtt_memory", tried=3, survived=sum(bool(r) for r in results))
    finish()


if __name__ == "__main__":
    main()
