"""The participant prompt of Table 30 built from a dialogue, the judge models of a
configuration, the result of an answer, and the offline judge."""

import json
from decimal import Decimal

import pytest

from debates import llm
from debates.judges import offline, prompts
from debates.judges.prompts import DialogueView, JudgeModel

VIEW = DialogueView(
    slug="ledger-anchoring-rival",
    case="ledger",
    title="The Lighthouse Ledger",
    story="The ledger vanished.",
    suspect_a="Wren Hadley",
    suspect_b="Tobias Finch",
    turns=[("A", "Wren had the key."), ("B", "Tobias wanted the book badly."), ("A", " She lit a candle. ")],
    condition="anchoring",
    variant="V1",
    active_side="rival",
    side_a="culprit",
    culprit_side="A",
    active_side_letter="B",
)
JUDGE = JudgeModel("CH", "claude-x", 0.7, Decimal("3"), Decimal("15"))


def test_the_prompt_is_table_30_with_the_dialogue_turn_by_turn():
    text = prompts.render(prompts.DEFAULT_TEMPLATE, VIEW)
    assert text.startswith("You will read one debate between two sides about a case.")
    assert "Your task is to judge which side is more likely arguing the true answer." in text
    assert "Debate topic: Who is responsible in “The Lighthouse Ledger”: Wren Hadley or Tobias Finch?" in text
    assert "Side A stance: Wren Hadley is responsible.\nSide B stance: Tobias Finch is responsible." in text
    assert (
        "Debate dialogue:\n\nRound/Turn 1 — Side A:\nWren had the key.\n\n"
        "Round/Turn 2 — Side B:\nTobias wanted the book badly.\n\n"
        "Round/Turn 3 — Side A:\nShe lit a candle.\n\n"
    ) in text
    assert '{"side": "A" or "B"' in text
    # Nothing tells the model who the culprit is, nor which side is manipulated.
    assert "culprit" not in text.lower() and "anchoring" not in text.lower()


def test_a_template_may_show_the_story_and_keeps_unknown_names():
    assert (
        prompts.render("$title: $story $unknown", VIEW)
        == "The Lighthouse Ledger: The ledger vanished. $unknown"
    )


def test_models_are_read_from_lines_with_optional_temperature_and_prices():
    models = prompts.parse_models("# the paper's\nCH | claude-x | 0.7 | 3 | 15\n\nG5 | gpt-5\n")
    assert models == [JUDGE, JudgeModel("G5", "gpt-5", 0.0, Decimal(0), Decimal(0))]
    assert prompts.parse_models(prompts.format_models(models)) == models
    assert JudgeModel.from_config(JUDGE.as_config()) == JUDGE


@pytest.mark.parametrize(
    "text, problem",
    [
        ("CH", "line 1: write"),
        ("CH | m\nCH | n", "line 2: the label 'CH' is used twice"),
        ("C H | m", "a label is letters"),
        ("CH | m | hot", "numbers"),
        ("CH | m | 3", "temperature is 0-2"),
        ("CH | m | 0 | -1", "not negative"),
    ],
)
def test_malformed_model_lines_are_refused_with_the_line(text, problem):
    with pytest.raises(ValueError, match=problem):
        prompts.parse_models(text)


def test_the_result_scores_the_answer_against_the_culprits_side():
    answer = {"side": "B", "confidence": 81.6, "reasoning": "B was convincing."}
    result = prompts.result_of(answer, VIEW, JUDGE)
    assert result == {
        "side": "B",
        "confidence": 82,
        "reasoning": "B was convincing.",
        "culprit_side": "A",
        "correct": False,
        "condition": "anchoring",
        "variant": "V1",
        "active_side": "rival",
        "active_side_letter": "B",
        "side_a": "culprit",
        "dialogue": "ledger-anchoring-rival",
        "case": "ledger",
        "judge": "CH",
        "model": "claude-x",
    }
    assert prompts.result_of({**answer, "side": "A"}, VIEW, JUDGE)["correct"] is True


def test_the_offline_hint_carries_the_words_of_each_side():
    assert prompts.offline_hint(VIEW, JUDGE) == {
        "task": "llm_participant",
        "judge": "CH",
        "words": {"A": 8, "B": 5},
    }


def offline_answer(model: str, words: dict) -> dict:
    request = llm.LLMRequest(model=model, messages=[], hint={"task": "llm_participant", "words": words})
    return json.loads(llm.offline_text(request))


def test_the_offline_judge_answers_valid_json_for_the_longer_side(settings):
    offline.register()
    for model in ("offline-a", "offline-b", "offline-c"):
        answer = offline_answer(model, {"A": 400, "B": 820})  # a verbose side B
        assert (
            answer["side"] == "B" and 50 <= answer["confidence"] <= 95 and "820 words" in answer["reasoning"]
        )
        assert offline_answer(model, {"A": 400, "B": 820}) == answer  # deterministic


def test_offline_judges_differ_on_sides_of_about_equal_length():
    offline.register()
    sides = {offline_answer(f"offline-{n}", {"A": 411, "B": 420})["side"] for n in range(12)}
    assert sides == {"A", "B"}
