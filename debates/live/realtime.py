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

from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from debates.streaming import stream_buffer as stream_buffer  # re-exported: design B's buffer


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


def event(*messages: Message) -> dict:
    """The channel layer message that carries `messages` to the session's consumers, which
    send them to the browser one by one, in order."""
    return {"type": EVENT, "payloads": list(messages)}


def payloads(event: dict) -> list[Message]:
    """The browser's messages an `event()` carries, in order."""
    return event["payloads"]


async def abroadcast(session_id: int, *messages: Message) -> None:
    """To every consumer of the session: messages sent together go in one channel layer
    message (one publish and one delivery per server process, instead of one per message)."""
    await get_channel_layer().group_send(group_name(session_id), event(*messages))


def broadcast(session_id: int, *messages: Message) -> None:
    async_to_sync(abroadcast)(session_id, *messages)
