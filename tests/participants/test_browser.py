"""Flags in a real browser (headless Chromium against uvicorn): a person typing is not flagged,
pasting is recorded, and the honeypot is neither visible, nor reachable with Tab, nor in the
accessibility tree. Time on each page is set through the stored timestamps, never waited for."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect

from participants import flags
from participants.models import Flag, Participant, Response, TextEntry
from tests.support.browser import PROLIFIC_DONE, choose, heading, slide_to, submit
from tests.support.cast import entry_url, pid
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

WHY = "Why did you take part in this study?"
NOTES = "Anything else you would like to tell us?"
TYPED = "I like reading debates and thinking about who is right."
KEY_DELAY_MS = 80  # at most 12.5 key presses a second, whatever the machine: under 20 characters a second
STEPS = [
    CONSENT_STEP,
    {
        "kind": "questionnaire",
        "title": "Your thoughts",
        "questions": [
            {"key": "why", "kind": "text", "text": WHY, "min_length": 10},
            {"key": "notes", "kind": "text", "text": NOTES, "required": False},
        ],
    },
    DEBRIEF_STEP,
]


@pytest.fixture
def study(transactional_db):
    return build_study(STEPS)


def unhurried(prolific_pid: str, seconds: int = 120) -> None:
    """The current page was served `seconds` ago: no page of these tests is too fast."""
    past = timezone.now() - timedelta(seconds=seconds)
    Participant.objects.filter(prolific_pid=prolific_pid).update(served_at=past, shown_at=past)


def honeypot_focused(page: Page) -> bool:
    return page.evaluate(
        f"() => document.activeElement && document.activeElement.name === '{flags.HONEYPOT}'"
    )


def assert_honeypot_hidden_from_people(page: Page) -> None:
    honeypot = page.locator(f'input[name="{flags.HONEYPOT}"]')
    expect(honeypot).to_have_count(1)
    # Not shown: entirely off-screen, on every scroll position (it is left of the page).
    box = honeypot.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 0, box
    # Not reachable with the keyboard: Tab goes round the page without ever landing on it.
    page.locator("h1").click()
    stops = []
    for _ in range(25):
        page.keyboard.press("Tab")
        assert not honeypot_focused(page)
        stops.append(
            page.evaluate("() => document.activeElement.tagName + ':' + (document.activeElement.name || '')")
        )
    assert any(stop.startswith("BUTTON") for stop in stops), stops
    # Not announced: no accessible node carries it; every node of its subtree is ignored.
    expect(page.get_by_role("textbox", name="Your website")).to_have_count(0)
    assert "website" not in page.locator("body").aria_snapshot().lower()
    cdp = page.context.new_cdp_session(page)
    try:
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    finally:
        cdp.detach()
    exposed = [
        n
        for n in nodes
        if not n.get("ignored") and "website" in str(n.get("name", {}).get("value", "")).lower()
    ]
    assert exposed == []


def test_the_honeypot_is_neither_visible_nor_reachable_by_tab_nor_in_the_accessibility_tree(
    server, context, study
):
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    expect(page.locator("h1")).to_have_text("Consent")
    assert_honeypot_hidden_from_people(page)
    unhurried(prolific_pid)
    submit(page, "I agree to take part")

    expect(page.locator("h1")).to_have_text("Your thoughts")
    assert_honeypot_hidden_from_people(page)
    page.get_by_label(WHY).press_sequentially(TYPED, delay=KEY_DELAY_MS)
    unhurried(prolific_pid)
    submit(page, "Continue")
    expect(page.locator("h1")).to_have_text("Thanks")
    p = Participant.objects.get(prolific_pid=prolific_pid)
    assert not Flag.objects.filter(participant=p, kind=Flag.Kind.HONEYPOT).exists()


def consented(page: Page, server: str, study) -> str:
    """From a new PROLIFIC_PID's study link past the consent page; returns the PID."""
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    unhurried(prolific_pid)
    submit(page, "I agree to take part")
    return prolific_pid


def test_a_person_typing_is_not_flagged_and_pasting_is_recorded(server, context, study, prolific):
    page = context.new_page()
    prolific_pid = consented(page, server, study)

    expect(page.locator("h1")).to_have_text("Your thoughts")
    why, notes = page.get_by_label(WHY), page.get_by_label(NOTES)
    why.press_sequentially(TYPED, delay=KEY_DELAY_MS)
    # Copy what was typed and paste it into the second box, with the keyboard.
    why.press("Control+a")
    why.press("Control+c")
    notes.click()
    notes.press("Control+v")
    expect(notes).to_have_value(TYPED)
    unhurried(prolific_pid)
    submit(page, "Continue")

    assert heading(page) == "Thanks"
    unhurried(prolific_pid)
    submit(page, "Finish and return to Prolific")
    assert page.url == PROLIFIC_DONE + "CDONE"

    p = Participant.objects.get(prolific_pid=prolific_pid)
    entries = {e.field: e for e in TextEntry.objects.filter(participant=p)}
    typed, pasted = entries["why"], entries["notes"]
    assert typed.chars == len(TYPED) and typed.keys >= len(TYPED)
    assert (typed.pastes, typed.pasted_chars) == (0, 0)
    assert typed.typing_ms >= (len(TYPED) - 1) * KEY_DELAY_MS
    assert (pasted.chars, pasted.pastes, pasted.pasted_chars) == (len(TYPED), 1, len(TYPED))
    assert pasted.keys <= 2  # Control and V
    # The typed answer raises nothing; the pasted one is flagged for review, and that is all.
    flagged = list(Flag.objects.filter(participant=p).values_list("kind", "field"))
    assert flagged == [(Flag.Kind.PASTED_TEXT, "notes")]
    assert p.status == Participant.Status.COMPLETED and not p.excluded


DRAFT_STEPS = [
    CONSENT_STEP,
    {
        "kind": "questionnaire",
        "title": "Your thoughts",
        "questions": [
            {"key": "colour", "kind": "single_choice", "text": "Pick a colour", "options": ["Red", "Blue"]},
            {"key": "warmth", "kind": "slider", "text": "How warm?", "min_value": 0, "max_value": 100},
            {"key": "why", "kind": "text", "text": WHY, "min_length": 10},
            {"key": "notes", "kind": "text", "text": NOTES, "required": False},
        ],
    },
    DEBRIEF_STEP,
]


def test_what_was_typed_and_chosen_survives_a_refresh_and_is_stored_once(server, context, prolific):
    """A refresh (or a tab that crashed) emptied the page: the reasoning typed, the side picked,
    the slider moved, all gone (a generic participant's walk). The draft is this tab's only,
    and a page the server shows again with its errors keeps the server's values."""
    study = build_study(DRAFT_STEPS, slug="drafts")
    page = context.new_page()
    prolific_pid = consented(page, server, study)
    expect(page.locator("h1")).to_have_text("Your thoughts")
    choose(page, "Pick a colour", "Blue")
    slide_to(page, "How warm?", 70)
    page.get_by_label(WHY).press_sequentially(TYPED, delay=10)
    # A paste longer than the box holds was cut without a word: now it is said.
    notes, limit = page.get_by_label(NOTES), page.locator("#id_notes_limit")
    expect(limit).to_be_hidden()
    notes.fill("y" * 5100)
    expect(notes).to_have_value("y" * 5000)
    expect(limit).to_have_text("This box holds at most 5000 characters: anything beyond that was not kept.")
    assert limit.get_attribute("id") in (notes.get_attribute("aria-describedby") or "").split()
    notes.fill("A shorter note.")
    expect(limit).to_be_hidden()

    page.reload()
    expect(page.get_by_label(WHY)).to_have_value(TYPED)
    expect(page.get_by_role("radio", name="Blue", exact=True)).to_be_checked()
    expect(page.get_by_role("slider", name="How warm?")).to_have_value("70")
    expect(page.locator("output.untouched")).to_have_count(0)  # moved, not a default
    expect(page.locator(".counter")).to_contain_text("enough")  # the counter read it again

    other = context.browser.new_context().new_page()  # another tab's storage: nothing to restore
    other.goto(page.url)
    expect(other.get_by_label(WHY)).to_have_value("")
    other.context.close()

    # A send that fails on the way (the network): the draft is still there when they come back.
    step_url = page.url
    page.route("**/*", lambda route: route.abort() if route.request.method == "POST" else route.continue_())
    page.get_by_role("button", name="Continue").click()
    page.wait_for_load_state()
    page.unroute("**/*")
    page.goto(step_url)
    expect(page.get_by_label(WHY)).to_have_value(TYPED)
    expect(page.get_by_label(NOTES)).to_have_value("A shorter note.")

    unhurried(prolific_pid)
    submit(page, "Continue")
    assert heading(page) == "Thanks"
    # The accepted page's draft is gone from the tab once the next page opens.
    kept = page.evaluate(
        "() => Object.keys(sessionStorage).filter(k => k.startsWith('rostrum-draft:'))"
        ".map(k => sessionStorage.getItem(k)).join(' ')"
    )
    assert TYPED not in kept
    person = Participant.objects.get(prolific_pid=prolific_pid)
    stored = {r.key: r.value for r in Response.objects.filter(participant=person)}
    assert (stored["colour"], str(stored["warmth"]), stored["why"]) == ("Blue", "70", TYPED)
    assert stored["notes"] == "A shorter note."
    page.go_back()  # the step answered: back lands on the current step, with no draft in it
    assert heading(page) == "Thanks"
