"""The periodic lease sweep runs in a real Celery worker over Redis."""

import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from participants.models import Participant
from participants.tasks import release_expired_leases
from tests.support.cast import Walker
from tests.support.servers import celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def wait_for(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.django_db(transaction=True)
def test_a_worker_times_out_participants_past_the_time_limit(questionnaire_study):
    late, on_time = Walker(questionnaire_study), Walker(questionnaire_study)
    late.enter()
    on_time.enter()
    Participant.objects.filter(prolific_pid=late.pid).update(expires_at=timezone.now() - timedelta(minutes=1))
    with celery_worker() as worker:
        release_expired_leases.delay()
        done = wait_for(lambda: Participant.objects.get(prolific_pid=late.pid).status == "timed_out")
        assert done, worker.stdout.read(4000) if worker.poll() is not None else "worker did not run the task"
    assert Participant.objects.get(prolific_pid=on_time.pid).status == "active"


def test_beat_schedules_the_sweep_every_minute():
    entry = settings.CELERY_BEAT_SCHEDULE["release-expired-leases"]
    assert entry["task"] == release_expired_leases.name
    assert entry["schedule"] == 60
