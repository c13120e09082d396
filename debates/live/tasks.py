"""Where AI turns run, and the Celery tasks that run them. Tasks take ids, call services, and
are idempotent.

`dispatch()` starts writing a turn, with the same code in both set-ups (`turns_start()`
dispatches a service's due turns once its transaction commits):
- production: the turn's id is pushed on a Redis list (QUEUE) that every Celery worker
  process reads from its loop (`_read_queue`, started when the worker is ready), and the
  coroutine runs there — one loop per process for its whole life, so the model client's
  and the channel layer's connections are reused, and one process runs many turns at once.
  A push costs the web server about a tenth of Celery's `apply_async`, which was half of a
  judge's question (bench/live, py-spy). A turn to start later (a retry's back-off) is a
  Celery task (`generate_turn`), and so is the watchdog's re-dispatch of turns nobody
  took: an id lost with a killed worker or connection is recovered that way;
- the embedded default: the web server's own event loop (the in-memory channel layer only
  works within one loop), registered by `config.asgi` when the server starts serving; the
  embedded beat (config.embedded) runs the watchdog there as Celery beat does in production.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import weakref
from collections.abc import Iterable

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings
from django.db import transaction

from debates import llm
from debates.live import runner
from debates.live import services as live_services
from debates.live.realtime import TurnFailed, broadcast
from debates.models import LiveTurn
from debates.streaming import drain, process_loop, register_local_loop, spawn

log = logging.getLogger(__name__)
QUEUE = "rostrum:live:turns"  # ids of turns to start now (production)

__all__ = ["dispatch", "generate_turn", "register_local_loop", "requeue_stuck_turns", "turns_start"]

# --- The tasks ---------------------------------------------------------------------------


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def generate_turn(turn_id: int) -> None:
    """Write one AI turn. A duplicate or a redelivery finds the turn taken and does nothing.

    Returns once the turn is claimed and its stream has started on the process's loop: a
    pool thread is not held for the whole reply, so the turns a worker streams at once are
    not capped by its concurrency (bench/live: 200 judges asking at once against 2 × 64
    threads waited for a free thread). A worker that dies mid-turn stops its heartbeat and
    the watchdog starts the turn again, as before; a warm shutdown waits for the turns
    still streaming (`_finish_turns`)."""
    future = asyncio.run_coroutine_threadsafe(_in_fresh_context(turn_id), process_loop())
    future.result(settings.LLM_TIMEOUT_S)


@worker_shutdown.connect
def _finish_turns(**kwargs) -> None:
    _reading.clear()  # take no new turn from the queue
    drain(settings.LLM_TIMEOUT_S * (settings.LLM_MAX_RETRIES + 2))


@worker_ready.connect
def _start_reading_queue(**kwargs) -> None:
    llm.warm()  # before any turn runs on the process's loop
    if not settings.CELERY_TASK_ALWAYS_EAGER and settings.REDIS_URL:
        _reading.set()
        loop = process_loop()

        def start() -> None:
            # Held here: a loop keeps only weak references to its tasks, and a task waiting
            # on its own connection is otherwise garbage.
            _reader.append(loop.create_task(_read_queue(), context=contextvars.Context()))

        loop.call_soon_threadsafe(start)


@shared_task(ignore_result=True)
def requeue_stuck_turns() -> int:
    """The watchdog (Celery beat): re-queue turns no live worker is writing, and tell the
    participant about turns that have used up their attempts."""
    for session_id, seq in live_services.turns_give_up():
        broadcast(
            session_id,
            TurnFailed(
                type="turn.failed",
                seq=seq,
                message=runner.AI_FAILED,
                can_retry=True,
            ),
        )
    stuck = live_services.stuck_turns()
    for turn_id in stuck:  # through Celery: whatever became of the queue's push
        if settings.CELERY_TASK_ALWAYS_EAGER:
            dispatch(turn_id)
        else:
            generate_turn.delay(turn_id)
    return len(stuck)


# --- Starting turns ----------------------------------------------------------------------


def turns_start(turns: Iterable[LiveTurn | None]) -> None:
    """Start writing these turns once the current transaction commits (at once outside one).
    None entries are skipped, so a service's "turn now due, if any" can be passed as is."""
    ids = [turn.pk for turn in turns if turn is not None]
    if ids:
        transaction.on_commit(lambda: dispatch_now(ids))


def dispatch(turn_id: int, delay: float = 0) -> None:
    """Start generating a turn wherever turns run in this set-up (a no-op for a turn that
    is done, failed, or in a live worker's hands: see `services.turn_claim`)."""
    if delay and not settings.CELERY_TASK_ALWAYS_EAGER:
        generate_turn.apply_async(args=[turn_id], countdown=delay)
    elif delay:
        spawn(lambda: _write(turn_id, delay))
    else:
        dispatch_now([turn_id])


def dispatch_now(turn_ids: list[int]) -> None:
    """`dispatch()` for turns to start now; in production one push on the queue for them
    all, whose readers take them first in, first out."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        for turn_id in turn_ids:
            spawn(lambda turn_id=turn_id: _write(turn_id))
    elif turn_ids:
        _queue().rpush(QUEUE, *turn_ids)


def _queue():
    """This process's Redis client for pushing to the queue (thread-safe, pooled)."""
    global _pusher
    if _pusher is None:
        import redis

        _pusher = redis.Redis.from_url(settings.REDIS_URL)
    return _pusher


_pusher = None
_reading = threading.Event()  # set while this worker reads the queue
_reader: list[asyncio.Task] = []


async def _read_queue() -> None:
    """A worker process's loop: start every turn pushed on the queue, one id at a time (so
    that the workers share a burst: Redis hands a push to the reader waiting longest), until
    the worker shuts down. A lost connection is opened again; an id lost with it is started
    by the watchdog."""
    import redis.asyncio
    import redis.exceptions

    client = redis.asyncio.Redis.from_url(settings.REDIS_URL, socket_timeout=None)
    while _reading.is_set():
        lost = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError)
        try:
            popped = await client.blpop([QUEUE], timeout=1)
        except lost:
            log.warning("reading the live turns' queue: Redis connection lost, reconnecting")
            await asyncio.sleep(0.5)
            continue
        if popped is None:
            continue
        try:
            more = await client.lpop(QUEUE, TAKEN_TOGETHER - 1)
        except lost:  # the first is started all the same; the rest wait for the next pop
            more = None
        turn_ids = [int(popped[1]), *(int(turn_id) for turn_id in more or [])]
        spawn(lambda turn_ids=turn_ids: _start_popped(turn_ids), loop=asyncio.get_running_loop())
    await client.aclose()


# A reader takes the first turn waiting and up to this many in all: the turns of a burst are
# claimed and prepared together (one UPDATE and one read), and the other workers' readers
# take the next ones meanwhile.
TAKEN_TOGETHER = 10


async def _start_popped(turn_ids: list[int]) -> None:
    try:
        await _in_fresh_context(*turn_ids)
    except Exception:  # the database out, say: the turns stay pending for the watchdog
        log.warning("live turns %s not started", turn_ids, exc_info=True)


async def _write(turn_id: int, delay: float = 0) -> None:
    """Write a turn here; the turns it makes due are started as soon as they are."""
    if delay:
        await asyncio.sleep(delay)
    await _stream(await runner.db(runner.turn_prepare)(turn_id))


async def start_from_loop(turn_id: int, delay: float = 0) -> None:
    """`dispatch()` from a turn's loop (the runner's `start`): a turn to start now is pushed
    from the loop itself, without a trip to a database thread (bench/live: a hundred next
    speakers waited for the threads behind each other's replies)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        dispatch(turn_id, delay)  # spawned on the loop: nothing waits here
        return
    if delay:  # a Celery task (its broker's client blocks)
        await runner.db(dispatch)(turn_id, delay)
        return
    import redis.asyncio

    loop = asyncio.get_running_loop()
    client = _loop_pushers.get(loop)
    if client is None:
        client = _loop_pushers[loop] = redis.asyncio.Redis.from_url(settings.REDIS_URL)
    await client.rpush(QUEUE, turn_id)


_loop_pushers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def _in_fresh_context(*turn_ids: int) -> None:
    """Claim the turns and build their requests, then leave their streaming to the loop."""
    loop = asyncio.get_running_loop()
    taken = await loop.create_task(
        runner.db(runner.turns_prepare)(list(turn_ids)), context=contextvars.Context()
    )
    for prepared in taken:
        spawn(lambda prepared=prepared: _stream(prepared), loop=loop)


async def _stream(prepared: runner.Prepared | None) -> None:
    """A claimed turn written on this loop, and the AI turn after it too (`take_next`)."""
    await runner.stream_turn(prepared, start_from_loop, take_next=True)
