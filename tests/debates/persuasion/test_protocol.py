"""Tests of the persuasion protocol engine: each row of Table 1, the effect and outcome rules, and
properties over random games (legal turns drawn from `admissible()`, random illegal ones)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from debates.persuasion.protocol import SPEAKERS, Game, IllegalMove, Kind, Move, Outcome, other

PRO = "Taxes on wealth should rise."
CON = "Taxes on wealth should not rise."

TABLE_1 = {
    Kind.CLAIM: {Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION},
    Kind.WHY: {Kind.SINCE, Kind.CLAIM, Kind.RETRACT},
    Kind.SINCE: {Kind.WHY, Kind.CONCEDE, Kind.QUESTION},
    Kind.QUESTION: {Kind.CLAIM, Kind.RETRACT},
    Kind.CONCEDE: set(),
    Kind.RETRACT: set(),
}


def norm(text: str) -> str:
    """The comparison the spec asks for: whitespace and case, and a sentence's end punctuation."""
    return " ".join(text.split()).casefold().rstrip(".!?;: ")


def game(**limits) -> Game:
    return Game(PRO, CON, **limits)


def refusal(g: Game, move: Move) -> str:
    with pytest.raises(IllegalMove) as caught:
        g.check(move)
    return caught.value.reason


def played(g: Game, speaker: str, *moves: Move) -> list[int]:
    """Play a turn whose moves must all be accepted; their indices."""
    result = g.play(speaker, list(moves))
    assert result.refused == []
    return g.turns[-1]


def why_answered_with_since(g: Game) -> int:
    """Pro asks why of con's claim; con gives two reasons. The since move's index."""
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    played(g, "con", Move("con", Kind.SINCE, CON, 2, ("Growth is weak.", "Capital leaves.")))
    return 3


# ---- Table 1, row by row


def test_a_claim_can_be_answered_by_why_counter_claim_concede_or_question():
    g = game()
    assert g.replies(1) == [Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION]
    for move in (
        Move("pro", Kind.WHY, CON, 1),
        Move("pro", Kind.CLAIM, "Inequality is rising.", 1),
        Move("pro", Kind.CONCEDE, CON, 1),
        Move("pro", Kind.QUESTION, CON, 1),
    ):
        g.check(move)


def test_a_claim_cannot_be_answered_by_since_or_retract():
    g = game()
    reason = (
        "You can reply to a claim only by asking why, making a counter-claim, conceding it or questioning it."
    )
    assert refusal(g, Move("pro", Kind.SINCE, CON, 1, ("x",))) == reason
    assert refusal(g, Move("pro", Kind.RETRACT, PRO, 1)) == reason


def test_why_concede_and_question_of_a_claim_are_about_what_it_claimed():
    g = game()
    assert refusal(g, Move("pro", Kind.WHY, "Something else.", 1)) == (
        "You can only ask why about what your opponent claimed in that move."
    )
    assert "concede" in refusal(g, Move("pro", Kind.CONCEDE, "Something else.", 1))
    assert "question" in refusal(g, Move("pro", Kind.QUESTION, "Something else.", 1))


def test_a_why_can_be_answered_by_since_a_claim_or_a_retract():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    assert g.replies(2) == [Kind.SINCE, Kind.CLAIM, Kind.RETRACT]
    g.check(Move("con", Kind.SINCE, CON, 2, ("Growth is weak.",)))
    g.check(Move("con", Kind.CLAIM, "Growth is weak.", 2))
    g.check(Move("con", Kind.RETRACT, CON, 2))
    for kind in (Kind.WHY, Kind.CONCEDE, Kind.QUESTION):
        assert refusal(g, Move("con", kind, CON, 2)) == (
            "You can answer a why only by giving your reasons (since), making a claim or retracting."
        )


def test_a_since_must_support_the_challenged_point_with_reasons():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    assert refusal(g, Move("con", Kind.SINCE, "Something else.", 2, ("x",))) == (
        "Your reasons must support the point that was challenged."
    )
    assert refusal(g, Move("con", Kind.SINCE, CON, 2)) == "An argument needs at least one reason."
    assert refusal(g, Move("con", Kind.SINCE, CON, 2, (CON.upper(),))) == (
        "A reason cannot be the very claim it supports."
    )
    assert (
        refusal(g, Move("con", Kind.CLAIM, "x", 2, ("y",)))
        == "Only an argument (a since move) gives reasons."
    )


def test_a_since_can_be_answered_by_why_concede_or_question_of_one_of_its_reasons():
    g = game()
    since = why_answered_with_since(g)
    assert g.replies(since) == [Kind.WHY, Kind.CONCEDE, Kind.QUESTION]
    for kind in (Kind.WHY, Kind.CONCEDE, Kind.QUESTION):
        g.check(Move("pro", kind, "Capital leaves.", since))
        assert "one of the reasons" in refusal(g, Move("pro", kind, CON, since))
    for kind in (Kind.CLAIM, Kind.RETRACT, Kind.SINCE):
        assert refusal(
            g, Move("pro", kind, "Growth is weak.", since, ("x",) if kind == Kind.SINCE else ())
        ) == ("You can reply to an argument only by asking why, conceding or questioning one of its reasons.")


def test_conceding_one_reason_leaves_the_other_reasons_open():
    g = game()
    since = why_answered_with_since(g)
    played(g, "pro", Move("pro", Kind.CONCEDE, "Growth is weak.", since))
    played(g, "con")
    assert g.replies(since) == [Kind.WHY, Kind.CONCEDE, Kind.QUESTION]
    assert "already been conceded" in refusal(g, Move("pro", Kind.WHY, "Growth is weak.", since))
    g.check(Move("pro", Kind.WHY, "Capital leaves.", since))


def test_a_question_can_be_answered_by_a_claim_either_way_or_a_retract():
    g = game(first="con")
    played(g, "con", Move("con", Kind.QUESTION, PRO, 0))
    assert g.replies(2) == [Kind.CLAIM, Kind.RETRACT]
    g.check(Move("pro", Kind.CLAIM, PRO, 2))
    g.check(Move("pro", Kind.CLAIM, CON, 2))
    g.check(Move("pro", Kind.RETRACT, PRO, 2))
    assert (
        refusal(g, Move("pro", Kind.WHY, PRO, 2))
        == "You can answer a question only with a claim or by retracting."
    )


def test_nothing_replies_to_a_concede_or_a_retract():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Schools need money.", 1))
    played(g, "con", Move("con", Kind.CONCEDE, "Schools need money.", 2), Move("con", Kind.WHY, PRO, 0))
    played(g, "pro", Move("pro", Kind.CLAIM, "The rich pay less.", 4))
    played(g, "con", Move("con", Kind.WHY, "The rich pay less.", 5))
    played(g, "pro", Move("pro", Kind.RETRACT, "The rich pay less.", 6))
    assert g.replies(3) == [] and g.replies(7) == []
    reason = "Nothing can reply to a concession or a retraction: that line of the debate is closed."
    assert refusal(g, Move("con", Kind.WHY, "The rich pay less.", 7)) == reason
    played(g, "con")
    assert refusal(g, Move("pro", Kind.WHY, "Schools need money.", 3)) == reason


# ---- who may reply to what


def test_a_move_must_reply_to_an_existing_move_of_the_opponent():
    g = game()
    assert (
        refusal(g, Move("pro", Kind.CLAIM, "x")) == "Every move must reply to one of your opponent's moves."
    )
    assert refusal(g, Move("pro", Kind.CLAIM, "x", 9)) == "The move you are replying to does not exist."
    assert (
        refusal(g, Move("pro", Kind.WHY, PRO, 0))
        == "You can only reply to your opponent's moves, not to your own."
    )
    assert refusal(g, Move("pro", Kind.CLAIM, "  ", 1)) == "A move has to say something."
    assert refusal(g, Move("con", Kind.WHY, PRO, 0)) == "It is not your turn."


def test_you_can_only_concede_what_the_opponent_still_holds():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "The rich pay less.", 1))
    played(g, "con", Move("con", Kind.WHY, "The rich pay less.", 2))
    played(g, "pro", Move("pro", Kind.RETRACT, "The rich pay less.", 3))
    assert refusal(g, Move("con", Kind.CONCEDE, "The rich pay less.", 2)) == (
        "You can only concede something your opponent has said and still holds."
    )
    assert refusal(g, Move("con", Kind.WHY, "The rich pay less.", 2)) == (
        "Your opponent has taken that back, so there is nothing left to reply to."
    )
    assert 2 not in dict(g.admissible())


def test_you_can_only_retract_what_you_still_hold():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Growth matters.", 1))
    played(
        g,
        "con",
        Move("con", Kind.QUESTION, "Growth matters.", 2),
        Move("con", Kind.WHY, "Growth matters.", 2),
    )
    result = g.play(
        "pro",
        [Move("pro", Kind.RETRACT, "Growth matters.", 4), Move("pro", Kind.RETRACT, "Growth matters.", 3)],
    )
    assert result.refused == [
        (
            Move("pro", Kind.RETRACT, "Growth matters.", 3),
            "You can only retract something you have said and still hold.",
        )
    ]
    played(g, "con")
    assert g.replies(3) == [Kind.CLAIM]


def test_a_why_is_closed_once_its_point_was_taken_back_elsewhere():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Growth matters.", 1))
    played(
        g,
        "con",
        Move("con", Kind.WHY, "Growth matters.", 2),
        Move("con", Kind.QUESTION, "Growth matters.", 2),
    )
    played(g, "pro", Move("pro", Kind.RETRACT, "Growth matters.", 4))
    played(g, "con")
    assert g.replies(3) == []
    assert refusal(g, Move("pro", Kind.SINCE, "Growth matters.", 3, ("Jobs depend on it.",))) == (
        "You have already taken that back, so there is nothing left to defend."
    )


def test_the_same_reply_cannot_be_made_twice():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    played(g, "con")
    assert refusal(g, Move("pro", Kind.WHY, CON.lower(), 1)) == "You have already made that reply."
    assert Kind.WHY not in g.replies(1)


def test_admissible_lists_the_opponents_open_moves():
    g = game()
    assert g.admissible() == [(1, [Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION])]
    assert g.admissible("con") == [(0, [Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION])]
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    assert g.admissible() == [
        (0, [Kind.WHY, Kind.CLAIM, Kind.CONCEDE, Kind.QUESTION]),
        (2, [Kind.SINCE, Kind.CLAIM, Kind.RETRACT]),
    ]


# ---- effects on the commitment stores


def test_claim_since_and_concede_add_retract_removes_why_and_question_change_nothing():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1), Move("pro", Kind.CLAIM, "Schools need money.", 1))
    assert g.stores == {"pro": [PRO, "Schools need money."], "con": [CON]}
    since = g.turns[-1][0] + 2
    played(
        g, "con", Move("con", Kind.SINCE, CON, 2, ("Growth is weak.", "growth  IS weak", "Capital leaves."))
    )
    assert g.stores["con"] == [CON, "Growth is weak.", "Capital leaves."]
    played(
        g,
        "pro",
        Move("pro", Kind.CONCEDE, "Capital leaves.", since),
        Move("pro", Kind.QUESTION, "Growth is weak.", 4),
    )
    assert g.stores["pro"] == [PRO, "Schools need money.", "Capital leaves."]
    played(g, "con", Move("con", Kind.WHY, "Schools need money.", 3))
    played(g, "pro", Move("pro", Kind.RETRACT, "schools need money", 7))
    assert g.stores == {"pro": [PRO, "Capital leaves."], "con": [CON, "Growth is weak.", "Capital leaves."]}


def test_stores_hold_no_duplicates_after_normalising_space_case_and_end_punctuation():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Schools need money.", 1))
    played(g, "con", Move("con", Kind.CLAIM, "Growth is weak.", 2))
    played(
        g,
        "pro",
        Move("pro", Kind.CLAIM, " schools NEED  money", 3),
        Move("pro", Kind.CONCEDE, "growth is weak", 3),
    )
    assert g.stores["con"] == [CON, "Growth is weak."]
    assert g.stores["pro"] == [PRO, "Schools need money.", "Growth is weak."]


# ---- outcome


def test_conceding_the_opponents_initial_claim_ends_the_game_and_the_opponent_wins():
    g = game()
    result = g.play(
        "pro",
        [Move("pro", Kind.CONCEDE, CON.lower(), 1), Move("pro", Kind.CLAIM, "Still, schools need money.", 1)],
    )
    assert result.outcome == g.outcome == Outcome("won", "con", "conceded")
    assert result.refused == [
        (Move("pro", Kind.CLAIM, "Still, schools need money.", 1), "The debate is over.")
    ]
    assert g.admissible("con") == [] and g.replies(0) == []
    assert refusal(g, Move("con", Kind.WHY, PRO, 0)) == "The debate is over."
    late = g.play("con", [Move("con", Kind.WHY, PRO, 0)])
    assert late.accepted == [] and g.turns == [[2]]


def test_retracting_ones_own_initial_claim_ends_the_game_and_the_opponent_wins():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    played(g, "con", Move("con", Kind.RETRACT, CON, 2))
    assert g.outcome == Outcome("won", "pro", "retracted")


def test_conceding_a_premise_that_is_the_initial_claim_also_ends_the_game():
    g = game()
    played(g, "pro", Move("pro", Kind.WHY, CON, 1))
    played(g, "con", Move("con", Kind.SINCE, CON, 2, ("Growth is weak.",)))
    played(g, "pro", Move("pro", Kind.WHY, "Growth is weak.", 3))
    played(g, "con", Move("con", Kind.SINCE, "Growth is weak.", 4, ("Investment fell.",)))
    played(
        g,
        "pro",
        Move("pro", Kind.CONCEDE, "Growth is weak.", 3),
        Move("pro", Kind.CONCEDE, "Investment fell.", 5),
    )
    assert g.outcome == Outcome()


def test_a_concession_of_another_claim_does_not_end_the_game():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Schools need money.", 1))
    played(g, "con", Move("con", Kind.CONCEDE, "Schools need money.", 2))
    assert g.outcome == Outcome("open", None, "")


def test_the_turn_limit_is_a_draw_and_empty_turns_count():
    g = game(max_turns=3, first="con")
    g.play("con", [])
    g.play("pro", [])
    assert g.outcome.status == "open" and g.to_move == "con"
    result = g.play("con", [Move("con", Kind.WHY, PRO, 0)])
    assert result.accepted and result.outcome == Outcome("draw", None, "turn_limit")
    assert g.turns == [[], [], [2]]


def test_a_win_in_the_last_turn_is_a_win_not_a_draw():
    g = game(max_turns=1)
    assert g.play("pro", [Move("pro", Kind.CONCEDE, CON, 1)]).outcome == Outcome("won", "con", "conceded")


def test_the_time_limit_is_a_draw():
    g = game(max_seconds=60)
    assert g.time_up(59.9) == Outcome()
    assert g.time_up(60) == Outcome("draw", None, "time_limit")
    assert g.play("pro", [Move("pro", Kind.CONCEDE, CON, 1)]).outcome.reason == "time_limit"


def test_a_turn_sent_after_the_time_limit_is_refused():
    g = game(max_seconds=60)
    result = g.play("pro", [Move("pro", Kind.WHY, CON, 1)], elapsed_s=75)
    assert result.refused == [(Move("pro", Kind.WHY, CON, 1), "The time for this debate is up.")]
    assert result.outcome == Outcome("draw", None, "time_limit") and g.turns == []


def test_a_turn_by_the_wrong_side_or_with_too_many_sentences_is_refused_whole():
    g = game(max_sentences=2)
    with pytest.raises(IllegalMove, match="It is not your turn."):
        g.play("con", [])
    moves = [Move("pro", Kind.CLAIM, f"Point {i}.", 1) for i in range(3)]
    with pytest.raises(IllegalMove, match="at most 2 sentences"):
        g.play("pro", moves)
    assert g.turns == [] and len(g.moves) == 2


def test_the_game_refuses_initial_claims_that_are_empty_or_the_same():
    with pytest.raises(ValueError):
        Game(PRO, PRO.upper())
    with pytest.raises(ValueError):
        Game(PRO, " ")


# ---- saving


def test_a_move_round_trips_through_a_dict():
    move = Move("con", Kind.SINCE, CON, 2, ("a", "b"))
    assert Move.from_dict(json.loads(json.dumps(move.to_dict()))) == move
    assert Move("pro", "why", "x", 1).kind is Kind.WHY


def test_replay_refuses_a_snapshot_that_was_tampered_with():
    g = game()
    played(g, "pro", Move("pro", Kind.CLAIM, "Schools need money.", 1))
    data = g.snapshot()
    data["stores"]["pro"].append("Something never said.")
    with pytest.raises(ValueError, match="same state"):
        Game.replay(data)
    data = g.snapshot()
    data["moves"][2]["target"] = 0
    with pytest.raises(ValueError, match="does not replay"):
        Game.replay(data)


def test_a_time_limit_survives_a_replay():
    g = game(max_seconds=10)
    g.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    g.time_up(11)
    assert Game.replay(json.loads(json.dumps(g.snapshot()))).outcome == Outcome("draw", None, "time_limit")


# ---- properties over random games

SAYINGS = [
    PRO,
    CON,
    CON.upper() + "  ",
    "Growth is weak.",
    "growth IS weak",
    "Schools need money.",
    "Capital leaves!",
]


@st.composite
def legal_move(draw, g: Game, fresh: list[int], may_end: bool):
    """A move drawn from `g.admissible()`, checked to be legal (None if nothing is admissible)."""
    options = []
    for index, kinds in g.admissible():
        target = g.moves[index]
        for kind in kinds:
            candidates = candidates_for(g, index, kind, fresh)
            legal = [m for m in candidates if accepts(g, m)]
            assert legal, f"admissible lists {kind} on move {index} but no such move is legal"
            options += [m for m in legal if may_end or not ends_game(g, m)]
            assert target.speaker != g.to_move
    if not options:
        return None
    return draw(st.sampled_from(options))


def candidates_for(g: Game, index: int, kind: Kind, fresh: list[int]) -> list[Move]:
    target, speaker = g.moves[index], g.to_move
    fresh[0] += 1
    new = f"Fresh point {fresh[0]}."
    if kind == Kind.CLAIM:
        return [Move(speaker, kind, new, index)]
    if kind == Kind.SINCE:
        return [Move(speaker, kind, target.proposition, index, (new, f"Fresh point {fresh[0]}b."))]
    points = target.premises if target.kind == Kind.SINCE else (target.proposition,)
    return [Move(speaker, kind, p, index) for p in points]


@st.composite
def any_move(draw, g: Game):
    """A random move, legal or (mostly) not."""
    target = draw(st.one_of(st.none(), st.integers(-1, len(g.moves) + 1)))
    points = list(SAYINGS)
    if target is not None and 0 <= target < len(g.moves):
        points += [g.moves[target].proposition, *g.moves[target].premises]
    return Move(
        speaker=draw(st.sampled_from(SPEAKERS)) if draw(st.booleans()) else g.to_move,
        kind=draw(st.sampled_from(list(Kind))),
        proposition=draw(st.sampled_from(points)),
        target=target,
        premises=tuple(draw(st.lists(st.sampled_from(points), max_size=2))),
    )


def accepts(g: Game, move: Move) -> bool:
    try:
        g.check(move)
    except IllegalMove as refused:
        assert refused.reason.endswith(".") and refused.reason[0].isupper()
        return False
    return True


def ends_game(g: Game, move: Move) -> bool:
    own = norm(g.initial_claims[move.speaker])
    theirs = norm(g.initial_claims[other(move.speaker)])
    return (move.kind == Kind.CONCEDE and norm(move.proposition) == theirs) or (
        move.kind == Kind.RETRACT and norm(move.proposition) == own
    )


def assert_turns_alternate(g: Game) -> None:
    speaker, order = g.first, []
    for turn in g.turns:
        assert all(g.moves[i].speaker == speaker for i in turn)
        order += turn
        speaker = other(speaker)
    assert order == list(range(2, len(g.moves))), "every move after the initial claims was played in a turn"


def referee(g: Game, timed_out: bool) -> tuple[dict, Outcome]:
    """Recompute the stores and the outcome from the accepted moves alone, checking each was legal."""
    stores = {"pro": [g.pro_claim], "con": [g.con_claim]}

    def holds(speaker: str, p: str) -> bool:
        return norm(p) in {norm(q) for q in stores[speaker]}

    def point_open(index: int, point: str) -> bool:
        target = g.moves[index]
        if (index, norm(point)) in surrendered:
            return False
        if target.kind in (Kind.CLAIM, Kind.SINCE):
            return holds(target.speaker, point)
        return target.kind != Kind.WHY or holds(other(target.speaker), point)

    outcome, surrendered, made = None, set(), set()
    for move in g.moves[2:]:
        assert outcome is None, "no move is accepted after the end"
        target = g.moves[move.target]
        assert target.speaker == other(move.speaker) and move.kind in TABLE_1[target.kind]
        points = target.premises if target.kind == Kind.SINCE else (target.proposition,)
        if move.kind == Kind.SINCE:
            assert norm(move.proposition) == norm(target.proposition) and move.premises
        if move.kind in (Kind.CLAIM, Kind.SINCE):
            assert any(point_open(move.target, p) for p in points), "the line is still open"
        else:
            assert norm(move.proposition) in {norm(p) for p in points}
            assert point_open(move.target, move.proposition), "the point is still open"
            surrendered |= (
                {(move.target, norm(move.proposition))}
                if move.kind in (Kind.CONCEDE, Kind.RETRACT)
                else set()
            )
        key = (
            move.speaker,
            move.kind,
            move.target,
            norm(move.proposition),
            frozenset(map(norm, move.premises)),
        )
        assert key not in made, "no reply is made twice"
        made.add(key)
        if move.kind == Kind.CONCEDE:
            assert holds(other(move.speaker), move.proposition)
        if move.kind == Kind.RETRACT:
            assert holds(move.speaker, move.proposition)
            stores[move.speaker] = [p for p in stores[move.speaker] if norm(p) != norm(move.proposition)]
        added = {Kind.CLAIM: [move.proposition], Kind.SINCE: [move.proposition, *move.premises]}
        if move.kind == Kind.CONCEDE:  # in the opponent's words
            added[move.kind] = [p for p in stores[other(move.speaker)] if norm(p) == norm(move.proposition)]
        for p in added.get(move.kind, []):
            if not holds(move.speaker, p):
                stores[move.speaker].append(p)
        if ends_game(g, move):
            reason = "conceded" if move.kind == Kind.CONCEDE else "retracted"
            outcome = Outcome("won", other(move.speaker), reason)
    if outcome is None:
        if len(g.turns) >= g.max_turns:
            outcome = Outcome("draw", None, "turn_limit")
        elif timed_out:
            outcome = Outcome("draw", None, "time_limit")
        else:
            outcome = Outcome()
    return stores, outcome


def assert_consistent(g: Game, timed_out: bool) -> None:
    assert_turns_alternate(g)
    stores, outcome = referee(g, timed_out)
    assert g.stores == stores
    assert g.outcome == outcome
    for speaker in SPEAKERS:
        assert len({norm(p) for p in g.stores[speaker]}) == len(g.stores[speaker]), "no duplicates"
        retracted = any(m.speaker == speaker and ends_game(g, m) and m.kind == Kind.RETRACT for m in g.moves)
        assert retracted or g.holds(speaker, g.initial_claims[speaker])
    data = json.loads(json.dumps(g.snapshot()))
    assert Game.replay(data).snapshot() == g.snapshot()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_games_keep_the_rules(data):
    g = game(
        max_turns=data.draw(st.integers(1, 16) | st.integers(8, 16), label="max_turns"),
        max_sentences=data.draw(st.integers(1, 3), label="max_sentences"),
        max_seconds=100,
        first=data.draw(st.sampled_from(SPEAKERS), label="first"),
    )
    may_end = data.draw(st.booleans(), label="may_end")
    time_out_at = data.draw(st.one_of(st.none(), st.integers(0, 16)), label="time out in turn")
    fresh = [0]
    timed_out = False
    while not g.outcome.over:
        speaker, before = g.to_move, g.snapshot()
        moves = []
        empty_turn = data.draw(st.integers(0, 5)) == 5
        for _ in range(0 if empty_turn else data.draw(st.integers(1, g.max_sentences))):
            move = data.draw(legal_move(g, fresh, may_end)) if data.draw(st.integers(0, 3)) else None
            moves.append(move or data.draw(any_move(g)))
        legal_now = [accepts(g, m) for m in moves]
        for move, legal in zip(moves, legal_now):
            if legal:
                assert move.kind in dict(g.admissible()).get(move.target, []), "a legal reply is admissible"
        assert g.snapshot() == before, "checking changes nothing"
        elapsed = 150 if len(g.turns) == time_out_at else data.draw(st.sampled_from([None, 50]))
        result = g.play(speaker, moves, elapsed_s=elapsed)
        assert [m for m in moves if m in result.accepted or any(m is r for r, _ in result.refused)] == moves
        assert len(result.accepted) + len(result.refused) == len(moves)
        assert all(reason for _, reason in result.refused)
        assert result.outcome == g.outcome
        if elapsed == 150:
            timed_out = True
            assert result.accepted == [] and g.snapshot()["turns"] == before["turns"]
            assert g.outcome == Outcome("draw", None, "time_limit")
        else:
            if moves:
                assert (moves[0] in result.accepted) == legal_now[0], (
                    "the first move is judged on the state before"
                )
            assert g.moves == [Move.from_dict(d) for d in before["moves"]] + result.accepted
            assert g.to_move == other(speaker)
        assert_consistent(g, timed_out)

    event(f"ended: {g.outcome.reason}")
    event(f"moves played: {min(len(g.moves) - 2, 10)}{'+' if len(g.moves) > 12 else ''}")
    after = g.snapshot()
    late = [data.draw(any_move(g)) for _ in range(2)]
    assert not any(accepts(g, m) for m in late)
    for speaker in SPEAKERS:
        result = g.play(speaker, late)
        assert result.accepted == [] and {reason for _, reason in result.refused} <= {
            "The debate is over.",
            "The time for this debate is up.",
        }
    assert g.snapshot() == after, "nothing changes after the end"
    assert g.admissible() == []


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_a_refused_move_changes_nothing_but_the_turn(data):
    g = game(max_turns=50)
    fresh = [0]
    for _ in range(data.draw(st.integers(0, 6))):
        move = data.draw(legal_move(g, fresh, may_end=False))
        g.play(g.to_move, [move] if move else [])
    move = data.draw(any_move(g))
    if accepts(g, move):
        return
    before = g.snapshot()
    speaker = g.to_move
    result = g.play(speaker, [move])
    assert result.accepted == [] and len(result.refused) == 1
    after = g.snapshot()
    assert after["turns"] == before["turns"] + [[]]
    assert after["to_move"] == other(before["to_move"])
    for key in ("moves", "stores", "outcome"):
        assert after[key] == before[key]
