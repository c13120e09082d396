"""`manage.py pilot` end to end: uvicorn on the test database, the command's simulated
participants walking it over HTTP (and the claim study's websocket), then the pilot's report
and the list of pages where they got stuck or failed checks."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator

import httpx
import pytest
from django.core.management import CommandError, call_command

from analysis.exports import TABLES, csv_lines
from debates.demo import loader
from debates.models import LLMCall
from devtools import fakellm
from participants.models import Participant
from pilots import offline
from studies.models import Question, Study
from tests.support.cast import entry_url
from tests.support.servers import asgi_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def server(django_db_setup) -> Iterator[str]:
    with asgi_server(DJANGO_ALLOW_ASYNC_UNSAFE="", STUDY_CACHE_SECONDS="0", LLM_BACKEND="offline") as base:
        yield base


def pilot(*args: str, **options) -> str:
    out = io.StringIO()
    call_command("pilot", *args, stdout=out, **options)
    return out.getvalue()


def exported_pids(study: Study) -> list[str]:
    lines = list(csv_lines(TABLES["participants"], study))
    column = lines[0].strip().split(",").index("prolific_pid")
    return [line.strip().split(",")[column] for line in lines[1:]]


def test_pilots_walk_a_draft_study_and_get_a_report_of_their_own(server, tmp_path):
    study = loader.mystery_study()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT)
    output = pilot(
        study.slug, participants=3, concurrency=3, base_url=server, attentive=1.0, out=str(tmp_path)
    )
    pilots = Participant.objects.filter(study=study)
    assert pilots.count() == 3
    assert set(pilots.values_list("is_pilot", "status")) == {(True, Participant.Status.COMPLETED)}
    assert "Endings: CMYSTDONE ×3" in output
    # They answer at once: excluded for reading speed, which the output says is expected of pilots.
    assert (
        "Exclusions from analysis: " in output and "wpm ×3 (expected of pilots: they answer at once" in output
    )
    study.refresh_from_db()
    assert study.entered_at is None and study.status == Study.Status.DRAFT  # still a draft to edit
    assert exported_pids(study) == []  # the real data have none of them
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["n"]["participants"] == 3 and results["n"]["judgements"] == 3
    assert len((tmp_path / "participants.csv").read_text().strip().splitlines()) == 1 + 3
    summary = json.loads((tmp_path / "pilot.json").read_text())
    assert summary["statuses"] == {"completed": 3}
    assert all(o["stuck"] is None for o in summary["outcomes"])
    # The instructed check was passed by every attentive pilot: it is not listed.
    check = Question.objects.get(step__study=study, key="attention_1")
    assert all(p["position"] != check.step.position for p in summary["problems"])
    # A forged pilot token gets the bad-link page, and no participant.
    forged = httpx.get(f"{server}{entry_url(study)}&pilot=1:{study.slug}:abc:def")
    assert forged.status_code == 400 and "This link is not valid" in forged.text
    assert Participant.objects.filter(study=study).count() == 3


def test_an_impossible_check_is_listed_with_its_count(server, tmp_path):
    study = loader.mystery_study()
    # The text asks for 'Strongly disagree' but only 'Agree' passes: nobody following it can pass.
    check = Question.objects.get(step__study=study, key="attention_1")
    Question.objects.filter(pk=check.pk).update(expected_answer="Agree")
    output = pilot(
        study.slug, participants=3, concurrency=2, base_url=server, attentive=1.0, out=str(tmp_path)
    )
    line = next(line for line in output.splitlines() if f"step {check.step.position} " in line)
    assert re.search(r"\(attention_check\): 3 failed checks — failed check attention_1 ×3", line), line
    summary = json.loads((tmp_path / "pilot.json").read_text())
    listed = next(p for p in summary["problems"] if p["position"] == check.step.position)
    assert listed["failed_checks"] == 3 and listed["stuck"] == 0


def test_pilots_a_server_refuses_are_listed_as_stuck_at_the_link(server, tmp_path, monkeypatch):
    study = loader.mystery_study()
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    with pytest.raises(CommandError, match="pilots run on draft or live studies"):
        pilot(study.slug, participants=1, base_url=server)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.LIVE)
    # A token the server did not sign (as a command run against another server's key would hold).
    monkeypatch.setattr("pilots.services.pilot_token", lambda s: f"{s.pk}:{s.slug}:abc:def")
    output = pilot(study.slug, participants=2, base_url=server, out=str(tmp_path))
    assert "step 0 'The study link' (entry): 2 stuck — error page 400: " in output
    assert not Participant.objects.filter(study=study).exists()


@pytest.fixture
def model_server(settings):
    with fakellm.run_in_thread() as running:
        settings.LLM_BACKEND = "openai"
        settings.OPENAI_BASE_URL = running.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.LLM_MAX_RETRIES = 0
        yield running


def test_the_llm_policy_answers_each_page_asks_again_once_then_falls_back(server, model_server, tmp_path):
    study = loader.mystery_study()
    seen: list[str] = []

    def responder(body: dict) -> str:
        prompt = body["messages"][1]["content"]
        fields = json.loads(prompt.split("The form's fields:\n", 1)[1].rsplit("\n\nAnswer with", 1)[0])
        retry = len(body["messages"]) > 2
        seen.append(body["messages"][-1]["content"][:40])
        if "'Strongly disagree' for this question" in prompt:
            return "I would pick the first one."  # never JSON: asked again once, then the fallback
        if not retry:
            return '{"nonsense": true}'  # does not fit the form: asked again
        return json.dumps(offline.answer(fields))

    model_server.app.responder = responder
    output = pilot(
        study.slug,
        participants=2,
        concurrency=2,
        base_url=server,
        policy="llm",
        model="pilot-model",
        attentive=1.0,
        out=str(tmp_path),
    )
    assert "The model's answer was unusable 2 times" in output
    summary = json.loads((tmp_path / "pilot.json").read_text())
    answers = summary["model_answers"]
    fallbacks = [a for a in answers if a["result"] == "fallback"]
    assert {a["title"] for a in fallbacks} == {"A quick question"} and len(fallbacks) == 2
    assert "no JSON object" in fallbacks[0]["problem"]
    answered = [a for a in answers if a["result"] == "answered"]
    calls = LLMCall.objects.filter(role="pilot", study=study)
    assert calls.count() == 2 * len(answers) == len(seen)  # every page asked twice, each call logged
    assert len(answered) + len(fallbacks) == len(answers)
    # The fallback is the scripted answer, which follows the instruction: the check passed.
    assert set(Participant.objects.filter(study=study).values_list("is_pilot", "attention_failures")) <= {
        (True, 0),
        (True, 1),
    }
    assert calls.exclude(model="pilot-model").count() == 0
