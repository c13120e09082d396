"""The LLM judges' and raters' tables (designs A and B) fed data the export never writes: merged,
edited or re-saved files are refused or read as exported and said, never counted otherwise in
silence (each case here had changed a figure without a word)."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.metrics import llm_judges, llm_persona
from analysis.reports import read_design_tables
from tests.analysis.metrics.test_llm_judges import export_frame
from tests.analysis.metrics.test_llm_persona import judgements_frame, ratings_frame
from tests.debates.judges import paper_tables


def _participants(excluded: set[int] = frozenset()) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "study": "s",
            "participant_id": [str(i) for i in (1, 2, 3, 4)],
            "status": "completed",
            "excluded": ["1" if i in excluded else "0" for i in (1, 2, 3, 4)],
        }
    )


def _rated(frame: pd.DataFrame) -> pd.DataFrame:
    """ratings_frame() with the participant of each session, as the export writes it."""
    return frame.assign(participant_id=frame["session"])


def test_a_human_excluded_in_participants_csv_alone_is_left_out_of_the_llm_judges():
    """Session 4 is excluded in its rows; session 1 only in participants.csv, as an analyst
    excludes someone: the main analysis left it out, the LLM judges still counted it."""
    alone = llm_persona.analyse(judgements_frame(), _rated(ratings_frame()))
    assert alone["judges"]["n"]["sessions"] == 3 and alone["strategies"]["n"]["units"] == 4
    r = llm_persona.analyse(judgements_frame(), _rated(ratings_frame()), _participants(excluded={1}))
    assert r["judges"]["n"]["sessions"] == 2
    assert r["strategies"]["n"]["units"] == 2  # session 1's two debaters are out, session 3's stay
    # A status column under another spelling is no longer a column the figures ignore.
    recased = judgements_frame().rename(columns={"excluded": "Excluded"})
    with pytest.raises(ValueError, match="no column 'excluded'; there is 'Excluded': rename it"):
        llm_persona.analyse(recased, None)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda j: j.assign(study="another-study"),
            "rows of study 'another-study', which participants.csv does not",
        ),
        (lambda j: pd.concat([j, j.assign(study="t")]).drop(columns="study"), "has no `study` column"),
    ],
)
def test_llm_tables_of_another_study_or_merged_without_their_study_are_refused(tmp_path, edit, message):
    """Read apart from the platform's tables, they had escaped the checks on studies: another
    study's answers were analysed as this one's; two studies' merged without `study` were
    taken for reruns of each other, half the answers dropped."""
    participants = _participants()
    if "no `study`" in message:
        participants = pd.concat([participants, participants.assign(study="t")])
    participants.to_csv(tmp_path / "participants.csv", index=False)
    answers = export_frame(paper_tables.results())
    answers.to_csv(tmp_path / "llm_judgements.csv", index=False)
    assert len(read_design_tables(tmp_path, "A")["llm_judgements"]) == len(answers)
    edit(answers).to_csv(tmp_path / "llm_judgements.csv", index=False)
    with pytest.raises(ValueError, match=message):
        read_design_tables(tmp_path, "A")


def test_a_strategy_ratings_correctness_is_read_from_the_debaters_side_and_the_truth():
    """Without `debater_correct` every debater had argued the false answer (I)."""
    sides = ratings_frame().assign(
        truth="true", debater_side=lambda f: f["debater_correct"].map({"1": "true", "0": "false"})
    )
    exported = llm_persona.analyse_strategies(sides)["by_correctness"]
    assert llm_persona.analyse_strategies(sides.drop(columns="debater_correct"))["by_correctness"] == exported
    notes: list[str] = []
    blank = sides.drop(columns=["debater_side"]).assign(
        debater_correct=lambda f: f["debater_correct"].where(f.index > 1)
    )
    by = {
        c["correct"]: c["units"] for c in llm_persona.analyse_strategies(blank, notes=notes)["by_correctness"]
    }
    assert by == {True: 1, False: 2}  # session 1's debater A told nothing: left out, not "I"
    assert notes == [
        "llm_strategy_ratings.csv: 2 rating(s) that tell neither debater_correct nor debater_side and "
        "truth: left out of the table by correctness (C/I)."
    ]


def test_each_cell_of_table_3_counts_its_own_raters():
    """A third rater of one other strategy only had emptied 'detected by every rater' in every
    cell; a rater of some debaters of a cell is said."""
    exported = llm_persona.analyse_strategies(ratings_frame())["by_config"]
    extra = pd.DataFrame(
        [
            {
                "study": "s",
                "session": "1",
                "debater": "A",
                "debater_config": "cfg",
                "rater": "R3",
                "strategy": "EA",
                "level": "low",
                "debater_correct": "1",
            }
        ]
    )
    notes: list[str] = []
    cells = llm_persona.analyse_strategies(pd.concat([ratings_frame(), extra]), notes=notes)["by_config"]
    assert cells[0] == exported[0] and notes == []
    partial = extra.assign(strategy="CE")
    cells = llm_persona.analyse_strategies(pd.concat([ratings_frame(), partial]), notes=notes)["by_config"]
    assert (cells[0]["detected_by_all"]["n"], cells[0]["units"]) == (1, 4)
    assert notes[0].startswith(
        "Strategy ratings: in 1 cell(s) of Table 3 not every rater rated every debater"
    )


def _table_31(frame: pd.DataFrame) -> tuple:
    r = llm_judges.analyse(frame)
    return r["table_31"], r["by_condition"], r["shifts"]


def test_baselines_and_active_sides_are_told_the_same_way_everywhere():
    """A condition written 'Baseline' found no baseline (no shift counted); a biased row with
    its letter blank was counted as a baseline answer."""
    exported = export_frame(paper_tables.results())
    expected = _table_31(exported)
    recased = exported.assign(condition=exported["condition"].str.capitalize())
    assert _table_31(recased) == expected
    biased = exported.index[exported["active_side_letter"].notna()]
    blank = exported.copy()
    blank.loc[biased[:3], "active_side_letter"] = None
    assert _table_31(blank) == expected  # from signed_active_side
    told_by_nothing = blank.drop(columns=["signed_active_side", "active_side"])
    r = llm_judges.analyse(told_by_nothing)
    assert r["n"]["answers"] == len(exported) - 3
    assert r["warnings"] == [
        "llm_judgements.csv: 3 answer(s) to a biased dialogue whose active side no column tells "
        "(active_side_letter, signed_active_side, active_side with culprit_side) left out."
    ]
    with pytest.raises(ValueError, match="there is 'Active_Side_Letter': rename it 'active_side_letter'"):
        llm_judges.analyse(exported.rename(columns={"active_side_letter": "Active_Side_Letter"}))


def test_a_choice_is_right_when_its_side_is_the_culprits():
    """A blank `correct` had dropped the answer; an edited one was believed over the sides."""
    exported = export_frame(paper_tables.results())
    expected = _table_31(exported)
    blank = exported.assign(correct=pd.NA)
    assert _table_31(blank) == expected
    wrong = exported.assign(correct=True)
    r = llm_judges.analyse(wrong)
    assert (r["table_31"], r["by_condition"], r["shifts"]) == expected
    assert r["warnings"][0].startswith("llm_judgements.csv: ") and "counted by the sides" in r["warnings"][0]


def test_which_of_two_answers_counts_must_be_known():
    """The rerun's answer counts by `finished_at`; two answers at one time, or times a
    spreadsheet re-saved as text, left it to row order."""
    found = paper_tables.results()
    again = {
        **next(r for r in found if r["dialogue"] == "d01" and r["judge"] == "CH"),
        "side": "A",
        "correct": True,
    }
    tied = export_frame([*found, again])
    with pytest.raises(ValueError, match="two different answers for study s, dialogue d01, judge CH"):
        llm_judges.analyse(tied)
    as_text = tied.assign(finished_at="01/01/2025 00:00")
    as_text.loc[as_text.index[-1], "finished_at"] = "02/01/2025 00:00"
    with pytest.raises(
        ValueError, match="'finished_at' could not be read as times, and 1 item with more than one"
    ):
        llm_judges.analyse(as_text)
    # The same answer twice at one time (the file joined in twice) is one answer.
    same = export_frame([*found, next(r for r in found if r["dialogue"] == "d01" and r["judge"] == "CH")])
    assert llm_judges.analyse(same)["n"]["answers"] == len(found)


def test_a_sessions_rows_must_agree_on_the_human_and_name_their_session():
    judgements = judgements_frame()
    edited = judgements.copy()
    edited.loc[(edited["session"] == "3") & (edited["judge"] == "N"), "human_final_answer"] = "true"
    with pytest.raises(ValueError, match="rows of session 3 of study 's' disagree on human_final_answer"):
        llm_persona.analyse_judges(edited)
    with pytest.raises(ValueError, match="'session'.*not a whole number"):
        llm_persona.analyse_judges(judgements.assign(session="1.5"))
    notes: list[str] = []
    unnamed = judgements.assign(judge=judgements["judge"].where(judgements.index > 0, ""))
    r = llm_persona.analyse_judges(unnamed, notes=notes)
    assert r["n"]["judges"] == 2  # no judge named ''
    assert notes == [
        "llm_persona_judgements.csv: 1 row(s) without their session, judge, claim left out: the "
        "export writes every one."
    ]


def test_a_dialogues_rows_must_agree_on_what_the_dialogue_is():
    """Table 31 took its first row's case, condition, side and variant: a blank side_a showed
    ' vs. culprit', an edited row changed the dialogue's place."""
    exported = export_frame(paper_tables.results())
    expected = _table_31(exported)
    blank = exported.copy()
    blank.loc[blank.index[0], "side_a"] = None
    assert _table_31(blank) == expected
    edited = exported.copy()
    dialogue = edited.loc[edited.index[0], "dialogue"]
    edited.loc[edited.index[1:][edited["dialogue"].iloc[1:] == dialogue][:1], "variant"] = "V9"
    with pytest.raises(ValueError, match=f"rows of dialogue {dialogue} of study 's' disagree on variant"):
        llm_judges.analyse(edited)


def test_a_rater_who_rated_no_debater_of_a_cell_is_said():
    """The cell's figure was then the other rater's alone, with no word."""
    other = ratings_frame().assign(debater_config="cfg2", session=lambda f: f["session"] + "1")
    notes: list[str] = []
    cells = llm_persona.analyse_strategies(
        pd.concat([ratings_frame(), other[other["rater"] == "R1"]]), notes=notes
    )
    cfg2 = next(c for c in cells["by_config"] if c["debater_config"] == "cfg2")
    assert cfg2["raters_missing"] == ["R2"] and list(cfg2["by_rater"]) == ["R1"]
    assert notes == [
        "Strategy ratings: in 1 cell(s) of Table 3 a rater rated no debater (e.g. R2 in CE x cfg2): "
        "'Detected by every rater' there counts the other raters only."
    ]


def test_what_was_left_out_is_said_even_when_nothing_is_left():
    """Every row left out: the section said to run a job, and the warnings were lost."""
    warnings: list[str] = []
    assert llm_judges.analyse(export_frame(paper_tables.results()).assign(judge=pd.NA), warnings) is None
    assert warnings and "without their dialogue, judge or condition left out" in warnings[0]
    warnings = []
    assert llm_persona.analyse(judgements_frame().assign(judge=""), None, notes=warnings) is None
    assert warnings and "without their session, judge, claim left out" in warnings[0]
