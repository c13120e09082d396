"""Design D (paper 003): win matrices, Bradley–Terry with bootstrap intervals, subgroups, reliability."""

import choix
import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from analysis.metrics import frames, pairwise, ranking, synthetic


def test_win_matrix_by_hand_with_ties():
    labels, wins = ranking.win_matrix([("a", "b", "1"), ("a", "b", "tie"), ("c", "a", "2"), ("b", "c", "2")])
    assert labels == ["a", "b", "c"]
    np.testing.assert_array_equal(wins, [[0, 1.5, 1], [0.5, 0, 0], [0, 1, 0]])
    with pytest.raises(ValueError, match="winner"):
        ranking.win_matrix([("a", "b", "3")])


def test_bradley_terry_is_choix_ilsr_centred():
    _, wins = ranking.win_matrix(
        [("a", "b", "1"), ("a", "b", "1"), ("b", "c", "1"), ("c", "a", "tie"), ("b", "a", "1")]
    )
    fit = ranking.bradley_terry(["a", "b", "c"], wins)
    direct = choix.ilsr_pairwise_dense(wins, alpha=0.01)
    np.testing.assert_allclose(fit.strengths, direct - direct.mean(), atol=1e-9)
    assert fit.ordered()[0][0] == "a"


def test_bootstrap_win_matrices_resample_comparisons():
    # 0 beats 1 thirty times, 1 beats 2 twenty times, 0 and 2 tie ten times, 2 beats 0 forty times.
    first = np.array([0] * 30 + [1] * 20 + [0] * 10 + [2] * 40)
    second = np.array([1] * 30 + [2] * 20 + [2] * 10 + [0] * 40)
    codes = np.array([0] * 30 + [0] * 20 + [2] * 10 + [0] * 40)
    total = len(codes)
    observed = ranking.win_matrix_codes(first, second, codes, 3)
    np.testing.assert_array_equal(observed, [[0, 30, 5], [0, 0, 20], [45, 0, 0]])
    batches = np.concatenate(
        list(ranking.bootstrap_win_matrices(first, second, codes, 3, 4000, np.random.default_rng(1)))
    )
    assert batches.shape == (4000, 3, 3)
    np.testing.assert_allclose(batches.sum(axis=(1, 2)), total)  # N comparisons in every replicate
    np.testing.assert_allclose(batches.mean(axis=0), observed, atol=0.5)
    # Cell (0, 1) counts one category with p = 0.3: binomial variance N p (1 - p) = 21.
    assert batches[:, 0, 1].var() == pytest.approx(21, rel=0.08)
    # Cell (2, 0) = wins (p = 0.4) + half the ties (p = 0.1):
    # variance N (0.4*0.6 + 0.25*0.1*0.9 - 2*0.5*0.4*0.1).
    assert batches[:, 2, 0].var() == pytest.approx(100 * (0.24 + 0.25 * 0.09 - 0.04), rel=0.08)


def test_bootstrap_equals_resampling_rows_in_distribution():
    # The same mean and spread as the slow way: drawing comparison indices with replacement.
    rng = np.random.default_rng(5)
    n, total = 3, 300
    first = rng.integers(0, n, total)
    second = (first + 1 + rng.integers(0, n - 1, total)) % n
    codes = rng.choice(3, total, p=[0.45, 0.4, 0.15])
    fast = ranking.bootstrap_strengths(first, second, codes, n, 1500, np.random.default_rng(2))
    slow_rng = np.random.default_rng(3)
    slow = []
    for _ in range(1500):
        idx = slow_rng.integers(0, total, total)
        slow.append(ranking.fit_strengths(ranking.win_matrix_codes(first[idx], second[idx], codes[idx], n)))
    slow = np.array(slow)
    np.testing.assert_allclose(fast.mean(axis=0), slow.mean(axis=0), atol=0.02)
    np.testing.assert_allclose(fast.std(axis=0), slow.std(axis=0), rtol=0.12)


def test_known_strengths_are_recovered_with_covering_intervals():
    truth = synthetic.default_strengths(10)
    tables = synthetic.synthetic_d(n_comparisons=6000, n_interlocutors=10, seed=3, tie_rate=0.0)
    df = pairwise.valid_comparisons(frames.typed("comparisons", tables["comparisons"]))
    labels = pairwise.interlocutors(frames.typed("comparisons", tables["comparisons"]))
    out = pairwise.strengths_with_intervals(df, labels, 400, np.random.default_rng(0))
    centred = {k: v - np.mean(list(truth.values())) for k, v in truth.items()}
    covered = sum(out["strengths"][k]["lo"] <= centred[k] <= out["strengths"][k]["hi"] for k in labels)
    assert covered >= 8
    assert spearmanr([out["strengths"][k]["strength"] for k in labels], [truth[k] for k in labels])[0] > 0.95
    assert out["ranking"][0] == max(truth, key=truth.get)


def test_ties_keep_the_order():
    tables = synthetic.synthetic_d(n_comparisons=4000, n_interlocutors=6, seed=4, tie_rate=0.3)
    df = pairwise.valid_comparisons(frames.typed("comparisons", tables["comparisons"]))
    out = pairwise.strengths_with_intervals(
        df, sorted(set(df["interlocutor_1"])), 0, np.random.default_rng(0)
    )
    assert out["ranking"] == list(synthetic.default_strengths(6))
    assert all(v["lo"] is None for v in out["strengths"].values())


def test_only_valid_answers_count():
    rows = []
    for i, (valid, check, winner) in enumerate(
        [("1", "0", "1"), ("1", "0", "tie"), ("0", "0", "2"), ("0", "1", "1"), ("1", "0", ""), ("", "0", "2")]
    ):
        rows.append(
            {
                "participant_id": str(i),
                "valid": valid,
                "is_check": check,
                "interlocutor_1": "a",
                "interlocutor_2": "b",
                "winner": winner,
            }
        )
    df = frames.typed("comparisons", pd.DataFrame(rows))
    valid = pairwise.valid_comparisons(df)
    # The export's valid flag decides (a missing flag does not count); an empty winner never counts.
    assert valid["participant_id"].tolist() == [0, 1]
    # Without the valid column the rule is rebuilt from status, exclusion and check flags.
    rebuilt = df.drop(columns=["valid"]).assign(participant_status="completed", excluded=False)
    rebuilt.loc[2, "excluded"] = True
    assert pairwise.valid_comparisons(rebuilt)["participant_id"].tolist() == [0, 1, 5]


def test_subgroups_by_hand():
    rows, responses = [], []
    for pid, (gender, winners) in enumerate(
        [("Woman", ["1", "1", "2"]), ("Man", ["2", "2", "tie"]), ("Woman", ["1", "tie", "1"])]
    ):
        for w in winners:
            rows.append(
                {
                    "participant_id": str(pid),
                    "valid": "1",
                    "interlocutor_1": "a",
                    "interlocutor_2": "b",
                    "winner": w,
                }
            )
        responses.append({"participant_id": str(pid), "key": "gender", "value": gender, "position": "1"})
        responses.append(
            {
                "participant_id": str(pid),
                "key": "age",
                "value": str(25 + 20 * pid),
                "value_num": str(25 + 20 * pid),
                "position": "1",
            }
        )
    df = pairwise.valid_comparisons(frames.typed("comparisons", pd.DataFrame(rows)))
    resp = frames.typed("responses", pd.DataFrame(responses))
    values = pairwise.subgroup_values(df, resp, {"gender": "gender", "age": "age"})
    assert values["age"].tolist() == ["18–30"] * 3 + ["41–50"] * 3 + ["61–70"] * 3
    global_ranks = {"a": 1.0, "b": 2.0}
    out = pairwise.subgroup_rankings(df, ["a", "b"], global_ranks, values)
    women = next(r for r in out if r["attribute"] == "gender" and r["value"] == "Woman")
    men = next(r for r in out if r["attribute"] == "gender" and r["value"] == "Man")
    assert (women["annotators"], women["annotations"]) == (2, 6)
    assert women["ranking"] == ["a", "b"] and women["vs_global"]["kendall_tau_distance"] == 0
    assert men["ranking"] == ["b", "a"] and men["vs_global"]["kendall_tau_distance"] == 1


def test_reliability_against_the_package_with_a_coders_by_units_matrix():
    tables = synthetic.synthetic_d(n_comparisons=900, n_interlocutors=5, seed=6)
    df = pairwise.valid_comparisons(frames.typed("comparisons", tables["comparisons"]))
    out = pairwise.reliability(df)
    coders = sorted(df["participant_id"].unique())
    units = sorted(df["instance"].unique())
    code = {"1": 1.0, "2": 2.0, "tie": 3.0}
    data = np.full((len(coders), len(units)), np.nan)
    for row in df.itertuples():
        data[coders.index(row.participant_id), units.index(row.instance)] = code[row.winner]
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert out["winner_alpha_nominal"] == pytest.approx(expected)
    conf = np.full((len(coders), len(units)), np.nan)
    for row in df.itertuples():
        conf[coders.index(row.participant_id), units.index(row.instance)] = row.confidence
    assert out["confidence_alpha_nominal"] == pytest.approx(
        krippendorff.alpha(reliability_data=conf, level_of_measurement="nominal")
    )
