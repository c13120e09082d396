"""One annotator's whole session of pairwise comparisons, in headless Chromium: consent,
five comparisons (two of them attention checks), the questionnaire, the completion."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from debates.demo import loader
from debates.models import Comparison
from participants.models import Participant
from tests.support.browser import PROLIFIC_DONE, choose, new_context, submit
from tests.support.cast import entry_url, pid

pytestmark = [pytest.mark.postgres, pytest.mark.browser]
Q1 = "Based only on the debate transcripts, which Speaker A presented the more persuasive arguments?"
ANSWER_LABELS = {
    "debate1": "Speaker A from Debate 1",
    "debate2": "Speaker A from Debate 2",
    "equal": "Both were equally persuasive",
}


@pytest.fixture
def pairs(transactional_db):
    return loader.pairs_study()


def instruction_answer(page: Page) -> str | None:
    """Read the question as a person would: an '(ATTENTION CHECK: select …)' tells what to pick."""
    legend = page.get_by_role("group", name=re.compile("^Based only on")).locator("legend").inner_text()
    match = re.search(r"\(ATTENTION CHECK: select '([^']+)'", legend)
    return match.group(1) if match else None


def test_an_annotator_compares_five_pairs_passes_the_checks_and_completes(server, context, pairs, prolific):  # noqa: F811
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(pairs, prolific_pid))
    submit(page, "I agree to take part")
    seen_instances = []
    for number in range(1, 6):
        expect(page.locator(".pair-progress")).to_have_text(f"Comparison {number} of 5")
        expect(page.locator(".excerpt")).to_have_count(2)
        expect(page.locator(".excerpt h2")).to_have_text(["Debate 1", "Debate 2"])
        # Each debate shows Speaker A and Speaker B turns.
        expect(page.locator(".excerpt").first.locator(".side-tag").first).to_have_text("Speaker A")
        instructed = instruction_answer(page)
        choose(page, "Based only on", instructed or "Speaker A from Debate 2")
        choose(page, "How confident", "Somewhat confident")
        label = "Submit my last comparison" if number == 5 else "Next comparison"
        submit(page, label)
        current = Comparison.objects.get(participant__prolific_pid=prolific_pid, order=number)
        assert current.answered_at is not None and current.confidence == 4
        assert current.is_check == (instructed is not None)
        if not current.is_check:
            seen_instances.append(current.instance_id)
    expect(page.locator("h1")).to_have_text("About you")
    page.get_by_label("Your age").fill("34")
    choose(page, "Your gender", "Prefer not to say")
    choose(page, "Where would you place yourself politically?", "Centre")
    submit(page, "Continue")
    submit(page, "Finish and return to Prolific")
    assert page.url == PROLIFIC_DONE + "CPAIRDONE"
    p = Participant.objects.get(prolific_pid=prolific_pid)
    assert p.status == Participant.Status.COMPLETED and not p.excluded
    assert len(seen_instances) == len(set(seen_instances)) == 3
    assert all(c.check_passed for c in Comparison.objects.filter(participant=p, is_check=True))


def test_on_a_phone_the_excerpts_stack_and_fit_the_screen(server, browser, pairs):  # noqa: F811
    phone = new_context(browser, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True)
    page = phone.new_page()
    page.goto(server + entry_url(pairs, pid()))
    submit(page, "I agree to take part")
    boxes = [page.locator(".excerpt").nth(n).bounding_box() for n in range(2)]
    assert boxes[1]["y"] >= boxes[0]["y"] + boxes[0]["height"]  # one above the other
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    phone.close()
    wide = new_context(browser, viewport={"width": 1400, "height": 900})
    page = wide.new_page()
    page.goto(server + entry_url(pairs, pid()))
    submit(page, "I agree to take part")
    boxes = [page.locator(".excerpt").nth(n).bounding_box() for n in range(2)]
    assert (
        boxes[0]["y"] == boxes[1]["y"] and boxes[1]["x"] > boxes[0]["x"] + boxes[0]["width"] - 1
    )  # side by side
    wide.close()
