"""A Rostrum study becomes a draft study on our fake Prolific (its link with the three
placeholders, its codes with their actions, places, times, reward), then is published, paused,
resumed and stopped; a double click or a creation cut short never makes a second draft."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from devtools.fakeprolific import FakeProlific
from participants import prolific
from participants.models import ProlificStudy
from participants.prolific import Draft, ProlificError
from studies.models import Study
from studies.services import study_set_status
from tests.participants.prolific_support import fake_fixture, prolific_server_fixture  # noqa: F401
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, QUESTIONNAIRE_STEPS, build_study

SCREENING_STEP = {
    "kind": "screening",
    "title": "About your views",
    "config": {"score_items": "belief", "groups": "low: 1 - 2\nhigh: 4 - 5"},
    "questions": [{"key": "belief", "kind": "likert", "text": "Agree?", "options": list("12345")}],
}


def draft(**changes) -> Draft:
    return Draft(**{"places": 40, "reward_cents": 250, "description": "Judge a debate.", **changes})


@pytest.fixture
def draft_study(db) -> Study:
    """A study in draft, not on Prolific yet."""
    return build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", status="draft", estimated_minutes=12)


@pytest.mark.django_db
class TestCreatingTheDraft:
    def test_the_draft_carries_the_link_codes_places_times_and_reward(self, fake: FakeProlific, draft_study):
        row = prolific.prolific_study_create(study=draft_study, draft=draft())
        draft_study.refresh_from_db()
        sent = fake.studies[draft_study.prolific_study_id]
        assert row.status == "UNPUBLISHED" and sent["status"] == "UNPUBLISHED"
        assert sent["external_study_url"] == (
            f"http://127.0.0.1:8000/s/{draft_study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
            "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
        )
        codes = {
            c["code"]: (c["code_type"], [a["action"] for a in c["actions"]]) for c in sent["completion_codes"]
        }
        assert codes == {
            "CDONE": ("COMPLETED", ["MANUALLY_REVIEW"]),
            "CFAIL": ("FAILED_ATTENTION_CHECK", ["MANUALLY_REVIEW"]),
            "CNOCON": ("NO_CONSENT", ["REQUEST_RETURN"]),
        }  # no screening step: the screened-out code is not offered
        assert (sent["total_available_places"], sent["reward"], sent["estimated_completion_time"]) == (
            40,
            250,
            12,
        )
        assert sent["maximum_allowed_time"] == 21  # 2 + 12 + 2·√12, rounded up
        assert sent["prolific_id_option"] == "url_parameters"

    def test_a_screening_study_pays_its_screen_outs_a_fixed_reward(self, fake: FakeProlific, db):
        study = build_study(
            [CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], prolific_study_id="", status="draft"
        )
        with pytest.raises(ValidationError, match="fixed screen-out reward"):
            prolific.prolific_study_create(study=study, draft=draft())
        prolific.prolific_study_create(
            study=study, draft=draft(screen_out_reward_cents=20, screen_out_slots=100)
        )
        study.refresh_from_db()
        codes = {c["code"]: c for c in fake.studies[study.prolific_study_id]["completion_codes"]}
        assert codes["CSCREEN"]["code_type"] == "FIXED_SCREENOUT"
        assert codes["CSCREEN"]["actions"] == [
            {"action": "FIXED_SCREEN_OUT_PAYMENT", "fixed_screen_out_reward": 20, "slots": 100}
        ]

    def test_a_steps_own_code_is_offered_to_prolific_too(self, fake: FakeProlific, draft_study):
        step = draft_study.steps.get(position=1)
        step.config = {**step.config, "partner_left_code": "CLEFT"}
        step.save()
        assert ("CLEFT", "OTHER") in [
            (c["code"], c["code_type"]) for c in prolific.completion_codes(draft_study)
        ]

    def test_the_prolific_id_becomes_the_studys_study_id(self, fake: FakeProlific, draft_study):
        prolific.prolific_study_create(study=draft_study, draft=draft())
        draft_study.refresh_from_db()
        assert len(draft_study.prolific_study_id) == 24 and draft_study.prolific_study_id in fake.studies

    def test_a_second_click_makes_no_second_draft(self, fake: FakeProlific, draft_study):
        prolific.prolific_study_create(study=draft_study, draft=draft())
        again = Study.objects.get(pk=draft_study.pk)
        with pytest.raises(ValidationError, match="already linked"):
            prolific.prolific_study_create(study=again, draft=draft())
        assert len(fake.studies) == 1

    def test_a_creation_cut_short_is_found_again_instead_of_made_twice(self, fake: FakeProlific, draft_study):
        fake.script("POST", r"^/studies/$", drop=True)  # Prolific made it; the answer was lost
        with pytest.raises(ProlificError):
            prolific.prolific_study_create(study=draft_study, draft=draft())
        assert len(fake.studies) == 1 and not Study.objects.get(pk=draft_study.pk).prolific_study_id
        with pytest.raises(ValidationError, match="being created"):  # maybe still running: wait
            prolific.prolific_study_create(study=Study.objects.get(pk=draft_study.pk), draft=draft())
        ProlificStudy.objects.update(created_at=timezone.now() - timedelta(minutes=5))
        prolific.prolific_study_create(study=Study.objects.get(pk=draft_study.pk), draft=draft())
        assert len(fake.studies) == 1
        assert Study.objects.get(pk=draft_study.pk).prolific_study_id == next(iter(fake.studies))

    def test_a_draft_prolific_refused_can_be_made_again_at_once(self, fake: FakeProlific, draft_study):
        fake.script("POST", r"^/studies/$", status=400)
        with pytest.raises(ProlificError):
            prolific.prolific_study_create(study=draft_study, draft=draft())
        assert not ProlificStudy.objects.exists()
        prolific.prolific_study_create(study=Study.objects.get(pk=draft_study.pk), draft=draft())
        assert len(fake.studies) == 1

    def test_a_frozen_study_is_not_given_a_new_draft(self, fake: FakeProlific, db):
        study = build_study(QUESTIONNAIRE_STEPS, prolific_study_id="", pilot=True)  # live: frozen
        with pytest.raises(ValidationError, match="frozen"):
            prolific.prolific_study_create(study=study, draft=draft())
        assert fake.requests == []

    def test_what_prolific_needs_is_asked_for_before_anything_is_sent(self, fake: FakeProlific, draft_study):
        with pytest.raises(ValidationError) as error:
            prolific.prolific_study_create(study=draft_study, draft=draft(places=0, description=" "))
        assert "Give at least one place." in error.value.messages
        assert "Give a description: Prolific shows it to participants." in error.value.messages
        assert fake.requests == [] and not ProlificStudy.objects.exists()


@pytest.mark.django_db
class TestRunningIt:
    def test_it_is_published_only_once_live_here(self, fake: FakeProlific, draft_study):
        prolific.prolific_study_create(study=draft_study, draft=draft())
        draft_study.refresh_from_db()
        with pytest.raises(ValidationError, match="live here first"):
            prolific.prolific_study_transition(study=draft_study, action="PUBLISH")
        study_set_status(study=draft_study, status="live")
        assert prolific.prolific_study_transition(study=draft_study, action="PUBLISH").status == "ACTIVE"
        assert fake.studies[draft_study.prolific_study_id]["status"] == "ACTIVE"

    def test_it_is_paused_resumed_and_stopped(self, fake: FakeProlific, draft_study):
        prolific.prolific_study_create(study=draft_study, draft=draft())
        draft_study.refresh_from_db()
        study_set_status(study=draft_study, status="live")
        statuses = [
            prolific.prolific_study_transition(study=draft_study, action=action).status
            for action in ("PUBLISH", "PAUSE", "START", "STOP")
        ]
        assert statuses == ["ACTIVE", "PAUSED", "ACTIVE", "AWAITING REVIEW"]

    def test_prolific_refusing_a_transition_says_why(self, fake: FakeProlific, draft_study):
        prolific.prolific_study_create(study=draft_study, draft=draft())
        draft_study.refresh_from_db()
        with pytest.raises(ProlificError) as error:
            prolific.prolific_study_transition(study=draft_study, action="PAUSE")
        assert error.value.kind == "invalid" and "UNPUBLISHED cannot PAUSE" in error.value.message
