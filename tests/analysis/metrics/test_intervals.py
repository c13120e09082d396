"""Wilson intervals and the two-group logistic comparison, against statsmodels and the paper."""

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.proportion import proportion_confint

from analysis.metrics.intervals import logit_difference, proportion, wilson


@pytest.mark.parametrize(("k", "n"), [(0, 5), (5, 5), (3, 10), (51, 72), (1, 1000), (164, 297)])
def test_wilson_matches_statsmodels(k, n):
    p, lo, hi = wilson(k, n)
    ref_lo, ref_hi = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert p == pytest.approx(k / n)
    assert lo == pytest.approx(ref_lo, abs=1e-12) and hi == pytest.approx(ref_hi, abs=1e-12)
    assert lo <= p <= hi


def test_wilson_by_hand():
    # 8 of 10, z = 1.959964: centre (0.8 + z²/20) / (1 + z²/10), half-width as in Wilson (1927).
    z = 1.959963984540054
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * np.sqrt(0.8 * 0.2 / 10 + z * z / 400) / (1 + z * z / 10)
    assert wilson(8, 10)[1:] == pytest.approx((centre - half, centre + half))


def test_empty_proportion():
    assert proportion(0, 0) == {"k": 0, "n": 0, "p": None, "lo": None, "hi": None}


def _logit_p(k1, n1, k2, n2):
    y = np.r_[np.ones(k1), np.zeros(n1 - k1), np.ones(k2), np.zeros(n2 - k2)]
    x = np.r_[np.ones(n1), np.zeros(n2)]
    return sm.Logit(y, sm.add_constant(x)).fit(disp=0).pvalues[1]


def test_logit_difference_matches_a_fitted_logistic_regression():
    out = logit_difference(30, 70, 45, 80)
    assert out["diff_pp"] == pytest.approx(100 * (30 / 70 - 45 / 80))
    assert out["p"] == pytest.approx(_logit_p(30, 70, 45, 80), rel=1e-6)


@pytest.mark.parametrize(
    ("met", "acc_met", "not_met", "acc_not", "published"),
    [
        # Table 44 (accuracy) and Table 45 (bias-following) of paper 000.
        (164, 0.543, 133, 0.481, 0.292),
        (88, 0.523, 209, 0.512, 0.865),
        (33, 0.394, 264, 0.530, 0.143),
        (164, 0.628, 133, 0.534, 0.102),
        (88, 0.477, 209, 0.632, 0.014),
        (33, 0.455, 264, 0.602, 0.108),
    ],
)
def test_reproduces_the_p_values_of_tables_44_and_45(met, acc_met, not_met, acc_not, published):
    k1, k2 = round(met * acc_met), round(not_met * acc_not)
    out = logit_difference(k1, met, k2, not_met)
    assert round(out["p"], 3) == published
    assert round(out["diff_pp"], 1) == pytest.approx(round(100 * (k1 / met - k2 / not_met), 1))


def test_an_empty_cell_gives_no_p_value():
    assert logit_difference(0, 10, 5, 10)["p"] is None
    assert logit_difference(0, 10, 5, 10)["diff_pp"] == pytest.approx(-50)
