"""Design B's exports: one row per claim judged, and one per turn of a live session."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count

from analysis.exports.table import (
    ALL,
    CHUNK,
    Table,
    active_exclusions,
    analysed,
    col,
    flag,
    iso,
    seconds_between,
)
from debates.models import LiveSession, LiveTurn, LLMCall
from studies.models import Study

# --- claim judgements (design B) -----------------------------------------------------------


def _answer(value):
    return "" if value is None else ("true" if value else "false")


def _probability(confidence):
    """The probability that the answer given is right, as the analysis reads a confidence."""
    return "" if confidence is None else round(confidence / 100, 2)


def claim_judgement_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    exclusions = active_exclusions(study)
    judge_counts = dict(
        LiveTurn.objects.filter(session__participant__study=study, speaker="J")
        .exclude(target="pass")
        .values("session")
        .annotate(n=Count("id"))
        .values_list("session", "n")
    )
    queryset = (
        LiveSession.objects.filter(analysed(), participant__study=study)
        .select_related("participant", "claim")
        .order_by("id")
    )[window]
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
            "consultant_side_fallback": flag(s.consultant_side_fallback)
            if s.consultant_side_mode == "preferred"
            else "",
            "consultant_correct": flag(consultant_correct),
            "phase": s.phase,
            "initial_answer": _answer(s.initial_answer),
            "initial_confidence": s.initial_confidence,
            "initial_p_correct": _probability(s.initial_confidence),
            "initial_correct": flag(None if s.initial_answer is None else s.initial_answer == truth),
            "final_answer": _answer(s.final_answer),
            "final_confidence": s.final_confidence,
            "final_p_correct": _probability(s.final_confidence),
            "final_correct": flag(None if s.final_answer is None else s.final_answer == truth),
            "justification": s.justification,
            "judge_questions": judge_counts.get(s.id, 0),
            "rounds": s.rounds,
            "assigned_at": iso(s.created_at),
            "chat_started_at": iso(s.chat_started_at),
            "chat_ended_at": iso(s.chat_ended_at),
            "finished_at": iso(s.finished_at),
            "chat_seconds": seconds_between(s.chat_started_at, s.chat_ended_at),
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
    col(
        "consultant_side_fallback",
        "Preferred side: 1 if the model's choice of side failed and the consultant argued the true side.",
    ),
    col("consultant_correct", "Consultancy: 1 if the consultant argued the true side."),
    col("phase", "How far the participant got: initial, chat, final or done."),
    col("initial_answer", "Judgement before the protocol: true or false."),
    col("initial_confidence", "Confidence before, 0-100 %, in the answer given."),
    col("initial_p_correct", "initial_confidence / 100, read as final_p_correct is."),
    col("initial_correct", "1 if the initial answer matches the truth label."),
    col("final_answer", "Judgement after the protocol."),
    col("final_confidence", "Confidence after, 0-100 %, in the answer given (asked as paper 001 asks it)."),
    col(
        "final_p_correct",
        "final_confidence / 100: the probability the participant gives that their final answer is "
        "right (so P(true) = p for a 'true' answer, 1 - p for 'false'). The Brier score is the mean of "
        "(p - final_correct)^2, equal to the mean of (P(true) - truth)^2; calibration bins p in tenths "
        "against the share correct.",
    ),
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


def live_turn_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
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
        LiveTurn.objects.filter(analysed("session__participant__"), session__participant__study=study)
        .select_related("session__participant", "session__claim")
        .order_by("session_id", "seq")
    )[window]
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


CLAIM_JUDGEMENTS = Table(
    "claim_judgements",
    "One row per claim judged in a live debate or consultancy (design B).",
    CLAIM_JUDGEMENT_COLUMNS,
    claim_judgement_rows,
    windowed=True,
    kinds=frozenset({"claim_session"}),
)
LIVE_TURNS = Table(
    "live_turns",
    "One row per turn of a live debate or consultancy.",
    LIVE_TURN_COLUMNS,
    live_turn_rows,
    windowed=True,
    kinds=frozenset({"claim_session"}),
)
