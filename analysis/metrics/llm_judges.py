"""LLM participants in design A (paper 000, Tables 30-34): pure functions over the export
table `llm_judgements` (one row per dialogue judged by one model).

Definitions:
- One answer per (study, dialogue, judge): when several jobs judged the same dialogue with
  the same judge label, the last one (by `finished_at`, then row order) counts.
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
from analysis.metrics.frames import flag, read_csv, typed_by
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
REQUIRED = ("dialogue", "case", "condition", "judge", "chosen_side", "correct")
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


def answers(df: pd.DataFrame | None) -> pd.DataFrame:
    """One row per (study, dialogue, judge) with a choice (see the module docstring), with plain
    text columns and a boolean `correct`; empty when there is nothing."""
    if df is None or df.empty:
        return pd.DataFrame(columns=[*REQUIRED, "study", "active_side_letter", "variant", "side_a"])
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(f"table {TABLE!r} has no column {missing[0]!r} (needed for the LLM participants)")
    out = df[df["chosen_side"].notna() & df["correct"].notna()].copy()
    for column in (
        "study",
        "dialogue",
        "case",
        "condition",
        "judge",
        "chosen_side",
        "active_side_letter",
        "active_side",
        "variant",
        "side_a",
        "model",
    ):
        out[column] = _text(out, column)
    out["correct"] = flag(out["correct"])
    out["_row"] = range(len(out))
    order = ["finished_at", "_row"] if "finished_at" in out.columns else ["_row"]
    out = out.sort_values(order, na_position="first", kind="stable")
    out = out.drop_duplicates(["study", "dialogue", "judge"], keep="last")
    return out.sort_values("_row", kind="stable").drop(columns="_row").reset_index(drop=True)


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


def analyse(df: pd.DataFrame | None) -> dict | None:
    """Every figure of the LLM participants (None when there are no answers):
    {n {answers, dialogues, judges}, judges, table_31, by_judge, by_condition, shifts, overall}."""
    data = answers(df)
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
