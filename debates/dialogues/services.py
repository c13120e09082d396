"""Design A's services: dialogue assignment (places), reading speed, judgements and bias
reports."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from debates.models import BiasReport, Dialogue, DialogueAssignment, Judgement, StudyDialogue
from participants.models import Exclusion, Participant
from participants.places import PlaceKind, least_filled, places_held
from participants.services import exclusion_add
from studies.models import Study
from studies.registry import StepContext, StepUnavailable


def dialogue_fill(study: Study, now: datetime) -> dict[int, int]:
    """Places held per study dialogue: completed non-excluded plus unexpired leases."""
    return places_held(DialogueAssignment.objects.filter(study_dialogue__study=study), "study_dialogue", now)


def _locked_slots(study: Study) -> list[StudyDialogue]:
    # Row locks on the study's dialogue slots serialise assignment per study on PostgreSQL;
    # on SQLite the IMMEDIATE transaction already holds the database write lock.
    return list(StudyDialogue.objects.select_for_update().filter(study=study, active=True).order_by("id"))


def dialogue_assignment_for(ctx: StepContext) -> DialogueAssignment:
    """The participant's dialogue, assigned on first need (never at the study link)."""
    cached = ctx.extra.get("assignment")
    if cached is not None:
        return cached
    assignment = (
        DialogueAssignment.objects.select_related("dialogue__case")
        .filter(participant=ctx.participant)
        .first()
    )
    if assignment is None:
        assignment = dialogue_assign(participant=ctx.participant, now=ctx.now)
    ctx.extra["assignment"] = assignment
    return assignment


def dialogue_assign(*, participant: Participant, now: datetime) -> DialogueAssignment:
    """Give the participant the least-filled dialogue that still has room.

    Raises StepUnavailable(study_full) when every dialogue has its target of places.
    """
    study = participant.study
    with transaction.atomic():
        slots = _locked_slots(study)
        existing = DialogueAssignment.objects.filter(participant=participant).first()
        if existing is not None:  # a second tab won the race
            return DialogueAssignment.objects.select_related("dialogue__case").get(pk=existing.pk)
        if not slots:
            raise StepUnavailable(Participant.Status.STUDY_FULL, "The study has no dialogues.")
        fill = dialogue_fill(study, now)
        by_pk = {s.pk: s for s in slots}
        chosen = least_filled(list(by_pk), fill, study.target_per_item, preview=participant.is_preview)
        if not chosen:
            raise StepUnavailable(Participant.Status.STUDY_FULL, "Every dialogue is full.")
        slot = by_pk[chosen[0]]
        assignment = DialogueAssignment.objects.create(
            participant=participant,
            study_dialogue=slot,
            dialogue_id=slot.dialogue_id,
            assigned_at=now,
        )
    return DialogueAssignment.objects.select_related("dialogue__case").get(pk=assignment.pk)


DIALOGUE_PLACES = PlaceKind(
    name="dialogues",
    rows=lambda participant: DialogueAssignment.objects.filter(study_dialogue__study=participant.study_id),
    key=("study_dialogue",),
    target=lambda participant, key: participant.study.target_per_item,
    lock=lambda participant: _locked_slots(participant.study),
)


def study_dialogues_copy(*, source: Study, copy: Study) -> None:
    """A duplicated study offers the same dialogues (active or not) as its source."""
    StudyDialogue.objects.bulk_create(
        StudyDialogue(study=copy, dialogue_id=row.dialogue_id, active=row.active)
        for row in StudyDialogue.objects.filter(study=source).order_by("id")
    )


def reading_record(*, ctx: StepContext, assignment: DialogueAssignment) -> None:
    """Store the dialogue's reading time and words per minute; exclude at the study's cap."""
    shown = ctx.participant.shown_at
    server_ms = int((ctx.now - shown).total_seconds() * 1000) if shown else None
    client_ms = ctx.timing.active_ms if ctx.timing else None
    reading_ms = server_ms
    # The browser's visible-and-focused time is the better measure when it is plausible.
    if client_ms and (server_ms is None or client_ms <= server_ms + 5000):
        reading_ms = client_ms
    words = assignment.dialogue.words
    wpm = words / (reading_ms / 60000) if reading_ms else None
    DialogueAssignment.objects.filter(pk=assignment.pk).update(
        words=words,
        reading_server_ms=server_ms,
        reading_client_ms=client_ms,
        reading_ms=reading_ms,
        wpm=wpm,
    )
    cap = ctx.study.wpm_cap
    if cap and wpm is not None and wpm >= cap:
        exclusion_add(
            participant=ctx.participant,
            reason=Exclusion.Reason.WPM,
            detail=f"{wpm:.0f} words per minute (cap {cap})",
        )


def judgement_record(
    *, ctx: StepContext, dialogue: Dialogue, side: str, confidence: int, reasoning: str
) -> Judgement:
    return Judgement.objects.create(
        participant=ctx.participant,
        dialogue=dialogue,
        chosen_side=side,
        correct=side == dialogue.culprit_side,
        confidence=confidence,
        reasoning=reasoning,
        created_at=ctx.now,
    )


def bias_report_record(
    *, ctx: StepContext, dialogue: Dialogue, present: str, side: str, bias_type: str
) -> BiasReport:
    return BiasReport.objects.create(
        participant=ctx.participant,
        dialogue=dialogue,
        present=present,
        side=side,
        bias_type=bias_type,
        created_at=ctx.now,
    )


def recall_failed(*, ctx: StepContext, detail: str) -> None:
    exclusion_add(participant=ctx.participant, reason=Exclusion.Reason.RECALL, detail=detail)
