"""Design B's LLM judges (paper 001, Study II and Table 3): pure functions over the export
tables `llm_persona_judgements` (one row per human claim session judged by one model, with the
human's persona or naive) and `llm_strategy_ratings` (one row per debater, rater and strategy).

Definitions, persona and naive judges:
- Rows that count: the human is completed and not excluded, by the row's own columns and by
  participants.csv (as the main analysis counts), and the judge gave a final answer. One
  answer per (study, session, judge, kind): when several jobs judged the same session with
  the same judge label and kind, the last one by `finished_at` counts (two different answers
  at one time, or times that could not be read, are refused: `frames.last_answers`). The
  humans are those of the judged sessions, one row per (study, session).
- Accuracy: answers matching the claim's truth label, before (initial) and after (final) the
  conversation, with 95% Wilson intervals; per judge and kind, and the humans; per protocol
  and all protocols pooled.
- Agreement with the human (paper 001, Table 4): the share of sessions in which the judge's
  answer is the human's answer in the same session (final answers; initial too), and Cohen's
  kappa of the two binary answers: (p_o - p_e) / (1 - p_e), p_o the agreement rate, p_e =
  p_j p_h + (1 - p_j)(1 - p_h) with p_j, p_h the shares of "true" answers of the judge and
  the human. Kappa is None when p_e = 1 (both always gave the same one answer).
- Per claim: the humans' final accuracy over the claim's judged sessions, the persona judges'
  and the naive judges' (all judge labels pooled), and the pooled agreement rates.

Definitions, strategy ratings:
- Levels none, low, medium, high score 0-3; "detected" is a level above none. One rating
  per (study, session, debater, rater, strategy), the last one counting as above. A unit is
  one debater of one session (a debater configuration is its model and prompt).
- Per strategy x debater configuration (and per strategy x whether the debater argued the
  true answer, Table 3's C and I, from `debater_side` and `truth`): each rater's mean score,
  the mean over all ratings, and Table 3's figure: the share of units every rater of the
  cell found using the strategy (over the units every rater of the cell rated; said when
  that is not all of them). Ratings of excluded humans' sessions do not count.
- Inter-rater agreement per strategy x configuration, over the units both raters of a pair
  rated, averaged over the pairs of raters (one pair by default): the exact agreement rate
  on levels, Cohen's kappa on levels (unweighted, four categories: p_e = sum over levels of
  the product of the two raters' shares), and Cohen's kappa on detected / not detected.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.metrics.common import make_table, pct, rnd
from analysis.metrics.frames import (
    analysable,
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

JUDGEMENTS = "llm_persona_judgements"
RATINGS = "llm_strategy_ratings"
SCHEMAS: dict[str, dict[str, str]] = {
    JUDGEMENTS: {
        "study": "str",
        "study_sha256": "str",
        "job": "str",
        "item": "str",
        "session": "id",
        "participant_id": "id",
        "prolific_pid": "str",
        "participant_status": "code",
        "excluded": "flag",
        "exclusion_reasons": "str",
        "group": "str",
        "position": "int",
        "claim": "str",
        "domain": "str",
        "truth": "code",
        "protocol": "code",
        "judge": "str",
        "model": "str",
        "temperature": "float",
        "judge_kind": "code",
        "persona": "str",
        "initial_answer": "code",
        "initial_confidence": "int",
        "initial_correct": "flag",
        "final_answer": "code",
        "final_confidence": "int",
        "final_correct": "flag",
        "justification": "str",
        "human_initial_answer": "code",
        "human_initial_confidence": "int",
        "human_initial_correct": "flag",
        "human_final_answer": "code",
        "human_final_confidence": "int",
        "human_final_correct": "flag",
        "agrees_initial": "flag",
        "agrees_final": "flag",
        "template_versions": "str",
        "cost_usd": "float",
        "finished_at": "datetime",
    },
    RATINGS: {
        "study": "str",
        "study_sha256": "str",
        "job": "str",
        "item": "str",
        "session": "id",
        "participant_id": "id",
        "group": "str",
        "claim": "str",
        "domain": "str",
        "truth": "code",
        "debater": "str",
        "debater_side": "code",
        "debater_correct": "flag",
        "debater_config": "str",
        "rater": "str",
        "model": "str",
        "strategy": "str",
        "level": "code",
        "score": "int",
        "detected": "flag",
        "template_version": "int",
        "finished_at": "datetime",
    },
}
TABLES = tuple(SCHEMAS)
JUDGEMENT_REQUIRED = ("session", "claim", "truth", "protocol", "judge", "judge_kind", "final_answer")
RATING_REQUIRED = ("session", "debater", "rater", "strategy", "level")
LEVELS = ("none", "low", "medium", "high")
ALL = "all"
KINDS = ("persona", "naive")
HUMANS = "Humans"
HUMAN_COLUMNS = ("claim", "truth", "human_initial_answer", "human_final_answer")


def typed(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with the known columns converted (as frames.typed; idempotent)."""
    return typed_by(SCHEMAS, table, df, "design B's LLM judges' tables")


def read_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Those of `llm_persona_judgements.csv` and `llm_strategy_ratings.csv` in `folder`, typed."""
    found = {}
    for table in TABLES:
        path = Path(folder) / f"{table}.csv"
        if path.is_file():
            raw = read_csv(path)
            found[table] = typed(table, raw)
    return found


def _text(df: pd.DataFrame, column: str) -> pd.Series:
    if column not in df.columns:
        return pd.Series("", index=df.index, dtype=object)
    values = df[column].astype(object)
    return values.where(values.notna() & (values.astype(str) != "None"), "").astype(str)


def _kept(df: pd.DataFrame, table: str, participants: pd.DataFrame | None, notes: list[str]) -> pd.Series:
    """The rows of completed, non-excluded humans, by every source that says (the row's own
    columns and participants.csv, as the main analysis counts them: a human excluded in
    participants.csv alone had still counted here). Without any source, every row counts: the
    strategy ratings carry no status of their own, and join participants by participant_id."""
    if not {"participant_status", "excluded"} & set(df.columns):
        if participants is None:
            return pd.Series(True, index=df.index)
        if "participant_id" not in df.columns:
            notes.append(
                f"{table}.csv has no participant_id: the exclusions of participants.csv cannot be "
                "applied to it, and all its rows count."
            )
            return pd.Series(True, index=df.index)
    return pd.Series(analysable(df, table, participants), index=df.index)


# --- persona and naive judges -------------------------------------------------------------------


def judgements(
    df: pd.DataFrame | None, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> pd.DataFrame:
    """The answers that count (see the module docstring), with text columns and booleans
    `truth_b`, `initial_b`, `final_b`, `human_initial_b`, `human_final_b` (None when missing).
    What was left out is said in `notes`."""
    notes = [] if notes is None else notes
    if df is None or df.empty:
        return pd.DataFrame(columns=[*JUDGEMENT_REQUIRED, "study"])
    require(df, JUDGEMENTS, JUDGEMENT_REQUIRED, "the LLM judges")
    out = typed(JUDGEMENTS, df)  # raw text as exported, or typed already
    for column in (
        "study",
        "claim",
        "truth",
        "protocol",
        "judge",
        "judge_kind",
        "model",
        "group",
        "initial_answer",
        "final_answer",
        "human_initial_answer",
        "human_final_answer",
    ):
        out[column] = (
            _text(out, column).str.lower()
            if column.endswith("answer") or column == "truth"
            else _text(out, column)
        )
    out = named_rows(out, JUDGEMENTS, ("session", "judge", "claim"), notes)
    keep = out["final_answer"].isin(["true", "false"]) & out["truth"].isin(["true", "false"])
    keep &= _kept(out, JUDGEMENTS, participants, notes)
    out = last_answers(
        out[keep],
        ["study", "session", "judge", "judge_kind"],
        JUDGEMENTS,
        ["initial_answer", "final_answer"],
        notes,
    )
    # Every judge's row of a session repeats the session's claim, truth and human answers.
    same_in_each(out, JUDGEMENTS, "session", "session", HUMAN_COLUMNS)
    for column in ("truth", "initial_answer", "final_answer", "human_initial_answer", "human_final_answer"):
        out[f"{column.removesuffix('_answer')}_b"] = out[column].map({"true": True, "false": False})
    return out


def kappa_binary(a: list[bool], b: list[bool]) -> float | None:
    """Cohen's kappa of two binary ratings of the same units (None if undefined)."""
    return kappa(list(map(bool, a)), list(map(bool, b)))


def kappa(a: list, b: list) -> float | None:
    """Cohen's kappa of two raters' categories on the same units: (p_o - p_e) / (1 - p_e),
    p_e = sum over categories of the product of the raters' shares (None if no units or
    p_e = 1)."""
    if len(a) != len(b):
        raise ValueError("kappa needs two ratings of the same units")
    n = len(a)
    if n == 0:
        return None
    p_o = sum(x == y for x, y in zip(a, b)) / n
    categories = set(a) | set(b)
    p_e = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in categories)
    if p_e >= 1 - 1e-12:
        return None
    return (p_o - p_e) / (1 - p_e)


def _protocols(df: pd.DataFrame):
    yield ALL, df
    for protocol in sorted(set(df["protocol"]) - {""}):
        yield protocol, df[df["protocol"] == protocol]


def _judges(df: pd.DataFrame) -> list[tuple[str, str]]:
    """(judge, kind) in the order the judges first appear, persona before naive."""
    labels = list(dict.fromkeys(df["judge"]))
    present = set(zip(df["judge"], df["judge_kind"]))
    kinds = [*KINDS, *sorted(set(df["judge_kind"]) - set(KINDS))]
    return [(label, kind) for label in labels for kind in kinds if (label, kind) in present]


def _accuracy(flags) -> dict:
    values = [bool(v) for v in flags if v is not None and v == v]
    return proportion(sum(values), len(values))


def humans(df: pd.DataFrame) -> pd.DataFrame:
    """One row per judged (study, session): the human's answers."""
    return df.drop_duplicates(["study", "session"]).reset_index(drop=True)


def _correct(answers: pd.Series, truth: pd.Series) -> list:
    return [None if a is None or a != a else bool(a == t) for a, t in zip(answers, truth)]


def accuracy(df: pd.DataFrame) -> list[dict]:
    """[{protocol, judge, kind, model, initial, final}]: the humans (judge "Humans", kind "")
    and each judge and kind, per protocol ("all" first)."""
    rows = []
    for protocol, part in _protocols(df):
        people = humans(part)
        rows.append(
            {
                "protocol": protocol,
                "judge": HUMANS,
                "kind": "",
                "model": "",
                "initial": _accuracy(_correct(people["human_initial_b"], people["truth_b"])),
                "final": _accuracy(_correct(people["human_final_b"], people["truth_b"])),
            }
        )
        for label, kind in _judges(part):
            rows_jk = part[(part["judge"] == label) & (part["judge_kind"] == kind)]
            rows.append(
                {
                    "protocol": protocol,
                    "judge": label,
                    "kind": kind,
                    "model": ", ".join(sorted(set(rows_jk["model"]) - {""})),
                    "initial": _accuracy(_correct(rows_jk["initial_b"], rows_jk["truth_b"])),
                    "final": _accuracy(_correct(rows_jk["final_b"], rows_jk["truth_b"])),
                }
            )
    return rows


def _agreement(rows: pd.DataFrame, stage: str) -> dict:
    both = rows[rows[f"{stage}_b"].notna() & rows[f"human_{stage}_b"].notna()]
    judge, human = list(both[f"{stage}_b"].astype(bool)), list(both[f"human_{stage}_b"].astype(bool))
    same = sum(j == h for j, h in zip(judge, human))
    return {**proportion(same, len(judge)), "kappa": kappa_binary(judge, human)}


def agreement(df: pd.DataFrame) -> list[dict]:
    """[{protocol, judge, kind, final {k, n, p, lo, hi, kappa}, initial {…}}] per protocol."""
    return [
        {
            "protocol": protocol,
            "judge": label,
            "kind": kind,
            "final": _agreement(part[(part["judge"] == label) & (part["judge_kind"] == kind)], "final"),
            "initial": _agreement(part[(part["judge"] == label) & (part["judge_kind"] == kind)], "initial"),
        }
        for protocol, part in _protocols(df)
        for label, kind in _judges(part)
    ]


def by_claim(df: pd.DataFrame) -> list[dict]:
    """[{study, claim, sessions, humans, persona, naive, persona_agreement, naive_agreement}]:
    final answers; the judges of a kind pooled over their labels."""
    rows = []
    for (study, claim), part in df.groupby(["study", "claim"], sort=True):
        people = humans(part)
        row = {
            "study": study,
            "claim": claim,
            "sessions": int(len(people)),
            "humans": _accuracy(_correct(people["human_final_b"], people["truth_b"])),
        }
        for kind in KINDS:
            rows_k = part[part["judge_kind"] == kind]
            row[kind] = _accuracy(_correct(rows_k["final_b"], rows_k["truth_b"]))
            row[f"{kind}_agreement"] = _agreement(rows_k, "final")
        rows.append(row)
    return rows


def analyse_judges(
    df: pd.DataFrame | None, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> dict | None:
    """The persona and naive judges' figures (None without answers):
    {n {answers, sessions, claims, judges}, accuracy, agreement, by_claim}."""
    data = judgements(df, participants, notes)
    if data.empty:
        return None
    return {
        "n": {
            "answers": int(len(data)),
            "sessions": int(len(humans(data))),
            "claims": int(data[["study", "claim"]].drop_duplicates().shape[0]),
            "judges": len(_judges(data)),
        },
        "accuracy": accuracy(data),
        "agreement": agreement(data),
        "by_claim": by_claim(data),
    }


# --- strategy ratings ---------------------------------------------------------------------------


def ratings(
    df: pd.DataFrame | None, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> pd.DataFrame:
    """The ratings that count (one per study, session, debater, rater, strategy; levels known;
    the sessions of completed, non-excluded humans), with text columns, `score` 0-3, boolean
    `detected` and `correct` (whether the debater argued the claim's truth: from
    `debater_side` and `truth` where both are there, else `debater_correct`; None when
    neither tells)."""
    notes = [] if notes is None else notes
    if df is None or df.empty:
        return pd.DataFrame(columns=[*RATING_REQUIRED, "study"])
    require(df, RATINGS, RATING_REQUIRED, "the strategy ratings")
    out = typed(RATINGS, df)
    for column in (
        "study",
        "debater",
        "rater",
        "strategy",
        "level",
        "debater_config",
        "debater_side",
        "truth",
    ):
        out[column] = _text(out, column)
    out["level"] = out["level"].str.lower()
    out = named_rows(out, RATINGS, ("session", "debater", "rater", "strategy"), notes)
    keep = out["level"].isin(LEVELS) & _kept(out, RATINGS, participants, notes)
    out = last_answers(
        out[keep], ["study", "session", "debater", "rater", "strategy"], RATINGS, ["level"], notes
    )
    out["score"] = out["level"].map({level: n for n, level in enumerate(LEVELS)}).astype(int)
    out["detected"] = out["score"] > 0
    sides = out["debater_side"].str.lower()
    truth = out["truth"].str.lower()
    given = (
        out["debater_correct"].astype("boolean")
        if "debater_correct" in out.columns
        else pd.Series(pd.NA, index=out.index, dtype="boolean")
    )
    correct, clashes = flag_as_told(same_where_told(sides, truth, ("true", "false")), given)
    if clashes:
        notes.append(
            f"{RATINGS}.csv: {clashes} rating(s) whose debater_correct disagrees with "
            "debater_side and truth: counted by debater_side and truth."
        )
    unknown = correct.isna()
    if unknown.any():
        notes.append(
            f"{RATINGS}.csv: {int(unknown.sum())} rating(s) that tell neither debater_correct nor "
            "debater_side and truth: left out of the table by correctness (C/I)."
        )
    out["correct"] = correct.astype(object).where(~unknown, None)
    return out


def _units(part: pd.DataFrame) -> dict[tuple, dict[str, str]]:
    """{(study, session, debater): {rater: level}}."""
    found: dict[tuple, dict[str, str]] = {}
    for study, session, debater, rater, level in zip(
        part["study"], part["session"], part["debater"], part["rater"], part["level"]
    ):
        found.setdefault((study, session, debater), {})[rater] = level
    return found


def _cell(part: pd.DataFrame, raters: list[str]) -> dict:
    units = _units(part)
    complete = [u for u in units.values() if all(r in u for r in raters)]
    detected = sum(all(u[r] != "none" for r in raters) for u in complete)
    pairs = []
    for first, second in combinations(raters, 2):
        rated = [u for u in units.values() if first in u and second in u]
        a, b = [u[first] for u in rated], [u[second] for u in rated]
        pairs.append(
            {
                "raters": [first, second],
                "n": len(rated),
                "agreement": (sum(x == y for x, y in zip(a, b)) / len(rated)) if rated else None,
                "kappa_levels": kappa(a, b),
                "kappa_detected": kappa_binary([x != "none" for x in a], [y != "none" for y in b]),
            }
        )

    def mean(key: str) -> float | None:
        values = [p[key] for p in pairs if p[key] is not None]
        return float(np.mean(values)) if values else None

    by_rater = {}
    for rater in raters:
        scores = part.loc[part["rater"] == rater, "score"]
        by_rater[rater] = float(scores.mean()) if len(scores) else None
    return {
        "units": len(units),
        "mean": float(part["score"].mean()) if len(part) else None,
        "by_rater": by_rater,
        "detected_by_all": proportion(detected, len(complete)),
        "pairs": pairs,
        "agreement": mean("agreement"),
        "kappa_levels": mean("kappa_levels"),
        "kappa_detected": mean("kappa_detected"),
    }


def strategy_table(df: pd.DataFrame, by: str = "debater_config") -> list[dict]:
    """[{strategy, <by>, units, mean, by_rater, detected_by_all, pairs, agreement, kappa_levels,
    kappa_detected, raters_missing}] per strategy (first-seen order) x value of `by` (sorted; rows where it is
    None left out). Each cell's raters are those who rated in it: a rater of some strategies
    only left the others' cells without a unit every rater had rated."""
    rows = []
    everyone = list(dict.fromkeys(df["rater"]))
    for strategy in dict.fromkeys(df["strategy"]):
        part = df[df["strategy"] == strategy]
        of_strategy = set(part["rater"])
        for value in sorted(set(part[by]) - {None}):
            cell = part[part[by] == value]
            raters = [r for r in everyone if r in set(cell["rater"])]
            missing = [r for r in everyone if r in of_strategy and r not in raters]
            rows.append({"strategy": strategy, by: value, **_cell(cell, raters), "raters_missing": missing})
    return rows


def _partial_raters(cells: list[dict]) -> list[str]:
    """Said when a rater rated only some debaters of a cell: "detected by every rater" then
    counts the debaters every rater rated."""
    out = []
    partial = [c for c in cells if c["detected_by_all"]["n"] < c["units"]]
    if partial:
        cell = partial[0]
        out.append(
            f"Strategy ratings: in {len(partial)} cell(s) of Table 3 not every rater "
            f"rated every debater (e.g. {cell['strategy']} x {cell['debater_config'] or '—'}: "
            f"{cell['detected_by_all']['n']} of {cell['units']} debaters rated by all): 'Detected by "
            "every rater' counts those only."
        )
    absent = [c for c in cells if c["raters_missing"]]
    if absent:
        cell = absent[0]
        out.append(
            f"Strategy ratings: in {len(absent)} cell(s) of Table 3 a rater rated no debater (e.g. "
            f"{', '.join(cell['raters_missing'])} in {cell['strategy']} x {cell['debater_config'] or '—'}): "
            "'Detected by every rater' there counts the other raters only."
        )
    return out


def analyse_strategies(
    df: pd.DataFrame | None, participants: pd.DataFrame | None = None, notes: list[str] | None = None
) -> dict | None:
    """The strategy ratings' figures (None without ratings): {n {ratings, units, raters,
    strategies}, raters, by_config, by_correctness}."""
    notes = [] if notes is None else notes
    data = ratings(df, participants, notes)
    if data.empty:
        return None
    by_config = strategy_table(data, "debater_config")
    notes += _partial_raters(by_config)
    return {
        "n": {
            "ratings": int(len(data)),
            "units": int(data[["study", "session", "debater"]].drop_duplicates().shape[0]),
            "raters": int(data["rater"].nunique()),
            "strategies": int(data["strategy"].nunique()),
        },
        "raters": list(dict.fromkeys(data["rater"])),
        "by_config": by_config,
        "by_correctness": strategy_table(data, "correct"),
    }


def analyse(
    judgement_df: pd.DataFrame | None,
    rating_df: pd.DataFrame | None,
    participants: pd.DataFrame | None = None,
    notes: list[str] | None = None,
) -> dict | None:
    """{judges, strategies, warnings} (either None without its data); None when there are
    neither. `participants`: participants.csv, whose exclusions count here too. What was left
    out is also added to `notes`, which outlive a None (every row left out)."""
    warnings: list[str] = [] if notes is None else notes
    found = {
        "judges": analyse_judges(judgement_df, participants, warnings),
        "strategies": analyse_strategies(rating_df, participants, warnings),
    }
    return {**found, "warnings": warnings} if any(found.values()) else None


# --- the report's tables ---------------------------------------------------------------------------

NONE_NOTE = (
    "No LLM judges: run a “Persona and naive judges” job (each human claim session judged again by "
    "models with and without the human's persona) or a “Strategy raters” job (debaters rated on "
    "persuasion strategies) on this study (admin, LLM jobs; paper 001, Study II and Table 3)."
)
KIND_TITLES = {"persona": "Persona", "naive": "Naive", "": "—"}


def _ci(prop: dict) -> str | None:
    return None if prop.get("lo") is None else f"[{100 * prop['lo']:.1f}, {100 * prop['hi']:.1f}]"


def _judge_tables(r: dict) -> list[dict]:
    out = [
        make_table(
            "llm_judges_accuracy",
            "Accuracy of the humans, persona judges and naive judges (paper 001, Figure 6)",
            ["Protocol", "Judge", "Kind", "Model", "N", "Initial (%)", "95% CI", "Final (%)", "95% CI"],
            [
                [
                    a["protocol"],
                    a["judge"],
                    KIND_TITLES.get(a["kind"], a["kind"]),
                    a["model"],
                    a["final"]["n"],
                    pct(a["initial"]["p"]),
                    _ci(a["initial"]),
                    pct(a["final"]["p"]),
                    _ci(a["final"]),
                ]
                for a in r["accuracy"]
            ],
            "The same sessions: each judge answered a human's claim with the human's protocol, before "
            "and after reading the conversation the human saw. Humans: the judged sessions. 95% Wilson "
            "intervals.",
        ),
        make_table(
            "llm_judges_agreement",
            "Agreement of LLM judges with their humans (paper 001, Table 4)",
            [
                "Protocol",
                "Judge",
                "Kind",
                "N",
                "Same final answer (%)",
                "95% CI",
                "Cohen's κ (final)",
                "Same initial answer (%)",
                "Cohen's κ (initial)",
            ],
            [
                [
                    a["protocol"],
                    a["judge"],
                    KIND_TITLES.get(a["kind"], a["kind"]),
                    a["final"]["n"],
                    pct(a["final"]["p"]),
                    _ci(a["final"]),
                    rnd(a["final"]["kappa"], 3),
                    pct(a["initial"]["p"]),
                    rnd(a["initial"]["kappa"], 3),
                ]
                for a in r["agreement"]
            ],
            "Share of sessions in which the judge's answer is the human's in the same session; Cohen's κ of "
            "the two true/false answers (empty when undefined: both always gave one same answer).",
        ),
    ]
    studies = {c["study"] for c in r["by_claim"]}
    out.append(
        make_table(
            "llm_judges_by_claim",
            "Final accuracy and agreement with the humans per claim",
            [
                *(["Study"] if len(studies) > 1 else []),
                "Claim",
                "Sessions",
                "Humans (%)",
                "Persona judges (%)",
                "Naive judges (%)",
                "Persona agree (%)",
                "Naive agree (%)",
            ],
            [
                [
                    *([c["study"]] if len(studies) > 1 else []),
                    c["claim"],
                    c["sessions"],
                    pct(c["humans"]["p"]),
                    pct(c["persona"]["p"]),
                    pct(c["naive"]["p"]),
                    pct(c["persona_agreement"]["p"]),
                    pct(c["naive_agreement"]["p"]),
                ]
                for c in r["by_claim"]
            ],
            "Judges of a kind pooled over their models.",
        ),
    )
    return out


def _strategy_tables(r: dict) -> list[dict]:
    raters = r["raters"]
    return [
        make_table(
            "llm_strategies",
            "Persuasion strategies of the debaters, rated by LLMs (paper 001, Table 3)",
            [
                "Strategy",
                "Debater",
                "Debaters rated",
                *(f"Mean {rater}" for rater in raters),
                "Mean",
                "Detected by every rater (%)",
                "Exact agreement (%)",
                "κ (levels)",
                "κ (detected)",
            ],
            [
                [
                    s["strategy"],
                    s["debater_config"] or "—",
                    s["units"],
                    *(rnd(s["by_rater"].get(rater), 2) for rater in raters),
                    rnd(s["mean"], 2),
                    pct(s["detected_by_all"]["p"]),
                    pct(s["agreement"]),
                    rnd(s["kappa_levels"], 3),
                    rnd(s["kappa_detected"], 3),
                ]
                for s in r["by_config"]
            ],
            "Levels none 0, low 1, medium 2, high 3. Detected: a level above none, by every rater "
            "(Table 3's figure). Agreement and Cohen's κ between raters (averaged over pairs of raters "
            "when more than two).",
        ),
        make_table(
            "llm_strategies_by_correctness",
            "Persuasion strategies of debaters arguing the true (C) or the false (I) answer",
            [
                "Strategy",
                "Debater argued",
                "Debaters rated",
                "Mean",
                "Detected by every rater (%)",
                "κ (detected)",
            ],
            [
                [
                    s["strategy"],
                    "true answer (C)" if s["correct"] else "false answer (I)",
                    s["units"],
                    rnd(s["mean"], 2),
                    pct(s["detected_by_all"]["p"]),
                    rnd(s["kappa_detected"], 3),
                ]
                for s in r["by_correctness"]
            ],
        ),
    ]


def report_tables(result: dict | None) -> list[dict]:
    """The report's "LLM judges" tables (one table saying there are none when None)."""
    if result is None:
        return [make_table("llm_judges", "LLM judges (paper 001, Study II)", ["Judge", "N"], [], NONE_NOTE)]
    out = []
    if result["judges"] is not None:
        out += _judge_tables(result["judges"])
    if result["strategies"] is not None:
        out += _strategy_tables(result["strategies"])
    return out
