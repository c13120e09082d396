"""Design B's LLM judges (paper 001, Study II, Table 3) from the export tables, against hand
computations: accuracy of humans, persona and naive judges; agreement and Cohen's kappa with
the humans; per claim; strategy means, Table 3's "detected by every rater" and the raters'
agreement; the report's section (and its note without any)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.metrics import llm_persona, report, synthetic

# Four sessions. c1 is true, c2 false. s4's human is excluded, so its rows do not count.
#            session claim truth protocol     human initial, final
SESSIONS = {
    1: ("c1", "true", "debate", "false", "true"),
    2: ("c1", "true", "consultancy", "true", "false"),
    3: ("c2", "false", "debate", "false", "false"),
    4: ("c2", "false", "consultancy", "true", "true"),
}
# Judge finals: P (persona) T, F, T; N (naive) T, T, T. Initial answers all "true".
FINALS = {
    ("P", "persona"): ["true", "false", "true", "false"],
    ("N", "naive"): ["true", "true", "true", "true"],
}


def judgements_frame() -> pd.DataFrame:
    rows = []
    for (judge, kind), finals in FINALS.items():
        for session, final in zip(SESSIONS, finals):
            claim, truth, protocol, h_initial, h_final = SESSIONS[session]
            rows.append(
                {
                    "study": "s",
                    "session": str(session),
                    "participant_id": str(session),
                    "participant_status": "completed",
                    "excluded": "1" if session == 4 else "0",
                    "claim": claim,
                    "truth": truth,
                    "protocol": protocol,
                    "judge": judge,
                    "model": f"model-{judge}",
                    "judge_kind": kind,
                    "initial_answer": "true",
                    "final_answer": final,
                    "human_initial_answer": h_initial,
                    "human_final_answer": h_final,
                    "finished_at": "2026-01-02T00:00:00+00:00",
                }
            )
    # An earlier job's answer for the same session, judge and kind: the later one counts.
    earlier = dict(rows[0], final_answer="false", finished_at="2026-01-01T00:00:00+00:00")
    return pd.DataFrame([earlier, *rows])


def test_accuracy_of_humans_persona_and_naive_judges_by_hand():
    r = llm_persona.analyse_judges(llm_persona.typed(llm_persona.JUDGEMENTS, judgements_frame()))
    assert r["n"] == {"answers": 6, "sessions": 3, "claims": 2, "judges": 2}
    pooled = {(a["judge"], a["kind"]): a for a in r["accuracy"] if a["protocol"] == "all"}
    # Humans: s1 right, s2 wrong, s3 right. P: s1 right, s2 wrong, s3 wrong. N: right, right, wrong.
    assert (pooled[("Humans", "")]["final"]["k"], pooled[("Humans", "")]["final"]["n"]) == (2, 3)
    assert (pooled[("P", "persona")]["final"]["k"], pooled[("P", "persona")]["final"]["n"]) == (1, 3)
    assert (pooled[("N", "naive")]["final"]["k"], pooled[("N", "naive")]["final"]["n"]) == (2, 3)
    # Initial "true" everywhere: right on s1, s2 (c1 is true), wrong on s3. Humans: F, T, F.
    assert pooled[("P", "persona")]["initial"]["k"] == 2 and pooled[("Humans", "")]["initial"]["k"] == 2
    debate = {(a["judge"], a["kind"]): a["final"]["k"] for a in r["accuracy"] if a["protocol"] == "debate"}
    assert debate == {("Humans", ""): 2, ("P", "persona"): 1, ("N", "naive"): 1}
    assert [a["protocol"] for a in r["accuracy"]][:3] == ["all"] * 3


def test_agreement_and_cohens_kappa_with_the_humans_by_hand():
    r = llm_persona.analyse_judges(judgements_frame())
    pooled = {(a["judge"], a["kind"]): a for a in r["agreement"] if a["protocol"] == "all"}
    persona, naive = pooled[("P", "persona")]["final"], pooled[("N", "naive")]["final"]
    # P (T, F, T) vs humans (T, F, F): p_o = 2/3; p_e = 2/3 * 1/3 + 1/3 * 2/3 = 4/9; κ = (2/9) / (5/9).
    assert (persona["k"], persona["n"]) == (2, 3) and persona["kappa"] == pytest.approx(0.4)
    # N (T, T, T) vs humans: p_o = 1/3 = p_e = 1 * 1/3: κ = 0.
    assert (naive["k"], naive["n"]) == (1, 3) and naive["kappa"] == pytest.approx(0.0)
    # Initial: judges all "true", humans F, T, F: p_o = 1/3, p_e = 1/3: κ = 0.
    assert pooled[("P", "persona")]["initial"]["k"] == 1 and pooled[("P", "persona")]["initial"]["kappa"] == 0
    assert llm_persona.kappa(["a", "a"], ["a", "a"]) is None  # p_e = 1: undefined


def test_per_claim_by_hand():
    rows = {c["claim"]: c for c in llm_persona.analyse_judges(judgements_frame())["by_claim"]}
    c1, c2 = rows["c1"], rows["c2"]
    assert c1["sessions"] == 2 and (c1["humans"]["k"], c1["persona"]["k"], c1["naive"]["k"]) == (1, 1, 2)
    assert (c1["persona_agreement"]["k"], c1["naive_agreement"]["k"]) == (2, 1)
    assert c2["sessions"] == 1 and (c2["humans"]["k"], c2["persona"]["k"], c2["naive"]["k"]) == (1, 0, 0)


# --- strategy ratings ----------------------------------------------------------------------------

#        unit (session, debater, correct)  R1       R2
UNITS = [
    ((1, "A", "1"), "high", "high"),
    ((1, "B", "0"), "low", "medium"),
    ((3, "A", "1"), "none", "low"),
    ((3, "B", "0"), "none", "none"),
]


def ratings_frame() -> pd.DataFrame:
    rows = []
    for (session, debater, correct), *levels in UNITS:
        for rater, level in zip(("R1", "R2"), levels):
            rows.append(
                {
                    "study": "s",
                    "session": str(session),
                    "debater": debater,
                    "debater_correct": correct,
                    "debater_config": "cfg",
                    "rater": rater,
                    "strategy": "CE",
                    "level": level,
                }
            )
    return pd.DataFrame(rows)


def test_strategy_means_detection_and_inter_rater_agreement_by_hand():
    r = llm_persona.analyse_strategies(ratings_frame())
    assert r["n"] == {"ratings": 8, "units": 4, "raters": 2, "strategies": 1} and r["raters"] == ["R1", "R2"]
    (cell,) = r["by_config"]
    assert cell["by_rater"] == {"R1": pytest.approx(1.0), "R2": pytest.approx(1.5)} and cell["mean"] == 1.25
    assert (cell["detected_by_all"]["k"], cell["detected_by_all"]["n"]) == (2, 4)
    assert cell["agreement"] == 0.5
    # Levels: R1 shares high .25, low .25, none .5; R2 .25 each: p_e = .0625 + .0625 + .125 = .25.
    assert cell["kappa_levels"] == pytest.approx((0.5 - 0.25) / 0.75)
    # Detected: R1 T T F F, R2 T T T F: p_o = .75, p_e = .5 * .75 + .5 * .25 = .5.
    assert cell["kappa_detected"] == pytest.approx(0.5)
    by = {c["correct"]: c for c in r["by_correctness"]}
    assert (by[True]["detected_by_all"]["k"], by[True]["detected_by_all"]["n"]) == (1, 2)
    assert (by[False]["detected_by_all"]["k"], by[False]["units"]) == (1, 2)


def test_the_design_b_report_has_the_llm_judges_section():
    tables = synthetic.synthetic_b(n_participants=40, seed=2)
    without = report.analyze(tables, "B", seed=1, bootstrap=20)
    (note,) = [t for t in without["tables"] if t["key"] == "llm_judges"]
    assert "Persona and naive judges" in note["note"] and without["llm_judges"] is None
    tables = {
        **tables,
        "llm_persona_judgements": judgements_frame(),
        "llm_strategy_ratings": ratings_frame(),
    }
    r = report.analyze(tables, "B", seed=1, bootstrap=20)
    assert json.loads(json.dumps(r)) == r
    keys = [t["key"] for t in r["tables"]]
    assert keys[-6:] == [
        "llm_judges_accuracy",
        "llm_judges_agreement",
        "llm_judges_by_claim",
        "llm_strategies",
        "llm_strategies_by_correctness",
        "items",
    ]
    agreement = next(t for t in r["tables"] if t["key"] == "llm_judges_agreement")
    assert agreement["rows"][0] == ["all", "P", "Persona", 3, 66.7, "[20.8, 93.9]", 0.4, 33.3, 0.0]
    strategies = next(t for t in r["tables"] if t["key"] == "llm_strategies")
    assert strategies["rows"] == [["CE", "cfg", 4, 1.0, 1.5, 1.25, 50.0, 50.0, 0.333, 0.5]]
    assert all(len(row) == len(t["columns"]) for t in r["tables"] for row in t["rows"])


def test_csv_round_trip(tmp_path):
    judgements_frame().to_csv(tmp_path / "llm_persona_judgements.csv", index=False)
    ratings_frame().to_csv(tmp_path / "llm_strategy_ratings.csv", index=False)
    read = llm_persona.read_tables(tmp_path)
    again = llm_persona.analyse(read["llm_persona_judgements"], read["llm_strategy_ratings"])
    assert again == llm_persona.analyse(judgements_frame(), ratings_frame())
