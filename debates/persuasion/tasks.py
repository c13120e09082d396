"""Where persuasion turns run, and the Celery tasks that run them. Tasks take ids, call
services, and are idempotent (a duplicate finds the turn taken or played and does nothing).

As in design B (and on the same loops, `debates.streaming`): in production a Celery task
hands the turn to its worker process's long-lived loop; in the embedded default the web
server's own loop writes it. The watchdog (Celery beat, or the embedded beat) restarts
turns no live worker holds, checks the clocks of running dialogues, and keeps batches
moving.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable

from celery import shared_task
from django.conf import settings
from django.db import transaction

from debates.models import PersuasionTurn
from debates.persuasion import batches, runner, services
from debates.persuasion.realtime import CHANGED, broadcast
from debates.streaming import process_loop, spawn


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def generate_turn(turn_id: int) -> None:
    """Write and/or read one turn."""
    future = asyncio.run_coroutine_threadsafe(_in_fresh_context(turn_id), process_loop())
    future.result(settings.LLM_TIMEOUT_S * (settings.LLM_MAX_RETRIES + 2) * 3)


@shared_task(ignore_result=True)
def watchdog() -> int:
    """Restart turns nobody holds; end dialogues whose clocks ran out (telling their pages)."""
    for dialogue_id in services.running_dialogues():
        if services.dialogue_check(dialogue_id=dialogue_id):
            broadcast(dialogue_id, CHANGED)
    stuck = services.stuck_turns()
    for turn_id in stuck:
        dispatch(turn_id)
    from debates.models import PersuasionBatch

    for batch_id in PersuasionBatch.objects.filter(status=PersuasionBatch.Status.RUNNING).values_list(
        "pk", flat=True
    ):
        turns_start(batches.batch_advance(batch_id=batch_id))
    return len(stuck)


def turns_start(turns: Iterable[PersuasionTurn | None]) -> None:
    """Start these turns once the current transaction commits (agent turns after their
    reply delay). None entries are skipped."""
    for turn in turns:
        if turn is not None:
            delay = runner._seconds_until(turn.due_at)
            transaction.on_commit(lambda turn_id=turn.pk, delay=delay: dispatch(turn_id, delay))


def dispatch(turn_id: int, delay: float = 0) -> None:
    """Start a turn wherever turns run in this set-up (a no-op for one done or held)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        generate_turn.apply_async(args=[turn_id], countdown=delay or None)
        return
    spawn(lambda: _write(turn_id, delay))


async def _write(turn_id: int, delay: float = 0) -> None:
    if delay:
        await asyncio.sleep(delay)
    await runner.run_turn(turn_id, start=dispatch)


async def _in_fresh_context(turn_id: int) -> None:
    await asyncio.get_running_loop().create_task(_write(turn_id), context=contextvars.Context())


def run_here(turn_id: int) -> None:
    """Play a turn and every turn it makes due in this thread, to the dialogue's end (the
    management command and tests of batches without workers)."""
    pending = [turn_id]

    def start(next_id: int, delay: float) -> None:
        pending.append(next_id)

    while pending:
        asyncio.run(runner.run_turn(pending.pop(0), start=start))
