#!/usr/bin/python3
"""Attack: hostile paint_class and clear_class requests, and painting while
the set changes under it (issue 27, painted colour classes).

    test_hostile_paint.py TRACKD [--max-seconds S]

The demo scene (1280x720, cpu backend) with a control token; a reader client
watches results throughout.
1. Bad requests: no object, an unknown one, a box object, wrong types and
   ranges for x, y, w, h, seq and remove, a rectangle outside the frame, a
   frame no longer kept, bad class file names in add_object ("../x.lut",
   "x", ".lut", a slash), two objects on one file, a 17th class: an
   error reply with a code each, and the same connection then gets an ack
   for a good stroke.
2. Churn: one client paints full-frame strokes (4096 x 4096, the most a
   stroke reads) as fast as the queue takes them while another removes and
   re-adds the class object and clears it, 200 rounds: every request gets a
   reply (ack or error), results keep coming, the class object ends with
   the cells of its last strokes.
Then the daemon exits 0 on SIGTERM with no sanitizer report. Bounded: every
wait has a deadline.
"""
import json
import tempfile
import time

from attack import (TOKEN, Daemon, Reader, check, finish, parse_args, report, wait_until, ws_open,
                    ws_read_json_until, ws_send_json)

args = parse_args(max_seconds=150.0)
BALL = {"name": "ball", "class": "ball.lut"}
BAD = [
    ({"type": "paint_class", "x": 0, "y": 0, "w": 10, "h": 10}, "bad_field"),
    ({"type": "paint_class", "name": "nobody", "x": 0, "y": 0, "w": 10, "h": 10}, "not_found"),
    ({"type": "paint_class", "name": "red", "x": 0, "y": 0, "w": 10, "h": 10}, "invalid_object"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0}, "bad_field"),
    ({"type": "paint_class", "name": "ball", "x": "0", "y": 0, "w": 1, "h": 1}, "bad_field"),
    ({"type": "paint_class", "name": "ball", "x": -1, "y": 0, "w": 1, "h": 1}, "out_of_range"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 0, "h": 1}, "out_of_range"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 4097, "h": 1}, "out_of_range"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 1}, "bad_field"),
    ({"type": "paint_class", "name": "ball", "x": 2 ** 40, "y": 0, "w": 1, "h": 1},
     "out_of_range"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 1, "h": 1, "remove": 1},
     "bad_field"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 1, "h": 1, "seq": -5},
     "out_of_range"),
    ({"type": "paint_class", "name": "ball", "x": 0, "y": 0, "w": 1, "h": 1, "seq": 2 ** 62},
     "not_found"),
    ({"type": "paint_class", "object_id": 999, "x": 0, "y": 0, "w": 1, "h": 1}, None),
    ({"type": "clear_class", "name": "red"}, "invalid_object"),
    ({"type": "clear_class"}, "bad_field"),
    ({"type": "add_object", "object": {"name": "c1", "class": "../x.lut"}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c2", "class": "x"}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c3", "class": ".lut"}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c4", "class": "a/b.lut"}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c6", "class": 7}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c7", "class": "ball.lut"}}, "invalid_object"),
    ({"type": "add_object", "object": {"name": "c8", "class": "c8.lut", "lo": [0, 0, 0]}},
     "invalid_object"),
]


def ask(s, msg, timeout=20):
    ws_send_json(s, msg)
    return ws_read_json_until(s, lambda m: m.get("id") == msg["id"], timeout)


with tempfile.TemporaryDirectory() as d, \
        Daemon(args.trackd, ["--backend", "cpu", "--save-objects", f"{d}/objects.json"], d,
               token=TOKEN) as dm:
    t_end = time.monotonic() + args.max_seconds
    reader = Reader(dm.port, dm.path)
    reader.start()
    check(wait_until(lambda: len(reader.seqs) > 5, 20), "results flow", False)
    s = ws_open(dm.port, dm.path)
    m = ask(s, {"type": "add_object", "id": "add", "object": BALL})
    check(m is not None and m.get("type") == "ack", f"the class object is added ({m})")

    # 1. Bad requests: an error each, the connection stays usable.
    refused = 0
    for i, (msg, code) in enumerate(BAD):
        m = ask(s, {"id": f"b{i}", **msg})
        ok = m is not None and m.get("type") == "error" and (code is None or m.get("code") == code)
        refused += ok
        check(ok, f"{json.dumps(msg)}: {code} ({m and m.get('code')}: {m and m.get('message')})")
    # Classes past 16 (the ball is the first).
    for i in range(15):
        m = ask(s, {"type": "add_object", "id": f"k{i}",
                    "object": {"name": f"k{i}", "class": f"k{i}.lut"}})
        check(m is not None and m.get("type") == "ack", f"class {i + 2} of 16 added ({m})")
    m = ask(s, {"type": "add_object", "id": "k16", "object": {"name": "k16", "class": "k16.lut"}})
    check(m is not None and m.get("code") == "invalid_object", f"a 17th class is refused ({m})")
    m = ask(s, {"type": "paint_class", "id": "good", "name": "ball", "x": 0, "y": 0, "w": 64,
                "h": 64})
    check(m is not None and m.get("type") == "ack" and m.get("cells", 0) > 0,
          f"the same connection then paints ({m})")

    # 2. Churn: strokes while the object is removed, re-added and cleared.
    painter, editor = ws_open(dm.port, dm.path), ws_open(dm.port, dm.path)
    replies, asked, n0 = 0, 0, len(reader.seqs)
    for r in range(200):
        if time.monotonic() > t_end - 20:
            break
        ws_send_json(painter, {"type": "paint_class", "id": f"p{r}", "name": "ball", "x": 0,
                               "y": 0, "w": 4096, "h": 4096, "remove": r % 3 == 0})
        asked += 1
        edit = [{"type": "remove_object", "name": "ball"}, {"type": "add_object", "object": BALL},
                {"type": "clear_class", "name": "ball"}][r % 3]
        m = ask(editor, {"id": f"e{r}", **edit})
        check(m is not None and m.get("type") in ("ack", "error"), f"edit {r} answered ({m})")
        m = ws_read_json_until(painter, lambda m: m.get("id") == f"p{r}", 30)
        replies += m is not None and m.get("type") in ("ack", "error")
    check(replies == asked, f"every stroke answered ({replies} of {asked})")
    check(wait_until(lambda: len(reader.seqs) > n0 + 10, 30),
          f"results keep coming ({len(reader.seqs) - n0} more)")
    # A new connection: the first one has not read during the churn, and on
    # a loaded machine that passes the 60 s after which the kernel closes a
    # connection whose receive window stays shut (PROTOCOL.md, "Limits and
    # protocol errors").
    s.close()
    s = ws_open(dm.port, dm.path)
    m = ask(s, {"type": "add_object", "id": "last", "object": BALL})
    m = ask(s, {"type": "paint_class", "id": "last2", "name": "ball", "x": 0, "y": 0, "w": 4096,
                "h": 4096})
    check(m is not None and m.get("type") == "ack" and m.get("cells", 0) > 0,
          f"a last stroke paints ({m})")
    m = ask(s, {"type": "save_objects", "id": "save"})
    check(m is not None and m.get("type") == "ack", f"the save with 16 classes works ({m})")
    check(reader.error is None and dm.alive(), f"the reader and the daemon are fine ({reader.error})")
    reader.stop.set()
    report("hostile_paint", tried=len(BAD) + 17 + asked, refused=refused)
finish()
