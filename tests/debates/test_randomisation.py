"""Faithful allocation: condition and item targets (design A), whether an exclusion frees a
place, every random draw from the study's seed (a rerun with the same seed and arrivals
repeats the assignments of every design, and each draw is recorded), and block
randomisation of debater A's side and of the consultant's correctness (design B)."""

from collections import Counter

import pytest

from debates.demo import loader
from debates.models import (
    Comparison,
    ConditionTarget,
    DialogueAssignment,
    LiveSession,
    RandomDraw,
    StudyClaim,
    StudyDialogue,
)
from participants.models import Exclusion, Participant
from participants.services import exclusion_add
from studies.models import Step, Study
from studies.services import _study_cache
from tests.support.cast import Walker

PIDS = [f"{n:024x}" for n in range(1, 25)]


def arrive(study, pid: str, stop_before: str) -> Walker:
    w = Walker(study, prolific_pid=pid)
    w.enter()
    w.walk(stop_before=stop_before)
    w.page()
    return w


# --- Design A: targets per condition and per dialogue ------------------------------------


@pytest.mark.django_db
class TestConditionTargets:
    def test_the_least_filled_condition_is_filled_first_up_to_its_target(self, mystery_study):
        ConditionTarget.objects.create(study=mystery_study, condition="baseline", target=4)
        ConditionTarget.objects.create(study=mystery_study, condition="anchoring", target=2)
        StudyDialogue.objects.filter(study=mystery_study).exclude(
            dialogue__condition__in=["baseline", "anchoring"]
        ).update(active=False)
        for pid in PIDS[:6]:
            arrive(mystery_study, pid, "The debate")
        by_condition = Counter(DialogueAssignment.objects.values_list("dialogue__condition", flat=True))
        assert by_condition == {"baseline": 4, "anchoring": 2}  # 2 baseline dialogues took 2 each
        per_dialogue = Counter(DialogueAssignment.objects.values_list("dialogue__slug", flat=True))
        assert max(per_dialogue.values()) - min(per_dialogue.values()) <= 1  # even within a condition
        late = arrive(mystery_study, PIDS[6], "The story")
        assert "this study is full" in late.page()[0].content.decode()

    def test_a_dialogue_target_caps_that_dialogue(self, mystery_study):
        first = StudyDialogue.objects.filter(study=mystery_study).order_by("id").first()
        StudyDialogue.objects.filter(study=mystery_study).exclude(pk=first.pk).update(active=False)
        StudyDialogue.objects.filter(pk=first.pk).update(target=2)
        for pid in PIDS[:2]:
            arrive(mystery_study, pid, "The debate")
        assert "this study is full" in arrive(mystery_study, PIDS[2], "The story").page()[0].content.decode()

    def test_the_overview_shows_targets_against_fills(self, experimenter, mystery_study):
        ConditionTarget.objects.create(study=mystery_study, condition="baseline", target=72)
        arrive(mystery_study, PIDS[0], "The debate")
        page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/overview/").content.decode()
        assert "Fill per condition" in page and "/ 72" in page


@pytest.mark.django_db
@pytest.mark.parametrize("frees", [True, False])
def test_an_exclusion_frees_a_place_only_if_the_study_says_so(frees):
    study = loader.mystery_study(target_per_item=1, exclusion_frees_place=frees)
    StudyDialogue.objects.filter(study=study).exclude(
        pk=StudyDialogue.objects.filter(study=study).order_by("id").first().pk
    ).update(active=False)
    first = arrive(study, PIDS[0], "Thank you")
    first.walk()
    exclusion_add(participant=Participant.objects.get(prolific_pid=first.pid), reason=Exclusion.Reason.MANUAL)
    second = arrive(study, PIDS[1], "The debate")
    got_the_place = DialogueAssignment.objects.filter(participant__prolific_pid=second.pid).exists()
    assert got_the_place is frees


# --- Seeds: the same seed and arrivals give the same assignments ---------------------------


def rerun(study: Study, walk_one, seed: int) -> list:
    Study.objects.filter(pk=study.pk).update(seed=seed)
    _study_cache.clear()  # pages read the study row cached for a few seconds
    study.refresh_from_db()
    Participant.objects.filter(study=study).delete()  # a fresh run of the same arrivals
    return [walk_one(study, pid) for pid in PIDS[:12]]


def dialogue_of(study, pid):
    arrive(study, pid, "The debate")
    return DialogueAssignment.objects.get(participant__prolific_pid=pid).dialogue.slug


def claim_session_of(study, pid):
    arrive(study, pid, "Claim 1 of 2")
    s = LiveSession.objects.get(participant__prolific_pid=pid)
    return (s.protocol, s.claim.slug, s.side_a, s.consultant_side)


def comparisons_of(study, pid):
    arrive(study, pid, "About you")
    rows = Comparison.objects.filter(participant__prolific_pid=pid).order_by("order")
    return [(c.instance.number, c.is_check, c.swapped) for c in rows]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("load", "walk_one"),
    [
        (loader.mystery_study, dialogue_of),
        (loader.claim_study, claim_session_of),
        (loader.pairs_study, comparisons_of),
    ],
    ids=["dialogues", "claims", "pairwise"],
)
def test_the_same_seed_and_arrivals_repeat_the_assignments_and_another_seed_does_not(load, walk_one):
    study = load()
    first = rerun(study, walk_one, seed=7)
    assert rerun(study, walk_one, seed=7) == first
    assert rerun(study, walk_one, seed=8) != first
    draws = RandomDraw.objects.filter(participant__study=study)
    assert draws.count() >= 12 and all(d.key and d.outcome for d in draws)


# --- Block randomisation (design B) ---------------------------------------------------------


def only(study, protocols: str, **config) -> None:
    """One claim; the claim steps run `protocols` with the given settings."""
    keep = StudyClaim.objects.filter(study=study).order_by("id").first()
    StudyClaim.objects.filter(study=study).exclude(pk=keep.pk).update(active=False)
    for step in Step.objects.filter(study=study, kind="claim_session"):
        Step.objects.filter(pk=step.pk).update(config={**step.config, "protocols": protocols, **config})


@pytest.mark.django_db
def test_debater_as_side_is_balanced_in_every_block_of_two():
    study = loader.claim_study(target_per_item=50)
    only(study, "debate")
    sides = [claim_session_of(study, pid)[2] for pid in PIDS[:8]]
    assert Counter(sides) == {"true": 4, "false": 4}
    assert all({sides[i], sides[i + 1]} == {"true", "false"} for i in range(0, 8, 2))
    draw = RandomDraw.objects.filter(purpose="side_a").first()
    assert draw.outcome["block_size"] == 2 and draw.outcome["share"] == "1/2"


@pytest.mark.django_db
def test_the_consultants_correctness_follows_the_share_in_every_block():
    study = loader.claim_study(target_per_item=50)
    only(study, "consultancy", consultant_side="random", correct_share=0.25)
    claim = StudyClaim.objects.filter(study=study, active=True).get().claim
    sides = [claim_session_of(study, pid)[3] for pid in PIDS[:8]]
    right = [side == claim.true_side for side in sides]
    assert right[:4].count(True) == 1 and right[4:].count(True) == 1  # blocks of 4, one correct


@pytest.mark.django_db
def test_the_draws_are_exported_with_their_keys_and_outcomes(experimenter, mystery_study):
    import csv
    import io
    import json

    from tests.support.downloads import streamed_body

    walkers = [arrive(mystery_study, pid, "The debate") for pid in PIDS[:3]]
    response = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/export/draws.csv")
    rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
    dialogue_draws = [r for r in rows if r["purpose"] == "dialogue"]
    assert [r["prolific_pid"] for r in dialogue_draws] == [w.pid for w in walkers]
    for row in dialogue_draws:
        assigned = DialogueAssignment.objects.get(participant_id=int(row["participant_id"])).dialogue.slug
        assert json.loads(row["outcome"])["dialogue"] == assigned
        assert row["study_sha256"] == mystery_study.snapshot_sha256 and row["key"]
