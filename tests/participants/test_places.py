"""The assignment seam every design uses: counting places and taking the least-filled."""

import random
from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import DialogueAssignment
from participants.models import Participant
from participants.places import least_filled, places_held
from tests.support.cast import Walker


def test_the_least_filled_candidates_with_room_come_first():
    held = {"a": 2, "b": 0, "c": 1, "d": 3}
    assert least_filled(list(held), held, target=3, k=3, rng=random.Random(1)) == ["b", "c", "a"]
    assert least_filled(list(held), held, target=1, k=3) == ["b"]


def test_ties_are_broken_at_random_and_seeded_draws_repeat():
    candidates = list(range(20))
    draws = {
        tuple(least_filled(candidates, {}, target=1, k=3, rng=random.Random(seed))) for seed in range(10)
    }
    assert len(draws) > 1  # ties are not always broken the same way
    first = least_filled(candidates, {}, target=1, k=3, rng=random.Random(7))
    assert least_filled(candidates, {}, target=1, k=3, rng=random.Random(7)) == first


def test_only_a_preview_may_take_a_full_place():
    held = {"a": 2, "b": 2}
    assert least_filled(list(held), held, target=2) == []
    assert least_filled(list(held), held, target=2, preview=True) in (["a"], ["b"])


@pytest.mark.django_db
def test_places_count_completed_and_leased_participants_not_the_rest(mystery_study):
    walkers = [Walker(mystery_study) for _ in range(4)]
    for w in walkers:
        w.enter()
        w.walk(stop_before="The debate")  # each holds a dialogue
    done, expired, excluded, returned = (Participant.objects.get(prolific_pid=w.pid) for w in walkers)
    Participant.objects.filter(pk=done.pk).update(status="completed")
    Participant.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    Participant.objects.filter(pk=excluded.pk).update(status="completed", excluded=True)
    Participant.objects.filter(pk=returned.pk).update(status="returned")
    rows = DialogueAssignment.objects.filter(study_dialogue__study=mystery_study)
    assert sum(places_held(rows, "study_dialogue", timezone.now()).values()) == 1  # the completed one
    assert sum(places_held(rows, "study_dialogue", timezone.now(), exclude=done).values()) == 0
