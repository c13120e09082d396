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
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections, connection

from debates import llm
from debates.call_log import llm_call_record
from debates.live import prompts
from debates.live import services as live_services
from debates.live.realtime import (
    TurnDelta,
    TurnEnd,
    TurnFailed,
    TurnReset,
    TurnStart,
    abroadcast,
    stream_buffer,
)

log = logging.getLogger(__name__)


_db_pool: ThreadPoolExecutor | None = None


def db(fn):
    """Run ORM code from the loop, with stale connections dropped first (nothing else
    closes them outside a request). With LIVE_DB_THREADS, on a small pool of threads (each
    with its connection), so a burst of turns in one worker does not queue on one thread;
    with 0, on the process's one thread-sensitive thread (the caller's thread in tests)."""

    def call(*args, **kwargs):
        if not connection.in_atomic_block:
            close_old_connections()
        return fn(*args, **kwargs)

    if settings.LIVE_DB_THREADS <= 0:
        return sync_to_async(call, thread_sensitive=True)
    return sync_to_async(call, thread_sensitive=False, executor=_pool())


def _pool() -> ThreadPoolExecutor:
    global _db_pool
    if _db_pool is None:
        _db_pool = ThreadPoolExecutor(max_workers=settings.LIVE_DB_THREADS, thread_name_prefix="rostrum-db")
    return _db_pool


_streaming = 0  # turns this process is streaming right now


def _load_factor() -> float:
    """Stretch the frame interval when a process streams many turns at once, so frames per
    second per process stay about constant: under load, fewer and larger frames instead of
    a relay that falls behind (bench/live: at 50 streams per process, one frame per token
    saturated the worker)."""
    return max(1.0, _streaming / settings.LIVE_STREAMS_PER_INTERVAL)


class Relay:
    """Coalesces streamed text into frames and keeps the turn's heartbeat.

    A frame goes out at once if the last one left at least the frame interval ago;
    otherwise the text waits for a timer that fires when the interval is up. The interval
    is LIVE_FLUSH_MS, stretched under load (see _load_factor), so no text waits longer
    than it and a stream sends at most 1000/LIVE_FLUSH_MS frames a second.
    """

    def __init__(self, turn) -> None:
        self.turn = turn
        self.session_id = turn.session_id
        self.pending: list[str] = []
        self.sent = 0  # characters broadcast so far
        self.last_flush = 0.0
        self.interval = settings.LIVE_FLUSH_MS / 1000
        self._lock = asyncio.Lock()
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Task] = set()
        self._heartbeat: asyncio.Task | None = None

    async def on_text(self, piece: str) -> None:
        self.pending.append(piece)
        if self._timer is not None:
            return
        wait = self.interval * _load_factor() - (time.monotonic() - self.last_flush)
        if wait <= 0:
            await self.flush()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        task = asyncio.ensure_future(self.flush())
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def flush(self) -> None:
        """Send what is pending (in order: frames never overtake each other)."""
        async with self._lock:
            self.last_flush = time.monotonic()
            if not self.pending:
                return
            text = "".join(self.pending)
            self.pending.clear()
            await stream_buffer().append(self.turn.pk, text)  # before the broadcast: see realtime
            delta = TurnDelta(type="turn.delta", seq=self.turn.seq, offset=self.sent, text=text)
            await abroadcast(self.session_id, delta)
            self.sent += len(text)

    async def finish(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._flushing:
            await asyncio.gather(*self._flushing, return_exceptions=True)
        await self.flush()

    def start_heartbeat(self) -> None:
        async def beat():
            while True:
                await asyncio.sleep(settings.LIVE_HEARTBEAT_S)
                await db(live_services.turn_heartbeat)(turn_id=self.turn.pk)

        self._heartbeat = asyncio.ensure_future(beat())

    def stop(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


Start = Callable[[int, float], None]  # start(turn id, seconds to wait first)


async def run_turn(turn_id: int, start: Start | None = None) -> None:
    """Write the turn if it is ours to write. `start` starts the turns this one makes due
    (the next AI turn as soon as this one is stored, or this one again after a retryable
    failure); it runs on a database thread, since it may publish to the broker. Without it
    they stay pending (tests run them themselves)."""
    start = db(start) if start is not None else _leave_pending
    turn = await db(live_services.turn_claim)(turn_id=turn_id)
    if turn is None:
        return  # done, failed, or in a live worker's hands: nothing to do
    session = turn.session
    await stream_buffer().clear(turn.pk)
    if turn.speaker == "C" and not session.consultant_side:
        await _choose_consultant_side(session)
    before = await db(lambda: list(session.turns.filter(seq__lt=turn.seq).order_by("seq")))()
    request = await db(prompts.turn_request)(session, turn, before)
    await abroadcast(
        session.pk,
        TurnStart(
            type="turn.start", seq=turn.seq, speaker=turn.speaker, round=turn.round, attempt=turn.attempts
        ),
    )
    global _streaming
    relay = Relay(turn)
    relay.start_heartbeat()
    _streaming += 1
    config = session.config_for(turn.speaker)
    role = live_services.ROLE_OF[turn.speaker]
    try:
        result = await llm.stream(request, relay.on_text)
        await relay.finish()
    except llm.LLMError as error:
        await relay.finish()
        await db(llm_call_record)(
            session=session, turn=turn, role=role, config=config, request=request, error=error
        )
        await _after_failure(turn, error, shown=relay.sent > 0, start=start)
        return
    except Exception as error:  # a bug must not leave the turn spinning: fail it visibly
        log.exception("turn %s failed", turn_id)
        failure = llm.LLMError("error", str(error)[:200], retryable=False)
        await _after_failure(turn, failure, shown=relay.sent > 0, start=start)
        return
    finally:
        _streaming -= 1
        relay.stop()
    stored, due = await db(live_services.turn_done)(turn_id=turn.pk, text=result.text)
    if due is not None:
        await start(due.pk, 0.0)
    await db(llm_call_record)(
        session=session, turn=turn, role=role, config=config, request=request, result=result
    )
    if stored:
        await abroadcast(session.pk, TurnEnd(type="turn.end", seq=turn.seq, text=result.text))
        await abroadcast(session.pk, await db(live_services.state_of)(session_id=session.pk))
    await stream_buffer().clear(turn.pk)


async def _leave_pending(turn_id: int, delay: float) -> None:
    pass


async def _after_failure(turn, error: llm.LLMError, shown: bool, start) -> None:
    outcome, attempt = await db(live_services.turn_attempt_failed)(
        turn_id=turn.pk, error=str(error), retryable=error.retryable or bool(error.partial)
    )
    await stream_buffer().clear(turn.pk)
    if outcome == "retry":
        message = "The reply was interrupted; it is being written again." if shown else ""
        await abroadcast(
            turn.session_id, TurnReset(type="turn.reset", seq=turn.seq, attempt=attempt, message=message)
        )
        await start(turn.pk, llm.backoff(attempt, error.retry_after))
    elif outcome == "failed":
        await abroadcast(
            turn.session_id,
            TurnFailed(
                type="turn.failed",
                seq=turn.seq,
                message="The AI could not reply just now. You can try again, or go on to your final answer.",
                can_retry=True,
            ),
        )


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
