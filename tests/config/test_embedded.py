"""The embedded default's beat runs the periodic tasks in the server process."""

import asyncio
from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app
from config.embedded import EmbeddedBeat
from participants.models import Participant
from tests.support.cast import Walker


@pytest.mark.django_db(transaction=True)
def test_a_due_task_runs_in_the_process_and_a_task_not_yet_due_waits(questionnaire_study):
    w = Walker(questionnaire_study)
    w.enter()
    Participant.objects.update(expires_at=timezone.now() - timedelta(minutes=1))
    schedule = {
        "sweep": {"task": "participants.tasks.release_expired_leases", "schedule": 60},
        "watchdog": {"task": "debates.live.tasks.requeue_stuck_turns", "schedule": 3600},
    }
    beat = EmbeddedBeat(app, schedule)
    beat.last_run["sweep"] -= timedelta(seconds=61)  # the sweep's period is over; the watchdog's is not

    async def one_tick() -> float:
        wait = beat.tick()
        assert beat.running == {"sweep"}
        await asyncio.gather(*(t for t in asyncio.all_tasks() if t is not asyncio.current_task()))
        return wait

    wait = asyncio.run(one_tick())
    assert Participant.objects.get().status == Participant.Status.TIMED_OUT
    assert 0 < wait <= 60 and beat.running == set()
