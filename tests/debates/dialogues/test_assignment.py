"""Design A's places: dialogues assigned evenly at first need, leases, time-outs, returns."""

from collections import Counter
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from debates.demo import loader
from debates.models import DialogueAssignment, StudyDialogue
from participants import services as participant_services
from participants.models import Exclusion, Participant
from studies.models import Study
from tests.support.cast import Walker


def fill() -> Counter:
    return Counter(DialogueAssignment.objects.values_list("dialogue__slug", flat=True))


def arrive_and_read_story(study: Study) -> Walker:
    w = Walker(study)
    w.enter()
    w.walk(stop_before="The debate")
    return w


@pytest.fixture
def small_study(db) -> Study:
    """The demo study with only two dialogues and two places each."""
    study = loader.mystery_study(target_per_item=2)
    keep = list(StudyDialogue.objects.filter(study=study).order_by("id")[:2])
    StudyDialogue.objects.filter(study=study).exclude(pk__in=[s.pk for s in keep]).delete()
    return study


@pytest.mark.django_db
class TestAssignment:
    def test_the_study_link_alone_assigns_nothing(self, mystery_study):
        Client().get(
            f"/s/{mystery_study.slug}/?PROLIFIC_PID={'1' * 24}&STUDY_ID={'a' * 24}&SESSION_ID={'b' * 24}"
        )
        assert Participant.objects.count() == 1
        assert not DialogueAssignment.objects.exists()

    def test_a_dialogue_is_assigned_at_the_story_and_kept(self, mystery_study):
        w = Walker(mystery_study)
        w.enter()
        w.walk(stop_before="What you will do")
        _, instructions = w.page()
        w.submit(form=instructions)
        assert not DialogueAssignment.objects.exists()
        w.page()  # the story needs the case: the dialogue is assigned now
        first = DialogueAssignment.objects.get()
        w.page()  # refresh
        w.submit()
        assert DialogueAssignment.objects.get().pk == first.pk
        _, debate = w.page()
        assert debate.title == "The debate"

    def test_dialogues_fill_evenly(self, mystery_study):
        for _ in range(20):
            arrive_and_read_story(mystery_study)
        counts = fill()
        assert len(counts) == 10
        assert set(counts.values()) == {2}

    def test_a_full_study_turns_late_arrivals_away_politely(self, small_study):
        for _ in range(4):
            arrive_and_read_story(small_study)
        late = Walker(small_study)
        late.enter()
        late.walk(stop_before="The story")
        response, _ = late.page()
        page = response.content.decode()
        assert "this study is full" in page
        p = Participant.objects.get(prolific_pid=late.pid)
        assert p.status == Participant.Status.STUDY_FULL
        assert sum(fill().values()) == 4

    def test_expired_leases_do_not_hold_places(self, small_study):
        walkers = [arrive_and_read_story(small_study) for _ in range(4)]
        Participant.objects.filter(prolific_pid=walkers[0].pid).update(
            expires_at=timezone.now() - timedelta(seconds=1)
        )
        newcomer = arrive_and_read_story(small_study)
        assert DialogueAssignment.objects.filter(participant__prolific_pid=newcomer.pid).exists()

    def test_excluded_completions_free_their_place(self, small_study):
        walkers = [arrive_and_read_story(small_study) for _ in range(4)]
        for w in walkers:
            w.walk()
        assert Participant.objects.filter(status="completed").count() == 4
        victim = Participant.objects.get(prolific_pid=walkers[0].pid)
        participant_services.exclusion_add(participant=victim, reason=Exclusion.Reason.MANUAL)
        newcomer = arrive_and_read_story(small_study)
        mine = DialogueAssignment.objects.get(participant__prolific_pid=newcomer.pid)
        assert mine.dialogue_id == DialogueAssignment.objects.get(participant=victim).dialogue_id

    def test_previews_never_take_a_place(self, small_study):
        for _ in range(4):
            arrive_and_read_story(small_study)
        preview = participant_services.participant_preview(study=small_study)
        c = Client()
        page = c.get(f"/p/{preview.token}/")
        assert page.status_code == 200
        for _ in range(5):
            c.post(
                f"/p/{preview.token}/",
                {"_position": str(Participant.objects.get(pk=preview.pk).position), "consent": "yes"},
            )
        assert DialogueAssignment.objects.filter(
            participant=preview
        ).exists()  # previews still see a dialogue
        real = Walker(small_study)
        real.enter()
        real.walk(stop_before="The story")
        assert "this study is full" in real.page()[0].content.decode()

    def test_inactive_dialogues_get_nobody_new(self, mystery_study):
        StudyDialogue.objects.filter(study=mystery_study).exclude(
            dialogue__slug="orchard-recital-baseline"
        ).update(active=False)
        for _ in range(3):
            arrive_and_read_story(mystery_study)
        assert set(fill()) == {"orchard-recital-baseline"}


@pytest.mark.django_db
class TestTimeLimits:
    def test_the_periodic_task_times_out_participants_past_the_limit(self, small_study):
        w = arrive_and_read_story(small_study)
        Participant.objects.filter(prolific_pid=w.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        assert participant_services.release_expired_leases() == 1
        assert Participant.objects.get(prolific_pid=w.pid).status == Participant.Status.TIMED_OUT

    def test_a_participant_back_after_a_timeout_continues_if_their_place_is_free(self, small_study):
        w = arrive_and_read_story(small_study)
        Participant.objects.filter(prolific_pid=w.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        participant_services.release_expired_leases()
        _, form = w.page()
        assert form.title == "The debate"
        p = Participant.objects.get(prolific_pid=w.pid)
        assert p.status == Participant.Status.ACTIVE
        assert p.expires_at > timezone.now()

    def test_a_participant_back_after_their_place_was_taken_is_told_so(self, small_study):
        walkers = [arrive_and_read_story(small_study) for _ in range(4)]
        late = walkers[0]
        mine = DialogueAssignment.objects.get(participant__prolific_pid=late.pid).dialogue_id
        Participant.objects.filter(prolific_pid=late.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        replacement = arrive_and_read_story(small_study)
        assert DialogueAssignment.objects.get(participant__prolific_pid=replacement.pid).dialogue_id == mine
        page = late.page()[0].content.decode()
        assert "time limit has passed" in page
        assert Participant.objects.get(prolific_pid=late.pid).status == Participant.Status.TIMED_OUT

    def test_returned_participants_free_their_place(self, small_study):
        walkers = [arrive_and_read_story(small_study) for _ in range(4)]
        p = Participant.objects.get(prolific_pid=walkers[1].pid)
        participant_services.participant_mark_returned(participant=p)
        newcomer = arrive_and_read_story(small_study)
        assert DialogueAssignment.objects.filter(participant__prolific_pid=newcomer.pid).exists()
        assert "returned" in walkers[1].page()[0].content.decode()

    def test_the_default_time_limit_is_prolifics_maximum(self, db):
        study = Study(estimated_minutes=16)
        assert study.effective_time_limit_minutes == 2 + 16 + 8
