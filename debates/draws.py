"""Recording a study's random draws, every design alike: what was drawn, with which key of
the study's seed (see studies.randomness), and the outcome."""

from __future__ import annotations

from django.utils import timezone

from debates.models import RandomDraw
from participants.models import Participant


def draw_record(*, participant: Participant, purpose: str, key: tuple, outcome: dict) -> RandomDraw:
    return RandomDraw.objects.create(
        participant=participant,
        purpose=purpose,
        key=":".join(map(str, key))[:200],
        outcome=outcome,
        created_at=timezone.now(),
    )
