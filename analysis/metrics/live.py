"""Design B (paper 001, judging a claim before and after a live debate or consultancy).

Accuracy before and after by protocol and belief group, answer transitions, truth-aligned
confidence shifts, Brier scores and calibration, and mixed-effects logistic regressions.

How a confidence answer becomes a probability. A participant answers "true" or "false" and
gives a confidence from 0 to 100 in that answer. The probability the participant assigns to
their own answer being correct is confidence / 100 (so 100 = certain the answer is right,
50 = a coin toss, and values below 50 say the answer is more likely wrong than right); the
probability assigned to the claim being true is therefore confidence / 100 after a "true"
answer and 1 - confidence / 100 after a "false" answer. The Brier score is the mean over
claim judgements of (confidence / 100 - correct)^2, with correct = 1 if the answer matches the
truth label, else 0 (identical to the mean of (P(true) - truth)^2). The calibration curve bins
judgements by confidence / 100 (10 equal-width bins by default) and plots each bin's share of
correct answers against its mean confidence; points below the diagonal are overconfidence.
Paper 001 prints no formula; this reading follows its text: confidence (0-100) is "the
judge's initial confidence in their answer" (its prior-strength bands are 0-40, 40-70,
70-100), and Figure 5 plots "final accuracy against their confidence levels" against the
diagonal. Unless stated, the Brier score and calibration use the final answer.

Truth-aligned confidence: +confidence when the answer is correct, -confidence when it is
wrong (range -100..100); the shift is final minus initial, tested against 0 with a
one-sample t test (paper 001, Table 2: "confidence scores weighted by correctness"). "Belief
improved" is a positive shift; "answer changed" is a different final answer.

Only sessions of completed, non-excluded participants with both an initial and a final
answer are analysed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from analysis.metrics import mixed
from analysis.metrics.common import item_answers
from analysis.metrics.frames import (
    analysable,
    codes_of,
    flag,
    flag_as_told,
    participant_key,
    require,
    same_where_told,
    uses_study,
    within,
)
from analysis.metrics.intervals import logit_difference, proportion

REQUIRED = ("participant_id", "protocol", "initial_correct", "final_correct")
ALL = "all"
NO_GROUP = "(no group)"
ANSWERS = codes_of("claim_judgements", "final_answer")  # initial_answer, final_answer as exported
TRANSITIONS = (("CC", True, True), ("CI", True, False), ("IC", False, True), ("II", False, False))
TRANSITION_TITLES = {
    "CC": "correct → correct",
    "CI": "correct → incorrect",
    "IC": "incorrect → correct",
    "II": "incorrect → incorrect",
}


def analysed_sessions(
    claim_judgements: pd.DataFrame, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> pd.DataFrame:
    """The sessions that count, with a `group` column (from the row, else the participant).
    Correctness is as the answers and the truth tell where they do (a spreadsheet that edited
    `final_correct` and not `final_answer` had every accuracy follow the flag, silently), said
    in `notes`."""
    return analysed_rows(claim_judgements, participants, notes)[0]


def analysed_rows(
    claim_judgements: pd.DataFrame, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """`analysed_sessions`, and which of the table's rows they are (a boolean mask): the fill
    counts the rows the figures use."""
    require(claim_judgements, "claim_judgements", REQUIRED, "design B")
    keep = np.asarray(analysable(claim_judgements, "claim_judgements", participants), dtype=bool)
    df = _correct_as_told(claim_judgements[keep], notes if notes is not None else [])
    # A protocol the export never writes (a typo, "debat") is counted in the warnings and in no
    # figure: it had made a protocol of its own in every table and in the mixed model.
    known = df["protocol"].isin(codes_of("claim_judgements", "protocol"))
    usable = (df["initial_correct"].notna() & df["final_correct"].notna() & known).to_numpy()
    df = df[usable].reset_index(drop=True)
    return df.assign(group=groups_of(df, participants)), within(keep, usable)


def _correct_as_told(df: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    if "truth" not in df.columns or df.empty:
        return df
    out = df.copy()
    for when in ("initial", "final"):
        answer = f"{when}_answer"
        if answer not in out.columns:
            continue
        right = same_where_told(out[answer], out["truth"], ANSWERS)
        column = f"{when}_correct"
        given = out[column].astype("boolean")
        told_so, clashes = flag_as_told(right, given)
        out[column] = told_so.where(given.notna(), pd.NA)  # blank stays blank: an unfinished session
        if clashes:
            notes.append(
                f"claim_judgements.csv: {clashes} row(s) whose `{column}` disagrees with {answer} and "
                "truth: counted as they tell."
            )
    return out


ANSWERS = ("true", "false")


def groups_of(df: pd.DataFrame, participants: pd.DataFrame | None) -> pd.Series:
    group = df["group"] if "group" in df.columns else pd.Series(None, index=df.index, dtype="str")
    if group.isna().any() and participants is not None and "group" in participants.columns:
        with_study = uses_study(df, participants)
        p = (
            participants.assign(_k=participant_key(participants, with_study))
            .drop_duplicates("_k")
            .set_index("_k")
        )
        fallback = pd.Series(participant_key(df, with_study).map(p["group"]).to_numpy(), index=df.index)
        group = group.where(group.notna(), fallback)
    return group.astype(object).where(group.notna(), NO_GROUP).astype(str)


def _cells(df: pd.DataFrame, by_group: bool = True):
    """(protocol, group, rows) for every protocol × group and every protocol pooled."""
    for protocol in sorted(df["protocol"].astype(str).unique()):
        rows = df[df["protocol"].astype(str) == protocol]
        yield protocol, ALL, rows
        if by_group:
            for group in sorted(rows["group"].unique()):
                yield protocol, group, rows[rows["group"] == group]


def _bool(series: pd.Series) -> np.ndarray:
    return flag(series).to_numpy()


def accuracy(df: pd.DataFrame) -> dict:
    """Accuracy before and after (95% Wilson) by protocol, protocol × group and protocol ×
    domain, with the change in percentage points."""

    def row(protocol, key, value, rows):
        before, after = _bool(rows["initial_correct"]), _bool(rows["final_correct"])
        b, a = proportion(before.sum(), before.size), proportion(after.sum(), after.size)
        change = None if a["p"] is None else 100 * (a["p"] - b["p"])
        return {"protocol": protocol, key: value, "initial": b, "final": a, "change_pp": change}

    out = {"by_protocol_group": [row(p, "group", g, r) for p, g, r in _cells(df)]}
    if "domain" in df.columns and df["domain"].notna().any():
        rows = []
        for protocol in sorted(df["protocol"].astype(str).unique()):
            sub = df[df["protocol"].astype(str) == protocol]
            for domain in sorted(sub["domain"].dropna().astype(str).unique()):
                rows.append(row(protocol, "domain", domain, sub[sub["domain"].astype(str) == domain]))
        out["by_protocol_domain"] = rows
    return out


def protocol_comparison(
    df: pd.DataFrame, protocols: tuple[str, str] = ("debate", "consultancy")
) -> list[dict]:
    """Final accuracy of the first protocol minus the second, per group and pooled, with the
    Wald p-value of a two-group logistic regression (it ignores that a participant judges
    several claims: the mixed model below accounts for that)."""
    first, second = protocols
    out = []
    for group in [ALL] + sorted(df["group"].unique()):
        rows = df if group == ALL else df[df["group"] == group]
        a = _bool(rows.loc[rows["protocol"].astype(str) == first, "final_correct"])
        b = _bool(rows.loc[rows["protocol"].astype(str) == second, "final_correct"])
        if a.size == 0 or b.size == 0:
            continue
        test = logit_difference(int(a.sum()), a.size, int(b.sum()), b.size)
        out.append(
            {
                "group": group,
                first: proportion(a.sum(), a.size),
                second: proportion(b.sum(), b.size),
                "diff_pp": test["diff_pp"],
                "p": test["p"],
            }
        )
    return out


def transitions(df: pd.DataFrame) -> dict:
    """Answer transitions per protocol × group: counts and shares of correct→correct,
    correct→incorrect, incorrect→correct, incorrect→incorrect, and the mean change in
    confidence (final - initial, with its SE) within each; and per group, the chi-square test
    that the transition distribution is the same under each protocol."""
    rows = []
    for protocol, group, cell in _cells(df):
        before, after = _bool(cell["initial_correct"]), _bool(cell["final_correct"])
        has_conf = {"initial_confidence", "final_confidence"} <= set(cell.columns)
        change = (
            (cell["final_confidence"].astype(float) - cell["initial_confidence"].astype(float)).to_numpy()
            if has_conf
            else np.full(len(cell), np.nan)
        )
        entry = {"protocol": protocol, "group": group, "n": int(len(cell))}
        for name, b, a in TRANSITIONS:
            mask = (before == b) & (after == a)
            d = change[mask]
            d = d[~np.isnan(d)]
            entry[name] = {
                **proportion(mask.sum(), len(cell)),
                "confidence_change": float(d.mean()) if d.size else None,
                "confidence_change_se": float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None,
            }
        rows.append(entry)
    tests = []
    for group in [ALL] + sorted(df["group"].unique()):
        table = [[r[name]["k"] for name, _, _ in TRANSITIONS] for r in rows if r["group"] == group]
        table = np.array(table, dtype=float)
        if table.shape[0] < 2:
            continue
        keep = table.sum(axis=0) > 0
        if keep.sum() < 2 or (table.sum(axis=1) == 0).any():
            continue
        chi2, p, dof, _ = stats.chi2_contingency(table[:, keep], correction=False)
        tests.append({"group": group, "chi2": float(chi2), "df": int(dof), "p": float(p)})
    return {"cells": rows, "tests": tests}


def truth_aligned(confidence: pd.Series, correct: pd.Series) -> np.ndarray:
    """+confidence if correct, -confidence if not (NaN where the confidence is missing)."""
    c = confidence.astype(float).to_numpy()
    return np.where(_bool(correct), c, -c)


def confidence_shift(df: pd.DataFrame) -> list[dict]:
    """Table 2 of paper 001: mean truth-aligned confidence shift (one-sample t test against 0),
    % whose truth-aligned confidence increased, % who changed their answer."""
    if not {"initial_confidence", "final_confidence"} <= set(df.columns):
        return []
    rows = []
    for protocol, group, cell in _cells(df):
        shift = truth_aligned(cell["final_confidence"], cell["final_correct"]) - truth_aligned(
            cell["initial_confidence"], cell["initial_correct"]
        )
        shift = shift[~np.isnan(shift)]
        # Over the sessions with both answers, each true or false: a blank or foreign answer
        # (said among the warnings) was counted as a change of answer.
        if {"initial_answer", "final_answer"} <= set(cell.columns):
            before, after = cell["initial_answer"], cell["final_answer"]
            known = (before.isin(ANSWERS) & after.isin(ANSWERS)).to_numpy(dtype=bool)
            changed = (before.astype(str) != after.astype(str)).to_numpy()[known]
        else:
            before, after = cell["initial_correct"], cell["final_correct"]
            known = (before.notna() & after.notna()).to_numpy(dtype=bool)
            changed = (_bool(before) != _bool(after))[known]
        entry = {
            "protocol": protocol,
            "group": group,
            "n": int(shift.size),
            "mean_shift": None,
            "se": None,
            "t": None,
            "p": None,
        }
        if shift.size:
            entry["mean_shift"] = float(shift.mean())
        if shift.size > 1 and shift.std(ddof=1) > 0:
            test = stats.ttest_1samp(shift, 0.0)
            entry.update(
                se=float(shift.std(ddof=1) / np.sqrt(shift.size)),
                t=float(test.statistic),
                p=float(test.pvalue),
            )
        entry["improved"] = proportion(int((shift > 0).sum()), shift.size)
        entry["changed"] = proportion(int(changed.sum()), changed.size)
        rows.append(entry)
    return rows


def probability_correct(confidence: pd.Series) -> np.ndarray:
    """The probability a participant gives their own answer: confidence / 100, clipped to
    [0, 1]."""
    return np.clip(confidence.astype(float).to_numpy() / 100.0, 0.0, 1.0)


def brier_score(confidence: pd.Series, correct: pd.Series) -> float | None:
    """Mean of (confidence / 100 - correct)^2 over the judgements with a confidence."""
    p = probability_correct(confidence)
    y = _bool(correct).astype(float)
    keep = ~np.isnan(p)
    return float(np.mean((p[keep] - y[keep]) ** 2)) if keep.any() else None


def brier(df: pd.DataFrame) -> list[dict]:
    """Brier scores of the final (and initial) judgements per protocol × group."""
    rows = []
    for protocol, group, cell in _cells(df):
        entry = {"protocol": protocol, "group": group, "n": int(len(cell)), "final": None, "initial": None}
        if "final_confidence" in cell.columns:
            entry["final"] = brier_score(cell["final_confidence"], cell["final_correct"])
        if "initial_confidence" in cell.columns:
            entry["initial"] = brier_score(cell["initial_confidence"], cell["initial_correct"])
        rows.append(entry)
    return rows


def calibration_curve(confidence: pd.Series, correct: pd.Series, bins: int = 10) -> list[dict]:
    """Equal-width bins of confidence / 100 on [0, 1] (the last bin includes 1): per bin the
    number of judgements, their mean confidence and their accuracy (95% Wilson)."""
    p = probability_correct(confidence)
    y = _bool(correct)
    keep = ~np.isnan(p)
    p, y = p[keep], y[keep]
    index = np.minimum((p * bins).astype(int), bins - 1)
    out = []
    for b in range(bins):
        mask = index == b
        if not mask.any():
            continue
        out.append(
            {
                "lo": b / bins,
                "hi": (b + 1) / bins,
                "mean_confidence": float(p[mask].mean()),
                "accuracy": proportion(y[mask].sum(), mask.sum()),
            }
        )
    return out


def calibration(df: pd.DataFrame, bins: int = 10) -> list[dict]:
    """Calibration curve of final judgements per protocol (pooled over groups)."""
    if "final_confidence" not in df.columns:
        return []
    return [
        {
            "protocol": protocol,
            "bins": calibration_curve(cell["final_confidence"], cell["final_correct"], bins),
        }
        for protocol, _, cell in _cells(df, by_group=False)
    ]


def consultant_agreement(df: pd.DataFrame) -> list[dict]:
    """Paper 001 Table 1: consultancy accuracy before and after, split by whether the
    consultant argued the participant's initial answer."""
    if not {"consultant_side", "initial_answer"} <= set(df.columns):
        return []
    cons = df[(df["protocol"].astype(str) == "consultancy") & df["consultant_side"].notna()]
    rows = []
    for group in [ALL] + sorted(cons["group"].unique()):
        cell = cons if group == ALL else cons[cons["group"] == group]
        agree = (cell["consultant_side"].astype(str) == cell["initial_answer"].astype(str)).to_numpy()
        for name, mask in (("agrees", agree), ("disagrees", ~agree)):
            before, after = _bool(cell["initial_correct"])[mask], _bool(cell["final_correct"])[mask]
            rows.append(
                {
                    "group": group,
                    "consultant": name,
                    "initial": proportion(before.sum(), before.size),
                    "final": proportion(after.sum(), after.size),
                }
            )
    return rows


def fill(
    claim_judgements: pd.DataFrame, analysed_mask: np.ndarray, participants: pd.DataFrame | None
) -> list[dict]:
    """Sessions per group × protocol × claim: analysed, and all rows."""
    if "claim" not in claim_judgements.columns:
        return []
    frame = pd.DataFrame(
        {
            "group": groups_of(claim_judgements, participants).to_numpy(),
            "protocol": claim_judgements["protocol"].astype(str).to_numpy(),
            "claim": claim_judgements["claim"].astype(str).to_numpy(),
            "analysed": analysed_mask.astype(int),
        }
    )
    grouped = frame.groupby(["group", "protocol", "claim"], sort=True)["analysed"].agg(["sum", "size"])
    return [
        {"group": g, "protocol": p, "claim": c, "analysed": int(row["sum"]), "sessions": int(row["size"])}
        for (g, p, c), row in grouped.iterrows()
    ]


# --- mixed-effects logistic regression ---------------------------------------------------------


def _dummies(values: pd.Series, reference: str | None, label: str) -> tuple[list[np.ndarray], list[str], str]:
    levels = sorted(values.unique())
    reference = reference if reference in levels else levels[0]
    columns = [(values == level).to_numpy(dtype=float) for level in levels if level != reference]
    names = [f"{label}: {level}" for level in levels if level != reference]
    return columns, names, reference


def _covariates(
    df: pd.DataFrame, responses: pd.DataFrame | None, numeric: list[str], categorical: list[str]
) -> tuple[list[np.ndarray], list[str], np.ndarray, dict]:
    """Columns for the questionnaire covariates (value_num for numeric items, dummies of the
    answer text for categorical ones), and the mask of rows that have every covariate."""
    columns, names, keep, references = [], [], np.ones(len(df), dtype=bool), {}
    if not (numeric or categorical):
        return columns, names, keep, references
    if responses is None:
        raise ValueError("table 'responses' is missing (needed for the mixed-model covariates)")
    with_study = uses_study(df, responses)
    keys = participant_key(df, with_study)
    for key in numeric:
        answers = item_answers(responses, key, with_study)
        values = keys.map(answers["value_num"]).to_numpy(dtype=float)
        keep &= ~np.isnan(values)
        columns.append(np.nan_to_num(values))
        names.append(key)
    for key in categorical:
        answers = item_answers(responses, key, with_study)
        values = pd.Series(keys.map(answers["value"]).to_numpy(dtype=object), index=df.index)
        keep &= values.notna().to_numpy()
        cols, labels, ref = _dummies(values.fillna("").astype(str), None, key)
        columns += cols
        names += labels
        references[key] = ref
    return columns, names, keep, references


def _fit(df, columns, names, keep, nodes) -> dict | None:
    xmat = np.column_stack([np.ones(len(df))] + columns)[keep]
    y = _bool(df["final_correct"]).astype(float)[keep]
    groups = participant_key(df, uses_study(df)).to_numpy()[keep]
    # Drop columns without variation in the rows kept (a level absent from this subset).
    vary = [0] + [i for i in range(1, xmat.shape[1]) if np.ptp(xmat[:, i]) > 0]
    xmat = xmat[:, vary]
    names = ["intercept"] + [names[i - 1] for i in vary[1:]]
    if len(y) == 0:
        return None
    fit = mixed.fit_random_intercept(xmat, y, groups, names, nodes=nodes)
    if fit is None:
        return None
    return {
        "terms": fit.terms(),
        "sigma": fit.sigma,
        "sigma_se": fit.sigma_se,
        "icc": fit.icc,
        "loglik": fit.loglik,
        "n_obs": fit.n_obs,
        "n_participants": fit.n_groups,
        "converged": fit.converged,
        "method": fit.method,
    }


def mixed_models(
    df: pd.DataFrame,
    responses: pd.DataFrame | None = None,
    covariates: list[str] | None = None,
    categorical: list[str] | None = None,
    protocol_reference: str = "consultancy",
    group_reference: str = "skeptical",
    nodes: int = 20,
) -> dict:
    """Paper 001's mixed-effects logistic regressions of final correctness with a random
    intercept per participant: the combined model (protocol, belief group, their
    interaction, covariates) and one model per protocol (belief group and covariates).
    Odds ratios with 95% Wald intervals."""
    extra, extra_names, keep, references = _covariates(
        df, responses, list(covariates or []), list(categorical or [])
    )
    protocol = df["protocol"].astype(str)
    group = df["group"].astype(str)
    p_cols, p_names, p_ref = _dummies(protocol, protocol_reference, "protocol")
    g_cols, g_names, g_ref = (
        _dummies(group, group_reference, "group") if group.nunique() > 1 else ([], [], None)
    )
    inter_cols = [a * b for a in p_cols for b in g_cols]
    inter_names = [f"{a} × {b}" for a in p_names for b in g_names]
    out = {
        "references": {"protocol": p_ref, "group": g_ref, **references},
        "combined": _fit(
            df,
            p_cols + g_cols + inter_cols + extra,
            p_names + g_names + inter_names + extra_names,
            keep,
            nodes,
        ),
        "per_protocol": {},
    }
    for level in sorted(protocol.unique()):
        mask = (protocol == level).to_numpy()
        sub = df[mask]
        cols = [c[mask] for c in g_cols] + [c[mask] for c in extra]
        out["per_protocol"][level] = _fit(sub, cols, g_names + extra_names, keep[mask], nodes)
    return out
