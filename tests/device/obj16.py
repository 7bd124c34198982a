#!/usr/bin/python3
"""Writes the many-cameras benchmark's objects file (issue 31): 16 rgb
objects, each with blob lists of 16 and tracking on, the maximum of objects
with blobs a set may have. The first five are examples/ssl-field.json's
objects; the other eleven are copies of them with their boxes widened by 6,
12 and 18 per channel, so every object finds the field clip's robots,
dots and ball (ssl_scene.py) and the blob lists are full.

    tests/device/obj16.py OUT.json
"""
import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
field = json.load(open(os.path.join(here, "..", "..", "examples", "ssl-field.json")))
base = field["objects"]
objects = []
for i in range(16):
    o = dict(base[i % len(base)])
    w = (i // len(base)) * 6
    o["name"] = f"{o['name']}{i}"
    o["lo"] = [max(0, x - w) for x in o["lo"]]
    o["hi"] = [min(255, x + w) for x in o["hi"]]
    o["blobs"] = 16
    o["track"] = True
    objects.append(o)
with open(sys.argv[1], "w") as f:
    json.dump({"objects": objects}, f, indent=1)
