"""What the persuasion websocket says, in the participant's language: consumers do not pass
through the participant-language middleware, so the consumer activates the participant's
language itself. A German participant's refused turns and the dialogue's outcome are German;
an English participant of the same study keeps English on the same socket code."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.test import Client

from config.asgi import application
from debates.models import PersuasionTurn
from debates.persuasion import services
from debates.persuasion.realtime import CHANGED, abroadcast
from participants.models import Participant
from participants.services import participant_mark_returned
from studies.models import StudyTranslation
from tests.support import persuasion as ps
from tests.support.cast import Walker
from tests.support.ws import ASGIWebsocket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)
    yield
    ps.close_thread_connections()


def seated(study, accept_language: str) -> Participant:
    """A participant who entered with this browser language, consented and was shown the
    dialogue (so is seated in it)."""
    w = Walker(study, client=Client(HTTP_ACCEPT_LANGUAGE=accept_language))
    w.enter()
    _, consent = w.page()
    assert w.submit(form=consent).status_code in (302, 303)
    w.page()
    return ps.person(w)


def german_study(**config):
    study = ps.dialogue_study(**config)
    StudyTranslation.objects.create(study=study, language="de")
    return study


def test_a_german_participants_refused_turns_are_german_and_an_english_ones_english():
    study = german_study(side="pro", max_sentences=2)
    german, english = seated(study, "de-DE,de;q=0.9"), seated(study, "en-GB")
    assert (german.language, english.language) == ("de", "en")

    async def errors(token: str) -> list[str]:
        socket = ASGIWebsocket(application, f"/ws/persuasion/{token}/")
        assert (await socket.connect())[0]
        assert (await socket.receive_json())["type"] == "snapshot"
        replies = []
        for message in (
            {"type": "say", "text": "   "},
            {"type": "say", "text": "One. Two. Three."},
            {"type": "say", "text": "x" * 1501},
            {"type": "shout"},
        ):
            await socket.send_json(message)
            replies.append(await socket.receive_json())
        await socket.disconnect()
        assert {r["type"] for r in replies} == {"error"}
        return [r["message"] for r in replies]

    assert async_to_sync(errors)(german.token) == [
        "Schreiben Sie mindestens einen Satz.",
        "Schreiben Sie höchstens 2 Sätze: Dieser Beitrag hat 3.",
        "Ihr Beitrag ist zu lang: höchstens 1500 Zeichen.",
        "Unbekannte Nachricht.",
    ]
    assert async_to_sync(errors)(english.token) == [
        "Write at least one sentence.",
        "Write at most 2 sentences: this has 3.",
        "Your turn is too long: at most 1500 characters.",
        "Unknown message.",
    ]
    assert not PersuasionTurn.objects.exists()


def test_a_german_participant_is_told_in_german_that_the_partner_left():
    study = german_study(opponent="human")
    english = seated(study, "en")
    german = seated(study, "de")
    dialogue = ps.dialogue_of(german)
    assert ps.dialogue_of(english).pk == dialogue.pk

    async def body():
        socket = ASGIWebsocket(application, f"/ws/persuasion/{german.token}/")
        assert (await socket.connect())[0]
        first = await socket.receive_json()
        await sync_to_async(participant_mark_returned)(participant=english)
        assert await sync_to_async(services.dialogue_check)(dialogue_id=dialogue.pk)
        await abroadcast(dialogue.pk, CHANGED)
        snap = await socket.receive_json()
        await socket.disconnect()
        return first, snap

    first, snap = async_to_sync(body)()
    assert first["outcome"] == "" and first["ended"] is False
    assert (snap["status"], snap["ended"]) == ("abandoned", True)
    assert snap["outcome"] == (
        "Ihr Gegenüber hat den Dialog verlassen. Vielen Dank: Klicken Sie auf „Weiter“, um fortzufahren."
    )


def test_a_german_participants_malformed_frames_are_answered_in_german_by_the_shared_socket_base():
    """The frame reader (debates.sockets) answers junk before any consumer code runs; it speaks
    the language the consumer's `open()` set."""
    study = german_study(side="pro")
    german, english = seated(study, "de"), seated(study, "en")

    async def errors(token: str) -> list[str]:
        socket = ASGIWebsocket(application, f"/ws/persuasion/{token}/")
        assert (await socket.connect())[0]
        assert (await socket.receive_json())["type"] == "snapshot"
        replies = []
        for frame in ("not json", '{"type": "say", "text": "a\\u0000b"}', "[" * 50 + "]" * 50):
            await socket.send_text(frame)
            replies.append(await socket.receive_json())
        await socket.disconnect()
        assert {r["type"] for r in replies} == {"error"}
        return [r["message"] for r in replies]

    assert async_to_sync(errors)(german.token) == [
        "Unlesbare Nachricht.",
        "Nachrichten dürfen kein NUL-Zeichen enthalten.",
        "Nachricht zu tief verschachtelt: höchstens 20 Ebenen.",
    ]
    assert async_to_sync(errors)(english.token) == [
        "Unreadable message.",
        "Messages cannot contain a NUL character.",
        "Message nested too deeply: at most 20 levels.",
    ]


def test_why_a_sentence_did_not_count_is_stored_in_english_and_shown_in_german():
    """The protocol's refusal reasons are stored as written (the data stays in one language);
    the German participant's page reads them in German."""
    from django.utils import timezone

    from debates.persuasion import protocol

    study = german_study(side="pro")
    german, english = seated(study, "de"), seated(study, "en")
    for participant in (german, english):
        PersuasionTurn.objects.create(
            dialogue=ps.dialogue_of(participant),
            seq=1,
            speaker="pro",
            author="human",
            text="I take it all back.",
            status=PersuasionTurn.Status.DONE,
            sentences=[
                {
                    "text": "I take it all back.",
                    "kind": "retract",
                    "target": 1,
                    "proposition": "x",
                    "premises": [],
                    "legal": False,
                    "reason": protocol.GAME_OVER,
                    "fallback": False,
                },
            ],
            created_at=timezone.now(),
        )

    async def reason(token: str) -> str:
        socket = ASGIWebsocket(application, f"/ws/persuasion/{token}/")
        assert (await socket.connect())[0]
        snapshot = await socket.receive_json()
        await socket.disconnect()
        (turn,) = [t for t in snapshot["turns"] if t["seq"] == 1]
        return turn["sentences"][0]["reason"]

    assert async_to_sync(reason)(german.token) == "Die Debatte ist beendet."
    assert async_to_sync(reason)(english.token) == "The debate is over."
    stored = PersuasionTurn.objects.filter(dialogue=ps.dialogue_of(german)).get(seq=1).sentences
    assert stored[0]["reason"] == "The debate is over."
