"""The "pilot" job kind end to end: uvicorn on the test database, a pilot job run to its end in
this process (`job_run_here`, as `manage.py run_job` does), each item one simulated participant
walking the server over HTTP; the job's summary of the pages where they got stuck or failed
checks and of their outcomes; the LLM policy's calls through the item's budgeted calls."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

from debates.demo import loader
from debates.jobs import kinds, tasks
from debates.models import Job, LLMCall
from devtools import fakellm
from participants.models import Exclusion, Participant
from pilots import jobs, offline
from studies.models import Question, Study
from tests.support.servers import asgi_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    with asgi_server(DJANGO_ALLOW_ASYNC_UNSAFE="", STUDY_CACHE_SECONDS="0", LLM_BACKEND="offline") as base:
        yield base


def draft_mystery() -> Study:
    """The demo's design-A study as a draft; failed checks never end it (so every pilot ends
    with the completion code, whatever it guesses)."""
    study = loader.mystery_study()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT, attention_failures_to_end=20)
    study.refresh_from_db()
    return study


def test_a_pilot_job_walks_one_participant_an_item_and_sums_up_the_pages_with_problems(server):
    study = draft_mystery()
    check = Question.objects.get(step__study=study, key="attention_1")
    # The text asks for 'Strongly disagree' but only 'Agree' passes: nobody following it can pass.
    Question.objects.filter(pk=check.pk).update(expected_answer="Agree")
    job = jobs.pilot_job_create(study=study, base_url=server, participants=3, attentive=1.0, concurrency=2)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    items = list(job.items.order_by("key"))
    assert [i.key for i in items] == ["p001", "p002", "p003"]
    assert {i.status for i in items} == {"done"}
    pilots = Participant.objects.filter(study=study)
    assert set(pilots.values_list("is_pilot", flat=True)) == {True} and pilots.count() == 3
    for item in items:
        result = item.result
        assert result["stuck"] is None and result["pages"] > 5
        assert result["code"] == study.completion_code and result["status"] == "completed"
        assert {"position": check.step.position, "reason": "failed check attention_1"} in result[
            "failed_checks"
        ]
        assert result["pid"] == jobs.participant_pid(item)
    rows = kinds.get("pilot").summary(job)
    assert rows[0] == {
        "Page": f"step {check.step.position} {check.step.title!r} (attention_check)",
        "Stuck": 0,
        "Failed checks": 3,
        "Why": "failed check attention_1 ×3",
    }
    last = rows[-1]
    # Scripted pilots guess the recall check (they keep no memory of the debate): listed as such.
    recall = [row for row in rows if "(recall_check)" in row["Page"]]
    assert all("failed check recall (expected of pilots now and then" in row["Why"] for row in recall)
    assert last["Page"] == "All 3 simulated participants"
    assert last["Failed checks"] == sum(row["Failed checks"] for row in rows[:-1])
    assert f"Endings: {study.completion_code} ×3." in last["Why"] and "Statuses: completed ×3." in last["Why"]
    # Scripted pilots answer at once: the reading-speed cap excludes them, as expected of pilots.
    wpm = Exclusion.objects.filter(participant__in=pilots, reason="wpm", revoked_at__isnull=True).count()
    assert wpm == 3 and "wpm ×3 (expected of pilots" in last["Why"]
    assert not any("dialogue" in row["Page"] for row in rows[:-1])  # not a problem of the page
    study.refresh_from_db()
    assert study.status == Study.Status.DRAFT and study.entered_at is None


def test_an_item_run_again_resumes_its_participant(server):
    study = draft_mystery()
    job = jobs.pilot_job_create(study=study, base_url=server, participants=1)
    tasks.job_run_here(job.pk)
    item = job.items.get()
    # As after a lost worker: the item is pending again and runs once more.
    job.items.update(status="pending")
    Job.objects.filter(pk=job.pk).update(status=Job.Status.PAUSED)
    tasks.job_run_here(job.pk)
    item.refresh_from_db()
    assert item.status == "done" and item.attempts == 2
    assert Participant.objects.filter(study=study).count() == 1  # the same participant, not a second


@pytest.fixture
def model_server(settings):
    with fakellm.run_in_thread() as running:
        settings.LLM_BACKEND = "openai"
        settings.OPENAI_BASE_URL = running.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.LLM_MAX_RETRIES = 0
        yield running


def answer_as_offline(body: dict) -> str:
    prompt = body["messages"][1]["content"]
    fields = json.loads(prompt.split("The form's fields:\n", 1)[1].rsplit("\n\nAnswer with", 1)[0])
    return json.dumps(offline.answer(fields))


def test_the_llm_policy_calls_the_model_through_the_items_budgeted_calls(server, model_server):
    model_server.app.responder = answer_as_offline
    study = draft_mystery()
    job = jobs.pilot_job_create(
        study=study,
        base_url=server,
        participants=2,
        policy="llm",
        model="pilot-model",
        price_in="1",
        price_out="1",
        attentive=1.0,
    )
    Job.objects.filter(pk=job.pk).update(budget_usd=Decimal("0.0001"))  # not even one call
    assert tasks.job_run_here(job.pk) == Job.Status.BUDGET
    assert set(job.items.values_list("status", flat=True)) == {"pending"}
    assert not LLMCall.objects.filter(job_item__job=job).exists()
    Job.objects.filter(pk=job.pk).update(budget_usd=None)  # raised: resume
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    for item in job.items.all():
        calls = LLMCall.objects.filter(job_item=item)
        answered = [n for n in item.result["notes"] if n["result"] == "answered"]
        assert calls.count() == len(answered) > 3  # every page with fields asked once, each logged
        assert set(calls.values_list("role", "model", "study")) == {("pilot", "pilot-model", study.pk)}
        assert item.cost_usd > 0  # at the job's prices
        assert item.result["code"] == study.completion_code
    # The stopped attempt's participants were resumed, not left half-way beside new ones.
    assert Participant.objects.filter(study=study, is_pilot=True).count() == 2
    assert set(Participant.objects.filter(study=study).values_list("status", flat=True)) == {"completed"}
