"""Design A (paper 000, judging a pre-generated debate): Tables 39-45 and Figure 15.

Side-A choice by bias location, the signed logistic regressions of Tables 40-41, the
joint-bootstrap SEs of Table 42, the bias-detection cascade of Tables 43-45 and accuracy by
self-reported expertise (Figure 15).

Definitions (where the paper's appendix gives only the numbers, they were checked against them):

- Signed active side: +1 bias on side A, -1 bias on side B, 0 baseline (export column
  `signed_active_side`).
- Table 40: logit P(chose A) = b0 + b1 * signed. On the counts rebuilt from Table 39
  (51/72, 99/148, 74/149) this gives b0 = 0.44749 (the paper prints 0.448; its OR 1.564 is
  exp(0.44749)), b1 = 0.36588, OR 1.442, p = .0025 (printed .002).
- Table 41: ONE joint model, logit P(chose A) = b0 + sum_k b_k * signed * [condition = k], over
  the baseline and all four biases (a shared intercept). The paper's four coefficients
  (0.390, 0.302, 0.304, 0.475) are consistent with this joint fit given Table 39's margins
  (they imply whole-number cell differences 8, 3, 6, 8 that sum to 99 - 74 = 25); no split of
  Table 39's margins reproduces them with separate "baseline + one bias" fits. Those subset
  fits are reported too (`subset_log_odds`).
- Table 42: the per-bias effect in percentage points is the model-implied average shift
  toward the manipulated side, 100 * (P(A | bias k on A) - P(A | bias k on B)) / 2, from the
  joint model; its joint-bootstrap SE is the standard deviation over bootstrap replicates that
  resample participants with replacement from the whole analysed sample (all conditions at
  once, so the four effects keep their covariance through the shared baseline) and refit the
  joint model. The omnibus comparison is the Wald test that the four effects are equal, using
  the bootstrap covariance (chi-square, K - 1 df). The paper's text defining Table 42 is not
  in our copy; this definition gives 5.4-5.9 pp on counts rebuilt from Tables 39 and 41
  (the within-bias split is not published), against the paper's 5.5-5.8 pp.
- Tables 43-45: detection levels are nested (a cascade): presence = said "yes" on a biased
  dialogue; side = presence and the biased side named; type = side and the bias type named.
  A missing bias report counts as not detected. The p-values are Wald tests of a logistic
  regression of the outcome on the met/not-met indicator (this reproduces all six published
  p-values; see intervals.logit_difference).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from analysis.metrics import logistic
from analysis.metrics.common import first_likert_key, item_answers, proportions_by
from analysis.metrics.frames import (
    analysable,
    flag,
    flag_as_told,
    has,
    participant_key,
    require,
    same_where_told,
    uses_study,
    within,
)
from analysis.metrics.intervals import logit_difference, proportion

BIASES = ("anchoring", "fallacy_oversight", "pro_jargon", "verbosity")
BIAS_TITLES = {
    "anchoring": "Anchoring",
    "fallacy_oversight": "Fallacy oversight",
    "pro_jargon": "Pro-jargon",
    "verbosity": "Verbosity",
    "baseline": "Baseline",
}
LOCATIONS = (
    ("baseline", 0, "Baseline (no active bias)"),
    ("bias_on_a", 1, "Active bias on Side A"),
    ("bias_on_b", -1, "Active bias on Side B"),
)
REQUIRED = ("participant_id", "condition", "signed_active_side", "chose_a", "correct")


def analysed_judgements(
    judgements: pd.DataFrame, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> pd.DataFrame:
    """The judgements that count: completed, non-excluded participants, with a choice. What
    the side columns contradict or a row cannot be analysed by is said in `notes`."""
    return analysed_rows(judgements, participants, notes)[0]


def analysed_rows(
    judgements: pd.DataFrame, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> tuple[pd.DataFrame, np.ndarray]:
    """`analysed_judgements`, and which of the table's rows they are (a boolean mask): the fill
    per dialogue counts the rows the figures use."""
    require(judgements, "judgements", REQUIRED, "design A")
    keep = np.asarray(analysable(judgements, "judgements", participants), dtype=bool)
    df = _derived(judgements[keep], notes if notes is not None else [])
    usable = (df["chose_a"].notna() & df["signed_active_side"].notna()).to_numpy()
    return df[usable].reset_index(drop=True), within(keep, usable)


SIGNED = {"A": 1, "B": -1}  # signed_active_side from active_side_letter; 0 when active_side is "none"


def _derived(df: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """The flags the export derives from the sides (`chose_a` and `correct` from chosen_side
    and culprit_side, `signed_active_side` from active_side_letter: +1 a bias on side A, -1 on
    B, 0 none), as the sides tell where they do, else as written: blank where a study exported
    without them was merged with one that has them (that study's every judgement had been left
    out); contradicted where a spreadsheet edited one column and not the other (the flag had
    counted, silently). Rows no model can place are left out and said: a signed side other than
    -1, 0, +1 that no letter tells, a bias with no condition (read as baseline by the joint
    model)."""
    out = df.copy()
    if out.empty:
        return out
    told = []
    if "chosen_side" in out.columns:
        chose = out["chosen_side"].map({"A": True, "B": False}).astype("boolean")
        out["chose_a"], clashes = flag_as_told(chose, out["chose_a"].astype("boolean"))
        told.append(("chose_a", "chosen_side", clashes))
        if "culprit_side" in out.columns:
            right = same_where_told(out["chosen_side"], out["culprit_side"], "AB")
            out["correct"], clashes = flag_as_told(right, out["correct"].astype("boolean"))
            told.append(("correct", "chosen_side and culprit_side", clashes))
    given = out["signed_active_side"].astype("Float64")
    if "active_side_letter" in out.columns:
        signed = out["active_side_letter"].map(SIGNED).astype("Float64")
        if "active_side" in out.columns:
            signed = signed.mask(out["active_side"].eq("none").fillna(False).astype(bool), 0)
        clashes = int((signed.notna() & given.notna() & (signed != given).fillna(False)).sum())
        told.append(("signed_active_side", "active_side_letter", clashes))
        given = signed.fillna(given)
    for column, by, clashes in told:
        if clashes:
            notes.append(
                f"judgements.csv: {clashes} row(s) whose `{column}` disagrees with {by}: counted as "
                f"{by} tell{'s' if ' and ' not in by else ''}."
            )
    odd = given.notna() & ~given.isin([-1, 0, 1])
    if odd.any():
        example = given[odd].iloc[0]
        notes.append(
            f"judgements.csv: {int(odd.sum())} row(s) with `signed_active_side` other than -1, 0 or 1 "
            f"(for example {example:g}) and no active_side_letter to tell the side: left out."
        )
        given = given.mask(odd)
    if "condition" in out.columns:
        blank = out["condition"].isna() | (out["condition"].astype(str) == "")
        unnamed = given.notna() & (given != 0) & blank
        if unnamed.any():
            notes.append(
                f"judgements.csv: {int(unnamed.sum())} biased judgement(s) (signed_active_side ±1) "
                "with no `condition`: left out (no bias to count them under; the joint model would "
                "have read them as baseline)."
            )
            given = given.mask(unnamed)
    out["signed_active_side"] = given.astype("Int64") if (given.dropna() % 1 == 0).all() else given
    return out


def biases_in(df: pd.DataFrame) -> list[str]:
    """The bias conditions present, the paper's four first."""
    present = set(df.loc[df["signed_active_side"] != 0, "condition"].dropna().astype(str))
    return [b for b in BIASES if b in present] + sorted(present - set(BIASES))


def _y(df: pd.DataFrame, column: str) -> np.ndarray:
    return flag(df[column]).to_numpy(dtype=float)


# --- Tables 39-40 --------------------------------------------------------------------------


def h1_regression(df: pd.DataFrame) -> dict | None:
    """Table 40: logistic regression of chose_a on signed_active_side."""
    x = df["signed_active_side"].to_numpy(dtype=float)
    xmat = np.column_stack([np.ones_like(x), x])
    fit = logistic.fit(xmat, _y(df, "chose_a"), ["intercept", "signed_active_side"])
    if fit is None:
        return None
    b0, b1 = fit.params
    return {
        "n": fit.n,
        "terms": fit.terms(),
        "implied_p": {name: float(expit(b0 + b1 * s)) for name, s, _ in LOCATIONS},
    }


def choose_a_by_location(df: pd.DataFrame, h1: dict | None) -> list[dict]:
    """Table 39: % choosing side A by the active bias's location, observed (Wilson 95%) and
    as implied by the Table 40 model."""
    rows = []
    for name, s, title in LOCATIONS:
        cell = df[df["signed_active_side"] == s]
        y = _y(cell, "chose_a")
        rows.append(
            {
                "location": name,
                "title": title,
                **proportion(int(y.sum()), int(y.size)),
                # None where no judgement is: the model's value there is no figure of the data.
                "implied_p": None if h1 is None or not y.size else h1["implied_p"][name],
            }
        )
    return rows


# --- Tables 41-42 --------------------------------------------------------------------------


def joint_design(df: pd.DataFrame, biases: list[str]) -> np.ndarray:
    """Constant plus one signed predictor per bias (signed side where the condition is that
    bias, 0 elsewhere)."""
    s = df["signed_active_side"].to_numpy(dtype=float)
    condition = df["condition"].astype(str).to_numpy()
    columns = [np.ones(len(df))] + [np.where(condition == b, s, 0.0) for b in biases]
    return np.column_stack(columns)


def effects_pp(beta: np.ndarray) -> np.ndarray:
    """Model-implied shift toward the manipulated side per bias, in percentage points:
    100 * (P(A | on A) - P(A | on B)) / 2 from (intercept, b_1..b_K); works on batches."""
    b0 = beta[..., :1]
    bk = beta[..., 1:]
    return 100 * (expit(b0 + bk) - expit(b0 - bk)) / 2


def per_bias_fits(df: pd.DataFrame, biases: list[str]) -> dict | None:
    """Table 41: the joint model's coefficient for each bias's signed predictor, with the cell
    counts, plus the coefficient of a separate fit on the baseline and that bias only."""
    if not biases:
        return None
    xmat = joint_design(df, biases)
    y = _y(df, "chose_a")
    fit = logistic.fit(xmat, y, ["intercept"] + list(biases))
    if fit is None:
        return None
    terms = fit.terms()
    effects = effects_pp(fit.params)
    baseline = df["signed_active_side"] == 0
    rows = []
    for i, bias in enumerate(biases):
        cell = df[df["condition"].astype(str) == bias]
        subset = df[baseline | (df["condition"].astype(str) == bias)]
        xs = subset["signed_active_side"].to_numpy(dtype=float)
        # Without baseline judgements the "baseline + this bias" fit is the joint one again.
        sub = None
        if baseline.any():
            sub = logistic.fit(
                np.column_stack([np.ones_like(xs), xs]), _y(subset, "chose_a"), ["intercept", bias]
            )
        rows.append(
            {
                "bias": bias,
                "n": int(len(cell)),
                "on_a": int((cell["signed_active_side"] == 1).sum()),
                "on_b": int((cell["signed_active_side"] == -1).sum()),
                **{k: v for k, v in terms[i + 1].items() if k != "term"},
                "effect_pp": float(effects[i]),
                "subset_log_odds": None if sub is None else float(sub.params[1]),
            }
        )
    return {"n": fit.n, "intercept": terms[0], "biases": rows}


MAX_FAILED_SHARE = 0.1  # of bootstrap replicates that may fail before Table 42 is not reported


def joint_bootstrap(
    df: pd.DataFrame, biases: list[str], replicates: int, rng: np.random.Generator
) -> dict | None:
    """Table 42: joint-bootstrap SEs (pp) of the per-bias effects, resampling participants
    (all of a participant's judgements together) from the whole analysed sample, and the
    omnibus Wald test that the effects are equal."""
    if not biases or replicates < 2:
        return None
    xmat = joint_design(df, biases)
    y = _y(df, "chose_a")
    base = logistic.fit(xmat, y, ["intercept"] + list(biases))
    if base is None:
        return None
    rows, cell = np.unique(xmat, axis=0, return_inverse=True)
    cell = cell.reshape(-1)
    keys = participant_key(df, uses_study(df))
    person, _ = pd.factorize(keys, sort=True)
    n_people, n_cells = int(person.max()) + 1, len(rows)
    ones = np.zeros((n_people, n_cells))
    trials = np.zeros((n_people, n_cells))
    np.add.at(ones, (person, cell), y)
    np.add.at(trials, (person, cell), 1.0)
    draws = []
    chunk = max(1, 2_000_000 // max(n_people, 1))
    done = 0
    while done < replicates:
        size = min(chunk, replicates - done)
        weights = rng.multinomial(n_people, np.full(n_people, 1.0 / n_people), size=size).astype(float)
        beta, _, ok = logistic.newton(rows, weights @ ones, weights @ trials)
        draws.append(np.where(ok[:, None], effects_pp(beta), np.nan))
        done += size
    effects = np.concatenate(draws)
    good = effects[~np.isnan(effects).any(axis=1)]
    failed = int(len(effects) - len(good))
    point = effects_pp(base.params)
    out = {"replicates": int(replicates), "failed": failed, "biases": []}
    if len(good) < 2 or failed > MAX_FAILED_SHARE * replicates:
        # The replicates that fail are the extreme ones (a resample with a bias's judgements
        # all one way): SEs from the others would be too small. None reported, and said.
        return out
    se = good.std(axis=0, ddof=1)
    lo, hi = np.percentile(good, [2.5, 97.5], axis=0)
    for i, bias in enumerate(biases):
        out["biases"].append(
            {
                "bias": bias,
                "effect_pp": float(point[i]),
                "se_pp": float(se[i]),
                "lo_pp": float(lo[i]),
                "hi_pp": float(hi[i]),
            }
        )
    out["omnibus"] = _omnibus(point, np.atleast_2d(np.cov(good, rowvar=False)))
    return out


def _omnibus(effects: np.ndarray, cov: np.ndarray) -> dict | None:
    k = len(effects)
    if k < 2:
        return None
    contrast = np.hstack([-np.ones((k - 1, 1)), np.eye(k - 1)])  # each bias minus the first
    d = contrast @ effects
    v = contrast @ cov @ contrast.T
    try:
        chi2 = float(d @ np.linalg.solve(v, d))
    except np.linalg.LinAlgError:
        return None
    return {"chi2": chi2, "df": k - 1, "p": float(stats.chi2.sf(chi2, k - 1))}


# --- Tables 43-45 ---------------------------------------------------------------------------


def _told(column: pd.Series) -> pd.Series:
    """Where a cell holds an answer (not blank, not missing)."""
    text = column.astype("string").str.strip()
    return text.notna() & (text != "")


def detection_levels(df: pd.DataFrame) -> pd.DataFrame | None:
    """Nested detection flags per judgement: presence, side, type (see the module docstring);
    from the export's *_correct flags, or derived from the raw answers."""

    def level(flag_column: str, derive):
        if flag_column not in df.columns:
            return derive()
        given = df[flag_column].astype("boolean")
        if given.isna().any():
            # Blank where a study exported without the flag was merged with one that has it:
            # derived from the raw answers where they are there (blank had read as "missed").
            try:  # None, or a KeyError, where the raw answers are not there either
                given = given.fillna(pd.Series(derive(), index=df.index, dtype="boolean"))
            except KeyError:
                pass
        return given.fillna(False).to_numpy(dtype=bool)

    told = [c for c in ("bias_presence_correct", "bias_present") if c in df.columns]
    if not any(_told(df[c]).any() for c in told):
        # No column, or the export's columns blank on every row (a study without a bias-detection
        # step): a table of nobody detecting anything was shown (the researcher walk).
        return None
    biased = (df["signed_active_side"] != 0).to_numpy()
    said_yes = (df["bias_present"].astype(str) == "yes").to_numpy() if "bias_present" in df.columns else None
    unknown = set()  # levels no column tells: counted as None, not as nobody detecting
    presence = level("bias_presence_correct", lambda: said_yes == biased if said_yes is not None else None)
    if "bias_side_correct" in df.columns or (
        "active_side_letter" in df.columns and "bias_side" in df.columns
    ):
        side = level(
            "bias_side_correct",
            lambda: (df["bias_side"].astype(str) == df["active_side_letter"].astype(str)).to_numpy(),
        )
    else:
        side = np.zeros(len(df), dtype=bool)
        unknown |= {"side", "type"}
    if "bias_type_correct" in df.columns or "bias_type" in df.columns:
        kind = level(
            "bias_type_correct",
            lambda: (df["bias_type"].astype(str) == df["condition"].astype(str)).to_numpy(),
        )
    else:
        kind = np.zeros(len(df), dtype=bool)
        unknown.add("type")
    if said_yes is None:
        unknown.add("false_alarm")
    presence = presence & biased
    side = presence & side
    kind = side & kind
    false_alarm = (said_yes & ~biased) if said_yes is not None else np.zeros(len(df), dtype=bool)
    # Whose row tells a detection answer at all: a study without the step, merged with one that
    # has it, had its blank rows counted as "not detected" and "no false alarm" (the review).
    answered = np.zeros(len(df), dtype=bool)
    for column in told:
        answered |= _told(df[column]).to_numpy(dtype=bool)
    levels = pd.DataFrame(
        {
            "presence": presence,
            "side": side,
            "type": kind,
            "false_alarm": false_alarm,
            "answered": answered,
        },
        index=df.index,
    )
    levels.attrs["unknown"] = unknown
    return levels


def detection_cascade(df: pd.DataFrame, biases: list[str]) -> list[dict] | None:
    """Table 43: per condition, how many detected the bias's presence, side and type (nested);
    for the baseline, how many reported a bias that was not there (false alarms)."""
    levels = detection_levels(df)
    if levels is None:
        return None
    condition = df["condition"].astype(str)
    answered = levels["answered"].to_numpy()
    baseline = (df["signed_active_side"] == 0).to_numpy() & answered
    unknown = levels.attrs.get("unknown", set())

    def count(level: str, mask) -> int | None:
        return None if level in unknown else int(levels[level][mask].sum())

    rows = [
        {
            "condition": "baseline",
            "total": int(baseline.sum()),
            "presence": count("false_alarm", baseline),
            "side": None,
            "type": None,
        }
    ]
    for bias in biases + ["all"]:
        biased = answered & (df["signed_active_side"] != 0).to_numpy()
        mask = biased if bias == "all" else (condition == bias).to_numpy() & biased
        rows.append(
            {
                "condition": bias,
                "total": int(mask.sum()),
                "presence": count("presence", mask),
                "side": count("side", mask),
                "type": count("type", mask),
            }
        )
    return rows


def by_detection(df: pd.DataFrame, outcome: str) -> list[dict] | None:
    """Tables 44-45: on biased dialogues, the outcome (accuracy or bias-following) among
    those who met each detection level and those who did not, the difference (pp) and the
    Wald p-value of a logistic regression on the met indicator."""
    levels = detection_levels(df)
    if levels is None:
        return None
    biased = (df["signed_active_side"] != 0).to_numpy() & levels["answered"].to_numpy()
    y = outcome_values(df, outcome)
    rows = []
    for name in (n for n in ("presence", "side", "type") if n not in levels.attrs.get("unknown", ())):
        known = biased & ~np.isnan(y)
        met = levels[name].to_numpy() & known
        not_met = ~levels[name].to_numpy() & known
        k1, n1 = int(y[met].sum()), int(met.sum())
        k2, n2 = int(y[not_met].sum()), int(not_met.sum())
        test = logit_difference(k1, n1, k2, n2)
        rows.append(
            {
                "level": name,
                "met": proportion(k1, n1),
                "not_met": proportion(k2, n2),
                "diff_pp": test["diff_pp"],
                "p": test["p"],
            }
        )
    return rows


def outcome_values(df: pd.DataFrame, outcome: str) -> np.ndarray:
    """A 0/1 outcome as floats with NaN where not applicable; "followed_bias" is derived from
    the chosen and biased sides when the column is absent."""
    derived = None
    if outcome == "followed_bias" and has(df, "chosen_side", "active_side_letter"):
        biased = (df["signed_active_side"] != 0).to_numpy(dtype=bool)
        same = (df["chosen_side"].astype(str) == df["active_side_letter"].astype(str)).to_numpy(dtype=float)
        derived = np.where(biased, same, np.nan)
    if outcome in df.columns:
        s = df[outcome].astype("boolean")
        given = np.where(s.isna(), np.nan, s.fillna(False).astype(float))
        # blank where a study exported without the column was merged with one that has it
        return given if derived is None else np.where(np.isnan(given), derived, given)
    if derived is not None:
        return derived
    raise ValueError(f"table 'judgements' has no column {outcome!r}")


# --- Figure 15 ------------------------------------------------------------------------------


def by_expertise(
    df: pd.DataFrame,
    responses: pd.DataFrame | None,
    key: str | None,
    prefix: str = "expertise",
    item_order: Sequence[str] = (),
) -> dict | None:
    """Figure 15: accuracy and bias-following (with 95% Wilson intervals) by the level of a
    self-reported expertise item (default: the first Likert item whose key starts with
    `prefix`, in `item_order` where it is known). When the item was chosen by the rows' order
    among several on one page, "chosen_among" names them (for a warning)."""
    if responses is None:
        return None
    among = []
    if not key:
        key, among = first_likert_key(responses, prefix, item_order)
    if key is None:
        return None
    with_study = uses_study(df, responses)
    answers = item_answers(responses, key, with_study)
    keys = participant_key(df, with_study)
    level = keys.map(answers["value_num"]).to_numpy(dtype=float)
    label = keys.map(answers["value"]).to_numpy(dtype=object)
    accuracy = outcome_values(df, "correct")
    followed = (
        outcome_values(df, "followed_bias")
        if ("followed_bias" in df.columns or has(df, "chosen_side", "active_side_letter"))
        else np.full(len(df), np.nan)
    )
    rows = []
    for value in sorted(set(level[~np.isnan(level)])):
        mask = level == value
        labels = pd.Series(label[mask]).dropna().astype(str)
        a = accuracy[mask]
        a = a[~np.isnan(a)]
        f = followed[mask]
        f = f[~np.isnan(f)]
        rows.append(
            {
                "level": float(value),
                "label": labels.mode().sort_values().iloc[0] if len(labels) else None,
                "accuracy": proportion(int(a.sum()), int(a.size)),
                "followed": proportion(int(f.sum()), int(f.size)),
            }
        )
    found = {"key": key, "levels": rows, "unanswered": int(np.isnan(level).sum())}
    return {**found, "chosen_among": among} if among else found


# --- fill and accuracy -----------------------------------------------------------------------


def fill_per_dialogue(
    judgements: pd.DataFrame, analysed_mask: np.ndarray, listed: Sequence[str] = ()
) -> list[dict]:
    """Figure 5: analysed judgements (and all judgements) per dialogue; the study's `listed`
    dialogues that nobody judged with 0 (one study's data only: the names of several studies'
    dialogues are prefixed with their study)."""
    if "dialogue" not in judgements.columns:
        return []
    name = judgements["dialogue"].astype(str).where(judgements["dialogue"].notna(), "(none)")
    several = uses_study(judgements) and judgements["study"].nunique() > 1
    if several:
        name = judgements["study"].astype(str) + "/" + name
    frame = pd.DataFrame({"dialogue": name.to_numpy(), "analysed": analysed_mask.astype(int)})
    grouped = frame.groupby("dialogue", sort=False)["analysed"].agg(["sum", "size"])
    counts = {d: (int(grouped.loc[d, "sum"]), int(grouped.loc[d, "size"])) for d in grouped.index}
    if not several:
        for d in listed:
            counts.setdefault(str(d), (0, 0))
    order = sorted(counts, key=lambda d: (len(d), d))
    return [{"dialogue": d, "analysed": counts[d][0], "judgements": counts[d][1]} for d in order]


def accuracy_tables(df: pd.DataFrame, biases: list[str]) -> dict:
    """Accuracy (choosing the culprit's side) overall, by condition, by condition and biased
    role (culprit/rival), and by case, with Wilson intervals."""
    data = df.assign(_correct=df["correct"].astype("boolean"))
    order = {"condition": ["baseline"] + biases, "active_side": ["none", "culprit", "rival"]}
    y = outcome_values(df, "correct")
    y = y[~np.isnan(y)]
    out = {
        "overall": proportion(int(y.sum()), int(y.size)),
        "by_condition": proportions_by(data, "_correct", ["condition"], order),
    }
    if "active_side" in df.columns:
        out["by_condition_side"] = proportions_by(data, "_correct", ["condition", "active_side"], order)
    if "case" in df.columns:
        out["by_case"] = proportions_by(data, "_correct", ["case"])
    return out
