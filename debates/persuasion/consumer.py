"""The participant's websocket in a persuasion dialogue: authenticate, join the dialogue's
group, send snapshots and relay streamed text, and pass the participant's turn to the
services. While connected, the page's consumer also keeps the dialogue's clocks (the time
limit, a silent or departed partner, the waiting room) every PERSUASION_CHECK_SECONDS, so a
participant is never stranded waiting for the watchdog. The limits (sockets per token,
reconnections, frames) and the reading of frames are the shared base's (debates.sockets).
What it says to the participant (the snapshot's outcome, a refused turn) is in the
participant's language: consumers do not pass through `participants.i18n`'s middleware, so
the consumer activates it (`participant_language`) around what it composes."""

from __future__ import annotations

import asyncio
import logging

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext

from debates.models import PersuasionDialogue, PersuasionTurn
from debates.persuasion import services
from debates.persuasion.realtime import CHANGED, EVENT, abroadcast, buffer, group_name
from debates.persuasion.tasks import dispatch, turns_start
from debates.sockets import UNREADABLE, ParticipantSocket, SocketLimits, error, participant_or_refusal
from debates.streaming import db
from participants.i18n import participant_language
from participants.services import participant_current_step
from studies import registry

log = logging.getLogger(__name__)
MAX_MESSAGES_PER_MINUTE = SocketLimits.frames_per_minute  # every frame counts (debates.sockets)
Status = PersuasionDialogue.Status
_checks: set[asyncio.Task] = set()  # clock checks running (the loop keeps only weak references)


@db
def seat_for_token(token: str) -> tuple[int, int, object, tuple[str, str]] | str:
    """(dialogue id, participant id, step, (language, study's language)) of the
    participant's current persuasion step; else why not (for the log)."""
    participant = participant_or_refusal(token)
    if isinstance(participant, str):
        return participant
    step = participant_current_step(participant)
    if step is None or step.kind != "persuasion_dialogue":
        return f"participant {participant.pk} at step {participant.position}, not a persuasion dialogue"
    dialogue = services.dialogue_of(participant, step.position)
    if dialogue is None:
        return f"participant {participant.pk}: no dialogue at step {step.position}"
    study_language = participant.study.language
    return dialogue.pk, participant.pk, step, (participant.language or study_language, study_language)


@db
def kick(dialogue_id: int) -> None:
    """On (re)connection: a turn left open gets a worker now (a no-op if one holds it)."""
    dialogue = PersuasionDialogue.objects.get(pk=dialogue_id)
    turn = services.open_turn(dialogue)
    if turn is not None and dialogue.status == Status.RUNNING:
        delay = 0.0
        if turn.due_at is not None:
            delay = max(0.0, (turn.due_at - timezone.now()).total_seconds())
        dispatch(turn.pk, delay)


@db
def snapshot_rows(dialogue_id: int) -> tuple[PersuasionDialogue, list[PersuasionTurn]]:
    dialogue = services.dialogue_query().get(pk=dialogue_id)
    return dialogue, list(dialogue.turns.order_by("seq"))


@db
def clocks(dialogue_id: int, step) -> bool:
    """Check the dialogue's clocks; True if its state changed."""
    dialogue = PersuasionDialogue.objects.get(pk=dialogue_id)
    if dialogue.status == Status.WAITING:
        design = registry.get("persuasion_dialogue").design(step)
        if services.waiting_until(dialogue, design) <= timezone.now():
            turns_start(
                [services.waiting_resolve(dialogue_id=dialogue_id, design=design, now=timezone.now())]
            )
            return True
        return False
    return services.dialogue_check(dialogue_id=dialogue_id)


def say_and_start(*, languages: tuple[str, str], **kwargs) -> PersuasionTurn:
    """The participant's turn (a refusal's message in their language), then its reading."""
    with participant_language(*languages):
        turn = services.human_say(**kwargs)
    dispatch(turn.pk)
    return turn


class PersuasionConsumer(ParticipantSocket):
    async def open(self, token: str) -> bool:
        seat = await seat_for_token(token)
        if isinstance(seat, str):
            self.refusal = seat
            return False
        self.dialogue_id, self.participant_id, self.step, self.languages = seat
        await self.channel_layer.group_add(group_name(self.dialogue_id), self.channel_name)
        await self.accept()
        await kick(self.dialogue_id)
        await self.send_snapshot()
        self.clock = asyncio.ensure_future(self.keep_clocks())
        return True

    async def close_down(self) -> None:
        if getattr(self, "clock", None) is not None:
            self.clock.cancel()
        if getattr(self, "dialogue_id", None) is not None:
            await self.channel_layer.group_discard(group_name(self.dialogue_id), self.channel_name)

    async def keep_clocks(self) -> None:
        while True:
            await asyncio.sleep(settings.PERSUASION_CHECK_SECONDS)
            # Shielded from this socket's closing: a check that ended the dialogue (its
            # transaction runs on in its thread) must still tell the other page, which would
            # otherwise wait for ever (a partner who closes the tab as they return the study
            # is the very case).
            check = asyncio.ensure_future(self.check_clocks())
            _checks.add(check)
            check.add_done_callback(_checks.discard)
            await asyncio.shield(check)

    async def check_clocks(self) -> None:
        try:
            if await clocks(self.dialogue_id, self.step):
                await abroadcast(self.dialogue_id, CHANGED)
        except Exception:  # a database hiccup: try again next time
            log.warning("clock check of dialogue %s failed", self.dialogue_id, exc_info=True)

    async def send_snapshot(self) -> None:
        dialogue, turns = await snapshot_rows(self.dialogue_id)
        streaming = [t.pk for t in turns if t.status == PersuasionTurn.Status.STREAMING]
        partial = {pk: await buffer().get(pk) for pk in streaming}
        side = dialogue.side_of(self.participant_id)
        # Pure computation from here (the protocol's state is replayed once per change and kept).
        with participant_language(*self.languages):
            snapshot = services.snapshot_for(dialogue, side, partial, turns)
        await self.send_json(snapshot)

    async def receive_json(self, content, **kwargs) -> None:
        kind = content["type"]
        if kind == "say":
            await self.say(content.get("text"))
        elif kind == "resync":
            await self.send_snapshot()
        else:
            with self.speaking():
                message = gettext("Unknown message.")
            await self.send_json(error(message))

    async def say(self, text) -> None:
        if not isinstance(text, str):
            with self.speaking():
                await self.send_json(error(gettext(UNREADABLE)))
            return
        try:
            await db(say_and_start)(
                languages=self.languages,
                dialogue_id=self.dialogue_id,
                participant_id=self.participant_id,
                text=text,
                now=timezone.now(),
            )
        except services.PersuasionError as problem:
            await self.send_json(error(str(problem)))
            return
        await abroadcast(self.dialogue_id, CHANGED)

    async def dispatch(self, message) -> None:
        if message.get("type") == EVENT:
            payload = message["payload"]
            if payload.get("type") == "changed":
                await self.send_snapshot()
            else:
                await self.send_json(payload)
            return
        await super().dispatch(message)
