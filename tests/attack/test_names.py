#!/usr/bin/python3
"""Attack: object names that break an output, and hostile HTTP queries.

    test_names.py TRACKD

One name rule for every output (config/OBJECTS.md, "Names"). trackd runs the
demo scene with a real mosquitto broker (--mqtt) and an OSC listener on
[::1] (a python socket decoding the OSC address of each datagram; 127.0.0.1
where the host has no IPv6):
  1. at load: an objects file whose second name holds a C1 control (U+0085,
     raw and as \\u0085), DEL, or a noncharacter (U+FFFF, U+FDD0, U+10FFFF)
     stops trackd with exit 78 and FILE:3:12 naming the code point;
  2. over the control protocol: add_object, update_object, rename_object
     and set_objects with each such name get an invalid_object error naming
     the code point, the connection stays (ping, pong) and the set is
     unchanged;
  3. names that OSC once wrote as one address (a/b, a_b, a b, a#b, a,b, a*b)
     and a%2Fb load: each has an OSC address and an MQTT topic of its own,
     which percent-decode to the name, and no publish fails in the log;
  4. HTTP: ?mask=%FF and ?mask=%C2%85 answer 400 with a UTF-8 body that does
     not echo them; a 3000-character query, or one of 17 arguments, answers
     414 with and without the token (never 401, never the query cut and
     served); the same requests at their normal size still work.
Prints "attack: names tried=N survived=N".
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

from attack import (FAILS, RED_RGB, TOKEN, TRIED, Daemon, check, finish, http_get, report,
                    wait_until, write_objects, ws_open, ws_read_json_until, ws_send_json)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from daemon_proc import free_port  # noqa: E402
from test_mqtt import Broker, Sub  # noqa: E402  (the real mosquitto, a paho subscriber)
from test_udp_osc import Listener, osc_decode, udp_socket  # noqa: E402

# (JSON text of the name, the code point the error names)
BAD = [("next\\u0085line", "U+0085"), ("raw\u0085c1", "U+0085"), ("del\\u007f", "U+007F"),
       ("end\\uffff", "U+FFFF"), ("\\ufdd0", "U+FDD0"), ("plane16 \\udbff\\udfff", "U+10FFFF"),
       ("\\u0080", "U+0080")]
# Names OSC wrote as one address before; and one that looks like an escape.
CLASH = ["a/b", "a_b", "a b", "a#b", "a,b", "a*b", "a%2Fb"]
OSC_RESERVED = " #*,/?[]{}%"
MQTT_RESERVED = "/+#%"


def escape(name, reserved):
    """The documented mapping: reserved bytes and '%' as %XX."""
    return "".join(f"%{b:02X}" if chr(b) in reserved or b < 0x20 or b == 0x7F else chr(b)
                   for b in name.encode())


def obj(name, extra=""):
    return (f'{{"name": "{name}", "space": "rgb", "lo": [150, 0, 0], "hi": [255, 90, 90]'
            f'{extra}}}')


def load_time(trackd, d):
    for text, cp in BAD:
        path = os.path.join(d, "bad.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write('{"objects": [\n  ' + obj("red") + ',\n  ' + obj(text) + "\n]}\n")
        r = subprocess.run([trackd, "--no-server", "--frames", "1", "--objects", path],
                           capture_output=True, text=True, timeout=30, cwd=d)
        want = f"{path}:3:12: objects[1].name must not contain "
        check(r.returncode == 78 and want in r.stderr and f"({cp} at byte" in r.stderr,
              f"load {text!r}: exit 78, '{want}... ({cp} ...)' (got {r.returncode}: "
              f"{r.stderr.strip().splitlines()[-1:]})")


def osc_listener():
    """An OSC listener on [::1] (127.0.0.1 where the host has no IPv6): the
    Listener and its HOST."""
    try:
        s, port = udp_socket(socket.AF_INET6, "::1")
        return Listener(s), f"[::1]:{port}"
    except OSError as e:
        print(f"no ::1 here ({e}): OSC over 127.0.0.1")
        s, port = udp_socket(socket.AF_INET, "127.0.0.1")
        return Listener(s), f"127.0.0.1:{port}"


def osc_addresses(lis):
    return {osc_decode(d)[0] for d in list(lis.datagrams)}


def request(s, msg, rid):
    ws_send_json(s, dict(msg, id=rid))
    return ws_read_json_until(s, lambda m: m.get("id") == rid and m.get("type") in
                              ("ack", "error"))


def control(dm, osc, sub):
    s = ws_open(dm.port, dm.path)
    check(ws_read_json_until(s, lambda m: m.get("type") == "hello") is not None,
          "the client gets hello", False)
    rid = 0
    for text, cp in BAD:
        name = json.loads(f'"{text}"')
        for msg in ({"type": "add_object", "object": {"name": name, "space": "rgb",
                                                      "lo": [0, 0, 0], "hi": [1, 1, 1]}},
                    {"type": "update_object", "object_id": 0,
                     "object": {"name": name, "space": "rgb", "lo": [0, 0, 0], "hi": [1, 1, 1]}},
                    {"type": "rename_object", "object_id": 0, "new_name": name},
                    {"type": "set_objects", "objects": [{"name": name, "space": "rgb",
                                                         "lo": [0, 0, 0], "hi": [1, 1, 1]}]}):
            rid += 1
            r = request(s, msg, rid)
            check(r is not None and r.get("type") == "error" and
                  r.get("code") == "invalid_object" and cp in r.get("message", ""),
                  f"{msg['type']} {text!r}: invalid_object naming {cp} ({r})")
    rid += 1
    ws_send_json(s, {"type": "ping", "id": rid})
    check(ws_read_json_until(s, lambda m: m.get("type") == "pong") is not None,
          "the connection stays open after every refusal (ping, pong)")
    rid += 1
    ws_send_json(s, {"type": "get_objects", "id": rid})
    got = ws_read_json_until(s, lambda m: m.get("type") == "objects" and m.get("id") == rid)
    check(got is not None and [o["name"] for o in got["objects"]] == ["red"],
          f"the set is unchanged ({got and [o['name'] for o in got['objects']]})")

    for name in CLASH:
        rid += 1
        r = request(s, {"type": "add_object", "object": {"name": name, "space": "rgb",
                                                          "lo": [150, 0, 0],
                                                          "hi": [255, 90, 90]}}, rid)
        check(r is not None and r.get("type") == "ack", f"add_object {name!r} is taken ({r})")
    s.close()

    osc_want = {f"/trackd/cam/{escape(n, OSC_RESERVED)}" for n in CLASH}

    def got():
        return {a.removesuffix("/lost") for a in osc_addresses(osc)}

    check(wait_until(lambda: osc_want <= got(), 15),
          f"OSC: each name has its own address ({sorted(osc_want - got())} missing)")
    check(all(urllib.parse.unquote(a.rsplit("/", 1)[-1]) in CLASH for a in osc_want),
          "OSC: each address part percent-decodes to its name")
    mqtt_want = {f"attack/cam/objects/{escape(n, MQTT_RESERVED)}" for n in CLASH}
    check(wait_until(lambda: mqtt_want <= {t for t, _, _ in sub.take()}, 15),
          f"MQTT: each name has its own topic "
          f"({sorted(mqtt_want - {t for t, _, _ in sub.take()})} missing)")
    check(all(urllib.parse.unquote(t.rsplit("/", 1)[-1]) in CLASH for t in mqtt_want),
          "MQTT: each topic level percent-decodes to its name")
    log = dm.log_text()
    check("cannot publish" not in log and "Malformed" not in log,
          "no publish failed in the daemon's log")


def http(dm):
    tok = f"token={TOKEN}"
    check(wait_until(lambda: http_get(dm.port, f"/snapshot.jpg?{tok}")[0] == 200, 10),
          "a snapshot is served once frames flow", False)
    for q, want, what in ((f"{tok}&mask=%FF", 400, "not valid UTF-8"),
                          (f"{tok}&mask=red%FFx", 400, "not valid UTF-8"),
                          (f"{tok}&mask=a%C2%85b", 400, "U+0085"),
                          (f"{tok}&mask=nosuch", 404, "no object named"),
                          (f"{tok}&mask=red", 200, None),
                          (f"{tok}&mask=" + "a" * 3000, 414, "query too long"),
                          ("a" * 3000 + f"&{tok}", 414, "query too long"),
                          ("mask=" + "a" * 3000, 414, "query too long"),
                          ("&".join(["overlay=1"] * 17) + f"&{tok}", 414, "query too long"),
                          ("&".join(["overlay=1"] * 14) + f"&{tok}", 200, None),
                          (f"{tok}&&overlay=1&&mask=" + "a" * 300, 414, "query too long"),
                          (f"{tok}&&overlay=1&&mask=red", 200, None),
                          ("mask=red", 401, "needs the control token")):
        st, body = http_get(dm.port, "/snapshot.jpg?" + q)
        try:
            text = body.decode("utf-8") if want != 200 else ""
            utf8 = True
        except UnicodeDecodeError:
            text, utf8 = "", False
        check(st == want and utf8 and (what is None or what in text) and "\ufffd" not in text
              and "\x85" not in text,
              f"GET /snapshot.jpg?{q[:50]}{'...' if len(q) > 50 else ''} ({len(q)} bytes): "
              f"{want}, UTF-8 body without the bad bytes (got {st}: {body[:80]!r})")


def main():
    trackd = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        load_time(trackd, d)
        broker = Broker(d, free_port())
        broker.start()
        osc, osc_host = osc_listener()
        sub = None
        try:
            sub = Sub(broker.port, ["attack/#"])
            with Daemon(trackd, ["--size", "320x240", "--fps", "30", "--backend", "cpu",
                                 "--no-preview", "--name", "cam", "--objects",
                                 write_objects(d, RED_RGB), "--osc", osc_host,
                                 "--mqtt", f"mqtt://127.0.0.1:{broker.port}/attack"],
                        d, token=TOKEN) as dm:
                control(dm, osc, sub)
                http(dm)
        finally:
            if sub:
                sub.close()
            osc.stop()
            broker.stop()
    report("names", tried=TRIED[0], survived=TRIED[0] - len(FAILS))
    finish()


if __name__ == "__main__":
    main()
