#!/usr/bin/python3
"""trackd-ws-probe (bench/ws_probe.c) against a real daemon: the demo scene
on the cpu backend, 30 frames after 5 of warm-up. Every line is a frame with
capture -> client and its parts, which add up, and every part is possible
(nothing negative, the client's read after the hand-off); a port with no
daemon is an error, not an empty success.

    test_ws_probe.py TRACKD TRACKD_WS_PROBE
"""
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon_proc import start_trackd, stop_trackd  # noqa: E402

failed = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failed.append(what)


def main():
    trackd, probe = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "trackd.log"), "w") as log:
            p, port = start_trackd(trackd, ["--backend", "cpu", "--threads", "1", "--size", "320x240",
                                            "--fps", "30", "--no-preview", "--log-level", "warn"], log)
            try:
                r = subprocess.run([probe, str(port), "30", "5", "60"], capture_output=True,
                                   text=True, timeout=90)
            finally:
                stop_trackd(p)
    check(r.returncode == 0, f"the probe exits 0 (got {r.returncode}: {r.stderr.strip()})")
    rows = [[float(x) for x in line.split()] for line in r.stdout.splitlines()]
    check(len(rows) == 30 and all(len(v) == 5 for v in rows),
          f"30 frames, 5 numbers each (got {len(rows)})")
    for i, (total, q, pr, h, d) in enumerate(rows):
        check(0 < total < 10000 and min(q, pr, h) >= 0 and d >= 0,
              f"frame {i}: total {total}, parts {q} {pr} {h} {d} possible")
        check(abs(total - (q + pr + h + d)) < 0.001, f"frame {i}: the parts add up to the total")
    # A port with no daemon: an error.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    free = s.getsockname()[1]
    s.close()
    r = subprocess.run([probe, str(free), "3", "0", "5"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and not r.stdout, f"no daemon: exit 1, nothing printed (got {r.returncode})")
    if failed:
        print(f"{len(failed)} check(s) failed")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
