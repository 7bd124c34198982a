#!/usr/bin/python3
"""Attack: save_objects / reload_objects against the daemon's files, and the
control token at its longest (issue 11, items 1 and 5).

The real trackd runs as root (CI runs as root; without root the tests that
need another user are skipped and say so) on loopback with no token, in a
world-writable sticky folder like /tmp, as in the report. A second local user
(nobody, uid 65534) is the attacker. Each case checks what an attacker would
want never to happen:
  1. a symlink at the save target pointing to a root-only victim file: save
     refuses, the victim keeps its bytes and mode; reload through it refuses
     and the reply never holds the victim's text; the same for a hard link
     (a regular file: reload reads it but the error quotes nothing of it);
  2. a FIFO and a device node at the target: save refuses and leaves them,
     reload refuses at once (a FIFO read would hang the file worker);
  3. a target file owned by nobody: neither replaced nor read;
  4. nobody's own WebSocket client on the loopback listener: save and reload
     are "unauthorized" (only trackd's user may), while root's client may;
  5. kill -9 during a loop of saves: the target is always a complete valid
     objects file; temporary files of a killed save are gone after the next
     start, other files beside it are kept;
  6. a 127-character --control-token (what the CLI accepts) works in full:
     the auth message, the ?token= URL argument, the page URL in the log;
     one character less is refused.
Prints "attack: save_safety tried=N survived=N".
"""
import asyncio
import json
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse

import websockets

from attack import FAILS, check, finish, report, start_trackd, stop_trackd as stop

NOBODY = 65534
SECRET = "supersecretpassword"
tried = survived = 0


def attack(cond, what):
    """One attack tried; survived when cond holds."""
    global tried, survived
    tried += 1
    survived += bool(cond)
    check(cond, what)


async def request(port, msgs, query=""):
    """Sends each message of msgs on one connection (ids 1..n) and returns
    their replies in order (None for one that did not come in 10 s)."""
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws{query}", max_size=None) as ws:
        replies = {}
        for i, m in enumerate(msgs, 1):
            await ws.send(json.dumps({**m, "id": i}))
        deadline = time.monotonic() + 10
        while len(replies) < len(msgs) and time.monotonic() < deadline:
            try:
                raw = await asyncio.wait_for(ws.recv(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
            if isinstance(raw, str):
                j = json.loads(raw)
                if "id" in j and j.get("type") in ("ack", "error", "objects"):
                    replies[j["id"]] = j
        return [replies.get(i) for i in range(1, len(msgs) + 1)]


def req(port, *msgs, query=""):
    return asyncio.run(request(port, list(msgs), query))


# The same client, run as another user (its own process, its own socket).
AS_USER = r"""
import asyncio, json, sys
import websockets
async def main():
    async with websockets.connect(f"ws://127.0.0.1:{sys.argv[1]}/ws") as ws:
        msgs = json.loads(sys.argv[2])
        for i, m in enumerate(msgs, 1):
            await ws.send(json.dumps({**m, "id": i}))
        got = {}
        while len(got) < len(msgs):
            raw = await asyncio.wait_for(ws.recv(), 10)
            j = json.loads(raw) if isinstance(raw, str) else None  # previews are binary
            if isinstance(j, dict) and j.get("id") in range(1, len(msgs) + 1):
                got[j["id"]] = j
        print(json.dumps([got[i] for i in range(1, len(msgs) + 1)]))
asyncio.run(main())
"""


def req_as(uid, port, *msgs):
    r = subprocess.run([sys.executable, "-c", AS_USER, str(port), json.dumps(list(msgs))],
                       user=uid, group=uid, capture_output=True, text=True, timeout=30, cwd="/")
    if r.returncode:
        print(r.stderr)
        return [None] * len(msgs)
    return json.loads(r.stdout)


def as_user(uid, fn, *args):
    """Runs fn(*args) in a child process as uid (a file made by nobody)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            fn(*args)
            os._exit(0)
        except BaseException as e:  # noqa: BLE001 - reported by the exit code
            print(f"as uid {uid}: {e}", file=sys.stderr)
            os._exit(1)
    return os.waitpid(pid, 0)[1] == 0


def code(r):
    return r.get("code") if r and r.get("type") == "error" else (r or {}).get("type")


def text(r):
    return json.dumps(r) if r else ""


def file_state(path):
    st = os.lstat(path)
    data = open(path, "rb").read() if stat.S_ISREG(st.st_mode) else None
    return (st.st_mode, st.st_uid, st.st_ino, data)


def valid_objects(path):
    try:
        with open(path) as f:
            j = json.load(f)
        return isinstance(j.get("objects"), list)
    except (OSError, ValueError):
        return False


def temp_files(d, name="objects.json"):
    return sorted(n for n in os.listdir(d) if n.startswith(name + ".tmp."))


def start(trackd, args, log, cwd):
    """start_trackd in folder cwd (the default target is relative to it)."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return start_trackd(trackd, ["--size", "320x180", "--stats-interval", "0", *args], log)
    finally:
        os.chdir(old)


def case_links(trackd, base, log, root):
    """1-4: the report's attack in a sticky world-writable folder."""
    ww = os.path.join(base, "ww")
    os.mkdir(ww)
    os.chmod(ww, 0o1777)
    private = os.path.join(base, "root")
    os.mkdir(private, 0o700)
    victim = os.path.join(private, "victim")
    with open(victim, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(victim, 0o600)
    target = os.path.join(ww, "objects.json")
    p, port = start(trackd, [], log, ww)  # no --objects: ./objects.json
    try:
        log.flush()
        logged = open(log.name).read()
        check(f"objects saved from the page go to {target}" in logged,
              "the default target is resolved to an absolute path and logged")
        before = file_state(victim)
        made = as_user(NOBODY, os.symlink, victim, target) if root else False
        if not made:
            os.symlink(victim, target)
        r = req(port, {"type": "save_objects"}, {"type": "reload_objects"})
        attack(code(r[0]) == "io_error" and "symbolic link" in text(r[0]) and
               file_state(victim) == before and os.path.islink(target),
               f"save through a symlink to a 0600 file refused, victim unchanged: {r[0]}")
        attack(code(r[1]) == "invalid_object" and SECRET not in text(r[1]) and
               "symbolic link" in text(r[1]),
               f"reload through the symlink refused, nothing of the file echoed: {r[1]}")
        os.unlink(target)

        # A hard link is a regular file of root's: reload reads it, but the
        # error says where and which rule, never the text.
        os.link(victim, target)
        r = req(port, {"type": "reload_objects"})
        attack(code(r[0]) == "invalid_object" and SECRET not in text(r[0]) and
               re.search(r"objects\.json:1:\d+: syntax error", text(r[0])),
               f"reload of a hard link to the victim: error without its text: {r[0]}")
        r = req(port, {"type": "save_objects"})
        attack(file_state(victim) == before,
               "save over a hard link replaces the name only: the victim keeps its bytes")
        os.unlink(target)

        # Not regular files: neither replaced nor read (a FIFO read would
        # wait for a writer forever).
        os.mkfifo(target, 0o666)
        t0 = time.monotonic()
        r = req(port, {"type": "save_objects"}, {"type": "reload_objects"})
        attack(code(r[0]) == "io_error" and stat.S_ISFIFO(os.lstat(target).st_mode),
               f"save onto a FIFO refused, the FIFO stays: {r[0]}")
        attack(code(r[1]) == "invalid_object" and time.monotonic() - t0 < 8,
               f"reload of a FIFO refused at once: {r[1]}")
        os.unlink(target)
        try:
            os.mknod(target, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
            r = req(port, {"type": "save_objects"}, {"type": "reload_objects"})
            attack(code(r[0]) == "io_error" and stat.S_ISCHR(os.lstat(target).st_mode),
                   f"save onto a device node refused, the node stays: {r[0]}")
            attack(code(r[1]) == "invalid_object", f"reload of a device node refused: {r[1]}")
            os.unlink(target)
        except PermissionError:
            print("skip device node: mknod not permitted here")

        if not root:
            print("skip other users' files and clients: not root")
            return
        # A file of another user: not replaced, not read.
        with open(target, "w") as f:
            json.dump({"objects": [{"name": "theirs", "space": "rgb", "lo": [0, 0, 0],
                                    "hi": [9, 9, 9]}]}, f)
        os.chown(target, NOBODY, NOBODY)
        theirs = file_state(target)
        r = req(port, {"type": "save_objects"}, {"type": "reload_objects"},
                {"type": "get_objects"})
        attack(code(r[0]) == "io_error" and "uid 65534" in text(r[0]) and
               file_state(target) == theirs,
               f"save over nobody's file refused, file unchanged: {r[0]}")
        attack(code(r[1]) == "invalid_object" and
               [o["name"] for o in r[2]["objects"]] != ["theirs"],
               f"reload of nobody's file refused, set unchanged: {r[1]}")
        os.unlink(target)

        # nobody's own client: may look and edit the live set (loopback
        # without a token), not make trackd write or read files.
        r = req_as(NOBODY, port, {"type": "get_objects"}, {"type": "save_objects"},
                   {"type": "reload_objects"})
        attack(code(r[0]) == "objects" and code(r[1]) == "unauthorized" and
               code(r[2]) == "unauthorized" and not os.path.lexists(target),
               f"another local user's client cannot save or reload: {[code(x) for x in r]}")
        r = req(port, {"type": "save_objects"})
        check(code(r[0]) == "ack" and valid_objects(target) and
              (os.stat(target).st_mode & 0o777) == 0o644,
              f"trackd's own user saves (new file 0644): {r[0]}")
        check(os.stat(victim).st_mode & 0o777 == 0o600 and
              open(victim).read() == SECRET + "\n", "victim intact at the end")
    finally:
        stop(p)


def case_kill9(trackd, base, log):
    """5: kill -9 in a loop of saves."""
    d = os.path.join(base, "kill9")
    os.mkdir(d, 0o700)
    target = os.path.join(d, "objects.json")
    with open(target, "w") as f:
        json.dump({"objects": [{"name": "a", "space": "rgb", "lo": [0, 0, 0],
                                "hi": [9, 9, 9]}]}, f)
    # Not ours: a different pattern, kept by every start.
    keep = ["objects.json.tmp.keep", "objects.json.bak", "other.json.tmp.Ab3xZ9"]
    for n in keep:
        open(os.path.join(d, n), "w").close()
    rnd = random.Random(11)
    rounds, saves = 6, 0

    async def save_loop(port, stop_at):
        nonlocal saves
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            i = 0
            while time.monotonic() < stop_at:
                i += 1
                name = f"o{i}" + "x" * rnd.randrange(60)
                await ws.send(json.dumps({"type": "add_object", "id": 2 * i, "object": {
                    "name": name[:63], "space": "rgb", "lo": [0, 0, 0], "hi": [9, 9, 9]}}))
                await ws.send(json.dumps({"type": "save_objects", "id": 2 * i + 1}))
                while True:
                    raw = await ws.recv()
                    j = json.loads(raw) if isinstance(raw, str) else {}
                    if j.get("id") == 2 * i + 1:
                        saves += j.get("type") == "ack"
                        break
                if i % 40 == 0:
                    await ws.send(json.dumps({"type": "set_objects", "objects": []}))

    for k in range(rounds):
        # A killed save's leftover, planted so the next start must act.
        planted = os.path.join(d, f"objects.json.tmp.Zz{k}Qk1")
        open(planted, "w").write('{"objects": [{"na')
        p, port = start_trackd(trackd, ["--size", "320x180", "--stats-interval", "0",
                                        "--no-preview", "--objects", target], log)
        check(temp_files(d) == [] or all(n.endswith(".keep") for n in temp_files(d)),
              f"round {k}: no temporary file after the start: {temp_files(d)}")
        t_kill = time.monotonic() + 0.3 + rnd.random() * 0.7

        async def run():
            task = asyncio.ensure_future(save_loop(port, t_kill + 5))
            await asyncio.sleep(max(0, t_kill - time.monotonic()))
            os.kill(p.pid, signal.SIGKILL)
            try:
                await asyncio.wait_for(task, 5)
            except Exception:  # noqa: BLE001 - the connection dies with the daemon
                pass
        asyncio.run(run())
        p.wait(10)
        attack(valid_objects(target), f"round {k}: after kill -9 the target is a complete file")
    p, port = start_trackd(trackd, ["--size", "320x180", "--objects", target], log)
    stop(p)
    left = temp_files(d)
    attack(left == ["objects.json.tmp.keep"] and all(os.path.exists(os.path.join(d, n))
                                                     for n in keep),
           f"after {rounds} kills and {saves} saves the next start leaves no temp file of "
           f"ours and keeps the rest: {sorted(os.listdir(d))}")
    log.flush()
    check("removed 1 temporary file(s)" in open(log.name).read(),
          "the start says it removed a killed save's temporary file")


def case_token(trackd, base, log):
    """6: a 127-character token, with characters that need URL escapes."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!$&'()*+,;=:@/?% #"
    rnd = random.Random(5)
    token = "".join(rnd.choice(alphabet) for _ in range(127))
    for c in "&=+% #?":  # the ones a URL parser gets wrong
        if c not in token:
            token = token[:-1] + c if c != token[-1] else token
    token = (token + "x" * 127)[:127]
    assert len(token) == 127
    p, port = start_trackd(trackd, ["--size", "320x180", "--stats-interval", "0",
                                    "--control-token", token], log)
    try:
        r = req(port, {"type": "auth", "token": token[:39]}, {"type": "get_objects"})
        attack(code(r[0]) == "unauthorized" and code(r[1]) == "unauthorized",
               "the first 39 characters of a 127-character token are refused")
        r = req(port, {"type": "auth", "token": token[:126]}, {"type": "get_objects"})
        attack(code(r[0]) == "unauthorized", "126 of 127 characters are refused")
        r = req(port, {"type": "auth", "token": token}, {"type": "get_objects"})
        check(code(r[0]) == "ack" and code(r[1]) == "objects",
              f"the whole 127-character token in the auth message: {code(r[0])}")
        q = "?token=" + urllib.parse.quote(token, safe="")
        r = req(port, {"type": "get_objects"}, query=q)
        check(code(r[0]) == "objects", f"the whole token as ?token= on the WebSocket URL: {r[0]}")
        q = "?token=" + urllib.parse.quote(token[:-1], safe="")
        r = req(port, {"type": "get_objects"}, query=q)
        attack(code(r[0]) == "unauthorized", "?token= one character short is refused")
        log.flush()
        m = re.findall(r"web UI on (\S+)", open(log.name).read())
        url = urllib.parse.urlsplit(m[-1]) if m else None
        got = urllib.parse.parse_qs(url.query).get("token", [""])[0] if url else ""
        check(got == token, f"the page URL in the log carries the whole token ({len(got)} chars)")
    finally:
        stop(p)


def main():
    trackd = os.path.abspath(sys.argv[1])
    root = os.geteuid() == 0
    base = tempfile.mkdtemp(prefix="trk-attack-save-")
    os.chmod(base, 0o755)  # nobody must reach ww/ below it
    log = open(os.path.join(base, "trackd.log"), "w+")
    try:
        case_links(trackd, base, log, root)
        case_kill9(trackd, base, log)
        case_token(trackd, base, log)
    finally:
        log.close()
        if FAILS:
            print(open(os.path.join(base, "trackd.log")).read()[-4000:])
        shutil.rmtree(base, ignore_errors=True)
    report("save_safety", tried=tried, survived=survived)
    finish()


if __name__ == "__main__":
    main()
