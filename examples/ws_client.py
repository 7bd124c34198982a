#!/usr/bin/python3
"""Prints what trackd finds, from its WebSocket: per frame, the objects found
and their positions, then each instance of a tracked object (its id,
position and velocity) and each blob of an object that lists blobs:

    frame 17: red (641.5, 360.1), ball (101.0, 60.5)
      red blob at (640.2, 358.9), 2210 px
      ball #7 at (101.0, 60.5) moving (5.01, 0.20) px/frame
      ball #9 at (240.5, 66.0) moving (-4.98, -0.10) px/frame, lost for 2 frames

A tracked object's blobs are its instances seen in the frame: they are
printed once, as instances. Objects list blobs with "blobs": K and are
tracked with "track": true in the objects file (config/OBJECTS.md).

    python3 examples/ws_client.py [URL [FRAMES]]

URL defaults to ws://127.0.0.1:8080/ws; FRAMES (default 0 = forever) stops
after that many frames. Needs the websockets package (Debian:
python3-websockets; pip: websockets). The messages are described in
protocol/PROTOCOL.md.
"""
import asyncio
import json
import sys

import websockets


def print_frame(msg):
    found = [f"{o['name']} ({o['cx']:.1f}, {o['cy']:.1f})" for o in msg["objects"] if o["found"]]
    print(f"frame {msg['seq']}: {', '.join(found)}")
    for o in msg["objects"]:
        for i in o.get("instances", []):
            lost = f", lost for {i['lost']} frames" if i["lost"] else ""
            print(f"  {o['name']} #{i['id']} at ({i['cx']:.1f}, {i['cy']:.1f}) moving "
                  f"({i['vx']:.2f}, {i['vy']:.2f}) px/frame{lost}")
        if "instances" not in o:
            for b in o.get("blobs", []):
                print(f"  {o['name']} blob at ({b['cx']:.1f}, {b['cy']:.1f}), {b['mass']} px")
    sys.stdout.flush()


async def main(url, frames):
    async with websockets.connect(url, max_size=None) as ws:
        # Positions only: no preview JPEGs for this connection.
        await ws.send(json.dumps({"type": "subscribe", "preview": False}))
        n = 0
        async for message in ws:
            if isinstance(message, bytes):  # a preview sent before the subscribe
                continue
            msg = json.loads(message)
            if msg["type"] != "frame":  # hello, stats, status, ...
                continue
            print_frame(msg)
            n += 1
            if n == frames:
                return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/ws",
                     int(sys.argv[2]) if len(sys.argv) > 2 else 0))
