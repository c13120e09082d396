"""A generation job run by a real Celery worker against the fake model server on loopback;
the worker is killed mid-dialogue, the watchdog puts the item back, a new worker finishes
it, and the turns written before the kill are not asked for (nor paid) again."""

import signal
import time

import pytest

from debates.jobs import services, tasks
from debates.models import Dialogue, Job, JobItem, LLMCall
from devtools import fakellm
from tests.debates.generation.test_jobs import CASE, Model, new_job
from tests.support.servers import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]


def wait_for(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.fixture
def model_server():
    with fakellm.run_in_thread() as running:
        running.app.responder = Model()
        yield running


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_mid_dialogue_is_replaced_and_nothing_is_paid_twice(model_server, settings):
    from debates.demo import loader

    loader.demo_cases()
    env = {
        "LLM_BACKEND": "openai",
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "test-key",
        "LIVE_HEARTBEAT_SECONDS": "1",
    }
    # Turns take 0.4 s each, so the worker can be killed between two of them.
    job = new_job([1], attempts=1, generator_model="fake:ttft=400")
    with celery_worker(**env) as first:
        tasks.job_start(job.pk)
        dialogue_item = JobItem.objects.filter(job=job, key=f"dialogue:{CASE}:01")
        assert wait_for(
            lambda: LLMCall.objects.filter(job_item__in=dialogue_item, role="gen_turn").count() >= 2
        )
        first.send_signal(signal.SIGKILL)
        first.wait()
    before = set(LLMCall.objects.filter(job_item__in=dialogue_item).values_list("prompt_hash", flat=True))
    assert dialogue_item.get().status == JobItem.Status.RUNNING  # nobody finished it

    settings.LIVE_TURN_STUCK_S = 0  # the dead worker's heartbeat is old at once
    with celery_worker(**env):
        time.sleep(1.1)
        assert tasks.watchdog() == 1
        assert wait_for(lambda: Job.objects.get(pk=job.pk).status == Job.Status.DONE)

    item = dialogue_item.get()
    assert item.status == JobItem.Status.DONE and item.attempts == 2
    calls = LLMCall.objects.filter(job_item=item)
    hashes = list(calls.values_list("prompt_hash", flat=True))
    assert len(hashes) == len(set(hashes)) == 6 + 2  # six turns and two quality calls, once each
    assert before <= set(hashes)
    assert Dialogue.objects.get(slug=f"{CASE}-01-j{job.pk}").turns.count() == 6
    assert services.job_spent(job.pk) == sum(c.cost_usd for c in LLMCall.objects.filter(job_item__job=job))
