#!/usr/bin/python3
"""Prints what trackd finds, from its WebSocket: per frame, the objects found
and their positions, then each instance of a tracked object (its id,
position and velocity) and each blob of an object that lists blobs
(frame_text.py beside it reads the message). Objects list blobs with
"blobs": K and are tracked with "track": true in the objects file
(config/OBJECTS.md).

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

from frame_text import print_frame


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
            print_frame(msg["seq"], msg["objects"], msg.get("markers", []))
            n += 1
            if n == frames:
                return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/ws",
                     int(sys.argv[2]) if len(sys.argv) > 2 else 0))
