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
from django.db.models import QuerySet

from debates.draws import draw_record, same_sequence, sequence_key
from debates.models import Comparison, Instance, InstanceSet
from debates.versions import next_version
from participants.models import Participant
from participants.places import PlaceKind, least_filled, places_held
from participants.services import attention_failures_add
from studies.models import Study
from studies.randomness import study_rng
from studies.registry import StepContext, StepOutcome, StepUnavailable
from studies.snapshot import digest

Choice = Comparison.Choice
CHECKS = [
    ("select 'Both were equally persuasive'", Choice.EQUAL),
    ("select 'Speaker A from Debate 1'", Choice.DEBATE_1),
    ("select 'Speaker A from Debate 2'", Choice.DEBATE_2),
]


# --- Assignment --------------------------------------------------------------------------


def valid_comparisons(instance_set: InstanceSet):
    """The answers that count: real instances, answered by completed, non-excluded annotators
    (never previews nor pilots)."""
    return Comparison.objects.filter(
        instance__instance_set=instance_set,
        is_check=False,
        answered_at__isnull=False,
        participant__status=Participant.Status.COMPLETED,
        participant__excluded=False,
        participant__is_preview=False,
        participant__is_pilot=False,
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
    arrivals, so no instance is ever leased beyond its quota. The draws (ties, the checks'
    places, which excerpt is shown first) come from the study's seed, keyed by the
    annotator's ordinal in the set, and are recorded; `rng` replaces them (tests)."""
    with transaction.atomic():
        pool = InstanceSet.objects.select_for_update().get(pk=instance_set.pk)
        if Comparison.objects.filter(participant=participant, position=position).exists():
            return  # a second tab won the race
        annotators = Comparison.objects.filter(same_sequence(participant), instance__instance_set=pool)
        key = sequence_key(
            participant, "comparisons", pool.slug, annotators.values("participant").distinct().count()
        )
        rng = rng or study_rng(participant.study, *key)
        seen = set(
            Comparison.objects.filter(
                participant__prolific_pid=participant.prolific_pid, instance__instance_set=pool
            ).values_list("instance_id", flat=True)
        )
        fill = instance_fill(pool, now)
        ids = [i for i in pool.instances.values_list("pk", flat=True) if i not in seen]
        chosen = least_filled(
            ids,
            fill,
            pool.annotations_per_instance,
            k=per_annotator,
            preview=participant.is_preview or participant.is_pilot,  # they hold no place
            rng=rng,
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
        numbers = dict(pool.instances.values_list("pk", "number"))
        rows = Comparison.objects.filter(participant=participant, position=position).order_by("order")
        shown = [
            {"instance": numbers[c.instance_id], "check": c.is_check, "swapped": c.swapped} for c in rows
        ]
        draw_record(participant=participant, purpose="comparisons", key=key, outcome={"sequence": shown})


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


# --- Content that a running study uses --------------------------------------------------


def instance_set_studies(pool: InstanceSet) -> QuerySet[Study]:
    """The studies with real participants whose pairwise steps draw from this set."""
    return Study.objects.filter(
        locked_at__isnull=False, steps__kind="pairwise", steps__config__instance_set=pool.slug
    ).distinct()


@transaction.atomic
def instance_set_new_version(*, pool: InstanceSet) -> InstanceSet:
    """A copy of the set (its excerpts and instances) under a new slug, free to rebuild."""
    copy = InstanceSet.objects.get(pk=pool.pk)
    copy.pk, copy.slug = None, next_version(InstanceSet, "slug", pool.slug)
    copy.save()
    excerpts = {}
    for excerpt in pool.excerpts.all():
        old = excerpt.pk
        excerpt.pk, excerpt.instance_set = None, copy
        excerpt.save()
        excerpts[old] = excerpt
    Instance.objects.bulk_create(
        Instance(
            instance_set=copy,
            number=i.number,
            excerpt_1=excerpts[i.excerpt_1_id],
            excerpt_2=excerpts[i.excerpt_2_id],
            stance=i.stance,
            interlocutor_1=i.interlocutor_1,
            interlocutor_2=i.interlocutor_2,
        )
        for i in pool.instances.all()
    )
    return copy


def snapshot_part(study: Study) -> tuple[str, dict]:
    """For the study's frozen snapshot: the instance sets its steps draw from, by the hash of
    their excerpts and instances."""
    named = {s.config.get("instance_set") for s in study.steps.filter(kind="pairwise")}
    sets = []
    for pool in InstanceSet.objects.filter(slug__in=named).order_by("slug"):
        content = {
            "set": {
                f: getattr(pool, f)
                for f in ("slug", "seed", "excerpt_turns", "per_pair", "annotations_per_instance")
            },
            "excerpts": list(
                pool.excerpts.order_by("key").values_list("key", "speaker_a", "stance", "turns")
            ),
            "instances": list(
                pool.instances.order_by("number").values_list("number", "excerpt_1__key", "excerpt_2__key")
            ),
        }
        sets.append({"instance_set": pool.slug, "sha256": digest(content)})
    return "pairwise", {"instance_sets": sets}
