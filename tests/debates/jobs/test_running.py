"""Running jobs against the fake model server on loopback: a budget stop before overspending
and the resume after raising it, a 429 with Retry-After, invalid JSON answers, a worker that
died mid-item, pause / resume / cancel, the concurrency limit, and items that run once."""

import asyncio
from datetime import timedelta
from decimal import Decimal

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from debates.jobs import runner, services, tasks
from debates.models import Job, JobItem, LLMCall, PromptTemplate
from debates.streaming import db
from tests.debates.jobs import support

pytestmark = pytest.mark.django_db
Status = Job.Status
Item = JobItem.Status


def calls_of(job: Job):
    return LLMCall.objects.filter(job_item__job=job)


def statuses(job: Job) -> dict[str, str]:
    return dict(job.items.values_list("key", "status"))


def test_a_job_runs_every_item_once_and_records_each_call_with_its_item_template_and_cost(openai_backend):
    job = support.new_job(3)
    assert tasks.job_run_here(job.pk) == Status.DONE
    assert set(statuses(job).values()) == {Item.DONE}
    calls = calls_of(job)
    assert calls.count() == 3
    template = PromptTemplate.objects.get(name="test-echo")
    assert template.used_at is not None
    for call in calls:
        assert call.template_version == template.version == 1
        assert call.cost_usd == Decimal(12)  # 2 words in, 10 tokens out, at $1 a token
        assert call.job_item.cost_usd == Decimal(12)
    item = job.items.get(key="item-1")
    assert item.result == {"text": calls.get(job_item=item).output}
    job.refresh_from_db()
    assert job.finished_at is not None
    # A finished item is never run again.
    assert async_to_sync(runner.run_item)(item.pk, start=lambda _id: None) is None
    assert calls.count() == 3


def test_the_budget_stops_the_job_before_it_overspends_and_a_raised_budget_resumes_it(openai_backend):
    job = support.new_job(5, budget_usd=Decimal(40), concurrency=1)
    assert tasks.job_run_here(job.pk) == Status.BUDGET
    job.refresh_from_db()
    spent = services.job_spent(job.pk)
    # 3 calls of $12; the 4th could cost $14: 36 + 14 > 40.
    assert spent == Decimal(36) <= job.budget_usd
    assert "Stopped at $36.0000 of $40.00" in job.note
    assert sorted(statuses(job).values()) == [Item.DONE] * 3 + [Item.PENDING] * 2
    stopped = job.items.get(key="item-4")
    assert stopped.attempts == 0 and stopped.llm_calls.count() == 0  # not failed, not paid
    Job.objects.filter(pk=job.pk).update(budget_usd=Decimal(100))
    assert tasks.job_run_here(job.pk) == Status.DONE
    assert calls_of(job).count() == 5  # the done items were not asked again
    assert services.job_spent(job.pk) == Decimal(60)
    assert all(i.llm_calls.count() == 1 for i in job.items.all())


def test_the_budget_counts_the_calls_in_flight(openai_backend):
    job = support.new_job(3, budget_usd=Decimal(30), concurrency=3)
    services.job_start(job_id=job.pk)
    first, second, third = (services.item_claim(item_id=i.pk) for i in job.items.order_by("pk"))
    assert services.call_reserve(item_id=first.pk, estimate=support.ESTIMATE) == ""
    assert services.call_reserve(item_id=second.pk, estimate=support.ESTIMATE) == ""
    assert (
        services.call_reserve(item_id=third.pk, estimate=support.ESTIMATE) == Status.BUDGET
    )  # 14+14+14 > 30
    assert Job.objects.get(pk=job.pk).status == Status.BUDGET


def test_a_429_with_retry_after_is_waited_out_and_the_item_done(openai_backend):
    job = support.new_job(1, options=":fail=429:times=1:retry_after=0.2")
    assert tasks.job_run_here(job.pk) == Status.DONE
    call = calls_of(job).get()
    assert call.attempts == 2 and call.error_kind == ""
    assert job.items.get().attempts == 1


def test_a_retryable_error_after_the_adapters_retries_retries_the_item_later(openai_backend, settings):
    settings.LLM_MAX_RETRIES = 0
    job = support.new_job(1, options=":fail=503:times=2")
    assert tasks.job_run_here(job.pk) == Status.DONE
    item = job.items.get()
    assert item.attempts == 3 and item.status == Item.DONE
    assert list(item.llm_calls.order_by("pk").values_list("error_kind", flat=True)) == [
        "http_503",
        "http_503",
        "",
    ]


def test_an_item_fails_when_its_attempts_are_used_up_or_the_error_cannot_be_retried(openai_backend, settings):
    settings.LLM_MAX_RETRIES = 0
    settings.JOB_ITEM_ATTEMPTS = 2
    retryable = support.new_job(1, options=":fail=503:times=5")
    assert tasks.job_run_here(retryable.pk) == Status.DONE
    item = retryable.items.get()
    assert (item.status, item.attempts) == (Item.FAILED, 2)
    assert "http_503" in item.error
    assert "1 item(s) failed" in Job.objects.get(pk=retryable.pk).note
    final = support.new_job(1, options=":fail=400:times=5")
    tasks.job_run_here(final.pk)
    item = final.items.get()
    assert (item.status, item.attempts) == (Item.FAILED, 1)
    assert "http_400" in item.error


def answers(*texts):
    """A responder answering each request with the next text."""
    remaining = list(texts)

    def respond(body):
        return remaining.pop(0) if remaining else None

    return respond


def test_an_invalid_json_answer_is_asked_again_with_the_problem_then_used(openai_backend):
    openai_backend.app.responder = answers("I think yes", '```json\n{"answer": "yes"}\n```')
    job = support.new_job(1, as_json=True)
    assert tasks.job_run_here(job.pk) == Status.DONE
    item = job.items.get()
    assert item.result == {"answer": "yes"}
    first, second = item.llm_calls.order_by("pk")
    assert "not JSON" in second.messages[-1]["content"]
    assert second.messages[-2] == {"role": "assistant", "content": "I think yes"}


def test_an_invalid_json_answer_twice_fails_the_item_with_the_reason(openai_backend):
    openai_backend.app.responder = answers('{"answer": "maybe"}', '{"answer": "perhaps"}')
    job = support.new_job(1, as_json=True)
    assert tasks.job_run_here(job.pk) == Status.DONE
    item = job.items.get()
    assert item.status == Item.FAILED and item.attempts == 1
    assert "not usable twice" in item.error and "answer" in item.error and "perhaps" in item.error
    assert item.llm_calls.count() == 2


def test_an_item_left_running_by_a_killed_worker_is_requeued_and_done_items_are_not_rerun(
    openai_backend, django_capture_on_commit_callbacks, monkeypatch
):
    job = support.new_job(3, concurrency=1)
    services.job_start(job_id=job.pk)
    first, second, third = job.items.order_by("pk")
    assert async_to_sync(runner.run_item)(first.pk, start=lambda _id: None) == "done"
    # A worker takes the second item and dies: its heartbeat stops.
    assert services.item_claim(item_id=second.pk) is not None
    JobItem.objects.filter(pk=second.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    assert services.job_advance(job_id=job.pk) == []  # the job is full: the dead item holds its place
    started = []
    monkeypatch.setattr(tasks, "dispatch", started.append)
    with django_capture_on_commit_callbacks(execute=True):
        assert tasks.watchdog() == 1
    assert started == [third.pk]  # the job's one place, freed: items not tried yet come first
    assert JobItem.objects.get(pk=second.pk).status == Item.PENDING
    assert tasks.job_run_here(job.pk) == Status.DONE
    assert first.llm_calls.count() == 1  # not re-run, not re-paid
    assert services.job_spent(job.pk) == Decimal(36)
    assert JobItem.objects.get(pk=second.pk).attempts == 2


def test_an_attempt_the_watchdog_took_back_cannot_finish_the_item():
    job = support.new_job(1)
    services.job_start(job_id=job.pk)
    item = services.item_claim(item_id=job.items.get().pk)
    JobItem.objects.filter(pk=item.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    services.stuck_items()
    assert services.item_finish(item_id=item.pk, attempt=1, result={"late": True}) is False
    assert JobItem.objects.get(pk=item.pk).status == Item.PENDING


def test_pausing_lets_the_running_item_finish_and_starts_no_more_until_resumed(openai_backend):
    job = support.new_job(4, concurrency=1)

    async def pause_at_second(item):
        if item.key == "item-2":
            await db(services.job_pause)(job_id=item.job_id)

    support.HOOKS["before"] = pause_at_second
    assert tasks.job_run_here(job.pk) == Status.PAUSED
    assert statuses(job) == {"item-1": "done", "item-2": "done", "item-3": "pending", "item-4": "pending"}
    support.HOOKS.clear()
    assert tasks.job_run_here(job.pk) == Status.DONE  # resumed
    assert calls_of(job).count() == 4


def test_cancelling_ends_the_running_item_at_its_next_call_and_cancels_the_pending(openai_backend):
    job = support.new_job(4, concurrency=1)

    async def cancel_at_second(item):
        if item.key == "item-2":
            await db(tasks.job_cancel)(item.job_id)

    support.HOOKS["before"] = cancel_at_second
    assert tasks.job_run_here(job.pk) == Status.CANCELLED
    assert statuses(job) == {
        "item-1": "done",
        "item-2": "cancelled",
        "item-3": "cancelled",
        "item-4": "cancelled",
    }
    assert calls_of(job).count() == 1
    with pytest.raises(services.JobError, match="cancelled"):
        services.job_start(job_id=job.pk)


def test_at_most_concurrency_items_run_at_once(openai_backend):
    job = support.new_job(6, concurrency=3)
    running = {"now": 0, "most": 0}
    barrier = asyncio.Barrier(3)  # passes only when three items are running together

    async def count(item):
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        try:
            async with asyncio.timeout(30):
                await barrier.wait()
        finally:
            running["now"] -= 1

    support.HOOKS["before"] = count
    assert tasks.job_run_here(job.pk) == Status.DONE
    assert running["most"] == 3
    assert calls_of(job).count() == 6


def test_an_item_is_claimed_once_and_not_past_the_concurrency():
    job = support.new_job(3, concurrency=2)
    ids = services.job_start(job_id=job.pk)
    assert len(ids) == 2
    assert services.item_claim(item_id=ids[0]) is not None
    assert services.item_claim(item_id=ids[0]) is None  # a duplicate task
    third = job.items.exclude(pk__in=ids).get()
    assert services.item_claim(item_id=ids[1]) is not None
    assert services.item_claim(item_id=third.pk) is None  # the job is full
    services.job_pause(job_id=job.pk)
    assert services.job_advance(job_id=job.pk) == []


def test_a_job_whose_plan_is_empty_does_not_start():
    job = support.new_job(1)
    Job.objects.filter(pk=job.pk).update(config={**job.config, "items": 0})
    with pytest.raises(services.JobError, match="nothing to do"):
        services.job_start(job_id=job.pk)
    assert Job.objects.get(pk=job.pk).status == Status.DRAFT


def test_the_progress_counts_items_cost_and_the_estimate_to_finish(openai_backend):
    job = support.new_job(4, budget_usd=Decimal(30), concurrency=1)
    tasks.job_run_here(job.pk)  # two done ($24), then the budget stops it
    job.refresh_from_db()
    progress = services.job_progress(job)
    assert progress["done"] == 2 and progress["pending"] == 2 and progress["total"] == 4
    assert progress["percent"] == 50
    assert progress["spent_usd"] == "24.0000"
    assert progress["to_finish_usd"] == "24.0000"  # $12 a done item x 2 pending
    assert progress["status"] == Status.BUDGET


def test_run_job_runs_a_job_to_its_end(openai_backend):
    from io import StringIO

    from django.core.management import call_command

    job = support.new_job(2)
    out = StringIO()
    call_command("run_job", job.name, stdout=out)
    assert "2 done, 0 failed" in out.getvalue()
    assert Job.objects.get(pk=job.pk).status == Status.DONE


def test_calls_name_the_jobs_study_when_its_config_names_one(openai_backend):
    from tests.support.studies import build_study

    study = build_study([], status="draft")
    job = support.new_job(1)
    Job.objects.filter(pk=job.pk).update(config={**job.config, "study": study.slug})
    tasks.job_run_here(job.pk)
    assert calls_of(job).get().study_id == study.pk
