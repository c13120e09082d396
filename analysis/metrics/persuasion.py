"""Design C (paper 003 §3, formal persuasion dialogues): outcomes, moves and the "logical" ranking.

Pure functions over the export tables `persuasion_dialogues` and `persuasion_moves` (and, for
the crowd's "subjective" ranking, design D's `comparisons`).

Outcomes. A dialogue ends in a win (a side conceded the other's initial claim or retracted
its own), a draw (turn or time limit) or an abandonment (a partner left or fell silent, an
agent failed, a batch's budget ran out); open dialogues (waiting, running) are counted but
left out of every rate. Rates are over ended dialogues, with 95% Wilson intervals. Per agent,
each seat an agent configuration held is one appearance (an agent playing itself appears
twice: one win and one loss, or two draws). Human versus AI: per agent, the share of the
decided (won or drawn, not abandoned) dialogues that the human won.

Moves. Every classified sentence of `persuasion_moves` by author kind (human, agent): the
share of each move kind among the legal ones (refused and unclassified sentences are
counted apart), with Wilson intervals.

Logical ranking. From finished model-versus-model dialogues (ai_ai; abandoned ones and
self-play left out), a win counts for the winning agent over the losing one. A draw counts
half a win to each (`draws="half"`, the default, as design D counts a tie) or is left out
(`draws="exclude"`). Strengths are Bradley-Terry log-strengths by I-LSR (ranking.py, the
same fit and bootstrap as design D: 2.5/97.5 percentiles over refits on dialogues resampled
with replacement).

Crowd ranking. Design D's Bradley-Terry ranking of the same interlocutors (agent
configuration names) from `comparisons`, compared with the logical one by
agreement.compare_rankings (Kendall's tau distance, footrule, Krippendorff's alpha).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.metrics import frames, pairwise, ranking
from analysis.metrics.agreement import compare_rankings
from analysis.metrics.frames import (
    codes_of,
    flag,
    has,
    one_row_each,
    participant_key,
    read_csv,
    typed_by,
    uses_study,
)
from analysis.metrics.intervals import proportion

DRAW_RULES = ("half", "exclude")
OUTCOMES = ("win", "draw", "abandoned")
KINDS = ("claim", "why", "concede", "retract", "since", "question")
AUTHORS = ("human", "agent")
SIDES = codes_of("persuasion_dialogues", "winner")  # a win's side, as exported
PAIRINGS = ("human_ai", "human_human", "ai_ai")

_COMMON = {"study": "str", "study_sha256": "str"}
SCHEMAS: dict[str, dict[str, str]] = {
    "persuasion_dialogues": {
        **_COMMON,
        "dialogue_id": "id",
        "batch": "str",
        "position": "int",
        "repeat": "int",
        "topic": "str",
        "pro_claim": "str",
        "con_claim": "str",
        "pairing": "code",
        **{
            f"{side}_{name}": kind
            for side in ("pro", "con")
            for name, kind in (
                ("kind", "code"),
                ("participant_id", "id"),
                ("participant", "str"),
                ("agent", "str"),
                ("agent_model", "str"),
                ("template_version", "int"),
            )
        },
        "status": "code",
        "outcome": "code",
        "winner": "code",
        "winner_kind": "code",
        "winner_agent": "str",
        "loser_agent": "str",
        "end_reason": "code",
        "ended_by": "code",
        "ended_by_kind": "code",
        "turns_played": "int",
        "moves": "int",
        "fallback_turns": "int",
        "created_at": "datetime",
        "started_at": "datetime",
        "finished_at": "datetime",
        "duration_s": "float",
        "max_turns": "int",
        "max_seconds": "int",
        "max_sentences": "int",
        "silence_seconds": "int",
        "delay_min_s": "float",
        "delay_max_s": "float",
        "classifier_model": "str",
        "pro_store_final": "str",
        "con_store_final": "str",
        "llm_calls": "int",
        "llm_failed_calls": "int",
        "tokens_in": "int",
        "tokens_out": "int",
        "llm_cost_usd": "float",
    },
    "persuasion_moves": {
        **_COMMON,
        "dialogue_id": "id",
        "batch": "str",
        "topic": "str",
        "pairing": "code",
        "turn": "int",
        "speaker": "code",
        "author": "code",
        "participant_id": "id",
        "participant": "str",
        "agent": "str",
        "turn_status": "code",
        "turn_fallback": "flag",
        "turn_text": "str",
        "turn_finished_at": "datetime",
        "sentence": "int",
        "text": "str",
        "kind": "code",
        "target": "int",
        "proposition": "str",
        "premises": "str",
        "premises_json": "str",
        "legal": "flag",
        "reason": "str",
        "fallback": "flag",
        "pro_store_after": "str",
        "con_store_after": "str",
    },
}
TABLES = tuple(SCHEMAS)


def typed(table: str, df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` with the known columns of a design C table converted (as frames.typed
    does for the other tables; idempotent)."""
    return typed_by(SCHEMAS, table, df, "design C tables")


def read_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Whichever design C tables exist in `folder`, typed (cells read as text first)."""
    folder = Path(folder)
    out = {}
    for name in TABLES:
        path = folder / f"{name}.csv"
        if path.is_file():
            raw = read_csv(path)
            out[name] = typed(name, raw)
    if "persuasion_dialogues" in out:
        one_row_each(out["persuasion_dialogues"], "persuasion_dialogues.csv", "dialogue_id", "dialogue")
    return out


# --- outcomes --------------------------------------------------------------------------------


def _text(df: pd.DataFrame, column: str) -> pd.Series:
    if column not in df.columns:
        return pd.Series("", index=df.index, dtype=object)
    return df[column].astype(object).where(df[column].notna(), "").astype(str)


def outcomes(dialogues: pd.DataFrame) -> pd.Series:
    """win, draw, abandoned or open per dialogue: the `outcome` column when present, else from
    status and winner."""
    if "outcome" in dialogues.columns and dialogues["outcome"].notna().all():
        return _text(dialogues, "outcome")
    status, winner = _text(dialogues, "status"), _text(dialogues, "winner")
    derived = np.where(
        status == "finished",
        np.where(winner != "", "win", "draw"),
        np.where(status == "abandoned", "abandoned", "open"),
    )
    return pd.Series(derived, index=dialogues.index, dtype=object)


def wins_without_winner(dialogues: pd.DataFrame) -> int:
    """Dialogues whose outcome is a win but whose `winner` is not pro or con (blank, or written
    otherwise): counted as wins, but in no side's or agent's record and no ranking."""
    return int(((outcomes(dialogues) == "win") & ~_text(dialogues, "winner").isin(SIDES)).sum())


def _summary(outcome: pd.Series) -> dict:
    counts = {name: int((outcome == name).sum()) for name in (*OUTCOMES, "open")}
    ended = counts["win"] + counts["draw"] + counts["abandoned"]
    return {
        "dialogues": int(len(outcome)),
        "ended": ended,
        **{name: counts[name] for name in (*OUTCOMES, "open")},
        "rates": {name: proportion(counts[name], ended) for name in OUTCOMES},
    }


def outcome_summary(dialogues: pd.DataFrame) -> dict:
    """Counts and rates of wins, draws and abandonments: overall, per pairing, per end
    reason, per topic."""
    outcome = outcomes(dialogues)
    pairing = _text(dialogues, "pairing")
    reason = _text(dialogues, "end_reason")
    topic = _text(dialogues, "topic")
    present = [p for p in PAIRINGS if (pairing == p).any()] + sorted(set(pairing) - set(PAIRINGS) - {""})
    ended = outcome.isin(OUTCOMES)
    reasons = reason[ended].replace("", "(none)").value_counts()
    return {
        "overall": _summary(outcome),
        "by_pairing": [{"pairing": p, **_summary(outcome[pairing == p])} for p in present],
        "by_topic": [{"topic": t, **_summary(outcome[topic == t])} for t in sorted(set(topic) - {""})],
        "by_reason": [
            {"end_reason": str(r), "dialogues": int(n), "share": proportion(int(n), int(ended.sum()))}
            for r, n in sorted(reasons.items())
        ],
    }


def appearances(dialogues: pd.DataFrame) -> pd.DataFrame:
    """One row per seat an agent held: dialogue, agent, side, opponent kind and agent, and
    the seat's result (won, lost, draw, abandoned, open)."""
    outcome = outcomes(dialogues)
    winner = _text(dialogues, "winner")
    rows = []
    for side, other in (("pro", "con"), ("con", "pro")):
        agent = _text(dialogues, f"{side}_agent")
        seated = (agent != "").to_numpy()
        if not seated.any():
            continue
        result = np.select(
            [outcome == "win", outcome == "draw", outcome == "abandoned"],
            # a win that names no side (a blank or foreign `winner`): neither won nor lost
            [
                np.where(winner == side, "won", np.where(winner == other, "lost", "unknown")),
                "draw",
                "abandoned",
            ],
            "open",
        )
        opponent_kind = _text(dialogues, f"{other}_kind")
        opponent_agent = _text(dialogues, f"{other}_agent")
        human = _text(dialogues, f"{other}_participant_id") != ""
        rows.append(
            pd.DataFrame(
                {
                    "dialogue_id": np.asarray(dialogues.get("dialogue_id", dialogues.index))[seated],
                    "agent": agent.to_numpy()[seated],
                    "side": side,
                    "pairing": _text(dialogues, "pairing").to_numpy()[seated],
                    "opponent_kind": np.where(
                        opponent_kind != "", opponent_kind, np.where(human, "human", "agent")
                    )[seated],
                    "opponent_agent": opponent_agent.to_numpy()[seated],
                    "result": np.asarray(result)[seated],
                }
            )
        )
    if not rows:
        return pd.DataFrame(
            columns=["dialogue_id", "agent", "side", "pairing", "opponent_kind", "opponent_agent", "result"]
        )
    return pd.concat(rows, ignore_index=True)


def per_agent(dialogues: pd.DataFrame) -> list[dict]:
    """Per agent configuration: appearances, won/lost/drawn/abandoned, and its win, draw and
    loss rates over decided appearances (won, lost or drawn)."""
    seats = appearances(dialogues)
    out = []
    for agent in sorted(seats["agent"].unique()):
        s = seats[seats["agent"] == agent]
        counts = {r: int((s["result"] == r).sum()) for r in ("won", "lost", "draw", "abandoned", "open")}
        decided = counts["won"] + counts["lost"] + counts["draw"]
        out.append(
            {
                "agent": agent,
                "appearances": int(len(s)),
                "against_humans": int((s["opponent_kind"] == "human").sum()),
                "against_agents": int((s["opponent_kind"] == "agent").sum()),
                **counts,
                "decided": decided,
                "win_rate": proportion(counts["won"], decided),
                "draw_rate": proportion(counts["draw"], decided),
                "loss_rate": proportion(counts["lost"], decided),
            }
        )
    return out


def human_vs_ai(dialogues: pd.DataFrame) -> list[dict]:
    """Per agent, over its human-versus-AI dialogues: the human's win rate, the agent's win
    rate and the draw rate among decided dialogues (abandoned ones counted apart), with 95%
    Wilson intervals."""
    seats = appearances(dialogues)
    seats = seats[seats["opponent_kind"] == "human"]
    out = []
    for agent in sorted(seats["agent"].unique()):
        s = seats[seats["agent"] == agent]
        won, lost, draw = (int((s["result"] == r).sum()) for r in ("won", "lost", "draw"))
        decided = won + lost + draw
        out.append(
            {
                "agent": agent,
                "dialogues": int(len(s)),
                "decided": decided,
                "abandoned": int((s["result"] == "abandoned").sum()),
                "open": int((s["result"] == "open").sum()),
                "human_wins": lost,
                "agent_wins": won,
                "draws": draw,
                "human_win_rate": proportion(lost, decided),
                "agent_win_rate": proportion(won, decided),
                "draw_rate": proportion(draw, decided),
            }
        )
    return out


# --- moves -----------------------------------------------------------------------------------


def move_distribution(moves: pd.DataFrame) -> dict:
    """Per author kind: sentences, legal / refused / unclassified / fallback counts, and the
    share of each move kind among the legal sentences ({kind: proportion})."""
    if moves is None or moves.empty:
        return {"by_author": [], "kinds": []}
    author = _text(moves, "author").replace("", "unknown")
    kind = _text(moves, "kind")
    legal = flag(moves["legal"]) if "legal" in moves.columns else pd.Series(True, index=moves.index)
    fallback = flag(moves["fallback"]) if "fallback" in moves.columns else pd.Series(False, index=moves.index)
    present = [a for a in AUTHORS if (author == a).any()] + sorted(set(author) - set(AUTHORS))
    # Kinds the export never writes (said in the warnings), for every author alike: the table
    # has a row per kind and a column per author.
    extra = sorted(set(kind[legal & (kind != "")]) - set(KINDS))
    by_author, kinds = [], []
    turn_key = ["study", "dialogue_id", "turn"] if uses_study(moves) else ["dialogue_id", "turn"]
    for a in present:
        mine = author == a
        counted = mine & legal & (kind != "")
        n = int(counted.sum())
        by_author.append(
            {
                "author": a,
                "sentences": int(mine.sum()),
                "legal": n,
                "refused": int((mine & ~legal).sum()),
                "unclassified": int((mine & (kind == "")).sum()),
                "fallback": int((mine & fallback).sum()),
                "refused_share": proportion(int((mine & ~legal).sum()), int(mine.sum())),
                "turns": int(
                    moves.loc[mine, turn_key].drop_duplicates().shape[0]
                    if {"dialogue_id", "turn"} <= set(moves.columns)
                    else 0
                ),
            }
        )
        for k in (*KINDS, *extra):
            kinds.append({"author": a, "kind": k, **proportion(int((counted & (kind == k)).sum()), n)})
    return {"by_author": by_author, "kinds": kinds}


# --- rankings --------------------------------------------------------------------------------


def logical_outcomes(dialogues: pd.DataFrame, draws: str = "half") -> pd.DataFrame:
    """Finished model-versus-model dialogues between two different agents as design D's
    comparisons: interlocutor_1 (pro agent), interlocutor_2 (con agent), winner '1', '2' or
    'tie' (a draw; left out with draws="exclude")."""
    if draws not in DRAW_RULES:
        raise ValueError(f"draws must be one of {', '.join(DRAW_RULES)}, got {draws!r}")
    pro, con = _text(dialogues, "pro_agent"), _text(dialogues, "con_agent")
    human = (_text(dialogues, "pro_participant_id") != "") | (_text(dialogues, "con_participant_id") != "")
    outcome = outcomes(dialogues)
    winner = _text(dialogues, "winner")
    keep = (pro != "") & (con != "") & (pro != con) & ~human & outcome.isin(["win", "draw"])
    keep &= (outcome != "win") | winner.isin(SIDES)  # a win naming no side tells no ranking
    if draws == "exclude":
        keep &= outcome == "win"
    code = np.where(outcome == "draw", "tie", np.where(winner == "pro", "1", "2"))
    return pd.DataFrame(
        {
            "interlocutor_1": pro[keep].to_numpy(),
            "interlocutor_2": con[keep].to_numpy(),
            "winner": code[keep.to_numpy()],
        }
    )


def self_play(dialogues: pd.DataFrame) -> int:
    pro, con = _text(dialogues, "pro_agent"), _text(dialogues, "con_agent")
    return int(((pro != "") & (pro == con)).sum())


def logical_ranking(
    dialogues: pd.DataFrame,
    *,
    draws: str = "half",
    replicates: int = 1000,
    rng: np.random.Generator | None = None,
    alpha: float = ranking.ALPHA,
) -> dict | None:
    """Bradley-Terry ranking of agent configurations from model-versus-model outcomes:
    {draws, dialogues, wins, draws_counted, labels, win_matrix, strengths, ranking} (strengths
    as design D's), or None with fewer than two agents or no outcome to count."""
    df = logical_outcomes(dialogues, draws)
    labels = sorted(set(df["interlocutor_1"]) | set(df["interlocutor_2"]))
    if len(labels) < 2 or df.empty:
        return None
    rng = rng if rng is not None else np.random.default_rng(0)
    main = pairwise.strengths_with_intervals(df, labels, replicates, rng, alpha)
    return {
        "draws": draws,
        "dialogues": int(len(df)),
        "wins": int((df["winner"] != "tie").sum()),
        "draws_counted": int((df["winner"] == "tie").sum()),
        "labels": labels,
        "win_matrix": main["wins"],
        "strengths": main["strengths"],
        "ranking": main["ranking"],
    }


def crowd_ranking(
    comparisons: pd.DataFrame | None,
    participants: pd.DataFrame | None = None,
    *,
    replicates: int = 1000,
    rng: np.random.Generator | None = None,
    alpha: float = ranking.ALPHA,
) -> dict | None:
    """Design D's ranking of the interlocutors from valid comparisons, or None without any."""
    if comparisons is None or comparisons.empty:
        return None
    comparisons = frames.typed("comparisons", comparisons)
    if participants is not None:
        participants = frames.typed("participants", participants)
    # As design D's: self-pairs left out, interlocutors in no counted comparison not ranked.
    df, labels, left_out = pairwise.counted_comparisons(comparisons, participants)
    if len(labels) < 2 or df.empty:
        return None
    rng = rng if rng is not None else np.random.default_rng(0)
    main = pairwise.strengths_with_intervals(df, labels, replicates, rng, alpha)
    return {
        "left_out": left_out,
        "comparisons": int(len(df)),
        "annotators": int(participant_key(df, uses_study(df)).nunique()) if "participant_id" in df else None,
        "labels": labels,
        "win_matrix": main["wins"],
        "strengths": main["strengths"],
        "ranking": main["ranking"],
    }


def ranks_of(result: dict) -> dict[str, float]:
    return {name: s["rank"] for name, s in result["strengths"].items()}


def ranking_agreement(logical: dict | None, crowd: dict | None) -> dict | None:
    """compare_rankings between the logical and the crowd ranking, on the agents both rank."""
    if logical is None or crowd is None:
        return None
    return compare_rankings(ranks_of(logical), ranks_of(crowd))


def exclude_excluded(dialogues: pd.DataFrame, participants: pd.DataFrame | None) -> tuple[pd.DataFrame, int]:
    """Drop the dialogues in which a human side is an excluded participant (per the
    participants table); returns the kept dialogues and how many were dropped."""
    if participants is None or not has(participants, "participant_id", "excluded") or dialogues.empty:
        return dialogues, 0
    with_study = uses_study(dialogues, participants)
    keys = participant_key(participants, with_study)
    excluded = set(keys[flag(participants["excluded"]).to_numpy()])
    if not excluded:
        return dialogues, 0
    drop = np.zeros(len(dialogues), dtype=bool)
    for side in ("pro", "con"):
        column = f"{side}_participant_id"
        if column not in dialogues.columns:
            continue
        seat = dialogues.assign(participant_id=dialogues[column])
        has_person = dialogues[column].notna().to_numpy()
        drop |= has_person & participant_key(seat, with_study).isin(excluded).to_numpy()
    return dialogues[~drop], int(drop.sum())
