import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from debates.models import Case
from participants.models import Exclusion, Participant
from studies.models import Question, Step, Study
from tests.conftest import CONSENT_STEP, DEBRIEF_STEP, Walker, build_study


@pytest.fixture
def experimenter(db) -> Client:
    user = User.objects.create_superuser("experimenter", "e@example.org", "a-long-password-1")
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
class TestStepConfiguration:
    def test_a_step_is_configured_through_a_form_of_its_kind(self, experimenter, questionnaire_study):
        Study.objects.filter(pk=questionnaire_study.pk).update(status="draft")
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
        Study.objects.filter(pk=mystery_study.pk).update(status="draft")
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
        data = {
            "title": study.title,
            "slug": study.slug,
            "status": "draft",
            "notes": "",
            "prolific_study_id": "",
            "completion_code": "CDONE",
            "failed_check_code": "CFAIL",
            "no_consent_code": "CNOCON",
            "screened_out_code": "CSCREEN",
            "estimated_minutes": 10,
            "time_limit_minutes": 0,
            "attention_failures_to_end": 2,
            "wpm_cap": "",
            "target_per_item": 6,
            "steps-TOTAL_FORMS": 3,
            "steps-INITIAL_FORMS": 3,
            "steps-MIN_NUM_FORMS": 0,
            "steps-MAX_NUM_FORMS": 1000,
            "study_dialogues-TOTAL_FORMS": 0,
            "study_dialogues-INITIAL_FORMS": 0,
            "study_dialogues-MIN_NUM_FORMS": 0,
            "study_dialogues-MAX_NUM_FORMS": 1000,
            "study_claims-TOTAL_FORMS": 0,
            "study_claims-INITIAL_FORMS": 0,
            "study_claims-MIN_NUM_FORMS": 0,
            "study_claims-MAX_NUM_FORMS": 1000,
        }
        for n, (step, position) in enumerate(zip(steps, [2, 1, 3])):
            data.update(
                {
                    f"steps-{n}-id": step.pk,
                    f"steps-{n}-study": study.pk,
                    f"steps-{n}-position": position,
                    f"steps-{n}-kind": step.kind,
                    f"steps-{n}-title": step.title,
                }
            )
        response = experimenter.post(f"/admin/studies/study/{study.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[-3000:]
        assert list(Step.objects.filter(study=study).order_by("position").values_list("kind", flat=True)) == [
            "instructions",
            "consent",
            "debrief",
        ]
        assert Study.objects.get(pk=study.pk).steps_version > study.steps_version


@pytest.mark.django_db
class TestWatchingAStudy:
    def test_the_overview_shows_steps_fill_and_exclusions(self, experimenter, mystery_study):
        w = Walker(mystery_study)
        w.enter()
        w.walk(stop_before="The debate")
        response = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/overview/")
        html = response.content.decode()
        assert response.status_code == 200
        assert "In progress, by step" in html and "Fill per dialogue" in html
        assert "1 / 6" in html
        partial = experimenter.get(
            f"/admin/studies/study/{mystery_study.pk}/overview/", HTTP_HX_REQUEST="true"
        )
        assert "<html" not in partial.content.decode() and "Fill per dialogue" in partial.content.decode()

    def test_participants_are_listed_by_status_and_step(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.submit()
        page = experimenter.get(
            f"/admin/participants/participant/?study__id__exact={questionnaire_study.pk}&position=2"
        ).content.decode()
        assert w.pid in page and "2. Page one" in page

    def test_participant_free_text_is_escaped_in_the_admin(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.walk(
            answers={
                "Page three": {"why": "<script>alert('x')</script> because"},
                "Page two": {"check_1": "Disagree"},
            }
        )
        p = Participant.objects.get(prolific_pid=w.pid)
        html = experimenter.get(f"/admin/participants/participant/{p.pk}/change/").content.decode()
        assert "<script>alert" not in html
        assert "&lt;script&gt;alert" in html

    def test_exclusions_are_reversible_from_the_admin(self, experimenter, questionnaire_study):
        w = Walker(questionnaire_study)
        w.enter()
        w.walk(answers={"Page two": {"check_1": "Agree"}})
        exclusion = Exclusion.objects.get()
        experimenter.post(
            "/admin/participants/exclusion/", {"action": "revoke", "_selected_action": [exclusion.pk]}
        )
        exclusion.refresh_from_db()
        assert exclusion.revoked_at is not None
        assert not Participant.objects.get(prolific_pid=w.pid).excluded
        experimenter.post(
            "/admin/participants/exclusion/", {"action": "reinstate", "_selected_action": [exclusion.pk]}
        )
        assert Participant.objects.get(prolific_pid=w.pid).excluded
        assert Exclusion.objects.filter(revoked_at__isnull=True).count() == 1


@pytest.mark.django_db
class TestImportUpload:
    def test_a_bad_upload_lists_its_problems_and_imports_nothing(self, experimenter):
        upload = SimpleUploadedFile("cases.json", b'{"format": "rostrum.cases/1",\n "cases": [{"slug": 5}]}')
        response = experimenter.post("/admin/debates/case/import/", {"file": upload})
        html = response.content.decode()
        assert "Nothing was imported" in html
        assert "line 2, cases[0].slug: must be a string" in html
        assert not Case.objects.exists()

    def test_a_good_upload_imports(self, experimenter):
        from debates.demo.mystery import CASES_FILE

        upload = SimpleUploadedFile("cases.json", CASES_FILE.read_bytes())
        response = experimenter.post("/admin/debates/case/import/", {"file": upload}, follow=True)
        assert "Imported: cases: 2 new" in response.content.decode()
        assert Case.objects.count() == 2


@pytest.mark.django_db
class TestAccess:
    @pytest.mark.parametrize(
        "path",
        [
            "/admin/",
            "/admin/debates/case/import/",
            "/admin/studies/study/1/overview/",
            "/admin/studies/study/1/export/participants.csv",
        ],
    )
    def test_admin_pages_need_a_staff_login(self, questionnaire_study, path):
        response = Client().get(path)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]

    def test_a_participant_sees_only_their_own_pages(self, questionnaire_study):
        a, b = Walker(questionnaire_study), Walker(questionnaire_study)
        a.enter()
        b.enter()
        a.submit()
        assert a.url != b.url
        assert b.page()[1].title == "Consent"
        # Posting to one's own token cannot touch anyone else's row.
        assert Participant.objects.get(prolific_pid=b.pid).position == 1


@pytest.mark.django_db
class TestQuestionValidation:
    def test_an_expected_answer_must_be_one_of_the_options(self, db):
        from django.core.exceptions import ValidationError

        study = build_study([CONSENT_STEP], status="draft")
        step = Step.objects.get(study=study)
        q = Question(step=step, key="q", kind="likert", text="?", options="Yes\nNo", expected_answer="Maybe")
        with pytest.raises(ValidationError) as info:
            q.full_clean()
        assert "Not an option: Maybe" in str(info.value)


@pytest.mark.django_db
def test_every_admin_page_renders_for_a_running_study(experimenter, mystery_study):
    """Changelists and change pages of every registered model, with real data in them."""
    from django.contrib import admin as django_admin
    from django.urls import reverse

    w = Walker(mystery_study)
    w.enter()
    w.walk()
    for model in django_admin.site._registry:
        meta = model._meta
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        assert experimenter.get(changelist).status_code == 200, changelist
        for obj in model.objects.all()[:3]:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
            assert experimenter.get(url).status_code == 200, url
    for step in Step.objects.filter(study=mystery_study):
        assert experimenter.get(f"/admin/studies/step/{step.pk}/change/").status_code == 200
    assert experimenter.get(f"/admin/studies/study/{mystery_study.pk}/export/").status_code == 200


@pytest.mark.django_db
class TestLiveDebatesAdmin:
    def test_claims_are_imported_from_a_csv_upload(self, experimenter):
        from debates.models import Claim

        body = (
            b"slug,text,truth,domain,side,source_title,source_excerpt,source_url\n"
            b"tea,Tea dehydrates you.,false,health,false,Fluid balance,Tea counts as fluid.,\n"
        )
        response = experimenter.post(
            "/admin/debates/claim/import/", {"file": SimpleUploadedFile("claims.csv", body)}, follow=True
        )
        assert "Imported: claims: 1 new" in response.content.decode()
        assert Claim.objects.get().truth is False

    def test_a_prompt_template_with_an_unknown_placeholder_is_refused(self, experimenter, claim_study):
        from debates.models import DebaterConfig

        config = DebaterConfig.objects.get()
        response = experimenter.post(
            f"/admin/debates/debaterconfig/{config.pk}/change/",
            {
                "name": config.name,
                "model": "m",
                "temperature": 0.2,
                "max_tokens": 100,
                "max_words": 50,
                "system_prompt": "You argue {stance} about {claimm}.",
            },
        )
        assert "unknown placeholder {claimm}" in response.content.decode()
        experimenter.post(
            f"/admin/debates/debaterconfig/{config.pk}/change/",
            {
                "name": config.name,
                "model": "m",
                "temperature": 0.2,
                "max_tokens": 100,
                "max_words": 50,
                "system_prompt": "You argue {stance} about {claim}.",
            },
        )
        config.refresh_from_db()
        assert config.template_version == 2  # recorded calls name the version they used

    def test_live_sessions_the_call_log_and_the_overview(self, experimenter, claim_study):
        from debates.models import LiveSession
        from tests.conftest import drain_turns

        w = Walker(claim_study)
        w.enter()
        w.walk(stop_before="Claim 1 of 2")
        w.page()
        w.submit({"answer": "true", "confidence": "20"})
        session = LiveSession.objects.get()
        drain_turns(session.pk)
        live = experimenter.get("/admin/debates/livesession/?phase__exact=chat").content.decode()
        assert w.pid in live and "Turn now" in live
        transcript = experimenter.get(f"/admin/debates/livesession/{session.pk}/change/").content.decode()
        assert session.turns.first().text[:40].replace("'", "&#x27;") in transcript
        calls = experimenter.get("/admin/debates/llmcall/").content.decode()
        assert "Totals of the calls listed" in calls and claim_study.slug in calls
        overview = experimenter.get(f"/admin/studies/study/{claim_study.pk}/overview/").content.decode()
        assert "places per group × protocol × claim" in overview and session.claim.slug in overview
        assert "1 conversation in progress now" in overview
