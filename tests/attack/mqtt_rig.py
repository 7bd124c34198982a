"""The MQTT fault rig of the attack suite (test_mqtt_loss.py,
test_mqtt_memory.py): a real mosquitto on a free loopback port, a scripted
TCP proxy in front of it that plays a faulty broker, and a real subscriber
(python3-paho-mqtt) that notes when each message arrived.

    Broker(d, max_packet=None)   mosquitto, no persistence; .port
    Proxy(broker_port, mode)     127.0.0.1:.port -> the broker; mode:
        "pass"                   forwards both ways
        "slow"                   reads from trackd at most rate bytes/s
                                 (a broker that cannot keep up)
        "stall"                  like pass, but stops reading from trackd
                                 while .stalled is set (a broker that hangs)
        "drop"                   closes each connection hold_s after it was
                                 accepted (a broker that drops every one)
        "v311"                   refuses an MQTT 5 CONNECT as a 3.1.1-only
                                 broker does (CONNACK "unacceptable protocol
                                 version"), forwards the rest
    Sub(port, topic)             .frames(): [(seq, wall_ms, received wall s)]
    mqtt_totals(log_text)        trackd's last "N frames published, M dropped
                                 (reason n, ...)" line as a dict
"""
import getpass
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import time

import paho.mqtt.client as mqtt

import attack  # noqa: F401,E402 - puts tests/integration on the path
from daemon_proc import free_port  # noqa: E402

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def _accepts(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


class Broker:
    """A real mosquitto on 127.0.0.1; max_packet: its max_packet_size."""

    def __init__(self, d, max_packet=None):
        self.port = free_port()
        conf = os.path.join(d, f"mosquitto-{self.port}.conf")
        with open(conf, "w") as f:
            f.write(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                    f"persistence false\nuser {getpass.getuser()}\n")
            if max_packet:
                f.write(f"max_packet_size {max_packet}\n")
        self.log = open(os.path.join(d, f"mosquitto-{self.port}.log"), "ab")
        self.p = subprocess.Popen([MOSQUITTO, "-c", conf], stdout=self.log, stderr=self.log)
        end = time.monotonic() + 10
        while not _accepts(self.port):
            if time.monotonic() > end or self.p.poll() is not None:
                self.stop()
                raise RuntimeError("mosquitto did not start listening")
            time.sleep(0.05)

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


class Proxy:
    """A TCP proxy on a free loopback port in front of the broker, one
    thread per direction and connection. Counts the connections it took."""

    def __init__(self, broker_port, mode, rate=20000, hold_s=0.3):
        self.broker_port, self.mode, self.rate, self.hold_s = broker_port, mode, rate, hold_s
        self.stalled = threading.Event()
        self.accepted = 0
        self.done = threading.Event()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(16)
        self.ls.settimeout(0.2)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.done.is_set():
            try:
                c, _ = self.ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self.accepted += 1
            try:
                b = socket.create_connection(("127.0.0.1", self.broker_port), 5)
            except OSError:
                c.close()
                continue
            pair = [c, b]
            threading.Thread(target=self._pump, args=(c, b, True, pair), daemon=True).start()
            threading.Thread(target=self._pump, args=(b, c, False, pair), daemon=True).start()
            if self.mode == "drop":
                threading.Timer(self.hold_s, self._close, args=(pair,)).start()

    @staticmethod
    def _close(pair):
        for s in pair:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _pump(self, src, dst, upstream, pair):
        """Copies src to dst; upstream (trackd -> broker) is where the
        broker's faults are played."""
        slow = upstream and self.mode == "slow"
        first = upstream and self.mode == "v311"
        try:
            src.settimeout(0.2)  # the other direction may have closed it already
            while not self.done.is_set():
                if upstream and self.stalled.is_set():
                    time.sleep(0.05)
                    continue
                try:
                    data = src.recv(max(1, self.rate // 20) if slow else 65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                if first and data[0] == 0x10 and self._level(data) == 5:
                    src.sendall(b"\x20\x02\x00\x01")
                    break
                first = False
                dst.sendall(data)
                if slow:
                    time.sleep(len(data) / self.rate)
        except OSError:
            pass
        self._close(pair)

    @staticmethod
    def _level(connect):
        """The protocol level of a CONNECT packet's first bytes (None: cut)."""
        i = 1
        while i < len(connect) and connect[i] & 0x80:  # remaining length
            i += 1
        i += 1
        if i + 2 > len(connect):
            return None
        i += 2 + int.from_bytes(connect[i:i + 2], "big")  # protocol name
        return connect[i] if i < len(connect) else None

    def close(self):
        self.done.set()
        self.ls.close()


class Sub:
    """A real subscriber straight to the broker (never slowed by the proxy):
    keeps (topic, payload, wall-clock arrival s) of each message."""

    def __init__(self, port, topic):
        self.msgs, self.lock = [], threading.Lock()
        ready = threading.Event()
        self.c = mqtt.Client()
        self.c.on_connect = lambda c, u, f, rc: (c.subscribe(topic, 0), ready.set())
        self.c.on_subscribe = lambda *a: ready.set()
        self.c.on_message = self._on_message
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        if not ready.wait(10):
            raise RuntimeError("the subscriber could not connect")
        time.sleep(0.3)  # the SUBACK

    def _on_message(self, c, u, m):
        with self.lock:
            self.msgs.append((m.topic, bytes(m.payload), time.time(), m.retain))

    def take(self, suffix=""):
        with self.lock:
            return [x for x in self.msgs if x[0].endswith(suffix)]

    def frames(self):
        """[(seq, wall_ms, arrival s)] of the frame messages, in arrival order."""
        out = []
        for t, p, at, _ in self.take("/frame"):
            f = json.loads(p)
            out.append((f["seq"], f["wall_ms"], at))
        return out

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()


def retained(port, topic, timeout=5):
    """The payload (parsed) of the retained message on topic, or None."""
    s = Sub(port, topic)
    end = time.monotonic() + timeout
    while time.monotonic() < end and not s.take():
        time.sleep(0.05)
    got = [json.loads(p) for t, p, at, r in s.take() if r]
    s.close()
    return got[-1] if got else None


def mqtt_totals(log_text):
    """{"published": N, "dropped": M, "connections": K, reason: n, ...} from
    trackd's last MQTT totals line; None when there is none."""
    lines = re.findall(r"mqtt: (\d+) frames published, (\d+) dropped(?: \(([^)]*)\))?, "
                       r"(\d+) connections", log_text)
    if not lines:
        return None
    pub, dropped, why, conns = lines[-1]
    out = {"published": int(pub), "dropped": int(dropped), "connections": int(conns)}
    for part in filter(None, (why or "").split(", ")):
        k, v = part.split(" ")
        out[k] = int(v)
    return out


def ndjson_count(path):
    """Frames trackd processed: the whole lines of its --output file."""
    with open(path) as f:
        return sum(1 for line in f if line.endswith("\n"))
