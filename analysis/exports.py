"""Tidy CSV tables, streamed from the database, with a codebook of every column.

Each table is a list of columns (name, description, how to read it from a row) and a
generator of rows for one study. Preview participants never appear.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from debates.models import (
    BiasReport,
    Comparison,
    DialogueAssignment,
    Judgement,
    LiveSession,
    LiveTurn,
    LLMCall,
)
from participants.models import Exclusion, Participant, Response, StepVisit
from studies.models import Study
from studies.services import study_steps

CHUNK = 2000


@dataclass(frozen=True)
class Column:
    name: str
    description: str
    get: Callable[[dict], Any]


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: list[Column]
    rows: Callable[[Study], Iterator[dict]]


def col(name: str, description: str, key: str | None = None) -> Column:
    key = key or name
    return Column(name, description, lambda row: row.get(key))


def flag(value) -> str:
    return "" if value is None else ("1" if value else "0")


def iso(value) -> str:
    return value.isoformat() if value else ""


def _active_exclusions(study: Study) -> dict[int, list[str]]:
    reasons: dict[int, list[str]] = {}
    rows = Exclusion.objects.filter(
        participant__study=study, participant__is_preview=False, revoked_at__isnull=True
    ).values_list("participant_id", "reason")
    for participant_id, reason in rows.iterator(chunk_size=CHUNK):
        reasons.setdefault(participant_id, []).append(reason)
    return reasons


# --- participants ------------------------------------------------------------------------


def participant_rows(study: Study) -> Iterator[dict]:
    exclusions = _active_exclusions(study)
    titles = {s.position: s.title for s in study_steps(study)}
    assignments = {
        a["participant_id"]: a
        for a in DialogueAssignment.objects.filter(participant__study=study).values(
            "participant_id",
            "dialogue__slug",
            "dialogue__case__slug",
            "dialogue__condition",
            "dialogue__active_side",
            "dialogue__variant",
            "dialogue__side_a",
            "assigned_at",
            "words",
            "reading_ms",
            "reading_server_ms",
            "reading_client_ms",
            "wpm",
        )
    }
    queryset = Participant.objects.filter(study=study, is_preview=False).order_by("id").values()
    for p in queryset.iterator(chunk_size=CHUNK):
        a = assignments.get(p["id"], {})
        finished = p["finished_at"]
        yield {
            **p,
            "participant_id": p["id"],
            "step_title": titles.get(p["position"], "") if p["status"] == "active" else "",
            "started_at": iso(p["started_at"]),
            "finished_at": iso(finished),
            "last_seen_at": iso(p["last_seen_at"]),
            "expires_at": iso(p["expires_at"]),
            "duration_s": round((finished - p["started_at"]).total_seconds(), 1) if finished else "",
            "excluded": flag(p["excluded"]),
            "exclusion_reasons": ";".join(sorted(exclusions.get(p["id"], []))),
            "dialogue": a.get("dialogue__slug", ""),
            "case": a.get("dialogue__case__slug", ""),
            "condition": a.get("dialogue__condition", ""),
            "active_side": a.get("dialogue__active_side", ""),
            "variant": a.get("dialogue__variant", ""),
            "side_a": a.get("dialogue__side_a", ""),
            "assigned_at": iso(a.get("assigned_at")),
            "words": a.get("words"),
            "reading_ms": a.get("reading_ms"),
            "reading_server_ms": a.get("reading_server_ms"),
            "reading_client_ms": a.get("reading_client_ms"),
            "wpm": "" if a.get("wpm") is None else round(a["wpm"], 1),
        }


PARTICIPANT_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant (joins the other tables)."),
    col("prolific_pid", "PROLIFIC_PID from the study link."),
    col("prolific_study_id", "STUDY_ID from the study link."),
    col("prolific_session_id", "SESSION_ID from the study link (Prolific's submission id)."),
    col(
        "status",
        "active, completed, no_consent, failed_check, screened_out, study_full, timed_out or returned.",
    ),
    col("position", "The step the participant is on (or stopped at)."),
    col("step_title", "Title of the current step, for participants still in progress."),
    col("started_at", "First visit of the study link (UTC, ISO 8601)."),
    col("finished_at", "When the participant completed or left the study (UTC)."),
    col("duration_s", "Seconds from start to finish."),
    col("last_seen_at", "Last request from the participant (UTC)."),
    col("expires_at", "When the participant's place is released if not finished (UTC)."),
    col("visits", "Times the study link was opened (refreshes of a step are not counted)."),
    col("attention_failures", "Failed attention-check items."),
    col("excluded", "1 if excluded from analysis (an active exclusion exists)."),
    col("exclusion_reasons", "Active exclusion reasons, ';'-separated: attention, recall, wpm, manual."),
    col("dialogue", "Slug of the assigned dialogue (empty if none was assigned)."),
    col("case", "Slug of the dialogue's case."),
    col("condition", "baseline, anchoring, fallacy_oversight, pro_jargon or verbosity."),
    col("active_side", "Role carrying the bias intervention: none, culprit or rival."),
    col("variant", "V1 or V2 for biased dialogues; empty for baseline."),
    col("side_a", "Whom side A argues for: culprit or rival."),
    col("assigned_at", "When the dialogue was assigned (UTC)."),
    col("words", "Words in the dialogue's six turns."),
    col(
        "reading_ms",
        "Reading time of the dialogue used for wpm (browser's active time when plausible, else server time).",
    ),
    col("reading_server_ms", "Server time from serving the dialogue step to its submission."),
    col("reading_client_ms", "Browser-measured time the dialogue page was visible and focused."),
    col("wpm", "Words per minute on the dialogue: words / (reading_ms / 60000)."),
]


# --- step times --------------------------------------------------------------------------


def step_time_rows(study: Study) -> Iterator[dict]:
    queryset = (
        StepVisit.objects.filter(participant__study=study, participant__is_preview=False)
        .order_by("participant_id", "position")
        .values()
    )
    for v in queryset.iterator(chunk_size=CHUNK):
        yield {**v, "shown_at": iso(v["shown_at"]), "submitted_at": iso(v["submitted_at"])}


STEP_TIME_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("position", "Step position in the study."),
    col("step_kind", "Kind of the step (consent, questionnaire, dialogue, …)."),
    col("shown_at", "When the step became the participant's current step, i.e. was first served (UTC)."),
    col("submitted_at", "Submission of the step (UTC)."),
    col("server_ms", "Milliseconds from shown_at to the step's submission, measured by the server."),
    col("client_active_ms", "Milliseconds the page was visible and focused, measured by the browser."),
    col("client_hidden_ms", "Milliseconds the page was hidden (another tab or app)."),
    col("client_blurs", "Times the page lost focus or visibility."),
]


# --- responses ---------------------------------------------------------------------------


def response_rows(study: Study) -> Iterator[dict]:
    queryset = (
        Response.objects.filter(participant__study=study, participant__is_preview=False)
        .order_by("participant_id", "position", "id")
        .values(
            "participant_id",
            "participant__prolific_pid",
            "position",
            "step_kind",
            "key",
            "value",
            "value_num",
            "is_check",
            "passed",
            "created_at",
        )
    )
    for r in queryset.iterator(chunk_size=CHUNK):
        yield {
            **r,
            "prolific_pid": r["participant__prolific_pid"],
            "is_check": flag(r["is_check"]),
            "passed": flag(r["passed"]),
            "created_at": iso(r["created_at"]),
        }


RESPONSE_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("prolific_pid", "PROLIFIC_PID."),
    col("position", "Step position the answer was given on."),
    col("step_kind", "Kind of that step."),
    col(
        "key", "Item key (a questionnaire item's key, or e.g. judgement_side, bias_present, recall, consent)."
    ),
    col("value", "The answer as shown to the participant (option text, number or free text)."),
    col("value_num", "Numeric coding: Likert position 1..k, slider or number value; empty otherwise."),
    col("is_check", "1 if the item is an attention or recall check."),
    col("passed", "For checks: 1 if answered as instructed, 0 if not."),
    col("created_at", "When the answer was stored (UTC)."),
]


# --- judgements --------------------------------------------------------------------------


def judgement_rows(study: Study) -> Iterator[dict]:
    exclusions = _active_exclusions(study)
    bias = {
        (b["participant_id"], b["dialogue_id"]): b
        for b in BiasReport.objects.filter(participant__study=study).values()
    }
    recall = dict(
        Response.objects.filter(participant__study=study, key="recall").values_list(
            "participant_id", "passed"
        )
    )
    wpm = dict(
        DialogueAssignment.objects.filter(participant__study=study).values_list("participant_id", "wpm")
    )
    queryset = (
        Judgement.objects.filter(participant__study=study, participant__is_preview=False)
        .select_related("participant", "dialogue__case")
        .order_by("id")
    )
    for j in queryset.iterator(chunk_size=CHUNK):
        d, p = j.dialogue, j.participant
        b = bias.get((p.id, d.id), {})
        active = d.active_side_letter
        yield {
            "participant_id": p.id,
            "prolific_pid": p.prolific_pid,
            "participant_status": p.status,
            "excluded": flag(p.excluded),
            "exclusion_reasons": ";".join(sorted(exclusions.get(p.id, []))),
            "dialogue": d.slug,
            "case": d.case.slug,
            "condition": d.condition,
            "active_side": d.active_side,
            "variant": d.variant,
            "side_a": d.side_a,
            "culprit_side": d.culprit_side,
            "active_side_letter": active,
            "signed_active_side": d.signed_active_side,
            "chosen_side": j.chosen_side,
            "chose_a": flag(j.chosen_side == "A"),
            "correct": flag(j.correct),
            "followed_bias": flag(j.chosen_side == active) if active else "",
            "confidence": j.confidence,
            "reasoning": j.reasoning,
            "bias_present": b.get("present", ""),
            "bias_side": b.get("side", ""),
            "bias_type": b.get("bias_type", ""),
            "bias_presence_correct": flag((b["present"] == "yes") == bool(active)) if b else "",
            "bias_side_correct": flag(b.get("side") == active) if b and active else "",
            "bias_type_correct": flag(b.get("bias_type") == d.condition) if b and active else "",
            "recall_passed": flag(recall.get(p.id)),
            "wpm": "" if wpm.get(p.id) is None else round(wpm[p.id], 1),
            "created_at": iso(j.created_at),
        }


JUDGEMENT_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("prolific_pid", "PROLIFIC_PID."),
    col("participant_status", "The participant's status (completed, failed_check, …)."),
    col("excluded", "1 if the participant is excluded from analysis."),
    col("exclusion_reasons", "Active exclusion reasons, ';'-separated."),
    col("dialogue", "Dialogue slug."),
    col("case", "Case slug."),
    col("condition", "baseline, anchoring, fallacy_oversight, pro_jargon or verbosity."),
    col("active_side", "Role carrying the bias: none, culprit or rival."),
    col("variant", "V1 or V2; empty for baseline."),
    col("side_a", "Whom side A argues for: culprit or rival."),
    col("culprit_side", "The side (A or B) arguing for the true culprit."),
    col("active_side_letter", "The side (A or B) carrying the bias; empty for baseline."),
    col("signed_active_side", "+1 bias on side A, -1 bias on side B, 0 baseline (predictor of Table 40)."),
    col("chosen_side", "Side the participant chose: A or B."),
    col("chose_a", "1 if the participant chose side A."),
    col("correct", "1 if the chosen side argues for the true culprit."),
    col("followed_bias", "1 if the chosen side is the biased side; empty for baseline."),
    col("confidence", "Confidence in the choice, 0-100."),
    col("reasoning", "The participant's free-text reasoning (raw text: escape before showing in HTML)."),
    col("bias_present", "Did a side argue manipulatively? yes, no or unsure."),
    col("bias_side", "If yes: which side, A, B or unsure."),
    col("bias_type", "If yes: anchoring, fallacy_oversight, pro_jargon, verbosity or other."),
    col("bias_presence_correct", "1 if bias_present is yes exactly when the dialogue is biased."),
    col("bias_side_correct", "Biased dialogues only: 1 if bias_side is the biased side."),
    col("bias_type_correct", "Biased dialogues only: 1 if bias_type is the dialogue's condition."),
    col("recall_passed", "1 if the recall check was answered correctly, 0 if not, empty if not reached."),
    col("wpm", "Words per minute on the dialogue."),
    col("created_at", "When the judgement was stored (UTC)."),
]


# --- claim judgements (design B) -----------------------------------------------------------


def _seconds(start, end):
    return round((end - start).total_seconds(), 1) if start and end else ""


def _answer(value):
    return "" if value is None else ("true" if value else "false")


def claim_judgement_rows(study: Study) -> Iterator[dict]:
    exclusions = _active_exclusions(study)
    judge_counts = dict(
        LiveTurn.objects.filter(session__participant__study=study, speaker="J")
        .exclude(target="pass")
        .values("session")
        .annotate(n=Count("id"))
        .values_list("session", "n")
    )
    queryset = (
        LiveSession.objects.filter(participant__study=study, participant__is_preview=False)
        .select_related("participant", "claim")
        .order_by("id")
    )
    for s in queryset.iterator(chunk_size=CHUNK):
        p, claim = s.participant, s.claim
        truth = claim.truth
        consultant_correct = (s.consultant_side == claim.true_side) if s.consultant_side else None
        yield {
            "participant_id": p.id,
            "prolific_pid": p.prolific_pid,
            "participant_status": p.status,
            "excluded": flag(p.excluded),
            "exclusion_reasons": ";".join(sorted(exclusions.get(p.id, []))),
            "group": s.group,
            "position": s.position,
            "claim": claim.slug,
            "domain": claim.domain,
            "truth": _answer(truth),
            "protocol": s.protocol,
            "debater_a_side": s.side_a,
            "consultant_side": s.consultant_side,
            "consultant_side_mode": s.consultant_side_mode,
            "consultant_correct": flag(consultant_correct),
            "phase": s.phase,
            "initial_answer": _answer(s.initial_answer),
            "initial_confidence": s.initial_confidence,
            "initial_correct": flag(None if s.initial_answer is None else s.initial_answer == truth),
            "final_answer": _answer(s.final_answer),
            "final_confidence": s.final_confidence,
            "final_correct": flag(None if s.final_answer is None else s.final_answer == truth),
            "justification": s.justification,
            "judge_questions": judge_counts.get(s.id, 0),
            "rounds": s.rounds,
            "assigned_at": iso(s.created_at),
            "chat_started_at": iso(s.chat_started_at),
            "chat_ended_at": iso(s.chat_ended_at),
            "finished_at": iso(s.finished_at),
            "chat_seconds": _seconds(s.chat_started_at, s.chat_ended_at),
        }


CLAIM_JUDGEMENT_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("prolific_pid", "PROLIFIC_PID."),
    col("participant_status", "The participant's status."),
    col("excluded", "1 if the participant is excluded from analysis."),
    col("exclusion_reasons", "Active exclusion reasons, ';'-separated."),
    col("group", "Screening group (e.g. mainstream, skeptical)."),
    col("position", "Step position of this claim in the study (1st claim, 2nd claim, …)."),
    col("claim", "Claim slug."),
    col("domain", "Claim domain (e.g. covid, climate)."),
    col("truth", "The claim's truth label: true or false."),
    col("protocol", "debate or consultancy."),
    col("debater_a_side", "Debate: the side debater A argued (true/false); debater B argued the other."),
    col("consultant_side", "Consultancy: the side the consultant argued."),
    col("consultant_side_mode", "Consultancy: random (assigned) or preferred (chosen by the model)."),
    col("consultant_correct", "Consultancy: 1 if the consultant argued the true side."),
    col("phase", "How far the participant got: initial, chat, final or done."),
    col("initial_answer", "Judgement before the protocol: true or false."),
    col("initial_confidence", "Confidence before, 0-100."),
    col("initial_correct", "1 if the initial answer matches the truth label."),
    col("final_answer", "Judgement after the protocol."),
    col("final_confidence", "Confidence after, 0-100."),
    col("final_correct", "1 if the final answer matches the truth label."),
    col("justification", "The participant's written justification (raw text)."),
    col("judge_questions", "Questions the participant asked (passes not counted)."),
    col("rounds", "Rounds of the protocol."),
    col("assigned_at", "When the claim and protocol were assigned (UTC)."),
    col("chat_started_at", "When the conversation started (UTC)."),
    col("chat_ended_at", "When the participant left the conversation (UTC)."),
    col("finished_at", "When the final judgement was stored (UTC)."),
    col("chat_seconds", "Seconds spent in the conversation."),
]


def live_turn_rows(study: Study) -> Iterator[dict]:
    calls = {}
    for call in (
        LLMCall.objects.filter(study=study, turn__isnull=False)
        .order_by("created_at")
        .values("turn_id", "model", "tokens_in", "tokens_out", "ttft_ms", "total_ms", "error_kind")
        .iterator(chunk_size=CHUNK)
    ):
        if not call["error_kind"] or call["turn_id"] not in calls:
            calls[call["turn_id"]] = call  # the successful call, else the last failure
    queryset = (
        LiveTurn.objects.filter(session__participant__study=study, session__participant__is_preview=False)
        .select_related("session__participant", "session__claim")
        .order_by("session_id", "seq")
    )
    for t in queryset.iterator(chunk_size=CHUNK):
        call = calls.get(t.id, {})
        yield {
            "participant_id": t.session.participant_id,
            "session_id": t.session_id,
            "claim": t.session.claim.slug,
            "protocol": t.session.protocol,
            "seq": t.seq,
            "round": t.round,
            "speaker": t.speaker,
            "side": t.session.side_of(t.speaker) if t.speaker != "J" else "",
            "target": t.target,
            "status": t.status,
            "attempts": t.attempts,
            "text": t.text,
            "error": t.error,
            "created_at": iso(t.created_at),
            "started_at": iso(t.started_at),
            "finished_at": iso(t.finished_at),
            "model": call.get("model", ""),
            "tokens_in": call.get("tokens_in"),
            "tokens_out": call.get("tokens_out"),
            "ttft_ms": call.get("ttft_ms"),
            "total_ms": call.get("total_ms"),
        }


LIVE_TURN_COLUMNS = [
    col("participant_id", "Rostrum's id of the participant."),
    col("session_id", "The claim session (joins claim_judgements through participant and claim)."),
    col("claim", "Claim slug."),
    col("protocol", "debate or consultancy."),
    col("seq", "Order of the turn in the session: 1, 2, 3, …"),
    col("round", "Round of the protocol."),
    col("speaker", "A or B (debaters), C (consultant), J (the judge, i.e. the participant)."),
    col("side", "The side the AI speaker argued: true or false."),
    col("target", "Judge turns: whom the question was for (A, B, both, C) or pass."),
    col("status", "done, failed (the participant saw an error), pending or streaming (unfinished)."),
    col("attempts", "Generation attempts used (a retried turn was written again from the start)."),
    col("text", "The turn's text (raw: escape before showing in HTML)."),
    col("error", "Why the last attempt failed, if it did."),
    col("created_at", "When the turn was queued (AI) or sent (judge) (UTC)."),
    col("started_at", "When generation started (UTC)."),
    col("finished_at", "When the turn was complete (UTC)."),
    col("model", "Model that wrote the turn."),
    col("tokens_in", "Prompt tokens of the call that wrote the turn."),
    col("tokens_out", "Completion tokens."),
    col("ttft_ms", "The model's time to first token, ms."),
    col("total_ms", "The call's total time, ms (including retries)."),
]


# --- comparisons (design D) ---------------------------------------------------------------


def comparison_rows(study: Study) -> Iterator[dict]:
    queryset = (
        Comparison.objects.filter(participant__study=study, participant__is_preview=False)
        .select_related("participant", "instance__instance_set", "instance__excerpt_1", "instance__excerpt_2")
        .order_by("participant_id", "position", "order")
    )
    for c in queryset.iterator(chunk_size=CHUNK):
        p, i = c.participant, c.instance
        answered = c.answered_at is not None
        winner = c.winner if answered else ""
        yield {
            "participant_id": p.id,
            "prolific_pid": p.prolific_pid,
            "participant_status": p.status,
            "excluded": flag(p.excluded),
            "valid": flag(p.status == "completed" and not p.excluded and not c.is_check and answered),
            "instance_set": i.instance_set.slug,
            "instance": i.number,
            "order": c.order,
            "is_check": flag(c.is_check),
            "check_answer": c.check_answer,
            "check_passed": flag(c.check_passed),
            "stance": i.stance,
            "debate_1": i.excerpt_1.debate,
            "debate_2": i.excerpt_2.debate,
            "interlocutor_1": i.interlocutor_1,
            "interlocutor_2": i.interlocutor_2,
            "shown_first": "2" if c.swapped else "1",
            "choice": c.choice,
            "winner": winner,
            "winner_interlocutor": {"1": i.interlocutor_1, "2": i.interlocutor_2, "tie": "tie"}.get(
                winner, ""
            ),
            "confidence": c.confidence,
            "served_at": iso(c.served_at),
            "answered_at": iso(c.answered_at),
            "seconds": _seconds(c.served_at, c.answered_at),
        }


COMPARISON_COLUMNS = [
    col("participant_id", "Rostrum's id of the annotator."),
    col("prolific_pid", "PROLIFIC_PID."),
    col("participant_status", "The annotator's status (completed, failed_check, returned, …)."),
    col("excluded", "1 if the annotator is excluded from analysis."),
    col(
        "valid", "1 if this answer counts: a real instance, answered by a completed, non-excluded annotator."
    ),
    col("instance_set", "The instance set (pool) the instance belongs to."),
    col("instance", "Instance number within the set."),
    col("order", "Position in the annotator's sequence (attention checks interleaved)."),
    col("is_check", "1 for an attention check (an instance with an instruction in its question)."),
    col(
        "check_answer",
        "Checks: the answer the instruction required (debate1, debate2, equal, in display terms).",
    ),
    col("check_passed", "Checks: 1 if answered as instructed."),
    col("stance", "Speaker A's stance in both excerpts."),
    col("debate_1", "The debate of the instance's excerpt 1 (stable id)."),
    col("debate_2", "The debate of the instance's excerpt 2."),
    col("interlocutor_1", "Speaker A of excerpt 1."),
    col("interlocutor_2", "Speaker A of excerpt 2."),
    col("shown_first", "Which excerpt was shown as Debate 1: 1 or 2 (display order is randomised)."),
    col("choice", "The answer as shown: debate1, debate2 or equal."),
    col("winner", "The answer in the instance's terms: 1, 2 or tie."),
    col("winner_interlocutor", "The interlocutor judged more persuasive, or tie."),
    col("confidence", "1 Very unsure, 2 Somewhat unsure, 3 Neutral, 4 Somewhat confident, 5 Very confident."),
    col("served_at", "When the comparison was shown (UTC)."),
    col("answered_at", "When it was answered (UTC)."),
    col("seconds", "Seconds from showing to answering."),
]


TABLES: dict[str, Table] = {
    t.name: t
    for t in [
        Table(
            "participants",
            "One row per participant (previews left out).",
            PARTICIPANT_COLUMNS,
            participant_rows,
        ),
        Table("responses", "One row per answered item.", RESPONSE_COLUMNS, response_rows),
        Table("judgements", "One row per judgement of a dialogue.", JUDGEMENT_COLUMNS, judgement_rows),
        Table(
            "step_times",
            "One row per submitted step, with server and browser timing.",
            STEP_TIME_COLUMNS,
            step_time_rows,
        ),
        Table(
            "claim_judgements",
            "One row per claim judged in a live debate or consultancy (design B).",
            CLAIM_JUDGEMENT_COLUMNS,
            claim_judgement_rows,
        ),
        Table(
            "live_turns",
            "One row per turn of a live debate or consultancy.",
            LIVE_TURN_COLUMNS,
            live_turn_rows,
        ),
        Table(
            "comparisons", "One row per pairwise comparison (design D).", COMPARISON_COLUMNS, comparison_rows
        ),
    ]
}


class _Echo:
    def write(self, value: str) -> str:
        return value


def _safe(value) -> Any:
    # Keep spreadsheets from executing participant text as a formula (CSV injection).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") and not _is_number(value):
        return "'" + value
    return value


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def csv_lines(table: Table, study: Study) -> Iterator[str]:
    """The table as CSV text, line by line (header first)."""
    writer = csv.writer(_Echo())
    yield writer.writerow([c.name for c in table.columns])
    for row in table.rows(study):
        yield writer.writerow([_safe(c.get(row)) for c in table.columns])


def codebook_lines() -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(["table", "column", "description"])
    for table in TABLES.values():
        yield writer.writerow([table.name, "", table.description])
        for column in table.columns:
            yield writer.writerow([table.name, column.name, column.description])
