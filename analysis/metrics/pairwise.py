"""Design D (paper 003 §5, pairwise persuasiveness comparisons): rankings and their agreement.

Win matrices, Bradley–Terry strengths with bootstrap intervals, rankings, per-subgroup
rankings and their agreement with the global ranking (Table 4), and inter-annotator
reliability.

Only valid answers count: the export's `valid` flag (a real instance answered by a completed,
non-excluded annotator) when present, otherwise the same rule from the row's columns; the
winner must be 1, 2 or tie. A tie adds half a win to each interlocutor. Strengths are the
Bradley–Terry log-strengths by I-LSR with regularisation 0.01 (choix), centred to mean 0;
"normalised" is the min-max rescaling to [0, 1] of paper 003's Table 3. Bootstrap intervals
are 2.5/97.5 percentiles over refits on comparisons resampled with replacement.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.metrics import ranking
from analysis.metrics.agreement import compare_rankings
from analysis.metrics.common import age_band, item_answers
from analysis.metrics.frames import analysable, flag, participant_key, require, uses_study
from analysis.metrics.intervals import proportion

REQUIRED = ("participant_id", "interlocutor_1", "interlocutor_2", "winner")
DEFAULT_AGE_EDGES = (18, 31, 41, 51, 61, 71)


def valid_comparisons(comparisons: pd.DataFrame, participants: pd.DataFrame | None = None) -> pd.DataFrame:
    return comparisons[_counting(comparisons, participants) & _answered(comparisons)].reset_index(drop=True)


def _answered(comparisons: pd.DataFrame) -> np.ndarray:
    """Rows with a winner the ranking reads and both interlocutors named."""
    winner = comparisons["winner"].astype(str)
    return (
        winner.isin(list(ranking.WINNERS)).to_numpy()
        & comparisons["interlocutor_1"].notna().to_numpy()
        & comparisons["interlocutor_2"].notna().to_numpy()
    )


def _counting(comparisons: pd.DataFrame, participants: pd.DataFrame | None) -> np.ndarray:
    """The rows that count as answers (`valid`, or the rule where it is blank), whatever
    their winner."""
    require(comparisons, "comparisons", REQUIRED, "design D")
    said = comparisons["valid"].notna().to_numpy() if "valid" in comparisons.columns else None
    if said is not None and said.any():
        keep = flag(comparisons["valid"]).to_numpy(copy=True)
        # The export's `valid` was true of the participant then; an exclusion made since in
        # participants.csv (or in these rows) counts too, as it does in the exclusion flow.
        # Where neither says anything (no such columns), `valid` stands alone.
        try:
            keep &= analysable(comparisons, "comparisons", participants, unsaid_counts=True)
        except ValueError:
            pass
        if not said.all():
            # Rows with `valid` blank: an export without the column merged with one that has it
            # (blank counted as invalid had dropped that whole study); they get the rule.
            try:
                keep = np.where(said, keep, _by_the_rule(comparisons, participants))
            except ValueError:  # nothing to apply the rule to: a blank `valid` does not count
                pass
    else:
        keep = _by_the_rule(comparisons, participants)
    return keep


def _by_the_rule(comparisons: pd.DataFrame, participants: pd.DataFrame | None) -> np.ndarray:
    """Which answers count without an exported `valid`: a real instance, answered by a
    completed, non-excluded annotator."""
    keep = analysable(comparisons, "comparisons", participants)
    if "is_check" in comparisons.columns:
        keep &= ~flag(comparisons["is_check"]).to_numpy()
    return keep


def counted_comparisons(
    comparisons: pd.DataFrame, participants: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, list[str], dict]:
    """The comparisons a ranking counts, the interlocutors it ranks, and what was left out:
    `{"selves": n, "self_names": [...], "unranked": [...]}`. An interlocutor against itself
    says nothing of its strength and counted its own wins and losses (the win matrix's
    diagonal); one whose every comparison is left out (invalid, a check, an excluded
    annotator's) would be ranked by the regularisation alone: named, not ranked."""
    counting = _counting(comparisons, participants)  # once: it joins the participants
    df = comparisons[counting & _answered(comparisons)].reset_index(drop=True)
    itself = (df["interlocutor_1"].astype(str) == df["interlocutor_2"].astype(str)).to_numpy()
    selves = sorted(set(df.loc[itself, "interlocutor_1"].astype(str)))
    df = df[~itself].reset_index(drop=True)
    labels = interlocutors(df)
    unranked = sorted(set(interlocutors(comparisons)) - set(labels))
    # A row that counts but names no winner (blanked in a spreadsheet?): left out, and said; a
    # winner the export never writes is counted in the reading notes already.
    blank = int((counting & comparisons["winner"].isna().to_numpy()).sum())
    left = {"selves": int(itself.sum()), "self_names": selves, "unranked": unranked, "no_winner": blank}
    return df, labels, left


def left_out_warnings(left: dict) -> list[str]:
    """The warnings that say what `counted_comparisons` left out."""
    warnings = []
    if left.get("no_winner"):
        warnings.append(
            f"{left['no_winner']} comparison(s) that count have no winner (blank): left out, as unanswered."
        )
    if left["selves"]:
        warnings.append(
            f"{left['selves']} comparison(s) of an interlocutor against itself "
            f"({', '.join(left['self_names'])}) left out: a pair compares two interlocutors "
            "(the instance set paired two excerpts with the same Speaker A)."
        )
    if left["unranked"]:
        unranked = left["unranked"]
        warnings.append(
            f"Not ranked: {', '.join(unranked)}, in no comparison that counts (every one of "
            f"{'its' if len(unranked) == 1 else 'their'} comparisons is invalid, a check, or of an "
            "excluded or unfinished annotator)."
        )
    return warnings


def interlocutors(comparisons: pd.DataFrame) -> list[str]:
    """Every interlocutor of a real (non-check) instance, sorted."""
    rows = comparisons
    if "is_check" in rows.columns:
        rows = rows[~flag(rows["is_check"])]
    names = set(rows["interlocutor_1"].dropna().astype(str)) | set(
        rows["interlocutor_2"].dropna().astype(str)
    )
    return sorted(names)


def encode(df: pd.DataFrame, labels: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = {label: i for i, label in enumerate(labels)}
    first = df["interlocutor_1"].astype(str).map(index).to_numpy(dtype=int)
    second = df["interlocutor_2"].astype(str).map(index).to_numpy(dtype=int)
    codes = df["winner"].astype(str).map(ranking.WINNERS).to_numpy(dtype=int)
    return first, second, codes


def strengths_with_intervals(
    df: pd.DataFrame,
    labels: list[str],
    replicates: int,
    rng: np.random.Generator,
    alpha: float = ranking.ALPHA,
) -> dict:
    """Global win matrix, strengths, ranks and bootstrap intervals."""
    n = len(labels)
    first, second, codes = encode(df, labels)
    wins = ranking.win_matrix_codes(first, second, codes, n)
    point = ranking.fit_strengths(wins, alpha)
    rank = ranking.ranks(point)
    # Normalised on the strengths as the ranks read them (to 9 decimals): every answer a tie
    # left strengths of ±1e-16, which normalised to 0 and 1 while sharing one rank.
    level = np.round(point, 9) if n else point
    span = level.max() - level.min() if n else 0.0
    normalised = (level - level.min()) / span if span > 0 else np.zeros(n)
    boot = None
    if replicates >= 2 and len(df):
        boot = ranking.bootstrap_strengths(first, second, codes, n, replicates, rng, alpha, initial=point)
        boot_ranks = np.apply_along_axis(ranking.ranks, 1, boot)
    compared = np.bincount(first, minlength=n) + np.bincount(second, minlength=n)
    out = {}
    for i, label in enumerate(labels):
        won = float(wins[i].sum())
        entry = {
            # Never beaten or never beating anyone (ties count half): the likelihood has no
            # finite maximum, and the strength and its interval come from the regularisation.
            "estimable": bool(compared[i]) and 0 < won < compared[i],
            "strength": float(point[i]),
            "normalised": float(normalised[i]),
            "rank": float(rank[i]),
            "wins": won,
            "comparisons": int(compared[i]),
            "se": None,
            "lo": None,
            "hi": None,
            "rank_lo": None,
            "rank_hi": None,
        }
        if boot is not None:
            lo, hi = np.percentile(boot[:, i], [2.5, 97.5])
            rlo, rhi = np.percentile(boot_ranks[:, i], [2.5, 97.5])
            entry.update(
                se=float(boot[:, i].std(ddof=1)),
                lo=float(lo),
                hi=float(hi),
                rank_lo=float(rlo),
                rank_hi=float(rhi),
            )
        out[label] = entry
    order = sorted(labels, key=lambda name: (out[name]["rank"], name))
    return {
        "labels": labels,
        "wins": wins,
        "strengths": out,
        "ranking": order,
        "groups": compared_groups(labels, first, second),
    }


def compared_groups(labels: list[str], first: np.ndarray, second: np.ndarray) -> list[list[str]]:
    """The interlocutors in groups whose members were compared with each other, directly or
    through others (connected components of the comparisons): strengths, and so ranks, say
    nothing across two groups. Interlocutors never compared are left out."""
    parent = list(range(len(labels)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in zip(first.tolist(), second.tolist(), strict=True):
        parent[root(a)] = root(b)
    seen = set(first.tolist()) | set(second.tolist())
    groups: dict[int, list[str]] = {}
    for i in sorted(seen):
        groups.setdefault(root(i), []).append(labels[i])
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g))


def subgroup_values(
    df: pd.DataFrame,
    responses: pd.DataFrame | None,
    attributes: dict[str, str],
    age_attribute: str = "age",
    age_edges=DEFAULT_AGE_EDGES,
    skip=("Prefer not to say",),
) -> dict[str, pd.Series]:
    """For each attribute name -> response item key, each comparison's annotator value (age
    in bands). Missing answers and `skip` values are None."""
    if responses is None:
        return {}
    with_study = uses_study(df, responses)
    keys = participant_key(df, with_study)
    out = {}
    for attribute, key in attributes.items():
        answers = item_answers(responses, key, with_study)
        if answers.empty:
            continue
        if attribute == age_attribute:
            nums = keys.map(answers["value_num"]).to_numpy(dtype=float)
            if np.isnan(nums).all():
                nums = pd.to_numeric(keys.map(answers["value"]), errors="coerce").to_numpy(dtype=float)
            values = [age_band(v, list(age_edges)) for v in nums]
        else:
            values = [
                None if (v is None or v != v or str(v) in skip or str(v) == "") else str(v)
                for v in keys.map(answers["value"])
            ]
        out[attribute] = pd.Series(values, index=df.index, dtype=object)
    return out


def subgroup_rankings(
    df: pd.DataFrame,
    labels: list[str],
    global_ranking: dict[str, float],
    values: dict[str, pd.Series],
    references: dict[str, dict] | None = None,
    alpha: float = ranking.ALPHA,
) -> list[dict]:
    """Table 4: per subgroup, its own win matrix and BT ranking over all interlocutors, and the
    agreement of that ranking with the global one (and with each reference ranking)."""
    keys = participant_key(df, uses_study(df)).to_numpy()
    rows = []
    for attribute, series in values.items():
        for value in sorted(series.dropna().unique(), key=_value_order):
            mask = (series == value).to_numpy()
            sub = df[mask]
            first, second, codes = encode(sub, labels)
            strengths = ranking.fit_strengths(
                ranking.win_matrix_codes(first, second, codes, len(labels)), alpha
            )
            ranks = dict(zip(labels, ranking.ranks(strengths).tolist()))
            entry = {
                "attribute": attribute,
                "value": value,
                "annotators": int(len(set(keys[mask]))),
                "annotations": int(mask.sum()),
                "ranking": sorted(labels, key=lambda name: (ranks[name], name)),
                "vs_global": compare_rankings(ranks, global_ranking),
            }
            for name, reference in (references or {}).items():
                entry[f"vs_{name}"] = compare_rankings(ranks, reference)
            rows.append(entry)
    return rows


def _value_order(value: str):
    digits = "".join(ch for ch in value if ch.isdigit())
    return (0, int(digits[:2] or 0), value) if value[:1].isdigit() else (1, 0, value)


def reliability(df: pd.DataFrame) -> dict:
    """Nominal Krippendorff's alpha of the answers (winner) and of the confidence ratings, the
    units being instances and the coders annotators (paper 003 reports 0.188 and 0.04)."""
    import krippendorff

    unit_columns = [c for c in ("study", "instance_set", "instance") if c in df.columns]
    if "instance" not in unit_columns or df.empty:
        return {
            "winner_alpha_nominal": None,
            "confidence_alpha_nominal": None,
            "units": 0,
            "units_with_two_or_more": 0,
        }
    unit = df[unit_columns[0]].astype(str)
    for column in unit_columns[1:]:
        unit = unit + "\x1f" + df[column].astype(str)

    def alpha(values: pd.Series) -> float | None:
        data = pd.DataFrame({"unit": unit, "value": values.astype(object)}).dropna()
        if data.empty:
            return None
        counts = pd.crosstab(data["unit"], data["value"].astype(str))
        counts = counts[counts.sum(axis=1) >= 2]
        if len(counts) < 1 or counts.shape[1] < 2:
            return None
        value = krippendorff.alpha(value_counts=counts.to_numpy(), level_of_measurement="nominal")
        return float(value) if np.isfinite(value) else None

    confidence = df["confidence"] if "confidence" in df.columns else pd.Series(np.nan, index=df.index)
    per_unit = unit.value_counts()
    return {
        "winner_alpha_nominal": alpha(df["winner"].astype(str)),
        "confidence_alpha_nominal": alpha(
            confidence.astype("Float64").astype(object).where(confidence.notna(), None)
        ),
        "units": int(len(per_unit)),
        "units_with_two_or_more": int((per_unit >= 2).sum()),
    }


def checks(comparisons: pd.DataFrame) -> dict | None:
    """Attention-check items: how many were answered and passed."""
    if "is_check" not in comparisons.columns or "check_passed" not in comparisons.columns:
        return None
    rows = comparisons[flag(comparisons["is_check"])]
    passed = rows["check_passed"].astype("boolean").dropna()
    return {"items": int(len(rows)), "passed": proportion(int(passed.sum()), int(passed.size))}
