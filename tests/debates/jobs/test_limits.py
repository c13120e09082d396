"""Per-endpoint limits (JOB_MODEL_LIMITS): calls in flight to one model across jobs, and
calls per window, against the fake model server on loopback."""

import asyncio
import time
from collections import Counter

import pytest
from asgiref.sync import async_to_sync
from django.core.exceptions import ImproperlyConfigured

from debates.jobs import limits, tasks
from debates.models import Job
from tests.debates.jobs import support

pytestmark = pytest.mark.django_db


def test_limits_are_read_per_model_with_a_default_and_a_bad_pair_is_refused():
    parsed = limits.parse("gpt-4o=8/500, fake:ttft=200=1/0, *=4/60")
    assert parsed["gpt-4o"] == limits.Limit(8, 500)
    assert parsed["fake:ttft=200"] == limits.Limit(1, 0)
    assert parsed["*"] == limits.Limit(4, 60)
    for bad in ("gpt-4o", "=1/2", "m=x/1", "m=-1/0"):
        with pytest.raises(ImproperlyConfigured):
            limits.parse(bad)


def test_two_jobs_on_one_model_share_its_concurrency_limit(openai_backend, settings):
    jobs = [support.new_job(3, options=":ttft=150", concurrency=3) for _ in range(2)]
    jobs[1].config["model"] = jobs[0].config["model"]
    jobs[1].save()
    model = jobs[0].config["model"]

    async def both():
        await asyncio.gather(*(tasks._run_all(job.pk) for job in jobs))

    openai_backend.app.stats.reset()
    async_to_sync(both)()
    unlimited = openai_backend.app.stats.snapshot(timings=False)["totals"]["max_in_flight"]
    assert unlimited > 1

    settings.JOB_MODEL_LIMITS = f"{model}=1/0"
    again = [support.new_job(3, concurrency=3) for _ in range(2)]
    for job in again:
        job.config["model"] = model
        job.save()
    jobs[:] = again
    openai_backend.app.stats.reset()
    async_to_sync(both)()
    assert openai_backend.app.stats.snapshot(timings=False)["totals"]["max_in_flight"] == 1
    assert all(Job.objects.get(pk=j.pk).status == Job.Status.DONE for j in again)


def test_calls_past_the_rate_wait_for_the_next_window(settings):
    settings.JOB_MODEL_LIMITS = "rated=0/2"
    settings.JOB_RATE_WINDOW_S = 1
    started: list[float] = []

    async def call():
        async with limits.endpoint_place("rated"):
            started.append(time.time())

    async def five():
        # Start just after a second begins: the limiter reads the clock before a call's own
        # timestamp, so a start at a second's end put two calls of one window in the next.
        await asyncio.sleep(1.05 - time.time() % 1)
        await asyncio.gather(*(call() for _ in range(5)))

    async_to_sync(five)()
    per_window = Counter(int(t) for t in started)
    assert len(started) == 5 and max(per_window.values()) <= 2 and len(per_window) >= 3


def test_a_model_without_a_limit_is_not_held(settings):
    settings.JOB_MODEL_LIMITS = "other=1/1"

    async def many():
        async def one():
            async with limits.endpoint_place("free"):
                await asyncio.sleep(0)

        await asyncio.gather(*(one() for _ in range(20)))

    async_to_sync(many)()
