"""Pilots never disturb the real data: they draw from a sequence of their own (a real
participant's random draws are the same with or without pilots arriving among them), they are
let in when every place is taken (they hold none), and they are counted apart in the admin (the
participants list's pilot / real filter, the overview and the study list)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from debates.demo import loader
from debates.models import DialogueAssignment, RandomDraw, StudyDialogue
from participants.models import Participant
from participants.services import pilot_token
from studies.models import Study
from studies.services import _study_cache
from tests.support.cast import Walker, entry_url, pid

pytestmark = pytest.mark.django_db

PIDS = [f"{n:024x}" for n in range(1, 13)]


class PilotWalker(Walker):
    """A pilot driving the real views: the study link carries the signed pilot token."""

    def enter(self):
        response = self.client.get(f"{entry_url(self.study, self.pid)}&pilot={pilot_token(self.study)}")
        assert response.status_code == 302, response.content[:500]
        self.url = response["Location"]
        return response


class PreviewWalker(Walker):
    """The experimenter previewing the study (a throw-away participant, never counted)."""

    def enter(self):
        response = self.client.get(reverse("preview", args=[self.study.slug]))
        assert response.status_code == 302, response.content[:500]
        self.url = response["Location"]
        self.pid = Participant.objects.filter(study=self.study, is_preview=True).latest("pk").prolific_pid
        return response


def arrive(study: Study, who: Walker, stop_before: str | None) -> Walker:
    who.enter()
    who.walk(stop_before=stop_before)
    return who


def real_draws(study: Study) -> list[tuple]:
    """Every real participant's draws, in the order they were drawn."""
    draws = RandomDraw.objects.filter(
        participant__study=study, participant__is_pilot=False, participant__is_preview=False
    ).order_by("pk")
    return list(draws.values_list("participant__prolific_pid", "purpose", "key", "outcome"))


def run(study: Study, stop_before: str | None, *, pilots_between: int, between=None) -> list[tuple]:
    """Twelve real arrivals, with `pilots_between` pilots (or others made by `between()`)
    arriving before each of them."""
    Participant.objects.filter(study=study).delete()
    _study_cache.clear()
    for real in PIDS:
        for _ in range(pilots_between):
            arrive(study, between() if between else PilotWalker(study, prolific_pid=pid()), stop_before)
        arrive(study, Walker(study, prolific_pid=real), stop_before)
    return real_draws(study)


@pytest.mark.parametrize(
    ("load", "stop_before"),
    [
        (lambda: loader.mystery_study(target_per_item=50), None),  # the dialogue and the recall order
        (lambda: loader.claim_study(target_per_item=50), "Claim 1 of 2"),  # claim cells and sides
        (loader.pairs_study, "About you"),  # the comparisons' sequence
    ],
    ids=["dialogues", "claims", "pairwise"],
)
def test_a_real_participants_draws_are_the_same_with_and_without_pilots_among_them(load, stop_before):
    study = load()
    alone = run(study, stop_before, pilots_between=0)
    assert len(alone) >= len(PIDS)
    assert run(study, stop_before, pilots_between=1) == alone
    pilots = RandomDraw.objects.filter(participant__study=study, participant__is_pilot=True)
    assert pilots.exists() and all(key.startswith("pilot:") for key in pilots.values_list("key", flat=True))


def test_a_persuasion_side_is_drawn_apart_for_pilots():
    study = loader.persuasion_study()
    alone = run(study, "The dialogue", pilots_between=0)
    assert [purpose for _, purpose, _, _ in alone].count("persuasion_side") == len(PIDS)
    assert run(study, "The dialogue", pilots_between=1) == alone


def test_the_experimenters_previews_take_no_real_participants_draw_either(experimenter):
    study = loader.mystery_study(target_per_item=50)
    alone = run(study, None, pilots_between=0)
    assert (
        run(study, None, pilots_between=1, between=lambda: PreviewWalker(study, client=experimenter)) == alone
    )
    previews = RandomDraw.objects.filter(participant__study=study, participant__is_preview=True)
    assert previews.exists() and all(
        key.startswith("preview:") for key in previews.values_list("key", flat=True)
    )


# --- A full study -----------------------------------------------------------------------------


def one_place(study: Study) -> StudyDialogue:
    """Only the first dialogue is offered, with one place."""
    first = StudyDialogue.objects.filter(study=study).order_by("id").first()
    StudyDialogue.objects.filter(study=study).exclude(pk=first.pk).update(active=False)
    StudyDialogue.objects.filter(pk=first.pk).update(target=1)
    return first


def test_a_pilot_is_let_into_a_full_study_and_takes_no_place():
    study = loader.mystery_study()
    slot = one_place(study)
    holder = arrive(study, Walker(study), None)
    assert holder.exit_url.endswith(f"cc={study.completion_code}")
    late = arrive(study, Walker(study), "The story")
    assert "this study is full" in late.page()[0].content.decode()
    pilot = arrive(study, PilotWalker(study), None)
    assert pilot.exit_url.endswith(f"cc={study.completion_code}")
    assigned = DialogueAssignment.objects.get(participant__prolific_pid=pilot.pid)
    assert assigned.study_dialogue_id == slot.pk
    assert Participant.objects.get(prolific_pid=pilot.pid).status == Participant.Status.COMPLETED
    # The place is still the real participant's alone: the next real arrival is turned away too.
    assert "this study is full" in arrive(study, Walker(study), "The story").page()[0].content.decode()


def test_a_pilot_is_let_in_while_the_last_place_is_held_by_someone_in_progress():
    study = loader.mystery_study()
    one_place(study)
    arrive(study, Walker(study), "The story")  # reads the debate next: holds the place
    arrive(study, Walker(study), "The story")
    pilot = arrive(study, PilotWalker(study), None)
    assert pilot.exit_url.endswith(f"cc={study.completion_code}")


# --- Counted apart in the admin ----------------------------------------------------------------


def test_the_participants_list_filters_pilots_and_real_participants(experimenter, mystery_study):
    real = arrive(mystery_study, Walker(mystery_study), "The story")
    pilot = arrive(mystery_study, PilotWalker(mystery_study), "The story")
    url = reverse("admin:participants_participant_changelist")

    def listed(query: str) -> set[str]:
        page = experimenter.get(f"{url}?{query}")
        assert page.status_code == 200
        return {p.prolific_pid for p in page.context["cl"].queryset}

    assert listed("who=real") == {real.pid}
    assert listed("who=pilot") == {pilot.pid}
    assert listed("") == {real.pid, pilot.pid}
    page = experimenter.get(url).content.decode()
    assert "Real participants" in page and "Pilots" in page


def test_the_overview_and_the_study_list_count_pilots_apart(experimenter, mystery_study):
    for _ in range(2):
        arrive(mystery_study, Walker(mystery_study), "The story")
    for _ in range(3):
        arrive(mystery_study, PilotWalker(mystery_study), None)
    overview = experimenter.get(reverse("admin:studies_study_overview", args=[mystery_study.pk]))
    assert overview.context["overview"]["total"] == 2
    assert overview.context["overview"]["pilots"]["total"] == 3
    html = overview.content.decode()
    assert "Participants (2)" in html and "Pilots (3)" in html
    assert "who=pilot" in html
    studies = experimenter.get(reverse("admin:studies_study_changelist")).content.decode()
    assert "0 completed, 2 in progress, 2 in all; 3 pilots" in studies
