"""Shared test cast: studies, participants and a walker that answers real forms."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from debates.demo.mystery import CASES_FILE, MYSTERY_STUDY
from debates.importing import cases_import
from debates.models import Dialogue, StudyDialogue
from studies.models import Study
from studies.services import _steps_cache, _study_cache, study_build, study_set_status
from tests.formparse import StepForm, default_answers, parse_step


def pytest_collection_modifyitems(config, items):
    """Tests marked postgres/redis are skipped unless the run is on PostgreSQL/Redis."""
    from django.conf import settings

    on_postgres = settings.DATABASES["default"]["ENGINE"].endswith("postgresql")
    on_redis = bool(settings.REDIS_URL)
    for item in items:
        if "postgres" in item.keywords and not on_postgres:
            item.add_marker(pytest.mark.skip(reason="needs PostgreSQL (DATABASE_URL)"))
        if "redis" in item.keywords and not on_redis:
            item.add_marker(pytest.mark.skip(reason="needs Redis (REDIS_URL)"))
        if "sqlite" in item.keywords and on_postgres:
            item.add_marker(pytest.mark.skip(reason="exercises the SQLite default"))
        if "embedded" in item.keywords and on_redis:
            item.add_marker(pytest.mark.skip(reason="in-process layer only; Redis has its own"))


@pytest.fixture(autouse=True)
def _instant_offline_model(settings):
    """The offline model writes without pausing between words (the demo pauses)."""
    settings.LLM_OFFLINE_TOKEN_DELAY_MS = 0
    # Turn writers run their ORM calls in the test's own thread, inside its transaction.
    settings.LIVE_DB_THREADS = 0


@pytest.fixture(autouse=True)
def _fresh_caches():
    _steps_cache.clear()
    _study_cache.clear()
    yield
    _steps_cache.clear()
    _study_cache.clear()


def pid() -> str:
    return secrets.token_hex(12)


def entry_url(study: Study, prolific_pid: str | None = None) -> str:
    return (
        f"/s/{study.slug}/?PROLIFIC_PID={prolific_pid or pid()}"
        f"&STUDY_ID={'a' * 24}&SESSION_ID={secrets.token_hex(12)}"
    )


CONSENT_STEP = {"kind": "consent", "title": "Consent", "config": {"text": "Please agree."}}
DEBRIEF_STEP = {"kind": "debrief", "title": "Thanks", "config": {"text": "Bye."}}


def build_study(steps: list[dict], **fields) -> Study:
    spec = {
        "slug": fields.pop("slug", f"study-{secrets.token_hex(4)}"),
        "title": "A test study",
        "completion_code": "CDONE",
        "failed_check_code": "CFAIL",
        "no_consent_code": "CNOCON",
        "screened_out_code": "CSCREEN",
        **fields,
        "steps": steps,
    }
    status = spec.pop("status", "live")
    study = study_build(spec=spec)
    if status != "draft":
        study_set_status(study=study, status=status)
    return study


@pytest.fixture
def questionnaire_study(db) -> Study:
    """consent → three questionnaire pages (with one attention check) → debrief."""
    return build_study(
        [
            CONSENT_STEP,
            {
                "kind": "questionnaire",
                "title": "Page one",
                "questions": [
                    {
                        "key": "colour",
                        "kind": "single_choice",
                        "text": "Pick a colour",
                        "options": ["Red", "Blue"],
                    },
                    {
                        "key": "agree",
                        "kind": "likert",
                        "text": "I like tests",
                        "options": ["No", "Meh", "Yes"],
                    },
                ],
            },
            {
                "kind": "attention_check",
                "title": "Page two",
                "questions": [
                    {
                        "key": "check_1",
                        "kind": "likert",
                        "text": "Select 'Disagree' for this question.",
                        "options": ["Strongly disagree", "Disagree", "Agree", "Strongly agree"],
                        "expected_answer": ["Disagree"],
                    }
                ],
            },
            {
                "kind": "questionnaire",
                "title": "Page three",
                "questions": [
                    {"key": "age", "kind": "number", "text": "Age", "min_value": 18, "max_value": 99},
                    {
                        "key": "warmth",
                        "kind": "slider",
                        "text": "How warm?",
                        "min_value": 0,
                        "max_value": 100,
                    },
                    {"key": "why", "kind": "text", "text": "Why?", "min_length": 10},
                ],
            },
            DEBRIEF_STEP,
        ],
        attention_failures_to_end=2,
    )


def load_mystery_study(**overrides) -> Study:
    cases_import(text=CASES_FILE.read_text(encoding="utf-8"))
    spec = {**MYSTERY_STUDY, **overrides}
    study = study_build(spec=spec)
    for dialogue in Dialogue.objects.all():
        StudyDialogue.objects.create(study=study, dialogue=dialogue)
    study_set_status(study=study, status=Study.Status.LIVE)
    return study


@pytest.fixture
def mystery_study(db) -> Study:
    return load_mystery_study()


class Walker:
    """A participant driving the real views with Django's test client."""

    def __init__(
        self,
        study: Study,
        prolific_pid: str | None = None,
        client: Client | None = None,
        read_seconds: int = 240,
    ) -> None:
        self.study = study
        self.read_seconds = read_seconds
        self.pid = prolific_pid or pid()
        self.client = client or Client()
        self.url = ""
        self.exit_url = ""

    def enter(self):
        response = self.client.get(entry_url(self.study, self.pid))
        assert response.status_code == 302, response.content[:500]
        self.url = response["Location"]
        return response

    def page(self) -> tuple[object, StepForm]:
        response = self.client.get(self.url)
        return response, parse_step(response.content.decode())

    def submit(self, overrides: dict | None = None, form: StepForm | None = None):
        if form is None:
            _, form = self.page()
        if form.kind == "dialogue" and self.read_seconds:
            # Read at a human pace: the server clock started read_seconds ago.
            from participants.models import Participant

            Participant.objects.filter(prolific_pid=self.pid, study=self.study).update(
                shown_at=timezone.now() - timedelta(seconds=self.read_seconds)
            )
            overrides = {"_active_ms": str(self.read_seconds * 900), **(overrides or {})}
        if form.kind == "recall_check" and "answer" not in (overrides or {}):
            overrides = {"answer": self.recall_answer(), **(overrides or {})}  # an attentive reader
        if form.kind == "pairwise" and "choice" not in (overrides or {}):
            overrides = {"choice": self.comparison_answer(form.hidden.get("_item")), **(overrides or {})}
        response = self.client.post(self.url, default_answers(form, overrides))
        if response.status_code in (302, 303) and not response["Location"].startswith("/"):
            self.exit_url = response["Location"]
        return response

    def recall_answer(self) -> str:
        from debates.models import DialogueAssignment

        dialogue = DialogueAssignment.objects.get(participant__prolific_pid=self.pid).dialogue
        return dialogue.case.recall.get("answer") or dialogue.suspect_for("A")

    def comparison_answer(self, order: str | None) -> str:
        """An attentive annotator: follows a check's instruction, else prefers Debate 1."""
        from debates.models import Comparison

        current = Comparison.objects.filter(participant__prolific_pid=self.pid, order=order).first()
        return current.check_answer if current is not None and current.is_check else "debate1"

    def walk(self, answers: dict[str, dict] | None = None, stop_before: str | None = None, limit: int = 30):
        """Answer every step (overrides keyed by step title) until the study ends."""
        answers = answers or {}
        for _ in range(limit):
            _, form = self.page()
            if not form.position:
                return
            if stop_before and form.title == stop_before:
                return
            response = self.submit(answers.get(form.title), form)
            assert response.status_code in (302, 303), (form.title, form.errors)
            if self.exit_url:
                return
        raise AssertionError("the study did not end")


@pytest.fixture
def walker_for():
    return Walker


def streamed_body(response) -> str:
    """The body of a streamed response, whether its iterator is sync or async."""
    from asgiref.sync import async_to_sync

    if response.is_async:

        async def collect():
            return b"".join([chunk async for chunk in response.streaming_content])

        return async_to_sync(collect)().decode()
    return b"".join(response.streaming_content).decode()


def load_claim_study(**overrides) -> Study:
    """The demo's design-B study (claims, a debater configuration), live."""
    from debates.claims_import import claims_import
    from debates.demo.claim_debate import CLAIM_DEBATE_STUDY, CLAIMS_FILE, DEBATERS
    from debates.models import Claim, DebaterConfig, StudyClaim

    claims_import(text=CLAIMS_FILE.read_text(encoding="utf-8"))
    for spec in DEBATERS:
        DebaterConfig.objects.get_or_create(name=spec["name"], defaults=spec)
    study = study_build(spec={**CLAIM_DEBATE_STUDY, **overrides})
    for claim in Claim.objects.all():
        StudyClaim.objects.create(study=study, claim=claim)
    study_set_status(study=study, status=Study.Status.LIVE)
    return study


@pytest.fixture
def claim_study(db) -> Study:
    return load_claim_study()


def drain_turns(session_id: int, limit: int = 20) -> int:
    """Generate every AI turn that is due, here and now (unit tests: no worker runs)."""
    from asgiref.sync import async_to_sync

    from debates import runner
    from debates.models import LiveTurn

    done = 0
    for _ in range(limit):
        turn = LiveTurn.objects.filter(session_id=session_id, status=LiveTurn.Status.PENDING).first()
        if turn is None:
            return done
        async_to_sync(runner.run_turn)(turn.pk)
        done += 1
    raise AssertionError("turns kept coming")


def load_pairs_study(annotations_per_instance: int = 3, per_pair: int = 4, **study_fields) -> Study:
    """The demo's design-D study on an instance set built from the demo dialogues."""
    from debates.demo.persuasion_pairs import PAIRS_SET, PERSUASION_PAIRS_STUDY
    from debates.models import Dialogue, InstanceSet
    from debates.pairwise import instance_set_from_dialogues

    cases_import(text=CASES_FILE.read_text(encoding="utf-8"))
    pool = InstanceSet.objects.filter(slug=PAIRS_SET["slug"]).first()
    if pool is None:
        pool = InstanceSet.objects.create(
            **{**PAIRS_SET, "annotations_per_instance": annotations_per_instance, "per_pair": per_pair}
        )
        instance_set_from_dialogues(instance_set=pool, dialogues=list(Dialogue.objects.all()))
    spec = {**PERSUASION_PAIRS_STUDY, **study_fields}
    study = study_build(spec=spec)
    study_set_status(study=study, status=Study.Status.LIVE)
    return study


@pytest.fixture
def pairs_study(db) -> Study:
    return load_pairs_study()
