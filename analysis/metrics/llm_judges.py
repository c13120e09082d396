"""LLM participants in design A (paper 000, Tables 30-34): pure functions over the export
table `llm_judgements` (one row per dialogue judged by one model).

Definitions:
- One answer per (study, dialogue, judge): when several jobs judged the same dialogue with
  the same judge label, the last one by `finished_at` counts (two different answers at one
  time, or times that could not be read, are refused: `frames.last_answers`). An answer is
  correct when its side is the culprit's (`chosen_side`, `culprit_side`; `correct` where
  they are blank). A dialogue is a baseline by its condition; a biased one's active side is
  `active_side_letter`, else `signed_active_side`, else `active_side` with `culprit_side`.
- Table 31: one row per dialogue, ordered by case, the baseline first, then by bias (the
  paper's order), the bias on side A ("Active vs. Baseline") before on side B, then by
  variant; each judge's chosen side; accuracy k/n = judges choosing the culprit's side out of
  the judges that answered.
- Shift: on a biased dialogue, a judge's decision shifts when its correctness differs from
  its answer on the same case's baseline dialogue (correctness, not letters: a dialogue may
  put the culprit on the other side than its baseline). A shift is toward the bias when the
  judge now chooses the biased side. The accuracy change of a dialogue is its k/n minus the
  baseline's, over the judges that answered both.
- Accuracy per judge and per condition (baseline; each bias with the culprit's or the
  rival's side active): proportions of correct answers with 95% Wilson intervals.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.metrics.common import make_table, pct
from analysis.metrics.frames import (
    flag_as_told,
    last_answers,
    named_rows,
    read_csv,
    require,
    same_in_each,
    same_where_told,
    typed_by,
)
from analysis.metrics.intervals import proportion

TABLE = "llm_judgements"
SCHEMAS: dict[str, dict[str, str]] = {
    TABLE: {
        "study": "str",
        "study_sha256": "str",
        "job": "str",
        "item": "str",
        "dialogue": "str",
        "case": "str",
        "condition": "str",
        "active_side": "code",
        "variant": "str",
        "side_a": "code",
        "culprit_side": "code",
        "active_side_letter": "code",
        "signed_active_side": "int",
        "judge": "str",
        "model": "str",
        "temperature": "float",
        "template_version": "int",
        "chosen_side": "code",
        "chose_a": "flag",
        "correct": "flag",
        "followed_bias": "flag",
        "confidence": "int",
        "reasoning": "str",
        "cost_usd": "float",
        "finished_at": "datetime",
    }
}
TABLES = tuple(SCHEMAS)
REQUIRED = ("dialogue", "case", "condition", "judge", "chosen_side", "correct", "active_side_letter")
BIAS_ORDER = ("baseline", "anchoring", "fallacy_oversight", "pro_jargon", "verbosity")
BIAS_TITLES = {
    "anchoring": "Anchoring bias",
    "fallacy_oversight": "Fallacy oversight",
    "pro_jargon": "Pro-jargon",
    "verbosity": "Verbosity",
}
CONDITIONS = {"": "Baseline vs. Baseline", "A": "Active vs. Baseline", "B": "Baseline vs. Active"}
ROLES = {"none": "—", "culprit": "Culprit's side", "rival": "Rival's side"}


def typed(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with the known columns converted (as frames.typed; idempotent)."""
    return typed_by(SCHEMAS, table, df, "LLM participants' tables")


def read_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """`llm_judgements.csv` from `folder`, typed, if it is there."""
    path = Path(folder) / f"{TABLE}.csv"
    if not path.is_file():
        return {}
    raw = read_csv(path)
    return {TABLE: typed(TABLE, raw)}


# --- the answers that count --------------------------------------------------------------------


def _text(df: pd.DataFrame, column: str) -> pd.Series:
    if column not in df.columns:
        return pd.Series("", index=df.index, dtype=object)
    return df[column].astype(object).where(df[column].notna(), "").astype(str)


def answers(df: pd.DataFrame | None, notes: list[str] | None = None) -> pd.DataFrame:
    """One row per (study, dialogue, judge) with a choice (see the module docstring), with plain
    text columns and a boolean `correct`; empty when there is nothing. Whether a choice is
    right is read from `chosen_side` and `culprit_side` where both are there (`correct` is
    derived from them in the export; a blank or edited `correct` had dropped or miscounted the
    answer), else from `correct`. A biased dialogue's active side, when its letter is blank, is
    taken from `signed_active_side` or `active_side`; what cannot be told is left out and said
    in `notes`, rather than read as a baseline."""
    notes = [] if notes is None else notes
    if df is None or df.empty:
        return pd.DataFrame(columns=[*REQUIRED, "study", "variant", "side_a"])
    require(df, TABLE, REQUIRED, "the LLM participants")
    out = typed(TABLE, df)  # raw text as exported, or typed already
    for column in (
        "study",
        "dialogue",
        "case",
        "condition",
        "judge",
        "chosen_side",
        "culprit_side",
        "active_side_letter",
        "active_side",
        "variant",
        "side_a",
        "model",
    ):
        out[column] = _text(out, column)
    out["condition"] = out["condition"].str.strip().str.lower()  # bias codes: "Baseline" is the baseline
    out = named_rows(out, TABLE, ("dialogue", "judge", "condition"), notes, "dialogue, judge or condition")
    unanswered = out["chosen_side"] == ""
    if unanswered.any():  # failed calls (their `error` says why), or a cell emptied by hand
        notes.append(
            f"{TABLE}.csv: {int(unanswered.sum())} row(s) without a chosen side (no answer) left out."
        )
    out = out[~unanswered].copy()
    out["correct"] = _correct(out, notes)
    out = out[out["correct"].notna()].copy()
    out["active_side_letter"] = _active_letters(out, notes)
    out = out[out["active_side_letter"].notna()].copy()
    out["correct"] = out["correct"].astype(bool)
    _one_dialogue(out)
    return last_answers(out, ["study", "dialogue", "judge"], TABLE, ["chosen_side", "correct"], notes)


# What a dialogue is, repeated in each of its rows: never blank in the export (a blank cell
# takes the dialogue's other rows' value), or blank on some dialogues (a baseline's variant
# and active side: a blank is a value there).
_DIALOGUE_COLUMNS = {
    "case": True,
    "condition": True,
    "side_a": True,
    "active_side_letter": False,
    "variant": False,
}


def _one_dialogue(out: pd.DataFrame) -> None:
    """Every judge's row of a dialogue repeats what the dialogue is: rows that disagree were
    edited (a ValueError; Table 31 took its first row's); a cell left blank where the export
    always writes one takes the value the dialogue's other rows give (a blank side_a had shown
    " vs. culprit")."""
    given = out[["study", "dialogue", *_DIALOGUE_COLUMNS]].copy()
    for column, never_blank in _DIALOGUE_COLUMNS.items():
        if never_blank:
            given[column] = given[column].where(given[column] != "")
    same_in_each(given, TABLE, "dialogue", "dialogue", _DIALOGUE_COLUMNS)
    for column, never_blank in _DIALOGUE_COLUMNS.items():
        if never_blank:
            out[column] = given.groupby(["study", "dialogue"])[column].transform("first").fillna("")


def _correct(out: pd.DataFrame, notes: list[str]) -> pd.Series:
    derived = same_where_told(out["chosen_side"], out["culprit_side"], "AB")
    correct, clashes = flag_as_told(derived, out["correct"].astype("boolean"))
    if clashes:
        notes.append(
            f"{TABLE}.csv: {clashes} answer(s) whose `correct` disagrees with chosen_side and "
            "culprit_side: counted by the sides."
        )
    return correct


def _active_letters(out: pd.DataFrame, notes: list[str]) -> pd.Series:
    """The biased side's letter of each row ("" on a baseline dialogue); None where a biased
    dialogue's row tells it nowhere."""
    letters = out["active_side_letter"].astype(object)
    baseline = out["condition"] == "baseline"
    letters = letters.where(~baseline, "")
    blank = ~baseline & ~letters.isin(["A", "B"])
    if blank.any() and "signed_active_side" in out.columns:
        signed = out["signed_active_side"].map({1: "A", -1: "B"})
        letters = letters.where(~blank | signed.isna(), signed)
        blank = ~baseline & ~letters.isin(["A", "B"])
    if blank.any():
        other = {"A": "B", "B": "A"}
        role = out["active_side"]
        by_role = [
            culprit if r == "culprit" else other.get(culprit) if r == "rival" else None
            for r, culprit in zip(role, out["culprit_side"])
        ]
        letters = letters.where(~blank, pd.Series(by_role, index=out.index, dtype=object))
        blank = ~baseline & ~letters.isin(["A", "B"])
    if blank.any():
        notes.append(
            f"{TABLE}.csv: {int(blank.sum())} answer(s) to a biased dialogue whose active side no column "
            "tells (active_side_letter, signed_active_side, active_side with culprit_side) left out."
        )
    return letters.where(~blank, None)


def judges(df: pd.DataFrame) -> list[str]:
    """The judge labels in the order they first appear (the job's configuration order)."""
    return list(dict.fromkeys(df["judge"]))


def _dialogue_order(first: pd.Series) -> tuple:
    condition = first["condition"]
    rank = BIAS_ORDER.index(condition) if condition in BIAS_ORDER else len(BIAS_ORDER)
    return (
        first["study"],
        first["case"],
        rank,
        condition,
        first["active_side_letter"],
        first["variant"],
        first["dialogue"],
    )


# --- Table 31 ----------------------------------------------------------------------------------


def table_31(df: pd.DataFrame) -> list[dict]:
    """Table 31's rows from `answers(...)`: {study, dialogue, case, condition, active_side_letter,
    variant, side_a, sides {judge: side}, k, n, baseline_k, baseline_n, compared [judges
    that answered both], shifted [judges], toward_bias [judges], accuracy_change} (the
    baseline fields are None on a baseline dialogue or without a baseline)."""
    labels = judges(df)
    groups = {key: g for key, g in df.groupby(["study", "dialogue"], sort=False)}
    baselines = {
        (study, g.iloc[0]["case"]): g.set_index("judge")["correct"]
        for (study, _), g in groups.items()
        if g.iloc[0]["condition"] == "baseline"
    }
    rows = []
    for (study, dialogue), g in sorted(groups.items(), key=lambda kv: _dialogue_order(kv[1].iloc[0])):
        first = g.iloc[0]
        correct = g.set_index("judge")["correct"]
        row = {
            "study": study,
            "dialogue": dialogue,
            "case": first["case"],
            "condition": first["condition"],
            "active_side_letter": first["active_side_letter"],
            "variant": first["variant"],
            "side_a": first["side_a"],
            "sides": {label: side for label, side in zip(g["judge"], g["chosen_side"])},
            "k": int(correct.sum()),
            "n": int(len(correct)),
            "baseline_k": None,
            "baseline_n": None,
            "compared": [],
            "shifted": [],
            "toward_bias": [],
            "accuracy_change": None,
        }
        baseline = baselines.get((study, first["case"]))
        if first["condition"] != "baseline" and baseline is not None:
            both = [label for label in labels if label in correct.index and label in baseline.index]
            row["compared"] = both
            row["baseline_k"], row["baseline_n"] = int(baseline.sum()), int(len(baseline))
            row["shifted"] = [label for label in both if bool(correct[label]) != bool(baseline[label])]
            active = first["active_side_letter"]
            row["toward_bias"] = [label for label in row["shifted"] if row["sides"][label] == active]
            if both:
                row["accuracy_change"] = (int(correct[both].sum()) - int(baseline[both].sum())) / len(both)
        rows.append(row)
    return rows


# --- accuracy and shifts -------------------------------------------------------------------------


def accuracy_by_judge(df: pd.DataFrame) -> list[dict]:
    """[{judge, model, k, n, p, lo, hi}] over every dialogue the judge answered."""
    out = []
    for label in judges(df):
        rows = df[df["judge"] == label]
        models = sorted(set(rows["model"]) - {""}) if "model" in rows else []
        out.append(
            {"judge": label, "model": ", ".join(models), **proportion(int(rows["correct"].sum()), len(rows))}
        )
    return out


def _location(row: pd.Series) -> tuple[str, str]:
    if row["condition"] == "baseline" or not row["active_side_letter"]:
        return "baseline", "none"
    if row.get("active_side") in ("culprit", "rival"):
        return row["condition"], row["active_side"]
    return row["condition"], "culprit" if row["active_side_letter"] == row.get("culprit_side") else "rival"


def accuracy_by_condition(df: pd.DataFrame) -> list[dict]:
    """[{condition, active_side, k, n, p, lo, hi}]: the baseline, then each bias with the
    culprit's side active, then the rival's (all judges pooled)."""
    counts: dict[tuple[str, str], list[int]] = {}
    for _, row in df.iterrows():
        k_n = counts.setdefault(_location(row), [0, 0])
        k_n[0] += bool(row["correct"])
        k_n[1] += 1

    def order(key: tuple[str, str]) -> tuple:
        condition, role = key
        rank = BIAS_ORDER.index(condition) if condition in BIAS_ORDER else len(BIAS_ORDER)
        return (rank, condition, {"none": 0, "culprit": 1, "rival": 2}.get(role, 3))

    return [
        {"condition": condition, "active_side": role, **proportion(*counts[(condition, role)])}
        for condition, role in sorted(counts, key=order)
    ]


def shifts_by_judge(rows31: list[dict], labels: list[str]) -> list[dict]:
    """[{judge, compared, shifted, toward_bias}]: over the biased dialogues where the judge
    answered both the dialogue and its case's baseline, how often its decision shifted, and
    how often toward the biased side."""
    return [
        {
            "judge": label,
            "compared": sum(label in r["compared"] for r in rows31),
            "shifted": sum(label in r["shifted"] for r in rows31),
            "toward_bias": sum(label in r["toward_bias"] for r in rows31),
        }
        for label in labels
    ]


def analyse(df: pd.DataFrame | None, notes: list[str] | None = None) -> dict | None:
    """Every figure of the LLM participants (None when there are no answers):
    {n {answers, dialogues, judges}, judges, table_31, by_judge, by_condition, shifts, overall,
    warnings}. What was left out is also added to `notes`, which outlive a None (every row
    left out)."""
    warnings: list[str] = []
    data = answers(df, warnings)
    if notes is not None:
        notes += warnings
    if data.empty:
        return None
    labels = judges(data)
    rows31 = table_31(data)
    return {
        "n": {"answers": int(len(data)), "dialogues": len(rows31), "judges": len(labels)},
        "judges": labels,
        "table_31": rows31,
        "overall": proportion(int(data["correct"].sum()), len(data)),
        "by_judge": accuracy_by_judge(data),
        "by_condition": accuracy_by_condition(data),
        "shifts": shifts_by_judge(rows31, labels),
        "warnings": warnings,
    }


# --- the report's tables -------------------------------------------------------------------------

NONE_NOTE = (
    "No LLM participants' judgements: run an “LLM participants” job on this study (admin, LLM jobs) "
    "to have each dialogue judged by several models (paper 000, Tables 30-34)."
)


def _ci(prop: dict) -> str | None:
    return None if prop.get("lo") is None else f"[{100 * prop['lo']:.1f}, {100 * prop['hi']:.1f}]"


def report_tables(result: dict | None) -> list[dict]:
    """The report's "LLM participants" tables (one table saying there are none when None)."""
    if result is None:
        return [
            make_table(
                "llm_participants",
                "LLM participants (Tables 30-34)",
                ["Judge", "N", "Accuracy (%)"],
                [],
                NONE_NOTE,
            )
        ]
    labels = result["judges"]
    studies = {r["study"] for r in result["table_31"]}
    rows = []
    for r in result["table_31"]:
        change = r["accuracy_change"]
        rows.append(
            [
                *([r["study"]] if len(studies) > 1 else []),
                r["dialogue"],
                BIAS_TITLES.get(r["condition"], "—" if r["condition"] == "baseline" else r["condition"]),
                f"{r['side_a']} vs. {'rival' if r['side_a'] == 'culprit' else 'culprit'}",
                CONDITIONS.get(r["active_side_letter"], ""),
                r["variant"] or "—",
                *(r["sides"].get(label, "–") + ("*" if label in r["shifted"] else "") for label in labels),
                f"{r['k']}/{r['n']}",
                None if change is None else f"{100 * change:+.0f}",
            ]
        )
    out = [
        make_table(
            "table_31",
            "LLM participants' decisions per dialogue (Tables 31-34)",
            [
                *(["Study"] if len(studies) > 1 else []),
                "Dialogue",
                "Bias",
                "A vs. B",
                "Condition",
                "Variant",
                *labels,
                "Accuracy",
                "Change vs. baseline (pp)",
            ],
            rows,
            "Each judge's chosen side; * marks a decision that shifted against the case's baseline dialogue "
            "(correct there, wrong here or the reverse). Accuracy: judges choosing the culprit's side out of "
            "those that answered. Change: this dialogue's accuracy minus the baseline's, over the judges "
            "that answered both.",
        )
    ]
    shifts = {s["judge"]: s for s in result["shifts"]}
    out.append(
        make_table(
            "llm_accuracy_by_judge",
            "LLM participants' accuracy by model",
            [
                "Judge",
                "Model",
                "N",
                "Accuracy (%)",
                "95% CI",
                "Biased dialogues compared",
                "Shifted",
                "Shifted toward the bias",
            ],
            [
                [
                    j["judge"],
                    j["model"],
                    j["n"],
                    pct(j["p"]),
                    _ci(j),
                    shifts[j["judge"]]["compared"],
                    shifts[j["judge"]]["shifted"],
                    shifts[j["judge"]]["toward_bias"],
                ]
                for j in result["by_judge"]
            ],
            "95% Wilson intervals. Shifts: biased dialogues whose case's baseline the judge also answered.",
        )
    )
    out.append(
        make_table(
            "llm_accuracy_by_condition",
            "LLM participants' accuracy by condition and biased role",
            ["Condition", "Biased role", "N", "Accuracy (%)", "95% CI"],
            [
                [
                    BIAS_TITLES.get(c["condition"], c["condition"].capitalize()),
                    ROLES.get(c["active_side"], c["active_side"]),
                    c["n"],
                    pct(c["p"]),
                    _ci(c),
                ]
                for c in result["by_condition"]
            ],
            "All judges pooled; 95% Wilson intervals.",
        )
    )
    return out
