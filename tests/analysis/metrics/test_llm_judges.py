"""The LLM participants' figures (paper 000, Tables 30-34) from the `llm_judgements` export,
against the paper's Tables 31 and 33: the accuracy it prints, and accuracy per model, per
condition and the shifts counted by hand; and their place in the design A report."""

import pandas as pd
import pytest

from analysis.metrics import llm_judges, report
from tests.analysis.metrics.test_report import SMALL
from tests.debates.judges import paper_tables
from tests.debates.judges.paper_tables import LABELS


def export_frame(results: list[dict], study: str = "s") -> pd.DataFrame:
    """The rows as the export writes them (text cells), typed as the report reads them."""
    rows = [
        {
            "study": study,
            "job": "j",
            "item": f"{r['dialogue']}:{r['judge']}",
            **{
                k: r[k]
                for k in ("dialogue", "case", "condition", "active_side", "variant", "side_a", "judge")
            },
            "culprit_side": r["culprit_side"],
            "active_side_letter": r["active_side_letter"],
            "signed_active_side": str({"A": 1, "B": -1, "": 0}[r["active_side_letter"]]),
            "model": r["model"],
            "chosen_side": r["side"],
            "chose_a": "1" if r["side"] == "A" else "0",
            "correct": "1" if r["correct"] else "0",
            "confidence": "70",
            "finished_at": "2025-01-01T00:00:00+00:00",
        }
        for r in results
    ]
    return llm_judges.typed("llm_judgements", pd.DataFrame(rows, dtype=str))


@pytest.fixture
def result():
    return llm_judges.analyse(export_frame(paper_tables.results()))


def test_table_31_has_the_papers_sides_and_accuracy(result):
    rows = {r["dialogue"]: r for r in result["table_31"]}
    assert {d: f"{r['k']}/{r['n']}" for d, r in rows.items()} == paper_tables.published_accuracy()
    assert "".join(rows["d36"]["sides"][label] for label in LABELS) == "AAAAAB"
    assert [r["dialogue"] for r in result["table_31"]] == [
        f"d{n}" for n in ("35", "36", "37", "38", "39")
    ] + [f"d0{n}" for n in range(1, 6)]


def test_shifts_and_the_accuracy_change_against_the_baseline(result):
    rows = {r["dialogue"]: r for r in result["table_31"]}
    assert rows["d02"]["shifted"] == ["CH", "G4M"] and rows["d02"]["toward_bias"] == ["CH", "G4M"]
    assert rows["d02"]["accuracy_change"] == pytest.approx(2 / 6)  # 5/6 - 3/6
    assert rows["d36"]["shifted"] == ["CS", "G4M"] and rows["d36"]["accuracy_change"] == pytest.approx(-2 / 6)
    assert rows["d04"]["shifted"] == ["G5"] and rows["d04"]["toward_bias"] == ["G5"]
    assert rows["d01"]["shifted"] == [] and rows["d01"]["accuracy_change"] is None
    shifts = {s["judge"]: s for s in result["shifts"]}
    assert {j: s["shifted"] for j, s in shifts.items()} == paper_tables.SHIFTED
    assert all(s["compared"] == 8 for s in shifts.values())
    assert all(s["toward_bias"] == s["shifted"] for s in shifts.values())  # in these tables, every shift


def test_accuracy_per_model_with_wilson_intervals(result):
    by_judge = {j["judge"]: j for j in result["by_judge"]}
    assert list(by_judge) == LABELS
    assert {j: (b["k"], b["n"]) for j, b in by_judge.items()} == {
        j: (k, 10) for j, k in paper_tables.ACCURACY_BY_JUDGE.items()
    }
    assert by_judge["CH"]["model"] == "model-ch"
    assert (result["overall"]["k"], result["overall"]["n"]) == (33, 60)


def test_accuracy_per_condition_and_biased_role(result):
    by = {(c["condition"], c["active_side"]): c for c in result["by_condition"]}
    assert list(by) == [("baseline", "none"), ("anchoring", "culprit"), ("anchoring", "rival")]
    # Baseline 3/6 + 3/6; bias on the culprit's side 02, 03, 38, 39; on the rival's 04, 05, 36, 37.
    assert [(c["k"], c["n"]) for c in by.values()] == [(6, 12), (20, 24), (7, 24)]
    # 6/12 by hand: centre 0.5, half-width 1.96 * sqrt(.25/12 + 1.96^2/576) / (1 + 1.96^2/12) = 0.2462.
    assert by[("baseline", "none")]["lo"] == pytest.approx(0.2538, abs=1e-4)
    assert by[("baseline", "none")]["hi"] == pytest.approx(0.7462, abs=1e-4)


def test_the_last_answer_counts_when_two_jobs_judged_the_same_dialogue():
    found = paper_tables.results()
    again = {
        **next(r for r in found if r["dialogue"] == "d01" and r["judge"] == "CH"),
        "side": "A",
        "correct": True,
    }
    frame = export_frame([*found, again])
    frame.loc[frame.index[-1], "finished_at"] = pd.Timestamp("2025-02-01", tz="UTC")
    result = llm_judges.analyse(frame)
    rows = {r["dialogue"]: r for r in result["table_31"]}
    assert rows["d01"]["sides"]["CH"] == "A" and (rows["d01"]["k"], rows["d01"]["n"]) == (4, 6)
    assert result["warnings"] == [
        "llm_judgements.csv: 1 earlier answer of an item answered again (a rerun) left out: the last "
        "by finished_at counts."
    ]


def test_a_rerun_under_the_same_label_with_another_model_is_said():
    """A second job that gave the labels of the first to other models replaced the first job's
    answers in every figure, without a word (50 rows exported, 30 answers reported)."""
    found = paper_tables.results()
    again = [{**r, "model": "another-model"} for r in found if r["judge"] == "CH"]
    frame = export_frame([*found, *again])
    frame.loc[frame.index[len(found) :], "finished_at"] = pd.Timestamp("2025-02-01", tz="UTC")
    result = llm_judges.analyse(frame)
    [warning] = result["warnings"]
    assert warning.startswith(f"llm_judgements.csv: {len(again)} earlier answers of an item answered again")
    assert f"{len(again)} of them came from another model under the same label" in warning
    assert "judge CH:" in warning and "replaced by another-model" in warning


def test_rows_without_an_answer_are_left_out_and_said():
    """A failed call is exported with a blank chosen side: left out, as before, but no longer
    silently (only the count of answers had moved)."""
    found = paper_tables.results()
    whole = llm_judges.analyse(export_frame(found))
    frame = export_frame([*found, {**found[0], "dialogue": "d99", "side": ""}])
    notes: list[str] = []
    result = llm_judges.analyse(frame, notes)
    assert result["table_31"] == whole["table_31"]
    assert "llm_judgements.csv: 1 row(s) without a chosen side (no answer) left out." in result["warnings"]
    assert notes == result["warnings"]


def test_no_answers_is_none():
    assert llm_judges.analyse(None) is None
    assert llm_judges.analyse(export_frame([])) is None


def test_missing_columns_are_named():
    with pytest.raises(ValueError, match="'judge'"):
        llm_judges.analyse(pd.DataFrame({"dialogue": ["d"], "case": ["c"], "condition": ["baseline"]}))


def test_the_design_a_report_has_the_llm_participants_section():
    tables = {**SMALL["A"](), "llm_judgements": export_frame(paper_tables.results())}
    results = report.analyze(tables, "A", seed=1, bootstrap=20)
    assert results["llm_participants"]["n"] == {"answers": 60, "dialogues": 10, "judges": 6}
    by_key = {t["key"]: t for t in results["tables"]}
    table = by_key["table_31"]
    assert table["columns"] == [
        "Dialogue", "Bias", "A vs. B", "Condition", "Variant", *LABELS, "Accuracy", "Change vs. baseline (pp)"
    ]  # fmt: skip
    assert table["rows"][6] == [
        "d02", "Anchoring bias", "culprit vs. rival", "Active vs. Baseline", "V1",
        "A*", "B", "A", "A", "A*", "A", "5/6", "+33",
    ]  # fmt: skip
    accuracy = {row[0]: row for row in by_key["llm_accuracy_by_judge"]["rows"]}
    assert accuracy["G5"][2:4] == [10, 80.0] and accuracy["CH"][5:] == [8, 4, 4]


def test_without_llm_judgements_the_section_is_a_note():
    results = report.analyze(SMALL["A"](), "A", seed=1, bootstrap=20)
    assert results["llm_participants"] is None
    note = next(t for t in results["tables"] if t["key"] == "llm_participants")
    assert note["rows"] == [] and "LLM participants" in note["note"]
