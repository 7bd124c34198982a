#!/usr/bin/python3
"""Integration: --spin auto's machine-wide slots (daemon/spin.h), with real
trackd processes side by side, as many cameras on one host run. Each test
daemon gets TRACKD_SPIN_DIR = a fresh folder, so nothing else on the
machine shares its slots. Who holds a slot is read from /proc/locks (the
kernel's own table of flock(2) holders), and whether the pipeline polls
from /metrics (trackd_spin), not only from the log.

  1. --spin-slots 2: the first two daemons poll (slot 1 and 2, each holding
     its lock file), the third sleeps (its log says the slots are held) and
     holds none;
  2. --spin on and --spin off take no slot (on polls regardless, off never);
  3. a slot holder killed with SIGKILL (no clean-up) frees its slot: the
     daemon that was waiting takes it as it runs (it tries once a second)
     and polls from then on; a daemon started after that sleeps;
  4. --fast never polls, so it takes no slot;
  5. the default (--spin-slots 0): a quarter of the online CPUs, none below
     4 CPUs (then no slot file is made at all);
  6. a folder that cannot hold the slots: a warning naming it and the
     reason, and the daemon runs and exits 0;
  7. --spin-slots -1 or a word: exit 64, the message naming the option.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from daemon_proc import free_port, http_get, wait_for

TRACKD = sys.argv[1]
FAILS = []
DEMO = ["--size", "320x180", "--backend", "cpu", "--output", "/dev/null", "--log-level", "debug",
        "--stats-interval", "0", "--no-preview"]
DECIDED = re.compile(r"spin: --spin auto: (polling|sleeping)")


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        FAILS.append(what)


class Daemon:
    """A trackd with TRACKD_SPIN_DIR=d and stderr to a file of its own."""
    n = 0

    def __init__(self, d, args):
        Daemon.n += 1
        self.log = os.path.join(d, f"trackd{Daemon.n}.log")
        env = dict(os.environ, TRACKD_SPIN_DIR=os.path.join(d, "slots"))
        self.port = free_port()
        with open(self.log, "w") as err:
            self.p = subprocess.Popen([TRACKD, *DEMO, "--listen", f"127.0.0.1:{self.port}", *args],
                                      stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=d)

    def spin_gauge(self):
        """/metrics' trackd_spin (None if missing)."""
        text = http_get(self.port, "/metrics")[1].decode()
        m = re.search(r"^trackd_spin (\S+)$", text, re.M)
        return float(m.group(1)) if m else None

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait_running(self, timeout=30):
        """Until the daemon has decided whether it polls (its "spin:" line,
        logged as the pipeline starts) and processed a frame (so /metrics
        says what the pipeline does); False if it exited or took longer."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.p.poll() is None:
            if re.search(r"spin: --spin (on|off|auto)", self.text()):
                try:
                    text = http_get(self.port, "/metrics", 5)[1].decode()
                except OSError:
                    text = ""
                m = re.search(r"^trackd_frames_processed_total (\S+)$", text, re.M)
                if m and float(m.group(1)) > 0:
                    return True
            time.sleep(0.1)
        return False

    def decision(self):
        m = DECIDED.search(self.text())
        return m.group(1) if m else None

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def holders(d):
    """{slot file name: pid} of the slot files in d/slots that a process
    holds a flock on, from /proc/locks (fields: id, FLOCK, ADVISORY,
    WRITE, pid, major:minor:inode, ...)."""
    slots = os.path.join(d, "slots")
    inodes = {}
    for name in os.listdir(slots):
        st = os.stat(os.path.join(slots, name))
        inodes[st.st_ino] = name
    out = {}
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
                continue
            ino = int(fields[5].split(":")[2])
            dev = fields[5].rsplit(":", 1)[0]
            if ino in inodes and dev == "%02x:%02x" % (os.major(os.stat(slots).st_dev),
                                                        os.minor(os.stat(slots).st_dev)):
                out[inodes[ino]] = int(fields[4])
    return out


with tempfile.TemporaryDirectory() as d:
    os.mkdir(os.path.join(d, "slots"))
    started = []
    try:
        # 1. Two slots, three daemons, started one after another.
        a = Daemon(d, ["--spin-slots", "2"])
        started.append(a)
        check(a.wait_running(), "the first daemon runs")
        b = Daemon(d, ["--spin-slots", "2"])
        started.append(b)
        check(b.wait_running(), "the second daemon runs")
        c = Daemon(d, ["--spin-slots", "2"])
        started.append(c)
        check(c.wait_running(), "the third daemon runs")
        check("polling, in spin slot 1 of 2" in a.text(), "the first polls in slot 1 of 2")
        check("polling, in spin slot 2 of 2" in b.text(), "the second polls in slot 2 of 2")
        check(c.decision() == "sleeping" and "hold the 2 spin slots" in c.text(),
              "the third sleeps: its log says the 2 slots are held")
        h = holders(d)
        check(h == {"trackd-spin.0": a.p.pid, "trackd-spin.1": b.p.pid},
              f"/proc/locks: slot 0 held by the first, 1 by the second, nothing by the third ({h})")
        g = [x.spin_gauge() for x in (a, b, c)]
        check(g == [1, 1, 0], f"/metrics trackd_spin: 1, 1, 0 ({g})")

        # 2. on and off take no slot.
        on = Daemon(d, ["--spin-slots", "2", "--spin", "on"])
        off = Daemon(d, ["--spin-slots", "2", "--spin", "off"])
        started += [on, off]
        check(on.wait_running() and off.wait_running(), "--spin on and off daemons run")
        check("--spin on: polling, no slot taken" in on.text() and
              "--spin off: sleeping, no slot taken" in off.text(),
              "--spin on / off: logged as polling / sleeping without a slot")
        check([on.spin_gauge(), off.spin_gauge()] == [1, 0], "/metrics trackd_spin: on 1, off 0")
        h = holders(d)
        check(on.p.pid not in h.values() and off.p.pid not in h.values() and len(h) == 2,
              f"--spin on / off hold no slot ({h})")

        # 3. The first holder dies without clean-up: its slot is free again,
        # and the waiting daemon takes it while it runs.
        a.stop(signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "polling from now on" not in c.text():
            time.sleep(0.2)
        check("polling from now on, in spin slot 1 of 2" in c.text(),
              "the waiting daemon takes the killed daemon's slot 1 as it runs")
        h = holders(d)
        check(h == {"trackd-spin.0": c.p.pid, "trackd-spin.1": b.p.pid},
              f"/proc/locks: slot 0 is now the third daemon's ({h})")
        check(wait_for(lambda: c.spin_gauge() == 1, 10), "its /metrics trackd_spin is 1 now")
        e = Daemon(d, ["--spin-slots", "2"])
        started.append(e)
        check(e.wait_running() and e.decision() == "sleeping",
              "a daemon started after that sleeps: the slots are held again")

        # 4. --fast never polls: no slot taken, even with one free.
        b.stop()
        r = subprocess.run([TRACKD, *DEMO, "--no-server", "--spin-slots", "2", "--fast", "--frames",
                            "3"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=d,
                           env=dict(os.environ, TRACKD_SPIN_DIR=os.path.join(d, "slots")),
                           timeout=60)
        check(r.returncode == 0 and "spin: --spin" not in r.stderr,
              f"--fast: exit 0, no slot decision (rc {r.returncode})")
    finally:
        for x in started:
            x.stop()

    # 5. The default: online CPUs / 4 slots.
    fresh = os.path.join(d, "fresh")
    os.mkdir(fresh)
    os.mkdir(os.path.join(fresh, "slots"))
    x = Daemon(fresh, [])
    try:
        check(x.wait_running(), "a daemon with the default slots runs")
        cpus = os.sysconf("SC_NPROCESSORS_ONLN")
        made = sorted(os.listdir(os.path.join(fresh, "slots")))
        if cpus >= 4:
            check(f"polling, in spin slot 1 of {cpus // 4}" in x.text(),
                  f"default: slot 1 of {cpus // 4} ({cpus} CPUs)")
        else:
            check(x.decision() == "sleeping" and not made and "polling needs 4" in x.text(),
                  f"default on {cpus} CPUs: no slot, no file ({made})")
    finally:
        x.stop()

    # 6. Slot files that cannot be made: a warning, and the daemon works.
    env = dict(os.environ, TRACKD_SPIN_DIR=os.path.join(d, "no-such-folder"))
    r = subprocess.run([TRACKD, *DEMO, "--no-server", "--spin-slots", "1", "--frames", "3"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=d,
                       timeout=60)
    check(r.returncode == 0, f"an unusable slot folder: exit 0 ({r.returncode}: {r.stderr[-300:]})")
    check(re.search(r"warn +spin: --spin auto: \w+ as if the machine were this daemon's alone: "
                    r"cannot open the spin slots in .*no-such-folder: No such file", r.stderr),
          "a warning names the folder and the reason")

# 7. Bad values: usage errors.
for bad in ("-1", "two", "4097"):
    r = subprocess.run([TRACKD, "--spin-slots", bad], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=30)
    check(r.returncode == 64 and "--spin-slots" in r.stderr,
          f"--spin-slots {bad}: exit 64 naming the option ({r.returncode}: {r.stderr.strip()})")

print(f"{len(FAILS)} failures")
sys.exit(1 if FAILS else 0)
