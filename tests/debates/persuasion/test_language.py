"""Design C's language side: sentence splitting, JSON answers checked against their schemas, and
reading a turn through the real `openai` client against the fake server on loopback, whose
answers each test chooses (valid, invalid then valid, garbage twice, no answer in time)."""

import json
import secrets

import pytest
from asgiref.sync import async_to_sync
from hypothesis import given
from hypothesis import strategies as st

from debates import llm
from debates.persuasion import language, prompts
from debates.persuasion.language import Move, split_sentences
from debates.persuasion.protocol import Game, Kind
from devtools import fakellm

PRO = "Free public transport makes cities better places to live."
CON = "Free public transport wastes money that cities need elsewhere."
TOPIC = language.TopicView(text="Cities should make public transport free.", pro_claim=PRO, con_claim=CON)


# --- Sentences -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Buses are full. Trains are late.", ["Buses are full.", "Trains are late."]),
        ("Is that so? Yes! It is.", ["Is that so?", "Yes!", "It is."]),
        ("Really?! I doubt it.", ["Really?!", "I doubt it."]),
        ("Fares rose 3.5 percent. That hurts.", ["Fares rose 3.5 percent.", "That hurts."]),
        ("Dr. Smith agrees. Mr. Jones does not.", ["Dr. Smith agrees.", "Mr. Jones does not."]),
        ("Cities, e.g. Tallinn, did it. It worked.", ["Cities, e.g. Tallinn, did it.", "It worked."]),
        ("The U.K. government pays. The U.S. does not.", ["The U.K. government pays.", "The U.S. does not."]),
        ("We moved to the U.K. It rains.", ["We moved to the U.K.", "It rains."]),
        ("J. R. Smith wrote it. He was right.", ["J. R. Smith wrote it.", "He was right."]),
        ("See no. 5 on the list. No. I disagree.", ["See no. 5 on the list.", "No.", "I disagree."]),
        ('He said "it is free." Then he left.', ['He said "it is free."', "Then he left."]),
        ('"Why pay?" she asked. Good question.', ['"Why pay?" she asked.', "Good question."]),
        ("Buses, trams, etc. They all cost money.", ["Buses, trams, etc.", "They all cost money."]),
        ("It costs money... But it pays back.", ["It costs money...", "But it pays back."]),
        ("It was a slow... gradual change.", ["It was a slow... gradual change."]),
        ("Smith et al. (2020) found it. Fine.", ["Smith et al. (2020) found it.", "Fine."]),
        ("It opens at 5 p.m. tomorrow. Come.", ["It opens at 5 p.m. tomorrow.", "Come."]),
        ("first line without a stop\nsecond line", ["first line without a stop", "second line"]),
        ("- one point\n- another point.", ["one point", "another point."]),
        ("   ", []),
        ("... ?! ", []),
        ("no final stop", ["no final stop"]),
        ("(It is cheap.) It is fair.", ["(It is cheap.)", "It is fair."]),
    ],
)
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


WORDS = ["buses", "run", "late", "cities", "pay", "fares", "rise", "people", "travel", "often", "money"]
INNER = ["e.g.", "Dr.", "3.5", "U.K.", "i.e.", "vs.", "Mr.", "2.75", "cf.", "a.m."]
FIRST = ["Buses", "Cities", "People", "The", "It", "Fares", '"Money', "(Travel"]
ENDS = [".", "!", "?", "?!", ".)", '."', "...", "?'"]


@st.composite
def sentence(draw) -> str:
    words = [draw(st.sampled_from(FIRST))]
    for _ in range(draw(st.integers(0, 6))):
        words.append(draw(st.sampled_from(WORDS + INNER)))
    words.append(draw(st.sampled_from(WORDS)) + draw(st.sampled_from(ENDS)))
    return " ".join(words)


@given(st.lists(sentence(), min_size=1, max_size=6), st.sampled_from([" ", "  ", " \t"]))
def test_well_formed_sentences_come_back_as_written(sentences, space):
    assert split_sentences(space.join(sentences)) == sentences


PIECES = [*"abcXY .!?\"'()\n3-", "U.K. ", "e.g. ", "Dr. ", " 2.5 ", "\u201c", "\u2019", "...", "1. "]


@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_splitting_loses_no_words_and_makes_no_empty_sentence(text):
    sentences = split_sentences(text)
    assert all(s == s.strip() and any(c.isalnum() for c in s) for s in sentences)
    assert all(s in text for s in sentences)
    unmarked = "\n".join(language.LIST_MARKER.sub("", line) for line in text.splitlines())
    alnum = [c for c in unmarked if c.isalnum()]  # list markers ("1. ", "- ") are dropped
    assert [c for s in sentences for c in s if c.isalnum()] == alnum
    assert split_sentences(text) == sentences


def test_at_most_max_sentences_are_read(offline_reading):
    game = Game(PRO, CON, max_sentences=2)
    reading = offline_reading(game, "pro", "Buses help. Trams help. Bikes help.")
    assert [s.text for s in reading.sentences] == ["Buses help.", "Trams help."]


# --- JSON answers ----------------------------------------------------------------------------


def entry(move: str, target, proposition: str, premises=(), sentence: str = "s") -> dict:
    return {
        "sentence": sentence,
        "move": move,
        "target": target,
        "proposition": proposition,
        "premises": list(premises),
    }


def classification(*entries: dict) -> str:
    return json.dumps({"sentences": list(entries)})


@pytest.mark.parametrize(
    "text",
    [
        classification(entry("why", 1, CON)),
        "```json\n" + classification(entry("why", 1, CON)) + "\n```",
        "Here is the JSON: " + classification(entry("why", None, CON)) + " Hope it helps.",
    ],
)
def test_a_fitting_answer_is_read_even_with_a_fence_or_words_around(text):
    data, problem = language.parse_answer(text, prompts.classify_schema(1))
    assert problem == "" and data["sentences"][0]["move"] == "why"


@pytest.mark.parametrize(
    "text, complaint",
    [
        ("I think it is a claim.", "not JSON"),
        ('{"sentences": [', "not JSON"),
        ("[]", "schema"),
        (classification(entry("assert", 1, "p")), "'assert' is not one of"),
        (classification(entry("why", "one", "p")), "target"),
        (classification(entry("claim", 1, "p"), entry("claim", 1, "q")), "sentences"),
        (json.dumps({"sentences": [{"move": "claim", "target": 1, "proposition": "p"}]}), "required"),
        (classification(entry("since", 1, "p", premises=[3])), "premises"),
    ],
)
def test_an_answer_that_is_not_json_or_does_not_fit_its_schema_is_refused_with_a_reason(text, complaint):
    data, problem = language.parse_answer(text, prompts.classify_schema(1))
    assert data is None and complaint in problem


@pytest.mark.parametrize(
    "schema, good, bad",
    [
        (prompts.CONCEDE_SCHEMA, {"concede": False}, {"concede": "no"}),
        (prompts.RETRACT_SCHEMA, {"retract": True}, {"retracted": True}),
        (
            prompts.REDUNDANCY_SCHEMA,
            {"duplicates": [{"candidate": 1, "commitment": 2}]},
            {"duplicates": [{"candidate": 0, "commitment": 1}]},
        ),
    ],
)
def test_the_update_schemas(schema, good, bad):
    assert language.schema_problem(good, schema) is None
    assert language.schema_problem(bad, schema)


# --- Reading a turn through the openai client and the fake server ---------------------------


@pytest.fixture(scope="module")
def server():
    with fakellm.run_in_thread() as running:
        yield running


class Script:
    """The fake server's answers: classification and update requests each get the next text of
    their list (None: the usual words); every request body is kept."""

    def __init__(self, classify=(), update=()):
        self.classify = iter(classify)
        self.update = iter(update)
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> str | None:
        self.bodies.append(body)
        system = body["messages"][0]["content"]
        answers = self.classify if system == prompts.CLASSIFY_SYSTEM else self.update
        return next(answers, None)


@pytest.fixture
def openai_backend(settings, server):
    settings.LLM_BACKEND = "openai"
    settings.OPENAI_BASE_URL = server.base_url
    settings.OPENAI_API_KEY = "test-key"
    settings.LLM_BACKOFF_S = 0.01
    settings.LLM_MAX_RETRIES = 1
    settings.LLM_TIMEOUT_S = 5
    yield server
    server.app.responder = None


@pytest.fixture
def script(openai_backend):
    def answer(classify=(), update=()) -> Script:
        openai_backend.app.responder = Script(classify, update)
        return openai_backend.app.responder

    return answer


def model(options: str = "") -> str:
    return f"fake-{secrets.token_hex(4)}{options}"


def read(game: Game, speaker: str, text: str, name: str | None = None) -> language.Reading:
    return async_to_sync(language.read_turn)(game, speaker, text, model=name or model(), topic=TOPIC)


TWO = "Why do you think free transport wastes money? Buses are already paid for by taxes."
VALID = classification(
    entry("why", 1, CON, sentence="Why do you think free transport wastes money?"),
    entry("claim", 1, "Buses are already paid for by taxes."),
)


def test_a_valid_classification_is_one_call_at_temperature_0_and_seed_123(script):
    answers = script(classify=[VALID])
    reading = read(Game(PRO, CON), "pro", TWO)
    assert [(s.kind, s.target, s.proposition, s.legal, s.fallback) for s in reading.sentences] == [
        (Kind.WHY, 1, CON, True, False),
        (Kind.CLAIM, 1, "Buses are already paid for by taxes.", True, False),
    ]
    assert reading.moves == [
        Move("pro", Kind.WHY, CON, 1),
        Move("pro", Kind.CLAIM, "Buses are already paid for by taxes.", 1),
    ]
    [call] = reading.calls
    assert (call.role, call.error, call.result.backend, call.result.text) == (
        "classify",
        None,
        "openai",
        VALID,
    )
    [body] = answers.bodies
    assert (body["temperature"], body["seed"]) == (0, 123)
    user = body["messages"][1]["content"]
    assert f'<claim n="1" speaker="con" replies-to="0" initial-claim="true">{CON}</claim>' in user
    assert '<sentence i="2">Buses are already paid for by taxes.</sentence>' in user


def test_an_invalid_answer_is_asked_for_again_with_what_was_wrong(script):
    answers = script(classify=["Sure! The first sentence is a why.", VALID])
    reading = read(Game(PRO, CON), "pro", TWO)
    assert [s.kind for s in reading.sentences] == [Kind.WHY, Kind.CLAIM]
    assert not reading.fallback
    first, second = reading.calls
    assert first.result.text == "Sure! The first sentence is a why."
    assert first.error.kind == "invalid_answer" and "not JSON" in first.error.message
    assert second.error is None and second.result.text == VALID
    retry = answers.bodies[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "Sure! The first sentence is a why."}
    assert retry[-1]["role"] == "user" and "not JSON" in retry[-1]["content"]


def test_garbage_twice_falls_back_to_claims_of_the_sentences_and_says_so(script):
    script(classify=["<html>oops", classification(entry("claim", 1, "only one"))])
    reading = read(Game(PRO, CON), "pro", TWO)
    assert [c.error.kind for c in reading.calls] == ["invalid_answer", "invalid_answer"]
    assert "sentences" in reading.calls[1].error.message  # one entry for two sentences
    assert reading.fallback
    assert [(s.kind, s.target, s.proposition, s.legal, s.fallback) for s in reading.sentences] == [
        (Kind.CLAIM, 1, "Why do you think free transport wastes money?", True, True),
        (Kind.CLAIM, 1, "Buses are already paid for by taxes.", True, True),
    ]
    assert len(reading.moves) == 2


def test_the_fallback_is_no_move_where_a_claim_cannot_reply(script):
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    game.play("con", [Move("con", Kind.SINCE, CON, 2, ("Budgets are tight.",))])
    script(classify=["nope", "still nope"])
    reading = read(game, "pro", "Hmm.")
    [sentence] = reading.sentences
    assert (sentence.kind, sentence.legal, sentence.fallback) == (None, False, True)
    assert sentence.reason == language.UNREADABLE and reading.moves == []


def test_a_model_that_does_not_answer_in_time_gives_the_fallback(script, settings):
    settings.LLM_TIMEOUT_S = 0.3
    settings.LLM_MAX_RETRIES = 0
    script()
    reading = read(Game(PRO, CON), "pro", TWO, name=model(":timeout=5"))
    [call] = reading.calls
    assert call.result is None and call.error.kind == "timeout"
    assert all(s.fallback and s.kind == Kind.CLAIM for s in reading.sentences)


def test_a_failing_model_gives_the_fallback_after_the_adapters_retries(script, settings):
    script()
    reading = read(Game(PRO, CON), "pro", "Buses help.", name=model(":fail=503:times=5"))
    [call] = reading.calls
    assert call.error.kind == "http_503" and call.error.attempts == settings.LLM_MAX_RETRIES + 1
    assert reading.sentences[0].fallback


def test_a_target_that_cannot_take_the_move_is_fitted_to_one_that_can(script):
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    script(classify=[classification(entry("since", 0, "whatever", ["Budgets are tight."]))])
    reading = read(game, "con", "It wastes money because budgets are tight.")
    assert reading.moves == [Move("con", Kind.SINCE, CON, 2, ("Budgets are tight.",))]


def test_a_concession_the_check_denies_does_not_end_the_dialogue(script):
    script(classify=[classification(entry("concede", 1, CON))], update=['{"concede": false}'])
    reading = read(Game(PRO, CON), "pro", "I see your point about money.")
    [sentence] = reading.sentences
    assert (sentence.kind, sentence.legal, sentence.fallback) == (Kind.CONCEDE, False, False)
    assert reading.moves == [] and [c.role for c in reading.calls] == ["classify", "concede_check"]


def test_a_concession_the_check_confirms_concedes_the_initial_claim(script):
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    game.play("con", [Move("con", Kind.SINCE, CON, 2, ("Budgets are tight.",))])
    script(classify=[classification(entry("concede", 3, "Budgets are tight."))], update=['{"concede": true}'])
    reading = read(game, "pro", "Fine, you are right: it wastes money.")
    assert reading.moves == [Move("pro", Kind.CONCEDE, CON, 1)]
    game.play("pro", reading.moves)
    assert (game.outcome.winner, game.outcome.reason) == ("con", "conceded")


def test_a_concede_check_that_keeps_failing_plays_it_safe(script):
    game = Game(PRO, CON)
    script(classify=[classification(entry("concede", 1, CON))], update=["yes", "yes!"])
    reading = read(game, "pro", "I concede.")
    [sentence] = reading.sentences
    assert sentence.fallback and not sentence.legal and reading.moves == []
    assert [c.role for c in reading.calls] == ["classify", "concede_check", "concede_check"]


def test_a_retraction_of_the_initial_claim_is_checked(script):
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    script(classify=[classification(entry("retract", 2, CON))], update=['{"retract": true}'])
    reading = read(game, "con", "I take it back.")
    assert reading.moves == [Move("con", Kind.RETRACT, CON, 2)]


def test_a_claim_that_repeats_a_commitment_takes_the_stores_wording(script):
    game = Game(PRO, CON)
    claim = "Free public transport makes our cities better to live in."
    answers = script(
        classify=[classification(entry("claim", 1, claim))],
        update=['{"duplicates": [{"candidate": 1, "commitment": 1}]}'],
    )
    reading = read(game, "pro", claim)
    assert reading.moves == [Move("pro", Kind.CLAIM, PRO, 1)]
    assert [c.role for c in reading.calls] == ["classify", "redundancy"]
    assert f"1. {PRO}" in answers.bodies[1]["messages"][1]["content"]


def test_sentences_of_one_turn_meet_the_game_as_the_earlier_ones_leave_it(script):
    game = Game(PRO, CON)
    script(
        classify=[classification(entry("why", 1, CON), entry("why", 1, CON))],
    )
    reading = read(game, "pro", "Why is that? Why, really?")
    assert [s.legal for s in reading.sentences] == [True, False]
    assert reading.sentences[1].reason == "You have already made that reply."
    assert len(reading.moves) == 1


def test_the_fake_server_streams_a_chosen_reply(openai_backend):
    openai_backend.app.responder = lambda body: (
        "Buses  are full. Trains are late." if body["stream"] else None
    )
    pieces: list[str] = []

    async def on_text(piece: str) -> None:
        pieces.append(piece)

    request = llm.LLMRequest(model=model(":tps=1000"), messages=[{"role": "user", "content": "hi"}])
    result = async_to_sync(llm.stream)(request, on_text)
    assert result.text == "Buses  are full. Trains are late."
    assert pieces == ["Buses  ", "are ", "full. ", "Trains ", "are ", "late."]
    assert result.tokens_out == 6


# --- The base agent and its fallback ---------------------------------------------------------


def test_the_agent_request_carries_the_agents_settings_and_the_offline_hint():
    agent = language.AgentView(
        name="a", model="gpt-x", temperature=0.4, max_tokens=222, seed=7, offline_concede_after=3
    )
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    request = language.agent_request(game, "con", agent, TOPIC)
    assert (request.model, request.temperature, request.max_tokens, request.seed) == ("gpt-x", 0.4, 222, 7)
    hint = request.hint
    assert hint["task"] == "persuasion_agent" and hint["concede_after"] == 3 and hint["own_turns"] == 0
    assert hint["opponent_claim"] == {"n": 0, "text": PRO} and hint["own_claim"] == {"n": 1, "text": CON}
    assert [t["n"] for t in hint["targets"]] == [0, 2]
    assert hint["targets"][1] == {
        "n": 2,
        "kind": "why",
        "points": [CON],
        "replies": ["since", "claim", "retract"],
    }


def test_own_turns_count_each_sides_turns():
    game = Game(PRO, CON, first="con")
    assert (language.own_turns(game, "con"), language.own_turns(game, "pro")) == (0, 0)
    game.play("con", [])
    assert (language.own_turns(game, "con"), language.own_turns(game, "pro")) == (1, 0)
    game.play("pro", [])
    game.play("con", [])
    assert (language.own_turns(game, "con"), language.own_turns(game, "pro")) == (2, 1)


def test_the_fallback_move_asks_why_about_the_latest_open_point():
    game = Game(PRO, CON)
    text, moves = language.fallback_move(game, "pro")
    assert text == "Why do you hold that free public transport wastes money that cities need elsewhere?"
    assert moves == [Move("pro", Kind.WHY, CON, 1)]
    game.play("pro", moves)
    game.play("con", [Move("con", Kind.SINCE, CON, 2, ("Budgets are tight.",))])
    text, moves = language.fallback_move(game, "pro")
    assert moves == [Move("pro", Kind.WHY, "Budgets are tight.", 3)]
    assert split_sentences(text) == [text]


def test_the_fallback_move_defends_the_initial_claim_when_no_why_is_possible():
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1), Move("pro", Kind.QUESTION, CON, 1)])
    text, moves = language.fallback_move(game, "con")
    assert moves[0].kind == Kind.WHY and moves[0].target == 0  # con can still ask about pro's claim
    game.play("con", [Move("con", Kind.WHY, PRO, 0), Move("con", Kind.QUESTION, PRO, 0)])
    game.play("pro", [])
    text, moves = language.fallback_move(game, "con")
    assert moves == [Move("con", Kind.CLAIM, CON, 3)]  # the latest: the question
    assert text == "I maintain that free public transport wastes money that cities need elsewhere."


@pytest.fixture
def offline_reading(settings):
    from debates.persuasion import offline

    settings.LLM_BACKEND = "offline"
    offline.register()
    return lambda game, speaker, text: async_to_sync(language.read_turn)(
        game, speaker, text, model="offline", topic=TOPIC
    )
