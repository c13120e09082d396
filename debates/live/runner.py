"""Writing one AI turn: the coroutine `run_turn(turn_id)`.

It claims the turn, streams the model's reply through the stream buffer and the channel
layer in coalesced frames (at most one per LIVE_FLUSH_MS per stream), keeps a heartbeat in
the database, stores the finished text and returns the turns to start next (the following
AI turn, or this one again after a retryable failure). Where the coroutine runs, and how
the next turns are started, is `debates.live.tasks`' business.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from debates import llm
from debates.call_log import llm_call_record, llm_call_row, llm_calls_save
from debates.live import prompts
from debates.live import services as live_services
from debates.live.realtime import (
    TurnEnd,
    TurnFailed,
    TurnReset,
    TurnStart,
    abroadcast,
    event,
    group_name,
    stream_buffer,
)
from debates.models import LiveSession, LiveTurn
from debates.streaming import Gathered, Relay, clear_and_group_send, db, spawn, transient

log = logging.getLogger(__name__)


Start = Callable[[int, float], Awaitable[None]]  # await start(turn id, seconds to wait first)
# A failed turn, as the group hears it (the page says it in the participant's language).
AI_FAILED = "The AI could not reply just now. You can try again, or go on to your final answer."


@dataclass
class Prepared:
    """A claimed turn and what its model is asked (None: a consultant must first choose its
    side, which takes a model call of its own)."""

    turn: LiveTurn
    request: llm.LLMRequest | None


def turn_prepare(turn_id: int) -> Prepared | None:
    """Claim the turn and build its request: the database work before the model is asked,
    in one trip to a database thread. None if the turn is not ours to write."""
    prepared = turns_prepare([turn_id])
    return prepared[0] if prepared else None


def turns_prepare(turn_ids: list[int]) -> list[Prepared]:
    """`turn_prepare` for several turns (a burst taken from the queue together): one claim
    and one read of the conversations for them all. The turns not ours to write (done,
    failed, or in a live worker's hands) are left out."""
    turns = live_services.turns_claim(turn_ids=turn_ids)
    before = live_services.turns_before_each(turns) if turns else {}
    return [
        Prepared(turn, None)
        if turn.speaker == "C" and not turn.session.consultant_side
        else Prepared(turn, prompts.turn_request(turn.session, turn, before[turn.pk]))
        for turn in turns
    ]


async def run_turn(turn_id: int, start: Start | None = None) -> None:
    """Write the turn if it is ours to write. `start` starts the turns this one makes due
    (the next AI turn once this one is stored and its end told, or this one again after a
    retryable failure). Without it they stay pending (tests run them themselves)."""
    await stream_turn(await db(turn_prepare)(turn_id), start)


async def stream_turn(prepared: Prepared | None, start: Start | None = None, take_next: bool = False) -> None:
    """Write a turn claimed by `turn_prepare` (nothing if None): see `run_turn`. With
    `take_next`, the AI turn it makes due is taken when the reply is stored and written next
    on this loop, once the end is told, instead of started through `start`: no queue, no
    second claim (bench/live: a hundred debaters B waited behind them)."""
    if prepared is None:
        return
    start = start or _leave_pending
    turn, request = prepared.turn, prepared.request
    session = turn.session
    if request is None:
        await _choose_consultant_side(session)
        before = await db(live_services.turns_before)(turn)
        request = await db(prompts.turn_request)(session, turn, before)
    start_message = TurnStart(
        type="turn.start", seq=turn.seq, speaker=turn.speaker, round=turn.round, attempt=turn.attempts
    )
    # A previous attempt's text out of the buffer and the judge told, before any frame, but
    # while the model is already being asked (its first token takes far longer).
    group = group_name(session.pk)
    ready = asyncio.ensure_future(clear_and_group_send(stream_buffer(), turn.pk, group, event(start_message)))
    relay = Relay(
        turn_id=turn.pk,
        seq=turn.seq,
        send=lambda delta: abroadcast(session.pk, delta),
        heartbeat=lambda: _beat(turn.pk),
        buffer=stream_buffer(),
        group=group,
        wrap=event,
    )
    relay.start()
    config = session.config_for(turn.speaker)
    role = live_services.ROLE_OF[turn.speaker]

    async def on_text(piece: str) -> None:
        if not ready.done():
            await ready
        await relay.on_text(piece)

    storing: asyncio.Future | None = None
    failure: Exception | None = None
    try:
        result = await llm.stream(request, on_text)
        await ready
        # The reply is stored and the next turn created while the last frame waits for its
        # time (up to a frame interval); the end is told and the next turn started once that
        # frame is out, so the judge still hears them in order (bench/live: the wait was in
        # every next speaker's time to first token).
        reply = live_services.Reply(turn.pk, session.pk, result.text, take_next=take_next)
        storing = asyncio.ensure_future(_store((reply, session)))
        await relay.finish()
    except llm.LLMError as error:
        await asyncio.gather(ready, return_exceptions=True)  # turn.start before what follows
        await relay.finish()
        await db(llm_call_record)(
            session=session, turn=turn, role=role, config=config, request=request, error=error
        )
        await _after_failure(turn, error, shown=relay.sent > 0, start=start)
        return
    except Exception as error:  # a bug must not leave the turn spinning: fail it visibly
        await asyncio.gather(ready, return_exceptions=True)
        failure = error
    finally:
        relay.stop()
        if not ready.done():  # cancelled: do not leave it running
            ready.cancel()
    # What storing gave: (a Done, the next turn taken), a Done with no state if the turn was
    # taken over, or its error.
    outcome = (await asyncio.gather(storing, return_exceptions=True))[0] if storing is not None else None
    stored = isinstance(outcome, tuple) and outcome[0].state is not None
    if failure is not None and not stored:
        # Not stored: passing trouble (Redis or the database dropped a connection) is written
        # again at once; anything else is a bug, failed for the judge to try again.
        retryable = transient(failure)
        log.log(logging.WARNING if retryable else logging.ERROR, "turn %s failed", turn.pk, exc_info=failure)
        error = llm.LLMError("error", str(failure)[:200], retryable=retryable)
        await _after_failure(turn, error, shown=relay.sent > 0, start=start)
        return
    if failure is not None:  # stored: only the last frame was lost (the end carries the text)
        log.warning("turn %s: its last frame was not sent", turn.pk, exc_info=failure)
    if isinstance(outcome, BaseException):
        raise outcome
    (done, following) = outcome
    call = dict(session=session, turn=turn, role=role, config=config, request=request, result=result)
    try:
        if done.state is not None:  # told, and the buffer emptied: the text is stored
            end = TurnEnd(type="turn.end", seq=turn.seq, text=result.text)
            await clear_and_group_send(stream_buffer(), turn.pk, group, event(end, done.state))
    finally:  # the next turn starts even if Redis is out (its writer says turn.start itself)
        try:
            if following is not None:
                loop = asyncio.get_running_loop()
                spawn(lambda: stream_turn(following, start, take_next), loop=loop)
            elif done.due is not None:
                await start(done.due.pk, 0.0)
        finally:  # and the call is recorded, whatever became of that (a next speaker never
            await _record((call,))  # waits for it)


def _replies_store(items: list[tuple[live_services.Reply, LiveSession]]) -> list:
    """Replies stored (`services.turns_done`), each with (its Done, the next turn prepared if
    it was taken: its session is the reply's, with claim and debaters)."""
    answers = live_services.turns_done([reply for reply, _ in items])
    results = []
    for (reply, session), done in zip(items, answers, strict=True):
        following = None
        if not isinstance(done, Exception) and reply.take_next and done.due is not None:
            due = done.due
            due.session = session
            if due.speaker == "C" and not session.consultant_side:
                following = Prepared(due, None)
            else:
                following = Prepared(due, prompts.turn_request(session, due, done.before))
        results.append(done if isinstance(done, Exception) else (done, following))
    return results


def _records(items: list[tuple[dict]]) -> list[None]:
    """The calls of replies, recorded in one INSERT."""
    llm_calls_save([llm_call_row(**call) for (call,) in items])
    return [None] * len(items)


def _heartbeats(turn_ids: list[int]) -> list[None]:
    live_services.turns_heartbeat(turn_ids=turn_ids)
    return [None] * len(turn_ids)


# A process's streams that end together (and beat together) share their database trips:
# a hundred debaters A finishing at once had each debater B wait behind a hundred of them
# on the worker's few database threads (bench/live).
_store = Gathered(_replies_store)
# Records and heartbeats wait for nobody: one trip at a time, leaving the database threads
# to the trips a judge waits for.
_record = Gathered(_records, trips=1)
_beat = Gathered(_heartbeats, trips=1)


async def _leave_pending(turn_id: int, delay: float) -> None:
    pass


async def _after_failure(turn, error: llm.LLMError, shown: bool, start) -> None:
    outcome, attempt = await db(live_services.turn_attempt_failed)(
        turn_id=turn.pk, error=str(error), retryable=error.retryable or bool(error.partial)
    )
    try:  # a retry starts even if Redis is still out (the new attempt says turn.start itself)
        await stream_buffer().clear(turn.pk)
        if outcome == "retry":
            message = "The reply was interrupted; it is being written again." if shown else ""
            await abroadcast(
                turn.session_id, TurnReset(type="turn.reset", seq=turn.seq, attempt=attempt, message=message)
            )
        elif outcome == "failed":
            await abroadcast(
                turn.session_id,
                TurnFailed(
                    type="turn.failed",
                    seq=turn.seq,
                    message=AI_FAILED,
                    can_retry=True,
                ),
            )
    finally:
        if outcome == "retry":
            await start(turn.pk, llm.backoff(attempt, error.retry_after))


async def _choose_consultant_side(session) -> None:
    config = session.debater_a
    request = prompts.side_choice_request(session, config)
    try:
        result = await llm.complete(request)
        answer = result.text.strip().lower()
        side = "false" if answer.startswith("false") else "true" if answer.startswith("true") else ""
        error = None if side else llm.LLMError("malformed", f"not a side: {answer[:40]!r}", retryable=False)
    except llm.LLMError as failure:
        result, error, side = None, failure, ""
    await db(llm_call_record)(
        session=session,
        turn=None,
        role="side_choice",
        config=config,
        request=request,
        result=result,
        error=error,
    )
    chosen = side or session.claim.true_side  # an unreadable answer: argue the evidence's side
    await db(live_services.consultant_side_choose)(session_id=session.pk, side=chosen, fallback=not side)
    session.consultant_side = chosen
