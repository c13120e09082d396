"""Design A (paper 000): Tables 39-45 and Figure 15, against the paper, statsmodels and simulation."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import optimize
from scipy.special import expit

from analysis.metrics import dialogues, frames, synthetic

BIASES = list(dialogues.BIASES)


def judgements(cells, **extra) -> pd.DataFrame:
    """A typed judgements table from (condition, signed side, chose-A count, n) cells; every
    participant completed and is not excluded."""
    rows = []
    for condition, signed, k, n in cells:
        for i in range(n):
            rows.append(
                {
                    "participant_id": str(len(rows) + 1),
                    "participant_status": "completed",
                    "excluded": "0",
                    "condition": condition,
                    "signed_active_side": str(signed),
                    "chose_a": "1" if i < k else "0",
                    "correct": "1" if i < k else "0",
                    **{key: value(len(rows), condition, signed, i < k) for key, value in extra.items()},
                }
            )
    return frames.typed("judgements", pd.DataFrame(rows))


# The paper's Table 39: N and % choosing A -> 51/72, 99/148, 74/149.
PAPER_H1 = [("baseline", 0, 51, 72), ("anchoring", 1, 99, 148), ("anchoring", -1, 74, 149)]
# A split of Table 41's cells consistent with Tables 39 and 41: on A (38, 36, 38, 36) with
# (25, 24, 25, 25) choosing A; on B (36, 40, 37, 36) with (17, 21, 19, 17). The joint model's
# estimate depends only on the per-bias differences (8, 3, 6, 8) given the margins.
PAPER_H2 = [("baseline", 0, 51, 72)] + [
    cell
    for bias, ka, na, kb, nb in zip(
        BIASES, (25, 24, 25, 25), (38, 36, 38, 36), (17, 21, 19, 17), (36, 40, 37, 36)
    )
    for cell in ((bias, 1, ka, na), (bias, -1, kb, nb))
]


def test_table_40_reproduces_the_paper():
    h1 = dialogues.h1_regression(judgements(PAPER_H1))
    intercept, slope = h1["terms"]
    # The fit gives 0.44749; the paper prints 0.448 (0.4475 rounded again) but its odds ratio
    # 1.564 = exp(0.44749) (exp(0.448) would be 1.565).
    assert round(intercept["log_odds"], 4) == 0.4475
    assert round(intercept["odds_ratio"], 3) == 1.564
    assert round(slope["log_odds"], 3) == 0.366
    assert round(slope["odds_ratio"], 3) == 1.442
    assert round(slope["p"], 3) == 0.002
    # Table 39's model-implied column: 61.0, 69.3, 52.0.
    assert [round(100 * h1["implied_p"][k], 1) for k in ("baseline", "bias_on_a", "bias_on_b")] == [
        61.0,
        69.3,
        52.0,
    ]


def test_table_40_agrees_with_statsmodels_and_a_direct_likelihood_maximisation():
    df = judgements(PAPER_H1)
    h1 = dialogues.h1_regression(df)
    x = df["signed_active_side"].to_numpy(dtype=float)
    y = df["chose_a"].to_numpy(dtype=float)
    ref = sm.Logit(y, sm.add_constant(x)).fit(disp=0)
    np.testing.assert_allclose([t["log_odds"] for t in h1["terms"]], ref.params, atol=1e-8)
    np.testing.assert_allclose([t["se"] for t in h1["terms"]], ref.bse, rtol=1e-6)
    np.testing.assert_allclose([t["p"] for t in h1["terms"]], ref.pvalues, rtol=1e-6)

    def nll(beta):
        eta = beta[0] + beta[1] * x
        return np.sum(np.logaddexp(0, eta) - y * eta)

    direct = optimize.minimize(
        nll, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12}
    )
    np.testing.assert_allclose([t["log_odds"] for t in h1["terms"]], direct.x, atol=1e-5)


def test_table_39_observed_percentages():
    rows = dialogues.choose_a_by_location(judgements(PAPER_H1), None)
    assert [(r["n"], round(100 * r["p"], 1)) for r in rows] == [(72, 70.8), (148, 66.9), (149, 49.7)]


def test_table_41_reproduces_the_paper_with_the_joint_model():
    df = judgements(PAPER_H2)
    fit = dialogues.per_bias_fits(df, BIASES)
    rows = {r["bias"]: r for r in fit["biases"]}
    assert [round(rows[b]["log_odds"], 3) for b in BIASES] == [0.390, 0.302, 0.304, 0.475]
    assert [(rows[b]["n"], rows[b]["on_a"], rows[b]["on_b"]) for b in BIASES] == [
        (74, 38, 36),
        (76, 36, 40),
        (75, 38, 37),
        (72, 36, 36),
    ]
    # Independently: statsmodels on the same design (shared intercept, one signed column per bias).
    s = df["signed_active_side"].to_numpy(dtype=float)
    xmat = np.column_stack([np.ones(len(df))] + [np.where(df["condition"] == b, s, 0.0) for b in BIASES])
    ref = sm.Logit(df["chose_a"].to_numpy(dtype=float), xmat).fit(disp=0)
    np.testing.assert_allclose([rows[b]["log_odds"] for b in BIASES], ref.params[1:], atol=1e-8)
    np.testing.assert_allclose([rows[b]["se"] for b in BIASES], ref.bse[1:], rtol=1e-6)
    # The separate baseline + one bias fit is a different model (and does not give the paper's values).
    assert round(rows["fallacy_oversight"]["subset_log_odds"], 3) != 0.302


def test_joint_bootstrap_is_seeded():
    df = judgements(PAPER_H2)
    a = dialogues.joint_bootstrap(df, BIASES, 300, np.random.default_rng(7))
    b = dialogues.joint_bootstrap(df, BIASES, 300, np.random.default_rng(7))
    c = dialogues.joint_bootstrap(df, BIASES, 300, np.random.default_rng(8))
    assert a == b
    assert [x["se_pp"] for x in a["biases"]] != [x["se_pp"] for x in c["biases"]]


def test_joint_bootstrap_with_most_replicates_failing_reports_no_standard_errors():
    """Three people a cell: most resamples have a bias's judgements all one way and cannot be
    fitted; the survivors are the less extreme ones, so their spread understated the SEs (the
    demo's report showed SEs and an omnibus p from 73 of 1000)."""
    tiny = [("baseline", 0, 2, 3)] + [(b, s, 2, 3) for b in BIASES for s in (1, -1)]
    boot = dialogues.joint_bootstrap(judgements(tiny), BIASES, 200, np.random.default_rng(0))
    assert boot["failed"] > 0.1 * 200 and boot["biases"] == [] and "omnibus" not in boot
    # With enough people the same code reports them (test below: the paper's counts, 0 failed).


def test_joint_bootstrap_on_the_papers_counts_is_close_to_table_42():
    # Table 42: 5.8, 5.5, 5.5, 5.8 pp. The within-bias split of Table 41's cells is not
    # published; over the splits consistent with Tables 39 and 41 our SEs vary by about
    # +-0.25 pp, hence the tolerance. (The full difference P(A|on A) - P(A|on B) would give
    # about 11 pp.)
    boot = dialogues.joint_bootstrap(judgements(PAPER_H2), BIASES, 3000, np.random.default_rng(0))
    assert boot["failed"] == 0
    for row, published in zip(boot["biases"], (5.8, 5.5, 5.5, 5.8)):
        assert abs(row["se_pp"] - published) < 0.4


def _delta_se_pp(df: pd.DataFrame, biases: list[str]) -> np.ndarray:
    """The delta-method SE of 100 * (expit(b0 + bk) - expit(b0 - bk)) / 2 from statsmodels."""
    s = df["signed_active_side"].to_numpy(dtype=float)
    xmat = np.column_stack([np.ones(len(df))] + [np.where(df["condition"] == b, s, 0.0) for b in biases])
    ref = sm.Logit(df["chose_a"].to_numpy(dtype=float), xmat).fit(disp=0)
    cov = ref.cov_params()
    out = []
    for k in range(len(biases)):
        b0, bk = ref.params[0], ref.params[k + 1]
        up, down = expit(b0 + bk), expit(b0 - bk)
        gradient = np.zeros(len(ref.params))
        gradient[0] = (up * (1 - up) - down * (1 - down)) / 2
        gradient[k + 1] = (up * (1 - up) + down * (1 - down)) / 2
        out.append(100 * np.sqrt(gradient @ cov @ gradient))
    return np.array(out)


def test_joint_bootstrap_se_matches_the_delta_method_on_a_large_sample():
    rng = np.random.default_rng(2024)
    n = 12_000
    condition = rng.choice(["baseline"] + BIASES, size=n)
    signed = np.where(condition == "baseline", 0, rng.choice([-1, 1], size=n))
    slopes = dict(zip(BIASES, (0.2, 0.35, 0.5, 0.8)))
    b = np.array([slopes.get(c, 0.0) for c in condition])
    chose = rng.random(n) < expit(0.4 + b * signed)
    df = frames.typed(
        "judgements",
        pd.DataFrame(
            {
                "participant_id": np.arange(n).astype(str),
                "condition": condition,
                "signed_active_side": signed.astype(str),
                "chose_a": np.where(chose, "1", "0"),
            }
        ),
    )
    boot = dialogues.joint_bootstrap(df, BIASES, 2000, np.random.default_rng(1))
    np.testing.assert_allclose([x["se_pp"] for x in boot["biases"]], _delta_se_pp(df, BIASES), rtol=0.08)
    # The effects themselves are near the truth: (expit(0.4 + b) - expit(0.4 - b)) / 2.
    truth = [100 * (expit(0.4 + slopes[k]) - expit(0.4 - slopes[k])) / 2 for k in BIASES]
    for row, true, se in zip(boot["biases"], truth, _delta_se_pp(df, BIASES)):
        assert abs(row["effect_pp"] - true) < 3.5 * se
    # Equal effects are not rejected when they are equal, and are when they are not.
    assert boot["omnibus"]["p"] < 0.001


def test_omnibus_does_not_reject_equal_biases():
    rng = np.random.default_rng(99)
    n = 8000
    condition = rng.choice(["baseline"] + BIASES, size=n)
    signed = np.where(condition == "baseline", 0, rng.choice([-1, 1], size=n))
    chose = rng.random(n) < expit(0.3 + 0.4 * signed)
    df = frames.typed(
        "judgements",
        pd.DataFrame(
            {
                "participant_id": np.arange(n).astype(str),
                "condition": condition,
                "signed_active_side": signed.astype(str),
                "chose_a": np.where(chose, "1", "0"),
            }
        ),
    )
    boot = dialogues.joint_bootstrap(df, BIASES, 1000, np.random.default_rng(3))
    assert boot["omnibus"]["df"] == 3
    assert boot["omnibus"]["p"] > 0.01


def test_the_slope_is_recovered_from_synthetic_data():
    tables = synthetic.synthetic_a(n_participants=4000, seed=5, intercept=0.2, slope=0.6, baseline_share=0.2)
    df = dialogues.analysed_judgements(frames.typed("judgements", tables["judgements"]))
    h1 = dialogues.h1_regression(df)
    slope = h1["terms"][1]
    assert abs(slope["log_odds"] - 0.6) < 3 * slope["se"]
    assert abs(h1["terms"][0]["log_odds"] - 0.2) < 3 * h1["terms"][0]["se"]


def test_only_completed_non_excluded_judgements_count():
    base = judgements(PAPER_H1)
    noise = judgements([("anchoring", 1, 0, 50), ("anchoring", -1, 50, 50)])
    noise["participant_id"] = noise["participant_id"] + 10_000
    noise.loc[:49, "excluded"] = True
    noise.loc[50:, "participant_status"] = "returned"
    df = dialogues.analysed_judgements(pd.concat([base, noise], ignore_index=True))
    assert len(df) == len(base)
    assert dialogues.h1_regression(df)["terms"][1]["log_odds"] == pytest.approx(
        dialogues.h1_regression(base)["terms"][1]["log_odds"]
    )


def detection_frame() -> pd.DataFrame:
    """Eight biased judgements (active side A) and two baseline ones, with answers chosen so
    that the nested counts differ from the flat ones."""
    rows = [
        # present, side, type, correct, chose_a
        ("yes", "A", "anchoring", "1", "1"),  # presence, side, type
        ("yes", "A", "verbosity", "1", "1"),  # presence, side
        ("yes", "B", "anchoring", "0", "0"),  # presence; type right but side wrong: not counted
        ("yes", "unsure", "other", "0", "0"),  # presence
        ("no", "", "", "1", "1"),
        ("no", "", "", "0", "0"),
        ("unsure", "", "", "1", "1"),
        ("yes", "A", "anchoring", "0", "1"),  # presence, side, type
    ]
    data = []
    for i, (present, side, kind, correct, chose_a) in enumerate(rows):
        data.append(
            {
                "participant_id": str(i + 1),
                "participant_status": "completed",
                "excluded": "0",
                "condition": "anchoring",
                "signed_active_side": "1",
                "active_side_letter": "A",
                "chosen_side": "A" if chose_a == "1" else "B",
                "chose_a": chose_a,
                "correct": correct,
                "followed_bias": chose_a,
                "bias_present": present,
                "bias_side": side,
                "bias_type": kind,
            }
        )
    for i, present in enumerate(["yes", "no"]):
        data.append(
            {
                "participant_id": str(100 + i),
                "participant_status": "completed",
                "excluded": "0",
                "condition": "baseline",
                "signed_active_side": "0",
                "active_side_letter": "",
                "chosen_side": "A",
                "chose_a": "1",
                "correct": "1",
                "followed_bias": "",
                "bias_present": present,
                "bias_side": "A" if present == "yes" else "",
                "bias_type": "verbosity" if present == "yes" else "",
            }
        )
    return frames.typed("judgements", pd.DataFrame(data))


def test_detection_cascade_counts_by_hand():
    rows = {r["condition"]: r for r in dialogues.detection_cascade(detection_frame(), ["anchoring"])}
    assert rows["baseline"] == {
        "condition": "baseline",
        "total": 2,
        "presence": 1,
        "side": None,
        "type": None,
    }
    assert rows["anchoring"] == {"condition": "anchoring", "total": 8, "presence": 5, "side": 3, "type": 2}
    assert rows["all"]["total"] == 8 and rows["all"]["type"] == 2


def test_a_study_without_a_bias_detection_step_has_no_detection_tables():
    """The export's bias columns are there but blank on every row: Table 43 read "Baseline (false
    alarm) 1, 0 (0.0)" for a study that never asked (the researcher walk)."""
    df = detection_frame().assign(
        bias_present="", bias_side="", bias_type="", bias_presence_correct=pd.NA, bias_side_correct=pd.NA
    )
    assert dialogues.detection_cascade(df, ["anchoring"]) is None
    assert dialogues.by_detection(df, "correct") is None
    one = df.copy()
    one.loc[one.index[0], "bias_present"] = "no"  # one answer: the table is computed
    assert dialogues.detection_cascade(one, ["anchoring"]) is not None
    # Merged with a study that has no such step, its blank rows are in no count (they doubled the
    # denominators: the review).
    merged = pd.concat([detection_frame(), df], ignore_index=True)
    assert dialogues.detection_cascade(merged, ["anchoring"]) == dialogues.detection_cascade(
        detection_frame(), ["anchoring"]
    )
    assert dialogues.by_detection(merged, "correct") == dialogues.by_detection(detection_frame(), "correct")


def test_detection_uses_the_exports_flags_when_present():
    df = detection_frame()
    flagged = df.assign(
        bias_presence_correct=pd.array([True] * 4 + [False] * 3 + [True, False, True], dtype="boolean"),
        bias_side_correct=pd.array(
            [True, True, False, False, False, False, False, True, pd.NA, pd.NA], dtype="boolean"
        ),
        bias_type_correct=pd.array(
            [True, False, True, False, False, False, False, True, pd.NA, pd.NA], dtype="boolean"
        ),
    )
    assert dialogues.detection_cascade(flagged, ["anchoring"]) == dialogues.detection_cascade(
        df, ["anchoring"]
    )


def test_accuracy_by_detection_level_by_hand_and_against_statsmodels():
    rows = {r["level"]: r for r in dialogues.by_detection(detection_frame(), "correct")}
    # presence met: judgements 1-4 and 8 -> correct 1,1,0,0,0 ; not met: 5-7 -> 1,0,1.
    assert (rows["presence"]["met"]["k"], rows["presence"]["met"]["n"]) == (2, 5)
    assert (rows["presence"]["not_met"]["k"], rows["presence"]["not_met"]["n"]) == (2, 3)
    assert rows["presence"]["diff_pp"] == pytest.approx(100 * (2 / 5 - 2 / 3))
    y = np.array([1, 1, 0, 0, 0, 1, 0, 1.0])
    met = np.array([1, 1, 1, 1, 1, 0, 0, 0.0])
    assert rows["presence"]["p"] == pytest.approx(
        sm.Logit(y, sm.add_constant(met)).fit(disp=0).pvalues[1], rel=1e-6
    )
    following = {r["level"]: r for r in dialogues.by_detection(detection_frame(), "followed_bias")}
    # type met: judgements 1 and 8 (both chose the biased side A).
    assert (following["type"]["met"]["k"], following["type"]["met"]["n"]) == (2, 2)
    assert following["type"]["p"] is None  # an empty cell: the logistic slope is infinite


def test_expertise_uses_the_first_likert_item_and_wilson_intervals():
    df = detection_frame()
    responses = []
    levels = [1, 1, 2, 2, 2, 3, 3, 3, 1, 2]
    labels = {1: "Not at all", 2: "Slightly", 3: "Very"}
    for pid, level in zip(df["participant_id"], levels):
        # A slider answered earlier, whose key also starts with "expertise", is not Likert.
        responses.append(
            {
                "participant_id": str(pid),
                "position": "3",
                "key": "expertise_self",
                "value": "70",
                "value_num": "70",
            }
        )
        responses.append(
            {
                "participant_id": str(pid),
                "position": "4",
                "key": "expertise_mysteries",
                "value": labels[level],
                "value_num": str(level),
            }
        )
        responses.append(
            {
                "participant_id": str(pid),
                "position": "5",
                "key": "expertise_debate",
                "value": "Very",
                "value_num": "3",
            }
        )
    responses = frames.typed("responses", pd.DataFrame(responses))
    out = dialogues.by_expertise(df, responses, None)
    assert out["key"] == "expertise_mysteries"
    by_level = {r["level"]: r for r in out["levels"]}
    # level 1: judgements 1, 2 (biased, correct 1, 1) and baseline 100 (correct) -> 3/3.
    assert (by_level[1.0]["accuracy"]["k"], by_level[1.0]["accuracy"]["n"]) == (3, 3)
    # level 2: judgements 3, 4, 5 (correct 0, 0, 1) and baseline 101 (correct) -> 2/4.
    assert (by_level[2.0]["accuracy"]["k"], by_level[2.0]["accuracy"]["n"]) == (2, 4)
    assert by_level[2.0]["label"] == "Slightly"
    # bias-following only on biased dialogues: level 2 -> judgements 3, 4, 5 followed 0, 0, 1.
    assert (by_level[2.0]["followed"]["k"], by_level[2.0]["followed"]["n"]) == (1, 3)
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(2, 4, method="wilson")
    assert (by_level[2.0]["accuracy"]["lo"], by_level[2.0]["accuracy"]["hi"]) == pytest.approx((lo, hi))
    # The item key is a parameter.
    other = dialogues.by_expertise(df, responses, "expertise_debate")
    assert other["key"] == "expertise_debate" and [r["level"] for r in other["levels"]] == [3.0]


def test_expertise_effect_is_visible_in_synthetic_data():
    tables = synthetic.synthetic_a(n_participants=3000, seed=9, expertise_effect=0.5)
    df = dialogues.analysed_judgements(frames.typed("judgements", tables["judgements"]))
    out = dialogues.by_expertise(df, frames.typed("responses", tables["responses"]), None)
    accuracy = [r["accuracy"]["p"] for r in out["levels"]]
    assert accuracy == sorted(accuracy)  # rising with expertise
    assert out["levels"][-1]["accuracy"]["lo"] > out["levels"][0]["accuracy"]["hi"]


def test_flags_the_sides_contradict_are_counted_as_the_sides_tell_and_said():
    """A spreadsheet that set `correct` to 1 on every row (and flipped `chose_a` on some) had
    accuracy read 100 %, silently; the sides say otherwise."""
    sides = {
        "chosen_side": lambda n, c, s, a: "A" if a else "B",
        "culprit_side": lambda n, c, s, a: "A" if n % 2 else "B",
        "active_side_letter": lambda n, c, s, a: {1: "A", -1: "B", 0: ""}[s],
        "active_side": lambda n, c, s, a: "none" if s == 0 else "a",
    }
    clean = judgements(PAPER_H1, **sides)
    clean["correct"] = clean["chosen_side"] == clean["culprit_side"]
    edited = clean.copy()
    edited["correct"] = True
    edited.loc[:4, "chose_a"] = ~edited.loc[:4, "chose_a"].astype(bool)
    edited.loc[5:7, "signed_active_side"] = 2
    notes = []
    df = dialogues.analysed_judgements(edited, notes=notes)
    reference = dialogues.analysed_judgements(clean)
    for column in ("correct", "chose_a", "signed_active_side"):
        assert df[column].tolist() == reference[column].tolist(), column
    wrong = int((~clean["correct"].astype(bool)).sum())
    assert notes == [
        "judgements.csv: 5 row(s) whose `chose_a` disagrees with chosen_side: counted as chosen_side tells.",
        f"judgements.csv: {wrong} row(s) whose `correct` disagrees with chosen_side and culprit_side: "
        "counted as chosen_side and culprit_side tell.",
        "judgements.csv: 3 row(s) whose `signed_active_side` disagrees with active_side_letter: counted as "
        "active_side_letter tells.",
    ]


def test_rows_no_model_can_place_are_left_out_and_said():
    """Without a letter to tell the side, a signed side of 2 made 'bias on A' empty and moved the
    slope; a biased row with no condition was read as baseline by the joint model."""
    data = judgements(PAPER_H1)
    data.loc[:2, "signed_active_side"] = 2
    data.loc[100:109, "condition"] = pd.NA  # anchoring rows, signed +1
    notes = []
    df = dialogues.analysed_judgements(data, notes=notes)
    assert len(df) == len(data) - 13
    assert set(df["signed_active_side"]) == {-1, 0, 1} and df["condition"].notna().all()
    assert notes == [
        "judgements.csv: 3 row(s) with `signed_active_side` other than -1, 0 or 1 (for example 2) and no "
        "active_side_letter to tell the side: left out.",
        "judgements.csv: 10 biased judgement(s) (signed_active_side ±1) with no `condition`: left out (no "
        "bias to count them under; the joint model would have read them as baseline).",
    ]
