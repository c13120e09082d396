"""Design C's services: who debates whom (an agent, or a partner from the waiting room), the
protocol's state of each dialogue, the life of a turn (written, read, played), and how a
dialogue ends (a winner, a draw, or abandonment with its reason).

Nothing here calls a model or starts a turn: a service that makes a turn due returns it,
and the caller hands it to `debates.persuasion.tasks.turns_start()`. The protocol itself is
`debates.persuasion.protocol` (pure); the dialogue's `state` column is its snapshot.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from debates.draws import draw_record, sequence_key
from debates.models import AgentConfig, PersuasionDialogue, PersuasionTurn, RandomDraw, Topic
from debates.persuasion import language
from debates.persuasion.protocol import Game, other
from participants.models import Participant
from studies.models import Study
from studies.randomness import block_value, study_rng
from studies.registry import StepContext

Status = PersuasionDialogue.Status
Reason = PersuasionDialogue.Reason
TurnStatus = PersuasionTurn.Status
MAX_TURN_CHARS = 1500


class PersuasionError(Exception):
    """A request the dialogue does not allow now; the message is shown to the participant."""


@dataclass(frozen=True)
class PersuasionDesign:
    """A persuasion step's configuration, as the services need it."""

    topic: str
    opponent: str  # "ai" or "human"
    agent: str  # the agent configuration (the opponent, or the stand-in for a missing partner)
    side: str = "balanced"  # "balanced", "pro" or "con": the participant's side
    max_turns: int = 40
    max_seconds: int = 1800
    max_sentences: int = 5
    silence_seconds: int = 300
    wait_seconds: int = 180
    no_partner: str = "ai"  # "ai": debate the agent instead; "exit": leave with no_partner_code
    delay_min_s: float = 0.0
    delay_max_s: float = 0.0
    classifier_model: str = "gpt-4o"


# --- Views for the language side ---------------------------------------------------------


def topic_view(topic: Topic) -> language.TopicView:
    return language.TopicView(
        text=topic.text, pro_claim=topic.pro_claim, con_claim=topic.con_claim, background=topic.background
    )


def agent_view(agent: AgentConfig) -> language.AgentView:
    return language.AgentView(
        name=agent.name,
        model=agent.model,
        persona=agent.persona,
        temperature=agent.temperature,
        max_tokens=agent.max_tokens,
        seed=agent.seed,
        prompt_template=agent.prompt_template,
        template_version=agent.template_version,
        offline_concede_after=agent.offline_concede_after,
    )


def game_of(dialogue: PersuasionDialogue) -> Game:
    """The dialogue's protocol state, replayed (a fresh object: playing it changes nothing
    stored until the caller saves its snapshot)."""
    return Game.replay(dialogue.state)


_views: dict[tuple, Game] = {}


def game_view(dialogue: PersuasionDialogue) -> Game:
    """The protocol state for reading only (snapshots, clocks): replayed once per state and
    kept, since every page of a dialogue asks for it after each change. Never play it."""
    key = (dialogue.pk, json.dumps(dialogue.state, sort_keys=True))
    game = _views.get(key)
    if game is None:
        if len(_views) > 2000:
            _views.clear()
        game = _views[key] = Game.replay(dialogue.state)
    return game


def new_state(topic: Topic, *, max_turns: int, max_seconds: int, max_sentences: int) -> dict:
    game = Game(
        topic.pro_claim,
        topic.con_claim,
        max_turns=max_turns,
        max_seconds=max_seconds,
        max_sentences=max_sentences,
    )
    return game.snapshot()


# --- Assignment: an agent, or a partner from the waiting room ----------------------------


def dialogue_query(*related: str):
    """Dialogues with their topic, and whatever else the caller reads (`related`): a join
    per relation costs every query that plans it (bench/persuasion)."""
    return PersuasionDialogue.objects.select_related("topic", *related)


def dialogue_of(participant: Participant, position: int) -> PersuasionDialogue | None:
    return (
        dialogue_query()
        .filter(Q(pro_participant=participant) | Q(con_participant=participant), position=position)
        .first()
    )


def dialogue_for(ctx: StepContext, design: PersuasionDesign) -> PersuasionDialogue:
    """The participant's dialogue for this step, made on first need: against the agent, or
    in the waiting room (taking the seat of the longest-waiting participant of the same
    study and step, if any)."""
    cached = ctx.extra.get("persuasion_dialogue")
    if cached is not None:
        return cached
    dialogue = dialogue_of(ctx.participant, ctx.position)
    if dialogue is None:
        dialogue_assign(participant=ctx.participant, position=ctx.position, design=design, now=ctx.now)
        dialogue = dialogue_of(ctx.participant, ctx.position)
    ctx.extra["persuasion_dialogue"] = dialogue
    return dialogue


def _side(participant: Participant, study: Study, position: int, design: PersuasionDesign) -> str:
    if design.side in ("pro", "con"):
        return design.side
    key = sequence_key(participant, "persuasion_side", position)  # pilots: a sequence of their own
    ordinal = RandomDraw.objects.filter(
        participant__study=study, purpose="persuasion_side", key=":".join(map(str, key))
    ).count()
    side, block = block_value(study, key, ordinal, 0.5, ("pro", "con"))
    draw_record(participant=participant, purpose="persuasion_side", key=key, outcome={"side": side, **block})
    return side


def dialogue_assign(
    *, participant: Participant, position: int, design: PersuasionDesign, now: datetime
) -> PersuasionTurn | None:
    """Seat the participant; returns the agent turn now due, if any (the caller starts it).

    The study's row is locked, so two arrivals never take the same waiting seat nor the
    same block position of the side randomisation."""
    study = participant.study
    topic = Topic.objects.get(slug=design.topic)
    with transaction.atomic():
        Study.objects.select_for_update().filter(pk=study.pk).first()
        if dialogue_of(participant, position) is not None:
            return None  # a second tab won the race
        if design.opponent == "human":
            waiting = (
                PersuasionDialogue.objects.select_for_update(of=("self",))
                .filter(study=study, position=position, status=Status.WAITING, topic=topic)
                .exclude(Q(pro_participant=participant) | Q(con_participant=participant))
                # pilots are paired with pilots only, real participants with real ones
                .filter(
                    Q(pro_participant__is_pilot=participant.is_pilot)
                    | Q(con_participant__is_pilot=participant.is_pilot)
                )
                .order_by("created_at", "pk")
                .first()
            )
            if waiting is not None:
                seat = "con" if waiting.pro_participant_id else "pro"
                setattr(waiting, f"{seat}_participant", participant)
                waiting.status, waiting.started_at, waiting.last_move_at = Status.RUNNING, now, now
                waiting.save()
                return None
        side = _side(participant, study, position, design)
        dialogue = PersuasionDialogue(
            study=study,
            position=position,
            topic=topic,
            pairing="human_human" if design.opponent == "human" else "human_ai",
            state=new_state(
                topic,
                max_turns=design.max_turns,
                max_seconds=design.max_seconds,
                max_sentences=design.max_sentences,
            ),
            max_turns=design.max_turns,
            max_seconds=design.max_seconds,
            max_sentences=design.max_sentences,
            silence_seconds=design.silence_seconds,
            delay_min_s=design.delay_min_s,
            delay_max_s=design.delay_max_s,
            classifier_model=design.classifier_model,
            created_at=now,
        )
        setattr(dialogue, f"{side}_participant", participant)
        if design.opponent == "human":
            dialogue.status = Status.WAITING
            dialogue.save()
            return None
        setattr(dialogue, f"{other(side)}_agent", AgentConfig.objects.get(name=design.agent))
        dialogue.status, dialogue.started_at, dialogue.last_move_at = Status.RUNNING, now, now
        dialogue.save()
        return agent_turn_if_due(dialogue, now)


def waiting_resolve(*, dialogue_id: int, design: PersuasionDesign, now: datetime) -> PersuasionTurn | None:
    """Nobody came within the wait: the agent takes the empty seat, or the dialogue ends
    (the participant leaves with the no-partner code). Returns the agent turn due, if any."""
    with transaction.atomic():
        dialogue = dialogue_query().select_for_update(of=("self",)).get(pk=dialogue_id)
        if (
            dialogue.status != Status.WAITING
            or dialogue.created_at + timedelta(seconds=design.wait_seconds) > now
        ):
            return None
        empty = "con" if dialogue.pro_participant_id else "pro"
        if design.no_partner == "ai":
            setattr(dialogue, f"{empty}_agent", AgentConfig.objects.get(name=design.agent))
            dialogue.pairing = "human_ai"
            dialogue.status, dialogue.started_at, dialogue.last_move_at = Status.RUNNING, now, now
            dialogue.save()
            return agent_turn_if_due(dialogue, now)
        dialogue_end(dialogue, Status.ABANDONED, Reason.NO_PARTNER, now=now, ended_by=empty)
        return None


def waiting_until(dialogue: PersuasionDialogue, design: PersuasionDesign) -> datetime:
    return dialogue.created_at + timedelta(seconds=design.wait_seconds)


# --- Turns -------------------------------------------------------------------------------


def _next_seq(dialogue: PersuasionDialogue) -> int:
    last = dialogue.turns.order_by("-seq").values_list("seq", flat=True).first()
    return (last or 0) + 1


def open_turn(dialogue: PersuasionDialogue) -> PersuasionTurn | None:
    """The turn being written or read, if any (at most one at a time)."""
    return dialogue.turns.exclude(status__in=(TurnStatus.DONE, TurnStatus.FAILED)).order_by("-seq").first()


def reply_delay(dialogue: PersuasionDialogue, seq: int) -> float:
    """The agent's reply delay for this turn: uniform in the configured range, from the
    study's seed (reproducible), so that timing does not give the machine away."""
    low, high = dialogue.delay_min_s, max(dialogue.delay_min_s, dialogue.delay_max_s)
    if high <= 0:
        return 0.0
    if dialogue.study is not None:
        rng = study_rng(dialogue.study, "persuasion_delay", dialogue.pk, seq)
    else:
        rng = random.Random(f"persuasion_delay:{dialogue.pk}:{seq}")  # noqa: S311 (a delay, not security)
    return round(rng.uniform(low, high), 3)


def agent_turn_if_due(dialogue: PersuasionDialogue, now: datetime) -> PersuasionTurn | None:
    """The agent's turn, created if it is the agent's move and no turn is open."""
    if dialogue.status != Status.RUNNING:
        return None
    game = game_of(dialogue)
    speaker = game.to_move
    no_agent = getattr(dialogue, f"{speaker}_agent_id") is None
    if game.outcome.status != "open" or dialogue.is_human(speaker) or no_agent:
        return None
    if open_turn(dialogue) is not None:
        return None
    seq = _next_seq(dialogue)
    delay = reply_delay(dialogue, seq)
    return PersuasionTurn.objects.create(
        dialogue=dialogue,
        seq=seq,
        speaker=speaker,
        author="agent",
        status=TurnStatus.PENDING,
        created_at=now,
        due_at=now + timedelta(seconds=delay),
    )


def human_say(*, dialogue_id: int, participant_id: int, text: str, now: datetime) -> PersuasionTurn:
    """The participant's turn, stored to be read (classified) in the background."""
    text = (text or "").strip()
    if not text:
        raise PersuasionError(gettext("Write at least one sentence."))
    if len(text) > MAX_TURN_CHARS:
        raise PersuasionError(
            gettext("Your turn is too long: at most %(max)s characters.") % {"max": MAX_TURN_CHARS}
        )
    with transaction.atomic():
        dialogue = dialogue_query().select_for_update(of=("self",)).get(pk=dialogue_id)
        side = dialogue.side_of(participant_id)
        if side is None:
            raise PersuasionError(gettext("This is not your dialogue."))
        if dialogue.status != Status.RUNNING:
            raise PersuasionError(gettext("The dialogue has ended."))
        game = game_of(dialogue)
        if game.to_move != side or open_turn(dialogue) is not None:
            raise PersuasionError(gettext("It is not your turn yet."))
        sentences = language.split_sentences(text)
        if not sentences:  # only punctuation or invisible characters: no move to read
            raise PersuasionError(gettext("Write at least one sentence."))
        if len(sentences) > dialogue.max_sentences:
            raise PersuasionError(
                gettext("Write at most %(max)s sentences: this has %(count)s.")
                % {"max": dialogue.max_sentences, "count": len(sentences)}
            )
        turn = PersuasionTurn.objects.create(
            dialogue=dialogue,
            seq=_next_seq(dialogue),
            speaker=side,
            author="human",
            text=text,
            status=TurnStatus.READING,
            created_at=now,
            started_at=now,
        )
        dialogue.last_move_at = now
        dialogue.save(update_fields=["last_move_at"])
    return turn


def turn_claim(*, turn_id: int, now: datetime | None = None) -> PersuasionTurn | None:
    """Take a turn to write (an agent's) or to read (a participant's): None if it is done,
    failed, in the hands of a live worker (a recent heartbeat), or its dialogue has ended."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    with transaction.atomic():
        turn = (
            PersuasionTurn.objects.select_for_update(of=("self",))
            .select_related("dialogue")
            .filter(pk=turn_id)
            .first()
        )
        if turn is None or turn.status in (TurnStatus.DONE, TurnStatus.FAILED):
            return None
        if turn.heartbeat_at is not None and turn.heartbeat_at > stale:
            return None
        if turn.dialogue.status != Status.RUNNING:
            turn.status, turn.error = TurnStatus.FAILED, "the dialogue had ended"
            turn.save(update_fields=["status", "error"])
            return None
        if turn.author == "agent":
            turn.status = TurnStatus.STREAMING
        turn.attempts += 1
        turn.heartbeat_at = now
        turn.started_at = turn.started_at or now
        turn.save(update_fields=["status", "attempts", "heartbeat_at", "started_at"])
    return dialogue_query_turn(turn.pk)


def dialogue_query_turn(turn_id: int) -> PersuasionTurn:
    return PersuasionTurn.objects.select_related(
        "dialogue__topic",
        "dialogue__pro_agent",
        "dialogue__con_agent",
        "dialogue__study",
        "dialogue__batch",
    ).get(pk=turn_id)


def turn_heartbeat(*, turn_id: int) -> None:
    PersuasionTurn.objects.filter(pk=turn_id).update(heartbeat_at=timezone.now())


def turn_written(*, turn_id: int, text: str) -> None:
    """The agent's text is complete: it is now being read."""
    PersuasionTurn.objects.filter(pk=turn_id).update(text=text, status=TurnStatus.READING)


def turn_attempt_failed(*, turn_id: int, error: str) -> str:
    """An agent's attempt failed: "retry" (write it again) or "fallback" (out of attempts:
    the caller plays the safe default move)."""
    turn = PersuasionTurn.objects.get(pk=turn_id)
    turn.error = error[:300]
    turn.heartbeat_at = None
    if turn.attempts < settings.PERSUASION_TURN_ATTEMPTS:
        turn.status = TurnStatus.PENDING
        turn.save(update_fields=["error", "heartbeat_at", "status"])
        return "retry"
    turn.save(update_fields=["error", "heartbeat_at"])
    return "fallback"


@dataclass
class Played:
    turn: PersuasionTurn
    due: PersuasionTurn | None  # the agent turn now due
    ended: bool


def turn_play(
    *, turn_id: int, text: str, reading: language.Reading, fallback: bool, now: datetime | None = None
) -> Played | None:
    """Play a read turn in the protocol: the moves that are legal take effect, the turn is
    stored with every sentence's classification and the stores after it, and the dialogue
    ends if the rules say so. None if the turn was already played (a duplicate)."""
    now = now or timezone.now()
    with transaction.atomic():
        turn = PersuasionTurn.objects.select_for_update().filter(pk=turn_id).first()
        if turn is None or turn.status in (TurnStatus.DONE, TurnStatus.FAILED):
            return None
        dialogue = dialogue_query().select_for_update(of=("self",)).get(pk=turn.dialogue_id)
        game = game_of(dialogue)
        sentences = [s.to_dict() for s in reading.sentences]
        if (
            dialogue.status == Status.RUNNING
            and game.outcome.status == "open"
            and game.to_move == turn.speaker
        ):
            elapsed = (now - dialogue.started_at).total_seconds() if dialogue.started_at else None
            result = game.play(turn.speaker, list(reading.moves), elapsed_s=elapsed)
            refused = dict(result.refused)
            _mark_refusals(sentences, reading, refused)
            dialogue.state = game.snapshot()
            dialogue.turns_played = len(game.turns)
            dialogue.last_move_at = now
            dialogue.save(update_fields=["state", "turns_played", "last_move_at"])
        turn.text = text
        turn.sentences = sentences
        turn.stores_after = {side: list(game.stores[side]) for side in ("pro", "con")}
        turn.fallback = fallback or any(s.get("fallback") for s in sentences)
        turn.status = TurnStatus.DONE
        turn.finished_at = now
        turn.heartbeat_at = None
        turn.save()
        ended = False
        if dialogue.status == Status.RUNNING and game.outcome.status != "open":
            reason = {
                "conceded": Reason.CONCEDED,
                "retracted": Reason.RETRACTED,
                "turn_limit": Reason.TURN_LIMIT,
                "time_limit": Reason.TIME_LIMIT,
            }[game.outcome.reason]
            dialogue_end(dialogue, Status.FINISHED, reason, now=now, winner=game.outcome.winner or "")
            ended = True
        due = None if ended else agent_turn_if_due(dialogue, now)
    return Played(turn=turn, due=due, ended=ended)


def _mark_refusals(sentences: list[dict], reading: language.Reading, refused: dict) -> None:
    """A move the game refused (its state had moved on since the reading) does not count.
    The reading's moves are its legal sentences' moves, in order."""
    if not refused:
        return
    legal = [entry for entry in sentences if entry["legal"]]
    for entry, move in zip(legal, reading.moves, strict=False):
        if move in refused:
            entry["legal"], entry["reason"] = False, refused[move]


# --- Ending ------------------------------------------------------------------------------


def dialogue_end(
    dialogue: PersuasionDialogue,
    status: str,
    reason: str,
    *,
    now: datetime,
    winner: str = "",
    ended_by: str = "",
) -> None:
    """Close the dialogue (inside the caller's transaction, with its row locked); turns
    still open are failed."""
    dialogue.status, dialogue.end_reason, dialogue.winner, dialogue.ended_by = (
        status,
        reason,
        winner,
        ended_by,
    )
    dialogue.finished_at = now  # the protocol's state stays as played: why it ended is end_reason
    dialogue.save()
    dialogue.turns.exclude(status__in=(TurnStatus.DONE, TurnStatus.FAILED)).update(
        status=TurnStatus.FAILED, error="the dialogue ended", heartbeat_at=None
    )


CLOCK_FIELDS = (
    "status",
    "started_at",
    "created_at",
    "max_seconds",
    "last_move_at",
    "silence_seconds",
    "pro_participant_id",
    "con_participant_id",
    "pro_participant__status",
    "con_participant__status",
    "state__to_move",
)


def _clock_due(row: dict, now: datetime) -> bool:
    """Whether a clock may have run out: read from plain columns, without a lock or a replay
    (pages check every few seconds; almost always nothing is due)."""
    if row["status"] != Status.RUNNING:
        return False
    started = row["started_at"] or row["created_at"]
    if (now - started).total_seconds() >= row["max_seconds"]:
        return True
    for side in ("pro", "con"):
        if row[f"{side}_participant_id"] is not None and row[f"{side}_participant__status"] != "active":
            return True
    to_move = row["state__to_move"]
    last = row["last_move_at"] or started
    return bool(
        to_move
        and row[f"{to_move}_participant_id"] is not None
        and (now - last).total_seconds() >= row["silence_seconds"]
    )


def dialogue_check(*, dialogue_id: int, now: datetime | None = None) -> bool:
    """The clocks of a running dialogue: the time limit (a draw), a participant gone (their
    status is no longer active: they returned the study or timed out) or silent on their
    turn past the silence limit (abandoned, with who and why). True if it ended now."""
    now = now or timezone.now()
    row = PersuasionDialogue.objects.filter(pk=dialogue_id).values(*CLOCK_FIELDS).first()
    if row is None or not _clock_due(row, now):
        return False
    with transaction.atomic():
        dialogue = (
            dialogue_query("pro_participant", "con_participant")
            .select_for_update(of=("self",))
            .filter(pk=dialogue_id)
            .first()
        )
        if dialogue is None or dialogue.status != Status.RUNNING:
            return False
        game = game_of(dialogue)
        started = dialogue.started_at or dialogue.created_at
        if (now - started).total_seconds() >= dialogue.max_seconds:  # as Game.time_up
            game.time_up((now - started).total_seconds())
            dialogue.state = game.snapshot()
            dialogue_end(dialogue, Status.FINISHED, Reason.TIME_LIMIT, now=now)
            return True
        for side in ("pro", "con"):
            person = dialogue.participant_of(side)
            if person is not None and person.status != Participant.Status.ACTIVE:
                dialogue_end(dialogue, Status.ABANDONED, Reason.PARTNER_LEFT, now=now, ended_by=side)
                return True
        speaker = game.to_move
        last = silent_since(dialogue)
        if (
            dialogue.is_human(speaker)
            and open_turn(dialogue) is None
            and (now - last).total_seconds() >= dialogue.silence_seconds
        ):
            dialogue_end(dialogue, Status.ABANDONED, Reason.PARTNER_SILENT, now=now, ended_by=speaker)
            return True
    return False


def stuck_turns(now: datetime | None = None) -> list[int]:
    """Turns of running dialogues that no live worker holds: agent turns due (their delay
    is over) with no recent heartbeat, and participants' turns whose reading stopped."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.LIVE_TURN_STUCK_S)
    rows = PersuasionTurn.objects.filter(
        dialogue__status=Status.RUNNING,
        status__in=(TurnStatus.PENDING, TurnStatus.STREAMING, TurnStatus.READING),
    ).filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True, created_at__lt=stale))
    rows = rows.filter(Q(due_at__isnull=True) | Q(due_at__lte=now))
    rows = rows.exclude(dialogue__batch__status__in=("paused", "budget", "draft"))
    return list(rows.values_list("pk", flat=True))


def running_dialogues() -> list[int]:
    """Dialogues with a participant whose clocks the watchdog checks."""
    return list(
        PersuasionDialogue.objects.filter(status=Status.RUNNING, study__isnull=False).values_list(
            "pk", flat=True
        )
    )


# --- What a participant sees (in the participant's language: the step's page is rendered in
# it, and the consumer sends its snapshots in it) ------------------------------------------

OUTCOME_TEXT = {
    Reason.TURN_LIMIT: gettext_noop("The dialogue reached its turn limit: a draw."),
    Reason.TIME_LIMIT: gettext_noop("The dialogue reached its time limit: a draw."),
    Reason.NO_PARTNER: gettext_noop(
        "No partner became free in time. Thank you for waiting: press Continue to go on."
    ),
}


def outcome_text(dialogue: PersuasionDialogue, side: str | None) -> str:
    """One plain sentence about how the dialogue ended, for the participant on `side`, in the
    active language."""
    reason = dialogue.end_reason
    if dialogue.status == Status.FINISHED and dialogue.winner:
        conceded = reason == Reason.CONCEDED
        if dialogue.winner == side:
            if conceded:
                return gettext("You won: your opponent conceded your initial claim.")
            return gettext("You won: your opponent retracted their initial claim.")
        if conceded:
            return gettext("Your opponent won: you conceded your opponent's initial claim.")
        return gettext("Your opponent won: you retracted your initial claim.")
    if reason in OUTCOME_TEXT:
        return gettext(OUTCOME_TEXT[reason])
    if dialogue.status == Status.ABANDONED:
        if dialogue.ended_by == side:
            if reason == Reason.PARTNER_SILENT:
                return gettext("The dialogue ended because no reply came from you in time.")
            return gettext("You left the dialogue.")
        if reason == Reason.AGENT_FAILED:
            return gettext("Your opponent could not go on. Thank you: press Continue to go on.")
        if reason == Reason.PARTNER_SILENT:  # not gone: quiet past the limit on their turn
            return gettext("Your partner did not reply in time. Thank you: press Continue to go on.")
        return gettext("Your partner left the dialogue. Thank you: press Continue to go on.")
    return ""


def snapshot_for(
    dialogue: PersuasionDialogue, side: str | None, partial: dict[int, str], turns: list | None = None
) -> dict:
    """Everything the participant on `side` needs to draw the page, as one message (`turns`:
    the dialogue's turns in order, if the caller has them)."""
    game = game_view(dialogue)
    turns = list(dialogue.turns.order_by("seq")) if turns is None else turns
    moves = game.moves
    my_turn = (
        dialogue.status == Status.RUNNING
        and game.outcome.status == "open"
        and game.to_move == side
        and not any(t.status not in (TurnStatus.DONE, TurnStatus.FAILED) for t in turns)
    )
    admissible = []
    if my_turn:
        for index, kinds in game.admissible(side):
            move = moves[index]
            admissible.append(
                {
                    "target": index,
                    "kind": str(move.kind),
                    "text": move.proposition,
                    "replies": [str(k) for k in kinds],
                }
            )
    started = dialogue.started_at
    deadline = started + timedelta(seconds=dialogue.max_seconds) if started else None
    return {
        "type": "snapshot",
        "side": side or "",
        "status": dialogue.status,
        "pairing": dialogue.pairing,
        "claims": {"pro": dialogue.topic.pro_claim, "con": dialogue.topic.con_claim},
        "stores": {s: list(game.stores[s]) for s in ("pro", "con")},
        "to_move": game.to_move if dialogue.status == Status.RUNNING else "",
        "my_turn": my_turn,
        "turns_played": dialogue.turns_played,
        "max_turns": dialogue.max_turns,
        "max_sentences": dialogue.max_sentences,
        "deadline": deadline.isoformat() if deadline else "",
        "silence_seconds": dialogue.silence_seconds,
        "last_move_at": dialogue.last_move_at.isoformat() if dialogue.last_move_at else "",
        # Seconds left to reply on this turn, counted here (the browser's clock may be off).
        "silence_left": _silence_left(dialogue) if my_turn else None,
        "admissible": admissible,
        "outcome": outcome_text(dialogue, side),
        "ended": dialogue.status in (Status.FINISHED, Status.ABANDONED),
        "winner": dialogue.winner,
        "turns": [
            {
                "seq": t.seq,
                "speaker": t.speaker,
                "status": t.status,
                "text": t.text
                if t.status in (TurnStatus.DONE, TurnStatus.READING)
                else partial.get(t.pk, ""),
                "sentences": shown_sentences(t.sentences),
            }
            for t in turns
        ],
    }


def silent_since(dialogue: PersuasionDialogue) -> datetime:
    """Since when the side to move has been silent: the last move, else the dialogue's start
    (the silence limit counts from here: `dialogue_check`, and the page's warning)."""
    return dialogue.last_move_at or dialogue.started_at or dialogue.created_at


def _silence_left(dialogue: PersuasionDialogue) -> int:
    return max(0, round(dialogue.silence_seconds - (timezone.now() - silent_since(dialogue)).total_seconds()))


def shown_sentences(sentences: list[dict] | None) -> list[dict]:
    """A turn's sentences as the participant reads them: why a sentence did not count is stored
    as the protocol wrote it (English, like the rest of the data) and translated here."""
    return [{**s, "reason": gettext(s["reason"])} if s.get("reason") else s for s in sentences or []]


def turns_of(dialogue: PersuasionDialogue) -> list[PersuasionTurn]:
    return list(dialogue.turns.filter(status=TurnStatus.DONE).order_by("seq"))
