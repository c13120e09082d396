"""The synthetic generators: export format, seeded, with exclusions and empty cells."""

import pandas as pd
import pytest

from analysis.metrics import frames, synthetic

GENERATORS = {
    "A": lambda seed: synthetic.synthetic_a(n_participants=120, seed=seed),
    "B": lambda seed: synthetic.synthetic_b(n_participants=80, seed=seed),
    "D": lambda seed: synthetic.synthetic_d(n_comparisons=300, n_interlocutors=5, seed=seed),
}
FLAGS = {"excluded", "valid", "is_check", "passed", "chose_a", "correct", "followed_bias", "final_correct"}


@pytest.mark.parametrize("design", "ABD")
def test_tables_are_in_the_export_format(design):
    tables = GENERATORS[design](0)
    for name, df in tables.items():
        assert name in frames.SCHEMAS
        assert set(df.columns) <= set(frames.SCHEMAS[name])
        assert all(isinstance(v, str) for v in df.to_numpy().ravel())
        for column in FLAGS & set(df.columns):
            assert set(df[column]) <= {"1", "0", ""}, (name, column)
        frames.typed(name, df)  # every known column parses
    participants = tables["participants"]
    assert {"group", "user_agent"} <= set(participants.columns)
    assert (participants["excluded"] == "1").any() and (participants["status"] != "completed").any()
    assert all((df == "").to_numpy().any() for df in tables.values())  # empty cells everywhere


@pytest.mark.parametrize("design", "ABD")
def test_seeded(design):
    a, b, c = GENERATORS[design](1), GENERATORS[design](1), GENERATORS[design](2)
    for name in a:
        pd.testing.assert_frame_equal(a[name], b[name])
    assert any(not a[name].equals(c[name]) for name in a)


def test_study_column_when_asked():
    tables = synthetic.synthetic_d(n_comparisons=30, n_interlocutors=3, seed=0, study="pilot")
    assert all((df["study"] == "pilot").all() and df.columns[0] == "study" for df in tables.values())


def test_design_d_has_ties_checks_and_exactly_the_valid_answers_asked_for():
    df = synthetic.synthetic_d(n_comparisons=1000, n_interlocutors=6, seed=2)["comparisons"]
    assert (df["valid"] == "1").sum() == 1000
    assert (df["winner"] == "tie").any() and (df["is_check"] == "1").any()
    assert ((df["is_check"] == "1") & (df["valid"] == "1")).sum() == 0
    # 6 instances per pair of interlocutors.
    real = df[df["is_check"] == "0"]
    assert real["instance"].nunique() == 6 * 15
