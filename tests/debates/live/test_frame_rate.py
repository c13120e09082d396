"""The frame rate the README states for design B's stream: at most 10 text frames a second,
however fast the model writes, with no token kept back longer than the frame interval.

The first test drives the relay alone (fast, any database); the second streams a fast fake
model through a Celery worker, Redis and uvicorn to a real websocket client, and counts the
frames the judge receives per second."""

from __future__ import annotations

import asyncio
import secrets
import time

import pytest

from debates.models import LiveTurn
from debates.streaming import Relay, frame_interval
from tests.support.servers import asgi_server, celery_worker

PROMISED = 10  # frames a second: the README's rate, LIVE_MAX_FRAMES_PER_SECOND's default


@pytest.fixture(autouse=True)
def _the_promised_rate(settings):
    settings.LIVE_MAX_FRAMES_PER_SECOND = PROMISED
    settings.LIVE_FLUSH_MS = 100


def most_in_one_second(times: list[float]) -> int:
    """The largest number of frames received within any one second (a sliding window)."""
    return max(sum(1 for t in times[i:] if t - start < 1.0) for i, start in enumerate(times))


async def alive() -> None:
    pass


class Buffer:
    async def append(self, turn_id: int, text: str) -> None:
        await asyncio.sleep(0)  # as Redis: the relay yields to the loop while it appends


def test_the_relay_sends_at_most_ten_frames_a_second_from_a_model_writing_750_tokens_a_second(settings):
    settings.LIVE_FLUSH_MS = 30  # the in-process default: the 100 ms floor still holds
    frames: list[tuple[float, str]] = []

    async def send(frame: dict) -> None:
        await asyncio.sleep(0)  # a broadcast yields to the loop too
        frames.append((time.monotonic(), frame["text"]))

    async def stream() -> str:
        relay = Relay(turn_id=1, seq=1, send=send, heartbeat=alive, buffer=Buffer())
        relay.start()
        written = ""
        started = time.monotonic()
        while time.monotonic() - started < 1.5:
            await asyncio.sleep(0.004)
            for _ in range(3):  # tokens come in bursts, several from one network read
                piece = f"w{len(written)} "
                written += piece
                await relay.on_text(piece)
        await relay.finish()
        relay.stop()
        return written

    written = asyncio.run(stream())
    times = [t for t, _ in frames]
    assert frame_interval() == pytest.approx(0.1)
    assert "".join(text for _, text in frames) == written  # coalesced, nothing lost or reordered
    assert len(written.split()) > 300  # the model really was fast
    assert most_in_one_second(times) <= PROMISED
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.099  # the reply's last frame too
    assert max(gaps) < 0.1 + 0.1  # and no text waited much longer than the interval


def test_a_replys_last_frame_waits_for_the_interval_the_browser_is_promised_not_the_stretched_one(
    settings,
):
    """Under load the interval between frames is stretched (here ×3: three streams, one per
    interval), but the end of a reply waits only until the plain interval is up since the
    previous frame: the next speaker's turn starts after it."""
    settings.LIVE_FLUSH_MS = 100
    settings.LIVE_STREAMS_PER_INTERVAL = 1
    frames: list[float] = []

    async def send(frame: dict) -> None:
        frames.append(time.monotonic())

    async def stream() -> float:
        relays = [Relay(turn_id=n, seq=1, send=send, heartbeat=alive, buffer=Buffer()) for n in (1, 2, 3)]
        for relay in relays:
            relay.start()
        relay = relays[0]
        await relay.on_text("first ")  # out at once
        await asyncio.sleep(0.02)
        await relay.on_text("last ")  # would wait 300 ms for the stretched interval
        await relay.finish()
        ended = time.monotonic()
        for each in relays:
            each.stop()
        return ended

    ended = asyncio.run(stream())
    assert len(frames) == 2
    assert 0.099 <= frames[1] - frames[0] < 0.2  # the plain interval, not 0.3 s
    assert ended - frames[0] < 0.2


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_judge_receives_at_most_ten_text_frames_a_second_from_a_fast_model(live_env):
    from tests.debates.live.test_streaming import Judge, reach_chat

    # 400 tokens at 200 a second: two seconds of streaming, 20 tokens per 100 ms.
    w, session = reach_chat(f"fake-{secrets.token_hex(3)}:tps=200:tokens=400")
    received: list[float] = []
    with celery_worker("-P", "threads", "-c", "4", **live_env), asgi_server(**live_env) as base:
        w.submit({"answer": "true", "confidence": "35"})  # enter the chat: turn 1 goes to a worker
        judge = Judge(base, session.participant.token)
        judge.open()
        handle = judge.handle

        def counting(message: dict) -> None:
            if message["type"] == "turn.delta" and message["seq"] == 1:
                received.append(time.monotonic())
            handle(message)

        judge.handle = counting
        judge.until(lambda: 1 in judge.ended)
        judge.close()
    stored = LiveTurn.objects.get(session=session, seq=1).text
    assert judge.texts[1] == stored and len(stored.split()) == 400
    seconds = received[-1] - received[0]
    print(
        f"\n{len(received)} frames in {seconds:.2f} s; at most {most_in_one_second(received)} in one second"
    )
    assert seconds > 1.0  # it streamed, in many frames
    # Frames leave the worker at least 100 ms apart; on the way (Redis, the server) two may
    # arrive closer together, so one frame of slack in a window.
    assert most_in_one_second(received) <= PROMISED + 1


@pytest.fixture(scope="module")
def model_server():
    from devtools import fakellm

    with fakellm.run_in_thread() as running:
        yield running


@pytest.fixture
def live_env(model_server, settings):
    from tests.support.servers import LIVE_ENV

    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = model_server.base_url
    return {**LIVE_ENV, "OPENAI_BASE_URL": model_server.base_url}


def test_a_frame_lost_on_the_way_is_logged_with_its_turn(settings, caplog):
    """A timer's frame that Redis drops is reported with its turn at once (the browser
    learns of the gap from the next frame's offset), not left to asyncio's "exception was
    never retrieved" whenever the task is collected."""
    settings.LIVE_FLUSH_MS = 100

    class Failing:
        calls = 0

        async def append(self, turn_id: int, text: str) -> None:
            Failing.calls += 1
            if Failing.calls == 2:
                raise ConnectionError("Connection closed by server.")

    async def send(frame: dict) -> None:
        pass

    async def stream() -> None:
        relay = Relay(turn_id=7, seq=1, send=send, heartbeat=alive, buffer=Failing())
        relay.start()
        await relay.on_text("first ")  # out at once
        await relay.on_text("second ")  # waits for the timer, whose frame fails
        await asyncio.sleep(0.2)
        relay.stop()

    with caplog.at_level("WARNING"):
        asyncio.run(stream())
    assert Failing.calls == 2
    lost = [r for r in caplog.records if r.getMessage() == "turn 7: a frame was not sent"]
    assert len(lost) == 1 and isinstance(lost[0].exc_info[1], ConnectionError)
