"""The judge's websocket: authenticate, join the session's group, relay, and pass the
judge's messages to the services. No model calls and no protocol logic live here; the
limits (sockets per token, reconnections, frames) and the reading of frames are the shared
base's (debates.sockets).

Database calls go through the turn runner's small thread pool rather than the server's one
shared thread, so a hundred judges asking at once do not queue behind each other and
behind page requests (bench/live)."""

from __future__ import annotations

from django.utils.translation import gettext

from debates.live import services as live_services
from debates.live.realtime import EVENT, Error, JudgeMessage, abroadcast, group_name, payloads, stream_buffer
from debates.live.runner import db
from debates.live.tasks import dispatch, turns_start
from debates.models import LiveSession, LiveTurn
from debates.sockets import UNREADABLE, ParticipantSocket, participant_or_refusal
from debates.streaming import Gathered
from participants.i18n import participant_language
from participants.services import participant_current_step


@db
def session_for_token(token: str) -> tuple[LiveSession, tuple[str, str]] | str:
    """The live session of this participant's current step, if it is in its chat phase, and
    the languages to speak ((the participant's, the study's)); else why not (for the log)."""
    participant = participant_or_refusal(token)
    if isinstance(participant, str):
        return participant
    step = participant_current_step(participant)
    if step is None or step.kind != "claim_session":
        return f"participant {participant.pk} at step {participant.position}, not a live debate"
    session = (
        LiveSession.objects.select_related("participant")
        .filter(participant=participant, position=step.position, phase=LiveSession.Phase.CHAT)
        .first()
    )
    if session is None:
        return f"participant {participant.pk}: no debate in its chat phase at step {step.position}"
    study_language = participant.study.language
    return session, (participant.language or study_language, study_language)


@db
def kick(session_id: int) -> None:
    """On (re)connection: make sure the next turn exists and a worker is on it now, rather
    than when the watchdog next looks (every 10 s, and only at turns stuck for 30 s)."""
    live_services.session_advance(session_id=session_id)  # the AI turn now due, if any
    last = LiveTurn.objects.filter(session_id=session_id).order_by("-seq").first()
    if last is not None and last.status in (LiveTurn.Status.PENDING, LiveTurn.Status.STREAMING):
        dispatch(last.pk)  # a no-op if a live worker holds it


def asks_store_and_start(asks: list[live_services.Ask]) -> list[tuple[LiveTurn, dict] | Exception]:
    """Judges' messages, stored (`services.judge_asks`: one transaction for them all); the AI
    turns they make due are started. For each: the message and the session's state after it,
    or why it was refused (in that participant's language)."""
    answers = live_services.judge_asks(asks)
    turns_start([answer[1] for answer in answers if isinstance(answer, tuple)])
    return [(answer[0], answer[2]) if isinstance(answer, tuple) else answer for answer in answers]


# The questions of a server process's judges, gathered while a trip to the database runs: a
# hundred judges asking in the same instant take a few transactions instead of a hundred.
ask_and_start = Gathered(asks_store_and_start)


def retry_and_start(*, languages: tuple[str, str], **kwargs) -> None:
    """A failed turn, given a fresh set of attempts and started again."""
    with participant_language(*languages):
        turn = live_services.turn_retry(**kwargs)
    turns_start([turn])


@db
def snapshot_rows(session_id: int) -> tuple[LiveSession, list[int]]:
    session = LiveSession.objects.get(pk=session_id)
    streaming = list(session.turns.filter(status=LiveTurn.Status.STREAMING).values_list("pk", flat=True))
    return session, streaming


@db
def snapshot(session: LiveSession, partial: dict[int, str]) -> dict:
    return live_services.live_snapshot(session, partial)


class LiveSessionConsumer(ParticipantSocket):
    async def open(self, token: str) -> bool:
        found = await session_for_token(token)
        if isinstance(found, str):
            self.refusal = found
            return False
        session, self.languages = found
        self.session_id = session.pk
        self.participant_id = session.participant_id
        # Join first, then read: a delta broadcast meanwhile is in the buffer or in our inbox.
        await self.channel_layer.group_add(group_name(self.session_id), self.channel_name)
        await self.accept()
        await kick(self.session_id)
        await self.send_snapshot()
        return True

    async def close_down(self) -> None:
        if getattr(self, "session_id", None) is not None:
            await self.channel_layer.group_discard(group_name(self.session_id), self.channel_name)

    async def send_snapshot(self) -> None:
        session, streaming = await snapshot_rows(self.session_id)
        partial = {pk: await stream_buffer().get(pk) for pk in streaming}
        await self.send_json(await snapshot(session, partial))

    async def receive_json(self, content, **kwargs) -> None:
        kind = content["type"]
        if kind == "ask":
            await self.ask(content.get("text"), content.get("target"))
        elif kind == "retry":
            await self.retry()
        elif kind == "resync":
            await self.send_snapshot()
        else:
            with self.speaking():
                await self.send_json(Error(type="error", message=gettext("Unknown message.")))

    async def ask(self, text, target) -> None:
        if not isinstance(text, str) or not isinstance(target, str):
            with self.speaking():
                await self.send_json(Error(type="error", message=gettext(UNREADABLE)))
            return
        ask = live_services.Ask(
            session_id=self.session_id,
            participant_id=self.participant_id,
            text=text,
            target=target,
            languages=self.languages,
        )
        try:
            turn, state = await ask_and_start(ask)
        except live_services.LiveError as error:
            await self.send_json(Error(type="error", message=str(error)))
            return
        message = JudgeMessage(
            type="judge.message", seq=turn.seq, round=turn.round, target=turn.target, text=turn.text
        )
        await abroadcast(self.session_id, message, state)

    async def retry(self) -> None:
        try:
            await db(retry_and_start)(
                languages=self.languages, session_id=self.session_id, participant_id=self.participant_id
            )
        except live_services.LiveError as error:
            await self.send_json(Error(type="error", message=str(error)))

    async def dispatch(self, message) -> None:
        # Relayed events touch no database: skip Channels' per-message hop to a thread to
        # close old connections (a quarter of a pure relay's CPU).
        if message.get("type") == EVENT:
            for payload in payloads(message):
                await self.send_json(payload)
            return
        await super().dispatch(message)
