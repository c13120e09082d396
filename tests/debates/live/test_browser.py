"""Design B in a real browser: a participant judges claims before and after a live debate
or consultancy, streamed token by token over the websocket.

The production path runs for the whole module: uvicorn serves the pages and the websocket,
a Celery worker (threads) writes the AI turns with the real `openai` client against our
OpenAI-compatible fake model, and the tokens are relayed through Redis. Each test picks
the fake model's pace by switching the debaters' model name (devtools/fakellm.py).

Set ROSTRUM_SCREENSHOTS=/some/dir to keep screenshots of the chat pages.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from debates.demo import loader
from debates.models import DebaterConfig, LiveSession, LiveTurn, LLMCall
from devtools import fakellm
from participants.models import Participant, Response
from tests.support.browser import PROLIFIC_DONE, choose, heading, new_context, screenshot, slide_to, submit
from tests.support.cast import entry_url, pid
from tests.support.servers import LIVE_ENV, asgi_server, celery_worker, quiet_database

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]

TURN_WAIT = 20_000  # ms: the longest a test waits for the AI side of the conversation
QUESTION = "Which of your sources is the most recent, and what exactly does it say?"
MARKUP = '<img src=x onerror="window.__pwned=1">'
JUSTIFICATION = "Debater B cited a review of many studies; Debater A's sources were older and weaker."
STATUS_YOUR_TURN = "Your turn: ask a question, or pass."

# --- Fixtures ----------------------------------------------------------------------------


class MarkupModel(fakellm.FakeLLM):
    """Our fake model, except that a model whose base name starts with `fake-html` opens
    every reply with markup (an <img> whose onerror would run script if it were parsed)."""

    TOKEN = re.compile(rb'\{"content":"([a-z]+ )"\}')
    MARKUP_JSON = rb'{"content":"<img src=x onerror=\"window.__pwned=2\"> \1"}'

    async def __call__(self, scope, receive, send) -> None:
        first = True

        async def rewrite(message) -> None:
            nonlocal first
            body = message.get("body", b"")
            if first and message["type"] == "http.response.body" and b'"model":"fake-html' in body:
                body, found = self.TOKEN.subn(self.MARKUP_JSON, body, count=1)
                if found:
                    first = False
                    message = {**message, "body": body}
            await send(message)

        await super().__call__(scope, receive, rewrite)


@pytest.fixture(scope="module")
def model_server() -> Iterator[fakellm.FakeLLMServer]:
    with fakellm.run_in_thread(application=MarkupModel()) as running:
        yield running


@pytest.fixture(scope="module")
def server(django_db_setup, model_server) -> Iterator[str]:
    """uvicorn and a Celery worker on the test database, Redis and the fake model."""
    env = {
        **LIVE_ENV,
        "LLM_BACKEND": "openai",
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "test",
        # Each test rebuilds the study under the same slug: never serve a cached row.
        "STUDY_CACHE_SECONDS": "0",
        # Neither process may inherit the test process's async-unsafe escape hatch.
        "DJANGO_ALLOW_ASYNC_UNSAFE": "",
    }
    with celery_worker("-P", "threads", "-c", "8", **env), asgi_server(**env) as base:
        yield base


def settle(timeout: float = 15) -> None:
    """Wait until no AI turn is pending or being written, so the flush between tests never
    pulls rows from under a worker."""
    deadline = time.monotonic() + timeout
    busy = LiveTurn.objects.filter(status__in=[LiveTurn.Status.PENDING, LiveTurn.Status.STREAMING])
    while busy.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    quiet_database()  # and the last writes of the closed page's websocket


@pytest.fixture
def context(transactional_db, browser) -> Iterator[BrowserContext]:  # noqa: F811
    context = new_context(browser)
    yield context
    context.close()
    settle()


@pytest.fixture
def phone(transactional_db, browser) -> Iterator[BrowserContext]:  # noqa: F811
    context = new_context(
        browser, viewport={"width": 375, "height": 740}, is_mobile=True, has_touch=True, device_scale_factor=2
    )
    yield context
    context.close()
    settle()


@pytest.fixture
def study(transactional_db):
    return loader.claim_study()


def use_model(options: str, base: str = "fake") -> str:
    """Every debater and consultant from now on: the fake model, paced by `options`. A fresh
    base name per call, so no two tests get the same replies."""
    model = f"{base}-{secrets.token_hex(3)}:{options}"
    DebaterConfig.objects.update(model=model)
    return model


# --- A participant's hands ---------------------------------------------------------------


def status(page: Page):
    return page.locator("#live-status")


def composer(page: Page):
    return page.locator("#composer")


def finish_button(page: Page):
    return page.get_by_role("button", name="Continue to my final answer")


def messages(page: Page) -> list[dict]:
    """The conversation as shown: each message's heading, text and whether it is being written."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#chat > li')].map(li => ({
            head: li.querySelector('.msg-head span').textContent,
            text: li.querySelector('.msg-text').textContent,
            writing: li.classList.contains('writing'),
        }))"""
    )


def read_out(page: Page) -> list[str]:
    """What the page gave screen readers to read out, apart from the status line: each finished
    reply once, whole (the conversation itself is not a live region)."""
    return page.locator("#live-said p").all_text_contents()


def first_reply_length(page: Page) -> int:
    return page.evaluate("() => document.querySelector('#chat > li .msg-text').textContent.length")


def wait_for_judge_turn(page: Page, shown: int) -> None:
    """Wait until `shown` messages are on screen, none being written, and the question box
    is open: the judge's turn (counting the messages rules out an earlier judge turn)."""
    page.wait_for_function(
        """n => {
            const items = [...document.querySelectorAll('#chat > li')];
            return items.length === n && !items.some(li => li.classList.contains('writing'))
                && !document.getElementById('composer').hidden;
        }""",
        arg=shown,
        timeout=TURN_WAIT,
    )
    expect(status(page)).to_have_text(STATUS_YOUR_TURN)
    expect(page).to_have_title(re.compile(r"^Your turn · "))  # a cue in a background tab


def ask(page: Page, text: str, target: str | None) -> None:
    """Type a question (into the box, key by key), pick whom it is for, and send it."""
    page.get_by_label("Your question").press_sequentially(text)
    if target:
        choose(page, "Ask", target)
    page.get_by_role("button", name="Send question").click()
    expect(composer(page)).to_be_hidden()
    expect(page).not_to_have_title(re.compile(r"^Your turn"))


def pass_turn(page: Page) -> None:
    page.get_by_role("button", name="Pass — no question").click()
    expect(composer(page)).to_be_hidden()


def agree_and_answer_screening(page: Page) -> None:
    expect(page.locator("h1")).to_have_text("Information and consent")
    submit(page, "I agree to take part")
    expect(page.locator("h1")).to_have_text("About your views")
    # The first options: a belief score of 2.33, in the "mainstream" group.
    choose(page, "overstate the risks of climate change", "Strongly disagree")
    choose(page, "my own experience is a better guide", "Strongly disagree")
    choose(page, "can generally be trusted", "Strongly disagree")
    choose(page, "how AI chatbots produce their answers", "Agree")
    page.get_by_label("How old are you?").press_sequentially("34")
    choose(page, "Highest level of education completed", "Undergraduate")
    submit(page, "Continue")
    expect(page.locator("h1")).to_have_text("How it works")
    submit(page, "Continue")


def force_protocol(prolific_pid: str, protocol: str) -> LiveSession:
    """Make the participant's newest session this protocol (assignment is random)."""
    session = LiveSession.objects.filter(participant__prolific_pid=prolific_pid).order_by("-position").first()
    if protocol == "debate":
        fields = {"side_a": random.choice(["true", "false"]), "debater_b": session.debater_a}
        fields |= {"consultant_side": "", "consultant_side_mode": ""}
    else:
        fields = {"side_a": "", "debater_b": None, "consultant_side_mode": "random"}
        fields["consultant_side"] = random.choice(["true", "false"])
    LiveSession.objects.filter(pk=session.pk).update(protocol=protocol, **fields)
    session.refresh_from_db()
    return session


def judge(page: Page, answer: str, confidence: int, justification: str = "") -> None:
    """The initial judgement (no justification) or the final one."""
    choose(page, "Is the claim true or false?", answer)
    slide_to(page, "How confident are you that your answer is correct?", confidence)
    if justification:
        page.get_by_label("Explain your answer in a few sentences.").press_sequentially(justification)
        expect(page.locator(".counter")).to_have_text(re.compile("enough"))
        submit(page, "Submit my final answer")
    else:
        submit(page, "Save my first answer")


def reach_chat(page: Page, server: str, study, protocol: str) -> LiveSession:
    """From the Prolific link to the chat phase of claim 1, with the protocol forced."""
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    agree_and_answer_screening(page)
    expect(page.locator("h1")).to_have_text("Claim 1 of 2")
    session = force_protocol(prolific_pid, protocol)
    page.reload()
    judge(page, "True", 60)
    expect(page.locator("#live")).to_have_attribute("data-protocol", protocol)
    return session


def hold_conversation(page: Page, questions: list[str | None]) -> str:
    """Take part in whichever protocol the page says: one question (or a pass, for None) per
    judge turn, then wait until the conversation is over. Returns the protocol."""
    prose = page.locator(".prose").first
    expect(prose).to_contain_text(re.compile("Two AI debaters|An AI advisor"))
    debate = "Two AI debaters" in prose.inner_text()
    speakers = 2 if debate else 1
    # The debate page offers whom to ask; the consultancy page has only the advisor.
    expect(page.get_by_role("group", name="Ask")).to_have_count(1 if debate else 0)
    for done_rounds, question in enumerate(questions, start=1):
        wait_for_judge_turn(page, shown=done_rounds * speakers + done_rounds - 1)
        if question is None:
            pass_turn(page)
        else:
            ask(page, question, "Both" if debate else None)
    expect(finish_button(page)).to_be_enabled(timeout=TURN_WAIT)
    return "debate" if debate else "consultancy"


def fits_the_screen(page: Page) -> dict:
    return page.evaluate(
        """() => ({
            inner: window.innerWidth,
            scroll: document.documentElement.scrollWidth,
            wide: [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
                .map(e => e.tagName + '.' + e.className).slice(0, 5),
        })"""
    )


# --- Tests -------------------------------------------------------------------------------


def test_a_participant_judges_a_live_debate_and_a_second_claim_from_the_prolific_link_to_completion(
    server,
    context,
    study,
    prolific,  # noqa: F811
):
    model = use_model("tps=40:tokens=40")  # about 1 s a turn: long enough to watch it grow
    page = context.new_page()
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    agree_and_answer_screening(page)
    expect(page.locator("h1")).to_have_text("Claim 1 of 2")
    expect(page.locator(".bar-progress")).to_have_text("Step 4 of 7")
    session = force_protocol(prolific_pid, "debate")  # assigned when the page was first shown
    page.reload()
    expect(page.locator(".claim-text")).to_have_text(session.claim.text)

    # The initial judgement: an untouched slider is no answer.
    choose(page, "Is the claim true or false?", "True")
    submit(page, "Save my first answer")
    expect(page.locator(".error")).to_have_text(re.compile("Please move the slider"))
    expect(page.get_by_role("radio", name="True", exact=True)).to_be_checked()
    judge(page, "True", 65)

    # The chat: Debater A's reply appears word by word.
    expect(page.locator(".prose").first).to_contain_text("Two AI debaters discuss the claim")
    page.wait_for_function(
        """() => { const li = document.querySelector('#chat > li');
                   return li && li.classList.contains('writing')
                       && li.querySelector('.msg-text').textContent.length > 0; }""",
        timeout=TURN_WAIT,
    )
    early = first_reply_length(page)
    expect(status(page)).to_have_text("Debater A is writing…")
    expect(composer(page)).to_be_hidden()
    assert read_out(page) == []  # not word by word
    screenshot(page, "live-debate-streaming")
    page.wait_for_function(
        "n => document.querySelector('#chat > li .msg-text').textContent.length > n", arg=early
    )
    later = first_reply_length(page)
    side_a = "TRUE" if session.side_a == "true" else "FALSE"
    expect(page.locator("#chat > li .msg-head span").first).to_have_text(
        f"Debater A — argues the claim is {side_a}"
    )
    expect(status(page)).to_have_text("Debater B is writing…", timeout=TURN_WAIT)
    expect(composer(page)).to_be_hidden()

    # Round 1 over: the judge's turn. Ask Debater A (after first picking Both).
    wait_for_judge_turn(page, shown=2)
    replies = messages(page)
    assert read_out(page) == [f"{m['head']}, Round 1: {m['text']}" for m in replies], read_out(page)
    screenshot(page, "live-debate-judge-turn")
    page.get_by_label("Your question").press_sequentially(QUESTION)
    choose(page, "Ask", "Both")
    choose(page, "Ask", "Debater A")
    page.get_by_role("button", name="Send question").click()
    expect(composer(page)).to_be_hidden()
    expect(page.locator("#chat > li").nth(2).locator(".msg-head span:first-child")).to_have_text(
        "You → Debater A"
    )
    expect(page.locator("#chat > li").nth(2).locator(".msg-text")).to_have_text(QUESTION)
    expect(status(page)).to_have_text("Debater A is writing…", timeout=TURN_WAIT)
    expect(finish_button(page)).to_be_disabled()
    finish_hint = page.locator("#finish-hint")  # why the button is grey
    expect(finish_hint).to_have_text("This becomes available when the conversation has ended.")

    # Round 2 over: pass. Round 3 ends the conversation.
    wait_for_judge_turn(page, shown=5)
    pass_turn(page)
    expect(page.locator("#chat > li").nth(5).locator(".msg-head span:first-child")).to_have_text("You passed")
    expect(finish_button(page)).to_be_enabled(timeout=TURN_WAIT)
    expect(finish_hint).to_be_hidden()
    expect(status(page)).to_have_text("The conversation is over. Continue to your final answer.")
    expect(composer(page)).to_be_hidden()
    shown = messages(page)
    screenshot(page, "live-debate-over")
    submit(page, "Continue to my final answer")

    # The final judgement, with the conversation to read again.
    expect(page.locator("h1")).to_have_text("Claim 1 of 2")
    expect(page.get_by_text("Now give your final answer.")).to_be_visible()
    expect(page.locator("details.recap .msg")).to_have_count(8)
    judge(page, "False", 80, JUSTIFICATION)

    # Claim 2: whichever protocol the page says (one per participant: debate again here).
    model_2 = use_model("tps=400:tokens=30")
    expect(page.locator("h1")).to_have_text("Claim 2 of 2")
    expect(page.locator(".bar-progress")).to_have_text("Step 5 of 7")
    judge(page, "False", 30)
    protocol_2 = hold_conversation(page, ["What would change your mind about this claim?", None])
    submit(page, "Continue to my final answer")
    judge(
        page, "True", 55, "The figures quoted came from a large government survey, which I found convincing."
    )

    expect(page.locator("h1")).to_have_text("A quick question")
    choose(page, "please select 'Disagree'", "Disagree")
    choose(page, "I have never used a computer or a phone.", "Strongly disagree")
    submit(page, "Continue")
    expect(page.locator("h1")).to_have_text("Thank you")
    sessions = list(LiveSession.objects.filter(participant__prolific_pid=prolific_pid).order_by("position"))
    stances = page.locator(".stance")
    expect(stances).to_have_count(2)
    for stance, s in zip(stances.all(), sessions):
        expect(stance).to_contain_text(s.claim.text)
        expect(stance.locator("strong")).to_have_text("True" if s.claim.truth else "False")
    expect(page.locator(".code-box strong.code")).to_have_text("CCLAIMDONE")  # should Prolific not open
    screenshot(page, "live-debate-thanks")
    submit(page, "Finish and return to Prolific")

    assert page.url == PROLIFIC_DONE + "CCLAIMDONE"
    assert prolific.visits == [PROLIFIC_DONE + "CCLAIMDONE"]
    participant = Participant.objects.get(prolific_pid=prolific_pid)
    assert participant.status == Participant.Status.COMPLETED
    first, second = sessions
    assert (first.protocol, second.protocol) == ("debate", protocol_2)
    turns = list(first.turns.order_by("seq"))
    assert [t.speaker for t in turns] == ["A", "B", "J", "A", "B", "J", "A", "B"]
    assert all(t.status == LiveTurn.Status.DONE for t in turns)
    assert (turns[2].target, turns[2].text) == ("A", QUESTION)
    assert (turns[5].target, turns[5].text) == ("pass", "")
    # What the participant saw is what was stored: nothing lost, doubled or reordered.
    assert [m["text"] for m in shown] == [t.text for t in turns]
    assert not any(m["writing"] for m in shown)
    assert 0 < early < later and early < len(turns[0].text)
    assert (first.initial_answer, first.initial_confidence) == (True, 65)
    assert (first.final_answer, first.final_confidence, first.justification) == (False, 80, JUSTIFICATION)
    assert (second.initial_answer, second.final_answer, second.final_confidence) == (False, True, 55)
    assert first.phase == second.phase == LiveSession.Phase.DONE
    assert second.turns.filter(status=LiveTurn.Status.DONE).count() == (8 if protocol_2 == "debate" else 5)
    calls = list(LLMCall.objects.filter(session=first))
    assert sorted(c.role for c in calls) == ["debater_a"] * 3 + ["debater_b"] * 3
    assert {(c.backend, c.model, c.error_kind) for c in calls} == {("openai", model, "")}
    assert {c.model for c in LLMCall.objects.filter(session=second)} == {model_2}
    rows = dict(Response.objects.filter(participant=participant).values_list("key", "value"))
    slug = first.claim.slug
    assert rows[f"claim_{slug}_initial"] == "true" and rows[f"claim_{slug}_final"] == "false"
    assert rows[f"claim_{slug}_justification"] == JUSTIFICATION
    assert rows["attention_1"] == "Disagree"


def test_a_refresh_during_a_streamed_reply_shows_the_text_so_far_and_continues_it_without_loss_or_duplication(
    server, context, study
):
    use_model("tps=15:tokens=60")  # 4 s a reply
    page = context.new_page()
    session = reach_chat(page, server, study, "debate")
    page.wait_for_function(
        "() => (document.querySelector('#chat > li .msg-text') || {}).textContent?.length > 30",
        timeout=TURN_WAIT,
    )
    before = messages(page)[0]["text"]

    page.reload()
    expect(page.locator("h1")).to_have_text("Claim 1 of 2")
    page.wait_for_function(
        "n => (document.querySelector('#chat > li .msg-text') || {}).textContent?.length >= n",
        arg=len(before),
    )
    after = messages(page)
    assert len(after) == 1 and after[0]["writing"], after  # the reply is still being written
    assert after[0]["text"].startswith(before)
    expect(status(page)).to_have_text("Debater A is writing…")
    screenshot(page, "live-refresh-mid-reply")
    page.wait_for_function(  # and it goes on growing after the refresh
        "n => document.querySelector('#chat > li .msg-text').textContent.length > n",
        arg=len(after[0]["text"]),
    )
    use_model("tps=400:tokens=20")  # the replies after this one: quick

    first = page.locator("#chat > li").first
    expect(first).not_to_have_class(re.compile(r"\bwriting\b"), timeout=TURN_WAIT)
    shown = first.locator(".msg-text").evaluate("e => e.textContent")
    turn = LiveTurn.objects.get(session=session, seq=1)
    assert turn.status == LiveTurn.Status.DONE
    assert shown == turn.text
    assert len(turn.text.split()) == 60
    assert turn.attempts == 1  # the refresh did not restart the reply
    wait_for_judge_turn(page, shown=2)
    assert len(page.locator("#chat > li.msg-a").all()) == 1
    # Read out: the reply that ended after the refresh, whole, once, and then B's.
    said = read_out(page)
    assert len(said) == 2 and said[0].endswith(f", Round 1: {turn.text}"), said
    page.reload()  # what was there when the page opened is history, not news
    wait_for_judge_turn(page, shown=2)
    assert read_out(page) == []


def test_text_from_the_participant_and_the_model_is_shown_as_text_not_html(server, context, study):
    use_model("tps=200:tokens=15", base="fake-html")  # every reply opens with an <img onerror>
    page = context.new_page()
    # Anything that did run or load would leave a trace: a CSP report, a request for "x".
    page.add_init_script(
        """window.__violations = [];
           document.addEventListener('securitypolicyviolation',
                                     e => window.__violations.push(e.violatedDirective));"""
    )
    requested = []
    page.on("request", lambda request: requested.append(request.url))
    session = reach_chat(page, server, study, "consultancy")
    expect(page.locator(".prose").first).to_contain_text("An AI advisor discusses the claim with you")
    question = f"Is this true? {MARKUP} Please answer plainly."

    wait_for_judge_turn(page, shown=1)
    ask(page, question, None)
    judge_message = page.locator("#chat > li.msg-j")
    expect(judge_message.locator(".msg-head span:first-child")).to_have_text("You → the advisor")
    expect(judge_message.locator(".msg-text")).to_have_text(question)
    wait_for_judge_turn(page, shown=3)
    screenshot(page, "live-markup")

    def shown_as_text(where: str) -> None:
        stored = [t.text for t in LiveTurn.objects.filter(session=session, seq__lte=3).order_by("seq")]
        assert stored[1] == question
        assert stored[0].startswith('<img src=x onerror="window.__pwned=2"> ')  # the model's markup
        texts = page.locator(f"{where} .msg-text").evaluate_all("els => els.map(e => e.textContent.trim())")
        assert texts[:3] == [text.strip() for text in stored], where
        assert page.locator(f"{where} img").count() == 0
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("window.__violations") == []

    shown_as_text("#chat")  # streamed, then sent whole at its end
    page.reload()
    wait_for_judge_turn(page, shown=3)
    shown_as_text("#chat")  # from the snapshot
    pass_turn(page)
    expect(finish_button(page)).to_be_enabled(timeout=TURN_WAIT)
    submit(page, "Continue to my final answer")
    page.locator("details.recap > summary").click()
    expect(page.locator("details.recap .msg")).to_have_count(5)
    shown_as_text("details.recap")  # rendered by the server
    assert not [url for url in requested if url.rstrip("/").endswith("/x")]


def test_on_a_phone_the_chat_has_no_horizontal_scrolling_and_its_question_box_and_buttons_work(
    server, phone, study
):
    use_model("tps=400:tokens=120")  # long replies, quickly
    page = phone.new_page()
    reach_chat(page, server, study, "debate")
    wait_for_judge_turn(page, shown=2)
    screenshot(page, "live-phone-judge-turn")

    def no_horizontal_scrolling() -> None:
        size = fits_the_screen(page)
        assert size["inner"] == 375, size  # not zoomed out to fit
        assert size["scroll"] <= size["inner"], size

    no_horizontal_scrolling()
    box = page.get_by_label("Your question")
    controls = [
        box,
        page.locator("fieldset.targets label.choice").filter(has_text="Debater B"),
        page.get_by_role("button", name="Send question"),
        page.get_by_role("button", name="Pass — no question"),
    ]
    for control in controls:
        control.scroll_into_view_if_needed()
        bounds = control.bounding_box()
        assert bounds["x"] >= 0 and bounds["x"] + bounds["width"] <= 375, bounds
        assert bounds["height"] >= 44, bounds  # a comfortable target for a finger

    # A question with a long unbroken word (a pasted link) must wrap, not widen the page.
    link = "https://example.org/" + "a-very-long-path-segment-" * 6
    box.tap()
    page.keyboard.type(f"Is this source reliable? {link}")
    page.locator("fieldset.targets label.choice").filter(has_text="Debater B").tap()
    expect(page.get_by_role("radio", name="Debater B")).to_be_checked()
    page.get_by_role("button", name="Send question").tap()
    expect(page.locator("#chat > li").nth(2).locator(".msg-head span:first-child")).to_have_text(
        "You → Debater B"
    )
    wait_for_judge_turn(page, shown=5)
    no_horizontal_scrolling()
    screenshot(page, "live-phone-after-question")

    page.get_by_role("button", name="Pass — no question").tap()
    expect(finish_button(page)).to_be_enabled(timeout=TURN_WAIT)
    no_horizontal_scrolling()
    with page.expect_navigation():
        finish_button(page).tap()
    page.locator("details.recap > summary").tap()
    expect(page.locator("details.recap .msg")).to_have_count(8)
    no_horizontal_scrolling()
    screenshot(page, "live-phone-final")
    assert heading(page) == "Claim 1 of 2"


def test_a_refused_message_is_explained_and_the_judge_may_send_again(server, context, study):
    use_model("tps=300:tokens=10")
    page = context.new_page()
    reach_chat(page, server, study, "debate")
    wait_for_judge_turn(page, shown=2)
    # A tampered page: the box's length limit removed, 600 characters sent.
    page.evaluate("document.getElementById('question').removeAttribute('maxlength')")
    page.get_by_label("Your question").fill("x" * 600)
    page.get_by_role("button", name="Send question").click()
    expect(status(page)).to_have_text("Please keep your message under 500 characters.")
    expect(composer(page)).to_be_visible()  # still the judge's turn: nothing was stored
    page.get_by_label("Your question").fill("A shorter question?")
    page.get_by_role("button", name="Send question").click()
    expect(composer(page)).to_be_hidden()
    expect(page.locator("#chat > li.msg-j .msg-text")).to_have_text("A shorter question?")


@pytest.mark.parametrize("lost", [(1, 2), (2,)], ids=["both-ends", "the-last-end"])
def test_replies_whose_end_is_lost_on_the_way_are_shown_whole_and_the_judge_gets_the_turn(
    server, context, study, lost
):
    """Pub/sub is at most once: when a server's link to Redis drops, a reply's end (and the
    state sent with it) can be lost while the socket stays open. Here the browser never
    receives the end of A's reply, of B's, or of both: debater B starting tells the page it
    missed A's end; for B's, nothing follows, and a reply showing as being written with
    nothing heard for a while (2 s here) makes the page ask. The snapshot brings the stored
    text."""
    # A second before each reply's first token: the page's socket is open before A's reply
    # ends (on a busy runner it had connected after it, and A's end, never sent, was not lost).
    use_model("ttft=1000:tps=200:tokens=30")
    page = context.new_page()
    dropped, asked_again = [], []

    def quick_to_ask_again(route) -> None:  # the page as served, with a 2 s quiet period
        if route.request.method != "GET":
            route.continue_()
            return
        response = route.fetch(max_redirects=0)
        body = re.sub(r'data-quiet-seconds="\d+"', 'data-quiet-seconds="2"', response.text())
        route.fulfill(response=response, body=body)

    def losing_ends(ws) -> None:
        upstream = ws.connect_to_server()
        lose_next_state = False

        def from_server(message) -> None:
            nonlocal lose_next_state
            m = json.loads(message)
            if m["type"] == "turn.end" and m["seq"] in lost and m["seq"] not in dropped:
                dropped.append(m["seq"])
                lose_next_state = True  # sent with the end, lost with it
                return
            if m["type"] == "state" and lose_next_state:
                lose_next_state = False
                return
            ws.send(message)

        def from_page(message) -> None:
            if json.loads(message)["type"] == "resync":
                asked_again.append(time.monotonic())
            upstream.send(message)

        upstream.on_message(from_server)
        ws.on_message(from_page)

    page.route(re.compile(r"/p/[^/]+/$"), quick_to_ask_again)
    page.route_web_socket(re.compile(r"/ws/live/"), losing_ends)
    session = reach_chat(page, server, study, "debate")
    wait_for_judge_turn(page, shown=2)
    assert dropped == list(lost)
    assert asked_again  # (for both ends, one snapshot may come after B's end and cover both)
    stored = [t.text for t in LiveTurn.objects.filter(session=session).order_by("seq")]
    assert [m["text"] for m in messages(page)] == stored
    assert all(len(text.split()) == 30 for text in stored)
