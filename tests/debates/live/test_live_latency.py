"""The first token of a reply is not kept back (issue 12): the relay's frame interval limits
how often frames go out, but the first frame of a turn leaves as soon as its text arrives.

The relay is driven alone with an interval far longer than any test; the whole turn (the
runner, the real `openai` client, the stream buffer, the channel layer) against our fake
model holding its stream open after the first token until the test lets it go on. Both run
on the embedded set-up (memory buffer, in-memory layer) and on PostgreSQL/Redis (Redis
buffer, pub/sub layer: each frame appended and published in one pipeline)."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.utils import timezone

from debates import streaming
from debates.live import runner
from debates.live import services as live_services
from debates.live import tasks as live_tasks
from debates.live.realtime import EVENT, group_name, payloads, stream_buffer
from debates.models import DebaterConfig, LiveSession, LiveTurn
from debates.streaming import Relay, _MemoryBuffer
from devtools import fakellm
from tests.support.cast import Walker

AN_HOUR_MS = 3_600_000  # a frame interval no test waits for


async def alive() -> None:
    pass


def relay_with_frames(frames: list[dict]) -> Relay:
    async def send(frame: dict) -> None:
        frames.append(frame)

    return Relay(turn_id=1, seq=3, send=send, heartbeat=alive, buffer=_MemoryBuffer())


def test_the_first_frame_of_a_turn_goes_out_with_its_first_token(settings):
    settings.LIVE_FLUSH_MS = AN_HOUR_MS
    frames: list[dict] = []

    async def stream() -> None:
        relay = relay_with_frames(frames)
        relay.start()
        await relay.on_text("The ")
        # Sent before the model's second token exists, although an interval of an hour has
        # only just begun.
        assert frames == [{"type": "turn.delta", "seq": 3, "offset": 0, "text": "The "}]
        assert await relay.buffer.get(1) == "The "  # in the buffer first, for reconnections
        relay.stop()

    asyncio.run(stream())


def test_text_after_the_first_frame_waits_for_the_interval_and_none_is_lost(settings):
    settings.LIVE_FLUSH_MS = AN_HOUR_MS
    frames: list[dict] = []

    async def stream() -> None:
        relay = relay_with_frames(frames)
        relay.start()
        for piece in ("The ", "door ", "was "):
            await relay.on_text(piece)
        assert [f["text"] for f in frames] == ["The "]  # the rest waits for the interval
        relay.stop()  # the turn ends (its timer cancelled): what waited goes out in one frame
        await relay.flush()

    asyncio.run(stream())
    assert frames[1] == {"type": "turn.delta", "seq": 3, "offset": 4, "text": "door was "}


def test_each_turn_starts_its_own_stream_at_once(settings):
    """A turn that follows another does not inherit its interval: its first frame goes out
    with its first token too."""
    settings.LIVE_FLUSH_MS = AN_HOUR_MS
    first: list[dict] = []
    second: list[dict] = []

    async def stream() -> None:
        a = relay_with_frames(first)
        await a.on_text("Opening ")
        await a.on_text("words ")
        b = relay_with_frames(second)
        await b.on_text("Reply ")
        assert [f["text"] for f in second] == ["Reply "]
        a.stop()
        b.stop()

    asyncio.run(stream())
    assert [f["text"] for f in first] == ["Opening "]


@pytest.fixture(scope="module")
def model_server():
    with fakellm.run_in_thread() as running:
        yield running


def reloaded_state(session: LiveSession) -> dict:
    """The state a (re)connecting judge's snapshot shows, read afresh."""
    return live_services.live_snapshot(LiveSession.objects.get(pk=session.pk))["state"]


def pending_turn(study, model: str, protocol: str = "debate") -> tuple[LiveSession, LiveTurn]:
    """A session whose judge has just given the initial judgement: the first AI turn (debater
    A's, or the consultant's) is due and nobody is writing it yet."""
    DebaterConfig.objects.update(model=model)
    w = Walker(study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    LiveSession.objects.filter(pk=session.pk).update(
        protocol=protocol, side_a="true", consultant_side="true", debater_b=session.debater_a_id
    )
    session.refresh_from_db()
    turn = live_services.live_initial_record(session=session, answer=True, confidence=30, now=timezone.now())
    return session, turn


@pytest.mark.django_db(transaction=True)
def test_a_judge_receives_the_first_token_while_the_model_holds_back_the_rest(
    claim_study, model_server, settings
):
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = model_server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LIVE_FLUSH_MS = AN_HOUR_MS
    # One token, then the stream stays open (no end, no more text) until released.
    model = f"fake-{secrets.token_hex(3)}:hold=1:tokens=1"
    session, turn = pending_turn(claim_study, model)
    received: list[dict] = []
    holds = model_server.stats(timings=False)["totals"]["held"]

    async def body() -> str:
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(group_name(session.pk), channel)

        inbox: list[dict] = []

        async def next_message() -> dict:
            if not inbox:
                message = await asyncio.wait_for(layer.receive(channel), 30)
                assert message["type"] == EVENT
                inbox.extend(payloads(message))
            received.append(inbox.pop(0))
            return received[-1]

        writing = asyncio.ensure_future(runner.run_turn(turn.pk))
        try:
            assert (await next_message())["type"] == "turn.start"
            first = await next_message()
            # The model has not finished its stream: the first token came on its own.
            assert model_server.stats(timings=False)["totals"]["held"] == holds + 1
            assert first["type"] == "turn.delta" and first["offset"] == 0
            assert await stream_buffer().get(turn.pk) == first["text"]  # buffered before sent
            model_server.app.release(model)
            while (await next_message())["type"] != "turn.end":
                pass
            await writing
        finally:
            writing.cancel()
            await layer.group_discard(group_name(session.pk), channel)
        return first["text"]

    first_text = async_to_sync(body)()
    stored = LiveTurn.objects.get(pk=turn.pk)
    assert stored.status == "done" and stored.attempts == 1
    assert first_text == stored.text  # one token: the whole reply, in the first frame
    assert [m["type"] for m in received] == ["turn.start", "turn.delta", "turn.end"]
    assert received[-1]["text"] == stored.text


@pytest.mark.django_db(transaction=True)
def test_the_task_returns_once_the_turn_streams_and_a_warm_shutdown_waits_for_it(
    claim_study, model_server, settings
):
    """A worker's pool thread is not held for a whole reply (so the turns a worker streams
    at once are not capped by its threads), and stopping the worker waits for the turns it
    is still streaming."""
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = model_server.base_url
    settings.OPENAI_API_KEY = "test-key"
    model = f"fake-{secrets.token_hex(3)}:hold=2:tokens=6"
    # A consultancy: after the consultant's turn the judge is due, so no further turn is
    # queued (on Redis, a task left in the queue would outlive the test).
    session, turn = pending_turn(claim_study, model, protocol="consultancy")
    assert turn.speaker == "C"

    live_tasks.generate_turn(turn.pk)  # the task's body, as a worker runs it
    # Returned with the model holding its stream: the turn is claimed and still streaming.
    assert LiveTurn.objects.get(pk=turn.pk).status == "streaming"
    assert streaming.drain(0.2) is False  # a warm shutdown now would wait for it
    model_server.app.release(model)
    assert streaming.drain(60) is True
    done = LiveTurn.objects.get(pk=turn.pk)
    assert done.status == "done" and done.attempts == 1 and len(done.text.split()) == 6


@pytest.mark.django_db
def test_a_question_stores_the_next_ai_turn_and_the_state_in_one_go(claim_study):
    session, turn = pending_turn(claim_study, "fake")
    LiveTurn.objects.filter(session=session).update(status="done", text="Opening.")
    live_services.session_advance(session_id=session.pk)  # debater B's opening
    LiveTurn.objects.filter(session=session).update(status="done", text="Reply.")

    asked, due, state = live_services.judge_ask_with_state(
        session_id=session.pk, participant_id=session.participant_id, text="Why?", target="both"
    )
    assert (asked.seq, asked.speaker, asked.text, asked.status) == (3, "J", "Why?", "done")
    assert (due.seq, due.speaker, due.round, due.status) == (4, "A", 2, "pending")
    assert LiveTurn.objects.get(pk=due.pk).speaker == "A"  # stored, with its id
    assert state == reloaded_state(session)
    assert state["next"] == "A"


@pytest.mark.django_db
def test_a_stored_reply_creates_the_next_turn_and_reads_the_state_in_one_go(claim_study):
    session, turn = pending_turn(claim_study, "fake")  # debater A's opening
    assert live_services.turn_claim(turn_id=turn.pk) is not None

    due, state = live_services.turn_done(turn_id=turn.pk, session_id=session.pk, text="Opening.")
    stored = LiveTurn.objects.get(pk=turn.pk)
    assert (stored.status, stored.text, stored.error) == ("done", "Opening.", "")
    assert (due.seq, due.speaker, due.round) == (2, "B", 1)
    assert LiveTurn.objects.get(pk=due.pk).status == "pending"  # stored, with its id
    assert state == reloaded_state(session)
    assert state["next"] == "B" and not state["done"]

    # Stored again (a worker that took the turn over, a duplicate): nothing changes.
    assert live_services.turn_done(turn_id=turn.pk, session_id=session.pk, text="Other.") == (None, None)
    assert LiveTurn.objects.get(pk=turn.pk).text == "Opening."
    assert list(LiveTurn.objects.filter(session=session).values_list("seq", flat=True)) == [1, 2]
