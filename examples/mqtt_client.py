#!/usr/bin/python3
"""Prints what trackd publishes over MQTT (protocol/PROTOCOL.md, section 9),
from every camera that publishes to the broker: one line per found object
and frame, then a line for each instance of a tracked object (id, position,
velocity in pixels per frame) and for each blob of an object that lists
blobs (a tracked object's blobs are its instances: printed once):

    front red x=641.52 y=360.08
    front ball x=101.02 y=60.48
    front ball #7 x=101.02 y=60.48 vx=5.012 vy=0.198
    front ball #9 x=240.5 y=66.0 vx=-4.98 vy=-0.1 lost=2
    front green blob x=440.03 y=200.49 mass=1200

World coordinates (wx, wy) are printed instead of pixels where the objects
file has a calibration.

    python3 examples/mqtt_client.py [HOST [PORT [PREFIX [COUNT]]]]

defaults localhost 1883 trackd; COUNT found objects (default 0 = forever).
Needs paho-mqtt (Debian: python3-paho-mqtt, 1.6; pip: paho-mqtt, 1.x or 2.x).
"""
import json
import sys

import paho.mqtt.client as mqtt

host, port, prefix, count = (sys.argv[1:] + ["localhost", "1883", "trackd", "0"][len(sys.argv) - 1:])[:4]
left = int(count) or -1  # -1: forever


def where(p):
    """x=.. y=.. in world units where there are some, else pixels."""
    return f"x={p['wx']} y={p['wy']}" if p.get("wx") is not None else f"x={p['cx']} y={p['cy']}"


def on_message(client, userdata, msg):
    global left
    o = json.loads(msg.payload)
    if not o["found"] or left == 0:
        return
    print(f'{o["camera"]} {o["name"]} {where(o)}')
    for i in o.get("instances", []):
        lost = f" lost={i['lost']}" if i["lost"] else ""
        print(f'{o["camera"]} {o["name"]} #{i["id"]} {where(i)} vx={i["vx"]} vy={i["vy"]}{lost}')
    if "instances" not in o:
        for b in o.get("blobs", []):
            print(f'{o["camera"]} {o["name"]} blob {where(b)} mass={b["mass"]}')
    sys.stdout.flush()
    left -= 1
    if left == 0:
        client.disconnect()


# Connect, subscribe to every camera's objects, print. paho-mqtt 2 asks which
# callback signatures a program uses: these are 1.x's, the only ones 1.x has.
client = (mqtt.Client(mqtt.CallbackAPIVersion.VERSION1) if hasattr(mqtt, "CallbackAPIVersion")
          else mqtt.Client())
client.on_message = on_message
client.connect(host, int(port))
client.subscribe(f"{prefix}/+/objects/+")
client.loop_forever()
