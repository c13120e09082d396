"""Human versus AI in design C, through the services and the runner on the offline backend:
seating and side randomisation, the agent's reply delay, what a participant may say, a whole
dialogue to a winner, draws by the turn and time limits, abandonment, and what an agent that
fails or a classifier that answers garbage leaves behind (the loopback model server)."""

from collections import Counter
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.utils import timezone

from debates.models import AgentConfig, LLMCall, PersuasionDialogue, PersuasionTurn, RandomDraw
from debates.persuasion import runner, services
from debates.persuasion.protocol import Game
from debates.persuasion.services import MAX_TURN_CHARS, PersuasionError
from devtools import fakellm
from participants.models import Participant
from participants.services import participant_mark_returned
from tests.support import persuasion as ps

Status = PersuasionDialogue.Status
Reason = PersuasionDialogue.Reason

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)


def against_agent(study, side: str, **design):
    """A participant seated on `side` against the agent; (participant, dialogue)."""
    return ps.seat(study, ps.design_of(study, side=side, **design))


class TestSeating:
    def test_balanced_sides_alternate_within_blocks_and_are_recorded_as_draws(self):
        study = ps.dialogue_study()
        seated = [ps.seat(study) for _ in range(6)]
        sides = [d.side_of(p.pk) for p, d in seated]
        for pair in range(0, 6, 2):  # blocks of two: one of each side
            assert sorted(sides[pair : pair + 2]) == ["con", "pro"]
        for participant, dialogue in seated:
            draw = RandomDraw.objects.get(participant=participant, purpose="persuasion_side")
            assert draw.outcome["side"] == dialogue.side_of(participant.pk)
            agent_side = "con" if draw.outcome["side"] == "pro" else "pro"
            assert dialogue.agent_of(agent_side).name == "demo-yielding"
            assert (dialogue.pairing, dialogue.status) == ("human_ai", Status.RUNNING)

    def test_a_fixed_side_is_not_drawn(self):
        study = ps.dialogue_study(side="con")
        participant, dialogue = ps.seat(study)
        assert dialogue.side_of(participant.pk) == "con"
        assert not RandomDraw.objects.filter(participant=participant, purpose="persuasion_side").exists()

    def test_seating_twice_keeps_one_dialogue(self):
        study = ps.dialogue_study()
        participant, dialogue = ps.seat(study)
        again = services.dialogue_assign(
            participant=participant, position=ps.POSITION, design=ps.design_of(study), now=timezone.now()
        )
        assert again is None
        assert PersuasionDialogue.objects.filter(study=study).count() == 1

    def test_an_agent_for_the_topic_opens_after_a_reproducible_delay_in_range(self):
        study = ps.dialogue_study(delay_min_s=1.5, delay_max_s=4.0)
        participant = ps.person(ps.arrive(study))
        now = timezone.now()
        due = services.dialogue_assign(
            participant=participant, position=ps.POSITION, design=ps.design_of(study, side="con"), now=now
        )
        assert due is not None
        assert (due.speaker, due.author, due.status, due.seq) == ("pro", "agent", "pending", 1)
        delay = (due.due_at - now).total_seconds()
        assert 1.5 <= delay <= 4.0
        dialogue = ps.dialogue_of(participant)
        assert services.reply_delay(dialogue, 1) == pytest.approx(delay, abs=1e-3)
        assert services.reply_delay(dialogue, 1) == services.reply_delay(dialogue, 1)
        delays = {services.reply_delay(dialogue, seq) for seq in range(1, 30)}
        assert len(delays) > 20 and all(1.5 <= d <= 4.0 for d in delays)  # random, within range

    def test_a_participant_for_the_topic_writes_first_and_no_agent_turn_is_due(self):
        study = ps.dialogue_study()
        participant = ps.person(ps.arrive(study))
        due = services.dialogue_assign(
            participant=participant,
            position=ps.POSITION,
            design=ps.design_of(study, side="pro"),
            now=timezone.now(),
        )
        assert due is None
        assert not PersuasionTurn.objects.exists()


class TestSaying:
    def test_out_of_turn_is_refused_while_the_agent_has_the_turn(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "con")
        with pytest.raises(PersuasionError, match="not your turn"):
            ps.say(participant, dialogue, "I disagree.")
        ps.run_turns(dialogue.pk)  # the agent's opening
        turn = ps.say(participant, dialogue)
        with pytest.raises(PersuasionError, match="not your turn"):  # own turn still being read
            ps.say(participant, dialogue, "And another thing.")
        assert turn.status == "reading" and turn.author == "human" and turn.speaker == "con"

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("", "Write at least one sentence."),
            ("   \n ", "Write at least one sentence."),
            ("?!", "Write at least one sentence."),  # no sentence to read: it used up the turn
            ("\u202e\u200b\ufeff", "Write at least one sentence."),
            ("x" * (MAX_TURN_CHARS + 1), f"at most {MAX_TURN_CHARS} characters"),
            ("One. Two. Three. Four. Five. Six.", "Write at most 5 sentences: this has 6."),
        ],
    )
    def test_unusable_turns_are_refused_with_a_reason(self, text, message):
        participant, dialogue = against_agent(ps.dialogue_study(), "pro")
        with pytest.raises(PersuasionError, match=message):
            ps.say(participant, dialogue, text)
        assert not PersuasionTurn.objects.exists()

    def test_the_sentence_limit_is_the_dialogues(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "pro", max_sentences=2)
        with pytest.raises(PersuasionError, match="at most 2 sentences: this has 3"):
            ps.say(participant, dialogue, "Taxes fund roads. Roads help trade. Trade helps all.")
        ps.say(participant, dialogue, "Taxes fund roads. Roads help trade.")

    def test_a_stranger_cannot_say_anything_in_a_dialogue(self):
        study = ps.dialogue_study()
        _, dialogue = against_agent(study, "pro")
        stranger, _ = against_agent(study, "pro")
        with pytest.raises(PersuasionError, match="not your dialogue"):
            ps.say(stranger, dialogue, "Hello.")

    def test_nothing_can_be_said_after_the_end(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "pro")
        services.dialogue_check(dialogue_id=dialogue.pk, now=timezone.now() + timedelta(hours=1))
        with pytest.raises(PersuasionError, match="has ended"):
            ps.say(participant, dialogue, "Wait.")


class TestWholeDialogue:
    @pytest.mark.parametrize("side", ["pro", "con"])
    def test_the_yielding_agent_concedes_and_the_participant_wins(self, side):
        participant, dialogue = against_agent(ps.dialogue_study(), side)
        ended = ps.debate_to_end({side: participant}, dialogue)
        assert (ended.status, ended.end_reason, ended.winner) == (Status.FINISHED, Reason.CONCEDED, side)
        # The agent concedes in its fourth turn: the participant opens (8 turns) or answers (7).
        played = 8 if side == "pro" else 7
        assert ended.finished_at is not None and ended.turns_played == played
        turns = list(ended.turns.order_by("seq"))
        assert [t.seq for t in turns] == list(range(1, played + 1))
        assert {t.status for t in turns} == {"done"}
        authors = ["human", "agent"] * 4 if side == "pro" else ["agent", "human"] * 4
        assert [t.author for t in turns] == authors[:played]
        game = Game.replay(ended.state)
        assert (game.outcome.status, game.outcome.winner) == ("won", side)
        for turn in turns:
            assert turn.text and turn.sentences, turn.seq
            assert {"text", "kind", "target", "proposition", "legal", "reason", "fallback"} <= set(
                turn.sentences[0]
            )
            assert set(turn.stores_after) == {"pro", "con"}
            assert not turn.fallback
        assert turns[-1].stores_after == {s: list(game.stores[s]) for s in ("pro", "con")}
        last = turns[-1].sentences[-1]
        assert (last["kind"], last["legal"]) == ("concede", True)
        assert last["proposition"] == ended.topic.claim_of(side)
        # Every participant sentence counted: the offline classifier reads them as meant.
        assert all(s["legal"] for t in turns if t.author == "human" for s in t.sentences)

        calls = LLMCall.objects.filter(persuasion_dialogue=ended)
        assert calls.count() > 0 and not calls.filter(persuasion_turn__isnull=True).exists()
        assert calls.filter(role="persuasion_agent").count() == 4
        for turn in turns:
            roles = set(calls.filter(persuasion_turn=turn).values_list("role", flat=True))
            assert "classify" in roles
            assert ("persuasion_agent" in roles) == (turn.author == "agent")
        assert set(calls.values_list("study_id", flat=True)) == {ended.study_id}
        assert services.outcome_text(ended, side).startswith("You won")

    def test_the_turn_limit_ends_in_a_draw(self):
        study = ps.dialogue_study(agent="demo-firm")
        participant, dialogue = against_agent(study, "pro", max_turns=4, agent="demo-firm")
        ended = ps.debate_to_end({"pro": participant}, dialogue)
        assert (ended.status, ended.end_reason, ended.winner) == (Status.FINISHED, Reason.TURN_LIMIT, "")
        assert ended.turns_played == 4 and ended.turns.count() == 4
        assert services.outcome_text(ended, "pro") == "The dialogue reached its turn limit: a draw."

    def test_the_time_limit_ends_in_a_draw_and_fails_the_open_turn(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "con")
        pending = ps.open_turn(dialogue.pk)
        assert not services.dialogue_check(
            dialogue_id=dialogue.pk, now=dialogue.started_at + timedelta(minutes=14)
        )
        later = dialogue.started_at + timedelta(minutes=15, seconds=1)
        assert services.dialogue_check(dialogue_id=dialogue.pk, now=later)
        ended = ps.fresh(dialogue)
        assert (ended.status, ended.end_reason, ended.winner) == (Status.FINISHED, Reason.TIME_LIMIT, "")
        assert ended.state["outcome"]["reason"] == "time_limit"
        assert ended.finished_at == later
        pending.refresh_from_db()
        assert pending.status == "failed"
        async_to_sync(runner.run_turn)(pending.pk)  # a late worker plays nothing
        assert ended.turns.filter(status="done").count() == 0

    def test_silence_on_ones_turn_abandons_the_dialogue(self):
        participant, dialogue = against_agent(ps.dialogue_study(silence_seconds=60), "con")
        ps.run_turns(dialogue.pk)
        dialogue = ps.fresh(dialogue)
        quiet = dialogue.last_move_at + timedelta(seconds=59)
        assert not services.dialogue_check(dialogue_id=dialogue.pk, now=quiet)
        assert services.dialogue_check(dialogue_id=dialogue.pk, now=quiet + timedelta(seconds=1))
        ended = ps.fresh(dialogue)
        assert (ended.status, ended.end_reason, ended.ended_by) == (
            Status.ABANDONED,
            Reason.PARTNER_SILENT,
            "con",
        )
        assert (
            services.outcome_text(ended, "con")
            == "The dialogue ended because no reply came from you in time."
        )

    def test_an_abandoned_dialogue_still_has_a_snapshot_for_its_pages(self):
        participant, dialogue = against_agent(ps.dialogue_study(silence_seconds=60), "pro")
        services.dialogue_check(dialogue_id=dialogue.pk, now=dialogue.last_move_at + timedelta(seconds=61))
        snapshot = services.snapshot_for(ps.fresh(dialogue), "pro", {})
        assert (snapshot["status"], snapshot["ended"], snapshot["my_turn"]) == (Status.ABANDONED, True, False)
        assert snapshot["outcome"] == "The dialogue ended because no reply came from you in time."

    def test_the_time_limit_at_the_exact_second_also_closes_the_protocol_state(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "pro")
        assert services.dialogue_check(
            dialogue_id=dialogue.pk, now=dialogue.started_at + timedelta(minutes=15)
        )
        ended = ps.fresh(dialogue)
        assert ended.end_reason == Reason.TIME_LIMIT
        assert ended.state["outcome"] == {"status": "draw", "winner": None, "reason": "time_limit"}

    def test_the_agent_taking_long_is_not_the_participants_silence(self):
        participant, dialogue = against_agent(ps.dialogue_study(silence_seconds=60), "con")
        later = dialogue.last_move_at + timedelta(seconds=600)
        assert not services.dialogue_check(dialogue_id=dialogue.pk, now=later)
        assert ps.fresh(dialogue).status == Status.RUNNING

    def test_a_participant_no_longer_active_leaves_the_dialogue(self):
        participant, dialogue = against_agent(ps.dialogue_study(), "pro")
        participant_mark_returned(participant=participant)
        assert services.dialogue_check(dialogue_id=dialogue.pk)
        ended = ps.fresh(dialogue)
        assert (ended.status, ended.end_reason, ended.ended_by) == (
            Status.ABANDONED,
            Reason.PARTNER_LEFT,
            "pro",
        )
        assert Participant.objects.get(pk=participant.pk).status == Participant.Status.RETURNED


# --- Failures, on the loopback model server ------------------------------------------------


@pytest.fixture
def model_server(settings):
    with fakellm.run_in_thread() as running:
        settings.LLM_BACKEND = "openai"
        settings.OPENAI_BASE_URL = running.base_url
        settings.OPENAI_API_KEY = "test-key"
        settings.LLM_MAX_RETRIES = 0
        settings.LLM_BACKOFF_S = 0.01
        yield running


class TestFailures:
    def test_an_agent_that_keeps_failing_plays_the_safe_default_after_its_attempts(
        self, model_server, settings
    ):
        study = ps.dialogue_study()
        AgentConfig.objects.filter(name="demo-yielding").update(model="fake:fail=500:times=9")
        participant, dialogue = against_agent(study, "con")
        turn = ps.open_turn(dialogue.pk)
        for attempt in range(1, settings.PERSUASION_TURN_ATTEMPTS):
            async_to_sync(runner.run_turn)(turn.pk)
            turn.refresh_from_db()
            assert (turn.status, turn.attempts) == ("pending", attempt)  # written again later
            assert turn.error
        async_to_sync(runner.run_turn)(turn.pk)
        turn.refresh_from_db()
        assert (turn.status, turn.fallback, turn.attempts) == (
            "done",
            True,
            settings.PERSUASION_TURN_ATTEMPTS,
        )
        assert turn.text and turn.sentences
        assert all(s["legal"] and s["fallback"] for s in turn.sentences)
        failed = LLMCall.objects.filter(persuasion_turn=turn, role="persuasion_agent")
        assert failed.count() == settings.PERSUASION_TURN_ATTEMPTS
        assert all(c.error_kind for c in failed)
        dialogue = ps.fresh(dialogue)
        assert dialogue.status == Status.RUNNING and dialogue.turns_played == 1
        assert services.game_of(dialogue).to_move == "con"  # the participant's turn now

    def test_a_classifier_answering_garbage_falls_back_and_says_so(self, model_server):
        study = ps.dialogue_study(classifier_model="fake")
        participant, dialogue = against_agent(study, "pro", classifier_model="fake")
        turn = ps.say(participant, dialogue, "Public investment builds the roads we all use.")
        async_to_sync(runner.run_turn)(turn.pk)
        turn.refresh_from_db()
        assert turn.status == "done" and turn.fallback
        (sentence,) = turn.sentences
        assert sentence["fallback"] and sentence["kind"] == "claim" and sentence["legal"]
        assert sentence["proposition"] == "Public investment builds the roads we all use."
        classify = LLMCall.objects.filter(persuasion_turn=turn, role="classify").order_by("pk")
        assert [c.error_kind for c in classify] == ["invalid_answer", "invalid_answer"]  # asked twice
        assert "Public investment builds the roads we all use." in ps.fresh(dialogue).state["stores"]["pro"]
        assert Counter(t.author for t in PersuasionTurn.objects.filter(dialogue=dialogue)) == {
            "human": 1,
            "agent": 1,
        }  # the agent's reply is due next
