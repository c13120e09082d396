"""Design D's services: which comparisons an annotator gets and what their answers count for.

Each annotator gets n instances and j attention checks; each instance collects exactly r
valid annotations (completed, checks passed, not excluded) plus live leases; no annotator
(by PROLIFIC_PID) sees an instance twice in a pool.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime

from django.db import transaction

from debates.models import Comparison, InstanceSet
from participants.models import Participant
from participants.places import PlaceKind, least_filled, places_held
from participants.services import attention_failures_add
from studies.registry import StepContext, StepOutcome, StepUnavailable

Choice = Comparison.Choice
CHECKS = [
    ("select 'Both were equally persuasive'", Choice.EQUAL),
    ("select 'Speaker A from Debate 1'", Choice.DEBATE_1),
    ("select 'Speaker A from Debate 2'", Choice.DEBATE_2),
]


# --- Assignment --------------------------------------------------------------------------


def valid_comparisons(instance_set: InstanceSet):
    """The answers that count: real instances, answered by completed, non-excluded annotators
    (never previews)."""
    return Comparison.objects.filter(
        instance__instance_set=instance_set,
        is_check=False,
        answered_at__isnull=False,
        participant__status=Participant.Status.COMPLETED,
        participant__excluded=False,
        participant__is_preview=False,
    )


def valid_per_instance(instance_set: InstanceSet) -> Counter:
    return Counter(valid_comparisons(instance_set).values_list("instance_id", flat=True))


def instance_fill(instance_set: InstanceSet, now: datetime) -> dict[int, int]:
    """Valid annotations plus live leases, per instance (checks never count)."""
    rows = Comparison.objects.filter(instance__instance_set=instance_set, is_check=False)
    return places_held(rows, "instance", now)


def comparisons_for(
    ctx: StepContext, instance_set: InstanceSet, per_annotator: int, checks: int
) -> list[Comparison]:
    cached = ctx.extra.get("comparisons")
    if cached is not None:
        return cached
    query = Comparison.objects.filter(participant=ctx.participant, position=ctx.position).select_related(
        "instance__excerpt_1", "instance__excerpt_2"
    )
    found = list(query.order_by("order"))
    if not found:
        comparisons_assign(
            participant=ctx.participant,
            position=ctx.position,
            instance_set=instance_set,
            per_annotator=per_annotator,
            checks=checks,
            now=ctx.now,
        )
        found = list(query.order_by("order"))
    ctx.extra["comparisons"] = found
    return found


def comparisons_assign(
    *,
    participant: Participant,
    position: int,
    instance_set: InstanceSet,
    per_annotator: int,
    checks: int,
    now: datetime,
    rng: random.Random | None = None,
) -> None:
    """Lease the least-annotated instances this annotator has not seen, and interleave the
    attention checks at random positions. The set's row lock serialises concurrent
    arrivals, so no instance is ever leased beyond its quota."""
    rng = rng or random.Random()  # noqa: S311 (order and display, not security)
    with transaction.atomic():
        pool = InstanceSet.objects.select_for_update().get(pk=instance_set.pk)
        if Comparison.objects.filter(participant=participant, position=position).exists():
            return  # a second tab won the race
        seen = set(
            Comparison.objects.filter(
                participant__prolific_pid=participant.prolific_pid, instance__instance_set=pool
            ).values_list("instance_id", flat=True)
        )
        fill = instance_fill(pool, now)
        ids = [i for i in pool.instances.values_list("pk", flat=True) if i not in seen]
        chosen = least_filled(
            ids, fill, pool.annotations_per_instance, k=per_annotator, preview=participant.is_preview, rng=rng
        )
        if not chosen:
            raise StepUnavailable(Participant.Status.STUDY_FULL, "Every instance has its annotations.")
        spare = [i for i in ids if i not in chosen] or chosen
        items = with_checks(chosen, spare, checks, rng)
        Comparison.objects.bulk_create(
            Comparison(
                participant=participant,
                position=position,
                order=order,
                instance_id=instance_id,
                swapped=rng.random() < 0.5,
                is_check=check is not None,
                check_instruction=check[0] if check else "",
                check_answer=check[1] if check else "",
                served_at=now,
            )
            for order, (instance_id, check) in enumerate(items, start=1)
        )


def with_checks(
    chosen: list[int], spare: list[int], checks: int, rng: random.Random
) -> list[tuple[int, tuple[str, str] | None]]:
    """The annotator's sequence: the chosen instances and `checks` attention checks (each on
    an instance from `spare`, with an instruction), in a random order."""
    items = [(i, None) for i in chosen] + [(rng.choice(spare), rng.choice(CHECKS)) for _ in range(checks)]
    rng.shuffle(items)
    return items


def comparison_answer(
    *, ctx: StepContext, comparison: Comparison, choice: str, confidence: int
) -> StepOutcome | None:
    passed = (choice == comparison.check_answer) if comparison.is_check else None
    answered = Comparison.objects.filter(pk=comparison.pk, answered_at__isnull=True).update(
        choice=choice, confidence=confidence, check_passed=passed, answered_at=ctx.now
    )
    if not answered:
        return None
    Comparison.objects.filter(
        participant=ctx.participant, position=ctx.position, order=comparison.order + 1
    ).update(served_at=ctx.now)
    if comparison.is_check and not passed:
        detail = f"comparison {comparison.order}: chose {choice}, instructed {comparison.check_answer}"
        return attention_failures_add(ctx=ctx, failures=1, detail=detail)
    return None


def _locked_sets(participant: Participant) -> list[InstanceSet]:
    set_ids = Comparison.objects.filter(participant=participant).values_list("instance__instance_set_id")
    return list(InstanceSet.objects.select_for_update().filter(pk__in=set_ids).order_by("pk"))


def _annotations_wanted(participant: Participant, key: tuple) -> int:
    return InstanceSet.objects.get(instances=key[0]).annotations_per_instance


INSTANCE_PLACES = PlaceKind(
    name="comparison instances",
    rows=lambda participant: Comparison.objects.filter(is_check=False),
    key=("instance",),
    target=_annotations_wanted,
    lock=_locked_sets,
)
