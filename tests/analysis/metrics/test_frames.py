"""Reading the CSV exports and typing their columns; clear errors for missing columns."""

import pandas as pd
import pytest

from analysis.metrics import frames, report, synthetic


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
