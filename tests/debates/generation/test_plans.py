"""Design A's inventory, content plans and prompt checks (pure: no database, no model)."""

from debates.generation import plans, prompts, specs
from debates.generation.plans import CaseView, Setup

CASE = CaseView(
    slug="c",
    title="The Case",
    story="A story.",
    suspects=["Ann Lee", "Bob Roy", "Cy Fox"],
    culprit="Ann Lee",
    rival="Bob Roy",
    evidence={n: f"fact {n}" for n in range(1, 9)},
)


def reason(*units: int) -> dict:
    return {"evidence": list(units), "interpretations": [f"first about {units}", f"second about {units}"]}


REASONS = {
    role: {
        "incriminating": {"primary": reason(1, 2), "additional": reason(3, 4)},
        "exculpatory": {"primary": reason(5, 6), "additional": reason(7, 8)},
    }
    for role in ("culprit", "rival")
}


def setup(number: int, side_a: str = "culprit", fallacy: str = "") -> Setup:
    return Setup(CASE, side_a, specs.condition_numbered(number), fallacy)


def test_the_inventory_has_table_2s_seventeen_conditions_in_its_order():
    rows = specs.inventory()
    assert len(rows) == 17
    assert rows[0].label == "Baseline vs. Baseline" and rows[0].active_letter == ""
    assert [r.label for r in rows[1:5]] == [
        "Anchoring, Active vs. Baseline, V1",
        "Anchoring, Active vs. Baseline, V2",
        "Anchoring, Baseline vs. Active, V1",
        "Anchoring, Baseline vs. Active, V2",
    ]
    assert [r.bias for r in rows[1::4]] == ["anchoring", "fallacy_oversight", "pro_jargon", "verbosity"]
    assert {(r.bias, r.active_letter, r.variant) for r in rows[1:]} == {
        (b, letter, v) for b in specs.BIASES for letter in "AB" for v in ("V1", "V2")
    }


def test_the_active_side_is_the_culprits_or_the_rivals_by_who_speaks_first():
    assert setup(2, "culprit").active_role == "culprit"  # active on A, A accuses the culprit
    assert setup(4, "culprit").active_role == "rival"
    assert setup(2, "rival").active_role == "rival"
    assert setup(1).active_role == "none"


def test_balanced_side_a_and_fallacy_draws_are_fixed_by_the_seed():
    cases = [f"case-{n}" for n in range(40)]
    draws = [specs.side_a_role(c, "balanced", 7) for c in cases]
    assert draws == [specs.side_a_role(c, "balanced", 7) for c in cases]
    assert 10 < draws.count("culprit") < 30
    assert specs.side_a_role("x", "rival", 7) == "rival"
    picked = specs.fallacies_for("case-1", [], 3)
    assert picked["V1"] != picked["V2"] and set(picked.values()) <= set(specs.FALLACIES)
    assert set(specs.fallacies_for("case-1", ["straw_man", "post_hoc"], 3).values()) == {
        "straw_man",
        "post_hoc",
    }


def test_a_baseline_plan_treats_both_sides_alike():
    turns = plans.plan(setup(1), REASONS)
    assert [t.speaker for t in turns] == list("ABABAB")
    assert [t.phase for t in turns] == ["opening"] * 2 + ["rebuttal"] * 2 + ["summary"] * 2
    assert all(t.bias == "" for t in turns)
    assert turns[0].accused == "Ann Lee" and turns[1].accused == "Bob Roy"
    assert turns[0].evidence == [1, 2, 5, 6]  # own incriminating + the other suspect's exculpatory
    assert [len(t.instructions) for t in turns[::2]] == [len(t.instructions) for t in turns[1::2]]
    assert all(t.words == 170 for t in turns)


def test_verbosity_adds_a_second_reason_and_length_to_the_active_side_only():
    turns = plans.plan(setup(16), REASONS)  # verbosity, Baseline vs. Active: side B
    active = [t for t in turns if t.speaker == "B"]
    plain = [t for t in turns if t.speaker == "A"]
    assert all(t.words > 170 for t in active) and all(t.words == 170 for t in plain)
    assert 3 in active[0].evidence and 4 in active[0].evidence  # the additional incriminating reason
    assert 7 in active[1].evidence  # the additional exculpatory reason, in the rebuttal
    assert not any(3 in t.evidence for t in plain)


def test_anchoring_changes_the_opening_cue_and_anchors_the_later_turns_of_the_active_side():
    turns = plans.plan(setup(2), REASONS)  # anchoring on A
    assert "starting-point cue" in turns[0].instructions[1]
    assert "starting-point cue" not in turns[1].instructions[1]
    assert turns[0].bias == ""  # the specification: not in turns 1-2
    assert [t.bias for t in turns] == ["", "", "anchoring", "", "anchoring", ""]
    assert any("reference point" in line for line in turns[2].instructions)
    assert not any("reference point" in line for line in turns[3].instructions)


def test_fallacy_oversight_uses_the_drawn_sub_type_in_the_later_turns():
    turns = plans.plan(setup(8, fallacy="straw_man"), REASONS)  # on B
    assert [t.bias for t in turns] == ["", "", "", "straw_man", "", "straw_man"]
    block = prompts.bias_block(turns[3])
    assert "Straw man" in block and "never name it" in block
    assert prompts.bias_block(turns[2]) == ""


def test_the_rollout_prompt_shows_the_plan_the_evidence_and_the_debate_so_far():
    s = setup(10)  # pro-jargon on A
    turn = plans.plan(s, REASONS)[2]
    text = prompts.rollout_prompt(
        prompts.ROLLOUT_TEMPLATE, s, turn, [("A", "first turn"), ("B", "second turn")]
    )
    assert "You are speaker A." in text and "Current turn id: 3 of 6 (rebuttal)" in text
    assert "[E5] fact 5" in text and "Turn 2 — Side B:\nsecond turn" in text
    assert "Pro-jargon" in text and "$" not in text


def test_a_reason_selection_must_cite_real_evidence_in_two_different_clusters():
    good = {"primary": reason(1, 2), "additional": reason(3)}
    assert prompts.reasons_problem(good, CASE) is None
    assert "do not exist" in prompts.reasons_problem({**good, "additional": reason(99)}, CASE)
    assert "subset" in prompts.reasons_problem({**good, "additional": reason(2)}, CASE)
    assert "repeats" in prompts.reasons_problem({**good, "primary": reason(1, 1)}, CASE)


def test_the_quality_total_is_the_sum_of_six_dimensions_of_five_points():
    answer = {"scores": dict.fromkeys(prompts.DIMENSIONS, 5)}
    assert prompts.quality_total(answer) == 30
    answer["scores"]["conduct"] = 2
    assert prompts.quality_total(answer) == 27 == prompts.PASS_MARK


def test_a_shorter_protocol_keeps_openings_and_summaries_and_anchors_from_turn_three():
    s = Setup(CASE, "culprit", specs.condition_numbered(2), turns=4)
    turns = plans.plan(s, REASONS)
    assert [t.phase for t in turns] == ["opening", "opening", "summary", "summary"]
    assert [t.bias for t in turns] == ["", "", "anchoring", ""]
    text = prompts.rollout_prompt(prompts.ROLLOUT_TEMPLATE, s, turns[2], [("A", "x"), ("B", "y")])
    assert "Current turn id: 3 of 4 (summary)" in text
