"""The demo's generation job (design A, paper 000 Tables 9-29): five of the 17 conditions
of the lighthouse case (the baseline and each bias once) built by the offline backend,
judged on the quality rubric and checked for the intervention, failures regenerated. The
built dialogues land in the library with their scores and provenance; none is offered to
a study until the experimenter adds it."""

from __future__ import annotations

from debates.generation.kinds import GenerateDialoguesKind
from debates.models import Job

GENERATION_JOB = {
    "name": "demo-generation",
    "kind": GenerateDialoguesKind.key,
    "title": "Demo: build five dialogues about The Lighthouse Ledger",
    "config": {
        "cases": ["lighthouse-ledger"],
        "conditions": ["1", "2", "6", "10", "14"],
        "side_a": "balanced",
        "fallacies": [],
        "words_per_turn": 170,
        "attempts": 3,
        "generator_model": "demo-writer",
        "generator_temperature": 0.7,
        "generator_price_in": "2.5",
        "generator_price_out": "10",
        "judge_model": "demo-judge",
        "judge_temperature": 0.0,
        "judge_price_in": "2.5",
        "judge_price_out": "10",
        "pass_mark": 27,
        "check_manifestation": True,
        "max_tokens": 700,
        "seed": 0,
    },
    "budget_usd": "2.00",
    "concurrency": 4,
}


def generation_job(*, run: bool = True) -> Job:
    """The demo job (created once); with `run`, run here to its end unless it is done already
    (offline: under a second). Call it outside a transaction, after the demo cases exist."""
    from debates.jobs.tasks import job_run_here

    spec = {key: value for key, value in GENERATION_JOB.items() if key != "name"}
    job, _ = Job.objects.get_or_create(name=GENERATION_JOB["name"], defaults=spec)
    if run and job.status in (Job.Status.DRAFT, Job.Status.RUNNING, Job.Status.PAUSED):
        job_run_here(job.pk)
        job.refresh_from_db()
    return job
