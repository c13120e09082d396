"""Generating AI turns: one coroutine per turn, on a long-lived event loop.

`run_turn(turn_id)` claims the turn, streams the model's reply through the stream buffer and
the channel layer in coalesced frames (at most one per LIVE_FLUSH_MS per stream), keeps a
heartbeat in the database, stores the finished text and queues what comes next.

Where it runs (`dispatch()`), with the same code:
- production: a Celery task (`debates.tasks.generate_turn`) hands the coroutine to its
  worker process's loop — one loop per process for its whole life, so the model client's
  and the channel layer's connections are reused, and a thread-pool worker runs many turns
  at once;
- the embedded default: the web server's own event loop (the in-memory channel layer only
  works within one loop), registered by `config.asgi` when the server starts serving.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async

try:  # as uvicorn's loop: less CPU per streamed frame
    import uvloop
except ImportError:  # pragma: no cover - uvloop is in requirements.txt
    uvloop = None
from django.conf import settings
from django.db import close_old_connections, connection

from debates import live_services, llm, prompts
from debates.realtime import TurnDelta, TurnEnd, TurnFailed, TurnReset, TurnStart, abroadcast, stream_buffer

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


async def run_turn(turn_id: int) -> None:
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
        await db(live_services.llm_call_record)(
            session=session, turn=turn, role=role, config=config, request=request, error=error
        )
        await _after_failure(turn, error, shown=relay.sent > 0)
        return
    except Exception as error:  # a bug must not leave the turn spinning: fail it visibly
        log.exception("turn %s failed", turn_id)
        await _after_failure(
            turn, llm.LLMError("error", str(error)[:200], retryable=False), shown=relay.sent > 0
        )
        return
    finally:
        _streaming -= 1
        relay.stop()
    stored = await db(live_services.turn_done)(turn_id=turn.pk, text=result.text)
    await db(live_services.llm_call_record)(
        session=session, turn=turn, role=role, config=config, request=request, result=result
    )
    if stored:
        await abroadcast(session.pk, TurnEnd(type="turn.end", seq=turn.seq, text=result.text))
        await abroadcast(session.pk, await db(live_services.state_of)(session_id=session.pk))
    await stream_buffer().clear(turn.pk)


async def _after_failure(turn, error: llm.LLMError, shown: bool) -> None:
    outcome, attempt = await db(live_services.turn_attempt_failed)(
        turn_id=turn.pk, error=str(error), retryable=error.retryable or bool(error.partial)
    )
    await stream_buffer().clear(turn.pk)
    if outcome == "retry":
        message = "The reply was interrupted; it is being written again." if shown else ""
        await abroadcast(
            turn.session_id, TurnReset(type="turn.reset", seq=turn.seq, attempt=attempt, message=message)
        )
        await db(live_services.turn_enqueue)(turn_id=turn.pk, delay=llm.backoff(attempt, error.retry_after))
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
    await db(live_services.llm_call_record)(
        session=session,
        turn=None,
        role="side_choice",
        config=config,
        request=request,
        result=result,
        error=error,
    )
    chosen = side or session.claim.true_side  # an unreadable answer: argue the evidence's side
    await db(live_services.consultant_side_choose)(session_id=session.pk, side=chosen)
    session.consultant_side = chosen


# --- Where turns run ---------------------------------------------------------------------

_local_loop: asyncio.AbstractEventLoop | None = None
_process_loop: asyncio.AbstractEventLoop | None = None
_process_lock = threading.Lock()
_tasks: set[asyncio.Task] = set()


def register_local_loop(loop: asyncio.AbstractEventLoop) -> None:
    """The embedded server's loop: turns run there, beside the websockets, and a watchdog
    does there what Celery beat does in production."""
    global _local_loop
    if _local_loop is loop:
        return
    _local_loop = loop
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task = loop.create_task(_watchdog())
        _tasks.add(task)


async def _watchdog() -> None:
    from debates.tasks import requeue_stuck_turns

    while True:
        await asyncio.sleep(10)
        try:
            await db(requeue_stuck_turns)()
        except Exception:  # keep watching; the next round may succeed
            log.exception("live watchdog failed")


def process_loop() -> asyncio.AbstractEventLoop:
    """This process's long-lived background loop (Celery workers, commands)."""
    global _process_loop
    with _process_lock:
        if _process_loop is None or _process_loop.is_closed():
            loop = uvloop.new_event_loop() if uvloop else asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="rostrum-turns", daemon=True).start()
            _process_loop = loop
    return _process_loop


async def _later(turn_id: int, delay: float) -> None:
    if delay:
        await asyncio.sleep(delay)
    await run_turn(turn_id)


def _spawn(loop: asyncio.AbstractEventLoop, turn_id: int, delay: float) -> None:
    # A fresh context: the caller may be a request's sync thread, whose context variables
    # (asgiref's "inside the single thread executor" flag among them) must not leak into
    # the turn's task.
    def start() -> None:
        task = loop.create_task(_later(turn_id, delay), context=contextvars.Context())
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)

    loop.call_soon_threadsafe(start, context=contextvars.Context())


def dispatch(turn_id: int, delay: float = 0) -> None:
    """Start generating a turn wherever turns run in this set-up."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        from debates.tasks import generate_turn

        generate_turn.apply_async(args=[turn_id], countdown=delay or None)
        return
    local = _local_loop if _local_loop is not None and not _local_loop.is_closed() else None
    _spawn(local or process_loop(), turn_id, delay)


def run_in_process_loop(turn_id: int, timeout: float | None = None) -> None:
    """Block until the turn is generated on this process's loop (a Celery task's body)."""
    future = asyncio.run_coroutine_threadsafe(_in_fresh_context(turn_id), process_loop())
    future.result(timeout)


async def _in_fresh_context(turn_id: int) -> None:
    await asyncio.get_running_loop().create_task(run_turn(turn_id), context=contextvars.Context())
