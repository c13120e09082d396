"""Writing and reading one turn: the coroutine `run_turn(turn_id)`.

An agent's turn: claimed, written by the model (streamed through design B's relay when a
participant is watching, a whole completion in a batch), then read like any turn. A
participant's turn: read. Reading classifies every sentence as a move (the language side),
then the protocol plays the legal ones (`services.turn_play`), and the next agent turn, if
one is due, is started with its reply delay. A model that fails is asked again once; then
the agent plays a safe default move, recorded as such. Where the coroutine runs is
`debates.persuasion.tasks`' business.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from django.conf import settings
from django.db.models import F

from debates import llm
from debates.call_log import llm_call_record
from debates.models import PersuasionTurn
from debates.persuasion import batches, language, services
from debates.persuasion.realtime import CHANGED, abroadcast, buffer
from debates.streaming import Relay, db

log = logging.getLogger(__name__)

Start = Callable[[int, float], None]  # start(turn id, seconds to wait first)


async def run_turn(turn_id: int, start: Start | None = None) -> None:
    """Write (an agent's) and read the turn if it is ours to do. `start` starts the turns
    this one makes due; without it they stay pending (tests run them themselves)."""
    start = db(start) if start is not None else _leave_pending
    turn = await db(services.turn_claim)(turn_id=turn_id)
    if turn is None:
        return
    dialogue = turn.dialogue
    if dialogue.batch_id and not await db(batches.budget_allows)(batch_id=dialogue.batch_id):
        await db(_release)(turn.pk)  # paused or stopped meanwhile: left for the resume
        return
    try:
        await _run(turn, dialogue, start)
    except Exception:  # a bug must not leave the turn spinning: the watchdog retries it
        log.exception("persuasion turn %s failed", turn_id)
        await db(services.turn_attempt_failed)(turn_id=turn.pk, error="internal error")
        raise


async def _run(turn, dialogue, start: Start) -> None:
    game = services.game_of(dialogue)
    topic = services.topic_view(dialogue.topic)
    text, fallback = turn.text, False
    if turn.author == "agent":
        written = await _write(turn, dialogue, game, topic, start)
        if written is None:
            return  # being written again
        text, fallback, reading = written
    else:
        reading = None
    if reading is None:
        beat = asyncio.ensure_future(_heartbeat(turn.pk))  # a slow classifier is not a dead worker
        try:
            reading = await language.read_turn(
                game, turn.speaker, text, model=dialogue.classifier_model, topic=topic
            )
        finally:
            beat.cancel()
    prices = dialogue.batch if dialogue.batch_id else None  # the classifier's prices, if known
    for call in reading.calls:
        await db(llm_call_record)(
            role=call.role,
            config=_ClassifierPrices(prices),
            request=call.request,
            result=call.result,
            error=call.error,
            dialogue=dialogue,
            dialogue_turn=turn,
        )
    played = await db(services.turn_play)(turn_id=turn.pk, text=text, reading=reading, fallback=fallback)
    await buffer().clear(turn.pk)
    if played is None:
        return
    if dialogue.study_id:
        await abroadcast(dialogue.pk, CHANGED)
    if played.due is not None:
        await start(played.due.pk, _seconds_until(played.due.due_at))
    if played.ended and dialogue.batch_id:
        for due in await db(batches.batch_advance)(batch_id=dialogue.batch_id):
            await start(due.pk, 0.0)


async def _write(turn, dialogue, game, topic, start: Start):
    """The agent's text: (text, fallback, reading or None), or None when the attempt failed
    and the turn will be written again."""
    agent = dialogue.agent_of(turn.speaker)
    request = language.agent_request(game, turn.speaker, services.agent_view(agent), topic)
    if dialogue.batch_id:
        estimate = batches.turn_estimate(batch=dialogue.batch, agent=agent, request=request)
        if not await db(batches.budget_allows)(batch_id=dialogue.batch_id, estimate=estimate):
            await db(_release)(turn.pk)
            return None
    watched = bool(dialogue.study_id)
    relay = None
    try:
        if watched:
            await buffer().clear(turn.pk)
            await abroadcast(
                dialogue.pk,
                {"type": "turn.start", "seq": turn.seq, "speaker": turn.speaker, "attempt": turn.attempts},
            )
            relay = Relay(
                turn_id=turn.pk,
                seq=turn.seq,
                send=lambda delta: abroadcast(dialogue.pk, delta),
                heartbeat=lambda: db(services.turn_heartbeat)(turn_id=turn.pk),
                buffer=buffer(),
            )
            relay.start()
            try:
                result = await llm.stream(request, relay.on_text)
            finally:
                await relay.finish()
                relay.stop()
        else:
            result = await llm.complete(request)
    except llm.LLMError as error:
        await db(llm_call_record)(
            role="persuasion_agent",
            config=agent,
            request=request,
            error=error,
            dialogue=dialogue,
            dialogue_turn=turn,
        )
        outcome = await db(services.turn_attempt_failed)(turn_id=turn.pk, error=str(error))
        if outcome == "retry":
            if watched:
                message = "The reply was interrupted; it is being written again." if error.partial else ""
                await abroadcast(
                    dialogue.pk,
                    {"type": "turn.reset", "seq": turn.seq, "attempt": turn.attempts, "message": message},
                )
            await start(turn.pk, llm.backoff(turn.attempts, error.retry_after))
            return None
        text, moves = language.fallback_move(game, turn.speaker)
        await db(services.turn_written)(turn_id=turn.pk, text=text)
        return text, True, _fallback_reading(text, moves)
    await db(llm_call_record)(
        role="persuasion_agent",
        config=agent,
        request=request,
        result=result,
        dialogue=dialogue,
        dialogue_turn=turn,
    )
    text = result.text.strip()
    if not text:
        text, moves = language.fallback_move(game, turn.speaker)
        await db(services.turn_written)(turn_id=turn.pk, text=text)
        return text, True, _fallback_reading(text, moves)
    await db(services.turn_written)(turn_id=turn.pk, text=text)
    if watched:  # the text is complete; its reading follows
        await abroadcast(dialogue.pk, {"type": "turn.end", "seq": turn.seq, "text": text})
    return text, False, None


def _fallback_reading(text: str, moves) -> language.Reading:
    """The safe default move's reading: known, so not sent to the classifier."""
    sentences = [
        language.SentenceReading(
            text=text if n == 0 else "",
            kind=move.kind,
            target=move.target,
            proposition=move.proposition,
            premises=tuple(move.premises),
            legal=True,
            reason="",
            fallback=True,
        )
        for n, move in enumerate(moves)
    ]
    return language.Reading(sentences=sentences, moves=list(moves), calls=[])


class _ClassifierPrices:
    """What the call log reads from a configuration, for the classifier's calls."""

    template_version = None

    def __init__(self, batch) -> None:
        self.price_in_per_mtok = getattr(batch, "classifier_price_in_per_mtok", None)
        self.price_out_per_mtok = getattr(batch, "classifier_price_out_per_mtok", None)


async def _heartbeat(turn_id: int) -> None:
    while True:
        await asyncio.sleep(settings.LIVE_HEARTBEAT_S)
        await db(services.turn_heartbeat)(turn_id=turn_id)


def _release(turn_id: int) -> None:
    """A batch turn not taken (paused, or out of budget): pending again, for the resume."""
    PersuasionTurn.objects.filter(pk=turn_id).update(
        status=PersuasionTurn.Status.PENDING, heartbeat_at=None, started_at=None, attempts=F("attempts") - 1
    )


def _seconds_until(when: datetime | None) -> float:
    if when is None:
        return 0.0
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


async def _leave_pending(turn_id: int, delay: float) -> None:
    pass
