"""Design D's export: one row per pairwise comparison."""

from __future__ import annotations

from collections.abc import Iterator

from analysis.exports.table import ALL, CHUNK, Table, analysed, col, flag, iso, seconds_between
from debates.models import Comparison
from studies.models import Study

# --- comparisons (design D) ---------------------------------------------------------------


def comparison_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    queryset = (
        Comparison.objects.filter(analysed(), participant__study=study)
        .select_related("participant", "instance__instance_set", "instance__excerpt_1", "instance__excerpt_2")
        .order_by("participant_id", "position", "order")
    )[window]
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
            "seconds": seconds_between(c.served_at, c.answered_at),
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


COMPARISONS = Table(
    "comparisons",
    "One row per pairwise comparison (design D).",
    COMPARISON_COLUMNS,
    comparison_rows,
    windowed=True,
    kinds=frozenset({"pairwise"}),
)
