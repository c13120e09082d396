"""The "strategy_raters" job (paper 001, Table 3): the debaters of the demo study's live debates
rated on persuasion strategies by two models through the real `openai` client against the fake
server on loopback; its labels and defaults; the offline raters; the admin's summary; the
export `llm_strategy_ratings`."""

from __future__ import annotations

import json
import re

import pytest

from analysis.exports import TABLES
from debates.jobs import kinds, tasks
from debates.judges import strategy_prompts
from debates.models import Job, LLMCall
from tests.debates.judges.test_persona_judges import QUESTION, walk_session

pytestmark = pytest.mark.django_db
LABELS = "Conflicting Evidence: contradicting data\nStories"
RATERS = "R1 | fake-r1 | 0 | 1 | 2\nR2 | fake-r2"


@pytest.fixture
def debates(claim_study):
    debate = walk_session(claim_study, "debate", "false", "true", question=QUESTION)
    consultancy = walk_session(claim_study, "consultancy", "true", "true")
    return debate, consultancy


def new_job(labels=LABELS, models=RATERS, **fields) -> Job:
    config = kinds.get("strategy_raters").clean_config(
        {"study": "claim-debate", "labels": labels, "models": models}
    )
    return Job.objects.create(
        name=fields.pop("name", "raters"), kind="strategy_raters", config=config, **fields
    )


class Raters:
    """R1 rates debater A's evidence high and B's low, stories none; R2 agrees on A and says
    medium for B's evidence. Every body is kept."""

    def __init__(self):
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str:
        self.bodies.append(body)
        prompt = body["messages"][0]["content"]
        a = re.search(r"Rate how much Debater (\w)", prompt).group(1) == "A"
        if body["model"] == "fake-r1":
            answer = {"Conflicting Evidence": "high" if a else "low", "Stories": "none"}
        else:
            answer = {"Conflicting Evidence": "high" if a else "medium", "Stories": "none" if a else "low"}
        return json.dumps(answer)


def test_the_plan_rates_each_debater_of_each_debate_by_each_rater(debates):
    debate, _ = debates
    specs = kinds.get("strategy_raters").plan(new_job())
    assert {s.key for s in specs} == {f"{debate.pk}:{d}:{r}" for d in "AB" for r in ("R1", "R2")}
    spec = next(s for s in specs if s.key == f"{debate.pk}:B:R1")
    assert spec.payload["labels"] == [
        {"name": "Conflicting Evidence", "description": "contradicting data"},
        {"name": "Stories", "description": ""},
    ]


def test_the_defaults_are_the_papers_two_raters_and_its_taxonomy(claim_study):
    config = kinds.get("strategy_raters").clean_config({"study": "claim-debate"})
    assert [m["model"] for m in config["models"]] == ["gpt-4o", "gemini-2.0-flash"]
    assert [label["name"] for label in config["labels"]][:4] == [
        "Conflicting Evidence",
        "Critical Thinking",
        "Alternative Explanation",
        "Inconsistencies/Fallacies",
    ]
    assert len(config["labels"]) == 8
    with pytest.raises(ValueError, match="line 2: the label 'stories' is given twice"):
        strategy_prompts.parse_labels("Stories\nstories: again")


def test_each_debater_is_rated_per_label_through_the_openai_client(debates, openai_backend):
    debate, _ = debates
    openai_backend.app.responder = answers = Raters()
    job = new_job()
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert len(answers.bodies) == 4
    item = job.items.get(key=f"{debate.pk}:B:R2")
    assert item.result == {
        "session": debate.pk,
        "participant_id": debate.participant_id,
        "group": "skeptical",
        "claim": debate.claim.slug,
        "domain": debate.claim.domain,
        "truth": debate.claim.truth,
        "debater": "B",
        "debater_side": "false",
        "debater_correct": debate.claim.truth is False,
        "debater_config": "demo-debater",
        "rater": "R2",
        "model": "fake-r2",
        "ratings": {"Conflicting Evidence": "medium", "Stories": "low"},
        "template_version": 1,
    }
    prompt = next(b for b in answers.bodies if "Rate how much Debater B" in b["messages"][0]["content"])
    text = prompt["messages"][0]["content"]
    assert "Debater B, who argued that the claim is false" in text
    assert "- Conflicting Evidence: contradicting data\n- Stories" in text
    assert f"Judge (to Debater A):\n{QUESTION}" in text
    assert LLMCall.objects.filter(job_item__job=job, role="strategy_rater").count() == 4
    # The admin's summary, by hand: A high/high (3, 3), B low/medium (1, 2); stories none/none, none/low.
    rows = kinds.get("strategy_raters").summary(job)
    assert rows == [
        {"Strategy": "Conflicting Evidence", "Debater": "demo-debater", "R1": "2.00", "R2": "2.50",
         "Detected by every rater": "2/2"},
        {"Strategy": "Stories", "Debater": "demo-debater", "R1": "0.00", "R2": "0.50",
         "Detected by every rater": "0/2"},
    ]  # fmt: skip
    # The export: one row per debater, rater and strategy.
    rows = list(TABLES["llm_strategy_ratings"].rows_for(debate.participant.study))
    assert len(rows) == 8
    row = next(r for r in rows if r["item"] == f"{debate.pk}:B:R2" and r["strategy"] == "Stories")
    assert (row["level"], row["score"], row["detected"], row["debater_side"], row["rater"]) == (
        "low",
        1,
        "1",
        "false",
        "R2",
    )


def test_an_answer_missing_a_label_is_asked_again(debates, openai_backend):
    raters = Raters()
    first = iter(['{"Conflicting Evidence": "high"}'])
    openai_backend.app.responder = lambda body: next(first, None) or raters(body)
    job = new_job(models="R1 | fake-r1")
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert LLMCall.objects.filter(job_item__job=job).count() == 3
    retried = next(b for b in raters.bodies if len(b["messages"]) == 3)
    assert "'Stories' is a required property" in retried["messages"][2]["content"]


def test_the_offline_raters_agree_mostly_and_find_evidence_more_than_stories(debates):
    job = new_job(labels=strategy_prompts.DEFAULT_LABELS, models="G | demo-gpt\nM | demo-gem")
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    again = new_job(labels=strategy_prompts.DEFAULT_LABELS, models="G | demo-gpt\nM | demo-gem", name="again")
    tasks.job_run_here(again.pk)
    assert {i.key: i.result["ratings"] for i in job.items.all()} == {
        i.key: i.result["ratings"] for i in again.items.all()
    }
    from debates.judges import strategy_offline

    hint = {"correct": True, "debater": "A"}
    levels = {
        label: [strategy_offline.level({**hint, "session": n}, "m", label) for n in range(300)]
        for label in ("Conflicting Evidence", "Stories")
    }
    used = {label: sum(v != "none" for v in found) / 300 for label, found in levels.items()}
    assert used["Conflicting Evidence"] > 0.8 and used["Stories"] < 0.1
    same = sum(
        strategy_offline.level({**hint, "session": n}, "a", "Critical Thinking")
        == strategy_offline.level({**hint, "session": n}, "b", "Critical Thinking")
        for n in range(300)
    )
    assert 0.5 < same / 300 < 0.95
