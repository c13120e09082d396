"""Changing a study's steps through `studies.services`: where a moved, added or deleted step
ends up, and that a study participants have entered cannot change."""

import pytest

from studies.models import Step
from studies.services import StudyLocked, steps_arrange
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study

TITLES = ["Consent", "One", "Two", "Three", "Thanks"]


@pytest.fixture
def study(db):
    middle = [{"kind": "instructions", "title": title, "config": {"text": "t"}} for title in TITLES[1:4]]
    return build_study([CONSENT_STEP, *middle, DEBRIEF_STEP], status="draft")


def titles(study) -> list[str]:
    return list(Step.objects.filter(study=study).order_by("position").values_list("title", flat=True))


def moved(study, title: str, to: int) -> Step:
    step = Step.objects.get(study=study, title=title)
    step.position = to
    return step


@pytest.mark.parametrize(
    ("title", "to", "expected"),
    [
        ("Three", 2, ["Consent", "Three", "One", "Two", "Thanks"]),  # up
        ("One", 4, ["Consent", "Two", "Three", "One", "Thanks"]),  # down
        ("Consent", 2, ["One", "Consent", "Two", "Three", "Thanks"]),  # down by one
        ("Thanks", 1, ["Thanks", "Consent", "One", "Two", "Three"]),  # to the top
        ("Two", 99, ["Consent", "One", "Three", "Thanks", "Two"]),  # past the end
        ("Two", 3, TITLES),  # where it is
    ],
)
def test_a_step_moves_to_the_position_it_asks_for(study, title, to, expected):
    steps_arrange(study=study, saved=[moved(study, title, to)])
    assert titles(study) == expected
    assert list(Step.objects.filter(study=study).order_by("position").values_list("position", flat=True)) == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_two_steps_swap(study):
    steps_arrange(study=study, saved=[moved(study, "One", 3), moved(study, "Two", 2)])
    assert titles(study) == ["Consent", "Two", "One", "Three", "Thanks"]


def test_a_new_step_is_inserted_with_its_kinds_defaults_and_a_deleted_one_closes_its_gap(study):
    new = Step(study=study, kind="debrief", title="New", position=2)
    steps_arrange(study=study, saved=[new], deleted=[Step.objects.get(study=study, title="Three")])
    assert titles(study) == ["Consent", "New", "One", "Two", "Thanks"]
    assert new.position == 2 and new.config["button_label"]


def test_the_steps_of_a_study_participants_entered_cannot_change(study):
    study.status = "live"
    study.save()
    Walker(study).enter()
    with pytest.raises(StudyLocked):
        steps_arrange(study=study, saved=[moved(study, "Three", 2)])
    assert titles(study) == TITLES
