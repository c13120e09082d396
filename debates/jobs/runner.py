"""Running one item: the coroutine `run_item(item_id, start=…)`.

The item is claimed (a duplicate, a finished item, a paused or full job: nothing happens),
its kind's `run()` does it with a `Calls` while a heartbeat tells the watchdog it is alive,
and the outcome is stored: done with its result; failed (ItemFailed, or a model error no
retry can help); pending again for a retryable failure (up to JOB_ITEM_ATTEMPTS attempts)
or a budget stop; cancelled with its job. Then the job advances: `start(item_id)` is called
for each item that may start now. Where the coroutine runs is `debates.jobs.tasks`' business.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from django.conf import settings

from debates import llm
from debates.jobs import kinds, services
from debates.jobs.calls import Calls, JobStopped
from debates.streaming import db

log = logging.getLogger(__name__)
Start = Callable[[int], None]


async def run_item(item_id: int, *, start: Start) -> str | None:
    """Run one item if it can be claimed; its final status (None when not claimed)."""
    item = await db(services.item_claim)(item_id=item_id)
    if item is None:
        return None
    attempt = item.attempts
    beat = asyncio.ensure_future(_heartbeat(item.pk, attempt))
    try:
        outcome = await _run(item, attempt)
    finally:
        beat.cancel()
    for next_id in await db(services.job_advance)(job_id=item.job_id):
        start(next_id)
    return outcome


async def _run(item, attempt: int) -> str:
    try:
        result = await kinds.get(item.job.kind).run(item, Calls(item))
        if not isinstance(result, dict):
            raise kinds.ItemFailed(f"the kind returned {type(result).__name__}, not a dict")
    except JobStopped as stopped:
        await db(services.item_release)(item_id=item.pk, attempt=attempt, status=stopped.status)
        return "cancelled" if stopped.status == services.JobStatus.CANCELLED else "pending"
    except kinds.ItemFailed as error:
        return await _failed(item, attempt, error.message, error.retryable)
    except llm.LLMError as error:
        return await _failed(item, attempt, str(error), error.retryable)
    except Exception as error:  # noqa: BLE001 - a kind's bug fails its item, not the worker
        log.exception("job item %s failed", item.pk)
        return await _failed(item, attempt, f"{type(error).__name__}: {error}", False)
    try:
        await db(services.item_finish)(item_id=item.pk, attempt=attempt, result=result)
    except (TypeError, ValueError) as error:  # not JSON
        return await _failed(item, attempt, f"the result is not JSON: {error}", False)
    return "done"


async def _failed(item, attempt: int, message: str, retryable: bool) -> str:
    outcome = await db(services.item_fail)(
        item_id=item.pk, attempt=attempt, error=message, retryable=retryable
    )
    return "pending" if outcome == "retry" else "failed"


async def _heartbeat(item_id: int, attempt: int) -> None:
    while True:
        await asyncio.sleep(settings.LIVE_HEARTBEAT_S)
        await db(services.item_heartbeat)(item_id=item_id, attempt=attempt)
