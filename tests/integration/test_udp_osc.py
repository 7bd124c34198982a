#!/usr/bin/python3
"""Integration: --udp and --osc from the real daemon to real listeners.

trackd runs the demo scene with --output (the frame messages as NDJSON, the
truth to compare with) and
  1. --udp to a python3 socket on 127.0.0.1: one datagram per frame (part 1
     of 1), each the NDJSON line's frame plus "camera", "part" and "parts";
  2. the same with objects whose frame message is over 1400 bytes: every
     frame arrives as parts of at most 1400 bytes (or one object alone),
     each valid JSON with seq and part i of n, whose objects joined are the
     NDJSON line's;
  3. --udp to an IPv4 multicast group joined on the loopback interface
     (--udp-iface lo), and to [::1] when the host has IPv6;
  4. --osc to liblo's oscdump (Debian liblo-tools): per frame and object,
     /trackd/<camera>/<name> cx cy mass orientation major minor for found
     objects (equal to the frame's), /blob i cx cy mass orientation major
     minor per listed blob, /instance id cx cy mass lost orientation major
     minor vtheta per instance, /lost for the object that is never found;
     the same to [::1] (when the host has IPv6),
     received by a python socket that decodes OSC (Debian's liblo listens
     on IPv4 only);
  5. an address that does not resolve, an unknown --udp-iface: exit 69 with
     the reason; a malformed --udp: exit 64.
Every frame the daemon says it sent (its closing log line) must arrive:
loopback does not lose datagrams that a listener reads at once.
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

FRAMES = 45
LIMIT = 1400
# The demo scene's balls (daemon/source/demo.c), boxes around their colours.
DEMO = [("red", [200, 10, 10], [255, 75, 75]), ("green", [10, 170, 30], [75, 230, 95]),
        ("blue", [10, 50, 200], [75, 115, 255]), ("yellow", [205, 185, 10], [255, 255, 75])]
failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def objects_file(d, name, extra_named=0, compact=False):
    objs = [{"name": n, "space": "rgb", "lo": lo, "hi": hi} for n, lo, hi in DEMO]
    objs[0]["blobs"] = 2
    # A tracked object with two instances (its box takes the green and the
    # blue ball): its instances go out in datagrams and as OSC /instance
    # messages, its fields are the tracker's, and in roi mode the backend's
    # results are per region (two for it), not per object. compact: not
    # tracked, no blobs: a frame message well within one datagram (the
    # tracked set's, with every shape, is about 1800 bytes).
    objs[1].update({"lo": [10, 50, 30], "hi": [75, 230, 255]})
    if not compact:
        objs[1].update({"blobs": 2, "track": True})
    # Pure saturated blue: nothing in the demo scene has it.
    objs.append({"name": "nothing", "space": "rgb", "lo": [0, 0, 250], "hi": [5, 5, 255]})
    for i in range(extra_named):  # long names make the frame message long
        n, lo, hi = DEMO[i % len(DEMO)]
        objs.append({"name": f"{n} copy {i} " + "x" * 40, "space": "rgb", "lo": lo, "hi": hi})
    path = os.path.join(d, name)
    with open(path, "w") as f:
        json.dump({"objects": objs}, f)
    return path


class Listener:
    """Reads every datagram of a bound socket on its own thread."""

    def __init__(self, sock):
        self.sock, self.datagrams = sock, []
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        sock.settimeout(0.2)
        self.done = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.done:
            try:
                self.datagrams.append(self.sock.recv(65536))
            except socket.timeout:
                pass

    def stop(self):
        time.sleep(0.3)  # the last datagrams are in flight
        self.done = True
        self.thread.join()
        self.sock.close()
        return self.datagrams


def run_trackd(trackd, d, args, tag):
    out = os.path.join(d, f"{tag}.ndjson")
    r = subprocess.run([trackd, "--no-server", "--size", "320x240", "--fps", "60", "--frames",
                        str(FRAMES), "--backend", "cpu", "--output", out, *args],
                       capture_output=True, text=True, timeout=60, cwd=d)
    if r.returncode != 0:
        sys.exit(f"FAIL: trackd {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    frames = {}
    with open(out) as f:
        for line in f:
            m = json.loads(line)
            frames[m["seq"]] = m
    return frames, r.stderr


def sent_count(log, what):
    m = re.search(re.escape(what) + r".*: (\d+) of (\d+) frames sent, (\d+) dropped", log)
    if not m:
        sys.exit(f"FAIL: no closing count for {what} in the log:\n{log}")
    return int(m.group(1))


def check_udp(datagrams, frames, log, what, split):
    """Datagrams against the NDJSON frames."""
    parts = {}  # seq -> {part: message}
    bad = []
    for dg in datagrams:
        try:
            m = json.loads(dg)
        except ValueError:
            bad.append(f"not JSON: {dg[:60]!r}")
            continue
        if not (m.get("type") == "frame" and isinstance(m.get("camera"), str) and m["camera"]
                and 1 <= m.get("part", 0) <= m.get("parts", 0)):
            bad.append(f"header: {dg[:120]!r}")
            continue
        if len(dg) > LIMIT and len(m["objects"]) != 1:
            bad.append(f"{len(dg)} bytes with {len(m['objects'])} objects")
        parts.setdefault(m["seq"], {})[m["part"]] = m
    expect(not bad, f"{what}: every datagram is a frame part, within {LIMIT} bytes "
           f"(first problems: {bad[:3]})")
    sent = sent_count(log, what.split()[0] + " ")
    expect(len(parts) == sent and sent > 0,
           f"{what}: all {sent} frames the daemon sent arrived ({len(parts)})")
    wrong = []
    n_parts = set()
    for seq, got in sorted(parts.items()):
        n = next(iter(got.values()))["parts"]
        n_parts.add(n)
        if sorted(got) != list(range(1, n + 1)) or any(p["parts"] != n for p in got.values()):
            wrong.append(f"seq {seq}: parts {sorted(got)} of {n}")
            continue
        truth = frames.get(seq)
        objs = [o for i in range(1, n + 1) for o in got[i]["objects"]]
        if truth is None or objs != truth["objects"]:
            wrong.append(f"seq {seq}: objects differ from the NDJSON line")
            continue
        head = {k: v for k, v in got[1].items() if k not in ("part", "parts", "objects")}
        if head != {k: v for k, v in truth.items() if k != "objects"}:
            wrong.append(f"seq {seq}: header differs: {head}")
    expect(not wrong, f"{what}: each frame's parts complete and equal to its NDJSON line "
           f"(first problems: {wrong[:3]})")
    if split:
        expect(min(n_parts, default=0) > 1, f"{what}: frames were split ({sorted(n_parts)} parts)")
    else:
        expect(n_parts == {1}, f"{what}: one datagram per frame ({sorted(n_parts)} parts)")


def udp_socket(family, addr):
    s = socket.socket(family, socket.SOCK_DGRAM)
    s.bind((addr, 0))
    return s, s.getsockname()[1]


def test_unicast(trackd, d):
    small, big = objects_file(d, "small.json", compact=True), objects_file(d, "big.json",
                                                                          extra_named=16)
    for objs, split, what in ((small, False, "udp unicast"), (big, True, "udp unicast split")):
        s, port = udp_socket(socket.AF_INET, "127.0.0.1")
        lis = Listener(s)
        frames, log = run_trackd(trackd, d, ["--objects", objs, "--udp", f"127.0.0.1:{port}"],
                                 "uni")
        check_udp(lis.stop(), frames, log, what, split)
    return small, objects_file(d, "tracked.json")


def test_multicast(trackd, d, objs):
    group = "239.255.77.%d" % (os.getpid() % 200 + 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((group, 0))
    port = s.getsockname()[1]
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,
                     socket.inet_aton(group) + socket.inet_aton("127.0.0.1"))
    except OSError as e:
        print(f"SKIP udp multicast: cannot join {group} on the loopback interface here: {e}")
        s.close()
        return
    lis = Listener(s)
    frames, log = run_trackd(trackd, d, ["--objects", objs, "--udp", f"{group}:{port}",
                                         "--udp-iface", "lo", "--udp-ttl", "1"], "mc")
    check_udp(lis.stop(), frames, log, "udp multicast", False)


def test_ipv6(trackd, d, small, tracked):
    """--udp and --osc to [::1]; the OSC messages to a python socket that
    decodes them (Debian's liblo, oscdump included, listens on IPv4 only)."""
    for out in ("udp", "osc"):
        try:
            s, port = udp_socket(socket.AF_INET6, "::1")
        except OSError as e:
            print(f"SKIP udp and osc IPv6: no ::1 on this host: {e}")
            return
        lis = Listener(s)
        objs = small if out == "udp" else tracked
        frames, log = run_trackd(trackd, d, ["--objects", objs, f"--{out}", f"[::1]:{port}"],
                                 out + "6")
        if out == "udp":
            check_udp(lis.stop(), frames, log, "udp [::1]", False)
        else:
            check_osc([osc_decode(dg) for dg in lis.stop()], frames, log, "osc [::1]")


def port_taken(port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return False
        except OSError:
            return True


def test_osc(trackd, d, objs):
    oscdump = shutil.which("oscdump")
    if not oscdump:
        sys.exit("FAIL: oscdump not found (Debian package liblo-tools; ./setup.sh test installs it)")
    s, port = udp_socket(socket.AF_INET, "127.0.0.1")
    s.close()
    dump = subprocess.Popen([oscdump, "-L", str(port)], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while not port_taken(port) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        frames, log = run_trackd(trackd, d, ["--objects", objs, "--osc", f"127.0.0.1:{port}"],
                                 "osc")
        time.sleep(0.5)
    finally:
        dump.terminate()
    lines = dump.communicate(timeout=10)[0].splitlines()
    # "<timetag> <address> <types> <args...>"
    check_osc([line.split()[1:] for line in lines if line.strip()], frames, log, "osc")


def osc_decode(d):
    """One OSC 1.0 message (one datagram) as oscdump prints it, less the
    timetag: [address, types, args...], or [address] without arguments."""

    def string(at):
        end = d.index(b"\0", at)
        return d[at:end].decode(), (end + 4) & ~3

    addr, at = string(0)
    types, at = string(at)
    out = [addr, types[1:]] if len(types) > 1 else [addr]
    for t in types[1:]:
        out.append(str(struct.unpack_from(">i" if t == "i" else ">f", d, at)[0]))
        at += 4
    return out


def check_osc(msgs, frames, log, what):
    """OSC messages [address, types, args...] against the NDJSON frames; the
    messages of one frame start with the first object's."""
    names = [o["name"] for o in next(iter(frames.values()))["objects"]]
    cams = {re.match(r"/trackd/([^/]+)/", m[0]).group(1) for m in msgs if m[0].startswith("/trackd/")}
    expect(len(cams) == 1, f"{what}: every address is /trackd/<camera>/... with one camera ({cams})")
    cam = cams.pop() if len(cams) == 1 else "?"
    groups, cur = [], None
    for m in msgs:
        if m[0] in (f"/trackd/{cam}/{names[0]}", f"/trackd/{cam}/{names[0]}/lost"):
            cur = []
            groups.append(cur)
        if cur is not None:
            cur.append(m)
    sent = sent_count(log, what.split()[0] + " ")
    expect(len(groups) == sent and sent > 0,
           f"{what}: all {sent} frames sent arrived ({len(groups)})")

    def expected(fr):
        out = []
        for o in fr["objects"]:
            base = f"/trackd/{cam}/{o['name']}"
            if not o["found"]:
                out.append(([base + "/lost"], None))
            else:
                out.append(([base, "ffifff"], (o["cx"], o["cy"], o["mass"]) + shape(o)))
                for k, b in enumerate(o.get("blobs", [])):
                    out.append(([base + "/blob", "iffifff", str(k)],
                                (b["cx"], b["cy"], b["mass"]) + shape(b)))
            for x in o.get("instances", []):
                out.append(([base + "/instance", "iffiiffff", str(x["id"])],
                            (x["cx"], x["cy"], x["mass"], x["lost"]) + shape(x) +
                            (x["vtheta"] if x["vtheta"] is not None else 0.0,)))
        return out

    def shape(o):
        return (o["orientation"], o["major"], o["minor"])

    def near(g, v, t):
        # floats: float32 of the exact value vs the message's 2 decimals
        # (an orientation near 180 is written 0.00: compare as an axis)
        if t == "i":
            return int(g) == v
        d = abs(float(g) - v)
        return d <= 0.006 or abs(d - 180) <= 0.006

    def same(got, want):
        if len(got) != len(want):
            return False
        for g, (head, vals) in zip(got, want):
            if g[:len(head)] != head:
                return False
            if vals is not None:
                rest = g[len(head):]
                types = head[1][-len(vals):]
                if len(rest) != len(vals) or \
                        not all(near(r, v, t) for r, v, t in zip(rest, vals, types)):
                    return False
        return True

    # Each OSC frame is some NDJSON frame, in order (a frame the queue
    # dropped is skipped; the counts above say whether any was).
    truth = [frames[k] for k in sorted(frames)]
    i, unmatched = 0, 0
    for g in groups:
        while i < len(truth) and not same(g, expected(truth[i])):
            i += 1
        if i == len(truth):
            unmatched += 1
            i = 0
        else:
            i += 1
    expect(unmatched == 0 and groups, f"{what}: every frame's messages are its objects' positions, "
           f"blobs and /lost ({unmatched} of {len(groups)} frames unmatched)")
    expect(any(m[0] == f"/trackd/{cam}/nothing/lost" for m in msgs),
           f"{what}: the object never found sends /lost")
    expect(any(m[0] == f"/trackd/{cam}/red/blob" for m in msgs), f"{what}: blobs are sent")
    expect(any(m[0] == f"/trackd/{cam}/green/instance" for m in msgs),
           f"{what}: the tracked object's instances are sent")


def test_errors(trackd, d):
    for args, code, text in (
            (["--udp", "no-such-host.invalid:5005"], 69, "cannot resolve"),
            (["--osc", "no-such-host.invalid:9000"], 69, "cannot resolve"),
            (["--udp", "239.255.0.1:5005", "--udp-iface", "nosuchif0"], 69,
             "no such network interface"),
            (["--udp", "127.0.0.1"], 64, "expected --udp HOST:PORT"),
            (["--udp", "127.0.0.1:0"], 64, "expected --udp HOST:PORT")):
        r = subprocess.run([trackd, "--no-server", "--frames", "1", *args], capture_output=True,
                           text=True, timeout=30, cwd=d)
        expect(r.returncode == code and text in r.stderr,
               f"{' '.join(args)}: exit {code} saying '{text}' (got {r.returncode}: "
               f"{r.stderr.strip().splitlines()[-1:] if r.stderr else ''})")


def main():
    trackd = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as d:
        small, tracked = test_unicast(trackd, d)
        test_multicast(trackd, d, small)
        test_ipv6(trackd, d, small, tracked)
        test_osc(trackd, d, tracked)
        test_errors(trackd, d)
    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("all UDP/OSC checks passed")


if __name__ == "__main__":
    main()
