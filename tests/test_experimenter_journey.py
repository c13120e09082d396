"""The whole journey in a real browser (issue 13, "Done means"): a new experimenter builds a
design-A study with a condition of their own from an empty admin without typing JSON, previews
it, creates it on (our fake) Prolific and publishes it; two participants complete it in the
browser, a third returns their place on Prolific and the sync frees it; then the experimenter
approves one submission, rejects the other with a message and a category, and pays a bonus
once despite a double click.

Everything the experimenter does goes through the admin pages in Chromium. The dialogue's
turns come in through the import page (a file uploaded in the browser): the admin has no
form to write a dialogue's turns. Prolific's side (a participant taking a place, submitting,
returning) is played on the fake Prolific, as Prolific itself would change it.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
from collections.abc import Iterator

import pytest
from django.utils import timezone
from playwright.sync_api import Page, expect, sync_playwright

from debates.models import Case, Condition, Dialogue, DialogueAssignment, Judgement, StudyDialogue
from devtools.fakeprolific import FakeProlific, run_in_thread
from participants.models import Bonus, Participant, ProlificSubmission
from participants.places import places_held
from studies.models import Step, Study
from tests.support.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PROLIFIC_DONE,
    choose,
    heading,
    new_context,
    screenshot,
    slide_to,
    submit,
)
from tests.support.cast import PASSWORD, Walker, experimenter_user
from tests.support.servers import free_port, server_env, stop, uvicorn, wait_http

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.browser, pytest.mark.slow]

SLUG = "harbour-study"
CONDITION = {
    "slug": "false-urgency",
    "label": "False urgency",
    "description": "Urgency — a side pressed you to decide before weighing the evidence",
}
CASE = {
    "slug": "harbour-lantern",
    "title": "The Harbour Lantern",
    "story": "On a stormy night the harbour lantern went dark and a ship ran aground.\n\n"
    "Someone had cut the lantern's fuel line. Two keepers had keys to the lantern room.",
    "suspects": [
        ("Ines Marlow", "The night keeper, who reported the fault."),
        ("Tomas Reed", "The day keeper, who left early that evening."),
        ("Nora Vell", "The harbour master's clerk."),
    ],
    "culprit": "Tomas Reed",
    "rival": "Ines Marlow",
    "evidence": [
        "The fuel line was cut with a knife that had tar on its blade.",
        "Tomas Reed signed out of the harbour log at six, but his boat stayed moored until nine.",
        "Ines Marlow's lamp was seen in the keepers' hut all evening.",
    ],
    "recall": {
        "question": "What was found on the knife's blade?",
        "options": ["Tar", "Salt", "Paint"],
        "answer": "Tar",
    },
}
TURNS = [
    ("A", "Tomas Reed's boat stayed moored until nine [E2]: he never left the harbour."),
    ("B", "Ines Marlow had keys too, and she was the one on duty when the lantern failed."),
    ("A", "Her lamp burned in the hut all evening [E3]; the tar on the knife [E1] is a boatman's."),
    ("B", "Decide now: every minute spent on details lets the guilty keeper get away. It was Ines."),
    ("A", "The log, the boat and the tar all point to Tomas Reed. Weigh them, not the clock."),
    ("B", "There is no time to doubt: Ines Marlow was there, so Ines Marlow did it."),
]
# Steps as the experimenter adds them: (kind label in the select, title, the step form's fields).
STEPS = [
    ("consent", "Information and consent", {"config_text": "You will read a debate. Do you agree?"}),
    ("story", "The story", {}),
    ("dialogue", "The debate", {}),
    ("judgement", "Your judgement", {}),
    ("bias_detection", "About the debate", {}),
    ("recall_check", "A question about the debate", {}),
    ("debrief", "Thank you", {"config_text": "Thank you for taking part."}),
]
REASONING = "Side A's account of the boat, the log and the tar fits every piece of evidence."
REJECTION = (
    "Your answers to the judgement question were written before the debate could have been read; "
    "the reading time recorded for the debate page was far below what the text needs."
)


# --- Servers: the fake Prolific, Rostrum pointed at it, a browser -------------------------------


@pytest.fixture(scope="module")
def fake_server() -> Iterator:
    server = run_in_thread()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def base(django_db_setup, fake_server) -> Iterator[str]:
    """uvicorn on the test database, with the API token and address of the fake Prolific, and
    its own address as SITE_URL (the study URL given to Prolific)."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = server_env(
        DJANGO_ALLOW_ASYNC_UNSAFE="",
        STUDY_CACHE_SECONDS="0",
        SITE_URL=url,
        PROLIFIC_API_TOKEN=fake_server.app.token,
        PROLIFIC_API_URL=fake_server.api_url,
        PROLIFIC_MAX_RETRIES="1",
    )
    process = uvicorn(port, env)
    try:
        wait_http(f"{url}/healthz", process)
        yield url
    finally:
        stop(process)


@pytest.fixture(scope="module")
def chromium(base, prolific_stand_in):
    rules = f"--host-resolver-rules=MAP app.prolific.com 127.0.0.1:{prolific_stand_in.port}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, rules])
            yield browser
            browser.close()


@contextlib.contextmanager
def page_of(browser) -> Iterator[Page]:
    context = new_context(browser)
    try:
        yield context.new_page()
    finally:
        context.close()


# --- The experimenter's hands ------------------------------------------------------------------


def saved(page: Page, button: str = "Save") -> None:
    with page.expect_navigation():
        page.get_by_role("button", name=button, exact=True).click()
    errors = page.locator(".errornote, .errorlist").all_inner_texts()
    assert not errors, errors
    expect(page.locator(".messagelist .success").first).to_be_visible()


def create_condition(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.get_by_role("link", name="Conditions").click()
    page.get_by_role("link", name=re.compile("Add condition", re.I)).click()
    page.get_by_label("Slug").fill(CONDITION["slug"])
    page.get_by_label("Label").fill(CONDITION["label"])
    page.get_by_label("Description").fill(CONDITION["description"])
    expect(page.get_by_label("Baseline")).not_to_be_checked()
    saved(page)


def create_case(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/debates/case/")
    page.get_by_role("link", name=re.compile("Add case", re.I)).click()
    expect(page.locator("textarea[name='suspects'], textarea[name='evidence']")).to_have_count(0)
    page.get_by_label("Slug").fill(CASE["slug"])
    page.get_by_label("Title").fill(CASE["title"])
    page.get_by_label("Story").fill(CASE["story"])
    for number, (name, description) in enumerate(CASE["suspects"], start=1):
        if number > 1:
            page.get_by_role("button", name="Add a suspect").click()
        page.get_by_label(f"Name (suspect {number})", exact=True).fill(name)
        page.get_by_label(f"Description (suspect {number})", exact=True).fill(description)
    page.get_by_label("Culprit").fill(CASE["culprit"])
    page.get_by_label("Rival").fill(CASE["rival"])
    for number, text in enumerate(CASE["evidence"], start=1):
        if number > 1:
            page.get_by_role("button", name="Add an evidence unit").click()
        expect(page.get_by_label(f"Number (evidence unit {number})", exact=True)).to_have_value(str(number))
        page.get_by_label(f"Text (evidence unit {number})", exact=True).fill(text)
    recall = CASE["recall"]
    page.get_by_role("textbox", name="Question:").fill(recall["question"])
    page.get_by_role("textbox", name="Options:").fill("\n".join(recall["options"]))
    page.get_by_role("textbox", name="Correct answer:").fill(recall["answer"])
    screenshot(page, "journey-case")
    saved(page)


def import_dialogue(page: Page, base: str) -> None:
    """The turns of a dialogue have no form: they come in a file, uploaded on the import page."""
    document = {
        "format": "rostrum.cases/1",
        "dialogues": [
            {
                "slug": "harbour-urgency-rival",
                "case": CASE["slug"],
                "condition": CONDITION["slug"],
                "active_side": "rival",
                "variant": "V1",
                "side_a": "culprit",
                "turns": [{"speaker": s, "text": t} for s, t in TURNS],
            }
        ],
    }
    page.goto(f"{base}/admin/debates/case/")
    page.get_by_role("link", name="Import cases and dialogues").click()
    page.locator("input[type=file][name=file]").set_input_files(
        files=[
            {
                "name": "harbour-dialogues.json",
                "mimeType": "application/json",
                "buffer": json.dumps(document, indent=1).encode(),
            }
        ]
    )
    page.get_by_role("button", name=re.compile("Import", re.I)).click()
    expect(page.locator(".messagelist .success")).to_contain_text("dialogues: 1 new")


def create_study(page: Page, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.get_by_role("link", name="Studies", exact=True).first.click()
    page.get_by_role("link", name=re.compile("Add study", re.I)).click()
    page.get_by_label("Title").fill("Who let the lantern go dark?")
    page.get_by_label("Slug").fill(SLUG)
    page.get_by_label("Completion code").fill("CHARBDONE")
    page.get_by_label("Failed check code").fill("CHARBFAIL")
    page.get_by_label("No consent code").fill("CHARBNOCON")
    page.get_by_label("Target per item").fill("2")
    saved(page, "Save and continue editing")


def add_steps(page: Page) -> None:
    for number, (kind, title, _) in enumerate(STEPS):
        page.locator("#steps-group .add-row a").click()
        page.locator(f"select[name='steps-{number}-kind']").select_option(kind)
        page.locator(f"input[name='steps-{number}-title']").fill(title)
    saved(page, "Save and continue editing")


def configure_steps(page: Page, base: str, study: Study) -> None:
    for _, title, fields in STEPS:
        page.goto(f"{base}/admin/studies/study/{study.pk}/change/")
        row = page.locator("#steps-group tr").filter(has=page.locator(f"input[value='{title}']"))
        row.get_by_role("link", name="Configure this step").click()
        expect(page.locator("h1, h2").filter(has_text=re.compile("step", re.I)).first).to_be_visible()
        for name, value in fields.items():
            page.locator(f"[name='{name}']").fill(value)
        with page.expect_navigation():
            page.get_by_role("button", name="Save", exact=True).click()
        assert not page.locator(".errornote, .errorlist").all_inner_texts(), title
        expect(page).to_have_url(f"{base}/admin/studies/study/{study.pk}/change/")


def offer_dialogue(page: Page, base: str, study: Study) -> None:
    page.goto(f"{base}/admin/studies/study/{study.pk}/change/")
    group = page.locator("#study_dialogues-group")
    group.locator(".add-row a").click()
    group.locator(".select2-selection").first.click()
    page.locator(".select2-search__field").fill("harbour")
    page.locator(".select2-results__option").filter(has_text="harbour-urgency-rival").click()
    saved(page, "Save and continue editing")


def preview_bias_step(page: Page) -> None:
    """Preview from the bias-detection step, reading a dialogue of the new condition: its
    description is one of the answers participants can give."""
    page.get_by_role("link", name="Preview from a step…").click()
    page.get_by_label("Start at").select_option(label="5. About the debate (Bias detection)")
    page.get_by_label("Condition").select_option(label=CONDITION["label"])
    with page.expect_navigation():
        page.get_by_role("button", name="Open the preview").click()
    expect(page.locator("h1")).to_have_text("About the debate")
    expect(page.get_by_text(CONDITION["description"])).to_be_attached()
    screenshot(page, "journey-preview")


def prolific_page(page: Page, base: str, study: Study) -> None:
    page.goto(f"{base}/admin/studies/study/{study.pk}/change/")
    page.get_by_role("link", name="Prolific", exact=True).click()
    expect(page.locator("h2").first).to_have_text("The study on Prolific")


def prolific_action(page: Page, button: str) -> str:
    """Press a button of the study's Prolific page; the success message it leaves."""
    with page.expect_navigation():
        page.get_by_role("button", name=button, exact=True).click()
    errors = page.locator(".messagelist .error, .errornote, .errorlist").all_inner_texts()
    assert not errors, errors
    return page.locator(".messagelist").inner_text()


def prolific_link(fake: FakeProlific, study: Study, participant_id: str, session_id: str) -> str:
    """The participant's link, as Prolific makes it from the study URL it was given."""
    url = fake.studies[study.prolific_study_id]["external_study_url"]
    for name, value in (
        ("PROLIFIC_PID", participant_id),
        ("STUDY_ID", study.prolific_study_id),
        ("SESSION_ID", session_id),
    ):
        url = url.replace("{{%" + name + "%}}", value)
    return url


def takes_a_place(fake: FakeProlific, study: Study) -> tuple[str, str, str]:
    """Someone takes a place on Prolific: (PROLIFIC_PID, SESSION_ID, their link)."""
    participant_id, session_id = secrets.token_hex(12), secrets.token_hex(12)
    fake.submission_add(study.prolific_study_id, participant_id=participant_id, id=session_id)
    return participant_id, session_id, prolific_link(fake, study, participant_id, session_id)


def walks_the_study(page: Page, link: str) -> list[str]:
    """A careful participant, in the browser, from the Prolific link to the completion code."""
    page.goto(link)
    seen = []
    for _ in range(len(STEPS)):
        title = heading(page)
        seen.append(title)
        if title == "Information and consent":
            submit(page, "I agree to take part")
        elif title == "The story":
            expect(page.get_by_text(CASE["evidence"][0])).to_be_visible()
            submit(page, "I have read the story")
        elif title == "The debate":
            expect(page.get_by_text(TURNS[3][1])).to_be_visible()
            page.wait_for_timeout(300)
            submit(page, "I have read the debate")
        elif title == "Your judgement":
            page.locator("label.choice").filter(has_text=re.compile(r"^\s*Side A —")).click()
            slide_to(page, "How confident are you in your choice?", 80)
            page.get_by_label("In a few sentences, explain what led you to your choice.").fill(REASONING)
            submit(page, "Submit my judgement")
        elif title == "About the debate":
            choose(page, "deliberately argued in a manipulative way", "Yes")
            choose(page, "which side?", "Side B")
            choose(page, "what kind of manipulation was it?", CONDITION["description"])
            submit(page, "Continue")
        elif title == "A question about the debate":
            choose(page, CASE["recall"]["question"], CASE["recall"]["answer"])
            submit(page, "Continue")
        elif title == "Thank you":
            submit(page, "Finish and return to Prolific")
    return seen


def held(study: Study) -> int:
    """Places held in the study's dialogues (completed and not excluded, or in progress)."""
    rows = DialogueAssignment.objects.filter(study_dialogue__study=study)
    return sum(places_held(rows, "study_dialogue", timezone.now()).values())


def select_row(page: Page, participant_id: str) -> None:
    for box in page.locator("#submissions input[type=checkbox]").all():
        box.uncheck()
    page.get_by_label(f"select {participant_id}", exact=True).check()


# --- The test -----------------------------------------------------------------------------------


def test_a_new_experimenter_runs_a_design_a_study_from_an_empty_admin_to_paid_participants(
    base, chromium, fake_server, prolific_stand_in, transactional_db
):
    fake: FakeProlific = fake_server.app
    assert not Study.objects.exists() and not Case.objects.exists() and not Dialogue.objects.exists()
    experimenter_user()
    with page_of(chromium) as page:
        page.goto(f"{base}/admin/login/")
        page.get_by_label("Username").fill("experimenter")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()

        # Build: a condition, a case, its dialogue, the study, its steps, the dialogue offered.
        create_condition(page, base)
        condition = Condition.objects.get(slug=CONDITION["slug"])
        assert (condition.label, condition.baseline) == (CONDITION["label"], False)

        create_case(page, base)
        case = Case.objects.get(slug=CASE["slug"])
        assert case.suspects == [{"name": n, "description": d} for n, d in CASE["suspects"]]
        assert case.evidence == [{"number": i, "text": t} for i, t in enumerate(CASE["evidence"], 1)]
        assert case.recall == CASE["recall"]

        import_dialogue(page, base)
        dialogue = Dialogue.objects.get(slug="harbour-urgency-rival")
        assert (dialogue.case, dialogue.condition, dialogue.turns.count()) == (case, CONDITION["slug"], 6)

        create_study(page, base)
        study = Study.objects.get(slug=SLUG)
        add_steps(page)
        assert list(Step.objects.filter(study=study).order_by("position").values_list("kind", flat=True)) == [
            kind for kind, _, _ in STEPS
        ]
        configure_steps(page, base, study)
        offer_dialogue(page, base, study)
        assert StudyDialogue.objects.filter(study=study, dialogue=dialogue).exists()
        # What is left before going live: only Prolific's STUDY_ID, which the draft there brings;
        # and worth a look, not a stop: no reading-speed cap is set for the debate.
        problems = page.locator(".field-design_problems li")
        expect(problems).to_have_count(2)
        expect(problems.first).to_contain_text("The Prolific STUDY_ID is not set")
        expect(problems.last).to_contain_text("Worth a look: Step")
        expect(problems.last).to_contain_text("no reading-speed cap is set")
        screenshot(page, "journey-study")

        # Preview a step with a dialogue of the new condition: no place is taken.
        preview_bias_step(page)
        assert held(study) == 0

        # Prolific: the draft (from the study's URL and codes), then live here, then published.
        prolific_page(page, base, study)
        expect(page.locator("body")).to_contain_text("{{%PROLIFIC_PID%}}")
        page.get_by_label("Places").fill("2")
        page.get_by_role("textbox", name="Reward:", exact=True).fill("2.50")
        page.get_by_label("Description").fill("Read a short mystery and a debate about it, then judge.")
        message = prolific_action(page, "Create the draft on Prolific")
        assert "created on Prolific (UNPUBLISHED)" in message
        study.refresh_from_db()
        remote = fake.studies[study.prolific_study_id]
        assert remote["status"] == "UNPUBLISHED"
        assert remote["external_study_url"] == (
            f"{base}/s/{SLUG}/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
            "&SESSION_ID={{%SESSION_ID%}}"
        )
        assert {c["code"]: c["code_type"] for c in remote["completion_codes"]} == {
            "CHARBDONE": "COMPLETED",
            "CHARBFAIL": "FAILED_ATTENTION_CHECK",
            "CHARBNOCON": "NO_CONSENT",
        }
        assert (remote["total_available_places"], remote["reward"]) == (2, 250)

        page.goto(f"{base}/admin/studies/study/{study.pk}/change/")
        expect(page.locator(".field-design_problems")).to_contain_text("No problems found")
        page.get_by_label("Status").select_option("live")
        saved(page, "Save and continue editing")
        study.refresh_from_db()
        assert study.status == Study.Status.LIVE and study.locked_at is not None

        prolific_page(page, base, study)
        assert "published on Prolific (ACTIVE)" in prolific_action(page, "Publish on Prolific")
        assert fake.studies[study.prolific_study_id]["status"] == "ACTIVE"

        # A first participant completes it in a browser of their own.
        first_pid, first_session, link = takes_a_place(fake, study)
        with page_of(chromium) as first:
            assert walks_the_study(first, link) == [title for _, title, _ in STEPS]
            expect(first).to_have_url(PROLIFIC_DONE + "CHARBDONE")
        fake.submission_set(first_session, "AWAITING_REVIEW", entered_code="CHARBDONE")

        # A second one takes the last place (the story assigns the dialogue), then returns it on
        # Prolific: the study is full until the sync sees the return.
        returner_pid, returner_session, link = takes_a_place(fake, study)
        walker = Walker(study, prolific_pid=returner_pid)
        response = walker.client.get(link.removeprefix(base))
        assert response.status_code == 302, response.content[:300]
        walker.url = response["Location"]
        walker.submit()  # consent
        walker.submit()  # the story: a place
        returner = Participant.objects.get(study=study, prolific_pid=returner_pid)
        assert DialogueAssignment.objects.filter(participant=returner).exists()
        assert held(study) == 2  # = the dialogue's target: full
        fake.submission_set(returner_session, "RETURNED")

        prolific_page(page, base, study)
        message = prolific_action(page, "Sync submissions now")
        assert "Synced 2 submission(s): 1 place(s) freed" in message, message
        returner.refresh_from_db()
        assert returner.status == Participant.Status.RETURNED
        assert held(study) == 1

        # A third participant gets the freed place and completes it, in another browser.
        second_pid, second_session, link = takes_a_place(fake, study)
        with page_of(chromium) as second:
            assert walks_the_study(second, link) == [title for _, title, _ in STEPS]
            expect(second).to_have_url(PROLIFIC_DONE + "CHARBDONE")
        fake.submission_set(second_session, "AWAITING_REVIEW", entered_code="CHARBDONE")
        assert held(study) == 2
        for prolific_pid in (first_pid, second_pid):
            done = Participant.objects.get(study=study, prolific_pid=prolific_pid)
            assert done.status == Participant.Status.COMPLETED
            judgement = Judgement.objects.get(participant=done)
            assert (judgement.chosen_side, judgement.correct) == ("A", True)
        assert prolific_stand_in.visits.count(PROLIFIC_DONE + "CHARBDONE") == 2

        # Review: sync, approve the first, reject the second with a message and a category.
        prolific_page(page, base, study)
        assert "Synced 3 submission(s)" in prolific_action(page, "Sync submissions now")
        screenshot(page, "journey-review")
        select_row(page, first_pid)
        assert "Approved 1 submission(s)" in prolific_action(page, "Approve the selected")
        assert fake.submissions[first_session]["status"] == "APPROVED"

        select_row(page, second_pid)
        page.get_by_label("Rejection category").select_option("LOW_EFFORT")
        page.get_by_label("Message to the participant").fill(REJECTION)
        assert len(REJECTION) >= 100
        assert f"Rejected {second_pid} on Prolific" in prolific_action(page, "Reject the selected one")
        assert fake.submissions[second_session]["status"] == "REJECTED"
        rejected = ProlificSubmission.objects.get(submission_id=second_session)
        assert (rejected.rejection_category, rejected.rejection_message) == ("LOW_EFFORT", REJECTION)

        # A bonus to the approved participant, with a double click: paid once.
        select_row(page, first_pid)
        page.get_by_label("Bonus").fill("1.50")
        page.get_by_label("Reason").fill("A careful judgement")
        posts = []
        page.on("request", lambda request: posts.append(request) if request.method == "POST" else None)
        with page.expect_navigation():
            page.get_by_role("button", name="Pay a bonus to each selected").dblclick()
        expect(page.locator(".messagelist")).to_contain_text("bonus(es) sent to Prolific")
        # Chromium sends a double-clicked form once; another browser, or a slow page clicked
        # again, sends it twice: the same form, with the same key, goes again.
        assert posts
        again = page.request.post(
            posts[0].url,
            data=posts[0].post_data,
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        assert again.ok, again.status
        bonus = Bonus.objects.get()
        assert (bonus.state, bonus.amount_cents, bonus.participant.prolific_pid) == (
            Bonus.State.SENT,
            150,
            first_pid,
        )
        assert fake.pays() == 1
        assert fake.submissions[first_session]["bonus_payments"] == [150]
        page.goto(page.url)
        expect(page.locator("#bonuses")).to_contain_text("Sent")
        screenshot(page, "journey-paid")
