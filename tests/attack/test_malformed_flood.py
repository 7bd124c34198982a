#!/usr/bin/python3
"""Attack: a flood of malformed control messages on one connection.

    test_malformed_flood.py TRACKD [--seed N]

One WebSocket client (raw socket) sends, one after the other, about a
thousand generated bad messages:
  - every prefix of valid messages (never valid JSON), duplicate keys, deep
    nesting, numbers beyond 64 bits, NUL characters, lone surrogates;
  - valid JSON that is not an object, `type` missing or not a string,
    unknown types;
  - every field of every control message given a value of another JSON
    type (the newer sample "seq", preview "hold", update_object "changes"
    and a set_objects with only "calibration" too, save_objects "part" and
    strings that name no part, reset_range "name" / "object_id" and
    keep_range "save"), the object fields
    inside set_objects/add_object/update_object too;
  - seeded random printable noise, binary messages, messages over 64 KiB
    (also fragmented).
Each must get exactly one `error` reply (with the request's id where it had
one, with a message for humans), before the next is sent. The connection
stays open throughout; afterwards ping works, the object set is what it was,
results still flow, and the daemon exits cleanly.
"""
import copy
import json
import os
import random
import tempfile

from attack import (RED_HSV, TOKEN, Daemon, check, finish, parse_args, report, wait_until,
                    write_objects, ws_frame, ws_open, ws_read_json_until, ws_send_json)

OBJ = {"name": "x1", "space": "rgb", "lo": [0, 0, 0], "hi": [10, 10, 10], "min_mass": 5,
       "color": "#102030"}
# Control messages that are valid as written (the set has "red" at id 0);
# for each, the fields to break.
GOOD = [
    ({"type": "set_objects", "objects": [OBJ]}, ["objects"]),
    ({"type": "add_object", "object": OBJ}, ["object"]),
    ({"type": "update_object", "object_id": 0, "object": dict(OBJ, name="red")},
     ["object_id", "object"]),
    ({"type": "update_object", "name": "red", "object": dict(OBJ, name="red")}, ["name"]),
    ({"type": "rename_object", "object_id": 0, "new_name": "red"}, ["object_id", "new_name"]),
    ({"type": "remove_object", "object_id": 0}, ["object_id"]),
    ({"type": "remove_object", "name": "red"}, ["name"]),
    ({"type": "sample", "x": 1, "y": 1, "radius": 1}, ["x", "y", "radius"]),
    ({"type": "sample", "x": 1, "y": 1, "w": 4, "h": 4}, ["w", "h"]),
    ({"type": "preview", "width": 160, "fps": 5.0, "mask": None}, ["width", "fps"]),
    ({"type": "preview", "mask": "red"}, ["mask"]),
    ({"type": "preview", "hold": None}, ["hold"]),
    ({"type": "sample", "x": 1, "y": 1, "seq": 0}, ["seq"]),
    ({"type": "update_object", "name": "red", "changes": {"min_mass": 3}}, ["changes"]),
    ({"type": "set_objects", "calibration": None}, ["calibration"]),
    ({"type": "subscribe", "preview": False}, ["preview"]),
    # The demo has no camera: a well-formed one is answered no_camera, a
    # malformed one bad_field.
    ({"type": "set_camera", "name": "gain", "value": 5}, ["name", "value"]),
    # A save of one part: any bad "part" is refused and writes nothing.
    ({"type": "save_objects", "part": "calibration"}, ["part"]),
    # Ranges that follow the light (the demo set has none to keep).
    ({"type": "reset_range", "name": "red"}, ["name"]),
    ({"type": "reset_range", "object_id": 0}, ["object_id"]),
    ({"type": "keep_range", "save": False}, ["save"]),
]
# "part" strings that name no part (the file must stay as it was).
BAD_PARTS = ["", "objects", "Calibration", "CAMERA", "calibration ", " camera",
             "camera,calibration", "prefilter", "whole", "x" * 5000, "calibration\u00e9"]
# Per JSON type: values of other types to put in its place.
OTHER = {
    int: [None, True, "1", [1], {"a": 1}, 1.5],
    float: [None, True, "1", [1], {"a": 1}],
    str: [None, False, 7, [], {}],
    bool: [None, 0, "true", [], {}],
    list: [None, True, 3, "[]", {}],
    dict: [None, True, 3, "{}", []],
    type(None): [True, 3, [], {}],
}
# Values of another type that are valid all the same.
# ("hold": 3 could name a frame still kept: not an error.)
VALID = {("preview", "mask"): [None], ("preview", "hold"): [3],
         ("set_camera", "value"): [True, False]}


def wrong_values(msg_type, field, v):
    return [w for w in OTHER[type(v)] if w not in VALID.get((msg_type, field), [])]


def generate(seed):
    """(label, payload, opcode, has_id, expected code or None)."""
    rnd = random.Random(seed)
    msgs = []
    n = [0]

    def add(label, payload, has_id=True, code=None, opcode=0x1):
        msgs.append((label, payload, opcode, has_id, code))

    def rid():
        n[0] += 1
        return f"m{n[0]}"

    # 1. Broken JSON: prefixes of valid messages (no id can be read back).
    for good, _ in GOOD:
        text = json.dumps(dict(good, id="p"))
        for cut in range(0, len(text), max(1, len(text) // 12)):
            add(f"prefix {text[:cut][:40]!r}", text[:cut], False, "bad_json")
    for text in ['{"type":"ping","type":"ping"}', '{"type":"ping","id":1' + "}" * 2,
                 "[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000,
                 '{"type":"sample","x":' + "9" * 40 + ',"y":1}', '{"type":"ping\u0000"}',
                 '{"type":"ping","id":"\\ud800"}', "{'type':'ping'}", '{"type":ping}',
                 "\ufeff{}", "nul\x00l", "{} {}"]:
        add(f"bad json {text[:30]!r}", text, False, "bad_json")

    # 2. Valid JSON, wrong shape.
    for text in ["[1,2,3]", '"ping"', "42", "null", "true"]:
        add(f"not an object {text}", text, False, "not_object")
    for t in [None, 5, [], {}, True]:
        i = rid()
        add(f"type {t!r}", json.dumps({"type": t, "id": i}), i, "bad_type")
    for _ in range(40):
        t = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rnd.randint(1, 40)))
        i = rid()
        add(f"unknown type {t}", json.dumps({"type": "zz_" + t, "id": i}), i, "unknown_type")

    # 3. Every field of every control message with a value of another type.
    for good, fields in GOOD:
        for f in fields:
            for v in wrong_values(good["type"], f, good[f]):
                m = dict(good, id=rid())
                m[f] = v
                add(f"{good['type']}.{f}={v!r}", json.dumps(m), m["id"])
        # The object inside, field by field and element by element.
        for path in ("object", "objects"):
            if path not in good:
                continue
            for f, v0 in OBJ.items():
                for v in wrong_values("object", f, v0):
                    m = copy.deepcopy(good)
                    o = m["object"] if path == "object" else m["objects"][0]
                    o[f] = v
                    m["id"] = rid()
                    add(f"{good['type']}.{path}.{f}={v!r}", json.dumps(m), m["id"])
                if isinstance(v0, list):
                    for k in range(3):
                        for v in [None, "1", [], -1, 1e9, 2.5]:
                            m = copy.deepcopy(good)
                            o = m["object"] if path == "object" else m["objects"][0]
                            o[f][k] = v
                            m["id"] = rid()
                            add(f"{good['type']}.{path}.{f}[{k}]={v!r}", json.dumps(m), m["id"])
            for drop in ("name", "space", "lo", "hi"):
                m = copy.deepcopy(good)
                o = m["object"] if path == "object" else m["objects"][0]
                del o[drop]
                m["id"] = rid()
                add(f"{good['type']}.{path} without {drop}", json.dumps(m), m["id"])

    for part in BAD_PARTS:
        i = rid()
        add(f"save_objects.part={part[:20]!r}", json.dumps({"type": "save_objects", "id": i,
                                                            "part": part}), i, "out_of_range")
    i = rid()
    add("save_objects.part with a NUL", '{"type":"save_objects","id":"%s",'
        '"part":"calibration\\u0000"}' % i, False)

    # 4. Noise, binary, oversize.
    alphabet = "{}[]\":,0123456789.eE+-truefalsn \\/\u00e9\u4e2d\U0001f600abc"
    for _ in range(150):
        text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 300)))
        try:
            v = json.loads(text)
            if isinstance(v, dict):
                continue  # a valid object by chance: not malformed
        except ValueError:
            pass
        add(f"noise {text[:30]!r}", text, False)
    for size in (1, 100, 70000):
        add(f"binary {size} B", os.urandom(size), False, "binary", opcode=0x2)
    add("text over 64 KiB", '{"type":"ping","pad":"' + "x" * 70000 + '"}', False, "too_large")
    add("fragmented, over 64 KiB", ["x" * 40000, "y" * 40000], False, "too_large")
    return msgs


def send(s, payload, opcode):
    if isinstance(payload, list):  # fragments: first, continuations, final
        for k, part in enumerate(payload):
            last = k == len(payload) - 1
            s.sendall(ws_frame(part, opcode=0x1 if k == 0 else 0x0, fin=last))
    else:
        s.sendall(ws_frame(payload, opcode=opcode))


def main():
    a = parse_args(seed=11)
    msgs = generate(a.seed)
    with tempfile.TemporaryDirectory() as d:
        objs = write_objects(d, RED_HSV)
        with open(objs, encoding="utf-8") as f:
            file_before = f.read()
        answered = 0
        with Daemon(a.trackd, ["--size", "320x180", "--fps", "30", "--backend", "cpu",
                               "--objects", objs, "--stats-interval", "0"], d, token=TOKEN) as dm:
            s = ws_open(dm.port, dm.path)
            ws_send_json(s, {"type": "subscribe", "preview": False})
            ws_send_json(s, {"type": "get_objects", "id": "before"})
            before = ws_read_json_until(s, lambda m: m.get("id") == "before")
            check(before and before.get("type") == "objects", "get_objects before the flood")
            wrong = []
            for label, payload, opcode, has_id, code in msgs:
                send(s, payload, opcode)
                if has_id:
                    m = ws_read_json_until(s, lambda m: m.get("id") == has_id, 10)
                else:
                    m = ws_read_json_until(s, lambda m: m.get("type") == "error", 10)
                ok = bool(m is not None and m.get("type") == "error" and
                      isinstance(m.get("code"), str) and m["code"] and
                      isinstance(m.get("message"), str) and m["message"] and
                      (code is None or m["code"] == code) and
                      (has_id or "id" not in m))
                answered += ok
                if not ok:
                    wrong.append(f"{label}: {json.dumps(m)[:200] if m else 'no reply'}")
                if m is None:
                    break  # the connection is gone or stuck: nothing more to learn
            print(f"{len(msgs)} malformed messages sent, {answered} answered with an error")
            for w in wrong[:10]:
                print("  ", w)
            check(answered == len(msgs), f"every malformed message got its error reply "
                  f"({answered}/{len(msgs)})")
            ws_send_json(s, {"type": "ping", "id": "after"})
            check(ws_read_json_until(s, lambda m: m.get("id") == "after") is not None,
                  "the connection is still usable after the flood (ping)")
            ws_send_json(s, {"type": "get_objects", "id": "objs"})
            after = ws_read_json_until(s, lambda m: m.get("id") == "objs")
            check(after and before and after.get("objects") == before.get("objects"),
                  "the flood changed nothing in the object set")
            with open(objs, encoding="utf-8") as f:
                check(f.read() == file_before,
                      "the flood's bad saves left the objects file as it was")
            check(wait_until(lambda: ws_read_json_until(
                s, lambda m: m.get("type") == "frame", 2) is not None, 10),
                  "results still flow on the flooded connection")
            s.close()
            report("malformed_flood", tried=len(msgs), survived=answered if dm.alive() else 0)
    finish()


if __name__ == "__main__":
    main()
