"""report.html as an analyst reads it: what was not computed and why, what to read with care,
and the study snapshots the data come from, beside the tables (results.json had them; the
page did not)."""

from __future__ import annotations

from analysis.metrics import synthetic
from analysis.reports import build_report


def write(tables: dict, folder) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False)


def test_an_analysis_that_cannot_be_estimated_is_said_with_its_reason(tmp_path):
    tables = synthetic.synthetic_a(n_participants=120, seed=0)
    j = tables["judgements"]
    j["chosen_side"], j["chose_a"] = "A", True  # everyone chose A: the logistic model separates
    j["correct"] = j["culprit_side"] == "A"
    j["study_sha256"] = "ab" * 32
    write(tables, tmp_path / "data")
    results = build_report(tmp_path / "data", tmp_path / "out", "A", bootstrap=20)
    page = (tmp_path / "out" / "report.html").read_text()
    assert "h1_regression" in results["skipped"]
    assert "<h2>Not computed</h2>" in page
    assert f"<code>h1_regression</code>: {results['skipped']['h1_regression']}" in page
    assert "ab" * 32 in page  # the snapshot the data come from
    assert "carry no frozen study snapshot" not in page


def test_groups_never_compared_are_a_warning_on_the_page(tmp_path):
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=1)
    c = tables["comparisons"]
    first = set(sorted(set(c["interlocutor_1"]))[:3])
    within = c["interlocutor_1"].isin(first) == c["interlocutor_2"].isin(first)
    tables["comparisons"] = c[within | (c["is_check"].astype(str) == "1")]
    write(tables, tmp_path / "data")
    results = build_report(tmp_path / "data", tmp_path / "out", "D", bootstrap=20)
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Read with care</h2>" in page
    assert "2 groups never compared with each other" in page and results["warnings"]


def test_an_empty_table_whose_analysis_was_not_computed_says_why_not_no_data(tmp_path):
    tables = synthetic.synthetic_b(n_participants=120, seed=0)
    j = tables["claim_judgements"]
    j["final_answer"] = j["truth"]  # every final answer right: the mixed models cannot be estimated
    j["final_correct"] = True
    write(tables, tmp_path / "data")
    results = build_report(tmp_path / "data", tmp_path / "out", "B", bootstrap=20)
    page = (tmp_path / "out" / "report.html").read_text()
    why = results["skipped"]["mixed_models"]
    assert f"Not computed: {why}." in page
