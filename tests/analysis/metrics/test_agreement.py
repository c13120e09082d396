"""Ranking distances and agreement, by hand on small cases and against `krippendorff`."""

import krippendorff
import numpy as np
import pytest

from analysis.metrics.agreement import (
    as_ranks,
    compare_rankings,
    footrule_distance,
    kendall_tau_distance,
    krippendorff_alpha,
)


def test_identical_rankings_are_at_distance_zero():
    a = ["p", "q", "r", "s"]
    out = compare_rankings(a, list(a))
    assert out["kendall_tau_distance"] == 0 and out["footrule_distance"] == 0
    assert out["alpha_ordinal"] == pytest.approx(1.0) and out["alpha_nominal"] == pytest.approx(1.0)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 22])
def test_reversed_rankings_are_at_distance_one(n):
    a = [f"x{i}" for i in range(n)]
    assert kendall_tau_distance(a, a[::-1]) == pytest.approx(1.0)
    # Reversal maximises the footrule: sum |i - (n + 1 - i)| = floor(n^2 / 2).
    assert footrule_distance(a, a[::-1]) == pytest.approx(1.0)


def test_one_adjacent_swap_by_hand():
    # One discordant pair of 3; footrule |1-2| + |2-1| = 2 over floor(9/2) = 4.
    assert kendall_tau_distance(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(1 / 3)
    assert footrule_distance(["a", "b", "c"], ["b", "a", "c"]) == pytest.approx(0.5)
    # Five items, move the first to the end: 4 discordant pairs of 10; footrule 4+1+1+1+1 = 8 of 12.
    a = ["a", "b", "c", "d", "e"]
    b = ["b", "c", "d", "e", "a"]
    assert kendall_tau_distance(a, b) == pytest.approx(0.4)
    assert footrule_distance(a, b) == pytest.approx(8 / 12)


def test_ties_by_hand():
    tied = {"a": 1, "b": 1, "c": 3}  # a and b tied: mid-ranks 1.5, 1.5, 3
    assert as_ranks(tied) == {"a": 1.5, "b": 1.5, "c": 3.0}
    # The pair (a, b) is tied in one ranking only: half a discordance of 3 pairs.
    assert kendall_tau_distance(tied, ["a", "b", "c"]) == pytest.approx(0.5 / 3)
    # |1.5 - 1| + |1.5 - 2| + 0 = 1 over 4.
    assert footrule_distance(tied, ["a", "b", "c"]) == pytest.approx(0.25)
    # Tied in both: no discordance.
    assert kendall_tau_distance(tied, [{"a", "b"}, "c"]) == 0.0
    # A tie against a reversal: (a,b) half, (a,c) and (b,c) discordant -> 2.5 of 3.
    assert kendall_tau_distance(tied, ["c", "b", "a"]) == pytest.approx(2.5 / 3)


def test_dicts_and_lists_are_equivalent():
    as_list = ["w", "x", "y", "z"]
    as_dict = {"z": 4, "x": 2, "w": 1, "y": 3}
    as_scores = {"w": 0.1, "x": 0.4, "y": 0.9, "z": 1.3}  # any numbers, lower is better
    assert as_ranks(as_list) == as_ranks(as_dict) == as_ranks(as_scores)
    assert compare_rankings(as_list, ["x", "w", "z", "y"]) == compare_rankings(
        as_dict, {"x": 1, "w": 2, "z": 3, "y": 4}
    )


def test_only_common_items_are_compared():
    out = compare_rankings(["a", "b", "c", "d"], ["c", "b", "a", "e"])
    assert out["n"] == 3 and out["only_in_a"] == ["d"] and out["only_in_b"] == ["e"]
    assert out["kendall_tau_distance"] == pytest.approx(1.0)  # a, b, c reversed


def test_krippendorff_by_hand():
    # Coders (1, 2, 3) and (2, 1, 3). Coincidences o12 = o21 = o33 = 2, n = 6.
    # Nominal: Do = 4/6, De = (36 - 12)/30 = 0.8, alpha = 1 - (4/6)/0.8 = 1/6.
    assert krippendorff_alpha(["a", "b", "c"], ["b", "a", "c"], "nominal") == pytest.approx(1 / 6)
    # Ordinal: delta(1,2) = delta(2,3) = (4 - 2)^2 = 4, delta(1,3) = (6 - 2)^2 = 16.
    # Do = (2*4 + 2*4)/6, De = 2*(4*4 + 4*4 + 4*16)/30, alpha = 1 - Do/De = 7/12.
    assert krippendorff_alpha(["a", "b", "c"], ["b", "a", "c"], "ordinal") == pytest.approx(7 / 12)


def test_krippendorff_agrees_with_the_package_called_directly():
    rng = np.random.default_rng(4)
    names = [f"n{i}" for i in range(22)]
    a = list(rng.permutation(names))
    b = list(rng.permutation(names))
    ra, rb = as_ranks(a), as_ranks(b)
    data = np.array([[ra[n] for n in names], [rb[n] for n in names]])
    for level in ("ordinal", "nominal"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert krippendorff_alpha(a, b, level) == pytest.approx(expected)
    # With ties too.
    tied = {n: (i // 3) for i, n in enumerate(names)}
    rt = as_ranks(tied)
    data = np.array([[rt[n] for n in names], [ra[n] for n in names]])
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert krippendorff_alpha(tied, a, "ordinal") == pytest.approx(expected)


def test_undefined_cases_give_none():
    assert compare_rankings(["a"], ["a"])["kendall_tau_distance"] is None
    assert krippendorff_alpha({"a": 1, "b": 1}, {"a": 1, "b": 1}) is None
    with pytest.raises(ValueError):
        as_ranks(["a", "a"])
