#!/usr/bin/python3
"""Attack: hostile set_pattern messages (issue 26, the teach panel's patterns).

    test_hostile_patterns.py TRACKD

trackd runs the demo scene with the largest pattern section a file may have
(16 patterns: 15 centre + dots ones of 8 dots and 64 ids over 8 dot colours,
one 5-colour code) and a control token:
  1. the hello lists every pattern with its slots (8 dot colours each);
  2. set_pattern with each hostile shape (names of the wrong type or 4000
     bytes, lists of the wrong type, empty, over 512 names or of the wrong
     length, objects in place of names, an object without blobs, a name no
     object has, ids made alike, the other kind's key, a centre on a colour
     code, a NUL in a name, nesting deeper than the parser takes) gets an
     error reply with the expected code and a bounded message, the
     connection stays (ping, pong) and the patterns are as before;
  3. then 200 valid re-assignments back and forth are each acknowledged and
     the set ends as the last one says; trackd exits 0 (no sanitizer report
     under ASan).
Prints "attack: hostile_patterns tried=N survived=N".
"""
import json
import tempfile

from attack import (TOKEN, Daemon, check, finish, parse_args, report, write_objects, ws_frame,
                    ws_open, ws_read_json_until, ws_send_json)

DOTS = [f"d{i}" for i in range(8)]


def objects_file(d):
    objs = [{"name": "c", "space": "rgb", "lo": [0, 0, 200], "hi": [40, 40, 255], "blobs": 4}]
    objs += [{"name": n, "space": "rgb", "lo": [10 * i, 250, 0], "hi": [10 * i + 5, 255, 5],
              "blobs": 4} for i, n in enumerate(DOTS)]
    objs.append({"name": "nb", "space": "rgb", "lo": [1, 1, 1], "hi": [2, 2, 2]})
    offsets = [[30 * (j + 1), 10 * (j % 2 * 2 - 1)] for j in range(8)]
    # id i: dot 0 in DOTS[i % 8], dot 1 in DOTS[i // 8], the others each its own.
    ids = [[DOTS[i % 8], DOTS[i // 8]] + DOTS[2:] for i in range(64)]
    pats = [{"name": f"p{k}", "kind": "dots", "center": "c", "center_mm": 50, "dots": offsets,
             "ids": ids} for k in range(15)]
    pats.append({"name": "code", "kind": "code", "colors": DOTS[:5], "id": 7})
    return write_objects(d, {"objects": objs, "patterns": pats})


def request(s, msg, rid):
    """The reply to msg sent with id rid (an error to a message that is no
    JSON has no id)."""
    ws_send_json(s, dict(msg, id=rid))
    return ws_read_json_until(s, lambda m: m.get("id", rid) == rid and m.get("type") in
                              ("ack", "error"))


def patterns_now(s, rid):
    ws_send_json(s, {"type": "get_objects", "id": rid})
    r = ws_read_json_until(s, lambda m: m.get("id") == rid and m.get("type") == "objects")
    return r.get("patterns") if r else None


def hostile():
    """(what, message, the error code wanted)."""
    sp = {"type": "set_pattern", "name": "p0"}
    rev = DOTS[::-1]
    return [
        ("name a number", dict(sp, name=7, dots=rev), "bad_field"),
        ("name null", dict(sp, name=None, dots=rev), "bad_field"),
        ("name of 4000 bytes", dict(sp, name="x" * 4000, dots=rev), "not_found"),
        ("dots a string", dict(sp, dots="d0"), "bad_field"),
        ("dots empty", dict(sp, dots=[]), "bad_field"),
        ("600 dots", dict(sp, dots=["d0"] * 600), "bad_field"),
        ("300 dots", dict(sp, dots=["d0"] * 300), "invalid_object"),
        ("objects for names", dict(sp, dots=[{"name": "d0"}] * 8), "bad_field"),
        ("an object without blobs", dict(sp, dots=DOTS[:7] + ["nb"]), "invalid_object"),
        ("a name no object has", dict(sp, dots=DOTS[:7] + ["\u0085zz"]), "invalid_object"),
        ("ids made alike", dict(sp, dots=["d1"] + DOTS[1:]), "invalid_object"),
        ("center a list", dict(sp, center=["c"]), "bad_field"),
        ("colors on centre + dots", dict(sp, colors=DOTS[:5]), "bad_field"),
        ("dots on a code", {"type": "set_pattern", "name": "code", "dots": rev}, "bad_field"),
        ("center on a code", {"type": "set_pattern", "name": "code", "center": "c"},
         "invalid_object"),
        ("nothing to set", sp, "bad_field"),
        ("a NUL in a name", dict(sp, dots=DOTS[:7] + ["d7\u0000x"]), "bad_json"),
    ]


def last_i(k):
    """The last of the 200 re-assignments that named pattern k."""
    return max(i for i in range(200) if i % 15 == k)


def main():
    args = parse_args()
    tried = survived = 0
    with tempfile.TemporaryDirectory() as d, \
            Daemon(args.trackd, ["--objects", objects_file(d), "--backend", "cpu"], d,
                   token=TOKEN) as dm:
        s = ws_open(dm.port, dm.path)
        hello = ws_read_json_until(s, lambda m: m.get("type") == "hello")
        pats = hello.get("patterns") if hello else None
        check(pats is not None and len(pats) == 16 and all(len(p["dots"]) == 8 for p in pats[:15])
              and pats[15]["colors"] == DOTS[:5] and pats[0]["ids"] == 64,
              f"the hello lists 16 patterns with their slots ({json.dumps(pats)[:200]})")
        before = patterns_now(s, 1)
        rid = 100
        for what, msg, code in hostile():
            rid += 1
            r = request(s, msg, rid)
            ok = (r is not None and r.get("type") == "error" and r.get("code") == code and
                  len(r.get("message", "")) < 400)
            rid += 1
            ws_send_json(s, {"type": "ping", "id": rid})
            ok = ok and ws_read_json_until(s, lambda m, i=rid: m.get("type") == "pong" and
                                           m.get("id") == i) is not None
            tried += 1
            survived += check(ok, f"{what}: {code}, the connection stays ({json.dumps(r)[:200]})")
        # Deeper than the parser takes: an error, never a crash.
        rid += 1
        deep = '{"type":"set_pattern","id":%d,"name":"p0","dots":%s%s}' % (
            rid, "[" * 5000, "]" * 5000)
        s.sendall(ws_frame(deep.encode()))
        r = ws_read_json_until(s, lambda m: m.get("type") == "error")
        tried += 1
        survived += check(r is not None and dm.alive(), f"nesting 5000 deep: an error ({r})")
        tried += 1
        survived += check(patterns_now(s, 2) == before, "the patterns are as before")
        # Valid ones back and forth, each answered.
        acks = 0
        for i in range(200):
            rid += 1
            dots = DOTS[::-1] if i % 2 == 0 else DOTS
            r = request(s, {"type": "set_pattern", "name": f"p{i % 15}", "dots": dots}, rid)
            acks += r is not None and r.get("type") == "ack"
        now = patterns_now(s, 3)
        tried += 1
        survived += check(acks == 200 and now is not None and
                          [p["dots"] for p in now[:15]] ==
                          [DOTS if last_i(k) % 2 else DOTS[::-1] for k in range(15)],
                          f"200 re-assignments acknowledged ({acks}) and in the set")
    report("hostile_patterns", tried=tried, survived=survived)
    finish()


if __name__ == "__main__":
    main()
