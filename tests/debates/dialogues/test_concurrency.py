"""Hundreds of simultaneous arrivals, each on its own thread and database connection.

On PostgreSQL the dialogue slots are row-locked; on SQLite the IMMEDIATE transactions take
the write lock. Either way no dialogue may be over-filled and no PROLIFIC_PID may get a
second participant.
"""

from __future__ import annotations

from collections import Counter

import pytest
from django.test import Client

from debates.demo import loader
from debates.models import DialogueAssignment
from participants.models import Participant
from tests.support.cast import Walker, entry_url, pid
from tests.support.threads import patient_sqlite, pool_size, run_threads

ARRIVALS = 200


def arrive_and_get_a_dialogue(study) -> None:
    w = Walker(study)
    w.enter()
    w.walk(stop_before="The debate")


def check_places(study, target: int, arrivals: int) -> None:
    fill = Counter(
        DialogueAssignment.objects.filter(participant__study=study).values_list("dialogue_id", flat=True)
    )
    slots = study.study_dialogues.count()
    assert max(fill.values()) <= target, fill
    assert sum(fill.values()) == min(arrivals, slots * target)
    assert Participant.objects.filter(study=study).count() == arrivals
    full = Participant.objects.filter(study=study, status=Participant.Status.STUDY_FULL).count()
    assert full == max(0, arrivals - slots * target)
    # Balanced: once every slot is full nobody differs; before that, by at most one.
    assert max(fill.values()) - min(fill.values()) <= 1


def scenario_many_arrivals(target: int) -> None:
    study = loader.mystery_study(target_per_item=target)
    errors = run_threads(lambda n: arrive_and_get_a_dialogue(study), ARRIVALS)
    assert not errors, errors[0]
    check_places(study, target, ARRIVALS)


def scenario_one_pid_many_tabs() -> None:
    study = loader.mystery_study()
    same = pid()
    locations: list[str] = []

    def open_link(n: int) -> None:
        response = Client().get(entry_url(study, same))
        assert response.status_code == 302
        locations.append(response["Location"])

    errors = run_threads(open_link, 50)
    assert not errors, errors[0]
    assert Participant.objects.filter(study=study, prolific_pid=same).count() == 1
    assert len(set(locations)) == 1


def scenario_one_participant_many_submits() -> None:
    """Fifty tabs of one participant submit the consent page at the same instant."""
    study = loader.mystery_study()
    w = Walker(study)
    w.enter()
    _, consent = w.page()
    from devtools.formparse import default_answers

    codes: list[int] = []
    errors = run_threads(
        lambda n: codes.append(w.client.post(w.url, default_answers(consent)).status_code), 50
    )
    assert not errors, errors[0]
    p = Participant.objects.get(prolific_pid=w.pid)
    assert p.position == 2
    assert p.responses.count() == 1
    assert p.visits_log.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
class TestOnPostgres:
    def test_200_simultaneous_arrivals_never_overfill_a_dialogue(self):
        with pool_size(48):
            scenario_many_arrivals(target=15)  # 10 dialogues × 15 = 150 places for 200 people

    def test_simultaneous_first_visits_of_one_pid_make_one_participant(self):
        with pool_size(48):
            scenario_one_pid_many_tabs()

    def test_simultaneous_submissions_of_one_step_store_it_once(self):
        with pool_size(48):
            scenario_one_participant_many_submits()


@pytest.mark.sqlite
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
class TestOnSqlite:
    def test_200_simultaneous_arrivals_never_overfill_a_dialogue(self):
        with patient_sqlite():
            scenario_many_arrivals(target=15)

    def test_simultaneous_first_visits_of_one_pid_make_one_participant(self):
        with patient_sqlite():
            scenario_one_pid_many_tabs()

    def test_simultaneous_submissions_of_one_step_store_it_once(self):
        with patient_sqlite():
            scenario_one_participant_many_submits()
