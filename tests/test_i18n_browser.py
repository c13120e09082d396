"""A German participant in a real browser (headless Chromium, German as its language, against
uvicorn): the study's German texts and the German interface from consent to Prolific, the
page scripts' own strings included; the answers stored are the study's own options."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from participants.models import Participant, Response
from tests.support.browser import PROLIFIC_DONE, choose, new_context, submit
from tests.support.cast import entry_url, pid
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

STEPS = [
    CONSENT_STEP,
    {
        "kind": "questionnaire",
        "title": "Your views",
        "questions": [
            {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]},
            {"key": "warmth", "kind": "slider", "text": "How warm is it?", "options": ["Cold", "Hot"]},
            {"key": "why", "kind": "text", "text": "Why?", "min_length": 10},
        ],
    },
    DEBRIEF_STEP,
]
GERMAN = {
    "de": {
        "study": {"title": "Eine kurze Studie"},
        "steps": {
            "1": {"title": "Einwilligung", "texts": {"config": {"text": "Bitte stimmen Sie zu."}}},
            "2": {
                "title": "Ihre Ansichten",
                "texts": {
                    "questions": {
                        "colour": {"text": "Wählen Sie eine Farbe", "options": ["Rot", "Blau"]},
                        "warmth": {"text": "Wie warm ist es?", "options": ["Kalt", "Heiß"]},
                        "why": {"text": "Warum?"},
                    }
                },
            },
            "3": {"title": "Danke", "texts": {"config": {"text": "Auf Wiedersehen."}}},
        },
    }
}


@pytest.fixture
def study(transactional_db):
    return build_study(STEPS, translations=GERMAN)


def unhurried(prolific_pid: str) -> None:
    past = timezone.now() - timedelta(seconds=120)
    Participant.objects.filter(prolific_pid=prolific_pid).update(served_at=past, shown_at=past)


def test_a_german_browser_takes_the_study_in_german_to_the_end(server, browser, study, prolific):
    context = new_context(browser, locale="de-DE")
    try:
        page = context.new_page()
        prolific_pid = pid()
        page.goto(server + entry_url(study, prolific_pid))  # no &lang=: the browser's language
        expect(page.locator("html")).to_have_attribute("lang", "de")
        expect(page.locator("h1")).to_have_text("Einwilligung")
        expect(page.locator(".bar-title")).to_have_text("Eine kurze Studie")
        expect(page.locator(".bar-progress")).to_have_text("Schritt 1 von 3")
        unhurried(prolific_pid)
        submit(page, "Ich bin mit der Teilnahme einverstanden")

        expect(page.locator("h1")).to_have_text("Ihre Ansichten")
        expect(page.locator("output.range-value")).to_have_text(
            "Bewegen Sie den Schieberegler, um zu antworten"
        )
        why = page.get_by_label("Warum?")
        why.fill("kurz")
        expect(page.locator(".counter")).to_have_text("4 von mindestens 10 Zeichen.")  # written by step.js
        why.fill("Weil es mir gefällt.")
        expect(page.locator(".counter")).to_have_text("20 Zeichen – genug.")
        choose(page, "Wählen Sie eine Farbe", "Blau")
        unhurried(prolific_pid)
        submit(page, "Weiter")  # the slider is untouched: refused, in German
        expect(page.locator("#errors")).to_have_text("Bitte prüfen Sie die unten markierten Antworten.")
        expect(page.locator(".error")).to_contain_text("Bitte bewegen Sie den Schieberegler")

        slider = page.get_by_role("slider", name="Wie warm ist es?")
        slider.focus()
        page.keyboard.press("ArrowRight")
        expect(page.locator("output.range-value")).not_to_have_text(
            "Bewegen Sie den Schieberegler, um zu antworten"
        )
        unhurried(prolific_pid)
        submit(page, "Weiter")

        expect(page.locator("h1")).to_have_text("Danke")
        expect(page.locator(".prose")).to_have_text("Auf Wiedersehen.")
        unhurried(prolific_pid)
        submit(page, "Abschließen und zu Prolific zurückkehren")
        assert page.url == PROLIFIC_DONE + "CDONE"
    finally:
        context.close()

    participant = Participant.objects.get(prolific_pid=prolific_pid)
    assert participant.language == "de" and participant.status == "completed"
    answers = dict(Response.objects.filter(participant=participant).values_list("key", "value"))
    assert answers["colour"] == "Blue" and answers["why"] == "Weil es mir gefällt."
