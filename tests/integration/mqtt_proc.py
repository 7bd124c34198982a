"""A real mosquitto broker and a real paho subscriber for the MQTT
integration tests (test_mqtt.py, test_fuse.py)."""
import getpass
import os
import shutil
import socket
import subprocess
import threading
import time

import paho.mqtt.client as mqtt

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"


def wait_for(pred, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


class Broker:
    """A real mosquitto on 127.0.0.1:port, no persistence (a restart forgets
    every retained message, as a broker that was replaced would)."""

    def __init__(self, tmp, port, extra=""):
        self.port, self.proc = port, None
        self.conf = os.path.join(tmp, f"mosquitto-{port}.conf")
        with open(self.conf, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                    f"user {getpass.getuser()}\n{extra}")
        self.log = open(os.path.join(tmp, f"mosquitto-{port}.log"), "ab")

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, "-c", self.conf], stdout=self.log,
                                     stderr=self.log)
        ok = wait_for(self._accepts, 10)
        if not ok:
            raise RuntimeError("mosquitto did not start listening")

    def _accepts(self):
        try:
            socket.create_connection(("127.0.0.1", self.port), 0.2).close()
            return True
        except OSError:
            return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.proc = None


class Sub:
    """A paho subscriber that keeps (topic, retain, payload bytes) of each
    message it gets."""

    def __init__(self, port, topics):
        self.msgs, self.lock = [], threading.Lock()
        self.connected = threading.Event()
        self.c = mqtt.Client()
        self.c.on_connect = lambda c, u, f, rc: (
            [c.subscribe(t, 0) for t in topics], self.connected.set())
        self.c.on_message = self._on_message
        self.c.connect("127.0.0.1", port)
        self.c.loop_start()
        if not self.connected.wait(10):
            raise RuntimeError("subscriber could not connect")
        time.sleep(0.3)  # the SUBACK

    def _on_message(self, c, u, m):
        with self.lock:
            self.msgs.append((m.topic, m.retain, bytes(m.payload)))

    def take(self, prefix=""):
        with self.lock:
            return [x for x in self.msgs if x[0].startswith(prefix)]

    def close(self):
        self.c.loop_stop()
        self.c.disconnect()
