"""An experimenter in a real browser builds without typing JSON: edits a case's suspects and
evidence units as rows (adding, removing), reorders two steps and two questionnaire items with
↑ and ↓, sees a question's form follow its kind, and copies the study URL for Prolific."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo.loader import demo_cases
from debates.models import Case
from studies.models import Step
from tests.support.browser import new_context, screenshot, signed_in
from tests.support.cast import experimenter_user
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]

PAGES = [
    {"kind": "instructions", "title": "Page one", "config": {"text": "One."}},
    {
        "kind": "questionnaire",
        "title": "Page two",
        "questions": [
            {"key": "colour", "kind": "single_choice", "text": "Pick one", "options": ["Red", "Blue"]},
            {"key": "size", "kind": "single_choice", "text": "Pick a size", "options": ["S", "L"]},
        ],
    },
]


def test_an_experimenter_edits_a_case_and_reorders_steps_without_typing_json(
    server, browser, transactional_db
):
    demo_cases()
    case = Case.objects.get(slug="lighthouse-ledger")
    study = build_study([CONSENT_STEP, *PAGES, DEBRIEF_STEP], status="draft")
    experimenter_user()
    context = new_context(browser)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=server)
    page = signed_in(context, server)

    # The case: suspects and evidence as rows of a table, never JSON.
    page.goto(f"{server}/admin/debates/case/{case.pk}/change/")
    expect(page.locator("textarea[name='suspects'], textarea[name='evidence']")).to_have_count(0)
    expect(page.get_by_label("Name (suspect 1)", exact=True)).to_have_value("Wren Hadley")
    page.get_by_label("Remove suspect 4", exact=True).check()  # Gus Larkin goes
    page.get_by_role("button", name="Add a suspect").click()
    new_name = page.locator("input[name='suspects-5-name']")
    expect(new_name).to_be_focused()
    new_name.fill("Ada Pell")
    page.locator("input[name='suspects-5-description']").fill("A guest who held Tobias's arm.")
    page.get_by_role("button", name="Add an evidence unit").click()
    expect(page.locator("input[name='evidence-13-number']")).to_have_value("13")  # the next number
    page.locator("textarea[name='evidence-13-text']").fill("A second key was cut in September.")
    page.locator("textarea[name='evidence-1-text']").fill("Only two keys open the case, or so it seemed.")
    screenshot(page, "case-rows")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    case.refresh_from_db()
    assert [s["name"] for s in case.suspects] == [
        "Wren Hadley",
        "Tobias Finch",
        "Marguerite Olsen",
        "Ada Pell",
    ]
    assert case.evidence[1]["text"] == "Only two keys open the case, or so it seemed."
    assert case.evidence[-1] == {"number": 13, "text": "A second key was cut in September."}

    # A mistake is shown beside its row, and what was typed stays.
    page.goto(f"{server}/admin/debates/case/{case.pk}/change/")
    page.get_by_label("Name (suspect 2)", exact=True).fill("Wren Hadley")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".errornote")).to_be_visible()
    expect(page.get_by_text("The suspect 'Wren Hadley' appears twice.")).to_be_visible()
    expect(page.get_by_label("Name (suspect 2)", exact=True)).to_have_value("Wren Hadley")
    case.refresh_from_db()
    assert case.suspects[1]["name"] == "Tobias Finch"

    # The study: two steps swapped with the arrows, then saved.
    page.goto(f"{server}/admin/studies/study/{study.pk}/change/")
    expect(page.locator("input[name='steps-1-position']")).to_be_hidden()
    page.get_by_role("button", name="Move Page one down").click()
    screenshot(page, "steps-moved")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    titles = list(Step.objects.filter(study=study).order_by("position").values_list("title", flat=True))
    assert titles == ["Consent", "Page two", "Page one", "Thanks"]

    # The study URL for Prolific, copied with its placeholders.
    page.get_by_role("button", name="Copy").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == (
        f"{server}/s/{study.slug}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}"
        "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )

    # Questionnaire items move with the arrows too, never by a typed position.
    step = Step.objects.get(study=study, title="Page two")
    page.goto(f"{server}/admin/studies/step/{step.pk}/change/")
    expect(page.locator("input[name='questions-0-position']")).to_be_hidden()
    page.get_by_role("button", name="Move size up").click()
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    assert [q.key for q in step.questions.order_by("position", "id")] == ["size", "colour"]

    # A questionnaire item's form shows only its kind's fields.
    item = page.locator("#questions-0")
    expect(item.locator(".form-row.field-options")).to_be_visible()
    expect(item.locator(".form-row.field-min_length")).to_be_hidden()
    item.locator("select[name='questions-0-kind']").select_option("text")
    expect(item.locator(".form-row.field-options")).to_be_hidden()
    expect(item.locator(".form-row.field-expected_answer")).to_be_hidden()
    expect(item.locator(".form-row.field-min_length")).to_be_visible()
    screenshot(page, "question-kind")
    context.close()
