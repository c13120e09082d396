"""Building design-A dialogues as a job, through the real `openai` client against the fake
model server on loopback: reasons before dialogues, six turns saved with their provenance,
failing dialogues regenerated with a new seed and, when they never pass, kept out of
studies unless overridden; an unusable reason selection asked again; an attempt cut short
resumed without paying twice; the offline demo job."""

import json
import re
from collections import Counter
from decimal import Decimal

import pytest

from debates import llm
from debates.call_log import call_upper_bound
from debates.demo import loader
from debates.demo.generation import generation_job
from debates.generation import kinds, pipeline, prompts
from debates.jobs import services, tasks
from debates.models import Dialogue, DialogueAssignment, Job, JobItem, LLMCall, StudyDialogue
from studies.services import study_problems
from tests.support.cast import Walker

pytestmark = pytest.mark.django_db
CASE = "lighthouse-ledger"


class Model:
    """What the fake model answers, by the prompt it gets. `quality` gives each quality call's
    score per dimension in turn (then 5s); `manifest` says whether the intervention shows."""

    def __init__(self):
        self.quality: list[int] = []
        self.manifest = True
        self.bad_reasons = 0
        self.fail_turn: int | None = None
        self.seen = Counter()

    def __call__(self, body: dict) -> str:
        text = body["messages"][0]["content"]
        if "selector for evidence-grounded" in text:
            self.seen["reasons"] += 1
            if self.bad_reasons:
                self.bad_reasons -= 1
                return json.dumps({"primary": reason(1, 2), "additional": reason(2)})  # a subset
            return json.dumps({"primary": reason(1, 4), "additional": reason(5, 6)})
        if text.startswith("You are generating"):
            self.seen["turn"] += 1
            turn = int(re.search(r"Current turn id: (\d)", text).group(1))
            if self.fail_turn == turn:
                self.fail_turn = None
                return ""  # an empty turn: the attempt fails, the item is retried
            jargon = " Under a chain-of-custody analysis" if "Pro-jargon" in text else ""
            return f"Turn {turn} cites [E1] and [E4], seed {body.get('seed')}.{jargon}"
        if "Public Forum debate judge" in text:
            self.seen["quality"] += 1
            score = self.quality.pop(0) if self.quality else 5
            return json.dumps({"scores": dict.fromkeys(prompts.DIMENSIONS, score), "comments": "fine"})
        if "rhetorical technique appears" in text:
            self.seen["manifest"] += 1
            return json.dumps({"A": {"present": self.manifest}, "B": {"present": False}})
        raise AssertionError(f"an unexpected prompt: {text[:80]}")


def reason(*units):
    return {
        "evidence": list(units),
        "interpretations": [f"These facts {units} matter.", "They suggest access."],
    }


@pytest.fixture
def model(openai_backend):
    answers = Model()
    openai_backend.app.responder = answers
    return answers


@pytest.fixture
def cases(db):
    loader.demo_cases()


def new_job(conditions, **config) -> Job:
    base = {
        "cases": [CASE],
        "conditions": [str(n) for n in conditions],
        "side_a": "culprit",
        "generator_model": "fake",
        "generator_temperature": 0.7,
        "generator_price_in": "1000000",
        "generator_price_out": "1000000",
        "judge_model": "fake",
        "judge_temperature": 0,
        "judge_price_in": "1000000",
        "judge_price_out": "1000000",
        "pass_mark": 27,
        "check_manifestation": True,
        "max_tokens": 700,
        "seed": 5,
        "attempts": 2,
        "words_per_turn": 60,
    }
    config = kinds.GenerateDialoguesKind().clean_config({**base, **config})
    return Job.objects.create(
        name=f"gen-{len(conditions)}-{config['seed']}", kind=kinds.GENERATE, config=config
    )


def dialogue(job: Job, number: int) -> Dialogue:
    return Dialogue.objects.get(slug=f"{CASE}-{number:02d}-j{job.pk}")


def test_a_job_chooses_reasons_first_then_builds_each_condition_with_six_turns_and_provenance(cases, model):
    job = new_job([1, 10], concurrency=4)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    items = {item.key: item for item in job.items.all()}
    assert set(items) == {
        f"reasons:{CASE}:culprit",
        f"reasons:{CASE}:rival",
        f"dialogue:{CASE}:01",
        f"dialogue:{CASE}:10",
    }
    reasons_done = max(items[k].finished_at for k in items if k.startswith("reasons"))
    assert all(items[k].started_at >= reasons_done for k in items if k.startswith("dialogue"))
    assert model.seen == {"reasons": 4, "turn": 12, "quality": 4, "manifest": 1}

    jargon = dialogue(job, 10)
    assert (jargon.condition, jargon.variant, jargon.side_a, jargon.active_side) == (
        "pro_jargon",
        "V1",
        "culprit",
        "culprit",
    )
    turns = list(jargon.turns.values_list("number", "speaker", "text"))
    assert [(n, s) for n, s, _ in turns] == [(1, "A"), (2, "B"), (3, "A"), (4, "B"), (5, "A"), (6, "B")]
    assert "chain-of-custody" in turns[0][2] and "chain-of-custody" not in turns[1][2]
    assert jargon.quality_passed is True and jargon.quality_score == 30
    assert jargon.quality["manifestation"]["passed"] is True
    provenance = jargon.provenance
    assert provenance["generator"] == {"model": "fake", "temperature": 0.7}
    assert provenance["templates"] == {name: 1 for name in prompts.DEFAULTS}
    assert provenance["reasons"]["culprit"]["incriminating"]["primary"]["evidence"] == [1, 4]
    item = items[f"dialogue:{CASE}:10"]
    assert sorted(provenance["calls"]) == sorted(item.llm_calls.values_list("pk", flat=True))
    assert item.llm_calls.count() == 6 + 2 + 1  # turns, quality per side, manifestation
    assert item.cost_usd > 0 and dialogue(job, 1).quality["manifestation"] == {
        "checked": False,
        "passed": True,
    }
    summary = kinds.GenerateDialoguesKind().summary(job)
    assert [row["No."] for row in summary] == ["01", "10"] and summary[0]["Passed"] == "yes"


def test_a_failing_dialogue_is_rebuilt_with_a_new_seed_and_the_passing_one_kept(cases, model):
    model.quality = [3, 5]  # the first build's side A scores 18/30
    job = new_job([1])
    tasks.job_run_here(job.pk)
    kept = dialogue(job, 1)
    assert kept.quality_passed is True
    assert [(a["attempt"], a["passed"]) for a in kept.quality["attempts"]] == [(1, False), (2, True)]
    assert "side A scored 18/30" in kept.quality["attempts"][0]["why"]
    assert kept.provenance["attempt"] == 2
    seeds = {call.params["seed"] for call in LLMCall.objects.filter(role="gen_turn")}
    assert len(seeds) == 12  # two builds of six turns, each with its own seed
    assert f"seed {kept.provenance['seed'] + 1}" in kept.turns.get(number=1).text


def test_a_dialogue_that_never_passes_is_kept_out_of_studies_unless_overridden(cases, model):
    model.manifest = False  # the intervention never shows
    job = new_job([2])
    tasks.job_run_here(job.pk)
    failed = dialogue(job, 2)
    assert failed.quality_passed is False and failed.kept_out
    assert "did not show on the active side" in failed.quality["why"]
    assert len(failed.quality["attempts"]) == 2

    study = loader.mystery_study(target_per_item=10)
    StudyDialogue.objects.filter(study=study).exclude(dialogue__slug="lighthouse-ledger-baseline").delete()
    StudyDialogue.objects.create(study=study, dialogue=failed)
    assert any("failed the quality check" in p for p in study_problems(study))
    for _ in range(3):
        walker = Walker(study)
        walker.enter()
        walker.walk(stop_before="The debate")
    assert set(DialogueAssignment.objects.values_list("dialogue__slug", flat=True)) == {
        "lighthouse-ledger-baseline"
    }

    Dialogue.objects.filter(pk=failed.pk).update(quality_override=True)
    assert not any("failed the quality check" in p for p in study_problems(study))
    for _ in range(3):
        walker = Walker(study)
        walker.enter()
        walker.walk(stop_before="The debate")
    assert failed.slug in set(DialogueAssignment.objects.values_list("dialogue__slug", flat=True))


def test_a_reason_selection_citing_a_subset_is_asked_again_with_the_problem(cases, model):
    model.bad_reasons = 1
    job = new_job([1])
    tasks.job_run_here(job.pk)
    item = job.items.get(key=f"reasons:{CASE}:culprit")
    assert item.status == JobItem.Status.DONE
    calls = list(item.llm_calls.order_by("pk"))
    assert len(calls) == 3  # incriminating twice (asked again), exculpatory once
    assert "not the same or a subset" in calls[1].messages[-1]["content"]
    assert item.result["incriminating"]["additional"]["evidence"] == [5, 6]


def test_an_attempt_cut_short_is_resumed_without_paying_again_for_its_turns(cases, model, settings):
    model.fail_turn = 4  # the fourth turn comes back empty once
    job = new_job([1], attempts=1)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    item = job.items.get(key=f"dialogue:{CASE}:01")
    assert item.attempts == 2
    turn_calls = item.llm_calls.filter(role="gen_turn")
    assert turn_calls.count() == 7  # turns 1-3 once, turn 4 twice (the empty one, again), 5-6
    assert len(set(turn_calls.values_list("prompt_hash", flat=True))) == 6
    assert dialogue(job, 1).turns.count() == 6


def test_a_budget_stop_mid_dialogue_resumes_where_it_stopped_without_paying_twice(cases, model):
    # A first run of the same job measures what the reasons cost and what the first turn may cost.
    measure = new_job([1], attempts=1, seed=9)
    tasks.job_run_here(measure.pk)
    calls = LLMCall.objects.filter(job_item__job=measure)
    reasons_cost = sum(c.cost_usd for c in calls.filter(role="gen_reasons"))
    first = calls.filter(role="gen_turn").order_by("pk").first()
    request = llm.LLMRequest(model=first.model, messages=first.messages, **first.params)
    prices = pipeline.ModelSpec.from_config(measure.config, "generator")
    first_bound = call_upper_bound(request, prices)
    full_cost = services.job_spent(measure.pk)
    Job.objects.filter(pk=measure.pk).update(name="measured")

    job = new_job([1], attempts=1, seed=9)
    # One item at a time: no other item's call in flight is held against the budget.
    Job.objects.filter(pk=job.pk).update(
        budget_usd=reasons_cost + first_bound + Decimal("0.01"), concurrency=1
    )
    assert tasks.job_run_here(job.pk) == Job.Status.BUDGET
    made = LLMCall.objects.filter(job_item__job=job)
    assert made.filter(role="gen_turn").count() == 1  # stopped before the second turn
    assert job.items.get(key=f"dialogue:{CASE}:01").status == JobItem.Status.PENDING

    Job.objects.filter(pk=job.pk).update(budget_usd=None)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    assert made.filter(role="gen_turn").count() == 6
    assert (
        made.count() == len(set(made.values_list("prompt_hash", flat=True))) == 4 + 6 + 2
    )  # reasons, turns, quality
    assert services.job_spent(job.pk) == full_cost  # the first turn was not paid for twice


def test_a_case_without_enough_evidence_is_refused_by_the_form(cases):
    from debates.models import Case

    Case.objects.filter(slug=CASE).update(evidence=[{"number": 1, "text": "one"}])
    with pytest.raises(Exception, match="at least 4 numbered evidence units"):
        new_job([1])


def test_the_offline_demo_job_builds_its_five_dialogues_and_a_second_load_does_not_rebuild(db):
    loader.demo_cases()
    job = generation_job()
    assert job.status == Job.Status.DONE
    built = Dialogue.objects.filter(provenance__job="demo-generation")
    assert built.count() == 5
    assert {d.condition for d in built} == {
        "baseline",
        "anchoring",
        "fallacy_oversight",
        "pro_jargon",
        "verbosity",
    }
    assert all(d.turns.count() == 6 and d.quality_score for d in built)
    calls = LLMCall.objects.count()
    generation_job()
    assert LLMCall.objects.count() == calls
