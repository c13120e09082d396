"""Design C's prompts: what the classifier, the update checks and the base agent are shown."""

import pytest

from debates.persuasion import language, prompts
from debates.persuasion.protocol import Game, Kind, Move

PRO = "Free public transport makes cities better places to live."
CON = "Free public transport wastes money that cities need elsewhere."
TOPIC = language.TopicView(
    text="Cities should make public transport free.",
    pro_claim=PRO,
    con_claim=CON,
    background="Fares cover 30%.",
)


def played() -> Game:
    """pro asks why; con argues; pro passes; con's turn next."""
    game = Game(PRO, CON)
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    game.play("con", [Move("con", Kind.SINCE, CON, 2, ("Budgets are tight.", "Roads need repair."))])
    game.play("pro", [])
    return game


def test_the_classification_system_prompt_defines_the_moves_the_rules_and_the_answer():
    system = prompts.CLASSIFY_SYSTEM
    for kind in Kind:
        assert f"- {kind}:" in system
    for number in range(1, 10):
        assert f"\n{number}. " in system
    assert "since only if the other speaker has challenged" in system
    assert "to a why p: p since reasons" in system
    assert '{"sentences": [{"sentence": ' in system and "JSON only" in system


def test_before_two_turns_the_classifier_sees_the_initial_claims_and_the_open_moves():
    game = Game(PRO, CON)
    system, user = prompts.classify_messages(game, "pro", ["Why?", "Buses help."], TOPIC)
    assert system == {"role": "system", "content": prompts.CLASSIFY_SYSTEM}
    text = user["content"]
    assert text.startswith(f"Topic: {TOPIC.text}\nPRO's initial claim: {PRO}\nCON's initial claim: {CON}")
    assert (
        f'<turn speaker="pro" initial="true">\n<claim n="0" speaker="pro" initial-claim="true">{PRO}</claim>'
        in text
    )
    assert (
        f'<claim n="1" speaker="con" replies-to="0" initial-claim="true" '
        f'may-reply="why, claim, concede, question">{CON}</claim>' in text
    )
    assert '<sentence i="1">Why?</sentence>\n<sentence i="2">Buses help.</sentence>' in text
    assert "Current turn, by PRO (2 sentences):" in text


def test_the_classifier_sees_the_previous_two_turns_in_order_with_their_tags():
    game = played()
    [_, user] = prompts.classify_messages(game, "con", ["They do."], TOPIC)
    text = user["content"]
    turns = text.split("<previous-turns>\n")[1].split("</previous-turns>")[0]
    assert turns == (
        '<turn speaker="con">\n'
        f'<since n="3" speaker="con" replies-to="2">{CON}'
        "<premise>Budgets are tight.</premise><premise>Roads need repair.</premise></since>\n"
        "</turn>\n"
        '<turn speaker="pro">\n(no move)\n</turn>\n'
    )
    assert 'initial="true"' not in text  # two turns were played
    assert '<why n="2" speaker="pro" replies-to="1" may-reply="since, claim, retract">' in text


def test_the_classification_schema_asks_for_one_entry_per_sentence():
    schema = prompts.classify_schema(3)
    items = schema["properties"]["sentences"]
    assert (items["minItems"], items["maxItems"]) == (3, 3)
    assert items["items"]["properties"]["move"] == {"enum": [k.value for k in Kind]}


def test_the_update_prompts_number_the_store_and_the_candidates():
    system, user = prompts.redundancy_messages("pro", [PRO, "Buses are full."], ["Buses are packed."])
    assert system["content"] == prompts.UPDATE_SYSTEM
    assert (
        f"1. {PRO}\n2. Buses are full.\nPropositions PRO now asserts (candidates):\n1. Buses are packed."
        in (user["content"])
    )
    assert '{"duplicates": []}' in user["content"]


@pytest.mark.parametrize(
    "build, key",
    [(prompts.concede_messages, "concede"), (prompts.retract_messages, "retract")],
)
def test_the_initial_claim_checks_show_the_claim_the_sentence_and_the_answer_form(build, key):
    _, user = build("pro", "Taxes are high.", "Fine, taxes are high.", "Hm. Fine, taxes are high.")
    text = user["content"]
    assert "initial claim: Taxes are high." in text
    assert "The sentence to judge: Fine, taxes are high." in text
    assert "whole turn: Hm. Fine, taxes are high." in text
    assert f'{{"{key}": true}} or {{"{key}": false}}' in text


def agent(**fields) -> language.AgentView:
    return language.AgentView(name="a", model="m", **fields)


def test_the_agent_prompt_has_its_stance_the_claims_the_stores_the_history_and_the_open_replies():
    game = played()
    system, user = prompts.agent_messages(game, "pro", agent(persona="You are a city planner."), TOPIC)
    text = system["content"]
    assert text.startswith(
        f"You are taking part in a formal persuasion dialogue (Prakken 2006) about this topic: {TOPIC.text}"
    )
    assert (
        f'You argue for the topic. Your initial claim: "{PRO}". Your opponent\'s initial claim: "{CON}".'
        in text
    )
    assert "You are a city planner." in text and "Background on the topic: Fares cover 30%." in text
    assert "hypothetical" in text and "You win if your opponent concedes your initial claim" in text
    assert (
        f"Your commitments:\n- {PRO}\n\nYour opponent's commitments:\n- {CON}\n- Budgets are tight.\n" in text
    )
    assert f"[0] You, claim (initial claim): {PRO}" in text
    assert "[2] You, why (reply to 1): Why do you hold that free public transport wastes money" in text
    assert (
        "[3] Opponent, since (reply to 2): Free public transport wastes money that cities need elsewhere, "
        "because budgets are tight; roads need repair." in text
    )
    assert "[3] Free public transport" in text and "-> you may reply with: why, concede, question" in text
    assert "Write 1 to 5 sentences of plain text" in text and "No JSON" in text
    assert user["role"] == "user" and user["content"].startswith(
        "Your opponent made no move in their last turn."
    )


def test_the_agent_reads_its_opponents_last_turn_or_initial_claim():
    game = Game(PRO, CON)
    [_, user] = prompts.agent_messages(game, "pro", agent(), TOPIC)
    assert user["content"].startswith(f"Your opponent's initial claim: {CON}")
    game.play("pro", [Move("pro", Kind.WHY, CON, 1)])
    [_, user] = prompts.agent_messages(game, "con", agent(), TOPIC)
    assert user["content"].startswith(
        "Your opponent's last turn: Why do you hold that free public transport wastes money that cities need "
        "elsewhere?"
    )


@pytest.mark.parametrize(
    "template, expected",
    [
        (
            "Argue {stance} on {topic}; {unknown} stays.",
            "Argue against the topic on Cities should make public transport free.; {unknown} stays.",
        ),
        ("A stray { brace {topic}", "A stray { brace {topic}"),
        ("", f'You argue against the topic. Your initial claim: "{CON}"'),
        ("Up to {max_sentences} sentences, at least {min_sentences}.", "Up to 5 sentences, at least 1."),
    ],
)
def test_the_agents_own_template_is_filled_and_never_breaks_the_turn(template, expected):
    [system, _] = prompts.agent_messages(Game(PRO, CON), "con", agent(prompt_template=template), TOPIC)
    assert expected in system["content"]


@pytest.mark.parametrize(
    "move, words",
    [
        (Move("pro", Kind.CLAIM, "Buses are full.", 1), "Buses are full."),
        (Move("pro", Kind.WHY, "The U.K. pays.", 1), "Why do you hold that the U.K. pays?"),
        (Move("pro", Kind.QUESTION, "I am wrong.", 1), "What is your view on whether I am wrong?"),
        (Move("pro", Kind.CONCEDE, "UK fares are high!", 1), "I concede that UK fares are high."),
        (Move("pro", Kind.RETRACT, "Taxes rise.", 1), "I withdraw that taxes rise."),
        (Move("pro", Kind.SINCE, "taxes rise", 1, ("costs grow.",)), "Taxes rise, because costs grow."),
    ],
)
def test_moves_in_plain_words(move, words):
    assert prompts.said(move) == words
