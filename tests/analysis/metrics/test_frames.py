"""Reading the CSV exports and typing their columns; clear errors for missing columns."""

import csv
import io
import re

import pandas as pd
import pytest

from analysis.metrics import frames, llm_judges, persuasion, report, synthetic
from common.downloads import csv_line


def test_typed_converts_known_columns_and_leaves_unknown_ones():
    raw = pd.DataFrame(
        {
            "participant_id": ["7", "8", ""],
            "excluded": ["1", "0", ""],
            "signed_active_side": ["-1", "0", "1"],
            "confidence": ["64", "", "100"],
            "wpm": ["231.5", "", "99"],
            "reasoning": ["NA", "", "=1+1"],
            "created_at": ["2026-03-02T09:00:00+00:00", "", "2026-03-02T10:30:00+01:00"],
            "mystery": ["", "x", "1"],
        }
    )
    t = frames.typed("judgements", raw)
    assert str(t["participant_id"].dtype) == "Int64"
    assert t["participant_id"].isna().tolist() == [False, False, True]
    assert str(t["excluded"].dtype) == "boolean"
    assert t["excluded"].tolist()[:2] == [True, False] and t["excluded"].isna().iloc[2]
    assert t["signed_active_side"].tolist() == [-1, 0, 1]
    assert t["confidence"].isna().tolist() == [False, True, False]
    assert t["wpm"].dtype == "float64" and t["wpm"].iloc[0] == 231.5
    # Free text stays text: "NA" is an answer, only the empty cell is missing.
    assert (
        t["reasoning"].iloc[0] == "NA"
        and pd.isna(t["reasoning"].iloc[1])
        and t["reasoning"].iloc[2] == "=1+1"
    )
    assert t["created_at"].iloc[2] == pd.Timestamp("2026-03-02T09:30:00Z")
    assert pd.isna(t["created_at"].iloc[1])
    assert t["mystery"].tolist() == ["", "x", "1"]  # unknown column untouched
    # Typing a typed frame changes nothing.
    again = frames.typed("judgements", t)
    pd.testing.assert_frame_equal(again, t)


def test_fractional_values_in_an_integer_column_become_floats():
    t = frames.typed("participants", pd.DataFrame({"reading_ms": ["1000", "1500.5"]}))
    assert t["reading_ms"].dtype == "float64" and t["reading_ms"].tolist() == [1000.0, 1500.5]


def test_winner_stays_text_even_when_read_as_numbers():
    t = frames.typed("comparisons", pd.DataFrame({"winner": [1, 2, None]}))
    assert t["winner"].iloc[0] == "1" and t["winner"].iloc[1] == "2" and pd.isna(t["winner"].iloc[2])


def test_bad_values_name_table_and_column():
    with pytest.raises(ValueError, match="'judgements'.*'excluded'"):
        frames.typed("judgements", pd.DataFrame({"excluded": ["maybe"]}))
    with pytest.raises(ValueError, match="'comparisons'.*'confidence'"):
        frames.typed("comparisons", pd.DataFrame({"confidence": ["very"]}))
    with pytest.raises(ValueError, match="unknown table"):
        frames.typed("nonsense", pd.DataFrame())


def test_read_tables_reads_what_exists(tmp_path):
    tables = synthetic.synthetic_d(n_comparisons=60, n_interlocutors=4, seed=1)
    tables["comparisons"].to_csv(tmp_path / "comparisons.csv", index=False)
    tables["participants"].to_csv(tmp_path / "participants.csv", index=False)
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    read = frames.read_tables(tmp_path)
    assert set(read) == {"comparisons", "participants"}
    assert len(read["comparisons"]) == len(tables["comparisons"])
    assert str(read["comparisons"]["valid"].dtype) == "boolean"
    assert read["comparisons"]["valid"].sum() == (tables["comparisons"]["valid"] == "1").sum() == 60


def test_round_trip_keeps_text_with_commas_quotes_and_newlines(tmp_path):
    tables = synthetic.synthetic_a(n_participants=40, seed=3)
    tables["judgements"].to_csv(tmp_path / "judgements.csv", index=False)
    read = frames.read_tables(tmp_path)["judgements"]
    expected = frames.typed("judgements", tables["judgements"])
    pd.testing.assert_series_equal(read["reasoning"], expected["reasoning"])
    assert any("\n" in str(x) for x in read["reasoning"].dropna())


@pytest.mark.parametrize(
    ("design", "table", "column"),
    [
        ("A", "judgements", "signed_active_side"),
        ("B", "claim_judgements", "final_correct"),
        ("D", "comparisons", "winner"),
    ],
)
def test_a_missing_required_column_is_a_clear_value_error(design, table, column):
    make = {"A": synthetic.synthetic_a, "B": synthetic.synthetic_b, "D": synthetic.synthetic_d}[design]
    tables = make(40, seed=0) if design != "D" else make(90, 5, seed=0)
    tables[table] = tables[table].drop(columns=[column])
    with pytest.raises(ValueError, match=f"'{table}'.*'{column}'"):
        report.analyze(tables, design, bootstrap=0)


def test_missing_status_without_participants_table_is_a_clear_error():
    tables = synthetic.synthetic_a(30, seed=0)
    judgements = tables["judgements"].drop(columns=["participant_status"])
    with pytest.raises(ValueError, match="'judgements'.*'participant_status'"):
        report.analyze({"judgements": judgements}, "A", bootstrap=0)
    # With the participants table the status is taken from there instead.
    result = report.analyze(
        {"judgements": judgements, "participants": tables["participants"]}, "A", bootstrap=0
    )
    full = report.analyze(tables, "A", bootstrap=0)
    assert result["n"]["analysed"] == full["n"]["analysed"]


def test_a_missing_design_table_is_a_clear_error():
    with pytest.raises(ValueError, match="'claim_judgements' is missing"):
        report.analyze({"participants": pd.DataFrame()}, "B")


def test_tables_a_spreadsheet_saved_again_are_read_as_exported(tmp_path):
    """Semicolons between columns, a byte-order mark and CRLF line ends, rows left blank at the
    end: read as the export wrote them. Another encoding is refused, saying what to do."""
    exported = synthetic.synthetic_a(n_participants=40, seed=0)["judgements"]
    (tmp_path / "plain").mkdir()
    exported.to_csv(tmp_path / "plain" / "judgements.csv", index=False)
    (tmp_path / "saved").mkdir()
    blank = ";" * (exported.shape[1] - 1) + "\r\n"
    text = exported.to_csv(index=False, sep=";", lineterminator="\r\n") + blank
    (tmp_path / "saved" / "judgements.csv").write_text("\ufeff" + text, encoding="utf-8")
    plain = frames.read_tables(tmp_path / "plain")["judgements"]
    saved = frames.read_tables(tmp_path / "saved")["judgements"]
    pd.testing.assert_frame_equal(saved, plain)
    (tmp_path / "latin").mkdir()
    exported.assign(reasoning="Côté A était plus convaincant").to_csv(
        tmp_path / "latin" / "judgements.csv", index=False, encoding="cp1252"
    )
    with pytest.raises(ValueError, match="judgements.csv is not UTF-8 text.*CSV UTF-8"):
        frames.read_tables(tmp_path / "latin")


@pytest.mark.parametrize(
    ("saved", "expected", "how"),
    [
        (
            ["30/11/2026 12:00", "1/12/2026 09:05:30", ""],
            ["2026-11-30 12:00", "2026-12-01 09:05:30", ""],
            "day/month",
        ),
        (["11/30/2026 9:05 PM", "12/1/26 12:00 AM"], ["2026-11-30 21:05", "2026-12-01 00:00"], "month/day"),
        (["04.12.2026 13:05", "03.12.2026"], ["2026-12-04 13:05", "2026-12-03 00:00"], "day/month"),
        (["46360.5", "46359,25"], ["2026-12-04 12:00", "2026-12-03 06:00"], "day numbers"),
        (["2026-11-30T12:00:00Z", "30/11/2026 13:00"], ["2026-11-30 12:00", "2026-11-30 13:00"], "day/month"),
    ],
)
def test_timestamps_a_spreadsheet_saved_again_are_read_and_said(saved, expected, how):
    df = pd.DataFrame({"started_at": saved, "status": ["completed"] * len(saved)})
    out = frames.typed("participants", df)
    want = pd.Series([pd.Timestamp(v, tz="UTC") if v else pd.NaT for v in expected], name="started_at")
    pd.testing.assert_series_equal(out["started_at"], want.astype("datetime64[us, UTC]"))
    [note] = frames.notes_of({"participants": out})
    assert "participants.csv, column 'started_at'" in note and how in note


@pytest.mark.parametrize(
    ("saved", "why"),
    [
        (["01/02/2026 10:00", "03/02/2026"], "either way round"),  # no day after the 12th
        (["13/01/2026", "01/13/2026"], "both orders"),
        (["31/02/2026"], "does not exist"),
        (["yesterday", "30/11/2026"], "not in a date format known"),
        (["123"], "not in a date format known"),
    ],
)
def test_timestamps_that_cannot_be_read_are_kept_as_text_and_said(saved, why):
    df = pd.DataFrame({"started_at": saved, "status": ["completed"] * len(saved)})
    out = frames.typed("participants", df)
    assert list(out["started_at"]) == saved  # nothing lost: the analysis uses no timestamp
    [note] = frames.notes_of({"participants": out})
    assert why in note and "kept as text" in note and "participants.csv, column 'started_at'" in note


def test_timestamps_as_exported_are_read_without_a_note():
    out = frames.typed("participants", pd.DataFrame({"started_at": ["2026-11-30T12:00:00.5+00:00", ""]}))
    assert out["started_at"].iloc[0] == pd.Timestamp("2026-11-30 12:00:00.5", tz="UTC")
    assert frames.notes_of({"participants": out}) == []


def test_decimal_commas_and_padded_headers_of_a_spreadsheet_are_read_as_exported(tmp_path):
    """Saved again by a spreadsheet in a language that writes decimal commas (semicolons
    between the columns), a header cell with a space after it: the same frame as exported.
    A comma is a decimal comma only where it can be nothing else."""
    exported = frames.typed("judgements", synthetic.synthetic_a(n_participants=40, seed=0)["judgements"])
    assert (exported["wpm"] % 1 != 0).any()  # there are fractions to write
    (tmp_path / "plain").mkdir()
    exported.to_csv(tmp_path / "plain" / "judgements.csv", index=False)
    (tmp_path / "saved").mkdir()
    padded = exported.rename(columns={"participant_id": "participant_id "})
    (tmp_path / "saved" / "judgements.csv").write_text(padded.to_csv(index=False, sep=";", decimal=","))
    plain = frames.read_tables(tmp_path / "plain")["judgements"]
    saved = frames.read_tables(tmp_path / "saved")["judgements"]
    pd.testing.assert_frame_equal(saved, plain)
    for mixed in (["3.5", "2,5"], ["1,234.5"], ["1,2,3"]):
        with pytest.raises(ValueError, match="not a number"):
            frames.typed("participants", pd.DataFrame({"duration_s": mixed}))


def _exclude_in_participants_only(tables: dict, share: float = 0.5) -> tuple[dict, int]:
    """The analyst's exclusions written in participants.csv alone: (tables, how many)."""
    participants = frames.typed("participants", tables["participants"])
    kept = (participants["status"] == "completed") & ~frames.flag(participants["excluded"])
    chosen = participants.index[kept][: int(kept.sum() * share)]
    edited = tables["participants"].copy()
    edited.loc[chosen, "excluded"] = "1"
    return {**tables, "participants": edited}, len(chosen)


@pytest.mark.parametrize(
    ("design", "make", "count"),
    [
        ("A", lambda: synthetic.synthetic_a(80, seed=1), lambda r: r["n"]["analysed_participants"]),
        ("D", lambda: synthetic.synthetic_d(600, 6, seed=1), lambda r: r["n"]["annotators"]),
    ],
)
def test_exclusions_made_in_the_participants_table_alone_count_in_the_figures(design, make, count):
    """The figures and the exclusion flow agree on who is analysed, wherever the analyst wrote
    the exclusion; the figures used to follow the design table's own copy of the flag."""
    tables = make()
    before = report.analyze(tables, design, bootstrap=0)
    edited, excluded = _exclude_in_participants_only(tables)
    after = report.analyze(edited, design, bootstrap=0)
    flow_before, flow_after = (r["exclusion_flow"]["analysed"] for r in (before, after))
    assert excluded > 0 and flow_after == flow_before - excluded
    assert count(before) == flow_before and count(after) == flow_after


def test_a_row_counts_only_if_every_source_says_completed_and_none_excluded():
    rows = pd.DataFrame(
        {
            "participant_id": ["1", "2", "3", "4", "5"],
            "participant_status": ["completed", "completed", "returned", "completed", ""],
            "excluded": ["0", "0", "0", "1", "0"],
        }
    )
    people = pd.DataFrame(
        {
            "participant_id": ["1", "2", "3", "4"],
            "status": ["completed", "completed", "completed", "completed"],
        }
        | {"excluded": ["0", "1", "0", "0"]}
    )
    rows, people = frames.typed("judgements", rows), frames.typed("participants", people)
    assert list(frames.analysable(rows, "judgements", people)) == [True, False, False, False, False]
    assert list(frames.analysable(rows, "judgements")) == [True, True, False, False, False]
    alone = rows.drop(columns=["participant_status", "excluded"])
    assert list(frames.analysable(alone, "judgements", people)) == [True, False, True, True, False]


def _exported(tmp_path, table: str = "judgements") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the export's text cells of a synthetic design A table, the same read back as exported)."""
    exported = synthetic.synthetic_a(n_participants=40, seed=0)[table]
    (tmp_path / "plain").mkdir()
    exported.to_csv(tmp_path / "plain" / f"{table}.csv", index=False)
    return exported, frames.read_tables(tmp_path / "plain")[table]


def test_an_empty_file_is_refused_by_name(tmp_path):
    (tmp_path / "judgements.csv").write_text("")
    with pytest.raises(ValueError, match="judgements.csv is empty"):
        frames.read_tables(tmp_path)


@pytest.mark.parametrize(
    ("saved", "separator"),
    [("tab", "\t"), ("sep=,", ","), ("sep=;", ";"), ("sep=\t", "\t")],
)
def test_tabs_and_excels_separator_line_are_read_as_exported(tmp_path, saved, separator):
    exported, plain = _exported(tmp_path)
    (tmp_path / "saved").mkdir()
    first = f"{saved}\r\n" if saved.startswith("sep=") else ""
    text = first + exported.to_csv(index=False, sep=separator, lineterminator="\r\n")
    (tmp_path / "saved" / "judgements.csv").write_text("\ufeff" + text, encoding="utf-8")
    read = frames.read_tables(tmp_path / "saved")["judgements"]
    pd.testing.assert_frame_equal(read, plain)
    assert frames.notes_of({"judgements": read}) == []


def test_files_joined_with_their_column_names_repeated_are_read_as_one(tmp_path):
    exported, plain = _exported(tmp_path)
    (tmp_path / "joined").mkdir()
    half = len(exported) // 2
    text = exported.iloc[:half].to_csv(index=False) + exported.iloc[half:].to_csv(index=False)
    (tmp_path / "joined" / "judgements.csv").write_text(text)
    read = frames.read_tables(tmp_path / "joined")["judgements"]
    pd.testing.assert_frame_equal(read, plain)
    [note] = frames.notes_of({"judgements": read})
    assert note.startswith("judgements.csv: 1 row repeating the column names")


def test_rows_repeated_exactly_are_counted_once_and_said(tmp_path):
    exported, plain = _exported(tmp_path)
    (tmp_path / "twice").mkdir()
    twice = pd.concat(
        [exported, exported.iloc[:5].assign(participant_status=lambda d: d.participant_status + " ")]
    )
    twice.to_csv(tmp_path / "twice" / "judgements.csv", index=False)
    read = frames.read_tables(tmp_path / "twice")["judgements"]
    pd.testing.assert_frame_equal(read, plain)
    [note] = frames.notes_of({"judgements": read})
    assert note.startswith("judgements.csv: 5 rows the same as an earlier row")
    # The design C and LLM tables are read the same way, and say so too.
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "persuasion_dialogues.csv").write_text("dialogue_id,outcome\n1,win\n1,win\n2,draw\n")
    dialogues = persuasion.read_tables(tmp_path / "c")["persuasion_dialogues"]
    assert list(dialogues["dialogue_id"]) == [1, 2]
    assert frames.notes_of({"d": dialogues})[0].startswith("persuasion_dialogues.csv: 1 row the same")


def test_a_participant_listed_twice_with_different_values_is_refused(tmp_path):
    exported = synthetic.synthetic_a(n_participants=20, seed=0)["participants"]
    edited = exported.iloc[[0]].assign(excluded="1" if exported["excluded"].iloc[0] == "0" else "0")
    pd.concat([exported, edited]).to_csv(tmp_path / "participants.csv", index=False)
    pid = exported["participant_id"].iloc[0]
    with pytest.raises(
        ValueError, match=f"participants.csv lists participant {pid} twice .*excluded.*`study`"
    ):
        frames.read_tables(tmp_path)
    # The same participant id in two studies is two participants.
    both = pd.concat([exported.assign(study="one"), exported.assign(study="two", excluded="1")])
    both.to_csv(tmp_path / "participants.csv", index=False)
    assert len(frames.read_tables(tmp_path)["participants"]) == 2 * len(exported)


def test_files_of_two_studies_merged_with_one_studys_column_emptied_are_refused(tmp_path):
    """Two studies' files merged, one copy's `study` cells emptied: every participant (design C:
    every dialogue) of that copy was counted a second time, as a subject of no study."""
    exported = synthetic.synthetic_a(n_participants=20, seed=0)["participants"]
    merged = pd.concat([exported.assign(study="one"), exported.assign(study="")])
    merged.to_csv(tmp_path / "participants.csv", index=False)
    pid = exported["participant_id"].iloc[0]
    with pytest.raises(ValueError, match=f"lists participant {pid} of study 'one' and again without a study"):
        frames.read_tables(tmp_path)
    dialogues = pd.DataFrame(
        {
            "dialogue_id": [1, 2],
            "pairing": ["ai_ai"] * 2,
            "status": ["finished"] * 2,
            "outcome": ["win", "draw"],
        }
    )
    pd.concat([dialogues.assign(study="one"), dialogues.assign(study="two")]).to_csv(
        tmp_path / "persuasion_dialogues.csv", index=False
    )
    assert len(persuasion.read_tables(tmp_path)["persuasion_dialogues"]) == 4  # two studies' dialogues
    pd.concat([dialogues.assign(study="one"), dialogues.assign(study="")]).to_csv(
        tmp_path / "persuasion_dialogues.csv", index=False
    )
    with pytest.raises(
        ValueError, match="persuasion_dialogues.csv lists dialogue 1 of study 'one' and again"
    ):
        persuasion.read_tables(tmp_path)
    pd.concat([dialogues, dialogues.assign(outcome=["draw", "draw"])]).to_csv(
        tmp_path / "persuasion_dialogues.csv", index=False
    )
    with pytest.raises(ValueError, match="lists dialogue 1 twice with different values .in outcome"):
        persuasion.read_tables(tmp_path)


def test_numbers_with_spaces_between_groups_of_three_digits_are_read():
    saved = ["1 469", "12\u00a0345\u00a0678", "2\u202f000.5", "911\u00a0", "-1 000", ""]
    t = frames.typed("participants", pd.DataFrame({"duration_s": saved, "reading_ms": saved[:2] + [""] * 4}))
    assert t["duration_s"].tolist()[:5] == [1469, 12345678, 2000.5, 911, -1000]
    assert t["reading_ms"].tolist()[:2] == [1469, 12345678] and str(t["reading_ms"].dtype) == "Int64"
    commas = frames.typed("participants", pd.DataFrame({"duration_s": ["1 469,5", "12,25"]}))
    assert commas["duration_s"].tolist() == [1469.5, 12.25]
    for ambiguous in (["1 46"], ["1 4690"], ["1469 5"]):
        with pytest.raises(ValueError, match="not a number"):
            frames.typed("participants", pd.DataFrame({"duration_s": ambiguous}))


def test_flags_written_as_whole_numbers_with_decimals_are_read():
    t = frames.typed("participants", pd.DataFrame({"excluded": ["1.0", "0.0", "", "1", "0,0"]}))
    assert t["excluded"].tolist()[:2] == [True, False] and t["excluded"].isna().iloc[2]
    assert t["excluded"].tolist()[3:] == [True, False]
    with pytest.raises(ValueError, match="not a flag"):
        frames.typed("participants", pd.DataFrame({"excluded": ["2.0"]}))


def test_codes_are_read_as_the_export_writes_them_and_free_text_keeps_its_case():
    people = frames.typed(
        "participants", pd.DataFrame({"status": ["Completed", "completed ", "\u00a0returned", "COMPLETED"]})
    )
    assert list(people["status"]) == ["completed", "completed", "returned", "completed"]
    comparisons = frames.typed(
        "comparisons",
        pd.DataFrame(
            {
                "winner": ["1.0", " 1 ", "Tie", "2", "2.0"],
                "participant_status": ["completed "] * 5,
                "interlocutor_1": [" Grok-3_MAS "] * 5,
            }
        ),
    )
    assert list(comparisons["winner"]) == ["1", "1", "tie", "2", "2"]
    assert list(comparisons["interlocutor_1"]) == ["Grok-3_MAS"] * 5  # stripped, its case kept
    judgements = frames.typed("judgements", pd.DataFrame({"reasoning": ["  Side A was Better\n"]}))
    assert list(judgements["reasoning"]) == ["Side A was Better"]
    notes = frames.notes_of({"p": people, "c": comparisons, "j": judgements})
    assert notes == [
        "participants.csv, column 'status': 2 values read as the export's codes "
        "(for example 'Completed' as 'completed').",
        "comparisons.csv, column 'winner': 3 values read as the export's codes (for example '1.0' as '1').",
    ]  # spaces alone are not said
    dialogues = persuasion.typed(
        "persuasion_dialogues", pd.DataFrame({"outcome": ["Win", "draw"], "winner": ["Pro ", None]})
    )
    assert list(dialogues["outcome"]) == ["win", "draw"] and dialogues["winner"].iloc[0] == "pro"
    # Completed participants are analysed, as the export's "completed" is.
    rows = frames.typed("judgements", pd.DataFrame({"participant_status": ["Completed ", "completed"]}))
    rows["excluded"] = pd.array([False, False], dtype="boolean")
    assert list(frames.analysable(rows, "judgements")) == [True, True]
    assert frames.typed("participants", people).equals(people)  # idempotent


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["64", "150"], "150 is not a confidence in percent"),
        (["64", "-5"], "-5 is not a confidence in percent"),
        (["64", "inf"], "inf is not a confidence in percent"),
        (["0.7", "0.55", "1"], "a 0-1 scale"),
    ],
)
def test_a_confidence_off_the_percent_scale_is_refused_by_column(values, message):
    """Brier scores and calibration clipped such values to 0-1 without a word."""
    with pytest.raises(ValueError, match=f"'claim_judgements', column 'final_confidence': .*{message}"):
        frames.typed("claim_judgements", pd.DataFrame({"final_confidence": values}))
    assert list(
        frames.typed("claim_judgements", pd.DataFrame({"final_confidence": ["0", "100", "1"]}))[
            "final_confidence"
        ]
    ) == [0, 100, 1]


def test_a_confidence_column_that_looks_like_a_1_to_10_scale_is_said():
    """Another study's 1-10 scale merged in was read as 1-10 percent, with no word."""
    tenths = frames.typed(
        "claim_judgements", pd.DataFrame({"final_confidence": [str(1 + i % 10) for i in range(30)]})
    )
    [note] = tenths.attrs["notes"]
    assert "column 'final_confidence': all 30 confidences are whole numbers from 1 to 10" in note
    few = frames.typed("claim_judgements", pd.DataFrame({"final_confidence": ["5", "10", "0"]}))
    percents = frames.typed("claim_judgements", pd.DataFrame({"final_confidence": ["5", "60"] * 15}))
    assert few.attrs["notes"] == percents.attrs["notes"] == []


@pytest.mark.parametrize("value", ["7", "0", "2.5"])
def test_a_comparisons_confidence_off_its_1_to_5_rating_is_refused(value):
    """Design D asks a rating from 1 to 5, not a percentage: a 1-7 scale merged in was counted
    as more levels in the confidence ratings' agreement."""
    ratings = frames.typed("comparisons", pd.DataFrame({"confidence": ["1", "5", "3"]}))
    assert list(ratings["confidence"]) == [1, 5, 3] and ratings.attrs["notes"] == []
    with pytest.raises(
        ValueError, match=f"'comparisons', column 'confidence': {value} is not a confidence rating"
    ):
        frames.typed("comparisons", pd.DataFrame({"confidence": ["1", value]}))


def test_a_column_under_another_spelling_is_named_in_the_error():
    tables = synthetic.synthetic_d(200, 4, seed=0)
    comparisons = tables["comparisons"].rename(columns={"interlocutor_1": "Interlocutor 1"})
    with pytest.raises(ValueError, match="no column 'interlocutor_1'.*there is 'Interlocutor 1': rename it"):
        report.analyze({**tables, "comparisons": comparisons}, "D", bootstrap=0)


def test_the_codes_the_analysis_knows_are_the_models_choices():
    """frames.CODES lists what the export writes in each code column; a code added to a model
    must be added there too, or its rows would be counted as never exported."""
    from debates.models import LiveSession, LiveTurn, PersuasionDialogue, PersuasionTurn
    from participants.models import Participant

    def values(choices):
        return set(choices.values)

    def codes(table, column):
        return set(frames.codes_of(table, column))

    assert codes("participants", "status") == values(Participant.Status)
    assert codes("comparisons", "participant_status") == values(Participant.Status)
    assert codes("claim_judgements", "protocol") == values(LiveSession.Protocol)
    assert codes("claim_judgements", "phase") == values(LiveSession.Phase)
    assert codes("live_turns", "status") == values(LiveTurn.Status)
    assert codes("persuasion_dialogues", "status") == values(PersuasionDialogue.Status)
    assert codes("persuasion_dialogues", "end_reason") == values(PersuasionDialogue.Reason)
    assert codes("persuasion_moves", "turn_status") == values(PersuasionTurn.Status)
    # every code column of every table has its codes
    from analysis.metrics import llm_judges, llm_persona

    for schemas in (frames.SCHEMAS, persuasion.SCHEMAS, llm_judges.SCHEMAS, llm_persona.SCHEMAS):
        for table, schema in schemas.items():
            for column, kind in schema.items():
                if kind == "code":
                    assert frames.codes_of(table, column), f"{table}.{column} has no codes"


def test_a_side_letter_in_lowercase_is_read_and_a_foreign_code_counted():
    rows = frames.typed(
        "judgements",
        pd.DataFrame(
            {"chosen_side": ["a", "B", " b", "C", None], "bias_present": ["Yes", "no", "", "x", "y"]}
        ),
    )
    assert rows["chosen_side"].tolist()[:3] == ["A", "B", "B"] and rows["chosen_side"].isna().iloc[4]
    assert rows["bias_present"].tolist()[:2] == ["yes", "no"]
    assert frames.notes_of({"j": rows}) == [
        "judgements.csv, column 'chosen_side': 2 values read as the export's codes (for example 'a' as 'A').",
        "judgements.csv, column 'chosen_side': 1 row with a value the export never writes there "
        "(for example 'C'; it writes A or B): no figure counts it as any of those.",
        "judgements.csv, column 'bias_present': 1 value read as the export's codes "
        "(for example 'Yes' as 'yes').",
        "judgements.csv, column 'bias_present': 2 rows with a value the export never writes there "
        "(for example 'x'; it writes yes, no or unsure): no figure counts them as any of those.",
    ]


def test_an_id_that_is_not_a_whole_number_is_refused_by_table_and_column():
    """A fractional participant_id turned the column into fractions; the join with the answers
    then matched nobody (design A's Figure 15 all unanswered, D's subgroups gone), silently."""
    ids = frames.typed("responses", pd.DataFrame({"participant_id": ["12.0", "13", " 14 "]}))
    assert ids["participant_id"].tolist() == [12, 13, 14] and ids["participant_id"].dtype == "Int64"
    with pytest.raises(
        ValueError, match=r"'responses', column 'participant_id': not a whole number.*'12\.5'"
    ):
        frames.typed("responses", pd.DataFrame({"participant_id": ["11", "12.5"]}))
    with pytest.raises(ValueError, match="'persuasion_dialogues', column 'pro_participant_id'"):
        persuasion.typed("persuasion_dialogues", pd.DataFrame({"pro_participant_id": [1.5]}))
    with pytest.raises(ValueError, match="not a number"):
        frames.typed("participants", pd.DataFrame({"participant_id": ["P-12"]}))


@pytest.mark.parametrize("second", ["valid ", "valid"])
def test_a_column_named_twice_is_refused_by_name(tmp_path, second):
    """'valid ' beside 'valid' collided once the names were stripped (an AttributeError
    traceback); 'valid' twice had its second copy silently renamed 'valid.1' by pandas."""
    (tmp_path / "comparisons.csv").write_text(f"participant_id,valid,{second}\n1,1,0\n")
    with pytest.raises(ValueError, match="comparisons.csv has two columns named 'valid'"):
        frames.read_tables(tmp_path)


def _two_studies(tmp_path, edit=None):
    one, two = synthetic.synthetic_a(20, seed=0), synthetic.synthetic_a(20, seed=1)
    for name in one:
        merged = pd.concat([one[name].assign(study="s1"), two[name].assign(study="s2")], ignore_index=True)
        if edit:
            merged = edit(name, merged)
        merged.to_csv(tmp_path / f"{name}.csv", index=False)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda name, df: df.drop(columns=["study"]) if name == "judgements" else df,
            r"judgements.csv has no `study` column, while participants.csv holds 2 studies \(s1, s2\)",
        ),
        (
            lambda name, df: (
                df.assign(study=df["study"].where(df["study"] == "s1")) if name == "responses" else df
            ),
            r"responses.csv has \d+ rows without a study, while participants.csv holds 2 studies",
        ),
        (
            lambda name, df: df.assign(study=df["study"].replace("s2", "S2")) if name == "judgements" else df,
            r"judgements.csv has rows of study 'S2', which participants.csv does not list \(it lists 's2'",
        ),
    ],
    ids=["a table without study", "rows without study", "a study spelled otherwise"],
)
def test_tables_of_several_studies_that_cannot_be_joined_by_study_are_refused(tmp_path, edit, message):
    """Participant ids start again in each study: a table of merged studies without its study
    was joined by id alone, to whichever study's participant had the id (their status,
    exclusions and answers), silently."""
    _two_studies(tmp_path)
    assert {"s1", "s2"} == set(frames.read_tables(tmp_path)["judgements"]["study"])  # as exported: read
    _two_studies(tmp_path, edit)
    with pytest.raises(ValueError, match=message):
        frames.read_tables(tmp_path)


@pytest.mark.parametrize(
    ("make", "table", "column"),
    [
        (lambda: synthetic.synthetic_a(40, seed=0), "judgements", "confidence"),
        (lambda: synthetic.synthetic_b(30, seed=0), "claim_judgements", "final_confidence"),
        (lambda: synthetic.synthetic_d(60, 5, seed=0), "comparisons", "seconds"),
    ],
)
def test_a_table_joined_in_twice_with_an_edit_in_between_is_refused(tmp_path, make, table, column):
    """Rows the same in every cell are dropped; rows that share what makes them one of a kind
    (a participant's judgement of a dialogue, live session of a step, comparison of an order)
    but differ elsewhere were all counted, the participant twice."""
    tables = make()
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    read = frames.read_tables(tmp_path)[table]
    assert set(frames._ROW_KEYS[table]) <= set(read.columns)  # the export's shape has the key
    edited = tables[table].iloc[:3].copy()
    edited[column] = edited[column].map(lambda v: "51" if str(v) != "51" else "52")
    pd.concat([tables[table], edited]).to_csv(tmp_path / f"{table}.csv", index=False)
    with pytest.raises(ValueError, match=rf"{table}.csv has 2 rows for participant .* \(in {column}\)"):
        frames.read_tables(tmp_path)


def test_files_joined_with_a_byte_order_mark_or_in_another_column_order(tmp_path):
    """Two 'CSV UTF-8' files joined: the second header, behind its byte-order mark, is dropped
    like any repeated header. Two files whose columns are in another order: refused at the row
    where the second begins (it was 'not a number: participant_id')."""
    judgements = synthetic.synthetic_a(20, seed=0)["judgements"]
    text = judgements.to_csv(index=False)
    (tmp_path / "judgements.csv").write_text("\ufeff" + text + "\ufeff" + text, encoding="utf-8")
    read = frames.read_tables(tmp_path)["judgements"]
    assert len(read) == len(judgements)  # the second copy: its header dropped, its rows the same
    assert any("repeating the column names" in note for note in read.attrs["notes"])
    other = judgements.iloc[10:][judgements.columns[::-1]].to_csv(index=False)
    (tmp_path / "judgements.csv").write_text(judgements.iloc[:10].to_csv(index=False) + other)
    with pytest.raises(ValueError, match="judgements.csv: row 12 holds column names in another order"):
        frames.read_tables(tmp_path)


def test_rows_without_their_empty_cells_at_the_end_are_read_and_said(tmp_path):
    """A spreadsheet may leave out a row's empty cells at its end: the rows are read as exported,
    and the note says how many rows were short (pandas reads them so without a sign, which for
    a row cut short by hand would hide it)."""
    exported, plain = _exported(tmp_path)
    (tmp_path / "saved").mkdir()
    rows = list(csv.reader(io.StringIO(exported.to_csv(index=False))))
    trimmed = [rows[0]] + [row[: max(i + 1 for i, cell in enumerate(row) if cell)] for row in rows[1:]]
    short = sum(len(row) < len(rows[0]) for row in trimmed)
    assert short > 10
    with (tmp_path / "saved" / "judgements.csv").open("w", newline="") as f:
        csv.writer(f).writerows(trimmed)
    read = frames.read_tables(tmp_path / "saved")["judgements"]
    pd.testing.assert_frame_equal(read, plain)
    [note] = frames.notes_of({"judgements": read})
    assert note.startswith(f"judgements.csv: {short} rows with fewer cells than the 30 columns (the first")


def test_a_cell_longer_than_the_csv_modules_limit_is_read(tmp_path):
    """A long turn's text beside a blank last cell: the short-row pass met the csv module's
    field size limit (131,072 characters) and the report failed with a csv.Error."""
    (tmp_path / "judgements.csv").write_text(
        'participant_id,reasoning,confidence\r\n1,"' + "x" * 140_000 + '",\r\n2,b,60\r\n'
    )
    read = frames.read_csv(tmp_path / "judgements.csv")
    assert read.shape == (2, 3) and len(read.loc[0, "reasoning"]) == 140_000
    assert read.attrs["notes"] == []
    (tmp_path / "judgements.csv").write_text(
        'participant_id,reasoning,confidence\r\n1,"' + "x" * 140_000 + '"\r\n'
    )
    assert "1 row with fewer cells" in frames.read_csv(tmp_path / "judgements.csv").attrs["notes"][0]


def test_a_file_that_ends_in_the_middle_of_a_row_is_refused(tmp_path):
    """A download cut short: its last row stops mid-cell with no line end after it. It was read
    with the cut value and blanks (a participant id 1234 cut to 12 would be another participant)."""
    judgements = synthetic.synthetic_a(20, seed=0)["judgements"]
    text = judgements.to_csv(index=False)
    cut = text[: text.rindex("\n", 0, len(text) - 1) + 1 + 14]  # 14 characters into the last row
    (tmp_path / "judgements.csv").write_text(cut)
    with pytest.raises(ValueError, match=r"judgements.csv ends in the middle of line 2\d \(\d of 30 cells"):
        frames.read_tables(tmp_path)
    # The same row with its line end: a row whose end was left out, read and said.
    (tmp_path / "judgements.csv").write_text(cut + "\n")
    read = frames.read_tables(tmp_path)["judgements"]
    assert len(read) == len(judgements)
    assert "fewer cells than the 30 columns" in frames.notes_of({"judgements": read})[0]


def test_whole_numbers_with_thousands_commas_are_read_as_such_and_decimals_with_a_comma_too():
    instances = frames.typed("comparisons", pd.DataFrame({"instance": ["1,001", "1,090", "12"]}))
    assert instances["instance"].tolist() == [1001, 1090, 12]  # was 1.001 and 1.09
    seconds = frames.typed("comparisons", pd.DataFrame({"seconds": ["1,001", "2,5"]}))
    assert seconds["seconds"].tolist() == [1.001, 2.5]  # a fraction column keeps its decimal comma
    with pytest.raises(ValueError, match="not a whole number"):
        frames.typed("responses", pd.DataFrame({"participant_id": ["1,5"]}))


def test_labels_that_differ_only_in_case_are_said():
    """'Mainstream' beside 'mainstream' made four belief groups of two, silently; they are
    still counted apart (names may differ on purpose), but the report says so."""
    rows = frames.typed(
        "claim_judgements",
        pd.DataFrame({"group": ["Mainstream", "mainstream", "skeptical", None], "claim": ["A", "a"] * 2}),
    )
    assert rows["group"].tolist()[:3] == ["Mainstream", "mainstream", "skeptical"]
    assert frames.notes_of({"c": rows}) == [
        "claim_judgements.csv, column 'group': values that differ only in case or spaces ('Mainstream' and "
        "'mainstream') are counted as different groups; write one the same way everywhere if they are one."
    ]  # a claim's text is no group: not said
    judges = llm_judges.typed("llm_judgements", pd.DataFrame({"judge": ["G4M", "G 4M", "CH"]}))
    assert "('G 4M' and 'G4M')" in frames.notes_of({"c": judges})[0]


def test_tables_of_a_study_without_participants_yet_are_read():
    """Design C dialogues of agents only, or LLM judges run before any participant: no row
    names a participant, so none needs participants.csv to list its study."""
    nobody = pd.DataFrame(
        {"study": pd.Series([], dtype=object), "participant_id": pd.Series([], dtype="Int64")}
    )
    dialogues = pd.DataFrame({"study": ["c", "c"], "dialogue_id": [1, 2]})
    moves = pd.DataFrame({"study": ["c"] * 3, "participant_id": pd.Series([None] * 3, dtype="Int64")})
    frames.studies_agree(
        {"participants": nobody, "persuasion_dialogues": dialogues, "persuasion_moves": moves}
    )
    moves.loc[0, "participant_id"] = 7  # a participant's move: its study must be listed
    with pytest.raises(
        ValueError, match="persuasion_moves.csv has rows of study 'c', which participants.csv"
    ):
        frames.studies_agree(
            {"participants": nobody, "persuasion_dialogues": dialogues, "persuasion_moves": moves}
        )


def exported(df: pd.DataFrame) -> str:
    """A frame written as the export writes it: every data cell through the formula guard."""
    return "".join(
        [csv_line(df.columns, guard=False), *(csv_line(row) for row in df.itertuples(index=False))]
    )


def test_labels_the_export_guarded_read_back_as_written(tmp_path):
    """Interlocutors named like formulas come back from the export with its apostrophe: the
    report's ranking said "'@SUM(1+1)" where the API said "@SUM(1+1)", and a reference ranking
    given in the names as written no longer matched."""
    tables = synthetic.synthetic_d(n_comparisons=600, n_interlocutors=6, seed=0)
    names = synthetic.interlocutor_names(6)
    odd = ["@SUM(1+1)", "=HYPERLINK(1)", "-minus", "+plus", "'=quoted", "plain"]
    renamed = dict(zip(names, odd, strict=True))
    c = tables["comparisons"]
    for column in ("interlocutor_1", "interlocutor_2", "winner_interlocutor"):
        c[column] = c[column].map(lambda v: renamed.get(v, v))
    for name, df in tables.items():
        (tmp_path / f"{name}.csv").write_text(exported(df), newline="")
    assert "'@SUM(1+1)" in (tmp_path / "comparisons.csv").read_text()  # guarded on the way out
    read = frames.read_tables(tmp_path)
    assert set(read["comparisons"]["interlocutor_1"]) | set(read["comparisons"]["interlocutor_2"]) == set(odd)
    from_files = report.analyze(read, "D", bootstrap=0, options={"reference_rankings": {"given": odd}})
    direct = report.analyze(tables, "D", bootstrap=0, options={"reference_rankings": {"given": odd}})
    assert from_files["ranking"] == direct["ranking"]
    assert set(from_files["ranking"]) == set(odd)
    assert from_files["references"]["given"]["n"] == 6


def test_blank_study_cells_beside_one_named_study_are_refused(tmp_path):
    """A participant whose study cell was blank was left out of the headcount and the exclusion
    flow while their answers were analysed (20 in the flow, 40 analysed); read as the one named
    study instead, another study's rows joined this study's people with the same ids. Refused."""
    tables = synthetic.synthetic_a(n_participants=40, seed=3)
    for name, df in tables.items():
        df.insert(0, "study", ["s1" if n % 2 else "" for n in range(len(df))])
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    with pytest.raises(
        ValueError, match=r"participants.csv has 20 rows without a study beside rows of study 's1'"
    ):
        frames.read_tables(tmp_path)
    # Another study's answers joined in without their study: refused too, not joined by id.
    for name, df in tables.items():
        df["study"] = "s1"
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    other = synthetic.synthetic_a(n_participants=10, seed=4)["judgements"].assign(study="")
    pd.concat([tables["judgements"], other]).to_csv(tmp_path / "judgements.csv", index=False)
    with pytest.raises(ValueError, match="judgements.csv has .* without a study"):
        frames.read_tables(tmp_path)
    tables["judgements"].to_csv(tmp_path / "judgements.csv", index=False)
    assert set(frames.read_tables(tmp_path)["judgements"]["study"]) == {"s1"}


def test_a_value_a_column_cannot_hold_is_named_with_its_row_as_a_spreadsheet_numbers_it(tmp_path):
    """The error named the file and the column but not which of 2,000 rows: the row is counted
    as a spreadsheet shows it (column names row 1), past a multi-line text cell, a blank row, a
    repeated one, and an Excel `sep=` line."""
    exported = synthetic.synthetic_a(n_participants=12, seed=0)["judgements"]
    exported["reasoning"] = exported["reasoning"].astype(str)
    exported.loc[1, "reasoning"] = "first line\nsecond line"
    bad = exported.copy()
    bad.loc[6, "confidence"] = "very sure"
    (tmp_path / "a").mkdir()
    text = bad.iloc[:3].to_csv(index=False) + bad.iloc[[2]].to_csv(index=False, header=False)
    text += "," * (bad.shape[1] - 1) + "\n\n" + bad.iloc[3:].to_csv(index=False, header=False)
    (tmp_path / "a" / "judgements.csv").write_text("sep=,\n" + text)
    # sep line 1, names 2, rows 0-2 at 3-5, the repeat 6, a row of empty cells 7, an empty line 8,
    # rows 3.. at 9..: row 6 at 12
    with pytest.raises(
        ValueError, match=r"column 'confidence': not a number: 'very sure' \(row 12 of judgements.csv"
    ):
        frames.read_tables(tmp_path / "a")
    (tmp_path / "good").mkdir()
    exported.to_csv(tmp_path / "good" / "judgements.csv", index=False)
    # The numbers serve typing's errors only: carried on in `attrs`, pandas copied them with every
    # operation of the analysis (a report four times slower).
    assert "rows" not in frames.read_tables(tmp_path / "good")["judgements"].attrs
    flags = exported.copy()
    flags.loc[4, "correct"] = "maybe"
    (tmp_path / "b").mkdir()
    flags.to_csv(tmp_path / "b" / "judgements.csv", index=False)
    with pytest.raises(ValueError, match=r"not a flag \(1/0/empty\): 'maybe' \(row 6 of judgements.csv"):
        frames.read_tables(tmp_path / "b")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"PK\x03\x04\x14\x00\x06\x00", "is a zip archive or an Excel workbook (.xlsx), not a CSV file"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "is an old Excel workbook (.xls), not a CSV file"),
        (b'[{"participant_id": 1}]', "holds JSON, not CSV"),
    ],
)
def test_a_file_that_is_not_csv_is_named_for_what_it_is(tmp_path, content, said):
    """An .xlsx renamed .csv was 'not UTF-8 text (a spreadsheet saved it in another encoding)';
    the API's JSON saved as .csv was 'no column participant_id'."""
    (tmp_path / "judgements.csv").write_bytes(
        content + b"\x00" * 64 if content.startswith(b"PK") else content
    )
    with pytest.raises(ValueError, match=re.escape(f"judgements.csv {said}")):
        frames.read_tables(tmp_path)
