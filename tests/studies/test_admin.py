"""The study admin: steps configured through their kind's form, frozen once participants
have entered, checked before going live, reordered; questions validated."""

import pytest
from django.core.exceptions import ValidationError

from studies.models import Question, Step, Study
from studies.services import study_set_status
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study, study_page_post


@pytest.mark.django_db
class TestStepConfiguration:
    def test_a_step_is_configured_through_a_form_of_its_kind(self, experimenter, questionnaire_study):
        study_set_status(study=questionnaire_study, status="draft")
        consent = Step.objects.get(study=questionnaire_study, kind="consent")
        page = experimenter.get(f"/admin/studies/step/{consent.pk}/change/").content.decode()
        assert 'name="config_text"' in page and 'name="config_agree_label"' in page
        assert "config_reasoning" not in page
        response = experimenter.post(
            f"/admin/studies/step/{consent.pk}/change/",
            {
                "study": questionnaire_study.pk,
                "position": 1,
                "title": "Consent, revised",
                "config_text": "New consent text.",
                "config_agree_label": "Yes",
                "config_decline_label": "No",
            },
        )
        assert response.status_code == 302, response.content.decode()[:2000]
        consent.refresh_from_db()
        assert consent.config == {"text": "New consent text.", "agree_label": "Yes", "decline_label": "No"}
        assert consent.title == "Consent, revised"

    def test_a_bad_config_value_is_refused_with_a_message(self, experimenter, mystery_study):
        study_set_status(study=mystery_study, status="draft")
        step = Step.objects.get(study=mystery_study, kind="judgement")
        page = experimenter.get(f"/admin/studies/step/{step.pk}/change/").content.decode()
        assert 'name="config_reasoning_min_length"' in page
        data = {
            "study": mystery_study.pk,
            "position": step.position,
            "title": step.title,
            "config_question": "Which side?",
            "config_confidence_label": "Sure?",
            "config_confidence_low": "no",
            "config_confidence_high": "yes",
            "config_reasoning_label": "Why?",
            "config_reasoning_min_length": "-4",
            "config_button_label": "Go",
        }
        response = experimenter.post(f"/admin/studies/step/{step.pk}/change/", data)
        assert response.status_code == 200
        assert "greater than or equal to 0" in response.content.decode()

    def test_questionnaire_items_are_edited_inline(self, experimenter, questionnaire_study):
        step = Step.objects.get(study=questionnaire_study, title="Page one")
        page = experimenter.get(f"/admin/studies/step/{step.pk}/change/").content.decode()
        assert "questions-TOTAL_FORMS" in page

    def test_a_study_with_participants_cannot_have_its_steps_changed(self, experimenter, questionnaire_study):
        Walker(questionnaire_study).enter()
        questionnaire_study.refresh_from_db()
        assert questionnaire_study.locked_at is not None
        consent = Step.objects.get(study=questionnaire_study, kind="consent")
        response = experimenter.post(
            f"/admin/studies/step/{consent.pk}/change/",
            {
                "study": questionnaire_study.pk,
                "position": 1,
                "title": "Hijacked",
                "config_text": "x",
                "config_agree_label": "a",
                "config_decline_label": "b",
            },
        )
        assert response.status_code == 403
        consent.refresh_from_db()
        assert consent.title == "Consent"
        frozen = experimenter.get(f"/admin/studies/step/{consent.pk}/change/").content.decode()
        assert "steps are frozen" in frozen and "Please agree." in frozen
        assert 'name="config_text"' not in frozen
        page = experimenter.get(f"/admin/studies/study/{questionnaire_study.pk}/change/").content.decode()
        assert 'name="steps-0-title"' not in page  # the steps inline is read-only

    def test_a_study_cannot_go_live_with_design_problems(self, experimenter, db):
        study = build_study([{"kind": "questionnaire", "title": "Empty"}], status="draft")
        response = experimenter.post(
            "/admin/studies/study/",
            {"action": "set_live", "_selected_action": [study.pk]},
            follow=True,
        )
        assert "the questionnaire has no questions" in response.content.decode()
        study.refresh_from_db()
        assert study.status == "draft"

    def test_steps_can_be_reordered_and_renumbered_in_the_study_page(self, experimenter, db):
        study = build_study(
            [
                CONSENT_STEP,
                {"kind": "instructions", "title": "Read me", "config": {"text": "t"}},
                DEBRIEF_STEP,
            ],
            status="draft",
        )
        steps = list(Step.objects.filter(study=study).order_by("position"))
        page = experimenter.get(f"/admin/studies/study/{study.pk}/change/").content.decode()
        assert "Configure this step" in page
        rows = [
            {"id": step.pk, "position": position, "kind": step.kind, "title": step.title}
            for step, position in zip(steps, [2, 1, 3])
        ]
        data = study_page_post(study, rows)
        response = experimenter.post(f"/admin/studies/study/{study.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        assert list(Step.objects.filter(study=study).order_by("position").values_list("kind", flat=True)) == [
            "instructions",
            "consent",
            "debrief",
        ]
        assert Study.objects.get(pk=study.pk).steps_version > study.steps_version


@pytest.mark.django_db
class TestQuestionValidation:
    def test_an_expected_answer_must_be_one_of_the_options(self, db):
        study = build_study([CONSENT_STEP], status="draft")
        step = Step.objects.get(study=study)
        q = Question(step=step, key="q", kind="likert", text="?", options="Yes\nNo", expected_answer="Maybe")
        with pytest.raises(ValidationError) as info:
            q.full_clean()
        assert "Not an option: Maybe" in str(info.value)


@pytest.mark.django_db
def test_a_step_moved_down_on_its_own_page_lands_where_asked(experimenter):
    pages = [{"kind": "instructions", "title": f"Page {n}", "config": {"text": "t"}} for n in (1, 2, 3)]
    study = build_study([CONSENT_STEP, *pages, DEBRIEF_STEP], status="draft")
    step = Step.objects.get(study=study, title="Page 1")
    response = experimenter.post(
        f"/admin/studies/step/{step.pk}/change/",
        {
            "study": study.pk,
            "position": 4,
            "title": "Page 1",
            "config_text": "t",
            "config_button_label": "Continue",
        },
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    order = Step.objects.filter(study=study).order_by("position").values_list("title", flat=True)
    assert list(order) == ["Consent", "Page 2", "Page 3", "Page 1", "Thanks"]


@pytest.mark.django_db
def test_a_step_added_at_a_taken_position_is_inserted_there(experimenter):
    study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
    response = experimenter.post(
        "/admin/studies/step/add/",
        {"study": study.pk, "position": 2, "kind": "instructions", "title": "Read"},
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    order = Step.objects.filter(study=study).order_by("position").values_list("title", "position")
    assert list(order) == [("Consent", 1), ("Read", 2), ("Thanks", 3)]
    assert Step.objects.get(title="Read").config["button_label"] == "Continue"  # the kind's defaults


def study_page_data(study: Study, **changes) -> dict:
    """The study's change form as the admin page posts it, its steps unchanged."""
    rows = [
        {"id": step.pk, "position": step.position, "kind": step.kind, "title": step.title}
        for step in Step.objects.filter(study=study).order_by("position")
    ]
    return {**study_page_post(study, rows), **changes}


@pytest.mark.django_db
def test_ticking_pilot_and_choosing_live_in_one_save_goes_live(experimenter):
    """The researcher walk: the go-live checks read the stored study, so "not a pilot, no
    STUDY_ID" refused a save that ticked Pilot and chose Live together."""
    study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft", prolific_study_id="")
    url = f"/admin/studies/study/{study.pk}/change/"
    refused = experimenter.post(url, study_page_data(study, status="live"))
    assert refused.status_code == 200 and "The Prolific STUDY_ID is not set" in refused.content.decode()
    assert Study.objects.get(pk=study.pk).status == "draft"
    response = experimenter.post(url, study_page_data(study, status="live", pilot="on"))
    assert response.status_code == 302, response.content.decode()[-3000:]
    study.refresh_from_db()
    assert (study.status, study.pilot) == ("live", True)


@pytest.mark.django_db
def test_the_study_page_says_what_changed_since_it_went_live(experimenter):
    """A live study's dialogue targets stay editable; a change was seen only by `manage.py
    verify_study` (the researcher walk). The study page lists it."""
    from debates.demo import loader
    from debates.models import StudyDialogue

    study = loader.mystery_study()
    url = f"/admin/studies/study/{study.pk}/change/"
    assert "Nothing changed: the study matches the snapshot" in experimenter.get(url).content.decode()
    offered = StudyDialogue.objects.filter(study=study).order_by("id").first()
    StudyDialogue.objects.filter(pk=offered.pk).update(target=(offered.target or 0) + 5)
    page = experimenter.get(url).content.decode()
    assert "Changed since it went live" in page and "target changed" in page
