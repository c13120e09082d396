"""The "llm_participants" job: its plan and configuration form, its items run through the
real `openai` client against the fake server on loopback (answers chosen per judge), the
prompt template's versions, the admin's result table, and the demo job on the offline model."""

import json
import re
from decimal import Decimal

import pytest

from debates.demo import loader
from debates.demo.judges import LLM_PARTICIPANTS_JOB
from debates.jobs import kinds, tasks, templates
from debates.judges import prompts
from debates.judges.kinds import LLMParticipantsForm
from debates.models import Dialogue, Job, LLMCall, PromptTemplate

pytestmark = pytest.mark.django_db
CULPRITS = {"Wren Hadley", "Nina Castellane"}  # of the demo's two cases
MODELS = "OR | fake-oracle | 0.3 | 1 | 4\nCO | fake-contrarian"


def new_job(study: str = "mystery-debate", models: str = MODELS, **fields) -> Job:
    config = kinds.get("llm_participants").clean_config({"study": study, "models": models})
    return Job.objects.create(
        name=fields.pop("name", "judges"), kind="llm_participants", config=config, **fields
    )


class Judges:
    """The fake server's answers: "fake-oracle" names the culprit's side (in a code fence),
    "fake-contrarian" the other side; every request body is kept."""

    def __init__(self):
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str:
        self.bodies.append(body)
        prompt = body["messages"][0]["content"]
        a = re.search(r"Side A stance: (.+) is responsible\.", prompt).group(1)
        culprit_side = "A" if a in CULPRITS else "B"
        if body["model"] == "fake-oracle":
            answer = {"side": culprit_side, "confidence": 90, "reasoning": "The evidence fits."}
            return f"```json\n{json.dumps(answer)}\n```"
        other = "B" if culprit_side == "A" else "A"
        return json.dumps({"side": other, "confidence": 40.4, "reasoning": "Side " + other + " was bolder."})


# --- plan and configuration ----------------------------------------------------------------------


def test_the_plan_is_one_item_per_dialogue_and_judge_with_the_judges_settings(mystery_study):
    job = new_job()
    specs = kinds.get("llm_participants").plan(job)
    slugs = sorted(Dialogue.objects.values_list("slug", flat=True))
    assert len(slugs) == 10 and len(specs) == 20
    assert {s.key for s in specs} == {f"{slug}:{label}" for slug in slugs for label in ("OR", "CO")}
    first = next(s for s in specs if s.key == "lighthouse-ledger-baseline:OR")
    assert first.payload == {
        "dialogue": "lighthouse-ledger-baseline",
        "judge": {
            "label": "OR",
            "model": "fake-oracle",
            "temperature": 0.3,
            "price_in": "1",
            "price_out": "4",
        },
    }


def test_a_study_limits_the_plan_to_its_dialogues_and_no_study_takes_every_dialogue(mystery_study):
    mystery_study.study_dialogues.filter(dialogue__case__slug="orchard-recital").delete()
    assert len(kinds.get("llm_participants").plan(new_job())) == 10
    assert len(kinds.get("llm_participants").plan(new_job(study="", name="every"))) == 20


def test_the_form_reads_the_model_lines_and_refuses_bad_ones(mystery_study):
    form = LLMParticipantsForm(data={"study": "mystery-debate", "models": MODELS})
    assert form.is_valid(), form.errors
    assert [m["label"] for m in form.cleaned_data["models"]] == ["OR", "CO"]
    # A stored configuration (a list) is valid again, and shown as the lines it came from.
    config = kinds.get("llm_participants").clean_config({"study": "mystery-debate", "models": MODELS})
    assert kinds.get("llm_participants").clean_config(config)["models"] == config["models"]
    assert (
        form.fields["models"].prepare_value(config["models"]).splitlines()[0]
        == "OR | fake-oracle | 0.3 | 1 | 4"
    )
    bad = LLMParticipantsForm(data={"study": "mystery-debate", "models": "OR | m\nOR | n"})
    assert not bad.is_valid() and "used twice" in str(bad.errors["models"])
    unknown = LLMParticipantsForm(data={"study": "no-such-study", "models": MODELS})
    assert not unknown.is_valid() and "study" in unknown.errors


# --- running against the loopback server ----------------------------------------------------------


def test_each_dialogue_is_judged_through_the_openai_client_and_scored(mystery_study, openai_backend):
    openai_backend.app.responder = answers = Judges()
    job = new_job()
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert len(answers.bodies) == 20 and {b["model"] for b in answers.bodies} == {
        "fake-oracle",
        "fake-contrarian",
    }
    body = next(b for b in answers.bodies if b["model"] == "fake-oracle")
    assert body["temperature"] == 0.3 and body["max_tokens"] == 600
    assert body["messages"][0]["content"].startswith(
        "You will read one debate between two sides about a case."
    )
    item = job.items.get(key="lighthouse-ledger-anchoring-rival:OR")
    dialogue = Dialogue.objects.get(slug="lighthouse-ledger-anchoring-rival")
    assert item.result == {
        "side": dialogue.culprit_side,
        "confidence": 90,
        "reasoning": "The evidence fits.",
        "culprit_side": dialogue.culprit_side,
        "correct": True,
        "condition": "anchoring",
        "variant": "V1",
        "active_side": "rival",
        "active_side_letter": dialogue.active_side_letter,
        "side_a": dialogue.side_a,
        "dialogue": dialogue.slug,
        "case": "lighthouse-ledger",
        "judge": "OR",
        "model": "fake-oracle",
        "template_version": 1,
    }
    contrarian = job.items.get(key="lighthouse-ledger-anchoring-rival:CO").result
    assert contrarian["correct"] is False and contrarian["confidence"] == 40
    # Every call is in the log with its item, the template version, the study and its cost.
    call = LLMCall.objects.get(job_item=item)
    assert (call.role, call.template_version, call.study_id) == ("llm_participant", 1, mystery_study.pk)
    expected = (Decimal(call.tokens_in) * 1 + Decimal(call.tokens_out) * 4) / 1_000_000
    assert call.cost_usd == pytest.approx(expected) and item.cost_usd == call.cost_usd > 0
    # The admin's Table 31: the oracle always right, the contrarian never.
    summary = kinds.get("llm_participants").summary(job)
    assert len(summary) == 11 and all(row["Accuracy"] == "1/2" for row in summary[:-1])
    assert (summary[-1]["OR"], summary[-1]["CO"], summary[-1]["Accuracy"]) == ("10/10", "0/10", "10/20")
    assert all(row["Shifted vs. baseline"] == "" for row in summary[:-1])


def test_an_answer_outside_the_schema_is_asked_again_then_used(mystery_study, openai_backend):
    replies = iter(['{"side": "C", "confidence": 50, "reasoning": "?"}'])
    judges = Judges()
    openai_backend.app.responder = lambda body: next(replies, None) or judges(body)
    job = new_job(models="OR | fake-oracle")
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    calls = LLMCall.objects.filter(job_item__job=job)
    assert calls.count() == 11  # one item asked twice
    assert all(item.result["correct"] for item in job.items.all())


def test_a_changed_template_is_a_new_version_used_by_later_items(mystery_study, openai_backend):
    openai_backend.app.responder = answers = Judges()
    assert tasks.job_run_here(new_job(models="OR | fake-oracle").pk) == Job.Status.DONE
    v1 = templates.latest(prompts.TEMPLATE_NAME, prompts.DEFAULT_TEMPLATE)
    assert v1.version == 1 and v1.used_at is not None
    text = (
        "Who did it?\nSide A stance: $side_a_stance\n$dialogue\nAnswer in JSON: side, confidence, reasoning."
    )
    v2 = templates.template_save(template=v1, text=text, note="shorter")
    assert v2.version == 2 and PromptTemplate.objects.get(pk=v1.pk).text == prompts.DEFAULT_TEMPLATE
    answers.bodies.clear()
    job = new_job(models="OR | fake-oracle", name="again")
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert all(b["messages"][0]["content"].startswith("Who did it?") for b in answers.bodies)
    assert {item.result["template_version"] for item in job.items.all()} == {2}
    assert set(LLMCall.objects.filter(job_item__job=job).values_list("template_version", flat=True)) == {2}


def test_a_dialogue_gone_since_the_plan_fails_its_item_only(mystery_study, openai_backend):
    openai_backend.app.responder = Judges()
    job = new_job(models="OR | fake-oracle")
    from debates.jobs import services

    services.job_plan(job=job)
    job.items.filter(key="orchard-recital-baseline:OR").update(
        payload={"dialogue": "gone", "judge": {"label": "OR", "model": "fake-oracle"}}
    )
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    failed = job.items.get(key="orchard-recital-baseline:OR")
    assert failed.status == "failed" and "'gone' no longer exists" in failed.error
    assert job.items.filter(status="done").count() == 9


def test_the_job_page_shows_table_31(mystery_study, openai_backend, experimenter):
    openai_backend.app.responder = Judges()
    job = new_job()
    tasks.job_run_here(job.pk)
    page = experimenter.get(f"/admin/debates/job/{job.pk}/change/").content.decode()
    assert '<table id="job-summary">' in page
    assert "<th>Shifted vs. baseline</th>" in page and "<td>10/10</td>" in page


def test_a_job_is_set_up_in_the_admin_with_the_kinds_form(mystery_study, experimenter):
    response = experimenter.post(
        "/admin/debates/job/add/?kind=llm_participants",
        {
            "name": "from-admin",
            "kind": "llm_participants",
            "title": "",
            "concurrency": 2,
            "config__study": "mystery-debate",
            "config__models": MODELS,
            "config__max_tokens": 300,
        },
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    job = Job.objects.get(name="from-admin")
    assert job.config["study"] == "mystery-debate" and job.config["max_tokens"] == 300
    assert [m["model"] for m in job.config["models"]] == ["fake-oracle", "fake-contrarian"]
    page = experimenter.get(f"/admin/debates/job/{job.pk}/change/").content.decode()
    assert "OR | fake-oracle | 0.3 | 1 | 4" in page


# --- the demo --------------------------------------------------------------------------------------


def test_the_demo_job_judges_the_mystery_dialogues_with_three_offline_judges(mystery_study):
    job = loader.llm_participants_job()
    assert job.status == Job.Status.DONE and job.items.filter(status="done").count() == 30
    assert job.config == LLM_PARTICIPANTS_JOB["config"]
    summary = {row["Dialogue"]: row for row in kinds.get("llm_participants").summary(job)}
    # Each offline judge favours the longer side: all three follow the verbose side...
    for slug in ("lighthouse-ledger-verbosity-culprit", "lighthouse-ledger-verbosity-rival"):
        verbose = Dialogue.objects.get(slug=slug).active_side_letter
        assert [summary[slug][label] for label in ("J1", "J2", "J3")] == [verbose] * 3
    # ...so the rows show shifts against the case's baseline.
    assert summary["lighthouse-ledger-verbosity-culprit"]["Accuracy"] == "3/3"
    assert summary["lighthouse-ledger-verbosity-rival"]["Accuracy"] == "0/3"
    assert any(row["Shifted vs. baseline"] for row in summary.values())
    # Loading the demo again runs nothing again.
    calls = LLMCall.objects.filter(job_item__job=job).count()
    assert calls == 30 and loader.llm_participants_job().pk == job.pk
    assert LLMCall.objects.filter(job_item__job=job).count() == calls
