"""Design C's exports: one row per persuasion dialogue, and one per classified sentence (move).

The rows of a study are its dialogues (a human-versus-human dialogue is one row, whichever
seat its participants had); those of a model-versus-model batch, which has no study, are the
batch's dialogues (`batch_csv_lines`, `manage.py export_csv … --batch NAME`). Dialogues with a
preview participant never appear.

Participants appear as Rostrum's id (joining the participants table) and as a per-study
pseudonym of their Prolific id, always: a row has two participants, and Prolific's own id is
in the participants table, where the viewer's permission decides whether it is shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db.models import Count, Max, Q, QuerySet, Sum

from analysis.access import pseudonym
from analysis.exports.table import (
    ALL,
    CHUNK,
    Column,
    Table,
    analysed,
    col,
    flag,
    iso,
    pilots_analysed,
    seconds_between,
)
from common.downloads import csv_line
from debates.models import LLMCall, PersuasionBatch, PersuasionDialogue, PersuasionTurn
from studies.models import Study

SIDES = ("pro", "con")
PREMISE_SEPARATOR = " | "


@dataclass(frozen=True)
class PersuasionTable(Table):
    """A table with rows for a study and, for a model-versus-model batch, rows of a batch."""

    batch_rows: Callable[[PersuasionBatch], Iterator[dict]] | None = None

    def rows_for_batch(self, batch: PersuasionBatch) -> Iterator[dict]:
        for row in self.batch_rows(batch):
            row["study"], row["study_sha256"] = "", ""
            yield row


def batch_csv_lines(table: PersuasionTable, batch: PersuasionBatch) -> Iterator[str]:
    """The table's rows of a batch as CSV text, line by line (header first). A batch has no
    participants, so there is nothing to pseudonymise."""
    yield csv_line((c.name for c in table.columns), guard=False)
    for row in table.rows_for_batch(batch):
        yield csv_line(c.get(row) for c in table.columns)


def study_dialogues(study: Study) -> QuerySet[PersuasionDialogue]:
    """The study's dialogues, each once, previews left out; pilots' dialogues left out too,
    or (in a pilot's report) the only ones."""
    dialogues = (
        PersuasionDialogue.objects.filter(
            Q(study=study) | Q(pro_participant__study=study) | Q(con_participant__study=study)
        )
        .exclude(pro_participant__is_preview=True)
        .exclude(con_participant__is_preview=True)
    )
    if pilots_analysed() is not False:
        dialogues = dialogues.filter(analysed("pro_participant__") | analysed("con_participant__"))
    else:
        dialogues = dialogues.exclude(pro_participant__is_pilot=True).exclude(con_participant__is_pilot=True)
    return dialogues.distinct()


def batch_dialogues(batch: PersuasionBatch) -> QuerySet[PersuasionDialogue]:
    return PersuasionDialogue.objects.filter(batch=batch)


def outcome_of(status: str, winner: str) -> str:
    """win, draw, abandoned or open (waiting or running)."""
    if status == PersuasionDialogue.Status.FINISHED:
        return "win" if winner else "draw"
    if status == PersuasionDialogue.Status.ABANDONED:
        return "abandoned"
    return "open"


def _pseudonym(study: Study | None, participant) -> str:
    if participant is None:
        return ""
    return pseudonym(study or participant.study, participant.prolific_pid)


def _template_versions(ids: list[int]) -> dict[tuple[int, str], int]:
    """The agent prompt's template version used per (dialogue id, side), from the call log:
    the latest version among the calls made for that side's agent-written turns."""
    rows = (
        LLMCall.objects.filter(
            persuasion_dialogue_id__in=ids,
            persuasion_turn__author="agent",
            template_version__isnull=False,
        )
        .values_list("persuasion_dialogue_id", "persuasion_turn__speaker")
        .annotate(v=Max("template_version"))
        .order_by()
    )
    return {(d, side): v for d, side, v in rows}


def _costs(ids: list[int]) -> dict[int, dict]:
    rows = (
        LLMCall.objects.filter(persuasion_dialogue_id__in=ids)
        .values("persuasion_dialogue_id")
        .annotate(
            calls=Count("id"),
            failed=Count("id", filter=~Q(error_kind="")),
            tokens_in=Sum("tokens_in"),
            tokens_out=Sum("tokens_out"),
            cost=Sum("cost_usd"),
        )
        .order_by()
    )
    return {r["persuasion_dialogue_id"]: r for r in rows}


def _turn_counts(ids: list[int]) -> dict[int, dict]:
    rows = (
        PersuasionTurn.objects.filter(dialogue_id__in=ids)
        .values("dialogue_id")
        .annotate(turns=Count("id"), fallback=Count("id", filter=Q(fallback=True)))
        .order_by()
    )
    return {r["dialogue_id"]: r for r in rows}


def _chunks(queryset: QuerySet, size: int = CHUNK) -> Iterator[list]:
    chunk = []
    for item in queryset.iterator(chunk_size=size):
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _cost(value) -> str:
    return "" if value is None else f"{value:.6f}"


def _store(state: dict, side: str) -> str:
    stores = (state or {}).get("stores") or {}
    return json.dumps(stores.get(side, []), ensure_ascii=False)


def dialogue_rows(
    queryset: QuerySet[PersuasionDialogue], study: Study | None, window: slice = ALL
) -> Iterator[dict]:
    queryset = queryset.select_related(
        "batch", "topic", "pro_participant__study", "con_participant__study", "pro_agent", "con_agent"
    ).order_by("id")[window]
    for chunk in _chunks(queryset):
        ids = [d.id for d in chunk]
        versions, costs, turns = _template_versions(ids), _costs(ids), _turn_counts(ids)
        for d in chunk:
            row = {
                "dialogue_id": d.id,
                "batch": d.batch.name if d.batch else "",
                "position": d.position,
                "repeat": d.repeat,
                "topic": d.topic.slug,
                "pro_claim": d.topic.pro_claim,
                "con_claim": d.topic.con_claim,
                "pairing": d.pairing,
            }
            for side in SIDES:
                participant, agent = d.participant_of(side), d.agent_of(side)
                row[f"{side}_kind"] = "human" if participant else ("agent" if agent else "")
                row[f"{side}_participant_id"] = participant.id if participant else ""
                row[f"{side}_participant"] = _pseudonym(study, participant)
                row[f"{side}_agent"] = agent.name if agent else ""
                row[f"{side}_agent_model"] = agent.model if agent else ""
                row[f"{side}_template_version"] = (
                    versions.get((d.id, side), agent.template_version) if agent else ""
                )
            outcome = outcome_of(d.status, d.winner)
            loser = {"pro": "con", "con": "pro"}.get(d.winner, "")
            call = costs.get(d.id, {})
            count = turns.get(d.id, {})
            state = d.state or {}
            row.update(
                {
                    "status": d.status,
                    "outcome": outcome,
                    "winner": d.winner,
                    "winner_kind": row[f"{d.winner}_kind"] if d.winner else "",
                    "winner_agent": row[f"{d.winner}_agent"] if d.winner else "",
                    "loser_agent": row[f"{loser}_agent"] if loser else "",
                    "end_reason": d.end_reason,
                    "ended_by": d.ended_by,
                    "ended_by_kind": row[f"{d.ended_by}_kind"] if d.ended_by in SIDES else "",
                    "turns_played": d.turns_played,
                    "moves": max(len(state.get("moves") or []) - 2, 0) if state.get("moves") else 0,
                    "fallback_turns": count.get("fallback", 0),
                    "created_at": iso(d.created_at),
                    "started_at": iso(d.started_at),
                    "finished_at": iso(d.finished_at),
                    "duration_s": seconds_between(d.started_at, d.finished_at),
                    "max_turns": d.max_turns,
                    "max_seconds": d.max_seconds,
                    "max_sentences": d.max_sentences,
                    "silence_seconds": d.silence_seconds,
                    "delay_min_s": d.delay_min_s,
                    "delay_max_s": d.delay_max_s,
                    "classifier_model": d.classifier_model,
                    "pro_store_final": _store(state, "pro"),
                    "con_store_final": _store(state, "con"),
                    "llm_calls": call.get("calls", 0),
                    "llm_failed_calls": call.get("failed", 0),
                    "tokens_in": call.get("tokens_in"),
                    "tokens_out": call.get("tokens_out"),
                    "llm_cost_usd": _cost(call.get("cost")),
                }
            )
            yield row


def _side_columns(side: str) -> list[Column]:
    name = {"pro": "for", "con": "against"}[side]
    return [
        col(f"{side}_kind", f"Who argued {name} the topic ({side}): human or agent."),
        col(
            f"{side}_participant_id",
            f"Rostrum's id of the {side} participant (joins the participants table); empty for an agent.",
        ),
        col(
            f"{side}_participant",
            f"Per-study pseudonym of the {side} participant's Prolific id (the participants table's "
            "prolific_pid when exported with pseudonyms); empty for an agent.",
        ),
        col(
            f"{side}_agent", f"Name of the {side} agent configuration (the interlocutor); empty for a person."
        ),
        col(f"{side}_agent_model", f"Model of the {side} agent configuration (as configured now)."),
        col(
            f"{side}_template_version",
            f"Version of the {side} agent's prompt template the dialogue's calls used (the configuration's "
            "current version when the call log has none).",
        ),
    ]


DIALOGUE_COLUMNS = [
    col("dialogue_id", "Rostrum's id of the dialogue (joins persuasion_moves)."),
    col("batch", "The model-versus-model batch the dialogue belongs to; empty in a study."),
    col("position", "The study step of the dialogue; empty in a batch."),
    col("repeat", "Batches: the repeat number of this pairing, topic and stance (1, 2, …)."),
    col("topic", "Topic slug."),
    col("pro_claim", "The initial claim of the side for the topic (raw text)."),
    col("con_claim", "The initial claim of the side against it (raw text)."),
    col("pairing", "human_ai, human_human or ai_ai."),
    *_side_columns("pro"),
    *_side_columns("con"),
    col("status", "waiting, running, finished or abandoned."),
    col(
        "outcome",
        "win (finished with a winner), draw (finished by the turn or time limit), abandoned, or open "
        "(waiting or still running).",
    ),
    col("winner", "The side that won: pro or con; empty for a draw or an unfinished dialogue."),
    col("winner_kind", "Whether the winner was a human or an agent."),
    col("winner_agent", "The winning agent configuration, if an agent won."),
    col("loser_agent", "The losing agent configuration, if an agent lost."),
    col(
        "end_reason",
        "conceded, retracted, turn_limit, time_limit (the game's rules), or partner_left, partner_silent, "
        "no_partner, agent_failed, budget (abandonments).",
    ),
    col("ended_by", "The side that left, fell silent or failed (abandonments)."),
    col("ended_by_kind", "Whether the side in ended_by was a human or an agent."),
    col("turns_played", "Turns played (the initial claims are not a turn)."),
    col("moves", "Moves accepted by the protocol (the two initial claims not counted)."),
    col("fallback_turns", "Turns for which a safe default was used (the agent or the classifier failed)."),
    col("created_at", "When the dialogue was created (UTC)."),
    col("started_at", "When it started (UTC)."),
    col("finished_at", "When it ended (UTC)."),
    col("duration_s", "Seconds from start to end."),
    col("max_turns", "Turn limit (a draw when reached)."),
    col("max_seconds", "Time limit in seconds (a draw when reached)."),
    col("max_sentences", "Sentences per turn at most."),
    col("silence_seconds", "Human sides: silence after which the dialogue is abandoned."),
    col("delay_min_s", "Agents: shortest reply delay, seconds (drawn uniformly in [min, max])."),
    col("delay_max_s", "Agents: longest reply delay, seconds."),
    col("classifier_model", "Model that classified the sentences and checked the commitment updates."),
    col("pro_store_final", "The pro side's commitment store at the end, as a JSON array of propositions."),
    col("con_store_final", "The con side's commitment store at the end, as a JSON array."),
    col("llm_calls", "Model calls made for the dialogue (agents, classification and update checks)."),
    col("llm_failed_calls", "Of those, calls that failed."),
    col("tokens_in", "Prompt tokens of the dialogue's calls."),
    col("tokens_out", "Completion tokens of the dialogue's calls."),
    col("llm_cost_usd", "Cost of the dialogue's calls in USD (empty when no price is known)."),
]


# --- moves -------------------------------------------------------------------------------


def move_rows(queryset: QuerySet[PersuasionDialogue], study: Study | None) -> Iterator[dict]:
    dialogues = queryset.select_related(
        "batch", "topic", "pro_participant__study", "con_participant__study", "pro_agent", "con_agent"
    ).order_by("id")
    for chunk in _chunks(dialogues, 200):
        by_id = {d.id: d for d in chunk}
        turns = PersuasionTurn.objects.filter(dialogue_id__in=list(by_id)).order_by("dialogue_id", "seq")
        for t in turns.iterator(chunk_size=CHUNK):
            d = by_id[t.dialogue_id]
            participant, agent = d.participant_of(t.speaker), d.agent_of(t.speaker)
            stores = t.stores_after or {}
            base = {
                "dialogue_id": d.id,
                "batch": d.batch.name if d.batch else "",
                "topic": d.topic.slug,
                "pairing": d.pairing,
                "turn": t.seq,
                "speaker": t.speaker,
                "author": t.author,
                "participant_id": participant.id if participant else "",
                "participant": _pseudonym(study, participant),
                "agent": agent.name if agent else "",
                "turn_status": t.status,
                "turn_fallback": flag(t.fallback),
                "turn_text": t.text,
                "turn_finished_at": iso(t.finished_at),
                "pro_store_after": json.dumps(stores.get("pro", []), ensure_ascii=False),
                "con_store_after": json.dumps(stores.get("con", []), ensure_ascii=False),
            }
            for index, s in enumerate(t.sentences or [], start=1):
                premises = [str(p) for p in (s.get("premises") or [])]
                yield {
                    **base,
                    "sentence": index,
                    "text": s.get("text", ""),
                    "kind": s.get("kind") or "",
                    "target": "" if s.get("target") is None else s["target"],
                    "proposition": s.get("proposition") or "",
                    "premises": PREMISE_SEPARATOR.join(premises),
                    "premises_json": json.dumps(premises, ensure_ascii=False) if premises else "",
                    "legal": flag(s.get("legal")),
                    "reason": s.get("reason") or "",
                    "fallback": flag(s.get("fallback")),
                }


MOVE_COLUMNS = [
    col("dialogue_id", "The dialogue (joins persuasion_dialogues)."),
    col("batch", "The model-versus-model batch; empty in a study."),
    col("topic", "Topic slug."),
    col("pairing", "human_ai, human_human or ai_ai."),
    col("turn", "The turn's number in the dialogue: 1, 2, 3, …"),
    col("speaker", "The side that spoke: pro or con."),
    col("author", "Who wrote the turn: human or agent."),
    col("participant_id", "Rostrum's id of the participant who wrote it; empty for an agent."),
    col("participant", "Per-study pseudonym of that participant's Prolific id; empty for an agent."),
    col("agent", "The agent configuration that wrote it; empty for a person."),
    col("turn_status", "done, failed, or pending / streaming / reading (unfinished)."),
    col("turn_fallback", "1 if a safe default was used for the turn (the agent or the classifier failed)."),
    col("turn_text", "The whole turn as written (raw text: escape before showing in HTML)."),
    col("turn_finished_at", "When the turn was complete (UTC)."),
    col("sentence", "The sentence's number in the turn: 1, 2, … (one row per sentence)."),
    col("text", "The sentence (raw text)."),
    col("kind", "Its move: claim, why, concede, retract, since or question; empty if unclassified."),
    col("target", "Index (in the dialogue's moves, 0 and 1 the initial claims) of the move it replies to."),
    col("proposition", "The proposition of the move (for since: the conclusion)."),
    col("premises", f"since only: the premises, joined by '{PREMISE_SEPARATOR}'."),
    col("premises_json", "since only: the premises as a JSON array (lossless)."),
    col("legal", "1 if the protocol accepted the move, 0 if it was refused."),
    col("reason", "Why a move was refused (shown to the participant)."),
    col("fallback", "1 if the classification fell back to the safe default."),
    col("pro_store_after", "The pro side's commitment store after the turn, as a JSON array."),
    col("con_store_after", "The con side's commitment store after the turn, as a JSON array."),
]


PERSUASION_DIALOGUES = PersuasionTable(
    "persuasion_dialogues",
    "One row per persuasion dialogue (design C): sides, outcome, limits and model cost.",
    DIALOGUE_COLUMNS,
    lambda study, window=ALL: dialogue_rows(study_dialogues(study), study, window),
    windowed=True,
    batch_rows=lambda batch: dialogue_rows(batch_dialogues(batch), None),
    kinds=frozenset({"persuasion_dialogue"}),
)
PERSUASION_MOVES = PersuasionTable(
    "persuasion_moves",
    "One row per sentence of a persuasion dialogue, classified as a move (design C).",
    MOVE_COLUMNS,
    lambda study: move_rows(study_dialogues(study), study),
    batch_rows=lambda batch: move_rows(batch_dialogues(batch), None),
    kinds=frozenset({"persuasion_dialogue"}),
)
PERSUASION_TABLES = {t.name: t for t in (PERSUASION_DIALOGUES, PERSUASION_MOVES)}
