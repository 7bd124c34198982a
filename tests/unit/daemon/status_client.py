#!/usr/bin/python3
"""Prints the source state of every status message trackd's WebSocket
server sends for SECONDS, one per line, into OUT.
usage: status_client.py PORT SECONDS OUT"""
import asyncio
import json
import sys

import websockets


async def main():
    port, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    with open(out, "w") as f:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            f.write("connected\n")
            f.flush()
            while loop.time() < end:
                try:
                    m = await asyncio.wait_for(ws.recv(), end - loop.time())
                except asyncio.TimeoutError:
                    break
                if isinstance(m, str):
                    j = json.loads(m)
                    if j.get("type") == "status":
                        f.write(f"{j['source']} {j.get('message')}\n")
                        f.flush()


asyncio.run(main())
