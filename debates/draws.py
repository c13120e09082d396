"""Recording a study's random draws, every design alike: what was drawn, with which key of
the study's seed (see studies.randomness), and the outcome.

Pilots, and the experimenter's previews, draw from sequences of their own: the ordinals that
key the draws count real participants, pilots and previews apart (`same_sequence`), and a
pilot's keys start with "pilot", a preview's with "preview" (`sequence_key`), so neither ever
takes, nor shifts, a real participant's draw."""

from __future__ import annotations

from django.db.models import Q
from django.utils import timezone

from debates.models import RandomDraw
from participants.models import Participant


def _sequence(participant: Participant) -> str:
    return "pilot" if participant.is_pilot else "preview" if participant.is_preview else ""


def sequence_key(participant: Participant, *key: object) -> tuple:
    """The key of a draw in the participant's sequence (a real participant's key unchanged)."""
    sequence = _sequence(participant)
    return (sequence, *key) if sequence else key


def same_sequence(participant: Participant, path: str = "participant") -> Q:
    """Rows (reaching their participant through `path`) of the participant's sequence: the
    rows an ordinal of the participant's draws counts."""
    return Q(**{f"{path}__is_pilot": participant.is_pilot, f"{path}__is_preview": participant.is_preview})


def draw_record(*, participant: Participant, purpose: str, key: tuple, outcome: dict) -> RandomDraw:
    return RandomDraw.objects.create(
        participant=participant,
        purpose=purpose,
        key=":".join(map(str, key))[:200],
        outcome=outcome,
        created_at=timezone.now(),
    )
