"""Design A's export: one row per judgement of a pre-generated dialogue."""

from __future__ import annotations

from collections.abc import Iterator

from analysis.exports.table import ALL, CHUNK, Table, active_exclusions, analysed, col, flag, iso
from debates.models import BiasReport, DialogueAssignment, Judgement
from participants.models import Response
from studies.models import Study

# --- judgements --------------------------------------------------------------------------


def judgement_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    exclusions = active_exclusions(study)
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
        Judgement.objects.filter(analysed(), participant__study=study)
        .select_related("participant", "dialogue__case")
        .order_by("id")
    )[window]
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
            "dialogue_quality": "" if d.quality_score is None else d.quality_score,
            "dialogue_passed": "" if d.quality_passed is None else flag(d.quality_passed),
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
    col("condition", "The condition's slug (paper 000's: baseline, anchoring, fallacy_oversight, …)."),
    col("active_side", "Role carrying the bias: none, culprit or rival."),
    col("variant", "V1 or V2; empty for baseline."),
    col("side_a", "Whom side A argues for: culprit or rival."),
    col("dialogue_quality", "Debate quality of the weaker side, of 30 (empty: never checked)."),
    col("dialogue_passed", "1 if the dialogue passed the quality check, 0 if not, empty if never checked."),
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
    col("bias_type", "If yes: the slug of the condition the participant named, or other."),
    col("bias_presence_correct", "1 if bias_present is yes exactly when the dialogue is biased."),
    col("bias_side_correct", "Biased dialogues only: 1 if bias_side is the biased side."),
    col("bias_type_correct", "Biased dialogues only: 1 if bias_type is the dialogue's condition."),
    col("recall_passed", "1 if the recall check was answered correctly, 0 if not, empty if not reached."),
    col("wpm", "Words per minute on the dialogue, re-reading on the judgement page included."),
    col("created_at", "When the judgement was stored (UTC)."),
]


JUDGEMENTS = Table(
    "judgements",
    "One row per judgement of a dialogue.",
    JUDGEMENT_COLUMNS,
    judgement_rows,
    windowed=True,
    kinds=frozenset({"judgement"}),
)
