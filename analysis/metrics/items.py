"""The study's own items (questionnaire, screening and attention-check items), summarised over
the participants the figures use: what the researcher asked beside the design's measures. The
report showed none of them (the researcher walk: "my questionnaire items do not appear").

    summarise(responses, analysed, item_kinds=None, item_order=()) -> [item] | None

An item is {key, kind, step_kind, participants, answered, and by kind:
    check   passed: {k, n, p}
    coded   counts [{value, coded, k, p}] in the order of their coding, mean, sd (Likert)
    choice  counts [{value, k, p}], most chosen first (single choice)
    number  mean, sd, median, min, max (number, slider)
    text    nothing more: free text is read in responses.csv, never shown in the report}.

`analysed` is the design table's rows the figures use: its participants are the item's
denominator, so an item's N is the figures' N less those who did not answer it. `item_kinds`
(key -> the question's kind, from study.json) says what each item is; without it (CSV files
from elsewhere) the kind is read off the answers: numbers with a coding of words are coded,
plain numbers are numbers, a dozen different short answers or fewer, each given twice on
average, are choices; typing counted by the browser, or anything else, is free text (so it is
never listed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.metrics.frames import participant_key, uses_study

# The step kinds whose answers are the researcher's own items (a main study's answers carried
# over from its screening study keep their step kind, at position 0).
ITEM_STEPS = frozenset({"questionnaire", "attention_check", "screening", "carried_over"})
KINDS = {"likert": "coded", "single_choice": "choice", "number": "number", "slider": "number", "text": "text"}
MOST_CHOICES = 12  # more different answers than this, read off the answers: free text
LONGEST_CHOICE = 60  # characters, on average


def summarise(
    responses: pd.DataFrame | None,
    analysed: pd.DataFrame | None,
    item_kinds: Mapping[str, str] | None = None,
    item_order: Sequence[str] = (),
) -> list[dict] | None:
    if responses is None or analysed is None or "participant_id" not in analysed.columns:
        return None
    need = {"participant_id", "key", "value", "step_kind"}
    if not need <= set(responses.columns):
        return None
    with_study = uses_study(analysed, responses)
    who = set(participant_key(analysed, with_study))
    rows = responses[
        participant_key(responses, with_study).isin(who)
        & responses["step_kind"].astype("string").isin(ITEM_STEPS).fillna(False).to_numpy(dtype=bool)
        & ~responses["key"].astype("string").str.endswith("_specify").fillna(False).to_numpy(dtype=bool)
    ].copy()
    if rows.empty:
        return []
    rows["_who"] = participant_key(rows, with_study)
    rows["_text"] = rows["value"].astype("string").str.strip().fillna("")
    rows = rows[rows["_text"] != ""]
    if "created_at" in rows.columns:
        rows = rows.sort_values("created_at", kind="stable")
    rows = rows.drop_duplicates(["_who", "key"], keep="last")  # an answer changed: the last one
    order = {key: n for n, key in enumerate(item_order)}
    first = rows.groupby("key", sort=False)["position"].min() if "position" in rows else None

    def place(key: str) -> tuple:
        return (order.get(key, len(order)), first[key] if first is not None else 0, key)

    kinds = dict(item_kinds or {})
    items = []
    for key in sorted(rows["key"].astype(str).unique(), key=place):
        answers = rows[rows["key"].astype(str) == key]
        items.append(_item(key, answers, kinds.get(key), len(who)))
    return items


def _item(key: str, answers: pd.DataFrame, declared: str | None, participants: int) -> dict:
    step_kinds = answers["step_kind"].astype(str)
    item = {
        "key": key,
        "step_kind": step_kinds.mode().iloc[0],
        "participants": participants,
        "answered": int(len(answers)),
    }
    checks = _flags(answers, "is_check")
    if checks.any():
        passed = _flags(answers, "passed")[checks]
        return {**item, "kind": "check", "passed": _share(int(passed.sum()), int(checks.sum()))}
    numbers = pd.to_numeric(answers.get("value_num"), errors="coerce") if "value_num" in answers else None
    kind = KINDS.get(declared or "") or _kind_of(answers, numbers)
    if kind in ("coded", "number") and (numbers is None or numbers.isna().all()):
        kind = "choice"  # no coding exported: counted as choices
    if kind == "number":
        values = numbers.dropna().to_numpy(dtype=float)
        return {
            **item,
            "kind": kind,
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if len(values) > 1 else None,
            "median": float(np.median(values)),
            "min": float(values.min()),
            "max": float(values.max()),
        }
    if kind == "text":
        return {**item, "kind": kind}
    table = answers.assign(_coded=numbers).groupby("_text", sort=False)
    counts = [
        {
            "value": value,
            **({"coded": _plain(group["_coded"].iloc[0])} if kind == "coded" else {}),
            "k": len(group),
        }
        for value, group in table
    ]
    if kind == "coded":
        counts.sort(key=lambda c: (c["coded"] is None, c["coded"] or 0))
    else:
        counts.sort(key=lambda c: (-c["k"], c["value"]))
    total = int(len(answers))
    for count in counts:
        count["p"] = count["k"] / total
    out = {**item, "kind": kind, "counts": counts}
    if kind == "coded":
        coded = numbers.dropna().to_numpy(dtype=float)
        out["mean"] = float(coded.mean()) if len(coded) else None
        out["sd"] = float(coded.std(ddof=1)) if len(coded) > 1 else None
    return out


def _kind_of(answers: pd.DataFrame, numbers: pd.Series | None) -> str:
    """The kind read off the answers, erring on the side of free text (never listed): typing
    counted by the browser is free text; answers without a coding are choices only when few,
    short and repeated (every answer different may be free text, as in a pilot of two)."""
    text = answers["_text"]
    if numbers is not None and numbers.notna().all():
        as_written = pd.to_numeric(text, errors="coerce")
        return "number" if as_written.notna().all() else "coded"
    typed = [c for c in ("text_keys", "text_typing_ms") if c in answers.columns]
    if any(pd.to_numeric(answers[c], errors="coerce").notna().any() for c in typed):
        return "text"
    distinct = text.nunique()
    if distinct <= min(MOST_CHOICES, len(text) // 2) and text.str.len().mean() <= LONGEST_CHOICE:
        return "choice"
    return "text"


def _flags(answers: pd.DataFrame, column: str) -> np.ndarray:
    if column not in answers.columns:
        return np.zeros(len(answers), dtype=bool)
    values = answers[column]
    if values.dtype == object or str(values.dtype) == "string":
        values = values.astype("string").str.strip().isin(["1", "true", "True", "yes"])
    return values.astype("boolean").fillna(False).to_numpy(dtype=bool)


def _share(k: int, n: int) -> dict:
    return {"k": k, "n": n, "p": k / n if n else None}


def _plain(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def summary_text(item: dict) -> str:
    """One cell of the report's table: what the answers were, in words."""
    kind = item["kind"]
    if kind == "check":
        passed = item["passed"]
        return f"attention check: passed by {passed['k']} of {passed['n']} ({100 * passed['p']:.1f}%)"
    if kind == "text":
        return "free text (read the answers in responses.csv)"
    if kind == "number":
        sd = "" if item["sd"] is None else f", SD {_num(item['sd'])}"
        return (
            f"mean {_num(item['mean'])}{sd}, median {_num(item['median'])}, "
            f"from {_num(item['min'])} to {_num(item['max'])}"
        )
    parts = [
        f"{c['value']}{' (' + _num(c['coded']) + ')' if c.get('coded') is not None else ''}: "
        f"{c['k']} ({100 * c['p']:.1f}%)"
        for c in item["counts"]
    ]
    text = "; ".join(parts)
    if kind == "coded" and item.get("mean") is not None:
        sd = "" if item["sd"] is None else f", SD {_num(item['sd'])}"
        text += f". Mean of the coding {_num(item['mean'])}{sd}"
    return text


def _num(x: float) -> str:
    return f"{x:.0f}" if float(x).is_integer() else f"{x:.2f}"
