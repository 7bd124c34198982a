"""A WebSocket client of trackd for the integration tests: a reader task
hands every text message to on_message (subclasses keep what they need);
replies to requests (messages with an "id") are paired by req()."""
import asyncio
import json
import time

import websockets


class WsClient:
    def __init__(self, ws):
        self.ws, self.replies, self.next_id = ws, {}, 1
        self.task = asyncio.ensure_future(self._read())

    async def _read(self):
        try:
            async for m in self.ws:
                if isinstance(m, str):
                    self.on_message(json.loads(m))
        except websockets.ConnectionClosed:
            pass

    def on_message(self, j):
        """Keeps replies; subclasses look at the rest first."""
        if "id" in j:
            self.replies[j["id"]] = j

    async def req(self, msg, timeout=5):
        """Sends msg with a fresh id; its reply, or None after timeout s."""
        rid = self.next_id
        self.next_id += 1
        await self.ws.send(json.dumps(dict(msg, id=rid)))
        t0 = time.monotonic()
        while rid not in self.replies and time.monotonic() - t0 < timeout:
            await asyncio.sleep(0.01)
        return self.replies.pop(rid, None)
