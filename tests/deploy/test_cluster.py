"""Scale-out on one machine (devtools/cluster.py): two ASGI servers behind nginx, two Celery
workers and beat, DEBUG off. A design-A participant walks the mystery debate over HTTP and a
design-B participant judges a live debate over HTTP and its websocket, both through nginx;
their requests land on both servers and nothing changes for them."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest
from django.conf import settings
from websockets.sync.client import connect as ws_connect

from debates.demo import loader
from debates.models import DebaterConfig, LiveSession, LiveTurn
from devtools import fakellm
from devtools.cluster import Cluster
from participants.models import Participant, Response
from tests.deploy.http import HTTPClient
from tests.support import servers
from tests.support.cast import Walker

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

PROLIFIC_DONE = "https://app.prolific.com/submissions/complete?cc="
QUESTION = "Which of your sources is the strongest?"


@pytest.fixture(scope="module")
def model_server():
    with fakellm.run_in_thread() as running:
        yield running


@pytest.fixture
def cluster(model_server):
    env = {**servers.LIVE_ENV, "OPENAI_BASE_URL": model_server.base_url}
    with Cluster(
        database_url=servers.test_database_url(), redis_url=settings.REDIS_URL, env=env, worker_concurrency=8
    ) as running:
        yield running


def chat(base: str, token: str, first_target: str = "both") -> dict[int, str]:
    """The live conversation as the browser holds it (static/js/live.js): ask both debaters
    (or the consultant, "C") once, then pass, until it is over. Returns each finished turn's
    text as shown."""
    shown: dict[int, str] = {}
    asked = False
    url = base.replace("http://", "ws://") + f"/ws/live/{token}/"
    with ws_connect(url, origin=base, open_timeout=20) as ws:
        for _ in range(5000):
            m = json.loads(ws.recv(timeout=60))
            if m["type"] == "snapshot":
                shown.update({t["seq"]: t["text"] for t in m["turns"]})
            elif m["type"] == "turn.delta":
                have = shown.get(m["seq"], "")
                assert m["offset"] <= len(have), f"a gap in turn {m['seq']}"
                shown[m["seq"]] = have + m["text"][len(have) - m["offset"] :]
            elif m["type"] in ("turn.start", "turn.reset"):
                shown[m["seq"]] = ""
            elif m["type"] in ("turn.end", "judge.message"):
                shown[m["seq"]] = m["text"]
            elif m["type"] == "error":
                raise AssertionError(m["message"])
            state = m.get("state") if m["type"] == "snapshot" else m
            if not state or state.get("type") != "state":
                continue
            if state["done"]:
                return shown
            if state["next"] == "J":
                target, text = ("pass", "") if asked else (first_target, QUESTION)
                ws.send(json.dumps({"type": "ask", "target": target, "text": text}))
                asked = True
    raise AssertionError("the conversation did not end")


def judge_claims(w: Walker, base: str) -> None:
    """Design B from the study link to Prolific: every claim judged before and after its
    live conversation."""
    for _ in range(30):
        _, form = w.page()
        if not form.position:
            return
        if form.kind == "claim_session" and form.hidden.get("_phase") == "chat":
            session = LiveSession.objects.filter(participant__prolific_pid=w.pid).order_by("-pk").first()
            debate = session.protocol == LiveSession.Protocol.DEBATE
            chat(base, w.url.rstrip("/").rsplit("/", 1)[-1], "both" if debate else "C")
            response = w.submit(form=form)
        elif form.kind == "claim_session":
            answers = {"answer": "true", "confidence": "60", "confidence__touched": "1"}
            answers["justification"] = "The sources quoted on one side were far more specific."
            known = form.field_names | set(form.hidden)
            response = w.submit({k: v for k, v in answers.items() if k in known}, form)
        else:
            response = w.submit({"attention_1": "Disagree"} if "attention_1" in form.radios else None, form)
        assert response.status_code in (302, 303), (form.title, form.errors)
        if w.exit_url:
            return
    raise AssertionError("the study did not end")


def test_participants_are_served_by_both_servers_and_nothing_changes_for_them(cluster):
    mystery = loader.mystery_study()
    claims = loader.claim_study()
    DebaterConfig.objects.update(model="fake-cluster:tps=200:tokens=20")

    reader = Walker(mystery, client=HTTPClient(cluster.url))
    reader.enter()
    reader.walk(answers={"A quick question": {"attention_1": "Strongly disagree"}})

    judge = Walker(claims, client=HTTPClient(cluster.url))
    judge.enter()
    judge_claims(judge, cluster.url)
    time.sleep(1)  # nginx logs a websocket when it closes

    # Nothing changes for them: the completion codes, every answer stored once.
    assert reader.exit_url == PROLIFIC_DONE + mystery.completion_code
    assert judge.exit_url == PROLIFIC_DONE + claims.completion_code
    for w in (reader, judge):
        p = Participant.objects.get(prolific_pid=w.pid)
        assert p.status == Participant.Status.COMPLETED
        keys = Counter(Response.objects.filter(participant=p).values_list("key", flat=True))
        assert keys and max(keys.values()) == 1, keys
    sessions = LiveSession.objects.filter(participant__prolific_pid=judge.pid)
    assert sessions.count() == 2 and all(s.phase == LiveSession.Phase.DONE for s in sessions)
    for session in sessions:
        turns = list(LiveTurn.objects.filter(session=session).order_by("seq"))
        assert [t.seq for t in turns] == list(range(1, len(turns) + 1))  # none written twice
        assert all(t.status == LiveTurn.Status.DONE and t.attempts == 1 for t in turns)

    # Both servers served each participant's pages; the judge's websockets went through nginx
    # to a server too, and both servers carried websockets or pages in between.
    for w in (reader, judge):
        tags = Counter(tag for _, _, tag in w.client.served_by)
        assert set(tags) == {"app1", "app2"}, tags
        assert abs(tags["app1"] - tags["app2"]) <= 2, tags  # round robin
    token = judge.url.rstrip("/").rsplit("/", 1)[-1]
    sockets = [e for e in cluster.access_log() if e["path"] == f"/ws/live/{token}/"]
    assert len(sockets) >= 2 and all(e["status"] == 101 for e in sockets), sockets
    assert {s for e in sockets for s in e["upstreams"]} <= {"app1", "app2"}
    pages = [e for e in cluster.access_log() if token in e["path"] and not e["path"].startswith("/ws/")]
    assert {s for e in pages for s in e["upstreams"]} == {"app1", "app2"}
