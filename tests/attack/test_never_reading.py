#!/usr/bin/python3
"""Attack: many clients connect, ask for previews and never read.

    test_never_reading.py TRACKD [--clients N] [--seconds S]

trackd streams the demo scene with large, frequent previews (640 px wide,
quality 90, 30 per second). N raw-socket clients with a 4 KiB receive buffer
do the WebSocket handshake, subscribe to previews and then never read. Each
one's queues are bounded (PROTOCOL.md section 1, Queues and drop policy), so:
  - the daemon holds every one of them (stats.clients) and keeps tracking: a
    reading client still gets frames, seq strictly increasing;
  - the stalled clients really are stalled (data waits unread in their
    sockets) and the daemon counts what it drops for them;
  - resident memory (/proc/PID/status) stays bounded: at most 256 KiB per
    stalled client plus 8 MiB over the level before they came, and flat
    while they stay (not checked under ASan, whose quarantine keeps freed
    memory resident; LeakSanitizer checks at exit instead);
  - when they go, the daemon's descriptors come back to the level before.
"""
import json
import socket
import tempfile
import time

from attack import (SANITIZED, Daemon, Reader, abort, check, finish, parse_args, report,
                    wait_until, ws_frame, ws_open)


def main():
    a = parse_args(clients=40, seconds=8.0)
    n = a.clients
    with tempfile.TemporaryDirectory() as d:
        stallers = []
        with Daemon(a.trackd, ["--size", "640x360", "--fps", "30", "--backend", "cpu",
                               "--preview-width", "640", "--preview-quality", "90",
                               "--preview-fps", "30", "--stats-interval", "0"], d) as dm:
            try:
                reader = Reader(dm.port)
                reader.start()
                time.sleep(2.0)  # warm-up: encoder, lws buffers
                check(wait_until(lambda: reader.stats is not None, 5), "the reader gets stats")
                rss0, fds0 = dm.rss_kb(), dm.fds()
                dropped0 = reader.stats["ws"]["messages_dropped"] if reader.stats else 0

                for _ in range(n):
                    s = ws_open(dm.port, rcvbuf=4096)
                    s.sendall(ws_frame(json.dumps({"type": "subscribe", "preview": True})))
                    stallers.append(s)
                print(f"{n} clients connected and stalled; rss before {rss0} kB, fds {fds0}")
                time.sleep(3.0)  # their socket buffers fill, the daemon starts dropping
                t_window = time.monotonic()
                rss = []
                while time.monotonic() - t_window < a.seconds:
                    rss.append(dm.rss_kb())
                    time.sleep(0.5)
                check(dm.alive(), "trackd is alive with the stalled clients")
                st = reader.stats or {}
                check(st.get("clients") == n + 1,
                      f"the daemon holds all {n + 1} clients (stats.clients {st.get('clients')})")
                t_end = time.monotonic()
                check(reader.error is None and reader.frames_since(t_window) > 0 and
                      wait_until(lambda: reader.frames_since(t_end) > 0, 10),
                      f"the reading client keeps getting frames "
                      f"({reader.frames_since(t_window)} in the window, error {reader.error})")
                check(all(b > a for a, b in zip(reader.seqs, reader.seqs[1:])),
                      "the reader's seq is strictly increasing")
                waiting = 0
                for s in stallers:
                    try:
                        waiting += len(s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)) > 0
                    except BlockingIOError:
                        pass
                check(waiting == n, f"every stalled client has unread data waiting ({waiting}/{n})")
                dropped = st.get("ws", {}).get("messages_dropped", 0) - dropped0
                check(dropped > 0, f"the daemon drops for the stalled clients ({dropped} dropped)")
                peak, growth = max(rss), max(rss) - rss0
                late = rss[-1] - rss[len(rss) // 2]
                print(f"rss: before {rss0} kB, peak {peak} kB, series {rss}")
                if SANITIZED:
                    print("ASan build: RSS bounds not checked (quarantine); LeakSanitizer at exit")
                else:
                    bound = n * 256 + 8192
                    check(growth <= bound, f"rss grew by {growth} kB with {n} stalled clients "
                          f"(bound {bound} kB)")
                    check(late <= 2048, f"rss flat while they stay: {late} kB in the second half")

                for i, s in enumerate(stallers):  # half vanish, half close politely
                    if i % 2:
                        abort(s)
                    else:
                        s.close()
                stallers = []
                fds = wait_until(lambda: dm.fds() <= fds0 and dm.fds(), 15)
                check(fds and fds <= fds0,
                      f"descriptors back to {fds0} after they left ({dm.fds()})")
                check(wait_until(lambda: reader.stats and reader.stats.get("clients") == 1, 10),
                      "stats.clients back to 1")
                reader.stop.set()
                reader.join(5)
                survived = n if dm.alive() and not reader.error else 0
                report("never_reading", clients=n + 1, tried=n, survived=survived,
                       rss_growth_kb=growth if not SANITIZED else "n/a")
            finally:
                for s in stallers:
                    s.close()
    finish()


if __name__ == "__main__":
    main()
