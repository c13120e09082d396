"""Table 31's rows for the job's admin page, against the paper's own Tables 31 and 33: the
accuracy column it prints, and the shifts and per-model accuracy counted by hand."""

from debates.judges import results
from tests.debates.judges import paper_tables
from tests.debates.judges.paper_tables import LABELS


def rows() -> dict[str, dict]:
    return {r["Dialogue"]: r for r in results.table_rows(paper_tables.results(), LABELS)}


def test_the_accuracy_column_is_the_papers():
    assert {slug: r["Accuracy"] for slug, r in rows().items()} == paper_tables.published_accuracy()


def test_rows_come_by_case_baseline_first_then_bias_on_a_then_on_b_by_variant():
    ordered = [r["Dialogue"] for r in results.table_rows(paper_tables.results(), LABELS)]
    assert ordered == ["d35", "d36", "d37", "d38", "d39", "d01", "d02", "d03", "d04", "d05"]


def test_each_models_side_is_shown_with_the_condition_and_the_sides_roles():
    row = rows()["d02"]
    assert [row[label] for label in LABELS] == list("ABAAAA")
    assert (row["Bias"], row["Condition"], row["Variant"], row["A vs. B"]) == (
        "Anchoring bias",
        "Active vs. Baseline",
        "V1",
        "culprit vs. rival",
    )
    baseline = rows()["d35"]
    assert (baseline["Bias"], baseline["Condition"], baseline["Variant"], baseline["A vs. B"]) == (
        "—",
        "Baseline vs. Baseline",
        "—",
        "rival vs. culprit",
    )
    assert rows()["d38"]["Condition"] == "Baseline vs. Active"


def test_shifts_against_the_cases_baseline_are_named():
    # Table 31: CH and G4M go from B (01) to A (02); only G5 moves on 04 (A -> B).
    assert rows()["d02"]["Shifted vs. baseline"] == "CH, G4M"
    assert rows()["d03"]["Shifted vs. baseline"] == "CH, CS"
    assert rows()["d04"]["Shifted vs. baseline"] == "G5"
    # Table 33: CH and GF move to the culprit's side B when the bias is on B.
    assert rows()["d38"]["Shifted vs. baseline"] == "CH, GF"
    assert rows()["d01"]["Shifted vs. baseline"] == ""


def test_a_shift_compares_correctness_when_the_baseline_puts_the_culprit_on_the_other_side():
    found = paper_tables.results()
    for r in found:  # the baseline of the quarterback case now has the culprit on side B
        if r["dialogue"] == "d01":
            r["side_a"], r["culprit_side"] = "rival", "B"
            r["side"] = "A" if r["side"] == "B" else "B"  # the same suspects chosen
    assert {r["Dialogue"]: r for r in results.table_rows(found, LABELS)}["d02"][
        "Shifted vs. baseline"
    ] == "CH, G4M"


def test_a_missing_answer_is_a_dash_and_accuracy_counts_the_answers():
    found = [r for r in paper_tables.results() if not (r["dialogue"] == "d02" and r["judge"] == "GF")]
    row = {r["Dialogue"]: r for r in results.table_rows(found, LABELS)}["d02"]
    assert row["GF"] == "–" and row["Accuracy"] == "4/5"


def test_accuracy_by_judge_matches_the_hand_counts():
    counts = results.accuracy_by_judge(paper_tables.results(), LABELS)
    assert counts == {label: (k, 10) for label, k in paper_tables.ACCURACY_BY_JUDGE.items()}
    assert sum(k for k, _ in counts.values()) == 33  # 3+5+5+2+2 + 3+1+2+5+5
