"""The participant's websocket in a persuasion dialogue, driven over ASGI on the in-memory
layer with the offline model: who may connect, what each side's snapshot holds, a turn said
and the agent's streamed reply, both people of a human-human dialogue kept up to date, and
what an illegal, unreadable or too frequent message gets."""

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from config.asgi import application
from debates.models import PersuasionTurn
from debates.persuasion import services
from debates.persuasion.consumer import MAX_MESSAGES_PER_MINUTE
from debates.persuasion.realtime import CHANGED, abroadcast, group_name
from debates.streaming import register_local_loop
from participants.services import participant_mark_returned
from tests.support import persuasion as ps
from tests.support.ws import ASGIWebsocket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

TOPIC_PRO = "The UK government should intervene more in the economy."
TOPIC_CON = "The UK government should not intervene more in the economy."


@pytest.fixture(autouse=True)
def offline_backend(settings):
    ps.use_offline(settings)
    yield
    ps.close_thread_connections()  # turns started by a page ran on the process's loop


def connect(token: str) -> ASGIWebsocket:
    return ASGIWebsocket(application, f"/ws/persuasion/{token}/")


def at_dialogue(study):
    """A participant whose dialogue page was shown (so they are seated); (walker, participant)."""
    w = ps.arrive(study)
    w.page()
    return w, ps.person(w)


async def receive_until(socket, predicate, timeout=30.0) -> list[dict]:
    seen = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        message = await socket.receive_json(timeout=max(deadline - loop.time(), 0.01))
        seen.append(message)
        if predicate(message):
            return seen


def snapshot_where(predicate):
    return lambda m: m["type"] == "snapshot" and predicate(m)


def test_an_unknown_token_is_refused():
    async def body():
        assert await connect("nope").connect() == (False, 4403)

    async_to_sync(body)()


def test_a_participant_not_yet_at_the_dialogue_is_refused():
    study = ps.dialogue_study()
    token = ps.person(ps.arrive(study)).token  # at the step, but not seated yet
    w = ps.Walker(study)
    w.enter()  # still at the consent page
    early = ps.person(w).token

    async def body():
        assert await connect(token).connect() == (False, 4403)
        assert await connect(early).connect() == (False, 4403)

    async_to_sync(body)()


def test_the_opening_side_sees_its_turn_and_what_it_may_reply_to():
    _, participant = at_dialogue(ps.dialogue_study(side="pro"))

    async def body():
        socket = connect(participant.token)
        assert (await socket.connect())[0]
        snap = await socket.receive_json()
        await socket.disconnect()
        return snap

    snap = async_to_sync(body)()
    assert snap["type"] == "snapshot"
    assert (snap["side"], snap["status"], snap["pairing"], snap["to_move"]) == (
        "pro",
        "running",
        "human_ai",
        "pro",
    )
    assert snap["my_turn"] is True and snap["ended"] is False and snap["outcome"] == ""
    assert snap["claims"] == {"pro": TOPIC_PRO, "con": TOPIC_CON}
    assert snap["stores"] == {"pro": [TOPIC_PRO], "con": [TOPIC_CON]}
    assert snap["turns"] == [] and snap["turns_played"] == 0
    assert (snap["max_turns"], snap["max_sentences"]) == (20, 5)
    assert snap["deadline"] and snap["last_move_at"]
    # The opponent's initial claim is open to every reply a claim admits.
    (target,) = snap["admissible"]
    assert (target["target"], target["kind"], target["text"]) == (1, "claim", TOPIC_CON)
    assert set(target["replies"]) >= {"why", "claim", "concede", "question"}


def test_the_answering_side_waits_for_the_agent_then_gets_its_turn():
    # The page started the agent's turn, to be written after its 1 s reply delay.
    _, participant = at_dialogue(ps.dialogue_study(side="con", delay_min_s=1, delay_max_s=1))

    async def body():
        register_local_loop(asyncio.get_running_loop())  # as the server does: turns run here
        socket = connect(participant.token)
        assert (await socket.connect())[0]  # a turn nobody holds is started on connection
        first = await socket.receive_json()
        seen = await receive_until(socket, snapshot_where(lambda m: m["my_turn"]))
        await socket.disconnect()
        return first, seen

    first, seen = async_to_sync(body)()
    assert (first["side"], first["my_turn"], first["admissible"]) == ("con", False, [])
    (ended,) = [m for m in seen if m["type"] == "turn.end"]
    last = seen[-1]
    assert last["to_move"] == "con" and last["admissible"]
    assert [(t["seq"], t["speaker"], t["status"]) for t in last["turns"]] == [(1, "pro", "done")]
    assert last["turns"][0]["text"] == ended["text"]
    assert all("kind" in s for s in last["turns"][0]["sentences"])
    assert PersuasionTurn.objects.get().attempts == 1  # written once, though started twice


def test_a_turn_said_is_read_and_answered_by_the_agent():
    _, participant = at_dialogue(ps.dialogue_study(side="pro"))
    dialogue = ps.dialogue_of(participant)
    text = ps.human_text(dialogue, "pro")

    async def body():
        register_local_loop(asyncio.get_running_loop())
        socket = connect(participant.token)
        await socket.connect()
        await socket.receive_json()
        await socket.send_json({"type": "say", "text": text})
        seen = await receive_until(socket, snapshot_where(lambda m: m["my_turn"] and m["turns_played"] == 2))
        await socket.disconnect()
        return seen

    seen = async_to_sync(body)()
    # Said: the first snapshot holds the text, being read, unless the offline reader (which
    # runs on this loop) has already finished it by the time the snapshot is taken (CI's run
    # of 2026-12-03 met that). Either way the turn goes reading -> done, never back.
    assert seen[0]["type"] == "snapshot" and seen[0]["turns"][0]["text"] == text
    statuses = [m["turns"][0]["status"] for m in seen if m["type"] == "snapshot"]
    assert set(statuses) <= {"reading", "done"} and statuses == sorted(statuses, key=lambda s: s == "done")
    assert all(not m["my_turn"] for m in seen[:-1] if m["type"] == "snapshot")
    mine = seen[-1]["turns"][0]
    assert mine["status"] == "done" and mine["sentences"] and all(s["legal"] for s in mine["sentences"])
    assert seen[-1]["stores"]["pro"][0] == TOPIC_PRO
    assert list(PersuasionTurn.objects.filter(dialogue=dialogue).values_list("author", "status")) == [
        ("human", "done"),
        ("agent", "done"),
    ]


def test_both_people_of_a_human_dialogue_get_a_fresh_snapshot_after_a_turn():
    study = ps.dialogue_study(opponent="human")
    _, a = at_dialogue(study)
    _, b = at_dialogue(study)
    dialogue = ps.dialogue_of(a)
    sides = {dialogue.side_of(a.pk): a, dialogue.side_of(b.pk): b}
    text = ps.human_text(dialogue, "pro")

    async def body():
        register_local_loop(asyncio.get_running_loop())
        sockets = {side: connect(p.token) for side, p in sides.items()}
        first = {}
        for side, socket in sockets.items():
            assert (await socket.connect())[0]
            first[side] = await socket.receive_json()
        await sockets["pro"].send_json({"type": "say", "text": text})
        after = {}
        for side, socket in sockets.items():
            after[side] = await receive_until(
                socket, snapshot_where(lambda m: m["turns"] and m["turns"][0]["status"] == "done")
            )
        for socket in sockets.values():
            await socket.disconnect()
        return first, after

    first, after = async_to_sync(body)()
    assert first["pro"]["my_turn"] and not first["con"]["my_turn"]
    assert first["pro"]["pairing"] == first["con"]["pairing"] == "human_human"
    for side in ("pro", "con"):
        last = after[side][-1]
        assert last["side"] == side and last["turns"][0]["text"] == text
        assert last["my_turn"] is (side == "con")
        assert bool(last["admissible"]) is (side == "con")
        assert last["stores"] == after["pro"][-1]["stores"]
    assert not PersuasionTurn.objects.filter(author="agent").exists()


def test_a_page_is_told_when_its_partner_left():
    study = ps.dialogue_study(opponent="human")
    _, a = at_dialogue(study)
    _, b = at_dialogue(study)
    dialogue = ps.dialogue_of(a)

    async def body():
        socket = connect(b.token)
        assert (await socket.connect())[0]
        await socket.receive_json()
        await sync_to_async(participant_mark_returned)(participant=a)  # returned on Prolific
        assert await sync_to_async(services.dialogue_check)(dialogue_id=dialogue.pk)
        await abroadcast(dialogue.pk, CHANGED)
        snap = await socket.receive_json()
        await socket.disconnect()
        return snap

    snap = async_to_sync(body)()
    assert (snap["type"], snap["status"], snap["ended"]) == ("snapshot", "abandoned", True)
    assert snap["outcome"] == "Your partner left the dialogue. Thank you: press Continue to go on."


def test_a_page_whose_clock_ends_the_dialogue_tells_its_partner_even_if_it_closes_meanwhile(
    monkeypatch, settings
):
    """A participant returns the study on Prolific as they close the tab: their page's clock
    check ends the dialogue, and the socket closes while that check is still in its thread.
    The other page must still be told (it used to wait for ever: the closing cancelled the
    check before its broadcast)."""
    settings.PERSUASION_CHECK_SECONDS = 0.05
    study = ps.dialogue_study(opponent="human")
    _, a = at_dialogue(study)
    _, b = at_dialogue(study)
    dialogue = ps.dialogue_of(a)
    ended, go = threading.Event(), threading.Event()
    real_check = services.dialogue_check

    def check_held_open(**kwargs):  # the real check; one that ended the dialogue waits for `go`
        result = real_check(**kwargs)
        if result:
            ended.set()
            go.wait(10)
        return result

    monkeypatch.setattr(services, "dialogue_check", check_held_open)

    async def body():
        layer = get_channel_layer()
        partner_page = await layer.new_channel()  # b's page, listening to the dialogue's group
        await layer.group_add(group_name(dialogue.pk), partner_page)
        socket = connect(a.token)
        assert (await socket.connect())[0]
        await socket.receive_json()
        await sync_to_async(participant_mark_returned)(participant=a)
        assert await sync_to_async(ended.wait, thread_sensitive=False)(10)
        closing = asyncio.ensure_future(socket.disconnect())  # the tab closes mid-check
        await asyncio.sleep(0.3)
        go.set()
        await closing
        return await asyncio.wait_for(layer.receive(partner_page), 5)

    heard = async_to_sync(body)()
    assert heard["payload"] == CHANGED
    dialogue.refresh_from_db()
    assert (dialogue.status, dialogue.end_reason) == ("abandoned", "partner_left")


def test_illegal_and_unreadable_messages_get_errors_and_change_nothing():
    _, participant = at_dialogue(ps.dialogue_study(side="pro", max_sentences=2))

    async def body():
        socket = connect(participant.token)
        await socket.connect()
        await socket.receive_json()
        replies = []
        for message in (
            {"type": "say", "text": "   "},
            {"type": "say", "text": "One. Two. Three."},
            {"type": "say", "text": "x" * 1501},
            {"type": "say", "text": 42},
            {"type": "say"},
            {"type": "shout", "text": "Hello"},
            {"text": "no type"},
            ["a", "list"],
        ):
            await socket.send_json(message)
            replies.append(await socket.receive_json())
        await socket.send_text("{not json")
        replies.append(await socket.receive_json())
        await socket.disconnect()
        return replies

    replies = async_to_sync(body)()
    assert [r["type"] for r in replies] == ["error"] * 9
    assert [r["message"] for r in replies] == [
        "Write at least one sentence.",
        "Write at most 2 sentences: this has 3.",
        "Your turn is too long: at most 1500 characters.",
        "Unreadable message.",
        "Unreadable message.",
        "Unknown message.",
        "Unreadable message.",
        "Unreadable message.",
        "Unreadable message.",
    ]
    assert not PersuasionTurn.objects.exists()


def test_saying_out_of_turn_is_an_error():
    _, participant = at_dialogue(ps.dialogue_study(side="con", delay_min_s=30, delay_max_s=30))

    async def body():
        socket = connect(participant.token)  # the agent's turn waits out its 30 s delay
        await socket.connect()
        await socket.receive_json()
        await socket.send_json({"type": "say", "text": "Let me go first."})
        reply = await socket.receive_json()
        await socket.disconnect()
        return reply

    assert async_to_sync(body)() == {"type": "error", "message": "It is not your turn yet."}
    assert not PersuasionTurn.objects.filter(author="human").exists()


def test_too_many_messages_close_the_socket():
    _, participant = at_dialogue(ps.dialogue_study(side="pro"))

    async def body():
        socket = connect(participant.token)
        await socket.connect()
        await socket.receive_json()
        for _ in range(MAX_MESSAGES_PER_MINUTE):
            await socket.send_json({"type": "resync"})
            assert (await socket.receive_json())["type"] == "snapshot"
        await socket.send_json({"type": "resync"})
        closing = await socket.communicator.receive_output(5)
        await socket.disconnect()
        return closing

    assert async_to_sync(body)() == {"type": "websocket.close", "code": 4429}
