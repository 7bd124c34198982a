#!/usr/bin/python3
"""Attack: hostile requests to the replay's transport, and a bundle damaged
while it plays (issue 29; PROTOCOL.md "Replay").

`trackd --replay B --paused --control-token T` on a bundle of the demo
recorded here, over a raw WebSocket:
  1. each bad request (a seek past the end, before 0, of 2^63, as a float,
     a string, null, an array; a step of 0, 2, -2^31; a run with from > to,
     past the end, without to) gets one error reply and the connection
     stays (a good seek after each is answered with its frame);
  2. a flood of 300 seeks (a timeline dragged wildly) and 50 runs each
     cancelled by the next: every one answered, the last one shown;
  3. the bundle damaged under the daemon: frames.raw cut at its middle and a
     results.ndjson line overwritten. A seek past the cut is acked, then
     the "replay" message carries an error naming frames.raw and the
     daemon stays; a seek before the cut shows that frame; the frame whose
     recorded line is garbage shows "no recorded result", not a crash;
  4. the daemon exits 0 on SIGTERM, no sanitizer report.
Prints `attack: bad_replay tried=N survived=N`.
"""
import json
import os
import random
import subprocess
import sys
import tempfile

from attack import (FAILS, TOKEN, TRIED, Daemon, check, finish, report, ws_open,
                    ws_read_json_until, ws_send_json)

N = 60


# Messages read since the last request while waiting for its reply: the
# broadcasts a request causes may come before its reply.
BACKLOG = []


def ask(s, msg, i):
    BACKLOG.clear()
    ws_send_json(s, {**msg, "id": i})

    def reply(m):
        if m.get("id") == i and m.get("type") in ("ack", "error"):
            return True
        BACKLOG.append(m)
        return False
    return ws_read_json_until(s, reply)


def wait(s, pred, timeout=10):
    """The first message since the last request with pred."""
    for k, m in enumerate(BACKLOG):
        if pred(m):
            del BACKLOG[:k + 1]
            return m
    BACKLOG.clear()
    return ws_read_json_until(s, pred, timeout)


def shown(s, frame, timeout=10):
    return wait(s, lambda m: m.get("type") == "replay" and m.get("frame") == frame, timeout)


def main():
    trackd = sys.argv[1]
    rng = random.Random(29)
    with tempfile.TemporaryDirectory() as d:
        b = os.path.join(d, "b")
        r = subprocess.run([trackd, "--size", "160x120", "--fps", "30", "--frames", str(N),
                            "--record", b, "--fast", "--no-server"], capture_output=True,
                           text=True, timeout=120)
        check(r.returncode == 0, f"recorded the demo ({r.returncode})", False)
        with Daemon(trackd, ["--replay", b, "--paused"], d, token=TOKEN) as dm:
            s = ws_open(dm.port, dm.path)
            check(shown(s, 0) is not None, "paused at frame 0", False)
            i = 0
            bad = [{"type": "replay_seek", "frame": N}, {"type": "replay_seek", "frame": -1},
                   {"type": "replay_seek", "frame": 2 ** 63 - 1},
                   {"type": "replay_seek", "frame": -2 ** 63},
                   {"type": "replay_seek", "frame": 3.5}, {"type": "replay_seek", "frame": "3"},
                   {"type": "replay_seek", "frame": None}, {"type": "replay_seek", "frame": [3]},
                   {"type": "replay_seek"}, {"type": "replay_step", "delta": 0},
                   {"type": "replay_step", "delta": 2}, {"type": "replay_step", "delta": -2 ** 31},
                   {"type": "replay_step"},
                   {"type": "replay_run", "from": 30, "to": 10},
                   {"type": "replay_run", "from": 0, "to": N},
                   {"type": "replay_run", "from": -5, "to": 3},
                   {"type": "replay_run", "from": 0}, {"type": "replay_run", "to": 5}]
            for msg in bad:
                i += 1
                a = ask(s, msg, i)
                k = rng.randrange(N)
                i += 1
                g = ask(s, {"type": "replay_seek", "frame": k}, i)
                check(a is not None and a["type"] == "error" and g is not None and
                      g["type"] == "ack" and g["frame"] == k,
                      f"{json.dumps(msg)}: {a and a.get('code')}, then a seek to {k} acked")

            # A wild drag: the last seek answered and shown.
            BACKLOG.clear()
            for _ in range(300):
                i += 1
                ws_send_json(s, {"type": "replay_seek", "frame": rng.randrange(N), "id": i})
            ws_send_json(s, {"type": "replay_seek", "frame": 7, "id": i + 1})
            i += 1
            last = ws_read_json_until(s, lambda m: m.get("id") == i, 30)
            # Replies a client leaves unread beyond 32 may be dropped
            # (PROTOCOL.md, Queues): the last one must come.
            check(last is not None and last["type"] == "ack" and last["frame"] == 7,
                  f"300 seeks at once, then one to 7: acked ({last})")
            check(shown(s, 7, 20) is not None, "then the last seek's frame is shown")
            for j in range(50):
                i += 1
                ws_send_json(s, {"type": "replay_run", "from": j % 20, "to": 40 + j % 19, "id": i})
            done = wait(s, lambda m: m.get("type") == "replay" and m.get("run") and
                                      m["run"]["done"] and m["run"]["from"] == 49 % 20 and
                                      m["run"]["to"] == 40 + 49 % 19, 60)
            check(done is not None and done["run"]["differ"] == 0,
                  f"50 runs, each cancelled by the next: the last ends, 0 differ "
                  f"({done and done['run']})")

            # The bundle damaged under the daemon.
            raw = os.path.join(b, "frames.raw")
            os.truncate(raw, os.path.getsize(raw) // 2)
            lines = open(os.path.join(b, "results.ndjson"), "rb").read().split(b"\n")
            lines[5] = b"{" + b"x" * (len(lines[5]) - 1)
            open(os.path.join(b, "results.ndjson"), "wb").write(b"\n".join(lines))
            i += 1
            a = ask(s, {"type": "replay_seek", "frame": N - 2}, i)
            m = wait(s, lambda m: m.get("type") == "replay" and m.get("error"))
            check(a is not None and a["type"] == "ack" and m is not None and
                  "frames.raw" in m["error"] and dm.alive(),
                  f"a frame past the cut: the error is shown ({m and m['error']}), trackd stays")
            i += 1
            a = ask(s, {"type": "replay_seek", "frame": 5}, i)
            m = shown(s, 5)
            check(m is not None and not m.get("error") and m["recorded"] is None and
                  m["differs"] == "the bundle has no recorded result for it",
                  f"frame 5 with a garbage result line: shown, no recorded result "
                  f"({m and m['differs']})")
            i += 1
            a = ask(s, {"type": "replay_run", "from": 2, "to": 20}, i)
            m = wait(s, lambda m: m.get("type") == "replay" and m.get("run") and
                                   m["run"]["done"] and m["run"]["from"] == 2, 30)
            check(m is not None and m["run"]["differ"] == 1 and m["run"]["first"]["frame"] == 5,
                  f"a re-run over it: only that frame differs ({m and m['run']})")
            s.close()
            rc = dm.stop()
            check(rc == 0, f"trackd exits 0 after it all ({rc})")
    report("bad_replay", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


if __name__ == "__main__":
    main()
