"""Hundreds of annotators at once on PostgreSQL, some failing their checks and some
returning: every instance still ends with exactly r valid annotations."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from debates.demo import loader
from debates.models import Comparison, InstanceSet
from debates.pairwise.services import valid_per_instance
from participants.models import Participant
from participants.services import participant_mark_returned
from tests.support.cast import Walker
from tests.support.threads import pool_size, run_threads

R = 3
WRONG = {"debate1": "debate2", "debate2": "equal", "equal": "debate1"}


def annotate(w: Walker, behaviour: str) -> None:
    """Answer every comparison; 'fail' answers both checks against their instruction."""
    for _ in range(10):
        _, form = w.page()
        if not form.position or form.kind != "pairwise":
            break
        current = Comparison.objects.get(participant__prolific_pid=w.pid, order=form.hidden["_item"])
        answer = current.check_answer if current.is_check else random.choice(list(WRONG))  # noqa: S311
        if current.is_check and behaviour == "fail":
            answer = WRONG[answer]
        w.submit({"choice": answer}, form)
        if w.exit_url:
            return
    w.walk()


def arrive(w: Walker) -> None:
    w.enter()
    w.submit()  # consent
    w.page()  # the comparisons step leases its instances, or says the study is full


def finish(w: Walker, behaviour: str) -> None:
    if behaviour == "return":
        participant_mark_returned(participant=Participant.objects.get(prolific_pid=w.pid))
    else:
        annotate(w, behaviour)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_200_annotators_at_once_leave_every_instance_with_exactly_r_valid_annotations():
    study = loader.pairs_study(set_overrides={"annotations_per_instance": R})
    pool = InstanceSet.objects.get()
    instances = pool.instances.count()
    rng = random.Random(5)  # noqa: S311
    waves = 0
    with pool_size(48):
        while sum(valid_per_instance(pool).values()) < instances * R:
            waves += 1
            assert waves <= 8, valid_per_instance(pool)
            # Two waves of 200 at once, some failing and returning; then small waves that
            # complete, to fill what the failures and returns gave back.
            crowd = waves <= 2
            walkers = [Walker(study) for _ in range(200 if crowd else 20)]
            errors = run_threads(lambda n, ws=walkers: arrive(ws[n]), len(walkers))
            assert not errors, errors[0]
            leased = [
                w for w in walkers if Comparison.objects.filter(participant__prolific_pid=w.pid).exists()
            ]
            held = Counter(
                Comparison.objects.filter(instance__instance_set=pool, is_check=False)
                .filter(participant__status__in=["active", "completed"], participant__excluded=False)
                .values_list("instance_id", flat=True)
            )
            assert max(held.values()) <= R  # leases never exceed the quota
            mix = ["complete", "complete", "fail", "return"] if crowd else ["complete"]
            behaviours = [rng.choice(mix) for _ in leased]

            errors = run_threads(lambda n, ws=leased, bs=behaviours: finish(ws[n], bs[n]), len(leased))
            assert not errors, errors[0]
    counts = valid_per_instance(pool)
    assert len(counts) == instances and set(counts.values()) == {R}
    failed = Participant.objects.filter(study=study, status=Participant.Status.FAILED_CHECK)
    assert failed.exists() and Participant.objects.filter(status=Participant.Status.RETURNED).exists()
    # Answers of failed annotators are kept, flagged, and left out of the counts.
    assert Comparison.objects.filter(participant__in=failed, check_passed=False).exists()
    pairs = Comparison.objects.filter(instance__instance_set=pool, is_check=False).values_list(
        "participant__prolific_pid", "instance_id"
    )
    assert len(pairs) == len(set(pairs))  # nobody saw an instance twice
