"""Two-stage studies on our fake Prolific: a screening study's groups become participant groups, a
main study's draft is published to one group and keeps sister studies' participants out, a
participant entering the main study brings their screening answers and group, and a sister
study's participant is refused at the door."""

import secrets

import pytest
from django.utils import timezone

from devtools.fakeprolific import FakeProlific
from participants import prolific, prolific_groups
from participants.models import Participant, ProlificGroup, Response
from participants.prolific import Draft
from tests.participants.prolific_support import fake_fixture, prolific_server_fixture  # noqa: F401
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, QUESTIONNAIRE_STEPS, build_study

Status = Participant.Status


def pid() -> str:
    return secrets.token_hex(12)


def screened(study, *, group: str, status: str = Status.COMPLETED, excluded: bool = False, who: str = ""):
    """Someone who took the screening study and was placed in `group`, with their answers."""
    now = timezone.now()
    person = Participant.objects.create(
        study=study,
        prolific_pid=who or pid(),
        status=status,
        group=group,
        excluded=excluded,
        started_at=now,
        last_seen_at=now,
        expires_at=now,
    )
    for key, value in (("belief", "5"), ("screening_group", group)):
        Response.objects.create(
            participant=person, position=2, step_kind="screening", key=key, value=value, created_at=now
        )
    return person


@pytest.fixture
def screening(db):
    return build_study([CONSENT_STEP, DEBRIEF_STEP], prolific_study_id="b" * 24, status="closed")


@pytest.mark.django_db
class TestMakingParticipantGroups:
    def test_each_screening_group_becomes_a_prolific_group_of_its_completed_members(
        self, fake: FakeProlific, screening
    ):
        high = [screened(screening, group="high").prolific_pid for _ in range(2)]
        low = screened(screening, group="low").prolific_pid
        screened(screening, group="high", excluded=True)
        screened(screening, group="high", status=Status.ACTIVE)
        made = {g.label: g for g in prolific_groups.prolific_groups_make(study=screening)}
        assert fake.groups[made["high"].prolific_group_id]["members"] == high
        assert fake.groups[made["low"].prolific_group_id]["members"] == [low]
        assert made["high"].members == 2

    def test_making_them_again_adds_the_newly_completed_to_the_same_group(
        self, fake: FakeProlific, screening
    ):
        first = screened(screening, group="high").prolific_pid
        prolific_groups.prolific_groups_make(study=screening)
        later = screened(screening, group="high").prolific_pid
        prolific_groups.prolific_groups_make(study=screening)
        row = ProlificGroup.objects.get(study=screening, label="high")
        assert len(fake.groups) == 1
        assert fake.groups[row.prolific_group_id]["members"] == [first, later]


@pytest.mark.django_db
class TestTheMainStudysDraft:
    def test_the_draft_carries_the_group_filter_and_the_sister_exclusion(self, fake: FakeProlific, screening):
        screened(screening, group="high")
        high = {g.label: g for g in prolific_groups.prolific_groups_make(study=screening)}["high"]
        sister = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="c" * 24, status="closed")
        main = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft")
        prolific_groups.recruitment_set(study=main, group=high, sisters=[sister])
        prolific.prolific_study_create(
            study=main, draft=Draft(places=10, reward_cents=300, description="Judge a debate.")
        )
        main.refresh_from_db()
        assert fake.studies[main.prolific_study_id]["filters"] == [
            {"filter_id": "participant_group_allowlist", "selected_values": [high.prolific_group_id]},
            {"filter_id": "previous_studies", "selected_values": ["c" * 24]},
        ]
        assert main.recruitment.source == screening


@pytest.mark.django_db
class TestEnteringTheMainStudy:
    def test_a_participant_brings_their_screening_answers_and_group_once(self, screening):
        origin = screened(screening, group="high")
        ProlificGroup.objects.create(study=screening, label="high", prolific_group_id="d" * 24)
        main = build_study(QUESTIONNAIRE_STEPS)
        prolific_groups.recruitment_set(study=main, group=ProlificGroup.objects.get(study=screening))
        Walker(main, prolific_pid=origin.prolific_pid).enter()
        person = Participant.objects.get(study=main, prolific_pid=origin.prolific_pid)
        carried = {r.key: r.value for r in person.responses.filter(position=0)}
        assert carried == {"belief": "5", "screening_group": "high"}
        assert person.group == "high"
        assert prolific_groups.screening_carry_over(participant=person, source=screening) == 0
        Walker(main, prolific_pid=origin.prolific_pid).enter()  # a second visit
        assert person.responses.filter(position=0).count() == 2

    def test_a_sister_studys_participant_is_refused_with_a_clear_page_and_no_place(self, screening):
        sister = screened(screening, group="high")
        main = build_study(QUESTIONNAIRE_STEPS)
        prolific_groups.recruitment_set(study=main, group=None, sisters=[screening])
        walker = Walker(main, prolific_pid=sister.prolific_pid)
        response = walker.client.get(
            f"/s/{main.slug}/?PROLIFIC_PID={sister.prolific_pid}&STUDY_ID={'a' * 24}&SESSION_ID={pid()}"
        )
        assert response.status_code == 400
        assert "already taken part in a related study" in response.content.decode()
        assert not Participant.objects.filter(study=main).exists()
        Walker(main).enter()  # anyone else comes in


def test_the_prolific_page_offers_groups_for_a_screening_study_and_the_draft_form_the_new_filters(
    experimenter, claim_study
):
    from django.urls import reverse

    page = experimenter.get(reverse("admin:studies_study_prolific", args=[claim_study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Make Prolific participant groups" in html
    assert "Only participants of this group" in html and "Exclude participants of these studies" in html
