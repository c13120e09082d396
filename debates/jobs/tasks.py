"""Where job items run, and the Celery tasks that run them. Tasks take ids, call services,
and are idempotent (a duplicate finds the item taken or finished and does nothing).

As with design B's and C's turns (and on the same loops, `debates.streaming`): in
production the `run_item` task hands the item to its worker process's long-lived loop; in
the embedded default the web server's own loop runs it. The watchdog (Celery beat's
"jobs-watchdog", or the embedded beat) puts back items whose worker died and keeps running
jobs moving. `job_run_here` runs a job to its end in this thread (`manage.py run_job`).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable

from asgiref.sync import async_to_sync
from celery import shared_task
from django.conf import settings
from django.db import transaction

from debates.jobs import runner, services
from debates.streaming import process_loop, spawn


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_item(item_id: int) -> None:
    """Run one job item (a no-op unless it is pending and its job has room)."""
    future = asyncio.run_coroutine_threadsafe(_in_fresh_context(item_id), process_loop())
    future.result()


@shared_task(ignore_result=True)
def watchdog() -> int:
    """Put back items nobody runs any more; start what running jobs have room for."""
    stuck = services.stuck_items()
    for job_id in services.running_jobs():
        items_start(services.job_advance(job_id=job_id))
    return stuck


def items_start(item_ids: Iterable[int]) -> None:
    """Start these items once the current transaction commits."""
    for item_id in item_ids:
        transaction.on_commit(lambda item_id=item_id: dispatch(item_id))


def dispatch(item_id: int) -> None:
    """Start an item wherever items run in this set-up."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        run_item.delay(item_id)
        return
    spawn(lambda: runner.run_item(item_id, start=dispatch))


async def _in_fresh_context(item_id: int) -> None:
    task = asyncio.get_running_loop().create_task(
        runner.run_item(item_id, start=dispatch), context=contextvars.Context()
    )
    await task


# --- The interfaces' verbs: the service, then the items it makes due ---------------------------


def job_start(job_id: int) -> None:
    items_start(services.job_start(job_id=job_id))


def job_resume(job_id: int) -> None:
    items_start(services.job_resume(job_id=job_id))


def job_pause(job_id: int) -> None:
    services.job_pause(job_id=job_id)


def job_cancel(job_id: int) -> None:
    services.job_cancel(job_id=job_id)


def job_run_here(job_id: int) -> str:
    """Start or resume a job and run it to its end (done, or stopped) in this thread, at most
    `concurrency` items at a time; its final status."""
    async_to_sync(_run_all)(job_id)
    from debates.models import Job

    return Job.objects.get(pk=job_id).status


async def _run_all(job_id: int) -> None:
    from debates.streaming import db

    queue: list[int] = list(await db(services.job_start)(job_id=job_id))
    running: set[asyncio.Task] = set()
    while queue or running:
        while queue:
            running.add(asyncio.ensure_future(runner.run_item(queue.pop(0), start=queue.append)))
        done, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
        if not queue and not running:  # items put back for a retry are started by an advance
            queue.extend(await db(services.job_advance)(job_id=job_id))
