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
