"""The demo's LLM participants (design A, paper 000 Tables 30-34): a job judging every dialogue
of `mystery-debate` with three judge models. On the offline backend (the demo's) each judge
favours the side that argued at greater length, with its own small lean, so the job's
Table 31 shows judges disagreeing on the baselines and shifting with the verbosity bias."""

from __future__ import annotations

from debates.demo.mystery import MYSTERY_STUDY
from debates.judges.kinds import LLMParticipantsKind
from debates.models import Job

JUDGES = [
    {"label": "J1", "model": "demo-judge-1", "temperature": 0.0, "price_in": "1", "price_out": "4"},
    {"label": "J2", "model": "demo-judge-2", "temperature": 0.0, "price_in": "1", "price_out": "4"},
    {"label": "J3", "model": "demo-judge-3", "temperature": 0.0, "price_in": "1", "price_out": "4"},
]
LLM_PARTICIPANTS_JOB = {
    "name": "demo-llm-participants",
    "kind": LLMParticipantsKind.key,
    "title": "Demo: three LLM participants judge the mystery-debate dialogues",
    "config": {"study": MYSTERY_STUDY["slug"], "models": JUDGES, "max_tokens": 600, "seed": None},
    "budget_usd": "1.00",
    "concurrency": 4,
}


def llm_participants_job(*, run: bool = True) -> Job:
    """The demo job (created once); with `run`, run here to its end unless it is done already
    (the offline model: a second). Call it outside a transaction, after `mystery_study()`."""
    from debates.jobs.tasks import job_run_here

    spec = {key: value for key, value in LLM_PARTICIPANTS_JOB.items() if key != "name"}
    job, _ = Job.objects.get_or_create(name=LLM_PARTICIPANTS_JOB["name"], defaults=spec)
    if run and job.status in (Job.Status.DRAFT, Job.Status.RUNNING, Job.Status.PAUSED):
        job_run_here(job.pk)
        job.refresh_from_db()
    return job
