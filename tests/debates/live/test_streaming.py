"""The production path of a live debate: uvicorn serving the websocket, real Celery workers
writing turns with the real `openai` client against our OpenAI-compatible server, tokens
relayed through Redis (channel layer and stream buffer), a real websocket client."""

from __future__ import annotations

import json
import os
import secrets
import signal
import time

import pytest
from django.conf import settings
from websockets.sync.client import connect as ws_connect

from debates.demo import loader
from debates.live import tasks as live_tasks
from debates.models import DebaterConfig, LiveSession, LiveTurn
from devtools import fakellm
from tests.support.cast import Walker
from tests.support.servers import LIVE_ENV, asgi_server, celery_worker

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def model_server():
    with fakellm.run_in_thread() as running:
        yield running


@pytest.fixture
def live_env(model_server, settings):
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = model_server.base_url
    settings.LIVE_TURN_STUCK_S = 2
    return {**LIVE_ENV, "OPENAI_BASE_URL": model_server.base_url}


def reach_chat(model: str) -> tuple[Walker, LiveSession]:
    study = loader.claim_study()
    DebaterConfig.objects.update(model=model)
    w = Walker(study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    LiveSession.objects.filter(pk=session.pk).update(
        protocol="debate", side_a="false", debater_b=session.debater_a_id
    )
    return w, session


class Judge:
    """The browser's logic (static/js/live.js), in Python: snapshot, then deltas by offset."""

    def __init__(self, base: str, token: str) -> None:
        self.url = base.replace("http://", "ws://") + f"/ws/live/{token}/"
        self.texts: dict[int, str] = {}
        self.ended: dict[int, str] = {}
        self.starts: list[tuple[int, int]] = []
        self.state: dict = {}
        self.socket = None

    def open(self) -> None:
        self._connection = ws_connect(self.url, origin="http://127.0.0.1", open_timeout=10)
        self.socket = self._connection.__enter__()

    def close(self) -> None:
        self._connection.__exit__(None, None, None)

    def send(self, message: dict) -> None:
        self.socket.send(json.dumps(message))

    def handle(self, m: dict) -> None:
        kind = m["type"]
        if kind == "snapshot":
            self.texts = {t["seq"]: t["text"] for t in m["turns"]}
            self.state = m["state"]
        elif kind == "turn.start":
            self.starts.append((m["seq"], m["attempt"]))
            self.texts[m["seq"]] = ""
        elif kind == "turn.delta":
            have = self.texts.get(m["seq"], "")
            assert m["offset"] <= len(have), f"gap in turn {m['seq']}: {m['offset']} > {len(have)}"
            self.texts[m["seq"]] = have + m["text"][len(have) - m["offset"] :]
        elif kind == "turn.end":
            self.ended[m["seq"]] = m["text"]
            self.texts[m["seq"]] = m["text"]
        elif kind == "state":
            self.state = m

    def until(self, predicate, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"timed out; state={self.state} ended={sorted(self.ended)}"
            self.handle(json.loads(self.socket.recv(timeout=remaining)))


def test_a_debate_streams_through_workers_and_redis_to_the_judge(live_env):
    w, session = reach_chat(f"fake-{secrets.token_hex(3)}:tps=200:tokens=40")
    with celery_worker("-P", "threads", "-c", "8", **live_env), asgi_server(**live_env) as base:
        w.submit({"answer": "true", "confidence": "35"})  # enter the chat: turn 1 goes to a worker
        judge = Judge(base, session.participant.token)
        judge.open()
        judge.until(lambda: judge.state.get("next") == "J" and 2 in judge.ended)
        judge.send({"type": "ask", "target": "both", "text": "What is your best source?"})
        judge.until(lambda: 5 in judge.ended)
        judge.close()
    turns = {t.seq: t for t in LiveTurn.objects.filter(session=session)}
    assert [turns[s].speaker for s in sorted(turns)] == ["A", "B", "J", "A", "B"]
    for seq in (1, 2, 4, 5):
        assert turns[seq].status == "done"
        assert judge.ended[seq] == judge.texts[seq] == turns[seq].text  # nothing lost, doubled or reordered
        assert len(turns[seq].text.split()) == 40
    assert turns[3].text == "What is your best source?"


def test_a_judge_who_reconnects_mid_turn_loses_nothing(live_env):
    w, session = reach_chat(f"fake-{secrets.token_hex(3)}:tps=25:tokens=75")  # 3 s per turn
    with celery_worker("-P", "threads", "-c", "4", **live_env), asgi_server(**live_env) as base:
        w.submit({"answer": "true", "confidence": "35"})
        first = Judge(base, session.participant.token)
        first.open()
        first.until(lambda: len(first.texts.get(1, "")) > 40)
        seen_before = first.texts[1]
        first.close()  # the network drops mid-turn
        second = Judge(base, session.participant.token)
        second.open()
        second.until(lambda: second.state != {})
        assert second.texts[1].startswith(seen_before)  # the snapshot carries what was written
        second.until(lambda: 1 in second.ended)
        second.close()
    stored = LiveTurn.objects.get(session=session, seq=1).text
    assert second.texts[1] == second.ended[1] == stored
    assert len(stored.split()) == 75


def test_a_worker_killed_mid_turn_is_replaced_and_the_turn_written_again(live_env):
    w, session = reach_chat(f"fake-{secrets.token_hex(3)}:tps=20:tokens=80")  # 4 s per turn
    with asgi_server(**live_env) as base:
        with celery_worker("-P", "threads", "-c", "4", **live_env) as doomed:
            w.submit({"answer": "true", "confidence": "35"})
            judge = Judge(base, session.participant.token)
            judge.open()
            judge.until(lambda: len(judge.texts.get(1, "")) > 20)
            os.kill(doomed.pid, signal.SIGKILL)  # mid-stream, with the task unacknowledged
            doomed.wait(10)
        # A new worker with beat: the watchdog finds the turn's heartbeat stale and re-queues it.
        with celery_worker(
            "-P", "threads", "-c", "4", "-B", "-s", f"/tmp/beat-{secrets.token_hex(4)}", **live_env
        ):
            judge.until(lambda: 1 in judge.ended, timeout=40)
        judge.close()
    turn = LiveTurn.objects.get(session=session, seq=1)
    assert turn.status == "done" and turn.attempts == 2
    assert (1, 2) in judge.starts  # the judge saw the turn start again
    assert judge.texts[1] == turn.text and len(turn.text.split()) == 80


def test_a_turn_pushed_while_no_worker_runs_is_written_by_the_next_one(live_env):
    """Turns are started through a Redis list (debates.live.tasks.QUEUE) that the workers
    read: an id pushed while every worker is down (a deploy) waits there for the next."""
    import redis

    w, session = reach_chat(f"fake-{secrets.token_hex(3)}:tps=200:tokens=30")
    redis.Redis.from_url(settings.REDIS_URL).delete(live_tasks.QUEUE)
    w.submit({"answer": "true", "confidence": "35"})  # turn 1 is due, and nobody reads the queue
    turn = LiveTurn.objects.get(session=session, seq=1)
    assert redis.Redis.from_url(settings.REDIS_URL).lrange(live_tasks.QUEUE, 0, -1) == [str(turn.pk).encode()]
    assert turn.status == "pending"
    with celery_worker("-P", "threads", "-c", "2", **live_env):  # no judge connects to kick it
        deadline = time.monotonic() + 30
        while turn.status != "done" and time.monotonic() < deadline:
            time.sleep(0.2)
            turn.refresh_from_db()
    assert turn.status == "done" and turn.attempts == 1 and len(turn.text.split()) == 30
