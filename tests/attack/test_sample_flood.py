#!/usr/bin/python3
"""Attack: a flood of full-frame colour samples must not slow tracking down.

The real daemon tracks the demo scene (1280x720 at 30 fps, cpu backend) with
one client reading results and previews, as the web page does. Three more
clients stay connected; the test alternates short quiet windows with flood
windows, in which each of the three keeps 16 full-frame samples (x=0, y=0,
w=h=4096) outstanding, sending the next the moment a sample comes back and
waiting 0.1 s after a "busy"; a fifth client asks an ordinary sample in the
middle of some floods, which must be answered.

The frame rate is the daemon's own: from the results' seq and wall_ms (seq
counts every frame the demo source produced, wall_ms is stamped when the
frame was processed), so a slow reader cannot bias it. The test's clients
run at a lower CPU priority than the daemon, so that they compete with other
work on the machine rather than with the daemon. With the flood the rate
(the median of the flood windows' rates, so that one window stalled by other
work on the machine does not decide) must stay within 5 % of the nominal 30
fps (of the quiet windows' median when that is lower). On a machine so loaded that the daemon makes less than 80 %
of 30 fps before any flood, window-to-window noise exceeds 5 %: the rates
are then only required not to halve; so too in a sanitizer build (TRK_SANITIZE=1),
whose instrumented daemon needs several times the CPU per frame. Checked on any machine, from the threads'
CPU time in /proc: the processing thread spends no more per frame during the
floods than between them (at most 1.5 times), and the sampler thread keeps
to about a tenth of a core.

Before sampling moved off the processing thread the flood took the rate from
30 to 1-3 fps. Usage: test_sample_flood.py TRACKD
"""
import asyncio
import json
import os
import sys
import tempfile
import time

import websockets

from attack import FAILS, Daemon, check, connect, finish, report

NOMINAL_FPS = 30.0
ROUNDS = 8          # a quiet window, then a flood window, this many times
WINDOW_S = 2.0      # each window; short, so both see the same outside load
SETTLE_S = 0.3      # the start of each window is not measured
FLOODERS = 3
OUTSTANDING = 16    # samples each flooder keeps sent and unanswered
FULL_FRAME = {"type": "sample", "x": 0, "y": 0, "w": 4096, "h": 4096}

class Reader:
    """Reads everything (previews too, as the page does); keeps (seq,
    wall_ms) of every frame result."""

    def __init__(self, ws):
        self.ws = ws
        self.frames = []
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        try:
            async for m in self.ws:
                if isinstance(m, str) and m.startswith('{"type":"frame"'):
                    j = json.loads(m)
                    self.frames.append((j["seq"], j["wall_ms"]))
        except websockets.ConnectionClosed:
            pass


class Flooder:
    """While `active` is set, keeps OUTSTANDING full-frame samples sent and
    unanswered: the next goes out as soon as a sample comes back; after a
    "busy" it waits 0.1 s. Stays connected, idle, while `active` is clear."""

    def __init__(self, url, totals, active, done):
        self.url, self.totals, self.active, self.done = url, totals, active, done

    async def run(self):
        ws = await connect(self.url)
        await ws.send(json.dumps({"type": "subscribe", "preview": False}))
        inflight, hold_until, rid = 0, 0.0, 0
        try:
            while not self.done.is_set():
                while (self.active.is_set() and inflight < OUTSTANDING
                       and time.monotonic() >= hold_until):
                    rid += 1
                    inflight += 1
                    self.totals["sent"] += 1
                    await ws.send(json.dumps(dict(FULL_FRAME, id=rid)))
                try:
                    m = await asyncio.wait_for(ws.recv(), 0.05)
                except asyncio.TimeoutError:
                    continue
                if not isinstance(m, str) or m.startswith('{"type":"frame"'):
                    continue
                j = json.loads(m)
                if "id" not in j or j.get("type") == "ack":
                    continue
                inflight -= 1
                if j.get("type") == "sample":
                    self.totals["answered"] += 1
                elif j.get("code") == "busy":
                    self.totals["busy"] += 1
                    hold_until = time.monotonic() + 0.1
                else:
                    self.totals["other"].append(j)
        finally:
            await ws.close()


def thread_cpu(pid):
    """CPU seconds used so far by each named thread of pid (the pipeline
    names its threads trk-process, trk-sampler, ...), from the scheduler's
    nanosecond count where the kernel has it."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    sec = int(f.read().split()[0]) / 1e9
            except OSError:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                sec = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except OSError:
            continue  # a thread that just ended
        out[name] = out.get(name, 0.0) + sec
    return out


class Window:
    """One measured span: wall ms at both ends, thread CPU at both ends."""

    def __init__(self, pid):
        self.pid = pid
        self.t0, self.cpu0 = time.time() * 1000, thread_cpu(pid)

    def end(self):
        self.t1, self.cpu1 = time.time() * 1000, thread_cpu(self.pid)
        return self

    def cpu(self, name):
        """CPU seconds thread `name` used in the window; None if absent."""
        if name not in self.cpu0 or name not in self.cpu1:
            return None
        return self.cpu1[name] - self.cpu0[name]


def window_rate(frames, t0, t1):
    """(frames, seconds) the daemon processed in [t0, t1] (wall ms): the seq
    advance over the processing-time span."""
    w = [(s, t) for s, t in frames if t0 + SETTLE_S * 1000 <= t <= t1]
    if len(w) < 2:  # stalled: (next to) nothing in the whole window
        return 0, max(0.0, (t1 - t0) / 1000 - SETTLE_S)
    return w[-1][0] - w[0][0], (w[-1][1] - w[0][1]) / 1000


def median_rate(frames, windows):
    """The median of the windows' own rates: one window that other work on
    the machine stalled (a scheduling hiccup, not the flood) does not decide;
    a flood that slows the pipeline slows most of its windows."""
    rates = []
    for w in windows:
        dn, dt = window_rate(frames, w.t0, w.t1)
        rates.append(dn / dt if dt > 0 else 0.0)
    rates.sort()
    k = len(rates)
    if not k:
        return 0.0
    return rates[k // 2] if k % 2 else (rates[k // 2 - 1] + rates[k // 2]) / 2


def rate(frames, windows):
    """Frames per second over the windows, pooled."""
    n, span = 0, 0.0
    for w in windows:
        dn, dt = window_rate(frames, w.t0, w.t1)
        n, span = n + dn, span + dt
    return n / span if span > 0 else 0.0


def cpu_per_frame(frames, windows, name):
    """Milliseconds of thread `name`'s CPU per frame processed, pooled over
    the windows (all frames of a window, settling included); None when the
    daemon has no such thread or it did nothing."""
    cpu, n = 0.0, 0
    for w in windows:
        c = w.cpu(name)
        if c is None:
            return None
        cpu += c
        seqs = [s for s, t in frames if w.t0 <= t <= w.t1]
        n += seqs[-1] - seqs[0] + 1 if seqs else 0  # results a slow reader missed count too
    if not n:  # no frame at all: every CPU second went elsewhere
        return float("inf") if cpu > 0 else None
    return cpu * 1000 / n


def cpu_share(windows, name):
    """Thread `name`'s CPU as a share of the windows' wall time."""
    if any(w.cpu(name) is None for w in windows):
        return None
    return sum(w.cpu(name) for w in windows) / sum((w.t1 - w.t0) / 1000 for w in windows)


class Ordinary:
    """A client that reads all the time and now and then asks one small
    sample, as a person teaching a colour does."""

    def __init__(self, ws):
        self.ws = ws
        self.replies = {}
        self.task = asyncio.ensure_future(self.run())

    async def run(self):
        try:
            async for m in self.ws:
                if isinstance(m, str) and not m.startswith('{"type":"frame"'):
                    j = json.loads(m)
                    if "id" in j:
                        self.replies[j["id"]] = j
        except websockets.ConnectionClosed:
            pass

    async def sample(self, rid):
        """The reply to one radius-2 sample, or None after 10 s."""
        await self.ws.send(json.dumps({"type": "sample", "id": rid, "x": 640, "y": 360,
                                       "radius": 2}))
        deadline = time.monotonic() + 10
        while rid not in self.replies and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return self.replies.get(rid)


async def attack(url, pid):
    reader = Reader(await connect(url))
    totals = {"sent": 0, "answered": 0, "busy": 0, "other": []}
    active, done = asyncio.Event(), asyncio.Event()
    flooders = [asyncio.ensure_future(Flooder(url, totals, active, done).run())
                for _ in range(FLOODERS)]
    normal = Ordinary(await connect(url))
    await normal.ws.send(json.dumps({"type": "subscribe", "preview": False}))
    await asyncio.sleep(1)  # everyone connected, the daemon warm
    # What this machine allows before any flood (floods can leave work
    # behind, so later quiet windows do not tell).
    before = Window(pid)
    await asyncio.sleep(3)
    before.end()
    quiet, flood, normal_replies = [], [], []
    for k in range(ROUNDS):
        w = Window(pid)
        await asyncio.sleep(WINDOW_S)
        quiet.append(w.end())
        w = Window(pid)
        active.set()
        await asyncio.sleep(WINDOW_S / 2)
        if k % 2 == 0:  # an ordinary sample in the middle of a flood is still answered
            normal_replies.append(await normal.sample(f"n{k}"))
        left = w.t0 + WINDOW_S * 1000 - time.time() * 1000
        if left > 0:
            await asyncio.sleep(left / 1000)
        active.clear()
        flood.append(w.end())
    done.set()
    await asyncio.gather(*flooders)
    await normal.ws.close()
    await normal.task
    await reader.ws.close()
    await reader.task
    return reader.frames, before, quiet, flood, totals, normal_replies


def main():
    with tempfile.TemporaryDirectory() as d:
        with Daemon(sys.argv[1], ["--backend", "cpu", "--size", "1280x720", "--fps", "30",
                                  "--stats-interval", "0"], d) as dm:
            with open(f"/proc/{dm.pid}/comm") as f:
                comm = f.read().strip()
            os.nice(10)  # from here on; the daemon keeps its normal priority
            frames, before, quiet, flood, totals, normal_ok = asyncio.run(attack(dm.url, dm.pid))
        text = dm.log_text()
    for a, b in zip(quiet, flood):
        qn, qt = window_rate(frames, a.t0, a.t1)
        fn, ft = window_rate(frames, b.t0, b.t1)
        print(f"  quiet {qn / qt if qt else 0:5.1f} fps   flood {fn / ft if ft else 0:5.1f} fps")
    first = rate(frames, [before])
    base = median_rate(frames, quiet)
    under = median_rate(frames, flood)
    want = 0.95 * min(NOMINAL_FPS, base)
    print(f"frames seen {len(frames)}; before the floods {first:.2f} fps; quiet {base:.2f} fps, "
          f"flood {under:.2f} fps (medians of the windows), need >= {want:.2f}; samples sent {totals['sent']}, "
          f"answered {totals['answered']}, busy {totals['busy']}", flush=True)
    sanitized = os.environ.get("TRK_SANITIZE") == "1"
    if first >= 0.8 * NOMINAL_FPS and not sanitized:
        check(under >= want, f"flood rate {under:.2f} fps within 5 % of "
                     f"{min(NOMINAL_FPS, base):.2f} fps")
    else:
        # Other work starves the daemon: frame rates then differ by more
        # than 5 % from one window to the next, flood or not. The CPU checks
        # below still tell whether the flood reaches the processing thread.
        why = ("an ASan/UBSan daemon spends several times the CPU per frame, so its rate "
               "follows the machine's load" if sanitized else
               f"this machine is too loaded (the daemon made {first:.2f} of "
               f"{NOMINAL_FPS:.0f} fps before any flood)")
        print(f"SKIP the 5 % frame-rate comparison: {why}", flush=True)
        check(under >= 0.5 * base, f"even so, the flood does not halve the rate ({under:.2f} "
              f"fps with, {base:.2f} fps without)")
    # Independent of how loaded the machine is: the processing thread does
    # the same work per frame with and without the flood, and the sampler
    # keeps to its tenth of a core.
    # A daemon that does not name its threads: all of them (they share the
    # process's name).
    proc = "trk-process" if quiet[0].cpu("trk-process") is not None else comm
    pq = cpu_per_frame(frames, quiet, proc)
    pf = cpu_per_frame(frames, flood, proc)
    share = cpu_share(flood, "trk-sampler")
    print(f"thread {proc}: {pq} ms CPU per frame quiet, {pf} ms with the flood; "
          f"sampler thread: {share} of a core during the floods", flush=True)
    check(pq is not None and pf is not None and pf <= 1.5 * pq,
          "the processing thread's CPU per frame does not grow with the flood")
    check(share is not None and share <= 0.15,
          "the sampler thread uses at most about a tenth of a core")
    check(totals["answered"] > 0, f"flood samples were answered ({totals['answered']})")
    check(totals["busy"] > 0, f"excess samples were refused as busy ({totals['busy']})")
    check(not totals["other"], f"no other replies to the flood: {totals['other'][:3]}")
    check(all(r and r.get("type") == "sample" and r.get("n") == 25 for r in normal_ok),
          "an ordinary sample during a flood was answered: "
          f"{[r and (r.get('type'), r.get('code'), r.get('n')) for r in normal_ok]}")
    if FAILS:
        print(text[-3000:])
    # tried: sample requests sent; survived: all of them when every check held.
    report("sample_flood", tried=totals["sent"], survived=0 if FAILS else totals["sent"])
    finish()


if __name__ == "__main__":
    main()
