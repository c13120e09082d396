"""A websocket client for consumer tests that talks ASGI directly to the application
(no server, no socket): connect, send and receive JSON, disconnect."""

from __future__ import annotations

import json

from asgiref.testing import ApplicationCommunicator


class ASGIWebsocket:
    def __init__(self, application, path: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        scope = {
            "type": "websocket",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": headers or [(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1")],
            "subprotocols": [],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        self.communicator = ApplicationCommunicator(application, scope)

    async def connect(self, timeout: float = 5) -> tuple[bool, int | None]:
        await self.communicator.send_input({"type": "websocket.connect"})
        reply = await self.communicator.receive_output(timeout)
        if reply["type"] == "websocket.close":
            return False, reply.get("code", 1000)
        assert reply["type"] == "websocket.accept", reply
        return True, None

    async def send_json(self, data) -> None:
        await self.communicator.send_input({"type": "websocket.receive", "text": json.dumps(data)})

    async def send_text(self, text: str) -> None:
        await self.communicator.send_input({"type": "websocket.receive", "text": text})

    async def receive_json(self, timeout: float = 5):
        message = await self.communicator.receive_output(timeout)
        assert message["type"] == "websocket.send", message
        return json.loads(message["text"])

    async def disconnect(self, code: int = 1000) -> None:
        await self.communicator.send_input({"type": "websocket.disconnect", "code": code})
        await self.communicator.wait(1)
