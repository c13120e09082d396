"""The study's own items (questionnaire, screening and attention-check items), summarised over
the participants the figures use: what the researcher asked beside the design's measures. The
report showed none of them (the researcher walk: "my questionnaire items do not appear").

    summarise(responses, analysed, item_kinds=None, item_order=()) -> [item] | None

An item is {key, kind, step_kind, participants, answered, and by kind:
    check   passed: {k, n, p}, over everyone who answered it (see below)
    coded   counts [{value, coded, k, p}] in the order of their coding, mean, sd (Likert)
    choice  counts [{value, k, p}], most chosen first (single choice)
    number  mean, sd, median, min, max (number, slider)
    text    nothing more: free text is read in responses.csv, never shown in the report}.

`analysed` is the design table's rows the figures use: its participants are an item's
denominator, so an item's N is the figures' N less those who did not answer it. Checks (every
item with an expected answer, in any step: the pairwise step's too) are the exception: they
count everyone who answered them, excluded participants included, since a failed check
excludes and among the analysed the pass rate would be 100 % by construction.

`item_kinds` (key -> the question's kind, from study.json) says what each item is; without it
(CSV files from elsewhere, or answers carried over from a screening study) the kind is read off
the answers: numbers with a coding of words are coded, plain numbers are numbers, a dozen
different short answers or fewer, each given twice on average, are choices; typing counted by
the browser, or anything else, is free text. A choice read off the answers lists only answers
at least FEW_LISTED participants gave, the rest as "other answers": free text that repeats
("no" eight times) must not print the one answer that names its writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from analysis.metrics.frames import flag, participant_key, uses_study

# The step kinds whose answers are the researcher's own items (a main study's answers carried
# over from its screening study keep their step kind, at position 0).
ITEM_STEPS = frozenset({"questionnaire", "attention_check", "screening", "carried_over"})
KINDS = {"likert": "coded", "single_choice": "choice", "number": "number", "slider": "number", "text": "text"}
MOST_CHOICES = 12  # more different answers than this, read off the answers: free text
FEW_LISTED = 3  # a choice read off the answers lists an answer only when this many gave it
OTHER_ANSWERS = "other answers"
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
    rows = responses.copy()
    rows["_who"] = participant_key(rows, with_study)
    rows["_key"] = rows["key"].astype("string").str.strip().fillna("")
    rows["_text"] = rows["value"].astype("string").str.strip().fillna("")
    rows["_check"] = _flags(rows, "is_check")
    if with_study:  # the analysed studies' rows only (a folder may hold other studies' too)
        studies = set(analysed["study"].astype("string").dropna())
        rows = rows[rows["study"].astype("string").isin(studies).fillna(False).to_numpy(dtype=bool)]
    ours = rows["step_kind"].astype("string").isin(ITEM_STEPS).fillna(False).to_numpy(dtype=bool)
    rows = rows[
        (ours | rows["_check"].to_numpy(dtype=bool))
        & (rows["_key"] != "").to_numpy(dtype=bool)
        & ~rows["_key"].str.endswith("_specify").fillna(False).to_numpy(dtype=bool)
        & (rows["_text"] != "").to_numpy(dtype=bool)
    ]
    # Checks over everyone who answered them: among the analysed only, those who failed are
    # gone (a failed check excludes), and the rate read 100 % by construction (the review).
    rows = rows[rows["_check"].to_numpy(dtype=bool) | rows["_who"].isin(who).to_numpy(dtype=bool)]
    if rows.empty:
        return []
    if "created_at" in rows.columns:
        when = pd.to_datetime(rows["created_at"], errors="coerce", utc=True)
        rows = rows.iloc[np.argsort(when.to_numpy(dtype="datetime64[ns]"), kind="stable")]
    rows = rows.drop_duplicates(["_who", "_key"], keep="last")  # an answer changed: the last one
    order = {key: n for n, key in enumerate(item_order)}
    positions = pd.to_numeric(rows["position"], errors="coerce").astype(float) if "position" in rows else None
    first = (
        positions.groupby(rows["_key"]).min().fillna(np.inf)
        if positions is not None
        else pd.Series(dtype=float)
    )

    def place(key: str) -> tuple:
        return (order.get(key, len(order)), float(first.get(key, np.inf)), key)

    kinds = dict(item_kinds or {})
    items = []
    for key in sorted(rows["_key"].unique(), key=place):
        answers = rows[rows["_key"] == key]
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
    checks = answers["_check"].to_numpy(dtype=bool)
    if checks.any():
        passed = _flags(answers, "passed")[checks]
        n = int(checks.sum())
        return {
            **item,
            "kind": "check",
            "participants": n,
            "answered": n,
            "passed": _share(int(passed.sum()), n),
        }
    numbers = pd.to_numeric(answers.get("value_num"), errors="coerce") if "value_num" in answers else None
    kind = KINDS.get(declared or "") or _kind_of(answers, numbers)
    guessed = declared not in KINDS
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
    if kind == "choice" and guessed:
        # A choice read off the answers may be free text that repeats ("no" eight times, and
        # one answer naming its writer): an answer fewer than FEW_LISTED gave is not printed.
        rare = [c for c in counts if c["k"] < FEW_LISTED]
        counts = [c for c in counts if c["k"] >= FEW_LISTED]
        if rare:
            counts.append({"value": OTHER_ANSWERS, "k": sum(c["k"] for c in rare), "other": True})
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
    """A flag column of the typed responses as booleans (missing: False), all False without it."""
    if column not in answers.columns:
        return np.zeros(len(answers), dtype=bool)
    return flag(answers[column]).to_numpy(dtype=bool)


def _share(k: int, n: int) -> dict:
    return {"k": k, "n": n, "p": k / n if n else None}


def _plain(value) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def summary_text(item: dict) -> str:
    """One cell of the report's table: what the answers were, in words."""
    kind = item["kind"]
    if kind == "check":
        passed = item["passed"]
        return (
            f"check: passed by {passed['k']} of the {passed['n']} who answered it, excluded "
            f"participants included ({100 * passed['p']:.1f}%)"
        )
    if kind == "text":
        return "free text (read the answers in responses.csv)"
    if kind == "number":
        sd = "" if item["sd"] is None else f", SD {_num(item['sd'])}"
        return (
            f"mean {_num(item['mean'])}{sd}, median {_num(item['median'])}, "
            f"from {_num(item['min'])} to {_num(item['max'])}"
        )
    parts = [
        f"{'(' + c['value'] + ')' if c.get('other') else c['value']}"
        f"{' (' + _num(c['coded']) + ')' if c.get('coded') is not None else ''}: "
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
