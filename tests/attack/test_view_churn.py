#!/usr/bin/python3
"""Attack: clients that take every mask view and held frame, then vanish.

    test_view_churn.py TRACKD [--rounds N] [--max-seconds S]

Each round, 9 WebSocket clients (raw sockets, authenticated) each ask for
their own mask view (`preview` `mask`, a range for odd clients): 8 get it,
the 9th `busy`. 5 of them then try to hold a previewed frame (`preview`
`hold` with the seq of a preview they received): 4 get it, the 5th `busy`;
each holder samples its held frame by `seq` and must get that frame. Then
every client disappears: half reset their sockets, half close cleanly. The
next round must get every view and hold again, so the daemon forgets a
client's view and held frame when it goes, however it goes. A reader
client watches results throughout. Afterwards the daemon's descriptors and
resident memory (within 8 MiB; not checked under ASan) are back to where
they were after the first round, and it exits 0 on SIGTERM. Bounded: stops
at --max-seconds even if not every round ran (it says so).
"""
import struct
import tempfile
import time

from attack import (RED_HSV, SANITIZED, TOKEN, Daemon, Reader, abort, check, finish, parse_args,
                    report, until, wait_until, write_objects, ws_frame, ws_open,
                    ws_read_json_until, ws_send_json)

VIEWS = 8   # TRK_CONTROL_VIEWS
HOLDS = 4   # TRK_CONTROL_HELD_FRAMES
RANGE = {"space": "rgb", "lo": [100, 0, 0], "hi": [255, 90, 90]}


def ask(s, msg, timeout=10):
    ws_send_json(s, msg)
    return ws_read_json_until(s, lambda m: m.get("id") == msg["id"], timeout)


def preview_seq(s, timeout=10):
    """The seq of the next binary preview this client receives (None)."""
    op, data = until(s, lambda op, d: op == 0x2 and d[:4] == b"TRKP", timeout)
    return struct.unpack("<Q", data[4:12])[0] if op == 0x2 else None


def one_round(dm, r):
    """Returns a list of what went wrong (empty: all as expected)."""
    bad = []
    clients = [ws_open(dm.port, dm.path) for _ in range(VIEWS + 1)]
    try:
        for i, s in enumerate(clients):
            mask = RANGE if i % 2 else "red"
            m = ask(s, {"type": "preview", "id": f"m{r}.{i}", "mask": mask})
            want = "busy" if i == VIEWS else None
            got = m and (m.get("code") if m["type"] == "error" else m["type"])
            if got != (want or "ack"):
                bad.append(f"round {r}: mask view {i + 1}: {m}")
        for i, s in enumerate(clients[:HOLDS + 1]):
            # A preview just received is among the kept frames; one that
            # went meanwhile (a busy machine) is tried again with a newer one.
            for _attempt in range(5):
                seq = preview_seq(s)
                m = ask(s, {"type": "preview", "id": f"h{r}.{i}", "hold": seq})
                if not (m and m.get("code") == "not_found"):
                    break
            if i == HOLDS:
                if not (m and m.get("code") == "busy"):
                    bad.append(f"round {r}: hold {i + 1} should be busy: {m}")
                continue
            if not (m and m["type"] == "ack" and m.get("hold") == seq):
                bad.append(f"round {r}: hold {i + 1} of {seq}: {m}")
                continue
            sm = ask(s, {"type": "sample", "id": f"s{r}.{i}", "x": 5, "y": 5, "seq": seq})
            if not (sm and sm["type"] == "sample" and sm["seq"] == seq):
                bad.append(f"round {r}: sample of held frame {seq}: {sm}")
    finally:
        for i, s in enumerate(clients):
            if i % 2:
                abort(s)
            else:
                try:
                    s.sendall(ws_frame(b"\x03\xe8", opcode=0x8))
                except OSError:
                    pass
            s.close()
    return bad


def main():
    a = parse_args(rounds=12, max_seconds=100.0)
    with tempfile.TemporaryDirectory() as d:
        objs = write_objects(d, RED_HSV)
        with Daemon(a.trackd, ["--size", "320x180", "--fps", "30", "--backend", "cpu",
                               "--objects", objs, "--preview-fps", "15",
                               "--stats-interval", "0"], d, token=TOKEN) as dm:
            reader = Reader(dm.port)
            reader.start()
            wait_until(lambda: reader.stats is not None, 10)
            t0 = time.monotonic()
            bad = one_round(dm, 0)
            # The daemon sees the closes on its own time.
            wait_until(lambda: reader.stats and reader.stats.get("clients") == 1, 10)
            fds0, rss0 = dm.fds(), dm.rss_kb()
            print(f"after round 1: {fds0} fds, rss {rss0} kB")
            deadline = t0 + a.max_seconds
            done = 1
            while done < a.rounds and time.monotonic() < deadline and len(bad) < 10:
                bad += one_round(dm, done)
                done += 1
                # A round starts once the last one's clients are gone.
                if not wait_until(lambda: reader.stats and reader.stats.get("clients") == 1, 10):
                    bad.append(f"round {done}: clients still connected")
            print(f"{done} rounds in {time.monotonic() - t0:.1f} s")
            for b in bad[:10]:
                print("  ", b)
            check(done == a.rounds or time.monotonic() >= deadline,
                  f"all {a.rounds} rounds ran, or the time ran out")
            check(not bad, "every round got every view and hold, and the 9th view and 5th "
                  "hold busy: a gone client's view and frame are freed")
            check(dm.alive(), "trackd is alive")
            check(wait_until(lambda: dm.fds() <= fds0, 15), f"descriptors back to {fds0} "
                  f"(now {dm.fds()})")
            rss = dm.rss_kb()
            if SANITIZED:
                print(f"rss {rss0} -> {rss} kB (ASan build: not checked)")
            else:
                check(rss - rss0 <= 8192, f"rss flat: {rss0} -> {rss} kB")
            t_end = time.monotonic()
            check(reader.error is None and
                  wait_until(lambda: reader.frames_since(t_end) > 0, 10),
                  f"the reading client was served throughout (error {reader.error})")
            reader.stop.set()
            reader.join(5)
            report("view_churn", tried=done, survived=done - len({b.split(':')[0] for b in bad}))
    finish()


if __name__ == "__main__":
    main()
