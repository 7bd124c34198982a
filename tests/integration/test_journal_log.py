#!/usr/bin/python3
"""Integration: trackd's log lines when stderr is systemd's journal. systemd
sets JOURNAL_STREAM=<dev>:<inode> of the stream it connects to stderr; the
test gives trackd a file as stderr and names that file's device and inode,
which is exactly what trackd checks (a file stands in for the journal's
socket: the format is what is tested, not journald).

  1. JOURNAL_STREAM names stderr: every line is "<N>tag: text" with the
     syslog priority N of its level (warning 4, info 6), no timestamp;
  2. an invalid objects file under the journal: exit 78, the error at <3>;
  3. JOURNAL_STREAM naming another file (stderr redirected away from the
     journal), or malformed: the usual "HH:MM:SS.mmm level tag: text".
"""
import os
import re
import subprocess
import sys
import tempfile

TRACKD = sys.argv[1]
FAILS = []
DEMO = ["--size", "320x180", "--backend", "cpu", "--no-server", "--frames", "3", "--fast"]
PLAIN = re.compile(r"^\d\d:\d\d:\d\d\.\d{3} (error|warn |info |debug) [\w-]+: ")
JOURNAL = re.compile(r"^<([3467])>[\w-]+: \S")


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


def run(d, args, journal_stream):
    """Runs trackd with stderr to a file; journal_stream(stat of that file)
    gives JOURNAL_STREAM (None: unset). Returns (exit code, lines)."""
    path = os.path.join(d, "stderr.log")
    with open(path, "w") as err:
        st = os.fstat(err.fileno())
        env = dict(os.environ)
        env.pop("JOURNAL_STREAM", None)
        js = journal_stream(st)
        if js is not None:
            env["JOURNAL_STREAM"] = js
        r = subprocess.run([TRACKD, *args], stdout=subprocess.DEVNULL, stderr=err, env=env,
                           cwd=d, timeout=60)
    with open(path) as f:
        return r.returncode, f.read().splitlines()


with tempfile.TemporaryDirectory() as d:
    same = lambda st: f"{st.st_dev}:{st.st_ino}"  # noqa: E731
    rc, lines = run(d, DEMO, same)
    check(rc == 0, f"journal: the demo run exits 0 ({rc})")
    check(lines and all(JOURNAL.match(l) for l in lines),
          "journal: every line is <N>tag: text: " + repr([l for l in lines if not JOURNAL.match(l)][:3]))
    check(not any(PLAIN.match(l) or re.search(r"\d\d:\d\d:\d\d\.\d{3}", l) for l in lines),
          "journal: no timestamps")
    check(any(l.startswith("<4>trackd: --no-server without --output") for l in lines),
          "journal: a warning at priority 4")
    check(any(l.startswith("<6>trackd: source: demo scene") for l in lines),
          "journal: info at priority 6")

    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write('{"objects": [ {"name": "x", "color": "nope"} ]}')
    rc, lines = run(d, [*DEMO, "--objects", bad], same)
    check(rc == 78, f"journal: an invalid objects file exits 78 ({rc})")
    check(any(l.startswith("<3>") and "bad.json" in l for l in lines),
          f"journal: the config error at priority 3 ({lines})")

    other = os.stat(bad)
    for what, js in (("another file", lambda st: f"{other.st_dev}:{other.st_ino}"),
                     ("malformed", lambda st: f"{st.st_dev}:{st.st_ino}x"),
                     ("unset", lambda st: None)):
        rc, lines = run(d, DEMO, js)
        check(rc == 0 and lines and all(PLAIN.match(l) for l in lines),
              f"JOURNAL_STREAM {what}: plain timestamped lines " + repr(lines[:2]))
if FAILS:
    sys.exit(f"{len(FAILS)} check(s) failed")
print("all journal log checks passed")
