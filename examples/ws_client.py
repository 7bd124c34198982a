#!/usr/bin/python3
"""Prints the positions of the objects trackd finds, from its WebSocket.

    python3 examples/ws_client.py [URL [FRAMES]]

URL defaults to ws://127.0.0.1:8080/ws; FRAMES (default 0 = forever) stops
after that many frames. Needs the websockets package (Debian:
python3-websockets). The messages are described in protocol/PROTOCOL.md.
"""
import asyncio
import json
import sys

import websockets


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
            found = [f"{o['name']} ({o['cx']:.1f}, {o['cy']:.1f})"
                     for o in msg["objects"] if o["found"]]
            print(f"frame {msg['seq']}: {', '.join(found)}", flush=True)
            n += 1
            if n == frames:
                return


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/ws",
                     int(sys.argv[2]) if len(sys.argv) > 2 else 0))
