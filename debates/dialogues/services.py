"""Design A's services: dialogue assignment (places), reading speed, judgements and bias
reports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import F, Q, QuerySet

from debates.draws import draw_record, same_sequence, sequence_key
from debates.models import (
    BiasReport,
    Case,
    ConditionTarget,
    Dialogue,
    DialogueAssignment,
    Judgement,
    StudyDialogue,
    Turn,
    count_words,
)
from debates.versions import next_version
from participants.models import Exclusion, Participant
from participants.places import PlaceKind, least_filled, places_held
from participants.services import exclusion_add, exclusion_revoke
from studies.models import Study
from studies.randomness import study_rng
from studies.registry import StepContext, StepUnavailable
from studies.snapshot import digest


def dialogue_fill(study: Study, now: datetime, *, exclude: Participant | None = None) -> dict[int, int]:
    """Places held per study dialogue: completed participants (excluded ones too when the
    study's exclusions do not free places) plus unexpired leases."""
    rows = DialogueAssignment.objects.filter(study_dialogue__study=study)
    hold = not study.exclusion_frees_place
    return places_held(rows, "study_dialogue", now, exclude=exclude, excluded_hold=hold)


def _locked_slots(study: Study) -> list[StudyDialogue]:
    # Row locks on the study's dialogue slots serialise assignment per study on PostgreSQL;
    # on SQLite the IMMEDIATE transaction already holds the database write lock.
    # A dialogue that failed the quality check gets no participants unless overridden.
    return list(
        StudyDialogue.objects.select_for_update()
        .filter(study=study, active=True)
        .exclude(dialogue__quality_passed=False, dialogue__quality_override=False)
        .select_related("dialogue")
        .order_by("id")
    )


@dataclass
class Quotas:
    """Design A's places: a target per condition (set by the experimenter, or the sum of its
    dialogues' targets) and per dialogue (its own target; the study's target per item when
    its condition has none; no limit of its own when its condition has a target)."""

    slots: list[StudyDialogue]
    fill: dict[int, int]
    condition_targets: dict[str, int]
    default: int

    def item_target(self, slot: StudyDialogue) -> int | None:
        if slot.target is not None:
            return slot.target
        return None if slot.dialogue.condition in self.condition_targets else self.default

    def condition_target(self, condition: str) -> int:
        if condition in self.condition_targets:
            return self.condition_targets[condition]
        return sum(self.item_target(s) or 0 for s in self.slots if s.dialogue.condition == condition)

    def condition_fill(self, condition: str) -> int:
        return sum(self.fill.get(s.pk, 0) for s in self.slots if s.dialogue.condition == condition)

    def has_room(self, slot: StudyDialogue) -> bool:
        cap, condition = self.item_target(slot), slot.dialogue.condition
        item_open = cap is None or self.fill.get(slot.pk, 0) < cap
        return item_open and self.condition_fill(condition) < self.condition_target(condition)

    def pick(self, rng, preview: bool) -> StudyDialogue | None:
        """The least-filled condition with room, then its least-filled dialogue with room."""
        open_slots = [s for s in self.slots if self.has_room(s)] or (self.slots if preview else [])
        conditions = sorted({s.dialogue.condition for s in open_slots})
        cond_fill = {c: self.condition_fill(c) for c in conditions}
        chosen = least_filled(conditions, cond_fill, self.condition_target, rng=rng, preview=preview)
        if not chosen:
            return None
        within = {s.pk: s for s in open_slots if s.dialogue.condition == chosen[0]}
        caps = {pk: self.item_target(s) for pk, s in within.items()}
        picked = least_filled(list(within), self.fill, lambda pk: caps[pk], rng=rng, preview=True)
        return within[picked[0]]


def quotas(study: Study, slots: list[StudyDialogue], now: datetime, exclude=None) -> Quotas:
    targets = dict(ConditionTarget.objects.filter(study=study).values_list("condition", "target"))
    return Quotas(slots, dialogue_fill(study, now, exclude=exclude), targets, study.target_per_item)


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
    """Give the participant a dialogue of the least-filled condition with room, the least-
    filled of its dialogues, ties broken by the study's seed (the draw is recorded).

    Raises StepUnavailable(study_full) when no dialogue has room.
    """
    study = participant.study
    with transaction.atomic():
        slots = _locked_slots(study)
        existing = DialogueAssignment.objects.filter(participant=participant).first()
        if existing is not None:  # a second tab won the race
            return DialogueAssignment.objects.select_related("dialogue__case").get(pk=existing.pk)
        if not slots:
            raise StepUnavailable(Participant.Status.STUDY_FULL, "The study has no dialogues.")
        ordinal = DialogueAssignment.objects.filter(
            same_sequence(participant), study_dialogue__study=study
        ).count()
        key = sequence_key(participant, "dialogue", ordinal)
        # Previews and pilots hold no place: they are let in when every place is taken.
        slot = quotas(study, slots, now).pick(
            study_rng(study, *key), participant.is_preview or participant.is_pilot
        )
        if slot is None:
            raise StepUnavailable(Participant.Status.STUDY_FULL, "Every dialogue is full.")
        assignment = DialogueAssignment.objects.create(
            participant=participant,
            study_dialogue=slot,
            dialogue_id=slot.dialogue_id,
            assigned_at=now,
        )
        outcome = {"dialogue": slot.dialogue.slug, "condition": slot.dialogue.condition}
        draw_record(participant=participant, purpose="dialogue", key=key, outcome=outcome)
    return DialogueAssignment.objects.select_related("dialogue__case").get(pk=assignment.pk)


def recall_order_key(assignment: DialogueAssignment) -> tuple:
    """The seed key of the order of a participant's recall options: the ordinal of their
    assignment in the study (pilots' and real participants' counted apart), so the same
    arrivals give the same orders."""
    participant = assignment.participant
    ordinal = DialogueAssignment.objects.filter(
        same_sequence(participant),
        study_dialogue__study_id=assignment.study_dialogue.study_id,
        pk__lt=assignment.pk,
    ).count()
    return sequence_key(participant, "recall_order", ordinal)


def _dialogue_room(participant: Participant, now: datetime) -> bool:
    """A participant back after a time-out keeps their dialogue while it and its condition
    still have room without them."""
    mine = DialogueAssignment.objects.filter(participant=participant).select_related("study_dialogue").first()
    if mine is None:
        return True
    slots = StudyDialogue.objects.filter(study=participant.study).select_related("dialogue")
    room = quotas(participant.study, list(slots), now, exclude=participant)
    slot = next(s for s in room.slots if s.pk == mine.study_dialogue_id)
    return room.has_room(slot)


DIALOGUE_PLACES = PlaceKind(
    name="dialogues",
    rows=lambda participant: DialogueAssignment.objects.filter(study_dialogue__study=participant.study_id),
    key=("study_dialogue",),
    target=lambda participant, key: participant.study.target_per_item,
    lock=lambda participant: _locked_slots(participant.study),
    room=_dialogue_room,
)


def study_dialogues_copy(*, source: Study, copy: Study) -> None:
    """A duplicated study offers the same dialogues (active or not) as its source."""
    StudyDialogue.objects.bulk_create(
        StudyDialogue(study=copy, dialogue_id=row.dialogue_id, active=row.active, target=row.target)
        for row in StudyDialogue.objects.filter(study=source).order_by("id")
    )
    ConditionTarget.objects.bulk_create(
        ConditionTarget(study=copy, condition=row.condition, target=row.target)
        for row in ConditionTarget.objects.filter(study=source)
    )


def reading_record(*, ctx: StepContext, assignment: DialogueAssignment) -> None:
    """Store the dialogue's reading time and words per minute; exclude at the study's cap
    (the judgement page may add re-reading time later: see `reread_record`)."""
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
    _wpm_exclusion_update(ctx, wpm)


def reread_record(*, ctx: StepContext, assignment: DialogueAssignment, client_ms: int | None) -> None:
    """Count the time the debate was open again on the judgement page towards words per
    minute: the page offers the whole debate, and a judge who skimmed it first and read it
    there did read it. The browser's figure is capped by the server's time on the page."""
    if assignment.reading_ms is None or not assignment.words:
        return  # no reading page before this one: nothing to add to
    shown = ctx.participant.shown_at
    server_ms = int((ctx.now - shown).total_seconds() * 1000) if shown else 0
    reread = max(0, min(client_ms or 0, server_ms))
    wpm = (
        assignment.words / ((assignment.reading_ms + reread) / 60000)
        if assignment.reading_ms + reread
        else None
    )
    DialogueAssignment.objects.filter(pk=assignment.pk).update(reread_ms=reread, wpm=wpm)
    assignment.reread_ms, assignment.wpm = reread, wpm
    _wpm_exclusion_update(ctx, wpm)


def _wpm_exclusion_update(ctx: StepContext, wpm: float | None) -> None:
    """Exclude at the study's cap; lift the automatic exclusion when re-reading brought the
    speed under it (an experimenter's own exclusion is never touched)."""
    cap = ctx.study.wpm_cap
    if not cap or wpm is None:
        return
    if wpm >= cap:
        exclusion_add(
            participant=ctx.participant,
            reason=Exclusion.Reason.WPM,
            detail=f"{wpm:.0f} words per minute (cap {cap})",
        )
        return
    automatic = Exclusion.objects.filter(
        participant=ctx.participant, reason=Exclusion.Reason.WPM, revoked_at__isnull=True, created_by=None
    ).first()
    if automatic is not None:
        exclusion_revoke(
            exclusion=automatic, note=f"{wpm:.0f} words per minute with the re-reading on the judgement page"
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


# --- Content that a running study uses --------------------------------------------------


def case_studies(case: Case) -> QuerySet[Study]:
    """The studies with real participants that offer a dialogue of this case: while there
    is one, the case and its dialogues cannot change (a new version can be made)."""
    return Study.objects.filter(locked_at__isnull=False, study_dialogues__dialogue__case=case).distinct()


@transaction.atomic
def case_new_version(*, case: Case) -> Case:
    """A copy of the case and its dialogues under new slugs, free to change."""
    copy = Case.objects.get(pk=case.pk)
    copy.pk, copy.slug = None, next_version(Case, "slug", case.slug)
    copy.save()
    suffix = copy.slug.rsplit("-v", 1)[1]
    for dialogue in case.dialogues.prefetch_related("turns"):
        turns = list(dialogue.turns.all())
        dialogue.pk, dialogue.case, dialogue.slug = None, copy, f"{dialogue.slug}-v{suffix}"[:80]
        dialogue.save()
        Turn.objects.bulk_create(
            Turn(dialogue=dialogue, number=t.number, speaker=t.speaker, text=t.text) for t in turns
        )
    return copy


def dialogue_studies(dialogue: Dialogue) -> QuerySet[Study]:
    """The studies that freeze this dialogue: one with real participants that offers it (its
    snapshot holds the dialogue's hash), or whose participants have read it. Other dialogues of
    the same case stay free to change, so a new version can sit beside the original."""
    read = DialogueAssignment.objects.filter(dialogue=dialogue).values("study_dialogue__study")
    return Study.objects.filter(
        Q(locked_at__isnull=False, study_dialogues__dialogue=dialogue) | Q(pk__in=read)
    ).distinct()


class DialogueFrozen(Exception):
    """The dialogue is frozen by a study that went live: its turns cannot change."""


def dialogue_built_by(dialogue: Dialogue) -> str:
    """The job that built the dialogue ('' for an imported or hand-written one). A built
    dialogue's turns are what its provenance says the model wrote: they never change by hand
    (a new version, which has no provenance, can)."""
    return str((dialogue.provenance or {}).get("job") or "")


@transaction.atomic
def dialogue_new_version(*, dialogue: Dialogue) -> Dialogue:
    """A copy of the dialogue and its turns under a new slug, in the same case, free to change
    (quality scores and provenance stay with the original: the copy is not checked yet)."""
    turns = list(dialogue.turns.order_by("number"))
    copy = Dialogue.objects.get(pk=dialogue.pk)
    copy.pk, copy.slug = None, next_version(Dialogue, "slug", dialogue.slug)
    copy.quality_score = copy.quality_passed = None
    copy.quality_override, copy.quality, copy.provenance = False, {}, {}
    copy.save()
    Turn.objects.bulk_create(
        Turn(dialogue=copy, number=t.number, speaker=t.speaker, text=t.text) for t in turns
    )
    return copy


@transaction.atomic
def dialogue_turns_save(*, dialogue: Dialogue, turns: list[Turn], deleted: list[Turn]) -> None:
    """Save a dialogue's turns as edited (numbers may have been swapped), then its word count.
    Refused (DialogueFrozen) while a study that went live uses it."""
    Dialogue.objects.select_for_update().filter(pk=dialogue.pk).first()
    if dialogue_studies(dialogue).exists():
        raise DialogueFrozen(f"{dialogue.slug} is used by a study that went live: make a new version.")
    if dialogue_built_by(dialogue):
        raise DialogueFrozen(
            f"{dialogue.slug} was built by job {dialogue_built_by(dialogue)}: make a new version."
        )
    Turn.objects.filter(dialogue=dialogue, pk__in=[t.pk for t in deleted if t.pk]).delete()
    # Out of the way first, so that swapped numbers never meet the unique (dialogue, number).
    Turn.objects.filter(dialogue=dialogue).update(number=F("number") + 1000)
    for turn in turns:
        turn.dialogue = dialogue
        turn.save()
    words = sum(count_words(t.text) for t in dialogue.turns.all())
    Dialogue.objects.filter(pk=dialogue.pk).update(words=words)
    dialogue.words = words


CASE_CONTENT = ("title", "story", "suspects", "culprit", "rival", "evidence", "recall")


def snapshot_part(study: Study) -> tuple[str, dict]:
    """For the study's frozen snapshot: the dialogues it offers, each by the hash of what a
    participant reads (its case, design and turns), and the condition targets."""
    rows = StudyDialogue.objects.filter(study=study).select_related("dialogue__case").order_by("id")
    offered = []
    for row in rows:
        d, case = row.dialogue, row.dialogue.case
        content = {
            "case": {
                f: getattr(case, f)
                for f in ("slug", "title", "story", "suspects", "culprit", "rival", "evidence", "recall")
            },
            "dialogue": {f: getattr(d, f) for f in ("slug", "condition", "active_side", "variant", "side_a")},
            "turns": list(d.turns.order_by("number").values_list("speaker", "text")),
        }
        offered.append(
            {"dialogue": d.slug, "active": row.active, "target": row.target, "sha256": digest(content)}
        )
    targets = dict(ConditionTarget.objects.filter(study=study).values_list("condition", "target"))
    return "dialogues", {"offered": offered, "condition_targets": targets}
