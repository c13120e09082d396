"""What travels to a participant's browser during a persuasion dialogue, and how it gets
there (the browser's `static/js/persuasion.js` handles exactly these):

- `turn.start`, `turn.delta` (offset-carrying frames of an agent's text, as in design B),
  `turn.reset` (an attempt failed and is being written again);
- `changed`: the dialogue's state changed (a turn was played, someone joined, it ended);
  every consumer answers it by sending its own participant a fresh `snapshot`, since what
  each side sees (whose turn, the admissible replies) differs.

The channel layer is at-most-once; the durable state is the database and the stream
buffer ("pturn" in debates.streaming).
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from debates.streaming import stream_buffer

EVENT = "persuasion.event"  # the consumer's handler: persuasion_event()
CHANGED = {"type": "changed"}


def group_name(dialogue_id: int) -> str:
    return f"persuasion.{dialogue_id}"


async def abroadcast(dialogue_id: int, message: dict) -> None:
    await get_channel_layer().group_send(group_name(dialogue_id), {"type": EVENT, "payload": message})


def broadcast(dialogue_id: int, message: dict) -> None:
    async_to_sync(abroadcast)(dialogue_id, message)


def buffer():
    """The stream buffer of design C's turns."""
    return stream_buffer("pturn")
