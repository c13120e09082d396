"""Jobs and their items: the only code that writes them.

A job starts (planned once by its kind), runs at most `concurrency` items at a time
(`job_advance` names the pending items to start; `item_claim` takes one only while the job
runs and has room, under the job's row lock, so a duplicate or surplus task does nothing),
and is done when no item is pending or running. Pausing stops claiming (items running
finish); cancelling also cancels the pending items and ends running ones at their next
call. The budget is checked before every call (`call_reserve`): what was spent, plus what
the calls in flight may cost, plus the most this call can cost. A finished item is never
run again; the watchdog puts back items whose worker stopped sending heartbeats, and an item
run again reuses the calls its cut-short attempt already paid for (`item_replay`). Items
have stages: one starts only once every item of an earlier stage is finished.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Count, F, Sum
from django.db.models.functions import Greatest
from django.utils import timezone

from debates.jobs import kinds, templates
from debates.models import Job, JobItem, LLMCall

JobStatus = Job.Status
ItemStatus = JobItem.Status
OPEN = (ItemStatus.PENDING, ItemStatus.RUNNING)


class JobError(Exception):
    """A job cannot do what was asked (the message says why, for the experimenter)."""


# --- The job ---------------------------------------------------------------------------------


def job_plan(*, job: Job) -> int:
    """Create the job's items from its kind's plan (once; keys already there are kept)."""
    specs = kinds.get(job.kind).plan(job)
    keys = [spec.key for spec in specs]
    if len(set(keys)) != len(keys):
        raise JobError("The plan names an item twice.")
    have = set(job.items.values_list("key", flat=True))
    JobItem.objects.bulk_create(
        [
            JobItem(job=job, key=spec.key, payload=spec.payload, stage=spec.stage)
            for spec in specs
            if spec.key not in have
        ]
    )
    return len(specs)


def job_start(*, job_id: int, now: datetime | None = None) -> list[int]:
    """Start (planning it the first time) or resume a job; the items to start."""
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status in (JobStatus.CANCELLED, JobStatus.DONE):
            raise JobError(f"The job is {job.get_status_display().lower()}: it cannot start again.")
        if job.status == JobStatus.DRAFT and not job.items.exists():
            if not job_plan(job=job):
                raise JobError("The job has nothing to do: its plan has no items.")
        job.status, job.note = JobStatus.RUNNING, ""
        job.started_at = job.started_at or now
        job.save(update_fields=["status", "note", "started_at"])
    return job_advance(job_id=job_id, now=now)


def job_resume(*, job_id: int, now: datetime | None = None) -> list[int]:
    """Go on after a pause or a budget stop (raise the budget first); the items to start."""
    return job_start(job_id=job_id, now=now)


def job_pause(*, job_id: int) -> bool:
    """Start no more items; those running finish."""
    return bool(Job.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(status=JobStatus.PAUSED))


def job_cancel(*, job_id: int, now: datetime | None = None) -> bool:
    """Stop for good: pending items are cancelled, running ones end at their next call."""
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status in (JobStatus.CANCELLED, JobStatus.DONE):
            return False
        job.status, job.finished_at = JobStatus.CANCELLED, now
        job.save(update_fields=["status", "finished_at"])
        job.items.filter(status=ItemStatus.PENDING).update(status=ItemStatus.CANCELLED, finished_at=now)
    return True


def job_advance(*, job_id: int, now: datetime | None = None) -> list[int]:
    """The pending items to start so that at most `concurrency` run; marks a running job
    done when none is pending or running."""
    now = now or timezone.now()
    with transaction.atomic():
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status != JobStatus.RUNNING:
            return []
        counts = _counts(job)
        if not counts.get(ItemStatus.PENDING) and not counts.get(ItemStatus.RUNNING):
            failed = counts.get(ItemStatus.FAILED, 0)
            job.status, job.finished_at = JobStatus.DONE, now
            job.note = f"{failed} item(s) failed." if failed else ""
            job.save(update_fields=["status", "finished_at", "note"])
            return []
        room = job.concurrency - counts.get(ItemStatus.RUNNING, 0)
        if room <= 0:
            return []
        stage = _open_stage(job)
        pending = job.items.filter(status=ItemStatus.PENDING, stage=stage).order_by("attempts", "pk")
        return list(pending.values_list("pk", flat=True)[:room])


def _open_stage(job: Job) -> int | None:
    """The earliest stage with an item pending or running: only its items may start."""
    return job.items.filter(status__in=OPEN).order_by("stage").values_list("stage", flat=True).first()


def running_jobs() -> list[int]:
    return list(Job.objects.filter(status=JobStatus.RUNNING).values_list("pk", flat=True))


# --- Items -----------------------------------------------------------------------------------


def item_claim(*, item_id: int, now: datetime | None = None) -> JobItem | None:
    """Take a pending item to run (its attempt number goes up), if its job runs and has
    room; None otherwise (taken already, finished, paused, or full)."""
    now = now or timezone.now()
    with transaction.atomic():
        found = JobItem.objects.filter(pk=item_id).values_list("job_id", "stage").first()
        if found is None:
            return None
        job_id, stage = found
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status != JobStatus.RUNNING:
            return None
        if job.items.filter(status=ItemStatus.RUNNING).count() >= job.concurrency:
            return None
        if job.items.filter(status__in=OPEN, stage__lt=stage).exists():
            return None  # an earlier stage is not finished
        taken = JobItem.objects.filter(pk=item_id, status=ItemStatus.PENDING).update(
            status=ItemStatus.RUNNING,
            attempts=F("attempts") + 1,
            heartbeat_at=now,
            started_at=now,
            finished_at=None,
            reserved_usd=0,
        )
        if not taken:
            return None
        return JobItem.objects.select_related("job").get(pk=item_id)


def item_results(*, job_id: int, keys: list[str]) -> dict[str, dict | None]:
    """The results of the job's items with these keys: None for an item not done."""
    done = JobItem.objects.filter(job_id=job_id, key__in=keys, status=ItemStatus.DONE)
    found = dict(done.values_list("key", "result"))
    return {key: found.get(key) for key in keys}


def item_replay(*, item_id: int, prompt_hash: str) -> LLMCall | None:
    """A successful call this item already made with the same prompt and parameters (an
    earlier attempt that was cut short: a killed worker, a budget stop), reused instead of
    paying for it again."""
    return (
        LLMCall.objects.filter(job_item_id=item_id, prompt_hash=prompt_hash, error_kind="")
        .exclude(output="")
        .order_by("pk")
        .first()
    )


def item_heartbeat(*, item_id: int, attempt: int) -> None:
    JobItem.objects.filter(pk=item_id, status=ItemStatus.RUNNING, attempts=attempt).update(
        heartbeat_at=timezone.now()
    )


def _mine(item_id: int, attempt: int):
    """The item, while this attempt still holds it (the watchdog may have taken it back)."""
    return JobItem.objects.filter(pk=item_id, status=ItemStatus.RUNNING, attempts=attempt)


def item_finish(*, item_id: int, attempt: int, result: dict) -> bool:
    """The item is done with this result (JSON)."""
    result = json.loads(json.dumps(result, cls=DjangoJSONEncoder))
    return bool(
        _mine(item_id, attempt).update(
            status=ItemStatus.DONE,
            result=result,
            error="",
            reserved_usd=0,
            cost_usd=item_cost(item_id),
            finished_at=timezone.now(),
        )
    )


def item_fail(*, item_id: int, attempt: int, error: str, retryable: bool = False) -> str:
    """The attempt failed: "retry" (pending again, if attempts are left and it may help) or
    "failed"."""
    retry = retryable and attempt < settings.JOB_ITEM_ATTEMPTS
    _mine(item_id, attempt).update(
        status=ItemStatus.PENDING if retry else ItemStatus.FAILED,
        error=error[:2000],
        reserved_usd=0,
        cost_usd=item_cost(item_id),
        heartbeat_at=None,
        finished_at=None if retry else timezone.now(),
    )
    return "retry" if retry else "failed"


def item_release(*, item_id: int, attempt: int, status: str) -> None:
    """The job stopped under the item: cancelled with it, or pending again (a budget stop:
    the attempt does not count)."""
    now = timezone.now()
    if status == JobStatus.CANCELLED:
        fields: dict[str, Any] = {"status": ItemStatus.CANCELLED, "finished_at": now}
    else:
        fields = {
            "status": ItemStatus.PENDING,
            "attempts": Greatest(F("attempts") - 1, 0),
            "heartbeat_at": None,
        }
    _mine(item_id, attempt).update(reserved_usd=0, cost_usd=item_cost(item_id), **fields)


def item_cost(item_id: int) -> Decimal:
    total = LLMCall.objects.filter(job_item_id=item_id).aggregate(cost=Sum("cost_usd"))["cost"]
    return total or Decimal(0)


# --- The budget ------------------------------------------------------------------------------


def job_spent(job_id: int) -> Decimal:
    total = LLMCall.objects.filter(job_item__job_id=job_id).aggregate(cost=Sum("cost_usd"))["cost"]
    return total or Decimal(0)


def call_reserve(*, item_id: int, estimate: Decimal) -> str:
    """Before a call: "" if it may be made (its `estimate` is then held against the budget
    until it is recorded), else why not: "cancelled", or "budget" (the job stops with a
    note saying how far it got)."""
    with transaction.atomic():
        job_id = JobItem.objects.filter(pk=item_id).values_list("job_id", flat=True).first()
        job = Job.objects.select_for_update().get(pk=job_id)
        if job.status in (JobStatus.CANCELLED, JobStatus.BUDGET):
            return job.status
        if job.budget_usd is not None:
            spent = job_spent(job_id)
            held = job.items.exclude(pk=item_id).aggregate(held=Sum("reserved_usd"))["held"] or Decimal(0)
            if spent + held + estimate > job.budget_usd:
                job.status = JobStatus.BUDGET
                job.note = (
                    f"Stopped at ${spent:.4f} of ${job.budget_usd:.2f}: the next call could cost up to "
                    f"${estimate:.4f} (${held:.4f} more in flight). Raise the budget and resume to go on."
                )[:300]
                job.save(update_fields=["status", "note"])
                return JobStatus.BUDGET
        JobItem.objects.filter(pk=item_id).update(reserved_usd=estimate)
    return ""


def call_released(*, item_id: int, template: Any = None) -> None:
    """After a call was recorded: its estimate no longer held, its cost counted, its
    template marked as having produced data."""
    JobItem.objects.filter(pk=item_id).update(reserved_usd=0, cost_usd=item_cost(item_id))
    if getattr(template, "pk", None):
        templates.template_mark_used(template.pk)


# --- The watchdog ----------------------------------------------------------------------------


def stuck_items(*, now: datetime | None = None) -> int:
    """Put back running items whose worker stopped sending heartbeats (pending, or failed
    when their attempts are used up). Returns how many."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    stuck = JobItem.objects.filter(status=ItemStatus.RUNNING, heartbeat_at__lt=cutoff)
    count = 0
    for item_id, attempt in stuck.values_list("pk", "attempts"):
        item_fail(item_id=item_id, attempt=attempt, error="The worker running it stopped.", retryable=True)
        count += 1
    return count


# --- Progress --------------------------------------------------------------------------------


def _counts(job: Job) -> dict[str, int]:
    return dict(job.items.order_by().values_list("status").annotate(n=Count("id")).values_list("status", "n"))


def job_progress(job: Job) -> dict:
    """Items by status, the money spent and the estimated cost to finish (the mean cost of
    the done items times the items left)."""
    counts = _counts(job)
    total = sum(counts.values())
    done = counts.get(ItemStatus.DONE, 0)
    left = counts.get(ItemStatus.PENDING, 0) + counts.get(ItemStatus.RUNNING, 0)
    done_cost = job.items.filter(status=ItemStatus.DONE).aggregate(c=Sum("cost_usd"))["c"] or Decimal(0)
    to_finish = (done_cost / done * left) if done else None
    finished = done + counts.get(ItemStatus.FAILED, 0) + counts.get(ItemStatus.CANCELLED, 0)
    return {
        "status": job.status,
        "status_label": job.get_status_display(),
        "note": job.note,
        "total": total,
        "done": done,
        "failed": counts.get(ItemStatus.FAILED, 0),
        "cancelled": counts.get(ItemStatus.CANCELLED, 0),
        "pending": counts.get(ItemStatus.PENDING, 0),
        "running": counts.get(ItemStatus.RUNNING, 0),
        "percent": round(100 * finished / total) if total else 0,
        "spent_usd": f"{job_spent(job.pk):.4f}",
        "to_finish_usd": None if to_finish is None else f"{to_finish:.4f}",
        "budget_usd": None if job.budget_usd is None else f"{job.budget_usd:.2f}",
    }
