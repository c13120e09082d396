"""The offline backend of design C: its classifier, its update checks and its scripted agent,
played against each other through the protocol."""

import json

import pytest
from asgiref.sync import async_to_sync

from debates import llm
from debates.persuasion import language, offline
from debates.persuasion.protocol import Game, Kind

TOPIC = language.TopicView(
    text="Cities should make public transport free.",
    pro_claim="Free public transport makes cities better places to live.",
    con_claim="Free public transport wastes money that cities need elsewhere.",
)


@pytest.fixture(autouse=True)
def offline_backend(settings):
    settings.LLM_BACKEND = "offline"
    offline.register()


def agent(name: str, concede_after: int | None) -> language.AgentView:
    return language.AgentView(name=name, model="offline", offline_concede_after=concede_after)


async def play(game: Game, agents: dict[str, language.AgentView]) -> list[language.Reading]:
    readings = []
    while not game.outcome.over:
        speaker = game.to_move
        reply = await llm.complete(language.agent_request(game, speaker, agents[speaker], TOPIC))
        reading = await language.read_turn(game, speaker, reply.text, model="offline", topic=TOPIC)
        readings.append(reading)
        game.play(speaker, reading.moves)
    return readings


def new_game(**limits) -> Game:
    return Game(TOPIC.pro_claim, TOPIC.con_claim, **limits)


@pytest.mark.parametrize("concede_after", [0, 1, 3, 6])
def test_the_scripted_agents_reach_a_winner_when_one_concedes_after_its_turns(concede_after):
    game = new_game()
    readings = async_to_sync(play)(game, {"pro": agent("a", None), "con": agent("b", concede_after)})
    assert (game.outcome.status, game.outcome.winner, game.outcome.reason) == ("won", "pro", "conceded")
    assert len(game.turns) == 2 * (concede_after + 1)  # pro opens; con concedes on its turn N+1
    last = readings[-1].sentences[-1]
    assert last.kind == Kind.CONCEDE and last.proposition == TOPIC.pro_claim and last.legal


def test_the_first_speaker_can_be_the_one_who_concedes():
    game = new_game(first="con")
    async_to_sync(play)(game, {"pro": agent("a", 2), "con": agent("b", None)})
    assert (game.outcome.winner, game.outcome.reason) == ("con", "conceded")
    assert len(game.turns) == 6


def test_agents_that_never_concede_play_to_the_turn_limit():
    game = new_game()
    readings = async_to_sync(play)(game, {"pro": agent("a", None), "con": agent("b", None)})
    assert (game.outcome.status, game.outcome.reason) == ("draw", "turn_limit")
    assert len(game.turns) == 40
    kinds = {s.kind for r in readings for s in r.sentences if s.legal}
    assert {Kind.CLAIM, Kind.WHY, Kind.SINCE} <= kinds
    assert Kind.CONCEDE not in kinds and Kind.RETRACT not in kinds
    assert not any(r.fallback for r in readings)
    # the scripted agent mostly plays legal moves, and never the same text twice in a row
    legal = sum(s.legal for r in readings for s in r.sentences)
    assert legal >= 0.8 * sum(len(r.sentences) for r in readings)
    texts = [" ".join(s.text for s in r.sentences) for r in readings]
    assert all(a != b for a, b in zip(texts, texts[2:], strict=False))


def test_every_offline_answer_is_json_that_fits_its_schema():
    sentences = ["Why is that?", "I concede that it is cheap.", "It works because buses are full.", "Is it?"]
    request = language.classify_request(
        Game(TOPIC.pro_claim, TOPIC.con_claim), "pro", sentences, model="m", topic=TOPIC
    )
    answer, problem = language.parse_answer(
        offline.classify_text(request), language.prompts.classify_schema(4)
    )
    assert problem == "" and [e["move"] for e in answer["sentences"]] == [
        "why",
        "concede",
        "claim",
        "question",
    ]


@pytest.mark.parametrize(
    "sentence, kind",
    [
        ("Why would anyone pay for that?", "why"),
        ("I concede that buses are slow.", "concede"),
        ("Fine, I agree with you there.", "concede"),
        ("I withdraw my point about fares.", "retract"),
        ("Fares fall because demand rises.", "since"),
        ("Do you ride the bus?", "question"),
        ("Buses are full at rush hour.", "claim"),
    ],
)
def test_the_offline_classifier_reads_cue_words(sentence, kind):
    assert offline.cue(sentence) == kind


def test_reasons_are_a_since_only_in_answer_to_a_why():
    game = new_game()
    reading = async_to_sync(language.read_turn)(
        game, "pro", "Fares fall because demand rises.", model="offline", topic=TOPIC
    )
    assert reading.sentences[0].kind == Kind.CLAIM and reading.sentences[0].target == 1


def test_a_concession_naming_the_opponents_claim_ends_the_game():
    game = new_game()
    text = f"Why do you say so? I accept that {TOPIC.con_claim.lower()}"
    reading = async_to_sync(language.read_turn)(game, "pro", text, model="offline", topic=TOPIC)
    assert [s.kind for s in reading.sentences] == [Kind.WHY, Kind.CONCEDE]
    assert all(s.legal for s in reading.sentences)
    roles = [c.role for c in reading.calls]
    assert roles == ["classify", "concede_check"]
    game.play("pro", reading.moves)
    assert (game.outcome.winner, game.outcome.reason) == ("con", "conceded")


def test_a_concession_of_a_smaller_point_does_not_end_the_game():
    game = new_game()
    game.play("pro", [language.Move("pro", Kind.WHY, TOPIC.con_claim, 1)])
    game.play("con", [language.Move("con", Kind.SINCE, TOPIC.con_claim, 2, ("Budgets are tight.",))])
    reading = async_to_sync(language.read_turn)(
        game, "pro", "I concede that budgets are tight.", model="offline", topic=TOPIC
    )
    sentence = reading.sentences[0]
    assert (sentence.kind, sentence.target, sentence.proposition, sentence.legal) == (
        Kind.CONCEDE,
        3,
        "Budgets are tight.",
        True,
    )
    game.play("pro", reading.moves)
    assert not game.outcome.over


def test_retracting_ones_initial_claim_in_answer_to_a_why_ends_the_game():
    game = new_game()
    game.play("pro", [language.Move("pro", Kind.WHY, TOPIC.con_claim, 1)])
    text = f"I withdraw my claim that {TOPIC.con_claim.lower()}"
    reading = async_to_sync(language.read_turn)(game, "con", text, model="offline", topic=TOPIC)
    assert reading.sentences[0].kind == Kind.RETRACT and reading.sentences[0].legal
    assert [c.role for c in reading.calls] == ["classify", "retract_check"]
    game.play("con", reading.moves)
    assert (game.outcome.winner, game.outcome.reason) == ("pro", "retracted")


def test_a_claim_that_repeats_a_commitment_in_other_words_is_checked_and_kept_once():
    game = new_game()
    text = "Free public transport makes our cities better places to live in."
    reading = async_to_sync(language.read_turn)(game, "pro", text, model="offline", topic=TOPIC)
    assert [c.role for c in reading.calls] == ["classify", "redundancy"]
    assert json.loads(reading.calls[1].result.text) == {"duplicates": []}  # offline: same words only


def test_the_update_checks_answer_by_the_words_of_the_claim():
    def answer(**hint):
        request = llm.LLMRequest(model="offline", messages=[], hint={"task": "persuasion_update", **hint})
        return json.loads(offline.update_text(request))

    assert answer(check="concede", claim="Taxes are high.", sentence="I concede that taxes are high.") == {
        "concede": True
    }
    assert answer(check="retract", claim="Taxes are high.", sentence="I withdraw that.") == {"retract": False}
    assert answer(
        check="redundancy", store=["A b.", "Taxes are high."], candidates=["x", "taxes are HIGH"]
    ) == {"duplicates": [{"candidate": 2, "commitment": 2}]}


def test_registering_routes_the_tasks_through_the_offline_backend():
    request = language.agent_request(new_game(), "pro", agent("a", 0), TOPIC)
    result = async_to_sync(llm.complete)(request)
    assert result.backend == llm.OFFLINE
    assert result.text.startswith("I concede that free public transport wastes money")
