"""Two-stage studies on our fake Prolific: a screening study's groups become participant groups, a
main study's draft is published to one group and keeps sister studies' participants out, a
participant entering the main study brings their screening answers and group, and a sister
study's participant is refused at the door."""

import re
import secrets

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.utils import timezone

from devtools.fakeprolific import FakeProlific
from participants import prolific, prolific_groups, services
from participants.models import Exclusion, Participant, ProlificGroup, Response
from participants.prolific import Draft
from studies.models import Study
from studies.services import _study_cache
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
class TestMembersExcludedLater:
    """Someone placed in a group, then excluded, must not stay eligible for the main study."""

    def exclude(self, client, *people, reason: str = "copied the free-text answers"):
        data = {"action": "exclude_manually", "confirm": "yes", "reason": reason}
        data[ACTION_CHECKBOX_NAME] = [p.pk for p in people]
        return client.post("/admin/participants/participant/", data, follow=True)

    def test_an_experimenters_exclusion_takes_them_out_of_the_prolific_group_at_once(
        self, fake: FakeProlific, screening, experimenter
    ):
        stays, leaves = screened(screening, group="high"), screened(screening, group="high")
        other = screened(screening, group="low")
        made = {g.label: g for g in prolific_groups.prolific_groups_make(study=screening)}
        page = self.exclude(experimenter, leaves, other)
        assert "Removed 2 of them from their participant group on Prolific" in page.content.decode()
        assert fake.groups[made["high"].prolific_group_id]["members"] == [stays.prolific_pid]
        assert fake.groups[made["low"].prolific_group_id]["members"] == []
        assert ProlificGroup.objects.get(pk=made["high"].pk).members == 1
        assert Participant.objects.get(pk=leaves.pk).excluded

    def test_making_the_groups_again_takes_out_members_excluded_since_by_any_rule(
        self, fake: FakeProlific, screening
    ):
        stays, leaves = screened(screening, group="high"), screened(screening, group="high")
        row = prolific_groups.prolific_groups_make(study=screening)[0]
        services.exclusion_add(participant=leaves, reason=Exclusion.Reason.MANUAL, detail="too fast")
        prolific_groups.prolific_groups_make(study=screening)
        assert fake.groups[row.prolific_group_id]["members"] == [stays.prolific_pid]

    def test_when_prolific_fails_the_exclusion_stays_and_making_the_groups_removes_them(
        self, fake: FakeProlific, screening, experimenter
    ):
        stays, leaves = screened(screening, group="high"), screened(screening, group="high")
        row = prolific_groups.prolific_groups_make(study=screening)[0]
        fake.script("DELETE", r"/participant-groups/", status=400)  # refused once (not retried)
        page = self.exclude(experimenter, leaves).content.decode()
        assert "removing them from their participant group failed" in page
        assert Participant.objects.get(pk=leaves.pk).excluded
        assert leaves.prolific_pid in fake.groups[row.prolific_group_id]["members"]
        prolific_groups.prolific_groups_make(study=screening)
        assert fake.groups[row.prolific_group_id]["members"] == [stays.prolific_pid]


@pytest.mark.django_db
class TestTheMainStudysDraft:
    def test_the_draft_carries_the_group_filter_and_the_sister_exclusion(self, fake: FakeProlific, screening):
        screened(screening, group="high")
        high = {g.label: g for g in prolific_groups.prolific_groups_make(study=screening)}["high"]
        sister = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="c" * 24, status="closed")
        fake.study_add(sister.prolific_study_id, status="COMPLETED")
        main = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft")
        prolific_groups.recruitment_set(study=main, group=high, sisters=[sister])
        prolific.prolific_study_create(
            study=main, draft=Draft(places=10, reward_cents=300, description="Judge a debate.")
        )
        main.refresh_from_db()
        assert fake.studies[main.prolific_study_id]["filters"] == [
            {"filter_id": "participant_group_allowlist", "selected_values": [high.prolific_group_id]},
            {"filter_id": "previous_studies_blocklist", "selected_values": ["c" * 24]},
        ]
        assert main.recruitment.source == screening

    def test_prolific_refuses_a_filter_name_it_does_not_know_and_a_study_it_has_not_got(
        self, fake: FakeProlific, screening
    ):
        """What the fake checks, so the adapter's names cannot drift again: the bare
        `previous_studies` (the name Rostrum first sent) is not one of Prolific's filter ids."""
        api = prolific.client()
        base = prolific.study_payload(
            screening, Draft(places=5, reward_cents=100, description="Judge a debate."), "rostrum-x"
        )
        for filters, said in (
            ([{"filter_id": "previous_studies", "selected_values": ["b" * 24]}], "No filter with id"),
            ([{"filter_id": "previous_studies_blocklist", "selected_values": ["e" * 24]}], "No such study"),
        ):
            with pytest.raises(prolific.ProlificError, match=said):
                api.study_create({**base, "filters": filters})
        assert len(fake.studies) == 0


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

    def test_a_sister_named_while_the_study_runs_is_refused_once_the_study_is_read_again(
        self, screening, settings
    ):
        """The admission checks are read with the cached study row: a sister named in the admin
        while participants arrive counts from the next read of the row (STUDY_CACHE_SECONDS)."""
        sister = screened(screening, group="high")
        main = build_study(QUESTIONNAIRE_STEPS)
        Walker(main).enter()  # the study is being served: its row (and admission) cached
        prolific_groups.recruitment_set(study=main, group=None, sisters=[screening])
        _study_cache.clear()  # what STUDY_CACHE_SECONDS does in a running server
        response = Walker(main).client.get(
            f"/s/{main.slug}/?PROLIFIC_PID={sister.prolific_pid}&STUDY_ID={'a' * 24}&SESSION_ID={pid()}"
        )
        assert response.status_code == 400
        assert not Participant.objects.filter(study=main, prolific_pid=sister.prolific_pid).exists()


@pytest.mark.django_db
class TestASecondWave:
    """A study duplicated to run again (a second wave, a fixed design) let the first wave's people
    in: nothing in Rostrum kept them out, nor said that Prolific's exclusion was the researcher's
    to set (the analysis QA's study path)."""

    def enter(self, study, who: str):
        return Walker(study, prolific_pid=who).client.get(
            f"/s/{study.slug}/?PROLIFIC_PID={who}&STUDY_ID={study.prolific_study_id}&SESSION_ID={pid()}"
        )

    def test_the_first_waves_participants_are_refused_at_the_second_and_on_prolific(self, fake: FakeProlific):
        from studies.services import study_duplicate, study_set_status

        first = build_study(QUESTIONNAIRE_STEPS)
        fake.study_add(first.prolific_study_id, status="ACTIVE")
        took_part = Walker(first)
        took_part.enter()
        second = study_duplicate(study=first, slug=f"{first.slug}-v2")
        codes = {"completion_code": "C2", "failed_check_code": "F2", "no_consent_code": "N2"}
        Study.objects.filter(pk=second.pk).update(screened_out_code="S2", **codes)
        prolific.prolific_study_create(
            study=second, draft=Draft(places=10, reward_cents=300, description="Judge a debate.")
        )
        second.refresh_from_db()
        assert fake.studies[second.prolific_study_id]["filters"] == [
            {"filter_id": "previous_studies_blocklist", "selected_values": [first.prolific_study_id]}
        ]
        study_set_status(study=second, status=Study.Status.LIVE)
        refused = self.enter(second, took_part.pid)
        assert refused.status_code == 400
        assert "already taken part in a related study" in refused.content.decode()
        assert not Participant.objects.filter(study=second).exists()
        newcomer = pid()
        assert self.enter(second, newcomer).status_code == 302  # someone new comes in
        _study_cache.clear()  # and both ways: refused at the first wave, still running
        assert self.enter(first, newcomer).status_code == 400

    def test_a_main_studys_copy_keeps_its_screening_group_and_sisters(self, screening):
        from studies.services import study_duplicate

        origin = screened(screening, group="high")
        group = ProlificGroup.objects.create(study=screening, label="high", prolific_group_id="d" * 24)
        sister = build_study(QUESTIONNAIRE_STEPS, status="closed")
        main = build_study(QUESTIONNAIRE_STEPS)
        prolific_groups.recruitment_set(study=main, group=group, sisters=[sister])
        copy = study_duplicate(study=main, slug=f"{main.slug}-v2")
        assert copy.recruitment.group == group and copy.recruitment.source == screening
        assert set(copy.recruitment.sisters.all()) == {main, sister}
        Study.objects.filter(pk=copy.pk).update(status=Study.Status.LIVE)
        Walker(copy, prolific_pid=origin.prolific_pid).enter()
        carried = Participant.objects.get(study=copy, prolific_pid=origin.prolific_pid)
        assert carried.group == "high"

    def test_the_researcher_sees_who_is_kept_out_and_can_let_them_in(self, experimenter):
        from django.urls import reverse

        from studies.services import study_duplicate

        first = build_study(QUESTIONNAIRE_STEPS)
        took_part = Walker(first)
        took_part.enter()
        second = study_duplicate(study=first, slug=f"{first.slug}-v2")
        page = reverse("admin:studies_study_prolific", args=[second.pk])
        html = experimenter.get(page).content.decode()
        assert f"Kept out: {first.title} ({first.slug})." in html
        assert re.search(rf'<input type="checkbox" name="sisters" value="{first.pk}"[^>]*checked', html)
        saved = experimenter.post(
            page, {"action": "recruitment", "sisters": []}, follow=True
        ).content.decode()
        assert "Saved who may take part." in saved and "Kept out: nobody." in saved
        Study.objects.filter(pk=second.pk).update(status=Study.Status.LIVE)
        _study_cache.clear()
        Walker(second, prolific_pid=took_part.pid).enter()
        assert Participant.objects.filter(study=second, prolific_pid=took_part.pid).exists()
        first_page = experimenter.get(
            reverse("admin:studies_study_prolific", args=[first.pk])
        ).content.decode()
        assert "Kept out: nobody." in first_page and "Refused here too" not in first_page

    def test_a_tampered_form_changes_nothing(self, experimenter):
        from django.urls import reverse

        from studies.services import study_duplicate

        first = build_study(QUESTIONNAIRE_STEPS)
        second = study_duplicate(study=first, slug=f"{first.slug}-v2")
        page = reverse("admin:studies_study_prolific", args=[second.pk])
        response = experimenter.post(page, {"action": "recruitment", "sisters": ["999999", "x"]})
        assert response.status_code == 200 and "is not a valid value" in response.content.decode()
        assert list(second.recruitment.sisters.all()) == [first]
        response = experimenter.post(page, {"action": "recruitment", "sisters": ["999999"]})
        assert "Select a valid choice" in response.content.decode()
        response = experimenter.post(page, {"action": "recruitment", "sisters": [str(second.pk)]})
        assert "Select a valid choice" in response.content.decode()  # not its own sister
        assert list(second.recruitment.sisters.all()) == [first]


def test_the_prolific_page_offers_groups_for_a_screening_study_and_the_draft_form_the_new_filters(
    experimenter, claim_study
):
    from django.urls import reverse

    page = experimenter.get(reverse("admin:studies_study_prolific", args=[claim_study.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "Make Prolific participant groups" in html
    assert "Only participants of this group" in html and "Keep out participants of" in html
