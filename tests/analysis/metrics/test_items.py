"""The study's own items in the report, counted by hand: the researcher's questionnaire items did
not appear in the report at all (the researcher walk)."""

import pandas as pd
import pytest

from analysis.metrics import items, report
from analysis.metrics.frames import typed

LIKERT = ["Not at all", "A little", "Somewhat", "A lot", "Completely"]


def response(pid, key, value, value_num="", step_kind="questionnaire", position=3, is_check="0", passed=""):
    return {
        "study": "s1",
        "participant_id": str(pid),
        "prolific_pid": f"p{pid}",
        "position": str(position),
        "step_kind": step_kind,
        "key": key,
        "value": value,
        "value_num": str(value_num),
        "is_check": is_check,
        "passed": passed,
        "created_at": f"2026-12-05T10:00:{pid:02d}Z",
    }


@pytest.fixture
def frames():
    rows = []
    trust = {1: 3, 2: 4, 3: 4, 4: 1}
    ages = {1: 18, 2: 30, 3: 45, 4: 70}
    colours = {1: "Red", 2: "Blue", 3: "Red", 4: "Red"}
    for pid in (1, 2, 3, 4, 5):  # 5 is not analysed: counted nowhere
        rows.append(response(pid, "trust", LIKERT[trust.get(pid, 5) - 1], trust.get(pid, 5), position=4))
        rows.append(response(pid, "age", str(ages.get(pid, 99)), ages.get(pid, 99), position=5))
        rows.append(response(pid, "colour", colours.get(pid, "Blue"), position=5))
        rows.append(response(pid, "attn", "Disagree", 1, "attention_check", 2, "1", "1" if pid != 2 else "0"))
        rows.append(response(pid, "judgement_side", "A", step_kind="judgement", position=6))
    rows.append(response(1, "why", "because <b>I</b> said so", position=5))
    rows.append(response(2, "why", "no idea", position=5))
    rows.append(response(1, "colour_specify", "teal", position=5))
    rows.append(response(3, "trust", "", position=4))  # a blank: not an answer
    responses = typed("responses", pd.DataFrame(rows))
    analysed = typed(
        "judgements",
        pd.DataFrame([{"study": "s1", "participant_id": str(pid), "correct": "1"} for pid in (1, 2, 3, 4)]),
    )
    return responses, analysed


def by_key(summary):
    return {i["key"]: i for i in summary}


def test_each_kind_is_summarised_over_the_analysed_participants(frames):
    responses, analysed = frames
    kinds = {"trust": "likert", "age": "number", "colour": "single_choice", "why": "text", "attn": "likert"}
    order = ["attn", "trust", "colour", "why", "age"]
    summary = items.summarise(responses, analysed, kinds, order)
    assert [i["key"] for i in summary] == order  # the pages' order; design and _specify rows left out
    got = by_key(summary)
    assert {k: (i["answered"], i["participants"]) for k, i in got.items()} == {
        "attn": (5, 5),  # a check: everyone who answered it (participant 5, not analysed, too)
        "trust": (4, 4),
        "colour": (4, 4),
        "why": (2, 4),
        "age": (4, 4),
    }
    assert got["attn"]["kind"] == "check" and got["attn"]["passed"] == {"k": 4, "n": 5, "p": 0.8}
    trust = got["trust"]
    assert [(c["value"], c["coded"], c["k"]) for c in trust["counts"]] == [
        ("Not at all", 1, 1),
        ("Somewhat", 3, 1),
        ("A lot", 4, 2),
    ]
    assert trust["mean"] == pytest.approx(3.0) and trust["sd"] == pytest.approx(pd.Series([3, 4, 4, 1]).std())
    assert [(c["value"], c["k"], c["p"]) for c in got["colour"]["counts"]] == [
        ("Red", 3, 0.75),
        ("Blue", 1, 0.25),
    ]
    age = got["age"]
    assert (age["mean"], age["median"], age["min"], age["max"]) == (40.75, 37.5, 18, 70)
    assert age["sd"] == pytest.approx(pd.Series([18, 30, 45, 70]).std())
    assert got["why"] == {
        "key": "why",
        "step_kind": "questionnaire",
        "participants": 4,
        "answered": 2,
        "kind": "text",
    }


def test_without_study_json_the_kinds_are_read_off_the_answers(frames):
    responses, analysed = frames
    with_kinds = items.summarise(
        responses, analysed, {"trust": "likert", "age": "number", "colour": "single_choice", "why": "text"}
    )
    without = items.summarise(responses, analysed)
    assert {i["key"]: i["kind"] for i in without} == {i["key"]: i["kind"] for i in with_kinds}
    many = pd.concat(
        [responses]
        + [
            typed("responses", pd.DataFrame([response(n % 4 + 1, "story", f"answer number {n}")]))
            for n in range(13)
        ]
    )
    assert by_key(items.summarise(many, analysed))["story"]["kind"] == "text"  # 13 different: free text
    # Free text that repeats reads as a choice, unless the browser counted typing in it.
    alike = responses.assign(value=responses["value"].where(responses["key"] != "why", "no idea"))
    assert by_key(items.summarise(alike, analysed))["why"]["kind"] == "choice"
    typing = alike.assign(text_keys=(alike["key"] == "why").map({True: 7, False: None}))
    assert by_key(items.summarise(typing, analysed))["why"]["kind"] == "text"


def test_the_report_lists_them_last_and_never_shows_free_text(frames):
    responses, analysed = frames
    text = {i["key"]: items.summary_text(i) for i in items.summarise(responses, analysed)}
    assert (
        text["attn"] == "check: passed by 4 of the 5 who answered it, excluded participants included (80.0%)"
    )
    assert (
        text["trust"] == "Not at all (1): 1 (25.0%); Somewhat (3): 1 (25.0%); A lot (4): 2 (50.0%). "
        "Mean of the coding 3, SD 1.41"
    )
    assert text["age"] == "mean 40.75, SD 22.41, median 37.50, from 18 to 70"
    assert text["why"] == "free text (read the answers in responses.csv)"
    assert "said so" not in " ".join(text.values())


def test_free_text_read_as_a_choice_never_prints_an_answer_few_gave(frames):
    """Without its kind (a carried-over screening answer is not in the main study's study.json),
    "no" eight times and one answer naming its writer read as a choice, and the report printed
    it (the review)."""
    responses, analysed = frames
    many = typed(
        "judgements",
        pd.DataFrame([{"study": "s1", "participant_id": str(pid), "correct": "1"} for pid in range(1, 11)]),
    )
    said = ["no"] * 8 + ["my name is Jane Doe, nurse in Leeds", "hate this"]
    extra = typed(
        "responses",
        pd.DataFrame(
            [response(pid, "comments", said[pid - 1], step_kind="screening") for pid in range(1, 11)]
        ),
    )
    got = by_key(items.summarise(pd.concat([responses, extra]), many))["comments"]
    assert got["kind"] == "choice"
    assert [(c["value"], c["k"]) for c in got["counts"]] == [("no", 8), ("other answers", 2)]
    text = items.summary_text(got)
    assert text == "no: 8 (80.0%); (other answers): 2 (20.0%)" and "Jane" not in text
    declared = by_key(items.summarise(pd.concat([responses, extra]), many, {"comments": "single_choice"}))
    assert len(declared["comments"]["counts"]) == 3  # a declared choice lists every option chosen


def test_blank_positions_and_keys_and_checks_of_any_step(frames):
    """A blank position made the sort fail and the whole report with it (the review); a check
    inside the pairwise step is a check too."""
    responses, analysed = frames
    odd = responses.copy()
    odd.loc[odd["key"] == "age", "position"] = pd.NA
    odd.loc[odd.index[0], "key"] = ""
    pairwise_check = typed(
        "responses",
        pd.DataFrame([response(1, "pair_check", "B", step_kind="pairwise", is_check="1", passed="1")]),
    )
    summary = items.summarise(pd.concat([odd, pairwise_check]), analysed)
    got = by_key(summary)
    assert summary[-1]["key"] == "age" and "" not in got  # no position: last; no key: left out
    assert got["pair_check"]["kind"] == "check"
    assert "judgement_side" not in got  # a design step's answer, not an item


def test_no_responses_table_no_items():
    assert items.summarise(None, pd.DataFrame({"participant_id": ["1"]})) is None


def test_each_designs_report_ends_with_them():
    from analysis.metrics import synthetic

    tables = synthetic.synthetic_d(n_comparisons=200, n_interlocutors=4, seed=3)
    results = report.analyze(tables, "D", seed=1, bootstrap=10)
    assert results["tables"][-1]["key"] == "items"
    analysed = results["n"]["annotators"]
    assert all(i["participants"] == analysed for i in results["items"])


def test_design_c_counts_the_people_in_the_seats_of_the_dialogues_analysed(frames):
    responses, _ = frames
    seated = {"1": "pro", "2": "con", "3": "pro"}  # 4 and 5 sat in no dialogue analysed
    dialogues = pd.DataFrame(
        [
            {
                "study": "s1",
                "dialogue_id": pid,
                "topic": "t",
                "pairing": "human_ai",
                f"{side}_kind": "human",
                f"{side}_participant_id": pid,
                f"{'con' if side == 'pro' else 'pro'}_kind": "agent",
                f"{'con' if side == 'pro' else 'pro'}_agent": "bot",
                f"{'con' if side == 'pro' else 'pro'}_participant_id": None,
                "status": "finished",
                "outcome": "draw",
                "winner": "",
                "end_reason": "turn_limit",
            }
            for pid, side in seated.items()
        ]
    )
    results = report.analyze({"persuasion_dialogues": dialogues, "responses": responses}, "C", bootstrap=10)
    got = by_key(results["items"])
    assert got["trust"]["participants"] == 3 and got["trust"]["answered"] == 3
    assert results["tables"][-1]["key"] == "items"
