"""The LLM participants' export (`llm_judgements`) and its way into the design A report: the
paper's Tables 31 and 33 stored as finished job items come back through the CSV with the
accuracy the paper prints and the per-model counts made by hand; only the study's own
finished items are exported."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.utils import timezone

from analysis.exports import TABLES, codebook_lines
from analysis.metrics import llm_judges
from analysis.reports import export_study
from debates.models import Job, JobItem
from tests.analysis.test_exports import fetch
from tests.debates.judges import paper_tables
from tests.support.cast import Walker

pytestmark = pytest.mark.django_db


def paper_job(study, name: str = "paper", kind: str = "llm_participants", status: str = "done") -> Job:
    """A finished job whose items hold the paper's answers."""
    models = [
        {"label": label, "model": f"model-{label.lower()}", "temperature": 0.5}
        for label in paper_tables.LABELS
    ]
    job = Job.objects.create(
        name=name, kind=kind, config={"study": study.slug if study else "", "models": models}
    )
    now = timezone.now()
    JobItem.objects.bulk_create(
        JobItem(
            job=job,
            key=f"{r['dialogue']}:{r['judge']}",
            payload={"dialogue": r["dialogue"], "judge": models[paper_tables.LABELS.index(r["judge"])]},
            status=status,
            result={**r, "template_version": 3},
            cost_usd="0.000120",
            finished_at=now,
        )
        for r in paper_tables.results()
    )
    return job


def test_one_row_per_answer_with_the_dialogues_design(experimenter, mystery_study):
    paper_job(mystery_study)
    rows = fetch(experimenter, mystery_study, "llm_judgements")
    assert len(rows) == 60
    row = next(r for r in rows if r["item"] == "d36:CS")
    assert row == {
        "study": "mystery-debate",
        "study_sha256": mystery_study.snapshot_sha256,
        "job": "paper",
        "item": "d36:CS",
        "dialogue": "d36",
        "case": "briefcase",
        "condition": "anchoring",
        "active_side": "rival",  # bias on A, the rival's side in Table 33
        "variant": "V1",
        "side_a": "rival",
        "culprit_side": "B",
        "active_side_letter": "A",
        "signed_active_side": "1",
        "judge": "CS",
        "model": "model-cs",
        "temperature": "0.5",
        "template_version": "3",
        "chosen_side": "A",
        "chose_a": "1",
        "correct": "0",
        "followed_bias": "1",
        "confidence": "70",
        "reasoning": "…",
        "cost_usd": "0.000120",
        "finished_at": row["finished_at"],
    }
    assert next(r for r in rows if r["item"] == "d35:CS")["followed_bias"] == ""  # a baseline


def test_only_the_studys_finished_items_of_llm_participant_jobs_are_exported(experimenter, mystery_study):
    paper_job(mystery_study)
    paper_job(mystery_study, name="unfinished", status="pending")
    paper_job(mystery_study, name="other-kind", kind="something_else")
    paper_job(None, name="every-dialogue")
    assert {r["job"] for r in fetch(experimenter, mystery_study, "llm_judgements")} == {"paper"}


def test_the_csv_round_trip_gives_the_papers_figures(mystery_study, tmp_path):
    paper_job(mystery_study)
    export_study(mystery_study, tmp_path)
    result = llm_judges.analyse(llm_judges.read_tables(tmp_path)["llm_judgements"])
    assert {
        r["dialogue"]: f"{r['k']}/{r['n']}" for r in result["table_31"]
    } == paper_tables.published_accuracy()
    by_judge = {j["judge"]: (j["k"], j["n"]) for j in result["by_judge"]}
    assert by_judge == {label: (k, 10) for label, k in paper_tables.ACCURACY_BY_JUDGE.items()}
    assert {s["judge"]: s["shifted"] for s in result["shifts"]} == paper_tables.SHIFTED


def test_the_design_a_report_has_the_llm_participants_and_the_same_from_its_csvs(mystery_study, tmp_path):
    for _ in range(3):
        w = Walker(mystery_study)
        w.enter()
        w.walk()
    paper_job(mystery_study)
    out = tmp_path / "report"
    call_command("analyze", mystery_study.slug, "--out", str(out), stdout=io.StringIO())
    results = json.loads((out / "results.json").read_text())
    assert results["llm_participants"]["n"] == {"answers": 60, "dialogues": 10, "judges": 6}
    keys = [t["key"] for t in results["tables"]]
    assert keys[-4:] == ["table_31", "llm_accuracy_by_judge", "llm_accuracy_by_condition", "items"]
    page = (out / "report.html").read_text()
    assert "LLM participants&#x27; decisions per dialogue (Tables 31-34)" in page
    again = tmp_path / "again"
    call_command(
        "analyze", "--from-csv", str(out), "--design", "A", "--out", str(again), stdout=io.StringIO()
    )
    assert (again / "results.json").read_text() == (out / "results.json").read_text()


def test_a_report_without_llm_participants_says_how_to_get_them(mystery_study, tmp_path):
    w = Walker(mystery_study)
    w.enter()
    w.walk()
    out = tmp_path / "report"
    call_command("analyze", mystery_study.slug, "--out", str(out), stdout=io.StringIO())
    results = json.loads((out / "results.json").read_text())
    assert results["llm_participants"] is None
    note = next(t for t in results["tables"] if t["key"] == "llm_participants")
    assert "run an “LLM participants” job" in note["note"]


def test_the_table_is_registered_with_a_codebook():
    assert TABLES["llm_judgements"].name == "llm_judgements"
    codebook = list(csv.reader(io.StringIO("".join(codebook_lines()))))
    columns = {column for table, column, _ in codebook if table == "llm_judgements" and column}
    assert {"judge", "model", "chosen_side", "correct", "followed_bias", "template_version"} <= columns
    # The analysis reads every exported column with a type.
    assert columns == set(llm_judges.SCHEMAS["llm_judgements"])


def test_a_window_of_the_table_is_the_whole_table_cut_the_same_way(mystery_study):
    """The API's pages read a window of llm_judgements with LIMIT and OFFSET, over two jobs."""
    paper_job(mystery_study, "first")
    paper_job(mystery_study, "second")
    paper_job(mystery_study, "failed", status="failed")
    table = TABLES["llm_judgements"]
    assert table.windowed
    whole = [[c.get(r) for c in table.columns] for r in table.rows_for(mystery_study)]
    assert len(whole) == 120 and {row[2] for row in whole[:60]} == {"first"}
    for window in [slice(0, 7), slice(55, 65), slice(119, 125), slice(120, 121), slice(200, 210)]:
        assert [[c.get(r) for c in table.columns] for r in table.rows_for(mystery_study, window)] == whole[
            window
        ]
