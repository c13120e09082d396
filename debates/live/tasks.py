"""Where AI turns run, and the Celery tasks that run them. Tasks take ids, call services, and
are idempotent.

`dispatch()` starts writing a turn, with the same code in both set-ups (`turns_start()`
dispatches a service's due turns once its transaction commits):
- production: a Celery task (`generate_turn`) hands the coroutine to its worker process's
  loop — one loop per process for its whole life, so the model client's and the channel
  layer's connections are reused, and a thread-pool worker runs many turns at once;
- the embedded default: the web server's own event loop (the in-memory channel layer only
  works within one loop), registered by `config.asgi` when the server starts serving; the
  embedded beat (config.embedded) runs the watchdog there as Celery beat does in production.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable

from celery import shared_task
from celery.signals import worker_shutdown
from django.conf import settings
from django.db import transaction

from debates.live import runner
from debates.live import services as live_services
from debates.live.realtime import TurnFailed, broadcast
from debates.models import LiveTurn
from debates.streaming import drain, process_loop, register_local_loop, spawn

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
    drain(settings.LLM_TIMEOUT_S * (settings.LLM_MAX_RETRIES + 2))


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
                message="The AI could not reply just now. You can try again, or go on to your final answer.",
                can_retry=True,
            ),
        )
    stuck = live_services.stuck_turns()
    for turn_id in stuck:
        dispatch(turn_id)
    return len(stuck)


# --- Starting turns ----------------------------------------------------------------------


def turns_start(turns: Iterable[LiveTurn | None]) -> None:
    """Start writing these turns once the current transaction commits (at once outside one).
    None entries are skipped, so a service's "turn now due, if any" can be passed as is."""
    for turn in turns:
        if turn is not None:
            transaction.on_commit(lambda turn_id=turn.pk: dispatch(turn_id))


def dispatch(turn_id: int, delay: float = 0) -> None:
    """Start generating a turn wherever turns run in this set-up (a no-op for a turn that
    is done, failed, or in a live worker's hands: see `services.turn_claim`)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        generate_turn.apply_async(args=[turn_id], countdown=delay or None)
        return
    spawn(lambda: _write(turn_id, delay))


async def _write(turn_id: int, delay: float = 0) -> None:
    """Write a turn here; the turns it makes due are dispatched as soon as they are."""
    if delay:
        await asyncio.sleep(delay)
    await runner.run_turn(turn_id, start=dispatch)


async def _in_fresh_context(turn_id: int) -> None:
    """Claim the turn and build its request, then leave its streaming to the loop."""
    prepared = await asyncio.get_running_loop().create_task(
        runner.db(runner.turn_prepare)(turn_id), context=contextvars.Context()
    )
    if prepared is not None:
        spawn(lambda: runner.stream_turn(prepared, start=dispatch), loop=asyncio.get_running_loop())
