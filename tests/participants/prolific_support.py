"""What the Prolific tests share: our fake Prolific on loopback (devtools/fakeprolific.py) with
the settings pointing at it, and a study whose participants are also on Prolific's side.

A test module uses the fixtures `prolific_server` and `fake` by importing them:
`from tests.participants.prolific_support import fake_fixture, prolific_server_fixture  # noqa: F401`
(and `paid_fixture`: a participant who completed and was approved on Prolific)."""

from __future__ import annotations

import pytest

from devtools.fakeprolific import FakeProlific, run_in_thread
from participants import prolific
from participants.models import Participant
from studies.models import Study
from tests.support.cast import Walker


@pytest.fixture(name="prolific_server")
def prolific_server_fixture(settings):
    """The fake Prolific, and PROLIFIC_API_TOKEN / PROLIFIC_API_URL set to reach it."""
    with run_in_thread() as server:
        settings.PROLIFIC_API_TOKEN = server.app.token
        settings.PROLIFIC_API_URL = server.api_url
        settings.PROLIFIC_MAX_RETRIES = 2
        yield server


@pytest.fixture(name="fake")
def fake_fixture(prolific_server) -> FakeProlific:
    return prolific_server.app


def on_prolific(fake: FakeProlific, study: Study, *, steps: int = 0, status: str = "ACTIVE") -> Walker:
    """A participant who took a place on Prolific (their submission, keyed by their SESSION_ID)
    and entered the study through its link, then answered `steps` pages."""
    if study.prolific_study_id not in fake.studies:
        fake.study_add(study.prolific_study_id)
    walker = Walker(study)
    walker.enter()
    for _ in range(steps):
        walker.submit()
    participant = Participant.objects.get(study=study, prolific_pid=walker.pid)
    fake.submission_add(
        study.prolific_study_id, participant_id=walker.pid, id=participant.prolific_session_id, status=status
    )
    return walker


def participant_of(walker: Walker) -> Participant:
    return Participant.objects.get(study=walker.study, prolific_pid=walker.pid)


def submission_of(fake: FakeProlific, walker: Walker) -> dict:
    return fake.submissions[participant_of(walker).prolific_session_id]


@pytest.fixture(name="paid")
def paid_fixture(fake: FakeProlific, questionnaire_study) -> Participant:
    """A participant who completed, approved on Prolific, seen by a sync."""
    walker = on_prolific(fake, questionnaire_study)
    walker.walk(answers={"Page two": {"check_1": "Disagree"}})
    fake.submission_set(submission_of(fake, walker)["id"], "APPROVED")
    prolific.prolific_sync(study=questionnaire_study)
    return participant_of(walker)
