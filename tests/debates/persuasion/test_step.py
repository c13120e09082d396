"""The persuasion-dialogue step through the participant's real pages (Django's test client):
what the page shows, Continue refused while the dialogue runs, the answers recorded when it
has ended, the step's configuration form, and the go-live checks an experimenter reads."""

from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import AgentConfig, PersuasionDialogue, Topic
from debates.persuasion import services
from debates.persuasion.steps import PersuasionConfig
from participants.models import Participant, Response
from studies.models import Step
from studies.services import study_problems
from tests.support import persuasion as ps

Status = PersuasionDialogue.Status

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)


def answers(participant) -> dict[str, str]:
    return dict(Response.objects.filter(participant=participant).values_list("key", "value"))


class TestPage:
    def test_the_page_shows_the_topic_the_claims_and_the_socket(self):
        study = ps.dialogue_study(side="con")
        w = ps.arrive(study)
        response, form = w.page()
        page = response.content.decode()
        participant = ps.person(w)
        topic = Topic.objects.get(slug="uk-government-intervention")
        assert form.title == ps.STEP_TITLE
        assert topic.text in page and topic.background in page
        own = page.index("Your initial claim")
        other = page.index("Your opponent's initial claim")
        assert own < page.index(topic.con_claim) < other < page.index(topic.pro_claim, other)
        assert "Persuade your opponent." in page  # the step's intro
        assert f'data-ws="/ws/persuasion/{participant.token}/"' in page
        assert 'data-side="con"' in page and 'data-max-sentences="5"' in page
        assert 'id="p-finish" disabled' in page
        dialogue = ps.dialogue_of(participant)
        assert dialogue.status == Status.RUNNING and dialogue.side_of(participant.pk) == "con"

    def test_showing_the_page_again_keeps_the_same_dialogue(self):
        w = ps.arrive(ps.dialogue_study())
        w.page()
        w.page()
        assert PersuasionDialogue.objects.count() == 1

    def test_played_turns_are_on_the_page(self):
        study = ps.dialogue_study(side="pro")
        w = ps.arrive(study)
        w.page()
        participant = ps.person(w)
        dialogue = ps.dialogue_of(participant)
        said = ps.say(participant, dialogue)
        ps.run_turns(dialogue.pk)
        page = w.page()[0].content.decode()
        assert "Turn 1" in page and "Turn 2" in page
        assert said.text.split(" ")[0] in page


class TestContinue:
    def test_continue_is_refused_while_the_dialogue_runs(self):
        w = ps.arrive(ps.dialogue_study())
        w.page()
        response = w.submit()
        assert response.status_code == 303 and response["Location"].endswith("?moved=1")
        participant = ps.person(w)
        assert participant.position == ps.POSITION and participant.status == Participant.Status.ACTIVE
        assert w.page()[1].title == ps.STEP_TITLE
        assert not Response.objects.filter(participant=participant, key__startswith="persuasion_").exists()

    @pytest.mark.parametrize("side", ["pro", "con"])
    def test_after_a_win_the_participant_goes_on_with_the_answers_recorded(self, side):
        w = ps.arrive(ps.dialogue_study(side=side))
        w.page()
        participant = ps.person(w)
        ended = ps.debate_to_end({side: participant}, ps.dialogue_of(participant))
        page = w.page()[0].content.decode()
        assert "You won: your opponent conceded your initial claim." in page
        assert 'id="p-finish" disabled' not in page
        assert w.submit().status_code == 303
        assert w.page()[1].title == "Thanks"
        got = answers(participant)
        assert (got["persuasion_side"], got["persuasion_outcome"]) == (side, "won")
        assert got["persuasion_turns"] == str(ended.turns_played)
        turns = Response.objects.get(participant=participant, key="persuasion_turns")
        assert turns.value_num == ended.turns_played

    def test_a_draw_is_recorded_as_such(self):
        w = ps.arrive(ps.dialogue_study(side="pro", agent="demo-firm", max_turns=2))
        w.page()
        participant = ps.person(w)
        ps.debate_to_end({"pro": participant}, ps.dialogue_of(participant))
        w.submit()
        assert answers(participant)["persuasion_outcome"] == "draw"
        assert answers(participant)["persuasion_turns"] == "2"

    def test_the_time_limit_lets_the_participant_go_on(self):
        w = ps.arrive(ps.dialogue_study(side="pro", max_minutes=1))
        w.page()
        participant = ps.person(w)
        dialogue = ps.dialogue_of(participant)
        PersuasionDialogue.objects.filter(pk=dialogue.pk).update(
            started_at=timezone.now() - timedelta(minutes=2)
        )
        w.submit()  # Continue checks the clocks first
        assert ps.fresh(dialogue).end_reason == "time_limit"
        assert w.page()[1].title == "Thanks"
        assert answers(participant)["persuasion_outcome"] == "draw"


class TestConfiguration:
    def valid(self, **changes) -> dict:
        ps.loader.demo_persuasion_content()
        return {**ps.step_config(), "max_minutes": 15, **changes}

    def test_the_demo_configuration_is_valid(self):
        form = PersuasionConfig(data=self.valid())
        assert form.is_valid(), form.errors

    def test_a_longest_delay_below_the_shortest_is_refused(self):
        form = PersuasionConfig(data=self.valid(delay_min_s=3, delay_max_s=1))
        assert not form.is_valid()
        assert form.errors["delay_max_s"] == ["The longest delay must be at least the shortest."]
        assert PersuasionConfig(data=self.valid(delay_min_s=2, delay_max_s=2)).is_valid()

    def test_a_polite_exit_needs_its_code(self):
        form = PersuasionConfig(data=self.valid(opponent="human", no_partner="exit", no_partner_code=""))
        assert not form.is_valid()
        assert "no_partner_code" in form.errors
        assert PersuasionConfig(data=self.valid(opponent="ai", no_partner="exit")).is_valid()

    def test_an_unknown_topic_or_agent_is_not_a_choice(self):
        form = PersuasionConfig(data=self.valid(topic="nope", agent="nobody"))
        assert not form.is_valid() and {"topic", "agent"} <= set(form.errors)


class TestGoLive:
    def test_a_missing_topic_and_agent_are_reported_in_plain_sentences(self):
        study = ps.dialogue_study({"status": "draft"})
        Step.objects.filter(study=study, position=ps.POSITION).update(
            config=ps.step_config(topic="no-such-topic", agent="no-such-agent")
        )
        problems = study_problems(study)
        assert 'Step 2: there is no topic called "no-such-topic" (add it under Topics).' in problems
        assert 'Step 2: there is no agent configuration called "no-such-agent".' in problems

    def test_the_offline_stand_in_is_a_problem_outside_a_pilot(self):
        study = ps.dialogue_study({"status": "draft"})
        study.pilot = False
        study.save()
        problems = study_problems(study)
        assert any("offline stand-in" in p and "pilot" in p for p in problems), problems
        study.pilot = True
        study.save()
        assert study_problems(study) == []

    def test_a_wait_longer_than_the_time_limit_is_reported(self):
        study = ps.dialogue_study(
            {"status": "draft", "time_limit_minutes": 30}, opponent="human", wait_seconds=3600
        )
        problems = study_problems(study)
        assert "Step 2: the wait for a partner is longer than the study's time limit." in problems

    def test_an_agent_renamed_after_the_step_was_set_up_is_reported(self):
        study = ps.dialogue_study({"status": "draft"})
        assert study_problems(study) == []
        AgentConfig.objects.filter(name="demo-yielding").update(name="demo-renamed")
        assert any("demo-yielding" in p for p in study_problems(study))


def test_the_whole_study_can_be_walked_against_the_agent():
    study = ps.dialogue_study(side="pro")
    w = ps.arrive(study)
    w.page()
    participant = ps.person(w)
    ps.debate_to_end({"pro": participant}, ps.dialogue_of(participant))
    w.walk()
    participant.refresh_from_db()
    assert participant.status == Participant.Status.COMPLETED
    assert services.dialogue_of(participant, ps.POSITION).winner == "pro"
