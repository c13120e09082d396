"""Design B's LLM judges reach the study's report: participants walked through the demo's
claim study, persona/naive judges and strategy raters run on the offline model, then
`manage.py analyze` on the study and on its CSVs (the same results), with the "LLM judges"
section; pilots' and previews' sessions stay out of the real data."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from analysis.exports import TABLES
from debates.jobs import kinds, tasks
from debates.models import Job
from participants.models import Participant
from tests.debates.judges.test_persona_judges import QUESTION, walk_session

pytestmark = pytest.mark.django_db


def run_job(kind: str, **config) -> Job:
    config = kinds.get(kind).clean_config({"study": "claim-debate", **config})
    job = Job.objects.create(name=kind, kind=kind, config=config)
    assert tasks.job_run_here(job.pk) == Job.Status.DONE
    return job


def test_the_llm_judges_are_in_the_design_b_report(claim_study, tmp_path):
    debate = walk_session(claim_study, "debate", "false", "true", question=QUESTION, complete=True)
    walk_session(claim_study, "consultancy", "true", "false", complete=True)
    run_job("persona_judges", models="P1 | demo-judge-1")
    run_job("strategy_raters", models="G | demo-gpt\nM | demo-gem")
    out = tmp_path / "report"
    call_command("analyze", "claim-debate", "--out", str(out), stdout=io.StringIO())
    results = json.loads((out / "results.json").read_text())
    judges = results["llm_judges"]["judges"]
    # Four sessions (two claims each), each judged by P1 with and without the persona.
    assert judges["n"] == {"answers": 8, "sessions": 4, "claims": judges["n"]["claims"], "judges": 2}
    humans = next(a for a in judges["accuracy"] if a["judge"] == "Humans" and a["protocol"] == "all")
    assert humans["final"]["n"] == 4
    strategies = results["llm_judges"]["strategies"]
    # Both participants' debates: the first's claim 1, and whichever claim 2 was a debate.
    assert strategies["raters"] == ["G", "M"] and strategies["n"]["strategies"] == 8
    assert {t["key"] for t in results["tables"]} >= {"llm_judges_accuracy", "llm_strategies"}
    page = (out / "report.html").read_text()
    assert "Agreement of LLM judges with their humans" in page
    again = tmp_path / "again"
    call_command(
        "analyze", "--from-csv", str(out), "--design", "B", "--out", str(again), stdout=io.StringIO()
    )
    assert (again / "results.json").read_text() == (out / "results.json").read_text()
    # A preview's or pilot's session is never in the export, even when a job judged it.
    Participant.objects.filter(pk=debate.participant_id).update(is_pilot=True)
    rows = list(TABLES["llm_persona_judgements"].rows_for(claim_study))
    assert len(rows) == 4 and debate.pk not in {r["session"] for r in rows}
    assert debate.pk not in {r["session"] for r in TABLES["llm_strategy_ratings"].rows_for(claim_study)}
