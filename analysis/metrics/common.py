"""What every design's analysis shares: exclusion flow, proportions, items, tables, JSON-safe results."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from analysis.metrics.frames import flag, has, participant_key, require, uses_study
from analysis.metrics.intervals import proportion

EXCLUSION_REASONS = ("attention", "recall", "wpm")
_REASON_SEPARATOR = re.compile(r"[;,]")


# --- exclusion flow ------------------------------------------------------------------------


def exclusion_flow(
    participants: pd.DataFrame | None,
    rows: pd.DataFrame | None = None,
    table: str = "",
    *,
    analysed: pd.DataFrame | None = None,
    optional: Sequence[str] = (),
) -> dict:
    """How many participants entered, were excluded for each reason, completed and are analysed.

    From the participants table (`status`, `excluded`, `exclusion_reasons`); without it, from a
    design table's `participant_status`, `excluded`, `exclusion_reasons` (one row per
    participant), which only knows the participants who reached that table. With both, the
    design table's rows count too (`rows`): a participant its rows say is excluded or did not
    complete is dropped as the figures drop them (`frames.analysable`: every source must say
    completed, none excluded).

    The reason counts ("failed_attention", ...) are excluded participants with that reason (a
    participant can have several; status failed_check counts as failed attention); a reason
    listed for a participant `excluded` says is not excluded counts for nothing, as in the
    figures, and is counted in `reasons_not_excluded`. "steps" is the sequential flow: each
    step drops those of the remaining participants with that reason, in the order attention,
    recall, reading speed, other exclusions, screened out (where any were), not completed,
    and, given the rows the figures use (`analysed`), those with none of them (a design table
    cut to a subset, a participant whose every comparison is invalid), so that the last
    remaining count is the analysed sample the figures use. Steps named in `optional` are left
    out where they drop nobody (a design without a recall check)."""
    design = rows if participants is not None else None
    if participants is not None:
        source, df, status_col = "participants", participants, "status"
    elif rows is not None:
        source, df, status_col = table, rows, "participant_status"
    else:
        raise ValueError("the exclusion flow needs the participants table")
    require(df, source, ["participant_id", status_col, "excluded"], "the exclusion flow")
    joined = [t for t in (design, analysed) if t is not None and "participant_id" in t.columns]
    with_study = uses_study(df, *joined) if joined else uses_study(df)
    df = df.assign(_key=participant_key(df, with_study)).drop_duplicates("_key")
    keys = df["_key"]
    status = df[status_col].astype(str).where(df[status_col].notna(), "")
    excluded = flag(df["excluded"]).to_numpy()
    completed = (status == "completed").to_numpy()
    if design is not None and "participant_id" in design.columns and len(design):
        theirs = participant_key(design, with_study)
        if "excluded" in design.columns:
            said = set(theirs[flag(design["excluded"]).to_numpy()])
            excluded = excluded | keys.isin(said).to_numpy()
        if "participant_status" in design.columns:
            row_status = design["participant_status"]
            unfinished = row_status.notna().to_numpy() & (row_status.astype(str) != "completed").to_numpy()
            completed = completed & ~keys.isin(set(theirs[unfinished])).to_numpy()
    if "exclusion_reasons" in df.columns:
        # As exported ("recall;wpm"), or edited by hand: "Recall; WPM", "attention, recall".
        reasons = [
            {part.strip().lower() for part in _REASON_SEPARATOR.split(r)} - {""}
            if isinstance(r, str)
            else set()
            for r in df["exclusion_reasons"]
        ]
    else:
        reasons = [set() for _ in range(len(df))]
    listed = np.array([bool(r) for r in reasons], dtype=bool)
    attention = excluded & np.array([("attention" in r) for r in reasons], dtype=bool)
    attention |= (status == "failed_check").to_numpy()
    recall = excluded & np.array([("recall" in r) for r in reasons], dtype=bool)
    wpm = excluded & np.array([("wpm" in r) for r in reasons], dtype=bool)
    listed_other = excluded & np.array([bool(r - set(EXCLUSION_REASONS)) for r in reasons], dtype=bool)
    other = listed_other | (excluded & ~(attention | recall | wpm))
    screened = (status == "screened_out").to_numpy()  # a stage of its own (paper 001's flow)
    in_figures = np.ones(len(df), dtype=bool)
    if analysed is not None:
        in_figures = keys.isin(set(participant_key(analysed, with_study))).to_numpy()

    steps = [{"step": "entered", "dropped": None, "remaining": int(len(df))}]
    remaining = np.ones(len(df), dtype=bool)
    for name, mask in [
        ("failed_attention", attention),
        ("failed_recall", recall),
        ("wpm_at_or_above_cap", wpm),
        ("other_exclusions", other),
        ("screened_out", screened),
        ("not_completed", ~completed),
        ("no_analysed_rows", ~in_figures),
    ]:
        dropped = remaining & mask
        remaining = remaining & ~mask
        if (name in optional or name in ("screened_out", "no_analysed_rows")) and not dropped.any():
            continue
        steps.append({"step": name, "dropped": int(dropped.sum()), "remaining": int(remaining.sum())})
    steps.append({"step": "analysed", "dropped": None, "remaining": int(remaining.sum())})
    by_status = status.replace("", "(empty)").value_counts()
    return {
        "source": source,
        "entered": int(len(df)),
        "failed_attention": int(attention.sum()),
        "failed_recall": int(recall.sum()),
        "wpm_at_or_above_cap": int(wpm.sum()),
        "other_exclusions": int(other.sum()),
        "reasons_not_excluded": int((listed & ~excluded).sum()),
        "completed": int(completed.sum()),
        "analysed": int(remaining.sum()),  # what every step left
        "by_status": {str(k): int(v) for k, v in sorted(by_status.items())},
        "steps": steps,
    }


STEP_TITLES = {
    "entered": "Entered the study",
    "failed_attention": "Dropped: failed attention checks",
    "failed_recall": "Dropped: failed recall check",
    "wpm_at_or_above_cap": "Dropped: reading speed at or above the cap",
    "other_exclusions": "Dropped: other exclusions",
    "screened_out": "Dropped: screened out",
    "not_completed": "Dropped: did not complete",
    "no_analysed_rows": "Dropped: no row the figures use",
    "analysed": "Analysed",
}


def exclusion_table(flow: dict, key: str = "exclusion_flow", title: str = "Sample flow") -> dict:
    rows = [[STEP_TITLES.get(s["step"], s["step"]), s["dropped"], s["remaining"]] for s in flow["steps"]]
    note = (
        f"Sequential: each step drops remaining participants with that reason. Participants with each "
        f"reason (not exclusive): attention {flow['failed_attention']}, recall {flow['failed_recall']}, "
        f"reading speed {flow['wpm_at_or_above_cap']}, other {flow['other_exclusions']}; completed "
        f"{flow['completed']}. Source: {flow['source']} table."
    )
    if flow.get("reasons_not_excluded"):
        note += (
            f" {flow['reasons_not_excluded']} participant(s) list an exclusion reason with excluded = 0: "
            "not excluded, here as in the figures."
        )
    return make_table(key, title, ["Step", "Dropped", "Remaining"], rows, note)


# --- proportions by condition and subgroup ---------------------------------------------------


def proportions_by(
    df: pd.DataFrame, outcome: str, by: Sequence[str], order: dict[str, Sequence[str]] | None = None
) -> list[dict]:
    """Proportion of True in column `outcome` (missing values left out) for each combination
    of the `by` columns, with 95% Wilson intervals: dicts {by..., k, n, p, lo, hi}.
    `order` optionally fixes the order of a column's values (others follow, sorted)."""
    data = df[list(by) + [outcome]].dropna(subset=[outcome])
    if data.empty:
        return []
    y = data[outcome].astype(bool)
    keys = [data[c].astype(str).where(data[c].notna(), "") for c in by]
    grouped = y.groupby(keys, sort=False)
    stats = {
        (name if isinstance(name, tuple) else (name,)): (int(g.sum()), int(g.size)) for name, g in grouped
    }
    out = []
    for name in sorted(stats, key=lambda key: _sort_key(key, by, order or {})):
        k, n = stats[name]
        out.append({**dict(zip(by, name)), **proportion(k, n)})
    return out


def _sort_key(key: tuple, by: Sequence[str], order: dict[str, Sequence[str]]) -> tuple:
    parts = []
    for column, value in zip(by, key):
        fixed = list(order.get(column, []))
        parts.append((fixed.index(value) if value in fixed else len(fixed), _natural(value)))
    return tuple(parts)


def _natural(value: str) -> tuple:
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


# --- questionnaire items ---------------------------------------------------------------------


def item_answers(responses: pd.DataFrame, key: str, with_study: bool) -> pd.DataFrame:
    """Each participant's answer to item `key` (the first one, by step position): a frame
    indexed by participant key with columns `value` and `value_num`."""
    require(responses, "responses", ["participant_id", "key"], f"item {key!r}")
    rows = responses[responses["key"].astype(str) == key]
    if rows.empty:
        return pd.DataFrame(columns=["value", "value_num"])
    rows = rows.assign(_key=participant_key(rows, with_study))
    if "position" in rows.columns:
        rows = rows.sort_values(["_key", "position"], kind="stable")
    rows = rows.drop_duplicates("_key")
    value = rows["value"] if "value" in rows.columns else pd.Series(None, index=rows.index, dtype="str")
    num = rows["value_num"] if "value_num" in rows.columns else pd.Series(np.nan, index=rows.index)
    return pd.DataFrame(
        {"value": value.to_numpy(), "value_num": num.to_numpy(dtype=float)}, index=rows["_key"]
    )


def first_likert_key(
    responses: pd.DataFrame | None, prefix: str, item_order: Sequence[str] = ()
) -> tuple[str | None, list[str]]:
    """The first item whose key starts with `prefix` and whose answers look like a Likert scale
    (option text coded 1..k in value_num; a slider or a number item stores the number itself as
    its text): by step position, then by `item_order` (the study's items as its pages show
    them), then by the rows' order, which a sorted or merged file does not keep.

    (key or None, keys): keys lists the Likert items of the chosen item's page when the rows'
    order had to decide between them (empty otherwise)."""
    chosen, among = None, []
    if has(responses, "key", "value_num"):
        rows = responses[responses["key"].astype(str).str.startswith(prefix)]
        rank = {key: i for i, key in enumerate(item_order)}
        candidates = []
        for seen, key in enumerate(dict.fromkeys(rows["key"].astype(str))):
            answers = rows[rows["key"].astype(str) == key]
            if not _likert(answers):
                continue
            position = (
                pd.to_numeric(answers["position"], errors="coerce").min() if "position" in answers else 0
            )
            position = 0 if pd.isna(position) else float(position)
            candidates.append((position, rank.get(key, len(rank)), seen, key))
        if candidates:
            candidates.sort()
            first = candidates[0]
            tied = [c[3] for c in candidates if c[:2] == first[:2]]
            chosen, among = first[3], (tied if len(tied) > 1 else [])
    return chosen, among


def _likert(answers: pd.DataFrame) -> bool:
    nums = pd.to_numeric(answers["value_num"], errors="coerce").dropna()
    if nums.empty or not ((nums == np.floor(nums)) & (nums >= 1)).all():
        return False
    texts = answers["value"].dropna().astype(str) if "value" in answers.columns else pd.Series([], dtype=str)
    numeric_text = pd.to_numeric(texts, errors="coerce").notna()
    return bool(len(texts)) and numeric_text.mean() < 0.5


def age_band(age: float | None, edges: Sequence[float]) -> str | None:
    """Label of the band [edges[i], edges[i+1]) holding `age`, e.g. "18–30"; the last band is
    open ("71+"). None below the first edge or when missing."""
    if age is None or (isinstance(age, float) and math.isnan(age)) or age < edges[0]:
        return None
    for low, high in zip(edges[:-1], edges[1:]):
        if low <= age < high:
            return f"{_num(low)}–{_num(high - 1)}"
    return f"{_num(edges[-1])}+"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# --- results ---------------------------------------------------------------------------------


def make_table(key: str, title: str, columns: list[str], rows: Iterable[Sequence], note: str = "") -> dict:
    return {
        "key": key,
        "title": title,
        "columns": list(columns),
        "rows": [list(r) for r in rows],
        "note": note,
    }


def pct(p: float | None, digits: int = 1) -> float | None:
    return None if p is None else round(100 * p, digits)


def rnd(x: float | None, digits: int = 3) -> float | None:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return round(float(x), digits)


def sig(x: float | None, digits: int = 3) -> float | None:
    """x to `digits` significant digits (p-values)."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return float(f"{float(x):.{digits}g}")


def clean(obj, digits: int = 6):
    """A JSON-safe copy: numpy scalars and arrays to Python, floats to `digits` significant
    digits, NaN and infinities to None, tuples to lists, mapping keys to strings."""
    if isinstance(obj, dict):
        return {str(k): clean(v, digits) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean(v, digits) for v in obj]
    if isinstance(obj, np.ndarray):
        return [clean(v, digits) for v in obj.tolist()]
    if obj is None or obj is pd.NA or obj is pd.NaT:
        return None
    if isinstance(obj, bool | np.bool_):
        return bool(obj)
    if isinstance(obj, int | np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        x = float(obj)
        if not math.isfinite(x):
            return None
        if x == 0:
            return 0.0
        x = float(f"{x:.{digits}g}")
        return 0.0 if x == 0 else x
    if isinstance(obj, str):
        return obj
    return str(obj)
