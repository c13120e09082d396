"""An experimenter in a real browser edits a dialogue's turns as rows: rewrites one, adds two
with "Add another Turn", sees a wrong side refused beside the form, and writes a new dialogue by
hand from the add page."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from debates.demo.loader import demo_cases
from debates.models import Case, Dialogue
from tests.support.browser import new_context, screenshot
from tests.support.cast import PASSWORD, experimenter_user

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]


def log_in(page, server: str) -> None:
    page.goto(f"{server}/admin/login/")
    page.get_by_label("Username").fill("experimenter")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_an_experimenter_edits_a_dialogues_turns_and_writes_a_new_one(server, browser, transactional_db):
    demo_cases()
    dialogue = Dialogue.objects.get(slug="lighthouse-ledger-baseline")
    experimenter_user()
    context = new_context(browser)
    page = context.new_page()
    log_in(page, server)

    # The turns: rows with an order, a side and a text, named for what they are.
    page.goto(f"{server}/admin/debates/dialogue/{dialogue.pk}/change/")
    expect(page.get_by_text("Turn 1 (opening, side A)")).to_be_visible()
    expect(page.get_by_text("Turn 6 (summary, side B)")).to_be_visible()
    page.locator("textarea[name='turns-2-text']").fill("Side A answers: the ledger never left the gallery.")
    page.get_by_text("Add another Turn").click()
    page.get_by_text("Add another Turn").click()
    page.locator("select[name='turns-6-speaker']").select_option("A")
    page.locator("textarea[name='turns-6-text']").fill("One more word from side A.")
    page.locator("select[name='turns-7-speaker']").select_option("B")
    page.locator("textarea[name='turns-7-text']").fill("And the last from side B.")
    screenshot(page, "dialogue-turns")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.locator(".messagelist")).to_contain_text("was changed successfully")
    expect(page.get_by_text("Turn 8 (summary, side B)")).to_be_visible()
    texts = list(dialogue.turns.order_by("number").values_list("speaker", "text"))
    assert texts[2] == ("A", "Side A answers: the ledger never left the gallery.")
    assert texts[6:] == [("A", "One more word from side A."), ("B", "And the last from side B.")]

    # A side out of turn is refused, with the turn named, and nothing changes.
    page.locator("select[name='turns-1-speaker']").select_option("A")
    page.get_by_role("button", name="Save and continue editing").click()
    expect(page.get_by_text('Turn 2: the side must be "B" (turns alternate A, B, A, B, …).')).to_be_visible()
    assert dialogue.turns.get(number=2).speaker == "B"

    # A new dialogue, written by hand.
    page.goto(f"{server}/admin/debates/dialogue/add/")
    page.get_by_label("Slug").fill("lighthouse-ledger-by-hand")
    page.get_by_label("Case").select_option(label=Case.objects.get(slug="lighthouse-ledger").title)
    page.get_by_label("Condition").select_option("baseline")
    page.get_by_label("Active side").select_option("none")
    page.get_by_label("Side a").select_option("culprit")
    page.locator("select[name='turns-0-speaker']").select_option("A")
    page.locator("textarea[name='turns-0-text']").fill("Wren took the ledger: the key says so.")
    page.locator("select[name='turns-1-speaker']").select_option("B")
    page.locator("textarea[name='turns-1-text']").fill("Gus took it: the stairs say so.")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".messagelist")).to_contain_text("was added successfully")
    made = Dialogue.objects.get(slug="lighthouse-ledger-by-hand")
    assert list(made.turns.values_list("number", "speaker")) == [(1, "A"), (2, "B")]
    assert made.words == 15
    context.close()
