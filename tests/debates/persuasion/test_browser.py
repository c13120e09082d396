"""Design C in a real browser: a participant debates the offline AI agent to a win, two
participants paired by the waiting room debate each other to a winner, and a participant
whose partner leaves completes with the study's partner-left code.

The production path runs for the whole module: uvicorn serves the pages and the websocket,
a Celery worker (threads) writes and reads the turns with the offline backend (the scripted
agent `demo-yielding` concedes after three of its turns; the offline classifier reads the
participants' sentences by their cue words), and the tokens are relayed through Redis.
The studies are the demo's, built under their own slugs with short reply delays.

Set ROSTRUM_SCREENSHOTS=/some/dir to keep screenshots of the dialogue pages.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import BrowserContext, Page, expect

from debates.demo import loader
from debates.demo.persuasion import PERSUASION_HUMANS_STUDY, PERSUASION_LIVE_STUDY, TOPIC
from debates.models import PersuasionDialogue, PersuasionTurn
from participants.models import Participant
from participants.services import participant_mark_returned
from tests.support.browser import PROLIFIC_DONE, choose, new_context, screenshot, submit
from tests.support.cast import entry_url, pid
from tests.support.servers import LIVE_ENV, asgi_server, celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser]

TURN_WAIT = 20_000  # ms: the longest a test waits for the other side of the dialogue
HUMAN_TURNS = [  # read by the offline classifier as a claim, then why + since, since, claim + why
    "Public investment builds the roads and railways that private firms will not build.",
    "Why do you think that the market alone can do it? Public investment pays for itself because "
    "growth follows it.",
    "Infrastructure spending creates jobs because firms need workers to build it.",
    "Markets underinvest in research. Why would private firms fund basic science?",
    "Public money funded the research behind most modern medicines.",
]
CONCESSION = f"I concede that {TOPIC['pro_claim'][0].lower()}{TOPIC['pro_claim'][1:]}"


# --- Fixtures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    """uvicorn and a Celery worker on the test database and Redis, with the offline model."""
    env = {
        **LIVE_ENV,
        "LLM_BACKEND": "offline",
        "LLM_OFFLINE_TOKEN_DELAY_MS": "25",  # a reply of ~30 words streams for ~0.8 s
        "PERSUASION_CHECK_SECONDS": "1",  # the page's consumer checks the clocks every second
        # Each test builds its study afresh: never serve a cached row.
        "STUDY_CACHE_SECONDS": "0",
        # Neither process may inherit the test process's async-unsafe escape hatch.
        "DJANGO_ALLOW_ASYNC_UNSAFE": "",
    }
    with celery_worker("-P", "threads", "-c", "8", **env), asgi_server(**env) as base:
        yield base


def settle(timeout: float = 15) -> None:
    """Wait until no turn of a running dialogue is being written or read, so the flush
    between tests never pulls rows from under a worker."""
    deadline = time.monotonic() + timeout
    busy = PersuasionTurn.objects.filter(
        dialogue__status=PersuasionDialogue.Status.RUNNING,
        status__in=[
            PersuasionTurn.Status.PENDING,
            PersuasionTurn.Status.STREAMING,
            PersuasionTurn.Status.READING,
        ],
    )
    while busy.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


@pytest.fixture
def context(transactional_db, browser) -> Iterator[BrowserContext]:  # noqa: F811
    context = new_context(browser)
    yield context
    context.close()
    settle()


@pytest.fixture
def partner(transactional_db, browser) -> Iterator[BrowserContext]:
    """A second participant's browser (its own cookies and storage)."""
    context = new_context(browser)
    yield context
    try:
        context.close()
    except Exception:  # noqa: BLE001, S110 - a test may have closed it already
        pass
    settle()


def study_of(spec: dict, slug: str, **dialogue):
    """The demo study `spec`, built under `slug` with the dialogue step's config changed."""

    steps = copy.deepcopy(spec["steps"])
    for step in steps:
        if step["kind"] == "persuasion_dialogue":
            step["config"].update(dialogue)
    return loader.persuasion_study(humans=spec is PERSUASION_HUMANS_STUDY, slug=slug, steps=steps)


# --- A participant's hands ---------------------------------------------------------------


def status(page: Page):
    return page.locator("#p-status")


def your_turn(n) -> re.Pattern:
    """The status line on the participant's turn: the dialogue's turn number (both sides')."""
    return re.compile(rf"^Your turn \(turn {n} of at most \d+, both sides counted\)\.$")


def finish(page: Page):
    return page.locator("#p-finish")


def enter(page: Page, server: str, study) -> str:
    """From the Prolific link through the consent to the dialogue page; returns the PID."""
    prolific_pid = pid()
    page.goto(server + entry_url(study, prolific_pid))
    expect(page.locator("h1")).to_have_text("Information and consent")
    submit(page, "I agree to take part")
    expect(page.locator("h1")).to_have_text("The dialogue")
    return prolific_pid


def wait_my_turn_or_end(page: Page) -> bool:
    """Wait until the composer opens (True) or the dialogue has ended (False)."""
    page.wait_for_function(
        """() => !document.getElementById('p-composer').hidden
                 || !document.getElementById('p-finish').disabled""",
        timeout=TURN_WAIT,
    )
    return not page.locator("#p-composer").is_hidden()


def say(page: Page, text: str) -> int:
    """Write a turn into the box and send it; returns how many of my turns are shown after."""
    own = page.locator("#p-chat > li.msg-own")
    before = own.count()
    page.get_by_label("Your turn").fill(text)
    page.get_by_role("button", name="Send my turn").click()
    expect(page.locator("#p-composer")).to_be_hidden()
    expect(own).to_have_count(before + 1, timeout=TURN_WAIT)
    return before + 1


def badges(page: Page, nth: int) -> list[str]:
    """The move badges of my nth turn (1-based), once it has been read."""
    item = page.locator("#p-chat > li.msg-own").nth(nth - 1)
    expect(item.locator(".move-kind").first).to_be_visible(timeout=TURN_WAIT)
    return item.locator(".move-kind").all_inner_texts()


def after_the_dialogue(page: Page) -> None:
    """The questionnaire, the attention check and the debrief, up to Prolific."""
    expect(page.locator("h1")).to_have_text("After the dialogue")
    choose(page, "My opponent's arguments changed my view.", "Agree")
    submit(page, "Continue")
    expect(page.locator("h1")).to_have_text("A quick question")
    choose(page, "please select 'Disagree'", "Disagree")
    choose(page, "I have never used a computer or a phone.", "Strongly disagree")
    submit(page, "Continue")
    expect(page.locator("h1")).to_have_text("Thank you")
    submit(page, "Finish and return to Prolific")


def pair(first: Page, second: Page, server: str, study) -> tuple[str, str]:
    """Two participants through the waiting room: the first waits, the second's arrival
    opens the dialogue for both. Returns their PIDs."""
    first_pid = enter(first, server, study)
    expect(status(first)).to_have_text(re.compile("Waiting for another participant to join"))
    expect(first.locator("#stores")).to_be_hidden()
    expect(first.locator("#p-composer")).to_be_hidden()
    screenshot(first, "persuasion-waiting-room")
    second_pid = enter(second, server, study)
    for page in (first, second):
        expect(page.locator("#stores")).to_be_visible(timeout=TURN_WAIT)
        expect(status(page)).not_to_have_text(
            re.compile("Waiting for another participant"), timeout=TURN_WAIT
        )
    return first_pid, second_pid


def by_side(first: Page, second: Page) -> dict[str, Page]:
    return {first.locator("#persuasion").get_attribute("data-side"): first} | {
        second.locator("#persuasion").get_attribute("data-side"): second
    }


# --- Tests -------------------------------------------------------------------------------


def read_out(page: Page) -> list[str]:
    """What the page gave screen readers to read out besides the status line: the opponent's
    finished turns, each once, whole."""
    return page.locator("#p-said p").all_text_contents()


def test_a_participant_debates_the_ai_to_a_win_and_completes_on_prolific(server, context, prolific):
    study = study_of(
        PERSUASION_LIVE_STUDY, "persuasion-live-browser", side="pro", delay_min_s=0.2, delay_max_s=0.4
    )
    page = context.new_page()
    prolific_pid = enter(page, server, study)
    expect(page.locator(".stance-own")).to_contain_text(TOPIC["pro_claim"])
    expect(page.locator(".stance-other")).to_contain_text(TOPIC["con_claim"])
    expect(finish(page)).to_be_disabled()

    turns, saw_stream = 0, False
    while wait_my_turn_or_end(page):
        # The AI opens after the participant (pro): their k-th turn is the dialogue's turn 2k - 1.
        expect(status(page)).to_have_text(your_turn(2 * turns + 1))
        turns = say(page, HUMAN_TURNS[turns % len(HUMAN_TURNS)])
        # My sentences are read and shown with their moves.
        shown = badges(page, turns)
        assert shown and all(b in ("claim", "why", "since", "concede", "question", "retract") for b in shown)
        if turns == 1:
            assert shown == ["claim"]
            expect(page.locator("#store-own")).to_contain_text(HUMAN_TURNS[0], timeout=TURN_WAIT)
        if not saw_stream:
            # The AI's reply appears word by word: part of it is on screen while it is written.
            page.wait_for_function(
                """() => [...document.querySelectorAll('#p-chat > li.msg-other.writing .msg-text')]
                          .some(e => e.textContent.trim().length > 0)""",
                timeout=TURN_WAIT,
            )
            expect(status(page)).to_have_text("Your opponent is writing…")
            screenshot(page, "persuasion-ai-streaming")
            saw_stream = True
        assert turns <= 6, "the yielding agent should have conceded by now"

    expect(status(page)).to_have_text("You won: your opponent conceded your initial claim.")
    expect(finish(page)).to_be_enabled()
    last = page.locator("#p-chat > li.msg-other").last
    expect(last.locator(".move-kind")).to_have_text(["concede"])
    screenshot(page, "persuasion-ai-won")
    assert turns == 4  # demo-yielding concedes on its fourth turn, after three of its own
    said = read_out(page)
    submit(page, "Continue")
    after_the_dialogue(page)

    assert page.url == PROLIFIC_DONE + "CPERSDONE"
    assert prolific.visits == [PROLIFIC_DONE + "CPERSDONE"]
    participant = Participant.objects.get(prolific_pid=prolific_pid)
    assert participant.status == Participant.Status.COMPLETED
    dialogue = PersuasionDialogue.objects.get(pro_participant=participant)
    assert (dialogue.status, dialogue.winner, dialogue.end_reason) == ("finished", "pro", "conceded")
    stored = list(dialogue.turns.order_by("seq"))
    assert [t.author for t in stored] == ["human", "agent"] * 4
    assert [t.text for t in stored if t.author == "human"] == HUMAN_TURNS[:4]
    assert all(t.status == PersuasionTurn.Status.DONE for t in stored)
    # The AI's turns were read out to screen readers, each once, whole (the last three kept).
    assert said == [f"Your opponent, Turn {t.seq}: {t.text}" for t in stored if t.author == "agent"][-3:]


def test_the_reply_time_limit_is_in_the_rules_and_the_status_says_when_it_is_near(server, context):
    """A participant silent on their turn for the silence limit ends the dialogue: nothing on
    the page said so (a generic participant's walk ran into it after 5 minutes)."""
    study = study_of(PERSUASION_LIVE_STUDY, "persuasion-silence-browser", side="pro")
    page = context.new_page()
    prolific_pid = enter(page, server, study)
    dialogue = PersuasionDialogue.objects.get(pro_participant__prolific_pid=prolific_pid)
    expect(page.locator("details.rules")).to_contain_text(
        f"On your turn, reply within {dialogue.silence_seconds} seconds, or the dialogue ends."
    )
    assert wait_my_turn_or_end(page)
    expect(status(page)).to_have_text(your_turn(1))
    # 40 seconds left (the server counts them: the page's clock may be off).
    quiet_since = timezone.now() - timedelta(seconds=dialogue.silence_seconds - 40)
    PersuasionDialogue.objects.filter(pk=dialogue.pk).update(last_move_at=quiet_since)
    page.reload()
    assert wait_my_turn_or_end(page)
    expect(status(page)).to_have_text(
        re.compile(r"^Your turn: reply within (30|40) seconds, or the dialogue ends\.$")
    )
    say(page, HUMAN_TURNS[0])  # a reply: the warning goes with the turn
    expect(status(page)).not_to_contain_text("or the dialogue ends", timeout=TURN_WAIT)


def test_two_participants_paired_in_the_waiting_room_debate_to_a_winner(server, context, partner, prolific):
    study = study_of(PERSUASION_HUMANS_STUDY, "persuasion-humans-browser")
    first, second = context.new_page(), partner.new_page()
    first_pid, second_pid = pair(first, second, server, study)
    pages = by_side(first, second)
    assert set(pages) == {"pro", "con"}
    pro, con = pages["pro"], pages["con"]

    assert wait_my_turn_or_end(pro)  # pro opens
    expect(con.locator("#p-composer")).to_be_hidden()
    expect(status(con)).to_have_text("Waiting for your opponent…")
    say(pro, HUMAN_TURNS[0])
    assert badges(pro, 1) == ["claim"]
    # Con sees pro's turn, read, and may now concede pro's initial claim.
    expect(con.locator("#p-chat > li.msg-other .move-kind")).to_have_text(["claim"], timeout=TURN_WAIT)
    assert wait_my_turn_or_end(con)
    assert read_out(con) == [f"Your opponent, Turn 1: {HUMAN_TURNS[0]}"]  # a human's turn, read out too
    assert read_out(pro) == []  # not one's own
    screenshot(con, "persuasion-humans-con-turn")
    say(con, CONCESSION)
    assert badges(con, 1) == ["concede"]

    expect(status(pro)).to_have_text("You won: your opponent conceded your initial claim.", timeout=TURN_WAIT)
    expect(status(con)).to_have_text(
        "Your opponent won: you conceded your opponent's initial claim.", timeout=TURN_WAIT
    )
    for page in (pro, con):
        expect(finish(page)).to_be_enabled()
        expect(page.locator("#p-composer")).to_be_hidden()
    screenshot(pro, "persuasion-humans-won")

    for page in (pro, con):
        submit(page, "Continue")
        after_the_dialogue(page)
        assert page.url == PROLIFIC_DONE + "CPHUMDONE"
    dialogue = PersuasionDialogue.objects.get()
    assert dialogue.pairing == "human_human"
    assert (dialogue.status, dialogue.winner, dialogue.end_reason) == ("finished", "pro", "conceded")
    assert {dialogue.pro_participant.prolific_pid, dialogue.con_participant.prolific_pid} == {
        first_pid,
        second_pid,
    }
    assert Participant.objects.filter(status=Participant.Status.COMPLETED).count() == 2


def test_when_nobody_comes_the_page_says_the_ai_took_the_empty_seat_and_the_dialogue_runs(server, context):
    study = study_of(PERSUASION_HUMANS_STUDY, "persuasion-humans-stand-in", wait_seconds=60)
    page = context.new_page()
    enter(page, server, study)
    expect(status(page)).to_have_text(re.compile("Waiting for another participant to join"))
    notice = page.locator("#p-stand-in")
    expect(notice).to_be_hidden()
    # The wait runs out (its clock moved back): the page's consumer notices within a second.
    PersuasionDialogue.objects.update(created_at=timezone.now() - timedelta(seconds=61))
    expect(notice).to_have_text("Nobody joined in time, so your opponent is an AI system.", timeout=TURN_WAIT)
    expect(notice).to_be_visible()
    expect(page.locator("#stores")).to_be_visible()
    dialogue = PersuasionDialogue.objects.get()
    assert (dialogue.status, dialogue.pairing) == ("running", "human_ai")
    # The dialogue goes on against the agent: whoever opens, a turn comes round to the participant.
    assert wait_my_turn_or_end(page)
    expect(status(page)).to_have_text(your_turn("[12]"))


def test_when_the_partner_leaves_the_remaining_participant_completes_with_the_partner_left_code(
    server, context, partner, prolific
):
    study = study_of(PERSUASION_HUMANS_STUDY, "persuasion-humans-left")
    first, second = context.new_page(), partner.new_page()
    first_pid, second_pid = pair(first, second, server, study)
    pages = by_side(first, second)
    pro = pages["pro"]
    assert wait_my_turn_or_end(pro)
    say(pro, HUMAN_TURNS[0])
    assert badges(pro, 1) == ["claim"]

    # The partner closes their tab and returns the study on Prolific.
    stays, leaves_pid = (first, second_pid) if pro is first else (second, first_pid)
    leaving = partner if stays is first else context
    leaving.close()
    participant_mark_returned(participant=Participant.objects.get(prolific_pid=leaves_pid))

    expect(status(stays)).to_have_text(
        "Your partner left the dialogue. Thank you: press Continue to go on.", timeout=TURN_WAIT
    )
    expect(finish(stays)).to_be_enabled()
    expect(stays.locator("#p-composer")).to_be_hidden()
    screenshot(stays, "persuasion-partner-left")
    with stays.expect_navigation(url=PROLIFIC_DONE + "CPERSLEFT"):
        stays.get_by_role("button", name="Continue", exact=True).click()

    assert prolific.visits == [PROLIFIC_DONE + "CPERSLEFT"]
    dialogue = PersuasionDialogue.objects.get()
    assert (dialogue.status, dialogue.end_reason) == ("abandoned", "partner_left")
    stayed = Participant.objects.get(prolific_pid=first_pid if stays is first else second_pid)
    assert stayed.status == Participant.Status.COMPLETED
    assert Participant.objects.get(prolific_pid=leaves_pid).status == Participant.Status.RETURNED


def test_an_ai_turn_whose_end_is_lost_on_the_way_is_shown_whole_and_the_dialogue_goes_on(server, context):
    """Pub/sub is at most once: when a server's link to Redis drops, a turn's end and the
    snapshot after it can be lost while the socket stays open. The page that heard nothing
    for a while (2 s here) with a turn being written asks for a snapshot, which has the stored
    turn, and the participant gets their turn."""
    study = study_of(
        PERSUASION_LIVE_STUDY, "persuasion-lost-end", side="pro", delay_min_s=0.2, delay_max_s=0.4
    )
    page = context.new_page()
    lost, asked_again = [], []

    def quick_to_ask_again(route) -> None:  # the page as served, with a 2 s quiet period
        if route.request.method != "GET":
            route.continue_()
            return
        response = route.fetch(max_redirects=0)
        body = re.sub(r'data-quiet-seconds="\d+"', 'data-quiet-seconds="2"', response.text())
        route.fulfill(response=response, body=body)

    def losing_the_first_end(ws) -> None:
        upstream = ws.connect_to_server()

        def from_server(message) -> None:
            kind = json.loads(message)["type"]
            if kind == "turn.end" and not lost:
                lost.append(kind)
                return
            if kind == "snapshot" and lost and not asked_again:  # lost with the end
                lost.append(kind)
                return
            ws.send(message)

        def from_page(message) -> None:
            if json.loads(message)["type"] == "resync":
                asked_again.append(message)
            upstream.send(message)

        upstream.on_message(from_server)
        ws.on_message(from_page)

    page.route(re.compile(r"/p/[^/]+/$"), quick_to_ask_again)
    page.route_web_socket(re.compile(r"/ws/persuasion/"), losing_the_first_end)
    prolific_pid = enter(page, server, study)
    assert wait_my_turn_or_end(page)
    say(page, HUMAN_TURNS[0])
    assert wait_my_turn_or_end(page)  # the AI's turn came, and then mine
    assert lost[0] == "turn.end" and asked_again
    dialogue = PersuasionDialogue.objects.get(pro_participant__prolific_pid=prolific_pid)
    ai = dialogue.turns.get(seq=2)
    assert ai.author == "agent" and ai.status == PersuasionTurn.Status.DONE
    shown = page.locator("#p-chat > li.msg-other").first
    expect(shown.locator(".move-kind").first).to_be_visible()  # read, with its moves
    expect(page.locator("#p-chat > li.msg-other.writing")).to_have_count(0)
    for sentence in re.split(r"(?<=[.?!])\s+", ai.text):
        expect(shown).to_contain_text(sentence)
