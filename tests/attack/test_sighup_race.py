#!/usr/bin/python3
"""Attack: SIGHUP reloads racing with clients that edit, save and reload.

    test_sighup_race.py TRACKD [--sighups N] [--editors E] [--max-seconds S]

trackd runs the demo scene with an objects file. E clients edit the set as
fast as the daemon answers (add, update, rename, remove, set_objects,
save_objects, reload_objects, each waiting for its reply) while another
thread sends N SIGHUPs. Every writer writes a valid set, and a save replaces
the file atomically, so:
  - every request gets one reply: its ack, or an error that a race explains
    (busy, not_found, duplicate_name, too_many_objects); never
    invalid_object from a reload or io_error from a save;
  - no SIGHUP reload is rejected (the daemon's log says so when one is);
  - every `objects` broadcast a watching client sees is a complete, valid
    set (ws_client.check_object_def);
  - afterwards the file is complete valid JSON, no temporary file is left
    beside it, a reload_objects makes the live set equal to the file, the
    daemon still tracks, and it exits 0 on SIGTERM.
"""
import json
import os
import random
import signal
import tempfile
import threading
import time

from attack import (TOKEN, Daemon, Reader, check, finish, parse_args, report, wait_until,
                    ws_client, ws_open, ws_read_json_until, ws_send_json)

# An error a request may get because another client or a SIGHUP got there
# first (or the file worker's queue was full).
RACE_CODES = {"busy", "not_found", "duplicate_name", "too_many_objects"}


def obj(name, rnd):
    lo = [rnd.randint(0, 100) for _ in range(3)]
    return {"name": name, "space": rnd.choice(["rgb", "ycbcr"]), "lo": lo,
            "hi": [v + rnd.randint(0, 155) for v in lo], "min_mass": rnd.randint(1, 50)}


class Watcher(Reader):
    """The reading client, also checking every objects broadcast."""

    def __init__(self, port, path):
        super().__init__(port, path)
        self.broadcasts, self.bad = 0, []

    def other(self, m):
        if m.get("type") != "objects":
            return
        self.broadcasts += 1
        errs = []
        for i, o in enumerate(m.get("objects", [])):
            errs += ws_client.check_object_def(o, f"objects[{i}]")
            if o.get("id") != i:
                errs.append(f"objects[{i}].id = {o.get('id')}")
        names = [o.get("name") for o in m.get("objects", [])]
        if len(set(names)) != len(names):
            errs.append(f"duplicate names {names}")
        if errs and len(self.bad) < 5:
            self.bad.append(errs[:3])


def editor(port, path, k, stop, out, lock):
    rnd = random.Random(1000 + k)
    s = ws_open(port, path)
    ws_send_json(s, {"type": "subscribe", "preview": False})
    mine = []
    n = 0
    try:
        while not stop.is_set():
            n += 1
            rid = f"e{k}-{n}"
            op = rnd.choice(["add", "add", "update", "rename", "remove", "set", "save", "save",
                             "reload", "get"])
            if op == "add" or not mine and op in ("update", "rename", "remove"):
                name = f"c{k}n{n}"
                m = {"type": "add_object", "object": obj(name, rnd)}
                mine.append(name)
            elif op == "update":
                name = rnd.choice(mine)
                m = {"type": "update_object", "name": name, "object": obj(name, rnd)}
            elif op == "rename":
                i = rnd.randrange(len(mine))
                new = f"c{k}r{n}"
                m = {"type": "rename_object", "name": mine[i], "new_name": new}
                mine[i] = new
            elif op == "remove":
                m = {"type": "remove_object", "name": mine.pop(rnd.randrange(len(mine)))}
            elif op == "set":
                mine = [f"c{k}s{n}x{j}" for j in range(rnd.randint(1, 4))]
                m = {"type": "set_objects", "objects": [obj(x, rnd) for x in mine]}
            elif op == "save":
                m = {"type": "save_objects"}
            elif op == "reload":
                m = {"type": "reload_objects"}
            else:
                m = {"type": "get_objects"}
            m["id"] = rid
            ws_send_json(s, m)
            r = ws_read_json_until(s, lambda r: r.get("id") == rid, 15)
            with lock:
                out["requests"] += 1
                if r is None:
                    out["unanswered"] += 1
                elif r.get("type") == "error":
                    if r.get("code") in RACE_CODES:
                        out["race_errors"] += 1
                    else:
                        out["bad"].append(f"{m['type']}: {r.get('code')}: {r.get('message')}")
                else:
                    out["ok"] += 1
            if r is None:
                break
    finally:
        s.close()


def main():
    a = parse_args(sighups=400, editors=3, max_seconds=60.0)
    rnd = random.Random(7)
    with tempfile.TemporaryDirectory() as d:
        wd = os.path.join(d, "objs")
        os.mkdir(wd)
        path = os.path.join(wd, "objects.json")
        with open(path, "w") as f:
            json.dump({"objects": [obj(f"start{i}", rnd) for i in range(3)]}, f)
        with Daemon(a.trackd, ["--size", "320x180", "--fps", "30", "--backend", "cpu",
                               "--objects", path, "--no-preview", "--stats-interval", "0"], d,
                    token=TOKEN) as dm:
            watcher = Watcher(dm.port, dm.path)
            watcher.start()
            stop = threading.Event()
            lock = threading.Lock()
            out = {"requests": 0, "ok": 0, "race_errors": 0, "unanswered": 0, "bad": []}
            eds = [threading.Thread(target=editor, args=(dm.port, dm.path, k, stop, out, lock))
                   for k in range(a.editors)]
            for t in eds:
                t.start()
            t0 = time.monotonic()
            sent = 0
            # The daemon coalesces SIGHUPs that arrive before it gets to the
            # last one; sending them at about its polling pace makes each a
            # reload of its own more often.
            while sent < a.sighups and time.monotonic() - t0 < a.max_seconds and dm.alive():
                os.kill(dm.pid, signal.SIGHUP)
                sent += 1
                time.sleep(rnd.uniform(0, 0.03))
            stop.set()
            for t in eds:
                t.join(30)
            print(f"{sent} SIGHUPs in {time.monotonic() - t0:.1f} s; requests {out['requests']}: "
                  f"{out['ok']} ok, {out['race_errors']} race errors, "
                  f"{out['unanswered']} unanswered; {watcher.broadcasts} broadcasts")
            check(dm.alive(), "trackd is alive after the race")
            check(sent == a.sighups or time.monotonic() - t0 >= a.max_seconds,
                  f"all {a.sighups} SIGHUPs sent, or the time ran out ({sent})")
            check(out["unanswered"] == 0, f"every request was answered ({out['unanswered']} not)")
            check(not out["bad"], f"no error a race does not explain: {out['bad'][:5]}")
            log = dm.log_text()
            rejected = [ln for ln in log.splitlines() if "reload rejected" in ln]
            check(not rejected, f"no SIGHUP reload was rejected: {rejected[:3]}")
            check(log.count("reloaded ") > 0, "SIGHUPs did reload")
            check(watcher.broadcasts > 0 and not watcher.bad,
                  f"every objects broadcast was a complete valid set ({watcher.bad})")

            # Afterwards: the file, the directory, live set == file.
            with open(path) as f:
                text = f.read()
            try:
                on_disk = json.loads(text)["objects"]
                valid = all(not ws_client.check_object_def(dict(o, id=0, color="#000000"), "o")
                            for o in on_disk)
            except (ValueError, KeyError, TypeError):
                on_disk, valid = None, False
            check(valid, "the objects file is complete, valid JSON")
            left = sorted(os.listdir(wd))
            check(left == ["objects.json"], f"nothing but objects.json in its folder: {left}")
            s = ws_open(dm.port, dm.path)
            ws_send_json(s, {"type": "reload_objects", "id": "fin"})
            r = ws_read_json_until(s, lambda m: m.get("id") == "fin", 15)
            check(r and r.get("type") == "ack", f"a final reload_objects is accepted: {r}")
            ws_send_json(s, {"type": "get_objects", "id": "get"})
            r = ws_read_json_until(s, lambda m: m.get("id") == "get", 15)
            key = lambda o: (o["name"], o["space"], o["lo"], o["hi"], o.get("min_mass", 1))
            check(r and on_disk is not None and
                  [key(o) for o in r["objects"]] == [key(o) for o in on_disk],
                  "after it the live set equals the file")
            s.close()
            t_end = time.monotonic()
            check(wait_until(lambda: watcher.frames_since(t_end) > 0, 10) and
                  watcher.error is None, f"the daemon still tracks (error {watcher.error})")
            watcher.stop.set()
            watcher.join(5)
            tried = sent + out["requests"]
            survived = (sent - len(rejected) + out["ok"] + out["race_errors"]
                        if dm.alive() else 0)
            report("sighup_race", tried=tried, survived=survived, sighups=sent,
                   requests=out["requests"])
    finish()


if __name__ == "__main__":
    main()
