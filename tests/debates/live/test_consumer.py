"""The judge's websocket, driven by Channels' communicator on the in-memory layer."""

import asyncio
import logging

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from config.asgi import application
from debates import streaming
from debates.live import tasks as live_tasks
from debates.models import LiveSession, LiveTurn
from tests.support.cast import Walker
from tests.support.ws import ASGIWebsocket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def chat_phase(study, protocol="debate") -> tuple[Walker, LiveSession]:
    w = Walker(study)
    w.enter()
    w.walk(stop_before="Claim 1 of 2")
    w.page()
    session = LiveSession.objects.get(participant__prolific_pid=w.pid)
    LiveSession.objects.filter(pk=session.pk).update(
        protocol=protocol, side_a="true", consultant_side="false", debater_b=session.debater_a_id
    )
    return w, session


def an_ai_writing(session: LiveSession) -> None:
    """After the initial judgement: the debaters' openings, written in the background, are
    waited for (so nothing runs meanwhile), then the last is marked as being written (a
    fresh heartbeat: nobody else takes it)."""
    assert streaming.drain(30)
    last = LiveTurn.objects.filter(session=session).order_by("-seq").first()
    LiveTurn.objects.filter(pk=last.pk).update(status="streaming", heartbeat_at=timezone.now())


def connect(token: str) -> ASGIWebsocket:
    return ASGIWebsocket(application, f"/ws/live/{token}/")


async def receive_until(communicator, predicate, timeout=10.0) -> list[dict]:
    seen = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        message = await communicator.receive_json(timeout=max(remaining, 0.01))
        seen.append(message)
        if predicate(message):
            return seen


def test_an_unknown_token_is_refused(claim_study):
    async def body():
        communicator = connect("nope")
        connected, code = await communicator.connect()
        assert not connected and code == 4403

    async_to_sync(body)()


def test_a_participant_not_in_a_conversation_is_refused(claim_study, caplog):
    w, session = chat_phase(claim_study)  # still on the initial judgement
    token = session.participant.token

    async def body():
        connected, code = await connect(token).connect()
        assert not connected and code == 4403

    with caplog.at_level(logging.INFO, logger="debates.sockets"):
        async_to_sync(body)()
    assert f"participant {session.participant_id}: no debate in its chat phase" in caplog.text
    assert token not in caplog.text


def test_a_whole_round_streams_and_the_judge_can_ask(claim_study):
    w, session = chat_phase(claim_study)
    token = session.participant.token
    finished: dict[int, str] = {}

    async def body():
        live_tasks.register_local_loop(asyncio.get_running_loop())  # as the server does
        await sync_to_async(w.submit)({"answer": "true", "confidence": "30"})  # enter the chat: turn 1 queued
        communicator = connect(token)
        connected, _ = await communicator.connect()
        assert connected
        first = await communicator.receive_json(timeout=5)
        assert first["type"] == "snapshot"
        seen = await receive_until(communicator, lambda m: m["type"] == "state" and m["next"] == "J")
        # As the browser does: the snapshot, then deltas placed by their offsets.
        texts = {t["seq"]: t["text"] for t in first["turns"]}
        for m in seen:
            if m["type"] == "turn.start":
                texts[m["seq"]] = ""
            elif m["type"] == "turn.delta":
                have = texts.get(m["seq"], "")
                assert m["offset"] <= len(have), "a gap"
                texts[m["seq"]] = have + m["text"][len(have) - m["offset"] :]
            elif m["type"] == "turn.end":
                assert texts[m["seq"]] == m["text"]
        finished.update(texts)

        await communicator.send_json({"type": "ask", "target": "B", "text": "<b>Which</b> source?"})
        seen = await receive_until(communicator, lambda m: m["type"] == "judge.message")
        assert seen[-1]["text"] == "<b>Which</b> source?"  # stored as written; the page escapes it
        seen = await receive_until(communicator, lambda m: m["type"] == "turn.end" and m["seq"] == 5)
        await communicator.disconnect()

    async_to_sync(body)()
    stored = dict(LiveTurn.objects.filter(session=session, seq__lte=2).values_list("seq", "text"))
    assert finished[1] == stored[1] and finished[2] == stored[2]  # nothing lost, doubled or reordered
    assert list(LiveTurn.objects.filter(session=session).values_list("speaker", "status")) == [
        ("A", "done"),
        ("B", "done"),
        ("J", "done"),
        ("A", "done"),
        ("B", "done"),
    ]


def test_a_message_out_of_turn_gets_an_error_and_changes_nothing(claim_study):
    w, session = chat_phase(claim_study)
    w.submit({"answer": "true", "confidence": "30"})
    an_ai_writing(session)
    token = session.participant.token

    async def body():
        communicator = connect(token)
        await communicator.connect()
        await communicator.receive_json(timeout=5)  # snapshot
        await communicator.send_json({"type": "ask", "target": "A", "text": "Hello?"})
        reply = await communicator.receive_json(timeout=5)
        assert reply == {"type": "error", "message": "Please wait: it is not your turn yet."}
        await communicator.send_json({"type": "nonsense"})
        assert (await communicator.receive_json(timeout=5))["message"] == "Unknown message."
        await communicator.send_text("not json")
        assert (await communicator.receive_json(timeout=5))["message"] == "Unreadable message."
        await communicator.disconnect()

    async_to_sync(body)()
    assert not LiveTurn.objects.filter(session=session, speaker="J").exists()


def test_a_reconnection_gets_the_conversation_so_far(claim_study):
    w, session = chat_phase(claim_study)
    token = session.participant.token

    async def body():
        live_tasks.register_local_loop(asyncio.get_running_loop())
        await sync_to_async(w.submit)({"answer": "true", "confidence": "30"})
        first = connect(token)
        await first.connect()
        await receive_until(first, lambda m: m["type"] == "state" and m["next"] == "J")
        await first.disconnect()
        second = connect(token)
        await second.connect()
        snapshot = await second.receive_json(timeout=5)
        assert snapshot["type"] == "snapshot"
        assert [(t["seq"], t["speaker"], t["status"]) for t in snapshot["turns"]] == [
            (1, "A", "done"),
            (2, "B", "done"),
        ]
        assert all(t["text"] for t in snapshot["turns"])
        assert snapshot["state"]["next"] == "J"
        assert snapshot["state"]["sides"] == {"A": "true", "B": "false"}
        await second.disconnect()

    async_to_sync(body)()


def test_a_german_judge_is_answered_in_german(claim_study):
    """The socket speaks the language the participant entered in (errors of the shared frame
    reader and of the services alike); English participants above are unchanged."""
    from participants.models import Participant
    from studies.models import StudyTranslation

    StudyTranslation.objects.create(study=claim_study, language="de")
    w, session = chat_phase(claim_study)
    w.submit({"answer": "true", "confidence": "30"})
    Participant.objects.filter(pk=session.participant_id).update(language="de")
    an_ai_writing(session)
    token = session.participant.token

    async def body():
        communicator = connect(token)
        await communicator.connect()
        await communicator.receive_json(timeout=5)  # snapshot
        replies = []
        for message in ({"type": "ask", "target": "A", "text": "Hallo?"}, {"type": "nonsense"}):
            await communicator.send_json(message)
            replies.append((await communicator.receive_json(timeout=5))["message"])
        await communicator.send_text("not json")
        replies.append((await communicator.receive_json(timeout=5))["message"])
        await communicator.disconnect()
        return replies

    assert async_to_sync(body)() == [
        "Bitte warten Sie: Sie sind noch nicht an der Reihe.",
        "Unbekannte Nachricht.",
        "Unlesbare Nachricht.",
    ]
