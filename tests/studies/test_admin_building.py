"""Building a study in the admin without code or JSON: the home page in the order of the
work with a how-to page, steps moved with ↑ and ↓ (no typed positions), questionnaire items
whose form follows their kind, screening groups as rows, the study URL and completion codes
for Prolific, a preview that starts anywhere, and readable names everywhere."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin as django_admin
from django.urls import reverse

from debates.models import DialogueAssignment, StudyDialogue, Turn
from participants.models import Participant
from studies.completion import completion_codes, study_url
from studies.models import Step, Study
from tests.support.cast import Walker, pid
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study, management, study_page_post

AGREE = ["Strongly disagree", "Disagree", "Neutral", "Agree", "Strongly agree"]
SCREENING_STEP = {
    "kind": "screening",
    "title": "About you",
    "config": {"score_items": "belief", "groups": "low: 1 - 2\nhigh: 4 - 5"},
    "questions": [{"key": "belief", "kind": "likert", "text": "I believe it.", "options": AGREE}],
}
# --- The admin's home ----------------------------------------------------------------------


@pytest.mark.django_db
class TestAdminHome:
    def test_the_home_lists_studies_first_then_content_participants_and_llm_work(self, experimenter):
        html = experimenter.get("/admin/").content.decode()
        captions = re.findall(r'class="section"[^>]*>([^<]+)</a>', html)
        assert captions[:4] == [
            "1. Studies",
            "2. Content: cases, claims, comparison sets, agents",
            "3. Participants and their answers",
            "4. LLM jobs, batches and the model log",
        ]
        assert captions[-1] == "Accounts and sign-in"
        order = [
            html.index(f'href="{reverse(name)}"')
            for name in (
                "admin:studies_study_changelist",
                "admin:debates_case_changelist",
                "admin:participants_participant_changelist",
                "admin:debates_llmcall_changelist",
                "admin:auth_user_changelist",
            )
        ]
        assert order == sorted(order)

    def test_every_registered_model_is_still_on_the_home(self, experimenter):
        html = experimenter.get("/admin/").content.decode()
        for model in django_admin.site._registry:
            meta = model._meta
            assert f'href="{reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")}"' in html, meta

    def test_an_apps_own_page_still_lists_that_app(self, experimenter):
        html = experimenter.get("/admin/debates/").content.decode()
        assert "Cases" in html and "Participants and their answers" not in html.split("content-main")[1]

    def test_the_home_links_a_short_how_to_page(self, experimenter):
        home = experimenter.get("/admin/").content.decode()
        url = reverse("admin:studies_study_how_to")
        assert f'href="{url}"' in home
        page = experimenter.get(url).content.decode()
        assert "How to run a study" in page
        # In the order the go-live checks need: the STUDY_ID from Prolific before going live.
        assert page.index("Prepare it on Prolific") < page.index("Check and go live")
        assert "publish the study on Prolific" in page
        assert reverse("admin:debates_case_import") in page and reverse("admin:studies_study_add") in page

    def test_the_how_to_page_is_for_staff_only(self, outsider):
        response = outsider.get(reverse("admin:studies_study_how_to"))
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


# --- Steps: moved with ↑ and ↓, never typed --------------------------------------------------


@pytest.mark.django_db
class TestStepOrder:
    def test_the_study_page_moves_steps_with_buttons_and_types_no_position(self, experimenter):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        html = experimenter.get(f"/admin/studies/study/{study.pk}/change/").content.decode()
        assert 'type="hidden" name="steps-0-position" value="1"' in html
        assert 'type="number" name="steps-0-position"' not in html
        assert 'data-move="up"' in html and 'data-move="down"' in html and "js/steps_order.js" in html

    def test_two_steps_swapped_in_the_table_are_saved_in_that_order(self, experimenter):
        pages = [{"kind": "instructions", "title": f"Page {n}", "config": {"text": "t"}} for n in (1, 2)]
        study = build_study([CONSENT_STEP, *pages, DEBRIEF_STEP], status="draft")
        steps = {s.title: s for s in Step.objects.filter(study=study)}
        table = ["Consent", "Page 2", "Page 1", "Thanks"]  # the script renumbers rows as they move
        rows = [
            {"id": steps[t].pk, "position": n, "kind": steps[t].kind, "title": t}
            for n, t in enumerate(table, 1)
        ]
        response = experimenter.post(f"/admin/studies/study/{study.pk}/change/", study_page_post(study, rows))
        assert response.status_code == 302, response.content.decode()[-3000:]
        order = Step.objects.filter(study=study).order_by("position").values_list("title", "position")
        assert list(order) == [("Consent", 1), ("Page 2", 2), ("Page 1", 3), ("Thanks", 4)]

    def test_a_step_added_without_a_position_goes_last(self, experimenter):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        steps = list(Step.objects.filter(study=study).order_by("position"))
        rows = [{"id": s.pk, "position": s.position, "kind": s.kind, "title": s.title} for s in steps]
        rows.append({"position": "", "kind": "instructions", "title": "Added"})
        response = experimenter.post(f"/admin/studies/study/{study.pk}/change/", study_page_post(study, rows))
        assert response.status_code == 302, response.content.decode()[-3000:]
        order = Step.objects.filter(study=study).order_by("position").values_list("title", flat=True)
        assert list(order) == ["Consent", "Thanks", "Added"]

    def test_a_step_cannot_be_added_to_a_frozen_study_nor_moved_to_another(self, experimenter):
        """Adding a step to a study participants had taken was a 500 (StudyLocked, unhandled: the
        researcher walk); the step's study could be changed on its page."""
        frozen = build_study([CONSENT_STEP, DEBRIEF_STEP])
        Walker(frozen).enter()
        page = experimenter.get("/admin/studies/step/add/").content.decode()
        assert f'<option value="{frozen.pk}"' not in page and "since going live are not listed" in page
        response = experimenter.post(
            "/admin/studies/step/add/", {"study": frozen.pk, "kind": "instructions", "title": "Read"}
        )
        assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
        assert Step.objects.filter(study=frozen).count() == 2
        draft = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        other = build_study([CONSENT_STEP], status="draft")
        step = Step.objects.get(study=draft, kind="debrief")
        response = experimenter.post(
            f"/admin/studies/step/{step.pk}/change/",
            {
                "study": other.pk,
                "kind": "debrief",
                "title": "Moved?",
                "position": 2,
                "config_text": "Thanks.",
                "config_button_label": "Finish",
            },
        )
        assert response.status_code == 302, response.content.decode()[-2000:]
        step.refresh_from_db()
        assert step.title == "Moved?" and step.study == draft

    def test_a_study_participants_have_taken_is_refused_back_to_draft_on_the_form(self, experimenter):
        """It was refused after the rest of the page was saved: a red "cannot go back to draft"
        beside a green "was changed successfully" (the researcher walk)."""
        study = build_study([CONSENT_STEP, DEBRIEF_STEP])
        Walker(study).enter()
        steps = list(Step.objects.filter(study=study).order_by("position"))
        rows = [{"id": s.pk, "position": s.position, "kind": s.kind, "title": s.title} for s in steps]
        data = {**study_page_post(study, rows), "status": "draft", "notes": "Changed?"}
        response = experimenter.post(f"/admin/studies/study/{study.pk}/change/", data, follow=True)
        html = response.content.decode()
        assert "so it cannot go back to draft" in html and "changed successfully" not in html
        study.refresh_from_db()
        assert study.status == "live" and study.notes == ""

    def test_a_steps_own_page_shows_its_place_instead_of_a_position_field(self, experimenter):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        step = Step.objects.get(study=study, kind="debrief")
        html = experimenter.get(f"/admin/studies/step/{step.pk}/change/").content.decode()
        assert 'type="hidden" name="position" value="2"' in html and "Step 2 of the study." in html
        # The configuration's labels are its own names, its one-line boxes the admin's width.
        assert 'for="id_config_button_label">Button label:</label>' in html and "Config " not in html
        assert 'maxlength="100" class="vTextField" required id="id_config_button_label"' in html
        response = experimenter.post(
            "/admin/studies/step/add/", {"study": study.pk, "kind": "instructions", "title": "Read"}
        )
        assert response.status_code == 302, response.content.decode()[-2000:]
        order = Step.objects.filter(study=study).order_by("position").values_list("title", flat=True)
        assert list(order) == ["Consent", "Thanks", "Read"]

    def test_a_frozen_study_has_no_move_buttons_to_use(self, experimenter, questionnaire_study):
        html = experimenter.get(f"/admin/studies/study/{questionnaire_study.pk}/change/").content.decode()
        assert 'name="steps-0-position"' not in html  # read-only rows: the script removes the buttons


# --- The question form follows the kind ------------------------------------------------------


@pytest.mark.django_db
def test_the_question_form_puts_each_kinds_fields_on_its_own_row_for_the_script(experimenter):
    study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
    step = Step.objects.get(study=study, kind="screening")
    html = experimenter.get(f"/admin/studies/step/{step.pk}/change/").content.decode()
    assert "js/question_kind.js" in html
    for name in ("options", "min_value", "min_length", "expected_answer"):
        assert re.search(rf'class="form-row[^"]*\bfield-{name}\b', html), name
    assert not re.search(r'class="form-row[^"]*field-min_value[^"]*field-min_length', html)


# --- Screening groups as rows -----------------------------------------------------------------


def screening_post(study: Study, step: Step, groups: list[dict]) -> dict:
    data = {
        "study": study.pk,
        "position": step.position,
        "title": step.title,
        "config_intro": "",
        "config_score_items": "belief",
        "config_reverse_items": "",
        "config_button_label": "Continue",
        "config_groups-TOTAL_FORMS": len(groups),
        "config_groups-INITIAL_FORMS": 0,
        **management("questions", 0, 0),
    }
    for n, group in enumerate(groups):
        data |= {f"config_groups-{n}-{name}": value for name, value in group.items()}
    return data


@pytest.mark.django_db
class TestScreeningGroups:
    def test_the_groups_are_rows_of_label_and_range_not_text(self, experimenter):
        study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
        step = Step.objects.get(study=study, kind="screening")
        html = experimenter.get(f"/admin/studies/step/{step.pk}/change/").content.decode()
        assert 'name="config_groups-0-label" value="low"' in html
        assert 'name="config_groups-1-high" value="5"' in html and "Add a group" in html
        assert 'name="config_groups"' not in html

    def test_rows_are_saved_in_the_steps_configuration_format(self, experimenter):
        study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
        step = Step.objects.get(study=study, kind="screening")
        groups = [
            {"label": "sceptic", "low": "3.5", "high": "5"},
            {"label": "mainstream", "low": "1", "high": "2.50"},
            {"label": "gone", "low": "0", "high": "1", "DELETE": "on"},
            {"label": "", "low": "", "high": ""},
        ]
        response = experimenter.post(
            f"/admin/studies/step/{step.pk}/change/", screening_post(study, step, groups)
        )
        assert response.status_code == 302, response.content.decode()[-3000:]
        step.refresh_from_db()
        assert step.config["groups"] == "sceptic: 3.5 - 5\nmainstream: 1 - 2.5"

    def test_bad_rows_are_refused_with_their_errors_and_kept(self, experimenter):
        study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
        step = Step.objects.get(study=study, kind="screening")
        groups = [
            {"label": "Upper Case", "low": "1", "high": "2"},
            {"label": "high", "low": "5", "high": "4"},
            {"label": "high", "low": "x", "high": "5"},
        ]
        response = experimenter.post(
            f"/admin/studies/step/{step.pk}/change/", screening_post(study, step, groups)
        )
        html = response.content.decode()
        assert response.status_code == 200
        assert "Use a lowercase letter" in html and "The low end is above the high end." in html
        assert "Enter a number." in html and "Correct the rows marked below." in html
        assert 'value="Upper Case"' in html and 'name="config_groups-2-low" value="x"' in html
        step.refresh_from_db()
        assert step.config["groups"] == "low: 1 - 2\nhigh: 4 - 5"

    def test_duplicate_group_labels_are_refused(self, experimenter):
        study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
        step = Step.objects.get(study=study, kind="screening")
        groups = [{"label": "high", "low": "1", "high": "2"}, {"label": "high", "low": "4", "high": "5"}]
        response = experimenter.post(
            f"/admin/studies/step/{step.pk}/change/", screening_post(study, step, groups)
        )
        assert "The group &#x27;high&#x27; appears twice." in response.content.decode()


# --- Prolific: the study URL and the completion codes ------------------------------------------


@pytest.mark.django_db
class TestProlificOnTheStudyPage:
    def test_the_study_page_shows_the_url_with_prolifics_three_placeholders(self, experimenter):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        html = experimenter.get(f"/admin/studies/study/{study.pk}/change/").content.decode()
        expected = (
            f"http://testserver/s/{study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
            "&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"
        )
        assert f'value="{expected}"' in html
        assert 'data-copy="#prolific-study-url"' in html and "js/copy.js" in html

    def test_the_study_page_lists_each_code_with_its_prolific_code_type(self, experimenter):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft")
        html = experimenter.get(f"/admin/studies/study/{study.pk}/change/").content.decode()
        for code, kind in [
            ("CDONE", "COMPLETED"),
            ("CFAIL", "FAILED_ATTENTION_CHECK"),
            ("CNOCON", "NO_CONSENT"),
            ("CSCREEN", "FIXED_SCREENOUT"),
        ]:
            assert f"<td><code>{code}</code></td><td><code>{kind}</code></td>" in html

    def test_a_code_set_by_a_step_is_listed_for_review(self, db):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP], status="draft", screened_out_code="")
        Step.objects.filter(study=study, kind="debrief").update(
            config={"text": "t", "partner_left_code": "CLEFT"}
        )
        codes = {c.code: c.prolific_type for c in completion_codes(study)}
        assert codes == {
            "CDONE": "COMPLETED",
            "CFAIL": "FAILED_ATTENTION_CHECK",
            "CNOCON": "NO_CONSENT",
            "CLEFT": "OTHER",
        }

    def test_the_url_with_prolifics_ids_in_place_of_the_placeholders_enters_the_study(self, client):
        study = build_study([CONSENT_STEP, DEBRIEF_STEP])
        ids = {"%PROLIFIC_PID%": pid(), "%STUDY_ID%": "a" * 24, "%SESSION_ID%": pid()}
        url = study_url("https://rostrum.example.org/", study)
        assert url.startswith(f"https://rostrum.example.org/s/{study.slug}/?")
        for placeholder, value in ids.items():
            url = url.replace("{{" + placeholder + "}}", value)
        response = client.get(url.removeprefix("https://rostrum.example.org"))
        assert response.status_code == 302 and response["Location"].startswith("/p/")
        assert Participant.objects.get(study=study).prolific_pid == ids["%PROLIFIC_PID%"]


# --- Preview from any step, with a chosen condition or dialogue ---------------------------------


@pytest.mark.django_db
class TestPreviewChoices:
    def test_the_preview_page_offers_every_step_and_the_studys_conditions_and_dialogues(
        self, experimenter, mystery_study
    ):
        url = reverse("admin:studies_study_preview", args=[mystery_study.pk])
        study_page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/change/").content.decode()
        assert f'href="{url}"' in study_page
        html = experimenter.get(url).content.decode()
        steps = Step.objects.filter(study=mystery_study).count()
        assert html.count('<option value="', html.index('name="step"')) >= steps
        assert '<option value="anchoring">' in html and 'name="dialogue"' in html

    def test_it_opens_the_chosen_step_with_a_dialogue_of_the_chosen_condition(
        self, experimenter, mystery_study
    ):
        url = reverse("admin:studies_study_preview", args=[mystery_study.pk])
        judgement = Step.objects.get(study=mystery_study, kind="judgement")
        response = experimenter.post(
            url, {"step": judgement.position, "condition": "verbosity", "dialogue": ""}
        )
        assert response.status_code == 302 and response["Location"].startswith("/p/")
        preview = Participant.objects.get(study=mystery_study, is_preview=True)
        assert preview.position == judgement.position
        assert DialogueAssignment.objects.get(participant=preview).dialogue.condition == "verbosity"
        page = experimenter.get(response["Location"]).content.decode()
        assert judgement.title in page

    def test_it_reads_exactly_the_chosen_dialogue(self, experimenter, mystery_study):
        chosen = StudyDialogue.objects.filter(study=mystery_study).order_by("-id").first()
        url = reverse("admin:studies_study_preview", args=[mystery_study.pk])
        response = experimenter.post(url, {"step": 1, "condition": "", "dialogue": chosen.pk})
        assert response.status_code == 302
        preview = Participant.objects.get(study=mystery_study, is_preview=True)
        assert DialogueAssignment.objects.get(participant=preview).study_dialogue == chosen
        assert not Participant.objects.filter(study=mystery_study, is_preview=False).exists()

    def test_a_dialogue_of_another_condition_than_the_chosen_one_is_refused(
        self, experimenter, mystery_study
    ):
        other = (
            StudyDialogue.objects.filter(study=mystery_study).exclude(dialogue__condition="baseline").first()
        )
        url = reverse("admin:studies_study_preview", args=[mystery_study.pk])
        response = experimenter.post(url, {"step": 1, "condition": "baseline", "dialogue": other.pk})
        assert response.status_code == 200 and "not of the chosen condition" in response.content.decode()
        assert not Participant.objects.filter(study=mystery_study).exists()

    def test_a_preview_can_start_after_the_screening_as_a_chosen_group(self, experimenter):
        study = build_study([CONSENT_STEP, SCREENING_STEP, DEBRIEF_STEP], status="draft")
        url = reverse("admin:studies_study_preview", args=[study.pk])
        assert '<option value="high">high (4 to 5)</option>' in experimenter.get(url).content.decode()
        response = experimenter.post(url, {"step": 3, "group": "high"})
        assert response.status_code == 302
        preview = Participant.objects.get(study=study)
        assert (preview.is_preview, preview.position, preview.group) == (True, 3, "high")

    def test_the_preview_page_refuses_outsiders_and_staff_without_permission(
        self, outsider, staff_without_permissions, mystery_study
    ):
        url = reverse("admin:studies_study_preview", args=[mystery_study.pk])
        assert outsider.post(url, {"step": 1}).status_code == 302
        assert staff_without_permissions.post(url, {"step": 1}).status_code == 403
        assert not Participant.objects.filter(study=mystery_study).exists()


# --- Readable names -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_no_admin_page_of_a_run_study_names_a_row_object_n(experimenter, mystery_study):
    w = Walker(mystery_study)
    w.enter()
    w.walk()
    turn = Turn.objects.order_by("dialogue", "number").first()
    assert str(turn) == f"Turn 1 (opening, side {turn.speaker})"
    for model in django_admin.site._registry:
        meta = model._meta
        for obj in model.objects.all()[:2]:
            url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
            html = experimenter.get(url).content.decode()
            assert not re.search(r"\w object \(\d+\)", html), url
