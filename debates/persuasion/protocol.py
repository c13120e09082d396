"""The persuasion dialogue protocol of design C: moves, reply rules, commitment stores and outcome.

Pure Python (no Django, no language model). It follows Prakken (2006) as adapted in Table 1 of
the design's paper: a multi-move, multi-reply protocol in which every move replies to an earlier
move of the other speaker.

- Replies allowed (Table 1): claim p -> why p, claim (a counter-claim), concede p, question p;
  why p -> p since S, claim (a reason), retract p; p since S -> why q, concede q, question q for
  q in S; question p -> claim (p or not-p), retract p. Nothing replies to a concede or a retract.
- A line is closed for a point once the replier has conceded or retracted it, or when the one who
  must hold it no longer does (the target's speaker for a claim or since, the replier for a why).
- The same reply (speaker, kind, target, proposition, premises) cannot be made twice.
- Effects: claim adds p to the speaker's store, since adds p and every premise, concede adds p
  (in the opponent's words), retract removes p; why and question change nothing. Stores hold no
  duplicates (compared after `normalise`).
- Outcome: conceding the opponent's initial claim, or retracting one's own, ends the game and
  the opponent wins; after `max_turns` turns without a winner, or once `max_seconds` have passed, it is a
  draw.

Refusal reasons are plain sentences: they are shown to participants, translated where they are
shown (marked with `gettext_noop`, a no-op of our own here, so the protocol stays pure).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from enum import StrEnum


def gettext_noop(message: str) -> str:
    """Mark a participant-facing sentence for translation. The protocol stays pure (no Django):
    Django's makemessages finds the sentence by this name, the reason is stored as written
    (English), and it is translated where it is shown (`services.snapshot_for`)."""
    return message


SPEAKERS = ("pro", "con")
SNAPSHOT_VERSION = 1


def other(speaker: str) -> str:
    """The other side: "pro" <-> "con"."""
    if speaker not in SPEAKERS:
        raise ValueError(f"unknown speaker {speaker!r}")
    return "con" if speaker == "pro" else "pro"


_SPACES = re.compile(r"\s+")


@functools.lru_cache(maxsize=65536)
def normalise(text: str) -> str:
    """The form propositions are compared in: spaces collapsed, case folded, end punctuation dropped."""
    return _SPACES.sub(" ", text).strip().rstrip(".!?;: ").casefold()


class Kind(StrEnum):
    """The six locutions of the communication language."""

    CLAIM = "claim"
    WHY = "why"
    CONCEDE = "concede"
    RETRACT = "retract"
    SINCE = "since"
    QUESTION = "question"


# Table 1: which kinds may reply to a move of each kind (in the table's order).
REPLIES: dict[Kind, tuple[Kind, ...]] = {
    Kind.CLAIM: (Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION),
    Kind.WHY: (Kind.SINCE, Kind.CLAIM, Kind.RETRACT),
    Kind.SINCE: (Kind.WHY, Kind.CONCEDE, Kind.QUESTION),
    Kind.QUESTION: (Kind.CLAIM, Kind.RETRACT),
    Kind.CONCEDE: (),
    Kind.RETRACT: (),
}

_NOT_A_REPLY = {
    Kind.CLAIM: gettext_noop(
        "You can reply to a claim only by asking why, making a counter-claim, conceding it or questioning it."
    ),
    Kind.WHY: gettext_noop(
        "You can answer a why only by giving your reasons (since), making a claim or retracting."
    ),
    Kind.SINCE: gettext_noop(
        "You can reply to an argument only by asking why, conceding or questioning one of its reasons."
    ),
    Kind.QUESTION: gettext_noop("You can answer a question only with a claim or by retracting."),
}

# Kinds whose proposition is fixed by the target (the target's point); claim and since are free.
_ON_POINT = (Kind.WHY, Kind.CONCEDE, Kind.QUESTION, Kind.RETRACT)


@dataclass(frozen=True)
class Move:
    """One locution: `proposition` is its phi (for since, the conclusion; `premises` are S)."""

    speaker: str
    kind: Kind
    proposition: str
    target: int | None = None
    premises: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))
        object.__setattr__(self, "premises", tuple(self.premises))

    def to_dict(self) -> dict:
        """A JSON-able dict; `from_dict` reads it back."""
        return {
            "speaker": self.speaker,
            "kind": self.kind.value,
            "proposition": self.proposition,
            "target": self.target,
            "premises": list(self.premises),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Move:
        target = d.get("target")
        return cls(
            speaker=d["speaker"],
            kind=Kind(d["kind"]),
            proposition=d["proposition"],
            target=None if target is None else int(target),
            premises=tuple(d.get("premises") or ()),
        )


class IllegalMove(ValueError):
    """A move (or turn) that cannot be played now; `reason` is a plain sentence for people."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Outcome:
    """status "open" | "won" | "draw"; reason "", "conceded", "retracted", "turn_limit", "time_limit"."""

    status: str = "open"
    winner: str | None = None
    reason: str = ""

    @property
    def over(self) -> bool:
        return self.status != "open"


OPEN = Outcome()


@dataclass
class TurnResult:
    """What one turn did: the moves that took effect, those refused (with why), and the outcome after."""

    accepted: list[Move] = field(default_factory=list)
    refused: list[tuple[Move, str]] = field(default_factory=list)
    outcome: Outcome = OPEN


GAME_OVER = gettext_noop("The debate is over.")
TIME_UP = gettext_noop("The time for this debate is up.")
NOT_YOUR_TURN = gettext_noop("It is not your turn.")


class Game:
    """One persuasion dialogue between "pro" and "con", from their initial claims to its outcome."""

    def __init__(
        self,
        pro_claim: str,
        con_claim: str,
        *,
        max_turns: int = 40,
        max_seconds: float = 1800,
        max_sentences: int = 5,
        first: str = "pro",
    ) -> None:
        if not normalise(pro_claim) or not normalise(con_claim):
            raise ValueError("both initial claims must say something")
        if normalise(pro_claim) == normalise(con_claim):
            raise ValueError("the initial claims must differ")
        if first not in SPEAKERS:
            raise ValueError(f"first must be one of {SPEAKERS}")
        if max_turns < 1 or max_sentences < 1 or max_seconds <= 0:
            raise ValueError("the limits must be positive")
        self.initial_claims = {"pro": pro_claim, "con": con_claim}
        self.max_turns = max_turns
        self.max_seconds = max_seconds
        self.max_sentences = max_sentences
        self.first = first
        self.moves: list[Move] = [
            Move("pro", Kind.CLAIM, pro_claim),
            Move("con", Kind.CLAIM, con_claim, target=0),
        ]
        self.turns: list[list[int]] = []
        self.to_move = first
        self.stores: dict[str, list[str]] = {"pro": [pro_claim], "con": [con_claim]}
        self.outcome = OPEN

    @property
    def pro_claim(self) -> str:
        return self.initial_claims["pro"]

    @property
    def con_claim(self) -> str:
        return self.initial_claims["con"]

    # ---- reading the state

    def holds(self, speaker: str, proposition: str) -> bool:
        """Whether `speaker` is committed to `proposition` now (compared after `normalise`)."""
        key = normalise(proposition)
        return any(normalise(p) == key for p in self.stores[speaker])

    def replies(self, index: int) -> list[Kind]:
        """The kinds that may reply to moves[index] now (by the other speaker); empty when closed."""
        if self.outcome.over or not self._exists(index):
            return []
        target = self.moves[index]
        replier = other(target.speaker)
        kinds = []
        for kind in REPLIES[target.kind]:
            if any(self._refusal(m, any_turn=True) is None for m in self._candidates(index, kind, replier)):
                kinds.append(kind)
        return kinds

    def admissible(self, speaker: str | None = None) -> list[tuple[int, list[Kind]]]:
        """The other side's moves `speaker` (default: whose turn it is) may reply to now, with the kinds."""
        speaker = self.to_move if speaker is None else speaker
        opponent = other(speaker)
        found = []
        for index, move in enumerate(self.moves):
            if move.speaker == opponent:
                kinds = self.replies(index)
                if kinds:
                    found.append((index, kinds))
        return found

    def check(self, move: Move) -> None:
        """Raise IllegalMove with a reason if `move` cannot be played now (as the next move)."""
        reason = self._refusal(move)
        if reason is not None:
            raise IllegalMove(reason)

    # ---- playing

    def play(self, speaker: str, moves: list[Move], *, elapsed_s: float | None = None) -> TurnResult:
        """Play one turn of `speaker`: up to max_sentences moves, taking effect in order.

        Illegal moves are refused with their reason and change nothing; no moves at all is a turn
        too. Once the game is over (before or during the turn, or because `elapsed_s` is past the
        time limit) every remaining move is refused. A turn by the wrong speaker, or with too many
        moves, raises IllegalMove and changes nothing.
        """
        moves = list(moves)
        if elapsed_s is not None:
            self.time_up(elapsed_s)
        if self.outcome.over:
            reason = TIME_UP if self.outcome.reason == "time_limit" else GAME_OVER
            return TurnResult([], [(m, reason) for m in moves], self.outcome)
        if speaker != self.to_move:
            raise IllegalMove(NOT_YOUR_TURN)
        if len(moves) > self.max_sentences:
            raise IllegalMove(f"You can say at most {self.max_sentences} sentences in one turn.")
        result = TurnResult()
        played: list[int] = []
        for move in moves:
            reason = GAME_OVER if self.outcome.over else self._refusal(move)
            if reason is None:
                played.append(self._apply(move))
                result.accepted.append(move)
            else:
                result.refused.append((move, reason))
        self.turns.append(played)
        if not self.outcome.over and len(self.turns) >= self.max_turns:
            self.outcome = Outcome("draw", None, "turn_limit")
        self.to_move = other(speaker)
        result.outcome = self.outcome
        return result

    def time_up(self, elapsed_s: float) -> Outcome:
        """End an open game in a draw if `elapsed_s` has reached max_seconds; return the outcome."""
        if not self.outcome.over and elapsed_s >= self.max_seconds:
            self.outcome = Outcome("draw", None, "time_limit")
        return self.outcome

    # ---- saving

    def snapshot(self) -> dict:
        """The whole state as JSON-able data; `Game.replay` rebuilds the game from it."""
        return {
            "version": SNAPSHOT_VERSION,
            "pro_claim": self.pro_claim,
            "con_claim": self.con_claim,
            "limits": {
                "max_turns": self.max_turns,
                "max_seconds": self.max_seconds,
                "max_sentences": self.max_sentences,
                "first": self.first,
            },
            "moves": [m.to_dict() for m in self.moves],
            "turns": [list(t) for t in self.turns],
            "stores": {s: list(self.stores[s]) for s in SPEAKERS},
            "to_move": self.to_move,
            "outcome": {
                "status": self.outcome.status,
                "winner": self.outcome.winner,
                "reason": self.outcome.reason,
            },
        }

    @classmethod
    def replay(cls, data: dict) -> Game:
        """Rebuild a game from `snapshot()` output by replaying its turns; ValueError if it disagrees."""
        game = cls(data["pro_claim"], data["con_claim"], **data["limits"])
        moves = [Move.from_dict(d) for d in data["moves"]]
        for turn in data["turns"]:
            speaker = game.to_move
            result = game.play(speaker, [moves[i] for i in turn])
            if result.refused:
                raise ValueError(f"snapshot does not replay: {result.refused[0][1]}")
        if data["outcome"]["reason"] == "time_limit":
            game.time_up(float("inf"))
        if game.snapshot() != {**data, "version": SNAPSHOT_VERSION}:
            raise ValueError("snapshot does not replay to the same state")
        return game

    # ---- rules

    def _exists(self, index: object) -> bool:
        return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(self.moves)

    def _points(self, index: int) -> tuple[str, ...]:
        """What a reply to moves[index] can be about: its proposition, or a since's premises."""
        target = self.moves[index]
        return target.premises if target.kind == Kind.SINCE else (target.proposition,)

    def _surrendered(self, index: int, point: str) -> bool:
        """Whether the replier has already conceded or retracted `point` in reply to moves[index]."""
        cached = getattr(self, "_surrender_cache", None)
        if cached is None or cached[0] != len(self.moves):
            done = {
                (m.target, normalise(m.proposition))
                for m in self.moves
                if m.kind in (Kind.CONCEDE, Kind.RETRACT)
            }
            cached = self._surrender_cache = (len(self.moves), done)
        return (index, normalise(point)) in cached[1]

    def copy(self) -> Game:
        """An independent copy, cheaply: moves and outcomes are immutable, so only the lists
        and the stores are copied (the caches go with the moves they were built from)."""
        twin = object.__new__(Game)
        twin.__dict__.update(self.__dict__)
        twin.moves = list(self.moves)
        twin.turns = [list(t) for t in self.turns]
        twin.stores = {side: list(items) for side, items in self.stores.items()}
        return twin

    def _point_refusal(self, index: int, point: str) -> str | None:
        """Why `point` of moves[index] can no longer be replied to, or None while it is open."""
        target = self.moves[index]
        if self._surrendered(index, point):
            return gettext_noop("That point has already been conceded or retracted, so that line is closed.")
        if target.kind in (Kind.CLAIM, Kind.SINCE) and not self.holds(target.speaker, point):
            return gettext_noop("Your opponent has taken that back, so there is nothing left to reply to.")
        if target.kind == Kind.WHY and not self.holds(other(target.speaker), point):
            return gettext_noop("You have already taken that back, so there is nothing left to defend.")
        return None

    def _refusal(self, move: Move, *, any_turn: bool = False) -> str | None:
        """The reason `move` cannot be played now (by either side if `any_turn`), or None if it can."""
        if self.outcome.over:
            return GAME_OVER
        if move.speaker not in SPEAKERS:
            return gettext_noop("Only the two sides of the debate can make moves.")
        if move.speaker != self.to_move and not any_turn:
            return NOT_YOUR_TURN
        if not normalise(move.proposition):
            return gettext_noop("A move has to say something.")
        if move.target is None:
            return gettext_noop("Every move must reply to one of your opponent's moves.")
        if not self._exists(move.target):
            return gettext_noop("The move you are replying to does not exist.")
        target = self.moves[move.target]
        if target.speaker == move.speaker:
            return gettext_noop("You can only reply to your opponent's moves, not to your own.")
        if target.kind in (Kind.CONCEDE, Kind.RETRACT):
            return gettext_noop(
                "Nothing can reply to a concession or a retraction: that line of the debate is closed."
            )
        if move.kind not in REPLIES[target.kind]:
            return _NOT_A_REPLY[target.kind]
        return (
            self._shape_refusal(move, target)
            or self._commitment_refusal(move)
            or self._open_refusal(move)
            or self._repeat_refusal(move)
        )

    def _shape_refusal(self, move: Move, target: Move) -> str | None:
        """Whether the proposition and premises fit the target (Table 1)."""
        if move.kind != Kind.SINCE and move.premises:
            return gettext_noop("Only an argument (a since move) gives reasons.")
        if move.kind == Kind.SINCE:
            if normalise(move.proposition) != normalise(target.proposition):
                return gettext_noop("Your reasons must support the point that was challenged.")
            if not move.premises or not all(normalise(p) for p in move.premises):
                return gettext_noop("An argument needs at least one reason.")
            if any(normalise(p) == normalise(move.proposition) for p in move.premises):
                return gettext_noop("A reason cannot be the very claim it supports.")
            return None
        if move.kind in _ON_POINT:
            keys = {normalise(p) for p in self._points(move.target)}
            if normalise(move.proposition) not in keys:
                return _OFF_POINT[(target.kind, move.kind)]
        return None

    def _open_refusal(self, move: Move) -> str | None:
        """Whether the line the move replies to is still open."""
        if move.kind in _ON_POINT:
            return self._point_refusal(move.target, move.proposition)
        reasons = [self._point_refusal(move.target, p) for p in self._points(move.target)]
        return None if any(r is None for r in reasons) else reasons[0]

    def _commitment_refusal(self, move: Move) -> str | None:
        if move.kind == Kind.CONCEDE and not self.holds(other(move.speaker), move.proposition):
            return gettext_noop("You can only concede something your opponent has said and still holds.")
        if move.kind == Kind.RETRACT and not self.holds(move.speaker, move.proposition):
            return gettext_noop("You can only retract something you have said and still hold.")
        return None

    def _repeat_refusal(self, move: Move) -> str | None:
        if _reply_key(move) in self._reply_keys():
            return gettext_noop("You have already made that reply.")
        return None

    def _reply_keys(self) -> set[tuple]:
        """The replies made so far (moves are only ever appended: cached by their count)."""
        cached = getattr(self, "_keys_cache", None)
        if cached is None or cached[0] != len(self.moves):
            cached = (len(self.moves), {_reply_key(m) for m in self.moves[2:]})
            self._keys_cache = cached
        return cached[1]

    def _candidates(self, index: int, kind: Kind, replier: str) -> list[Move]:
        """Moves of `kind` replying to moves[index] that could be legal (fresh text for claim/since)."""
        target = self.moves[index]
        if kind in _ON_POINT:
            return [Move(replier, kind, p, index) for p in self._points(index)]
        fresh = f"\x00fresh {len(self.moves)}"  # no one can have said it, so it is never a repeat
        if kind == Kind.SINCE:
            return [Move(replier, kind, target.proposition, index, (fresh,))]
        return [Move(replier, kind, fresh, index)]

    def _apply(self, move: Move) -> int:
        """Record a legal move, apply its effect on the stores and on the outcome; its index."""
        self.moves.append(move)
        mine = self.stores[move.speaker]
        if move.kind == Kind.CLAIM:
            self._add(mine, move.proposition)
        elif move.kind == Kind.SINCE:
            for p in (move.proposition, *move.premises):
                self._add(mine, p)
        elif move.kind == Kind.CONCEDE:
            self._add(mine, self._wording(other(move.speaker), move.proposition))
            if normalise(move.proposition) == normalise(self.initial_claims[other(move.speaker)]):
                self.outcome = Outcome("won", other(move.speaker), "conceded")
        elif move.kind == Kind.RETRACT:
            key = normalise(move.proposition)
            mine[:] = [p for p in mine if normalise(p) != key]
            if key == normalise(self.initial_claims[move.speaker]):
                self.outcome = Outcome("won", other(move.speaker), "retracted")
        return len(self.moves) - 1

    def _wording(self, speaker: str, proposition: str) -> str:
        """`proposition` as it stands in `speaker`'s store (a concession takes the opponent's words)."""
        key = normalise(proposition)
        return next((p for p in self.stores[speaker] if normalise(p) == key), proposition)

    def _add(self, store: list[str], proposition: str) -> None:
        key = normalise(proposition)
        if all(normalise(p) != key for p in store):
            store.append(proposition)


def _reply_key(move: Move) -> tuple:
    return (
        move.speaker,
        move.kind,
        move.target,
        normalise(move.proposition),
        frozenset(normalise(p) for p in move.premises),
    )


_OFF_POINT = {
    (Kind.CLAIM, Kind.WHY): gettext_noop(
        "You can only ask why about what your opponent claimed in that move."
    ),
    (Kind.CLAIM, Kind.CONCEDE): gettext_noop("You can only concede what your opponent claimed in that move."),
    (Kind.CLAIM, Kind.QUESTION): gettext_noop(
        "You can only question what your opponent claimed in that move."
    ),
    (Kind.SINCE, Kind.WHY): gettext_noop(
        "You can only ask why about one of the reasons your opponent gave in that move."
    ),
    (Kind.SINCE, Kind.CONCEDE): gettext_noop(
        "You can only concede one of the reasons your opponent gave in that move."
    ),
    (Kind.SINCE, Kind.QUESTION): gettext_noop(
        "You can only question one of the reasons your opponent gave in that move."
    ),
    (Kind.WHY, Kind.RETRACT): gettext_noop(
        "You can only retract the point your opponent asked you to defend."
    ),
    (Kind.QUESTION, Kind.RETRACT): gettext_noop(
        "You can only retract the point your opponent asked you about."
    ),
}
