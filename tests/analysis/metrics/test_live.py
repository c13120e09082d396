"""Design B (paper 001): the measures by hand, and the mixed model against simulation and integration."""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import integrate, stats
from scipy.special import expit

from analysis.metrics import frames, live, mixed, synthetic


def sessions(rows) -> pd.DataFrame:
    """Typed claim_judgements from (participant, protocol, group, truth, initial answer,
    initial confidence, final answer, final confidence)."""
    data = []
    for pid, protocol, group, truth, ia, ic, fa, fc in rows:
        data.append(
            {
                "participant_id": str(pid),
                "participant_status": "completed",
                "excluded": "0",
                "group": group,
                "protocol": protocol,
                "claim": f"c{len(data)}",
                "truth": truth,
                "initial_answer": ia,
                "initial_confidence": str(ic),
                "initial_correct": "1" if ia == truth else "0",
                "final_answer": fa,
                "final_confidence": str(fc),
                "final_correct": "1" if fa == truth else "0",
            }
        )
    return live.analysed_sessions(frames.typed("claim_judgements", pd.DataFrame(data)))


SMALL = [
    (1, "debate", "mainstream", "true", "true", 60, "true", 90),  # C -> C
    (1, "debate", "mainstream", "false", "true", 70, "false", 80),  # I -> C
    (2, "debate", "skeptical", "true", "true", 80, "false", 55),  # C -> I
    (3, "consultancy", "mainstream", "false", "true", 50, "true", 100),  # I -> I
    (3, "consultancy", "mainstream", "true", "true", 40, "true", 70),  # C -> C
    (4, "consultancy", "skeptical", "true", "false", 90, "true", 30),  # I -> C
]


def test_brier_by_hand_and_equal_to_the_probability_of_truth_form():
    df = sessions(SMALL)
    rows = {(r["protocol"], r["group"]): r for r in live.brier(df)}
    # debate, final: (0.9 - 1)^2, (0.8 - 1)^2, (0.55 - 0)^2
    assert rows[("debate", "all")]["final"] == pytest.approx((0.01 + 0.04 + 0.3025) / 3)
    # consultancy, initial: (0.5 - 0)^2, (0.4 - 1)^2, (0.9 - 0)^2
    assert rows[("consultancy", "all")]["initial"] == pytest.approx((0.25 + 0.36 + 0.81) / 3)
    # The same score written as P(claim true) against the truth label.
    p_true = np.where(
        df["final_answer"] == "true", df["final_confidence"] / 100, 1 - df["final_confidence"] / 100
    )
    truth = (df["truth"] == "true").to_numpy(dtype=float)
    debate = (df["protocol"] == "debate").to_numpy()
    assert rows[("debate", "all")]["final"] == pytest.approx(np.mean((p_true[debate] - truth[debate]) ** 2))


def test_calibration_bins_by_hand():
    df = sessions(SMALL)
    curve = {c["protocol"]: c["bins"] for c in live.calibration(df, bins=10)}
    debate = {(b["lo"], b["hi"]): b for b in curve["debate"]}
    assert set(debate) == {(0.5, 0.6), (0.8, 0.9), (0.9, 1.0)}
    assert debate[(0.5, 0.6)]["accuracy"]["n"] == 1 and debate[(0.5, 0.6)]["accuracy"]["k"] == 0
    consultancy = {(b["lo"], b["hi"]): b for b in curve["consultancy"]}
    # confidence 100 falls in the last bin; 70 in [0.7, 0.8).
    assert consultancy[(0.9, 1.0)]["mean_confidence"] == pytest.approx(1.0)
    assert consultancy[(0.9, 1.0)]["accuracy"]["k"] == 0
    assert consultancy[(0.7, 0.8)]["accuracy"]["k"] == 1


def test_transitions_by_hand_and_the_chi_square_against_scipy():
    df = sessions(SMALL)
    cells = {(c["protocol"], c["group"]): c for c in live.transitions(df)["cells"]}
    debate = cells[("debate", "all")]
    assert [debate[t]["k"] for t in ("CC", "CI", "IC", "II")] == [1, 1, 1, 0]
    assert debate["CC"]["confidence_change"] == 30
    assert debate["CI"]["confidence_change"] == -25
    consultancy = cells[("consultancy", "all")]
    assert [consultancy[t]["k"] for t in ("CC", "CI", "IC", "II")] == [1, 0, 1, 1]
    rng = np.random.default_rng(0)
    big = []
    for i in range(400):
        protocol = "debate" if i % 2 else "consultancy"
        truth = "true"
        initial = "true" if rng.random() < 0.6 else "false"
        final = "true" if rng.random() < (0.75 if protocol == "debate" else 0.55) else "false"
        big.append((i, protocol, "mainstream", truth, initial, 70, final, 80))
    out = live.transitions(sessions(big))
    table = [[c[t]["k"] for t in ("CC", "CI", "IC", "II")] for c in out["cells"] if c["group"] == "all"]
    chi2, p, dof, _ = stats.chi2_contingency(np.array(table), correction=False)
    test = next(t for t in out["tests"] if t["group"] == "all")
    assert (test["chi2"], test["df"]) == (pytest.approx(chi2), dof) and test["p"] == pytest.approx(p)


def test_truth_aligned_confidence_shift_by_hand():
    df = sessions(SMALL)
    rows = {(r["protocol"], r["group"]): r for r in live.confidence_shift(df)}
    # debate: (+90) - (+60) = 30 ; (+80) - (-70) = 150 ; (-55) - (+80) = -135
    shifts = np.array([30, 150, -135])
    debate = rows[("debate", "all")]
    assert debate["mean_shift"] == pytest.approx(shifts.mean())
    assert debate["p"] == pytest.approx(stats.ttest_1samp(shifts, 0).pvalue)
    assert (debate["improved"]["k"], debate["improved"]["n"]) == (2, 3)
    assert (debate["changed"]["k"], debate["changed"]["n"]) == (2, 3)


def test_a_change_of_answer_counts_only_between_two_answers():
    """A blank or foreign answer is no change of answer (it counted as one: Table 2's
    "% changed" rose with every blanked cell)."""
    df = sessions(SMALL)
    before = {(r["protocol"], r["group"]): r["changed"] for r in live.confidence_shift(df)}
    blanked = df.copy()
    first = blanked.index[blanked["protocol"] == "debate"][0]
    blanked["final_answer"] = blanked["final_answer"].astype(object)
    blanked.loc[first, "final_answer"] = None
    after = {(r["protocol"], r["group"]): r["changed"] for r in live.confidence_shift(blanked)}
    assert (before[("debate", "all")]["k"], before[("debate", "all")]["n"]) == (2, 3)
    assert (after[("debate", "all")]["k"], after[("debate", "all")]["n"]) == (2, 2)


def test_accuracy_before_and_after_matches_a_direct_count():
    tables = synthetic.synthetic_b(n_participants=200, seed=4)
    raw = tables["claim_judgements"]
    df = live.analysed_sessions(frames.typed("claim_judgements", raw))
    rows = {(r["protocol"], r["group"]): r for r in live.accuracy(df)["by_protocol_group"]}
    keep = (
        (raw["participant_status"] == "completed") & (raw["excluded"] == "0") & (raw["final_correct"] != "")
    )
    for (protocol, group), cell in raw[keep].groupby(["protocol", "group"]):
        row = rows[(protocol, group)]
        assert row["final"]["n"] == len(cell)
        assert row["final"]["k"] == (cell["final_correct"] == "1").sum()
        assert row["initial"]["k"] == (cell["initial_correct"] == "1").sum()


def test_excluded_and_unfinished_sessions_are_left_out():
    rows = SMALL + [(9, "debate", "mainstream", "true", "false", 99, "false", 99)]
    df = sessions(rows)
    df_excluded = df.copy()
    df_excluded.loc[df_excluded["participant_id"] == 9, "excluded"] = True
    assert len(live.analysed_sessions(df_excluded)) == len(SMALL)
    unfinished = df.copy()
    unfinished.loc[unfinished["participant_id"] == 9, "final_correct"] = pd.NA
    assert len(live.analysed_sessions(unfinished)) == len(SMALL)


def test_a_protocol_the_export_never_writes_is_in_no_figure():
    """A typo ('debat') made a third protocol in every table and in the mixed model (whose
    combined fit then failed), while the warning said no figure counted it."""
    df = sessions(SMALL + [(9, "debat", "mainstream", "true", "false", 99, "true", 99)])
    assert len(df) == len(SMALL) and set(df["protocol"]) == {"debate", "consultancy"}
    assert {r["protocol"] for r in live.brier(df)} == {"debate", "consultancy"}


def test_correctness_the_answers_contradict_is_counted_as_they_tell_and_said():
    """`final_correct` set to 1 on every row by a spreadsheet had every final accuracy at 100 %."""
    clean = sessions(SMALL)
    edited = clean.copy()
    edited["final_correct"] = True
    notes = []
    df = live.analysed_sessions(edited, notes=notes)
    assert df["final_correct"].tolist() == clean["final_correct"].tolist()
    assert notes == [
        "claim_judgements.csv: 2 row(s) whose `final_correct` disagrees with final_answer and truth: "
        "counted as they tell."
    ]


# --- the mixed model -------------------------------------------------------------------------


def simulate(n_participants, per_person, beta, sigma, seed):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(n_participants), per_person)
    x = rng.integers(0, 2, g.size).astype(float)
    u = rng.normal(0, sigma, n_participants)
    y = (rng.random(g.size) < expit(beta[0] + beta[1] * x + u[g])).astype(float)
    return np.column_stack([np.ones_like(x), x]), y, g


def test_marginal_likelihood_matches_brute_force_integration():
    xmat, y, g = simulate(12, 4, (0.2, 0.7), 1.0, seed=1)
    beta, sigma = np.array([-0.1, 0.5]), 1.3
    total = 0.0
    for i in np.unique(g):
        rows = g == i

        def integrand(z, rows=rows):
            p = expit(xmat[rows] @ beta + sigma * z)
            return np.prod(np.where(y[rows] > 0, p, 1 - p)) * stats.norm.pdf(z)

        total += np.log(integrate.quad(integrand, -np.inf, np.inf, epsabs=1e-14)[0])
    assert mixed.marginal_loglik(xmat, y, g, beta, sigma) == pytest.approx(total, abs=1e-8)
    # The Laplace approximation (one node) is close but not exact.
    laplace = mixed.marginal_loglik(xmat, y, g, beta, sigma, nodes=1)
    assert laplace != pytest.approx(total, abs=1e-6) and laplace == pytest.approx(total, abs=0.5)


def test_recovers_a_known_effect_from_simulated_data():
    xmat, y, g = simulate(800, 4, (-0.3, 0.8), 1.2, seed=2024)
    fit = mixed.fit_random_intercept(xmat, y, g, ["intercept", "x"])
    assert fit.converged
    for estimate, se, truth in zip(fit.params, fit.bse, (-0.3, 0.8)):
        assert abs(estimate - truth) < 3 * se
    assert abs(fit.sigma - 1.2) < 3 * fit.sigma_se
    # A plain logistic regression ignoring the clustering is attenuated toward 0.
    plain = sm.Logit(y, xmat).fit(disp=0)
    assert abs(plain.params[1]) < abs(fit.params[1])
    terms = fit.terms()
    assert terms[1]["or_lo"] < np.exp(0.8) < terms[1]["or_hi"]
    assert terms[1]["odds_ratio"] == pytest.approx(np.exp(fit.params[1]))


def test_estimates_are_the_plain_logistic_fit_when_the_variance_is_zero():
    # Under-dispersed data: every participant has exactly one success in two trials, one
    # under each x, so the participants vary less than independent trials would.
    rng = np.random.default_rng(3)
    n = 300
    g = np.repeat(np.arange(n), 2)
    x = np.tile([0.0, 1.0], n)
    first = rng.random(n) < 0.4
    y = np.column_stack([first, ~first]).reshape(-1).astype(float)
    xmat = np.column_stack([np.ones_like(x), x])
    fit = mixed.fit_random_intercept(xmat, y, g, ["intercept", "x"])
    plain = sm.Logit(y, xmat).fit(disp=0)
    assert fit.sigma == 0.0
    np.testing.assert_allclose(fit.params, plain.params, atol=1e-8)
    np.testing.assert_allclose(fit.bse, plain.bse, rtol=1e-6)
    assert fit.loglik == pytest.approx(plain.llf)


def test_with_no_true_variance_the_fit_is_close_to_plain_logistic():
    xmat, y, g = simulate(600, 3, (0.1, 0.6), 0.0, seed=8)
    fit = mixed.fit_random_intercept(xmat, y, g, ["intercept", "x"])
    plain = sm.Logit(y, xmat).fit(disp=0)
    assert fit.sigma < 0.6
    np.testing.assert_allclose(fit.params, plain.params, atol=0.5 * plain.bse.max())


def test_mixed_models_on_synthetic_design_b():
    tables = synthetic.synthetic_b(
        n_participants=1500, seed=12, debate=0.7, mainstream=-0.4, interaction=0.0, sigma=0.7
    )
    df = live.analysed_sessions(frames.typed("claim_judgements", tables["claim_judgements"]))
    out = live.mixed_models(df)
    terms = {t["term"]: t for t in out["combined"]["terms"]}
    assert out["references"] == {"protocol": "consultancy", "group": "skeptical"}
    assert set(terms) == {
        "intercept",
        "protocol: debate",
        "group: mainstream",
        "protocol: debate × group: mainstream",
    }
    for name, truth in (
        ("protocol: debate", 0.7),
        ("group: mainstream", -0.4),
        ("protocol: debate × group: mainstream", 0.0),
    ):
        assert abs(terms[name]["log_odds"] - truth) < 3 * terms[name]["se"], name
    assert out["combined"]["n_participants"] == df["participant_id"].nunique()
    assert set(out["per_protocol"]) == {"consultancy", "debate"}


def test_mixed_model_covariates_come_from_the_responses_table():
    tables = synthetic.synthetic_b(n_participants=300, seed=2)
    df = live.analysed_sessions(frames.typed("claim_judgements", tables["claim_judgements"]))
    responses = frames.typed("responses", tables["responses"])
    out = live.mixed_models(df, responses, covariates=["ai_literacy"], categorical=["political_leaning"])
    names = [t["term"] for t in out["combined"]["terms"]]
    assert "ai_literacy" in names
    assert {
        "political_leaning: Left",
        "political_leaning: Prefer not to say",
        "political_leaning: Right",
    } <= set(names)
    assert out["references"]["political_leaning"] == "Centre"
