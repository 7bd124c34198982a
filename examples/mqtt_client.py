#!/usr/bin/python3
"""Prints the positions trackd publishes over MQTT (protocol/PROTOCOL.md,
section 9): one line per found object and frame, from every camera that
publishes to the broker, e.g. "front red x=641.52 y=360.08". World
coordinates (wx, wy) are printed instead of pixels where the objects file
has a calibration.

    python3 examples/mqtt_client.py [HOST [PORT [PREFIX [COUNT]]]]

defaults localhost 1883 trackd, forever. Needs Debian's python3-paho-mqtt.
"""
import json
import sys

import paho.mqtt.client as mqtt

host, port, prefix, count = (sys.argv[1:] + ["localhost", "1883", "trackd", "0"][len(sys.argv) - 1:])[:4]
left = int(count) or -1  # -1: forever


def on_message(client, userdata, msg):
    global left
    o = json.loads(msg.payload)
    if not o["found"] or left == 0:
        return
    x, y = (o["wx"], o["wy"]) if "wx" in o else (o["cx"], o["cy"])
    print(f'{o["camera"]} {o["name"]} x={x} y={y}', flush=True)
    left -= 1
    if left == 0:
        client.disconnect()


# The five lines of real use: connect, subscribe to every camera's objects, print.
client = mqtt.Client()
client.on_message = on_message
client.connect(host, int(port))
client.subscribe(f"{prefix}/+/objects/+")
client.loop_forever()
