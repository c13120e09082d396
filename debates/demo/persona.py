"""The demo's LLM judges of design B (paper 001, Study II and Table 3): once `claim-debate` has
finished claim sessions (walk some participants through it, e.g. `devtools/walk_demo.py`),
a persona-and-naive judging job (two judge models) and a strategy-rating job (the paper's two
raters' labels, two offline raters) on them, run on the offline model. Without finished
sessions no job is made: load the demo again after walking participants."""

from __future__ import annotations

from debates.demo.claim_debate import CLAIM_DEBATE_STUDY
from debates.judges.persona_kinds import PersonaJudgesKind
from debates.judges.persona_services import sessions_for
from debates.judges.strategy_kinds import StrategyRatersKind
from debates.judges.strategy_prompts import DEFAULT_LABELS, parse_labels
from debates.models import Job

STUDY = CLAIM_DEBATE_STUDY["slug"]
JUDGES = [
    {"label": "P1", "model": "demo-judge-1", "temperature": 0.2, "price_in": "2.5", "price_out": "10"},
    {"label": "P2", "model": "demo-judge-2", "temperature": 0.2, "price_in": "0.15", "price_out": "0.6"},
]
RATERS = [
    {"label": "GPT", "model": "demo-rater-gpt", "temperature": 0.0, "price_in": "2.5", "price_out": "10"},
    {"label": "GEM", "model": "demo-rater-gemini", "temperature": 0.0, "price_in": "0.1", "price_out": "0.4"},
]
PERSONA_JOB = {
    "name": "demo-persona-judges",
    "kind": PersonaJudgesKind.key,
    "title": "Demo: persona and naive LLM judges of the claim-debate sessions",
    "config": {"study": STUDY, "models": JUDGES, "judges": "both", "max_tokens": 500, "seed": None},
    "budget_usd": "1.00",
    "concurrency": 4,
}
STRATEGY_JOB = {
    "name": "demo-strategy-raters",
    "kind": StrategyRatersKind.key,
    "title": "Demo: two LLM raters rate the claim-debate debaters' persuasion strategies",
    "config": {
        "study": STUDY,
        "labels": [
            {"name": label.name, "description": label.description} for label in parse_labels(DEFAULT_LABELS)
        ],
        "models": RATERS,
        "max_tokens": 300,
        "seed": None,
    },
    "budget_usd": "1.00",
    "concurrency": 4,
}


def design_b_judge_jobs(*, run: bool = True) -> list[Job]:
    """The two demo jobs (each created once), when `claim-debate` has finished sessions (else
    none); with `run`, run here to their end unless done already (the offline model: seconds).
    Call it outside a transaction, after `claim_study()`."""
    from debates.jobs.tasks import job_run_here

    if not sessions_for(STUDY).exists():
        return []
    jobs = []
    for spec in (PERSONA_JOB, STRATEGY_JOB):
        defaults = {key: value for key, value in spec.items() if key != "name"}
        job, _ = Job.objects.get_or_create(name=spec["name"], defaults=defaults)
        if run and job.status in (Job.Status.DRAFT, Job.Status.RUNNING, Job.Status.PAUSED):
            job_run_here(job.pk)
            job.refresh_from_db()
        jobs.append(job)
    return jobs
