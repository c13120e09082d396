"""Design D's part of the experimenter's preview: compare a chosen pair (an instance of the step's
instance set) instead of the ones assignment would give. A preview holds no place."""

from __future__ import annotations

from datetime import datetime

from debates.models import Comparison, Instance
from participants.models import Participant


def preview_comparison_assign(
    *, participant: Participant, position: int, instance: Instance, now: datetime
) -> Comparison:
    """The preview's comparisons at step `position`: exactly this instance, shown as stored
    (excerpt 1 first), without attention checks; the step ends once it is answered."""
    if not participant.is_preview:
        raise ValueError("only a preview chooses its comparison")
    return Comparison.objects.create(
        participant=participant, position=position, order=1, instance=instance, swapped=False, served_at=now
    )
