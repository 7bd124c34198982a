#!/usr/bin/python3
"""Maps trackd's clocks onto this machine's: NTP's four timestamps over
trackd's WebSocket (or its MQTT broker), the sample of least round trip
kept, as protocol/PROTOCOL.md ("sync") describes.

    python3 examples/clock_sync.py [ws://HOST:PORT/ws | mqtt://HOST[:PORT]/PREFIX/CAMERA] [N]

Sends N (default 16) sync requests and prints the offset of trackd's wall
clock and of its monotonic clock (the clock of each frame's t_capture) from
this machine's wall clock, each with its error bound (half the round trip
of the sample used), and what a frame's t_capture is here:

    local_wall_s = t_capture - mono_offset_s

Needs the websockets package for ws:// (Debian: python3-websockets) and
paho-mqtt for mqtt:// (Debian: python3-paho-mqtt).
"""
import asyncio
import json
import os
import sys
import threading
import time


def sample(t0, reply, t3):
    """One exchange: t0 sent, t3 received on the local clock (s); the reply's
    server times. (wall offset s, monotonic offset s, delay s): server clock
    minus local clock, and the round trip less the server's own time."""
    rx_w, tx_w = reply["rx_wall_ms"] / 1e3, reply["tx_wall_ms"] / 1e3
    rx_m, tx_m = reply["rx_mono"], reply["tx_mono"]
    delay = (t3 - t0) - (tx_m - rx_m)
    wall = ((rx_w - t0) + (tx_w - t3)) / 2
    mono = ((rx_m - t0) + (tx_m - t3)) / 2
    return wall, mono, delay


def best(samples):
    """The sample of least delay: its offsets are off by at most delay / 2."""
    return min(samples, key=lambda s: s[2])


async def sync_ws(url, n, clock=time.time):
    """n exchanges over trackd's WebSocket; clock() is the local clock (s)."""
    import websockets
    out = []
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "subscribe", "preview": False}))
        for i in range(n):
            t0 = clock()
            await ws.send(json.dumps({"type": "sync", "id": f"sync{i}", "t0": t0}))
            while True:  # frames and stats come in between
                m = await asyncio.wait_for(ws.recv(), 5)
                if isinstance(m, str):
                    j = json.loads(m)
                    if j.get("type") == "sync" and j.get("id") == f"sync{i}":
                        break
            out.append(sample(j["t0"], j, clock()))
    return out


def sync_mqtt(host, port, prefix, camera, n, clock=time.time, timeout=5.0):
    """n exchanges over the broker: requests to PREFIX/CAMERA/sync/request/ID,
    replies on PREFIX/CAMERA/sync/reply/ID."""
    import paho.mqtt.client as mqtt
    cid = f"sync-{os.getpid()}-{int(time.time() * 1e3) & 0xffffff:x}"
    base = f"{prefix}/{camera}/sync"
    got, ready = {}, threading.Event()
    cond = threading.Condition()

    def on_connect(c, ud, flags, rc, props=None):
        c.subscribe(f"{base}/reply/{cid}", 0)

    def on_subscribe(*args):
        ready.set()

    def on_message(c, ud, msg):
        t3 = clock()
        j = json.loads(msg.payload)
        with cond:
            got[j.get("id")] = (j, t3)
            cond.notify_all()

    try:
        c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=cid)
    except AttributeError:  # paho-mqtt 1.x
        c = mqtt.Client(client_id=cid)
    c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
    c.connect(host, port)
    c.loop_start()
    out = []
    try:
        if not ready.wait(timeout):
            raise TimeoutError("no SUBACK from the broker")
        for i in range(n):
            t0 = clock()
            c.publish(f"{base}/request/{cid}",
                      json.dumps({"type": "sync", "id": i, "t0": t0}), 0)
            with cond:
                if not cond.wait_for(lambda: i in got, timeout):
                    continue  # QoS 0: a lost request is a lost sample
                j, t3 = got.pop(i)
            out.append(sample(j["t0"], j, t3))
            time.sleep(0.02)
    finally:
        c.loop_stop()
        c.disconnect()
    return out


def main():
    url = sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/ws"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    if url.startswith("mqtt://"):
        hostport, _, rest = url[7:].partition("/")
        host, _, port = hostport.partition(":")
        prefix, _, camera = rest.rpartition("/")
        samples = sync_mqtt(host, int(port or 1883), prefix or "trackd", camera, n)
    else:
        samples = asyncio.run(sync_ws(url, n))
    if not samples:
        sys.exit("no sync replies")
    wall, mono, delay = best(samples)
    print(f"{len(samples)} samples; least round trip {delay * 1e3:.3f} ms")
    print(f"wall clock offset {wall * 1e3:+.3f} ms +- {delay / 2 * 1e3:.3f} ms")
    print(f"monotonic offset {mono:+.6f} s +- {delay / 2 * 1e3:.3f} ms "
          "(local wall s = t_capture - this)")


if __name__ == "__main__":
    main()
