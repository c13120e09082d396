"""Design A's part of the experimenter's preview: read a chosen dialogue, or a dialogue of a
chosen condition, instead of the one assignment would give. A preview holds no place."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from debates.dialogues.services import _locked_slots, quotas
from debates.draws import draw_record, same_sequence, sequence_key
from debates.models import DialogueAssignment, StudyDialogue
from participants.models import Participant
from studies.randomness import study_rng


def preview_dialogue_assign(
    *,
    participant: Participant,
    now: datetime,
    condition: str = "",
    study_dialogue: StudyDialogue | None = None,
) -> DialogueAssignment:
    """The preview reads `study_dialogue`, or the dialogue of `condition` that assignment
    would pick among that condition's (least filled, ties by the study's seed in the
    previews' own sequence, recorded as a draw)."""
    if not participant.is_preview:
        raise ValueError("only a preview chooses its dialogue")
    study = participant.study
    with transaction.atomic():
        if study_dialogue is None:
            slots = [s for s in _locked_slots(study) if s.dialogue.condition == condition]
            if not slots:
                raise ValueError(f"the study offers no active dialogue of the condition {condition!r}")
            ordinal = DialogueAssignment.objects.filter(
                same_sequence(participant), study_dialogue__study=study
            ).count()
            key = sequence_key(participant, "dialogue", ordinal)
            study_dialogue = quotas(study, slots, now).pick(study_rng(study, *key), preview=True)
            outcome = {"dialogue": study_dialogue.dialogue.slug, "condition": condition}
            draw_record(participant=participant, purpose="dialogue", key=key, outcome=outcome)
        return DialogueAssignment.objects.create(
            participant=participant,
            study_dialogue=study_dialogue,
            dialogue_id=study_dialogue.dialogue_id,
            assigned_at=now,
        )
