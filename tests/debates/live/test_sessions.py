"""Live debate and consultancy (design B) with the offline backend: screening, assignment,
the phases, the order of turns, judge messages, generation, idempotency, safety."""

import asyncio
from collections import Counter
from datetime import timedelta

import pytest
import redis.exceptions
from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import OperationalError
from django.utils import timezone

from debates.demo import loader
from debates.live import runner
from debates.live import services as live_services
from debates.models import LiveSession, LiveTurn, LLMCall, StudyClaim
from participants.models import Participant, Response
from participants.places import places_held
from participants.services import release_expired_leases
from tests.support.cast import Walker
from tests.support.live import drain_turns


def screened(study, answers=None) -> Walker:
    w = Walker(study)
    w.enter()
    w.walk(stop_before="How it works", answers={"About your views": answers or {}})
    return w


def at_claim(study) -> tuple[Walker, LiveSession]:
    w = screened(study)
    w.walk(stop_before="Claim 1 of 2")
    w.page()  # the claim step assigns protocol and claim
    return w, LiveSession.objects.select_related("claim").get(participant__prolific_pid=w.pid)


def answer_initial(w: Walker, answer="true", confidence="40"):
    return w.submit({"answer": answer, "confidence": confidence})


def turns_of(session) -> list[tuple[str, int, str]]:
    return [(t.speaker, t.round, t.status) for t in session.turns.order_by("seq")]


@pytest.mark.django_db
class TestScreening:
    def test_belief_items_place_the_participant_in_a_group(self, claim_study):
        skeptic = screened(
            claim_study,
            {
                "belief_overstated": "Strongly agree",
                "belief_own_research": "Agree",
                "belief_trust": "Disagree",
            },
        )
        p = Participant.objects.get(prolific_pid=skeptic.pid)
        assert p.group == "skeptical"
        score = Response.objects.get(participant=p, key="screening_score")
        assert score.value_num == pytest.approx((5 + 4 + 4) / 3, abs=1e-3)  # trust reversed: 6 - 2

    def test_a_score_in_no_group_is_screened_out_with_its_code(self, claim_study):
        # Paper 001's kind of groups, with a middle band in none (the demo's cover every score).
        screening = claim_study.steps.get(kind="screening")
        screening.config = {**screening.config, "groups": "mainstream: 1 - 2.5\nskeptical: 3.5 - 5"}
        screening.save()
        w = Walker(claim_study)
        w.enter()
        w.walk(
            answers={
                "About your views": {
                    "belief_overstated": "Neither agree nor disagree",
                    "belief_own_research": "Neither agree nor disagree",
                    "belief_trust": "Neither agree nor disagree",
                }
            }
        )
        assert not w.exit_url  # explained on a page of ours first, with the code and a button
        page = w.client.get(w.url).content.decode()
        assert 'href="https://app.prolific.com/submissions/complete?cc=CCLAIMSCREEN"' in page
        p = Participant.objects.get(prolific_pid=w.pid)
        assert p.status == Participant.Status.SCREENED_OUT
        assert Response.objects.get(participant=p, key="screening_group").value == "ineligible"


@pytest.mark.django_db
class TestAssignment:
    def test_cells_fill_evenly_within_a_group_and_claims_do_not_repeat(self, claim_study):
        for _ in range(24):
            w, _ = at_claim(claim_study)
            answer_initial(w)
            Participant.objects.filter(prolific_pid=w.pid)  # each holds a place while active
        cells = Counter(LiveSession.objects.values_list("protocol", "claim__slug"))
        assert len(cells) == 12  # 2 protocols × 6 claims
        assert set(cells.values()) == {2}
        assert set(LiveSession.objects.values_list("group", flat=True)) == {"mainstream"}

    def test_a_participant_keeps_one_protocol_and_gets_a_new_claim(self, claim_study):
        w, first = at_claim(claim_study)
        answer_initial(w)
        drain_turns(first.pk)
        finish_chat_and_answer(w, first)
        _, form = w.page()
        assert form.title == "Claim 2 of 2"
        second = LiveSession.objects.get(participant__prolific_pid=w.pid, position=first.position + 1)
        assert second.protocol == first.protocol
        assert second.claim_id != first.claim_id

    def test_a_participant_back_after_a_timeout_keeps_their_claim_if_its_cell_has_room(self, claim_study):
        w, session = at_claim(claim_study)
        Participant.objects.filter(prolific_pid=w.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        release_expired_leases()
        _, form = w.page()
        assert form.title == "Claim 1 of 2"
        assert Participant.objects.get(prolific_pid=w.pid).status == Participant.Status.ACTIVE
        assert LiveSession.objects.get(participant__prolific_pid=w.pid).pk == session.pk

    def test_a_participant_back_after_their_claim_cell_was_filled_is_told_so(self, db):
        study = loader.claim_study(target_per_item=1)
        StudyClaim.objects.filter(study=study).exclude(
            pk=StudyClaim.objects.filter(study=study).first().pk
        ).update(active=False)  # one claim, two protocols: two places in all
        late, mine = at_claim(study)
        other, _ = at_claim(study)
        Participant.objects.filter(prolific_pid=late.pid).update(
            expires_at=timezone.now() - timedelta(minutes=1)
        )
        replacement, theirs = at_claim(study)
        assert (theirs.protocol, theirs.claim_id) == (mine.protocol, mine.claim_id)
        assert "time limit has passed" in late.page()[0].content.decode()
        assert Participant.objects.get(prolific_pid=late.pid).status == Participant.Status.TIMED_OUT
        held = places_held(LiveSession.objects.all(), ("protocol", "claim"), timezone.now())
        assert set(held.values()) == {1}  # no cell holds more than its target

    def test_groups_are_balanced_separately(self, claim_study):
        skeptics = [
            screened(
                claim_study,
                {
                    "belief_overstated": "Strongly agree",
                    "belief_own_research": "Agree",
                    "belief_trust": "Disagree",
                },
            )
            for _ in range(2)
        ]
        for w in skeptics:
            w.walk(stop_before="Claim 1 of 2")
            w.page()
        groups = Counter(LiveSession.objects.values_list("group", flat=True))
        assert groups == {"skeptical": 2}


def finish_chat_and_answer(w: Walker, session, final="false"):
    _, chat = w.page()
    while True:
        session.refresh_from_db()
        turns = list(session.turns.order_by("seq"))
        if live_services.chat_complete(session, turns):
            break
        if live_services.judge_may_write(session, turns):
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text="", target="pass"
            )
        drain_turns(session.pk)
    w.submit(form=chat)
    w.submit(
        {"answer": final, "confidence": "70", "justification": "The sources on the other side were weaker."}
    )


@pytest.mark.django_db
class TestConversation:
    def test_a_debate_runs_three_rounds_with_judge_turns_between(self, claim_study):
        w, session = at_claim(claim_study)
        LiveSession.objects.filter(pk=session.pk).update(protocol="debate", side_a="true")
        session.refresh_from_db()
        session.debater_b = session.debater_a
        LiveSession.objects.filter(pk=session.pk).update(debater_b=session.debater_a)
        answer_initial(w)
        assert drain_turns(session.pk) == 2
        assert turns_of(session) == [("A", 1, "done"), ("B", 1, "done")]
        live_services.judge_ask(
            session_id=session.pk,
            participant_id=session.participant_id,
            text="Which source is newest?",
            target="A",
        )
        drain_turns(session.pk)
        live_services.judge_ask(
            session_id=session.pk, participant_id=session.participant_id, text="", target="pass"
        )
        drain_turns(session.pk)
        assert turns_of(session) == [
            ("A", 1, "done"), ("B", 1, "done"), ("J", 1, "done"),
            ("A", 2, "done"), ("B", 2, "done"), ("J", 2, "done"),
            ("A", 3, "done"), ("B", 3, "done"),
        ]  # fmt: skip
        assert live_services.chat_complete(session, list(session.turns.all()))
        second_round_a = session.turns.get(seq=4)
        assert "Which source is newest?" in second_round_a.text  # the offline debater answers it

    def test_a_consultancy_has_one_advisor_and_the_assigned_side(self, claim_study):
        w, session = at_claim(claim_study)
        LiveSession.objects.filter(pk=session.pk).update(protocol="consultancy", consultant_side="false")
        answer_initial(w)
        drain_turns(session.pk)
        session.refresh_from_db()
        assert turns_of(session) == [("C", 1, "done")]
        assert "the claim is false" in session.turns.get(seq=1).text

    def test_the_judge_cannot_write_while_an_ai_is_due(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        with pytest.raises(live_services.LiveError, match="not your turn"):
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text="Hi", target="A"
            )

    @pytest.mark.parametrize(
        "text, target, message",
        [
            ("x" * 501, "A", "under 500 characters"),
            ("", "A", "Write a question"),
            ("?!", "A", "Write a question"),  # nothing to read: stored and answered, it was
            ("\u200b\ufeff\u202e", "both", "Write a question"),  # invisible characters only
            ("Hi", "Z", "Choose whom"),
        ],
    )
    def test_judge_messages_are_checked(self, claim_study, text, target, message):
        w, session = at_claim(claim_study)
        LiveSession.objects.filter(pk=session.pk).update(protocol="debate", side_a="true")
        LiveSession.objects.filter(pk=session.pk).update(debater_b=session.debater_a_id)
        answer_initial(w)
        drain_turns(session.pk)
        with pytest.raises(live_services.LiveError, match=message):
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text=text, target=target
            )
        assert not LiveTurn.objects.filter(session=session, speaker="J").exists()

    def test_another_participant_cannot_write_into_the_session(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        drain_turns(session.pk)
        intruder = screened(claim_study)
        other = Participant.objects.get(prolific_pid=intruder.pid)
        with pytest.raises(LiveSession.DoesNotExist):
            live_services.judge_ask(session_id=session.pk, participant_id=other.pk, text="Hi", target="pass")

    def test_the_final_judgement_is_stored_and_the_step_completes(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w, "true", "40")
        drain_turns(session.pk)
        finish_chat_and_answer(w, session, final="false")
        session.refresh_from_db()
        assert (session.initial_answer, session.initial_confidence) == (True, 40)
        assert (session.final_answer, session.final_confidence) == (False, 70)
        assert session.phase == LiveSession.Phase.DONE
        assert Participant.objects.get(pk=session.participant_id).position == session.position + 1

    def test_the_chat_cannot_be_left_before_it_is_over(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        _, chat = w.page()
        response = w.submit(form=chat)
        assert response["Location"].endswith("?moved=1")
        session.refresh_from_db()
        assert session.phase == LiveSession.Phase.CHAT

    def test_a_stale_page_of_the_step_stores_nothing(self, claim_study):
        w, session = at_claim(claim_study)
        _, initial = w.page()
        answer_initial(w, "true", "40")
        response = w.client.post(
            w.url, {**initial.hidden, "answer": "false", "confidence": "90", "confidence__touched": "1"}
        )
        assert response["Location"].endswith("?moved=1")
        session.refresh_from_db()
        assert (session.initial_answer, session.initial_confidence) == (True, 40)


@pytest.mark.django_db
class TestTurns:
    def test_a_turn_is_written_once_however_often_it_is_run(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        async_to_sync(runner.run_turn)(turn.pk)
        text = LiveTurn.objects.get(pk=turn.pk).text
        async_to_sync(runner.run_turn)(turn.pk)  # a duplicated or redelivered task
        turn.refresh_from_db()
        assert turn.text == text and turn.attempts == 1
        assert LLMCall.objects.filter(turn=turn).count() == 1
        live_services.session_advance(session_id=session.pk)
        live_services.session_advance(session_id=session.pk)
        expected = 1 if session.protocol == "consultancy" else 2  # C1, or A1 then B1 queued once
        assert session.turns.count() == expected

    def test_every_call_is_recorded_with_tokens_and_prompt(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        drain_turns(session.pk)
        call = LLMCall.objects.filter(session=session).exclude(role="side_choice").first()
        # The offline backend says so: never the configured model, and it costs nothing.
        assert call.backend == "offline" and call.model == "offline" and call.cost_usd == 0
        assert call.tokens_in > 0 and call.tokens_out > 0
        assert call.messages[0]["role"] == "system"
        assert session.claim.text in call.messages[0]["content"]
        assert len(call.prompt_hash) == 64

    def test_no_code_or_secret_ever_reaches_a_model(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        drain_turns(session.pk)
        if session.protocol == "debate":
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text="Why?", target="both"
            )
        else:
            live_services.judge_ask(
                session_id=session.pk, participant_id=session.participant_id, text="Why?", target="C"
            )
        drain_turns(session.pk)
        study = claim_study
        secrets_ = [
            study.completion_code,
            study.failed_check_code,
            study.no_consent_code,
            study.screened_out_code,
            settings.SECRET_KEY,
        ]
        for call in LLMCall.objects.all():
            blob = str(call.messages)
            assert not any(s in blob for s in secrets_)

    def test_a_stuck_turn_is_found_by_the_watchdog(self, claim_study):
        from datetime import timedelta

        from django.utils import timezone

        w, session = at_claim(claim_study)
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        long_ago = timezone.now() - timedelta(minutes=5)
        LiveTurn.objects.filter(pk=turn.pk).update(status="streaming", attempts=1, heartbeat_at=long_ago)
        assert live_services.stuck_turns() == [turn.pk]
        async_to_sync(runner.run_turn)(turn.pk)  # a new worker takes over
        turn.refresh_from_db()
        assert turn.status == "done" and turn.attempts == 2

    def test_a_reply_that_takes_the_next_turn_writes_it_here_without_the_queue(self, claim_study):
        """Workers write debater B right after A on their own loop (`take_next`): B is created
        taken (no second claim), streamed once A's end is told, and never handed to `start`."""
        w, session = at_claim(claim_study)
        LiveSession.objects.filter(pk=session.pk).update(  # a debate: debater B speaks next
            protocol="debate", side_a="true", debater_b=session.debater_a_id
        )
        answer_initial(w)
        first = LiveTurn.objects.get(session=session)
        started = []

        async def both() -> None:
            prepared = await runner.db(runner.turn_prepare)(first.pk)
            await runner.stream_turn(prepared, recorded(started), take_next=True)
            while others := [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                await asyncio.wait(others)  # B, spawned on this loop (and its heartbeat)

        async_to_sync(both)()
        a, b = LiveTurn.objects.filter(session=session).order_by("seq")
        assert (a.speaker, a.status, a.attempts) == ("A", "done", 1) and a.text
        assert (b.speaker, b.status, b.attempts) == ("B", "done", 1) and b.text
        assert b.started_at == b.created_at  # taken as it was created
        assert started == []  # nothing queued: B was written here
        assert LLMCall.objects.filter(session=session).count() == 2

    def test_turns_taken_together_are_claimed_once_each_in_the_order_asked(self, claim_study):
        """A reader takes a burst's ids from the queue together, an id pushed twice among them
        (the question's push and a reconnection's kick): each turn is claimed and prepared
        once, and a turn another worker holds is left out."""
        turns = []
        for _ in range(3):
            w, session = at_claim(claim_study)
            answer_initial(w)
            turns.append(LiveTurn.objects.get(session=session))
        held = turns[2]
        LiveTurn.objects.filter(pk=held.pk).update(
            status="streaming", attempts=1, heartbeat_at=timezone.now()
        )
        ids = [turns[1].pk, turns[0].pk, turns[1].pk, held.pk, turns[0].pk]
        prepared = runner.turns_prepare(ids)
        assert [p.turn.pk for p in prepared] == [turns[1].pk, turns[0].pk]
        assert all(p.request is not None and p.turn.session.claim_id for p in prepared)
        assert {t.attempts for t in LiveTurn.objects.filter(pk__in=[turns[0].pk, turns[1].pk])} == {1}
        assert runner.turns_prepare(ids) == []  # all taken now (or held)

    def test_a_turn_is_claimed_only_when_it_is_free_has_attempts_left_and_the_chat_is_on(self, claim_study):
        w, session = at_claim(claim_study)
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        now = timezone.now()
        fresh, stale = now - timedelta(seconds=1), now - timedelta(seconds=settings.LIVE_TURN_STUCK_S + 1)

        def claim_after(**state) -> tuple[bool, int]:
            LiveTurn.objects.filter(pk=turn.pk).update(**state)
            taken = live_services.turn_claim(turn_id=turn.pk, now=now)
            row = LiveTurn.objects.get(pk=turn.pk)
            if taken is not None:
                assert taken.pk == turn.pk and taken.session.claim_id == session.claim_id
                assert (row.status, row.heartbeat_at, row.started_at, row.text) == ("streaming", now, now, "")
            return taken is not None, row.attempts

        assert claim_after(status="pending", attempts=0) == (True, 1)
        # A live worker holds it (a fresh heartbeat):
        assert claim_after(status="streaming", attempts=1, heartbeat_at=fresh) == (False, 1)
        assert claim_after(status="streaming", attempts=1, heartbeat_at=stale, text="half") == (True, 2)
        last = settings.LIVE_TURN_MAX_ATTEMPTS
        assert claim_after(status="pending", attempts=last) == (False, last)
        assert claim_after(status="done", attempts=1) == (False, 1)
        assert claim_after(status="failed", attempts=1) == (False, 1)
        LiveSession.objects.filter(pk=session.pk).update(phase="final")
        assert claim_after(status="pending", attempts=0) == (False, 0)

    @pytest.mark.parametrize(
        "trouble, outcome",
        [
            (lambda: redis.exceptions.ConnectionError("Connection closed by server."), "written again"),
            (lambda: OperationalError("terminating connection"), "written again"),
            (lambda: ValueError("a bug"), "failed"),
        ],
    )
    def test_passing_trouble_as_a_turn_starts_has_it_written_again_at_once(
        self, claim_study, monkeypatch, trouble, outcome
    ):
        """bench/faults: Redis connections killed as a turn started failed it for good, the
        debate waiting for the judge's "try again". Passing trouble (Redis, the database) has
        the turn written again at once; a bug still fails it visibly."""
        w, session = at_claim(claim_study)
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        real = runner.stream_buffer()
        settings.LIVE_MAX_FRAMES_PER_SECOND, settings.LIVE_FLUSH_MS = 10, 100  # an instant reply: two frames

        class Dropping:
            """The stream buffer, whose connection drops on the first clear."""

            dropped = False

            def __getattr__(self, name):
                return getattr(real, name)

            async def clear(self, turn_id):
                if not Dropping.dropped:
                    Dropping.dropped = True
                    raise trouble()
                await real.clear(turn_id)

        monkeypatch.setattr(runner, "stream_buffer", Dropping)
        started = []
        async_to_sync(runner.run_turn)(turn.pk, start=recorded(started))
        turn.refresh_from_db()
        if outcome == "failed":
            assert turn.status == "failed" and started == []
            return
        assert turn.status == "pending" and turn.attempts == 1 and started == [turn.pk]
        async_to_sync(runner.run_turn)(turn.pk)  # the attempt `start` began
        turn.refresh_from_db()
        assert turn.status == "done" and turn.attempts == 2 and turn.text

    def test_a_reply_whose_last_frame_is_lost_is_stored_once_and_the_next_turn_started(
        self, claim_study, monkeypatch, settings
    ):
        """The reply is stored while its last frame waits for its time: Redis dropping that
        frame loses only the frame (the end carries the whole text, a reconnection reads it
        from the database); the reply is not written again and the next speaker starts."""
        w, session = at_claim(claim_study)
        LiveSession.objects.filter(pk=session.pk).update(  # a debate: debater B speaks next
            protocol="debate", side_a="true", debater_b=session.debater_a_id
        )
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        real = runner.stream_buffer()
        settings.LIVE_MAX_FRAMES_PER_SECOND, settings.LIVE_FLUSH_MS = 10, 100  # an instant reply: two frames

        class Dropping:
            """The stream buffer, whose connection drops on the second append: the last frame
            (the first goes out at once, the rest of an instant reply waits for the interval)."""

            appends = 0

            def __getattr__(self, name):
                return getattr(real, name)

            async def append(self, turn_id, text):
                Dropping.appends += 1
                if Dropping.appends == 2:
                    raise redis.exceptions.ConnectionError("Connection closed by server.")
                await real.append(turn_id, text)

        monkeypatch.setattr(runner, "stream_buffer", Dropping)
        started = []
        async_to_sync(runner.run_turn)(turn.pk, start=recorded(started))
        turn.refresh_from_db()
        assert Dropping.appends == 2
        assert turn.status == "done" and turn.attempts == 1 and turn.text
        due = LiveTurn.objects.get(session=session, seq=turn.seq + 1)
        assert due.status == "pending" and started == [due.pk]

    def test_a_turn_with_no_attempts_left_fails_visibly(self, claim_study):
        from datetime import timedelta

        from django.utils import timezone

        w, session = at_claim(claim_study)
        answer_initial(w)
        turn = LiveTurn.objects.get(session=session)
        long_ago = timezone.now() - timedelta(minutes=5)
        LiveTurn.objects.filter(pk=turn.pk).update(
            status="streaming", attempts=settings.LIVE_TURN_MAX_ATTEMPTS, heartbeat_at=long_ago
        )
        assert live_services.turns_give_up() == [(session.pk, turn.seq)]
        turn.refresh_from_db()
        assert turn.status == "failed"
        # The participant is not stuck: they may try again, or move on to the final answer.
        live_services.turn_retry(session_id=session.pk, participant_id=session.participant_id)
        drain_turns(session.pk)
        assert LiveTurn.objects.get(pk=turn.pk).status == "done"


def recorded(started: list[int]):
    """A runner's `start` that only notes which turns it was asked to start."""

    async def start(turn_id: int, delay: float) -> None:
        started.append(turn_id)

    return start
