"""Design B's services: assignment of protocol × claim, the phases of a claim session, the
order of turns, judge messages, and the life of an AI turn (claimed, streamed, done,
retried or failed).

Nothing here starts a turn's generation: a service that makes a turn due returns it, and
the caller hands it to `debates.live.tasks.turns_start()`, which owns where turns run."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import connections, router, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from common.compiled import CompiledQuery
from common.statements import Statement, padded
from debates.draws import draw_record, same_sequence, sequence_key
from debates.models import Claim, DebaterConfig, LiveSession, LiveTurn, StudyClaim
from debates.versions import next_version
from participants.i18n import participant_language
from participants.models import Participant
from participants.places import PlaceKind, least_filled, places_held
from studies.models import Study
from studies.randomness import block_value, study_rng
from studies.registry import StepContext, StepUnavailable
from studies.snapshot import digest

Protocol = LiveSession.Protocol
Phase = LiveSession.Phase
Status = LiveTurn.Status


class LiveError(Exception):
    """A request the protocol does not allow now; the message is shown to the participant."""


# --- Assignment --------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveDesign:
    """A claim-session step's configuration, as the assignment needs it."""

    protocols: tuple[str, ...]
    per_participant: bool
    rounds: int
    consultant_side: str  # "random" or "preferred"
    correct_share: float
    debater_a: str
    debater_b: str
    consultant: str
    max_message_chars: int
    domain: str = ""


def live_session_for(ctx: StepContext, design: LiveDesign) -> LiveSession:
    """The participant's session for this step, assigned on first need."""
    cached = ctx.extra.get("live_session")
    if cached is not None:
        return cached
    session = _session_query().filter(participant=ctx.participant, position=ctx.position).first()
    if session is None:
        live_session_assign(participant=ctx.participant, position=ctx.position, design=design, now=ctx.now)
        session = _session_query().get(participant=ctx.participant, position=ctx.position)
    ctx.extra["live_session"] = session
    return session


def _session_query():
    return LiveSession.objects.select_related("claim", "debater_a", "debater_b", "participant__study")


def _cell_fill(study: Study, group: str, now: datetime, exclude: Participant | None = None) -> dict:
    rows = LiveSession.objects.filter(participant__study=study, group=group)
    hold = not study.exclusion_frees_place
    return places_held(rows, ("protocol", "claim"), now, exclude=exclude, excluded_hold=hold)


def _locked_claims(study: Study) -> list[StudyClaim]:
    return list(
        StudyClaim.objects.select_for_update()
        .filter(study=study, active=True)
        .select_related("claim")
        .order_by("id")
    )


def _claim_targets(study: Study) -> dict[int, int]:
    """Places per group × protocol cell, by claim: its own target, else the study's."""
    rows = StudyClaim.objects.filter(study=study).values_list("claim_id", "target")
    return {claim: target if target is not None else study.target_per_item for claim, target in rows}


def live_session_assign(
    *,
    participant: Participant,
    position: int,
    design: LiveDesign,
    now: datetime,
    claim_id: int | None = None,
    protocol: str = "",
) -> None:
    """Give the participant the least-filled protocol × claim cell of their group.

    A preview may narrow the cells to a chosen claim and/or protocol (`debates.preview`); what
    it leaves open is drawn as for anyone, and the draw records that the preview chose.

    Places count completed participants (not excluded ones, unless the study's exclusions do
    not free places) plus unexpired leases, per screening group; the study's rows of claims
    are locked so concurrent arrivals never over-fill. Ties, debater A's side and the
    consultant's correctness come from the study's seed (sides and correctness by blocks
    within each group × claim), and every draw is recorded.
    """
    study = participant.study
    with transaction.atomic():
        slots = _locked_claims(study)
        if LiveSession.objects.filter(participant=participant, position=position).exists():
            return  # a second tab won the race
        earlier = list(
            LiveSession.objects.filter(participant=participant).values_list("claim_id", "protocol")
        )
        seen = {claim for claim, _ in earlier}
        chosen_cell = bool(claim_id or protocol)
        if chosen_cell and not participant.is_preview:
            raise ValueError("only a preview chooses its claim or protocol")
        protocols = [protocol] if protocol else list(design.protocols)
        if design.per_participant and earlier:
            protocols = [earlier[0][1]]
        claims = [s.claim_id for s in slots if s.claim_id not in seen and claim_id in (None, s.claim_id)]
        if design.domain:
            claims = [s.claim_id for s in slots if s.claim_id in claims and s.claim.domain == design.domain]
        fill = _cell_fill(study, participant.group, now)
        targets = _claim_targets(study)
        cells = [(p, c) for p in protocols for c in claims]
        group_sessions = LiveSession.objects.filter(
            same_sequence(participant), participant__study=study, group=participant.group
        )
        key = sequence_key(participant, "claim_cell", participant.group, group_sessions.count())
        chosen = least_filled(
            cells,
            fill,
            lambda cell: targets[cell[1]],
            preview=participant.is_preview or participant.is_pilot,  # they hold no place
            rng=study_rng(study, *key),
        )
        if not chosen:
            if chosen_cell:
                raise ValueError("the study offers no active claim of that choice")
            raise StepUnavailable(Participant.Status.STUDY_FULL, "Every claim is full for this group.")
        protocol, claim_id = chosen[0]
        claim = next(s.claim for s in slots if s.claim_id == claim_id)
        outcome = {"protocol": protocol, "claim": claim.slug}
        if chosen_cell:
            outcome["chosen_by_preview"] = True
        draw_record(participant=participant, purpose="claim_cell", key=key, outcome=outcome)
        LiveSession.objects.create(
            participant=participant,
            position=position,
            claim_id=claim_id,
            protocol=protocol,
            group=participant.group,
            rounds=design.rounds,
            max_message_chars=design.max_message_chars,
            created_at=now,
            last_activity_at=now,
            **_sides(participant, protocol, claim, design, group_sessions),
        )


def _sides(participant: Participant, protocol: str, claim: Claim, design: LiveDesign, group_sessions) -> dict:
    """Debater A's side (true or false, half each), or the consultant's side (correct for the
    configured share, or its preferred side): block-randomised within the group × claim."""
    study = participant.study
    configs = {
        c.name: c
        for c in DebaterConfig.objects.filter(
            name__in=[design.debater_a, design.debater_b, design.consultant]
        )
    }
    earlier = group_sessions.filter(claim=claim, protocol=protocol).count()
    if protocol == Protocol.DEBATE:
        key = sequence_key(participant, "side_a", participant.group, claim.slug)
        side_a, block = block_value(study, key, earlier, 0.5, ("true", "false"))
        draw_record(participant=participant, purpose="side_a", key=key, outcome={"side_a": side_a, **block})
        return {
            "side_a": side_a,
            "debater_a": configs[design.debater_a],
            "debater_b": configs[design.debater_b],
        }
    side = ""  # "preferred": the consultant picks its side when the chat starts
    if design.consultant_side == "random":
        key = sequence_key(participant, "consultant_correct", participant.group, claim.slug)
        right, block = block_value(study, key, earlier, design.correct_share, ("correct", "incorrect"))
        side = claim.true_side if right == "correct" else ("false" if claim.true_side == "true" else "true")
        outcome = {"consultant": right, "side": side, **block}
        draw_record(participant=participant, purpose="consultant_side", key=key, outcome=outcome)
    return {
        "consultant_side": side,
        "consultant_side_mode": design.consultant_side,
        "debater_a": configs[design.consultant],
    }


def _claim_room(participant: Participant, now: datetime) -> bool:
    """Back after a time-out: keep every claim cell only if each still has room."""
    targets = _claim_targets(participant.study)
    for session in LiveSession.objects.filter(participant=participant):
        held = _cell_fill(participant.study, session.group, now, exclude=participant)
        if held.get((session.protocol, session.claim_id), 0) >= targets.get(session.claim_id, 0):
            return False
    return True


CLAIM_PLACES = PlaceKind(
    name="claim cells",
    rows=lambda participant: LiveSession.objects.filter(participant__study=participant.study_id),
    key=("group", "protocol", "claim"),
    target=lambda participant, key: participant.study.target_per_item,
    lock=lambda participant: _locked_claims(participant.study),
    room=_claim_room,
)


def study_claims_copy(*, source: Study, copy: Study) -> None:
    """A duplicated study offers the same claims (active or not, with their targets)."""
    StudyClaim.objects.bulk_create(
        StudyClaim(study=copy, claim_id=row.claim_id, active=row.active, target=row.target)
        for row in StudyClaim.objects.filter(study=source).order_by("id")
    )


# --- Phases ------------------------------------------------------------------------------


def live_initial_record(
    *, session: LiveSession, answer: bool, confidence: int, now: datetime
) -> LiveTurn | None:
    """The judgement before the protocol; the chat starts. Returns its first turn, due now."""
    LiveSession.objects.filter(pk=session.pk, phase=Phase.INITIAL).update(
        initial_answer=answer,
        initial_confidence=confidence,
        phase=Phase.CHAT,
        chat_started_at=now,
        last_activity_at=now,
    )
    session.phase = Phase.CHAT
    return session_advance(session_id=session.pk)


def live_chat_finish(*, session: LiveSession, now: datetime) -> None:
    """Leave the conversation for the final judgement: once it is complete, or once a turn
    has failed for good (the participant must never be stuck)."""
    turns = list(session.turns.all())
    if not chat_complete(session, turns) and not any(t.status == Status.FAILED for t in turns):
        raise LiveError(gettext("The conversation is not over yet."))
    LiveSession.objects.filter(pk=session.pk).update(
        phase=Phase.FINAL, chat_ended_at=now, last_activity_at=now
    )
    session.phase = Phase.FINAL


def live_final_record(
    *, session: LiveSession, answer: bool, confidence: int, justification: str, now: datetime
) -> None:
    LiveSession.objects.filter(pk=session.pk).update(
        final_answer=answer,
        final_confidence=confidence,
        justification=justification,
        phase=Phase.DONE,
        finished_at=now,
        last_activity_at=now,
    )
    session.phase = Phase.DONE


# --- The order of turns ------------------------------------------------------------------


def expected_turns(session: LiveSession) -> list[tuple[str, int]]:
    """(speaker, round) in order: each round the AI speakers, then — except after the last
    round — the judge (a question to A, B or both, or a pass)."""
    order = []
    for r in range(1, session.rounds + 1):
        order += [(speaker, r) for speaker in session.ai_speakers]
        if r < session.rounds:
            order.append(("J", r))
    return order


def next_turn(session: LiveSession, turns: list[LiveTurn]) -> tuple[str, int] | None:
    order = expected_turns(session)
    return order[len(turns)] if len(turns) < len(order) else None


def chat_complete(session: LiveSession, turns: list[LiveTurn]) -> bool:
    return next_turn(session, turns) is None and all(t.status == Status.DONE for t in turns)


def judge_may_write(session: LiveSession, turns: list[LiveTurn]) -> bool:
    due = next_turn(session, turns)
    return (
        session.phase == Phase.CHAT
        and due is not None
        and due[0] == "J"
        and all(t.status == Status.DONE for t in turns)
    )


def session_state(session: LiveSession, turns: list[LiveTurn]) -> dict:
    """`next` is who is due now: the speaker of an unfinished last turn, else the next."""
    if turns and turns[-1].status != Status.DONE:
        due = (turns[-1].speaker, turns[-1].round)
    else:
        due = next_turn(session, turns)
    return {
        "type": "state",
        "next": due[0] if due else "",
        "round": due[1] if due else session.rounds,
        "done": chat_complete(session, turns),
        "sides": {speaker: session.side_of(speaker) for speaker in session.ai_speakers},
    }


def turns_before(turn: LiveTurn) -> list[LiveTurn]:
    """The session's turns before this one, in order (what its prompt is built from)."""
    return turns_before_each([turn])[turn.pk]


def turns_before_each(turns: list[LiveTurn]) -> dict[int, list[LiveTurn]]:
    """`turns_before` for several turns (of different sessions), in one read: by turn id."""
    of_session = _turns_of(sorted({turn.session_id for turn in turns}))  # a dozen a session at most
    return {turn.pk: [t for t in of_session[turn.session_id] if t.seq < turn.seq] for turn in turns}


def session_advance(*, session_id: int) -> LiveTurn | None:
    """Create the next AI turn if one is due and not yet there, and return it (for the
    caller to start). None when no AI turn is due.

    Safe to call any number of times: the session row is locked and (session, seq) is
    unique, so a turn is never created twice.
    """
    with transaction.atomic():
        session = _SESSION_LOCKED_ANY.one(pk=session_id)
        if session is None:
            raise LiveSession.DoesNotExist(f"no live session {session_id}")
        return _ai_turn_create(session, _TURNS.rows(session_id=session.pk), timezone.now())


def _ai_turn_create(session: LiveSession, turns: list[LiveTurn], now: datetime) -> LiveTurn | None:
    """With the session locked and its turns read: create the AI turn due next, if any."""
    turn = _ai_turn_due(session, turns, now)
    if turn is not None:
        _turns_insert([turn])
    return turn


def _ai_turn_due(session: LiveSession, turns: list[LiveTurn], now: datetime) -> LiveTurn | None:
    """With the session locked and its turns read: the AI turn due next, if any, appended to
    `turns` (not yet saved)."""
    if session.phase != Phase.CHAT:
        return None
    if turns and turns[-1].status != Status.DONE:
        return None
    due = next_turn(session, turns)
    if due is None or due[0] == "J":
        return None
    turn = LiveTurn(session=session, seq=len(turns) + 1, round=due[1], speaker=due[0], created_at=now)
    turns.append(turn)
    return turn


def judge_ask(
    *, session_id: int, participant_id: int, text: str, target: str
) -> tuple[LiveTurn, LiveTurn | None]:
    """Store the judge's question (or pass); returns it and the AI turn now due."""
    turn, due, _ = judge_ask_with_state(
        session_id=session_id, participant_id=participant_id, text=text, target=target
    )
    return turn, due


def judge_ask_with_state(
    *, session_id: int, participant_id: int, text: str, target: str
) -> tuple[LiveTurn, LiveTurn | None, dict]:
    """`judge_ask`, and the session's state after it (for the broadcast): `judge_asks` for
    one question."""
    (answer,) = judge_asks(
        [Ask(session_id=session_id, participant_id=participant_id, text=text, target=target)]
    )
    if isinstance(answer, Exception):
        raise answer
    return answer


@dataclass(frozen=True)
class Ask:
    """A judge's question (or pass) to store; `languages` (the participant's, the study's)
    for the refusal, when it must be said in another language than the active one."""

    session_id: int
    participant_id: int
    text: str
    target: str
    languages: tuple[str, str] | None = None


Asked = tuple[LiveTurn, LiveTurn | None, dict]  # the question, the AI turn now due, the state


def judge_asks(asks: list[Ask]) -> list[Asked | Exception]:
    """Judges' questions, each stored with the AI turn it makes due, in one transaction: the
    sessions are locked together (in id order) and their turns read in one query, and the new
    turns written in one statement. Returns, for each ask in order, (the question, the AI turn
    now due, the session's state after it) or why it was refused: a `LiveError` to show the
    participant, `LiveSession.DoesNotExist` for a session that is not theirs.

    A hundred judges asking at once came to a hundred transactions of six statements each on
    the servers' few database threads, the longest part of the first token's wait (bench/live);
    gathered (`debates.streaming.Gathered`), a burst takes a few transactions. Two asks of one
    session are taken in order: the second finds that it is not the judge's turn."""
    ids = sorted({ask.session_id for ask in asks})
    answers: list[Asked | Exception | None] = [None] * len(asks)
    stored: list[tuple[int, LiveSession, LiveTurn, LiveTurn | None]] = []
    with transaction.atomic():
        sessions = {session.pk: session for session in _SESSIONS_LOCKED.rows(pks=ids)}
        turns_of = _turns_of(list(sessions))
        now = timezone.now()
        for i, ask in enumerate(asks):
            session = sessions.get(ask.session_id)
            if session is None or session.participant_id != ask.participant_id:
                answers[i] = LiveSession.DoesNotExist(
                    f"no live session {ask.session_id} of participant {ask.participant_id}"
                )
                continue
            turns = turns_of[session.pk]
            with participant_language(*ask.languages) if ask.languages else nullcontext():
                problem = _ask_refusal(session, turns, ask)
            if problem:
                answers[i] = LiveError(problem)
                continue
            stored.append((i, session, *_ask_turns(session, turns, ask, now)))
        if stored:
            _turns_insert([t for _, _, question, ai in stored for t in (question, ai) if t])
            _ACTIVE_ALL.update([now], among=sorted({session.pk for _, session, _, _ in stored}))
    for i, session, question, ai in stored:
        answers[i] = (question, ai, session_state(session, turns_of[session.pk]))
    return answers


def _ask_refusal(session: LiveSession, turns: list[LiveTurn], ask: Ask) -> str:
    """Why the judge may not send this now ('' if they may), in the active language."""
    text = (ask.text or "").strip()
    if not judge_may_write(session, turns):
        return gettext("Please wait: it is not your turn yet.")
    allowed = {"A", "B", "both", "pass"} if session.protocol == Protocol.DEBATE else {"C", "pass"}
    if ask.target not in allowed:
        return gettext("Choose whom to ask.")
    if ask.target != "pass" and not any(c.isalnum() for c in text):  # nothing to read in it
        return gettext("Write a question, or choose to pass.")
    if len(text) > session.max_message_chars:
        return gettext("Please keep your message under %(max)s characters.") % {
            "max": session.max_message_chars
        }
    return ""


def _ask_turns(
    session: LiveSession, turns: list[LiveTurn], ask: Ask, now: datetime
) -> tuple[LiveTurn, LiveTurn | None]:
    """The judge's turn and the AI turn it makes due (if any), appended to `turns` (unsaved)."""
    text = (ask.text or "").strip()
    question = LiveTurn(
        session=session,
        seq=len(turns) + 1,
        round=next_turn(session, turns)[1],
        speaker="J",
        target=ask.target,
        text="" if ask.target == "pass" else text,
        status=Status.DONE,
        attempts=1,
        created_at=now,
        started_at=now,
        finished_at=now,
    )
    turns.append(question)
    due = next_turn(session, turns)  # the judge's turn is done: the next is an AI's, if any
    ai = None
    if due is not None and due[0] != "J":
        ai = LiveTurn(session=session, seq=len(turns) + 1, round=due[1], speaker=due[0], created_at=now)
        turns.append(ai)
    return question, ai


# --- The life of an AI turn --------------------------------------------------------------


def turn_claim(*, turn_id: int, now: datetime | None = None) -> LiveTurn | None:
    """Take the turn for generation, or return None if it is not ours to take: finished,
    failed, or being written by a worker whose heartbeat is fresh. A duplicated or retried
    task therefore never writes a second reply."""
    taken = turns_claim(turn_ids=[turn_id], now=now)
    return taken[0] if taken else None


def turns_claim(*, turn_ids: list[int], now: datetime | None = None) -> list[LiveTurn]:
    """`turn_claim` for several turns at once (a worker takes the turns of a burst together:
    one UPDATE and two reads for them all). Returns the turns taken, with their sessions,
    debaters, claims and participants, in the order asked."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    taken = sorted(_claim_update(turn_ids, now, stale))
    if not taken:
        return []
    found = {turn.pk: turn for turn in _TURNS_TO_WRITE.rows(pks=taken)}
    # Once each: an id pushed twice (by the question and by a reconnection's kick) and taken
    # from the queue together must not have its turn written twice.
    return [found[pk] for pk in dict.fromkeys(turn_ids) if pk in found]


def _claim_update(turn_ids: list[int], now: datetime, stale: datetime) -> list[int]:
    """turns_claim's conditional UPDATE, written once for each number of turns (as
    `common.statements` does: building it through the ORM, an OR of statuses and
    `attempts + 1`, was most of a worker's claim; bench/live, py-spy). A turn is taken if it is
    pending, or streaming with a stale heartbeat, has attempts left, and its session is in its
    chat phase. The ids of the turns taken."""
    connection = connections[router.db_for_write(LiveTurn)]
    turn_ids = padded(turn_ids)
    key = (connection.vendor, len(turn_ids))
    sql = _CLAIM_SQL.get(key)
    if sql is None:
        q = connection.ops.quote_name
        turn, session = LiveTurn._meta, LiveSession._meta
        c = {f.name: q(f.column) for f in turn.concrete_fields}
        ids = ", ".join(["%s"] * len(turn_ids))
        sql = _CLAIM_SQL[key] = (
            f"UPDATE {q(turn.db_table)} SET {c['status']} = %s, {c['attempts']} = {c['attempts']} + 1, "  # noqa: S608 - names from the models' meta, quoted; values are parameters
            f"{c['heartbeat_at']} = %s, {c['started_at']} = %s, {c['text']} = '' "
            f"WHERE {c['id']} IN ({ids}) AND {c['attempts']} < %s "
            f"AND ({c['status']} = %s OR ({c['status']} = %s AND {c['heartbeat_at']} < %s)) "
            f"AND {c['session']} IN (SELECT {q(session.pk.column)} FROM {q(session.db_table)} "
            f"WHERE {q(session.get_field('phase').column)} = %s) RETURNING {c['id']}"
        )
    when = LiveTurn._meta.get_field("heartbeat_at")
    now_db, stale_db = (when.get_db_prep_save(value, connection) for value in (now, stale))
    params = [Status.STREAMING, now_db, now_db, *turn_ids, settings.LIVE_TURN_MAX_ATTEMPTS]
    params += [Status.PENDING, Status.STREAMING, stale_db, Phase.CHAT]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]


_CLAIM_SQL: dict[tuple[str, int], str] = {}


# The reads of every question and every claimed turn, compiled once per connection
# (common.compiled): with 100 judges asking at once, compiling them was most of the
# question's and the claim's CPU (bench/live).
_SESSION_LOCKED_ANY = CompiledQuery(
    lambda *, pk: LiveSession.objects.select_for_update().filter(pk=pk).order_by()
)
_TURNS = CompiledQuery(lambda *, session_id: LiveTurn.objects.filter(session_id=session_id).order_by("seq"))


# Turns with what writing one needs: the session, its debaters, claim and participant.
_TURNS_TO_WRITE = CompiledQuery(
    lambda *, pks: (
        LiveTurn.objects.select_related(
            "session__claim", "session__debater_a", "session__debater_b", "session__participant"
        )
        .filter(pk__in=pks)
        .order_by()
    )
)
_SESSIONS_LOCKED = CompiledQuery(
    lambda *, pks: LiveSession.objects.select_for_update().filter(pk__in=pks).order_by("pk")
)
_TURNS_OF = CompiledQuery(
    lambda *, session_ids: LiveTurn.objects.filter(session_id__in=session_ids).order_by("session_id", "seq")
)


def _turns_of(session_ids: list[int]) -> dict[int, list[LiveTurn]]:
    """The turns of these sessions, by session, in order (one read)."""
    turns: dict[int, list[LiveTurn]] = {pk: [] for pk in session_ids}
    for turn in _TURNS_OF.rows(session_ids=session_ids) if session_ids else []:
        turns[turn.session_id].append(turn)
    return turns


# The writes of every turn and question (common.statements).
_ACTIVE_ALL = Statement(LiveSession, sets=["last_activity_at"], where_in="pk")
_TURN_FIELDS = [f for f in LiveTurn._meta.concrete_fields if not f.primary_key]
_TURN_INSERT = Statement(LiveTurn, insert=[f.name for f in _TURN_FIELDS])


def _turns_insert(turns: list[LiveTurn]) -> None:
    """New turns in one INSERT, their ids set: `bulk_create` without building it each time."""
    rows = [[getattr(turn, field.attname) for field in _TURN_FIELDS] for turn in turns]
    for turn, pk in zip(turns, _TURN_INSERT.insert_rows(rows, returning=True), strict=True):
        turn.pk = pk
        turn._state.adding = False
        turn._state.db = router.db_for_write(LiveTurn)


_HEARTBEAT = Statement(LiveTurn, sets=["heartbeat_at"], where=["status"], where_in="pk")


def turns_heartbeat(*, turn_ids: list[int]) -> None:
    """The turns being written are alive (one UPDATE for a worker's turns that beat together)."""
    _HEARTBEAT.update([timezone.now()], [Status.STREAMING], among=turn_ids)


def turn_done(*, turn_id: int, session_id: int, text: str) -> tuple[LiveTurn | None, dict | None]:
    """Store the finished reply and create the AI turn it makes due, in one transaction on
    the session's lock; returns (the AI turn now due, the session's state after the reply).
    Not stored — (None, None) — if the turn was taken over meanwhile (its heartbeat went
    stale and another worker restarted it): `turns_done` for one reply."""
    (done,) = turns_done([Reply(turn_id=turn_id, session_id=session_id, text=text)])
    if isinstance(done, Exception):
        raise done
    return done.due, done.state


@dataclass(frozen=True)
class Reply:
    """A finished AI reply to store. `take_next`: the AI turn it makes due is created taken by
    the caller (streaming, first attempt, heartbeat now), who writes it next."""

    turn_id: int
    session_id: int
    text: str
    take_next: bool = False


class Done(NamedTuple):
    due: LiveTurn | None  # the AI turn the reply made due, if any
    state: dict | None  # the session's state after the reply; None: not stored
    before: list[LiveTurn]  # the turns before `due` (what its prompt is built from)


def turns_done(replies: list[Reply]) -> list[Done | Exception]:
    """Finished replies, each stored with the AI turn it makes due, in one transaction on
    their sessions' locks (taken together, in id order). For each reply a `Done` (state None
    if the turn was taken over meanwhile), or `LiveSession.DoesNotExist`.

    One transaction, not a store and then `session_advance`: fewer round trips between a
    reply's end and the next speaker's start, and the state for the broadcast read in it; and
    one for the replies of a burst that end together (`debates.streaming.Gathered`): a hundred
    debaters A finishing at once had each next speaker wait behind a hundred transactions on
    a worker's few database threads (bench/live)."""
    now = timezone.now()
    answers: list = [Done(None, None, [])] * len(replies)
    with transaction.atomic():
        sessions = {s.pk: s for s in _SESSIONS_LOCKED.rows(pks=sorted({r.session_id for r in replies}))}
        known = [reply for reply in replies if reply.session_id in sessions]
        taken = _replies_store(known, now) if known else set()
        stored = []
        for i, reply in enumerate(replies):
            if reply.session_id not in sessions:
                answers[i] = LiveSession.DoesNotExist(f"no live session {reply.session_id}")
            elif reply.turn_id in taken:
                stored.append((i, sessions[reply.session_id]))
        if not stored:
            return answers
        _ACTIVE_ALL.update([now], among=sorted({session.pk for _, session in stored}))
        turns_of = _turns_of(sorted({session.pk for _, session in stored}))
        due = {i: _ai_turn_due(session, turns_of[session.pk], now) for i, session in stored}
        for i, turn in due.items():
            if turn is not None and replies[i].take_next:
                turn.status, turn.attempts, turn.started_at, turn.heartbeat_at = Status.STREAMING, 1, now, now
        _turns_insert([turn for turn in due.values() if turn is not None])
    for i, session in stored:
        turns = turns_of[session.pk]
        before = [t for t in turns if t is not due[i]] if due[i] is not None else []
        answers[i] = Done(due[i], session_state(session, turns), before)
    return answers


def _replies_store(replies: list[Reply], now: datetime) -> set[int]:
    """The replies' texts into their turns, if those are still streaming, in one UPDATE
    (a CASE for the texts): the ids of the turns stored. One statement for a burst's
    replies, not one each: on a worker busy relaying, each round trip of a database thread
    waited for the interpreter's lock (bench/live: fifty UPDATEs took 250 ms, 37 ms of it
    CPU)."""
    connection = connections[router.db_for_write(LiveTurn)]
    pairs = padded([(reply.turn_id, reply.text) for reply in replies])  # a repeated WHEN: the same text
    key = (connection.vendor, len(pairs))
    sql = _STORE_SQL.get(key)
    if sql is None:
        q = connection.ops.quote_name
        c = {f.name: q(f.column) for f in LiveTurn._meta.concrete_fields}
        cases = " ".join(["WHEN %s THEN %s"] * len(pairs))
        ids = ", ".join(["%s"] * len(pairs))
        sql = _STORE_SQL[key] = (
            f"UPDATE {q(LiveTurn._meta.db_table)} SET {c['status']} = %s, {c['finished_at']} = %s, "  # noqa: S608 - names from the models' meta, quoted; values are parameters
            f"{c['error']} = '', {c['text']} = CASE {c['id']} {cases} END "
            f"WHERE {c['id']} IN ({ids}) AND {c['status']} = %s RETURNING {c['id']}"
        )
    finished = LiveTurn._meta.get_field("finished_at").get_db_prep_save(now, connection)
    params = [Status.DONE, finished, *(value for pair in pairs for value in pair)]
    params += [turn_id for turn_id, _ in pairs] + [Status.STREAMING]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return {row[0] for row in cursor.fetchall()}


_STORE_SQL: dict[tuple[str, int], str] = {}


def turn_attempt_failed(*, turn_id: int, error: str, retryable: bool) -> tuple[str, int]:
    """After a failed attempt: ("retry", attempt) if another may help, else ("failed", attempt)."""
    with transaction.atomic():
        turn = LiveTurn.objects.select_for_update().get(pk=turn_id)
        if turn.status != Status.STREAMING:
            return "gone", turn.attempts
        if retryable and turn.attempts < settings.LIVE_TURN_MAX_ATTEMPTS:
            LiveTurn.objects.filter(pk=turn_id).update(status=Status.PENDING, text="", error=error[:300])
            return "retry", turn.attempts
        LiveTurn.objects.filter(pk=turn_id).update(status=Status.FAILED, text="", error=error[:300])
    return "failed", turn.attempts


def turn_retry(*, session_id: int, participant_id: int) -> LiveTurn:
    """The participant asks to try a failed turn again (a fresh set of attempts); returns
    the turn, to be started by the caller."""
    with transaction.atomic():
        session = LiveSession.objects.select_for_update().get(pk=session_id, participant_id=participant_id)
        turn = session.turns.order_by("-seq").first()
        if turn is None or turn.status != Status.FAILED:
            raise LiveError(gettext("There is nothing to try again."))
        LiveTurn.objects.filter(pk=turn.pk).update(status=Status.PENDING, attempts=0, error="")
    return turn


def stuck_turns(*, now: datetime | None = None) -> list[int]:
    """Turns that need a worker: pending for a while, or streaming without a heartbeat."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    return list(
        LiveTurn.objects.filter(session__phase=Phase.CHAT, attempts__lt=settings.LIVE_TURN_MAX_ATTEMPTS)
        .filter(
            Q(status=Status.PENDING, created_at__lt=stale)
            | Q(status=Status.STREAMING, heartbeat_at__lt=stale)
        )
        .values_list("pk", flat=True)
    )


def consultant_side_choose(*, session_id: int, side: str, fallback: bool = False) -> None:
    """The consultant's preferred side, once; `fallback` records that the model's choice
    failed and the consultant argues the true side instead."""
    if side not in ("true", "false"):
        raise ValueError(side)
    LiveSession.objects.filter(pk=session_id, consultant_side="").update(
        consultant_side=side, consultant_side_fallback=fallback
    )


ROLE_OF = {"A": "debater_a", "B": "debater_b", "C": "consultant"}


def live_snapshot(session: LiveSession, partial: dict[int, str] | None = None) -> dict:
    """What a (re)connecting browser needs: every turn so far and whose turn it is."""
    turns = list(session.turns.order_by("seq"))
    partial = partial or {}
    return {
        "type": "snapshot",
        "turns": [
            {
                "seq": t.seq,
                "speaker": t.speaker,
                "round": t.round,
                "target": t.target,
                "status": t.status,
                "text": t.text if t.status == Status.DONE else partial.get(t.pk, ""),
                "error": "The reply could not be written." if t.status == Status.FAILED else "",
            }
            for t in turns
        ],
        "state": session_state(session, turns),
    }


def turns_give_up(*, now: datetime | None = None) -> list[tuple[int, int]]:
    """Turns still 'streaming' with a dead worker and no attempts left: mark them failed."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    dead = LiveTurn.objects.filter(
        status=Status.STREAMING, heartbeat_at__lt=stale, attempts__gte=settings.LIVE_TURN_MAX_ATTEMPTS
    )
    found = list(dead.values_list("pk", "session_id", "seq"))
    LiveTurn.objects.filter(pk__in=[pk for pk, _, _ in found], status=Status.STREAMING).update(
        status=Status.FAILED, text="", error="the worker stopped answering"
    )
    return [(session_id, seq) for _, session_id, seq in found]


# --- Content that a running study uses --------------------------------------------------


def claim_studies(claim: Claim) -> QuerySet[Study]:
    """The studies with real participants that offer this claim: it cannot change meanwhile."""
    return Study.objects.filter(locked_at__isnull=False, study_claims__claim=claim).distinct()


def debater_config_studies(config: DebaterConfig) -> QuerySet[Study]:
    """The studies with real participants whose claim steps name this configuration."""
    names = Q()
    for field in ("debater_a", "debater_b", "consultant"):
        names |= Q(**{f"steps__config__{field}": config.name})
    return Study.objects.filter(names, locked_at__isnull=False, steps__kind="claim_session").distinct()


@transaction.atomic
def claim_new_version(*, claim: Claim) -> Claim:
    copy = Claim.objects.get(pk=claim.pk)
    copy.pk, copy.slug = None, next_version(Claim, "slug", claim.slug)
    copy.save()
    return copy


@transaction.atomic
def debater_config_new_version(*, config: DebaterConfig) -> DebaterConfig:
    """A copy under a new name (a study's steps name their configurations: point a new
    version of the study at it)."""
    copy = DebaterConfig.objects.get(pk=config.pk)
    copy.pk, copy.name, copy.template_version = None, next_version(DebaterConfig, "name", config.name), 1
    copy.save()
    return copy


CLAIM_FIELDS_HASHED = ("slug", "text", "truth", "domain", "sources_true", "sources_false")
DEBATER_FIELDS = ("name", "model", "temperature", "max_tokens", "seed", "max_words", "system_prompt")


def snapshot_part(study: Study) -> tuple[str, dict]:
    """For the study's frozen snapshot: its claims and the debater configurations its steps
    name, each by the hash of its content."""
    claims = [
        {
            "claim": row.claim.slug,
            "active": row.active,
            "target": row.target,
            "sha256": digest({f: getattr(row.claim, f) for f in CLAIM_FIELDS_HASHED}),
        }
        for row in StudyClaim.objects.filter(study=study).select_related("claim").order_by("id")
    ]
    named = {
        value
        for step in study.steps.filter(kind="claim_session")
        for key, value in step.config.items()
        if key in ("debater_a", "debater_b", "consultant")
    }
    debaters = [
        {
            "name": c.name,
            "template_version": c.template_version,
            "sha256": digest({f: getattr(c, f) for f in DEBATER_FIELDS}),
        }
        for c in DebaterConfig.objects.filter(name__in=named).order_by("name")
    ]
    return "live", {"claims": claims, "debaters": debaters}
