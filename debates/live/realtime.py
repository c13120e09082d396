"""Everything that travels to a judge's browser over the websocket, and how it gets there.

- The message types, as TypedDicts with a `type` field (the browser's `static/js/live.js`
  handles exactly these).
- `abroadcast()` / `broadcast()`: the one way to send to a session's group.
- The stream buffer: the text of the turn being written, appended *before* each delta is
  broadcast, so a browser that (re)connects mid-turn reads the buffer after joining the
  group and misses nothing; deltas carry their character offset, so overlaps are dropped
  and gaps detected by the browser (which then asks for a resync).

The channel layer is at-most-once; durable state is in the database (finished turns) and
the buffer (the turn in progress).
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings


class TurnStart(TypedDict):
    type: Literal["turn.start"]
    seq: int
    speaker: str
    round: int
    attempt: int


class TurnDelta(TypedDict):
    type: Literal["turn.delta"]
    seq: int
    offset: int
    text: str


class TurnEnd(TypedDict):
    type: Literal["turn.end"]
    seq: int
    text: str


class TurnReset(TypedDict):
    type: Literal["turn.reset"]
    seq: int
    attempt: int
    message: str


class TurnFailed(TypedDict):
    type: Literal["turn.failed"]
    seq: int
    message: str
    can_retry: bool


class JudgeMessage(TypedDict):
    type: Literal["judge.message"]
    seq: int
    round: int
    target: str
    text: str


class State(TypedDict):
    type: Literal["state"]
    next: str  # "A", "B", "C" (an AI is due), "J" (the judge's turn), "" (finished)
    round: int
    done: bool
    sides: dict  # speaker -> "true" / "false" ("" while a consultant has not chosen)


class Snapshot(TypedDict):
    type: Literal["snapshot"]
    turns: list[dict]
    state: State


class Error(TypedDict):
    type: Literal["error"]
    message: str


Message = TurnStart | TurnDelta | TurnEnd | TurnReset | TurnFailed | JudgeMessage | State | Snapshot | Error
EVENT = "live.event"  # the consumer's handler: live_event()


def group_name(session_id: int) -> str:
    return f"live.{session_id}"


async def abroadcast(session_id: int, message: Message) -> None:
    await get_channel_layer().group_send(group_name(session_id), {"type": EVENT, "payload": message})


def broadcast(session_id: int, message: Message) -> None:
    async_to_sync(abroadcast)(session_id, message)


# --- The stream buffer -------------------------------------------------------------------


class _MemoryBuffer:
    """The embedded default: generation and websockets share one process and one loop."""

    def __init__(self) -> None:
        self.texts: dict[int, str] = {}

    async def append(self, turn_id: int, text: str) -> None:
        self.texts[turn_id] = self.texts.get(turn_id, "") + text

    async def get(self, turn_id: int) -> str:
        return self.texts.get(turn_id, "")

    async def clear(self, turn_id: int) -> None:
        self.texts.pop(turn_id, None)


class _RedisBuffer:
    """Production: workers append, web servers read; one client per event loop."""

    TTL_S = 3600

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _client(self):
        import redis.asyncio as redis

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            # redis-py 8's pool refuses, rather than waits, past max_connections (100).
            client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=None, max_connections=2000)
            self._clients[loop] = client
        return client

    def _key(self, turn_id: int) -> str:
        return f"rostrum:turn:{turn_id}:text"

    async def append(self, turn_id: int, text: str) -> None:
        length = await self._client().append(self._key(turn_id), text)
        if length == len(text.encode()):  # the first piece: the key is new, give it a lifetime
            await self._client().expire(self._key(turn_id), self.TTL_S)

    async def get(self, turn_id: int) -> str:
        value = await self._client().get(self._key(turn_id))
        return value.decode() if value else ""

    async def clear(self, turn_id: int) -> None:
        await self._client().delete(self._key(turn_id))


_buffer: _MemoryBuffer | _RedisBuffer | None = None


def stream_buffer() -> _MemoryBuffer | _RedisBuffer:
    global _buffer
    if _buffer is None:
        _buffer = _RedisBuffer() if settings.REDIS_URL else _MemoryBuffer()
    return _buffer
