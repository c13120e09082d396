"""The participant pages in a real browser: headless Chromium against uvicorn.

Each test drives the demo study (`mystery-debate`) the way a participant would, by clicking
labels and buttons or pressing keys, and checks what the server stored. Prolific is offline
here: app.prolific.com is a small HTTPS stand-in on loopback that records each visit.

Set ROSTRUM_SCREENSHOTS=/some/dir to keep a screenshot of every page the tests visit.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from debates.demo import loader
from debates.models import Case, DialogueAssignment, Judgement
from participants.models import Exclusion, Participant, Response, StepVisit
from tests.support.browser import PROLIFIC_DONE, choose, heading, new_context, screenshot, slide_to, submit
from tests.support.cast import entry_url, pid

pytestmark = [pytest.mark.postgres, pytest.mark.browser]

TITLES = [
    "Information and consent",
    "What you will do",
    "The story",
    "The debate",
    "Your judgement",
    "A quick question",
    "About the debate",
    "One more question about the debate",
    "Your experience",
    "About you",
    "Thank you",
]
REASONING = "Side A's account of the keys and the timeline fits every piece of evidence."


@pytest.fixture
def study(transactional_db):
    return loader.mystery_study()


class Person:
    """Answers each step of the demo study like a careful participant (keyed by step title)."""

    def __init__(self, page: Page, type_reasoning: bool = True) -> None:
        self.page = page
        self.type_reasoning = type_reasoning
        self.recall_answer = ""
        self.steps: dict[str, Callable[[], None]] = {
            "Information and consent": lambda: submit(page, "I agree to take part"),
            "What you will do": lambda: submit(page, "Continue"),
            "The story": lambda: submit(page, "I have read the story"),
            "The debate": self.debate,
            "Your judgement": self.judgement,
            "A quick question": self.attention,
            "About the debate": self.bias,
            "One more question about the debate": self.recall,
            "Your experience": self.experience,
            "About you": self.about_you,
            "Thank you": lambda: submit(page, "Finish and return to Prolific"),
        }

    def answer(self) -> str:
        title = heading(self.page)
        self.steps[title]()
        return title

    def debate(self) -> None:
        self.page.wait_for_timeout(300)  # a moment of (measured) reading
        submit(self.page, "I have read the debate")

    def judgement(self) -> None:
        page = self.page
        page.locator("label.choice").filter(has_text=re.compile(r"^\s*Side A —")).click()
        expect(page.get_by_role("radio", name=re.compile(r"^Side A —"))).to_be_checked()
        slide_to(page, "How confident are you in your choice?", 85)
        box = page.get_by_label("In a few sentences, explain what led you to your choice.")
        if self.type_reasoning:
            box.press_sequentially(REASONING)
        else:
            box.fill(REASONING)
        expect(page.locator(".counter")).to_have_text(re.compile("enough"))
        submit(page, "Submit my judgement")

    def attention(self) -> None:
        choose(self.page, "Please select 'Strongly disagree'", "Strongly disagree")
        submit(self.page, "Continue")

    def bias(self) -> None:
        choose(self.page, "deliberately argued in a manipulative way", "No")
        submit(self.page, "Continue")

    def recall(self) -> None:
        # A careful reader knows the answer from the debate; the test looks it up by question.
        question = self.page.locator("fieldset legend").inner_text().strip()
        self.recall_answer = Case.objects.get(recall__question=question).recall["answer"]
        choose(self.page, question, self.recall_answer)
        submit(self.page, "Continue")

    def experience(self) -> None:
        page = self.page
        choose(page, "familiar are you with detective stories", "Moderately")
        choose(page, "experience do you have with formal debate", "Slightly")
        slide_to(page, "telling a strong argument from a weak one", 70)
        choose(page, "every country in the world this week", "Strongly disagree")
        submit(page, "Continue")

    def about_you(self) -> None:
        page = self.page
        page.get_by_label("How old are you?").press_sequentially("34")
        choose(page, "What is your gender?", "Prefer not to say")
        choose(page, "highest level of education", "Undergraduate degree")
        submit(page, "Continue")


def participant_of(prolific_pid: str) -> Participant:
    return Participant.objects.get(prolific_pid=prolific_pid)


# --- Tests -------------------------------------------------------------------------------


def test_a_participant_walks_the_demo_study_from_the_prolific_link_to_the_completion_redirect(
    server, context, study, prolific
):
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    person = Person(page)
    seen = []
    for position, title in enumerate(TITLES, start=1):
        expect(page.locator("h1")).to_have_text(title)
        expect(page.locator(".bar-progress")).to_have_text(f"Step {position} of {len(TITLES)}")
        screenshot(page, f"desktop-{position:02d}")
        seen.append(person.answer())

    assert seen == TITLES
    assert page.url == PROLIFIC_DONE + "CMYSTDONE"
    assert prolific.visits == [PROLIFIC_DONE + "CMYSTDONE"]
    expect(page.locator("h1")).to_have_text("Prolific stand-in")

    p = participant_of(prolific_pid)
    assert p.status == Participant.Status.COMPLETED
    assert p.finished_at is not None and p.attention_failures == 0
    judgement = Judgement.objects.get(participant=p)
    assert (judgement.chosen_side, judgement.confidence, judgement.reasoning) == ("A", 85, REASONING)
    rows = {r.key: r for r in Response.objects.filter(participant=p)}
    assert set(rows) == {
        "consent",
        "judgement_side",
        "judgement_confidence",
        "judgement_reasoning",
        "attention_1",
        "bias_present",
        "bias_side",
        "bias_type",
        "recall",
        "expertise_mysteries",
        "expertise_debate",
        "expertise_self",
        "attention_2",
        "age",
        "gender",
        "education",
        "comments",
    }
    assert rows["consent"].value == "yes"
    assert rows["attention_1"].passed and rows["attention_2"].passed
    assert rows["recall"].passed and rows["recall"].value == person.recall_answer
    assert rows["expertise_self"].value_num == 70
    assert rows["expertise_mysteries"].value == "Moderately"
    assert (rows["age"].value_num, rows["gender"].value) == (34, "Prefer not to say")
    assert rows["comments"].value == ""
    assignment = DialogueAssignment.objects.get(participant=p)
    assert assignment.reading_client_ms is not None and assignment.reading_client_ms > 0
    assert assignment.reading_server_ms is not None and assignment.wpm is not None
    # Reading at robot speed may exclude for words per minute; nothing else may.
    reasons = set(Exclusion.objects.filter(participant=p).values_list("reason", flat=True))
    assert reasons <= {Exclusion.Reason.WPM}
    assert StepVisit.objects.filter(participant=p).count() == len(TITLES)


def test_refresh_and_the_back_button_show_the_current_step_whose_form_still_submits(server, context, study):
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    person = Person(page)
    assert person.answer() == "Information and consent"
    assert person.answer() == "What you will do"
    expect(page.locator("h1")).to_have_text("The story")

    page.reload()
    expect(page.locator("h1")).to_have_text("The story")

    # Back to the history entries of the instructions and then the consent page: the server
    # shows the current step each time, never the already-answered one.
    for _ in range(2):
        page.go_back()
        expect(page.locator("h1")).to_have_text("The story")
        expect(page.locator('input[name="_position"]')).to_have_value("3")
        expect(page.get_by_role("button", name="I agree to take part")).to_have_count(0)

    submit(page, "I have read the story")
    expect(page.locator("h1")).to_have_text("The debate")
    p = participant_of(prolific_pid)
    assert p.position == 4 and p.status == Participant.Status.ACTIVE
    visits = list(StepVisit.objects.filter(participant=p).values_list("position", flat=True))
    assert visits == [1, 2, 3]
    assert list(Response.objects.filter(participant=p).values_list("key", "value")) == [("consent", "yes")]


def test_a_second_tab_resumes_the_same_participant_and_its_stale_form_stores_nothing(server, context, study):
    link = server + entry_url(study, prolific_pid := pid())
    first = context.new_page()
    first.goto(link)
    expect(first.locator("h1")).to_have_text("Information and consent")

    second = context.new_page()
    second.goto(link)
    expect(second.locator("h1")).to_have_text("Information and consent")
    assert second.url == first.url  # the same participant's page
    assert Participant.objects.filter(prolific_pid=prolific_pid).count() == 1
    assert participant_of(prolific_pid).visits == 2

    # Agree in the first tab, then decline in the stale second tab.
    submit(first, "I agree to take part")
    expect(first.locator("h1")).to_have_text("What you will do")
    submit(second, "I do not agree (return to Prolific)")
    expect(second.locator("h1")).to_have_text("What you will do")
    expect(second.locator(".notice")).to_contain_text("already been answered")

    p = participant_of(prolific_pid)
    assert p.status == Participant.Status.ACTIVE and p.position == 2
    assert list(Response.objects.filter(participant=p).values_list("key", "value")) == [("consent", "yes")]
    assert StepVisit.objects.filter(participant=p).count() == 1

    # The second tab is now on the current step, and its form works; the first tab is stale.
    submit(second, "Continue")
    expect(second.locator("h1")).to_have_text("The story")
    submit(first, "Continue")
    expect(first.locator("h1")).to_have_text("The story")
    expect(first.locator(".notice")).to_contain_text("already been answered")
    assert participant_of(prolific_pid).position == 3
    assert StepVisit.objects.filter(participant=p).count() == 2


def test_every_step_fits_a_phone_screen_without_horizontal_scrolling(server, browser, study, prolific):
    phone = new_context(
        browser,
        viewport={"width": 375, "height": 740},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=2,
    )
    try:
        page = phone.new_page()
        page.goto(server + entry_url(study))
        person = Person(page, type_reasoning=False)
        checked = []
        for position, title in enumerate(TITLES, start=1):
            expect(page.locator("h1")).to_have_text(title)
            # Unfold the "read again" recaps: they must fit too.
            for summary in page.locator("details.recap > summary").all():
                summary.click()
            screenshot(page, f"phone-{position:02d}")
            size = page.evaluate(
                """() => ({
                    inner: window.innerWidth,
                    scroll: document.documentElement.scrollWidth,
                    wide: [...document.querySelectorAll('body *')]
                        .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
                        .map(e => e.tagName + '.' + e.className).slice(0, 5),
                })"""
            )
            # innerWidth stays at the device width: the page was not zoomed out to fit.
            assert size["inner"] == 375, (title, size)
            assert size["scroll"] <= size["inner"], (title, size)
            checked.append(person.answer())
        assert checked == TITLES
        assert page.url == PROLIFIC_DONE + "CMYSTDONE"
    finally:
        phone.close()


def focus_style(page: Page) -> dict:
    return page.evaluate(
        """() => {
            const e = document.activeElement, s = getComputedStyle(e);
            return {tag: e.tagName, text: (e.innerText || e.value || '').slice(0, 40),
                    outline: s.outlineStyle, width: s.outlineWidth};
        }"""
    )


def tab_to(page: Page, selector: str, limit: int = 80) -> dict:  # the debate's [E4] buttons are tab stops
    """Press Tab until the element matching `selector` has focus; it must show its focus."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            style = focus_style(page)
            assert style["outline"] != "none" and style["width"] != "0px", style
            return style
    raise AssertionError(f"Tab never reached {selector}")


def press_submit(page: Page, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def test_consent_and_a_likert_page_can_be_completed_with_the_keyboard_alone_with_visible_focus(
    server, context, study
):
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    expect(page.locator("h1")).to_have_text("Information and consent")

    skip = tab_to(page, "a.skip")  # the first stop: the skip link, visible when focused
    assert skip["text"] == "Skip to content"
    assert page.locator("a.skip").bounding_box()["x"] >= 0
    screenshot(page, "keyboard-skip-link")
    tab_to(page, 'button[name="consent"][value="yes"]')
    press_submit(page, "Enter")

    continue_button = "form.step-form button[type=submit]"
    for title in ("What you will do", "The story"):
        expect(page.locator("h1")).to_have_text(title)
        tab_to(page, continue_button)
        press_submit(page, "Space")
    # The debate: every evidence citation of six turns was a tab stop before the button (48).
    expect(page.locator("h1")).to_have_text("The debate")
    skip = tab_to(page, 'a.skip[href="#step-form"]', limit=3)
    assert skip["text"] == "Skip to the end of the debate"
    page.keyboard.press("Enter")
    tab_to(page, continue_button, limit=2)
    press_submit(page, "Space")

    expect(page.locator("h1")).to_have_text("Your judgement")
    tab_to(page, 'input[name="side"]')
    page.keyboard.press("Space")
    expect(page.locator('input[name="side"]').first).to_be_checked()
    tab_to(page, 'input[name="confidence"]')
    for _ in range(10):
        page.keyboard.press("ArrowRight")
    tab_to(page, 'textarea[name="reasoning"]')
    page.keyboard.type(REASONING)
    tab_to(page, continue_button)
    press_submit(page, "Enter")

    # The Likert attention check: Tab into the group, Space chooses, arrows move the choice.
    expect(page.locator("h1")).to_have_text("A quick question")
    tab_to(page, 'input[name="attention_1"]')
    page.keyboard.press("Space")
    strongly = page.get_by_role("radio", name="Strongly disagree", exact=True)
    disagree = page.get_by_role("radio", name="Disagree", exact=True)
    expect(strongly).to_be_checked()
    page.keyboard.press("ArrowRight")
    expect(disagree).to_be_checked()
    assert focus_style(page)["outline"] != "none"
    page.keyboard.press("ArrowLeft")
    expect(strongly).to_be_checked()
    screenshot(page, "keyboard-likert")
    tab_to(page, continue_button)
    press_submit(page, "Enter")
    expect(page.locator("h1")).to_have_text("About the debate")

    p = participant_of(prolific_pid)
    rows = {r.key: r for r in Response.objects.filter(participant=p)}
    assert rows["consent"].value == "yes"
    judgement = Judgement.objects.get(participant=p)
    assert judgement.confidence == 60 and judgement.reasoning == REASONING
    assert rows["attention_1"].value == "Strongly disagree" and rows["attention_1"].passed
    assert p.position == 7 and p.attention_failures == 0


def test_declining_consent_sends_the_participant_to_prolific_with_the_no_consent_code(
    server, context, study, prolific
):
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    expect(page.locator("h1")).to_have_text("Information and consent")
    submit(page, "I do not agree (return to Prolific)")

    assert page.url == PROLIFIC_DONE + "CMYSTNOCON"
    assert prolific.visits == [PROLIFIC_DONE + "CMYSTNOCON"]
    p = participant_of(prolific_pid)
    assert p.status == Participant.Status.NO_CONSENT
    assert list(Response.objects.filter(participant=p).values_list("key", "value")) == [("consent", "no")]
    assert not DialogueAssignment.objects.filter(participant=p).exists()
