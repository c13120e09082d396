"""The grouped, batched logistic regression against statsmodels."""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy.special import expit

from analysis.metrics import logistic


def test_fit_matches_statsmodels_on_random_data():
    rng = np.random.default_rng(11)
    n = 500
    xmat = np.column_stack([np.ones(n), rng.integers(-1, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n)])
    y = (rng.random(n) < expit(xmat @ np.array([0.3, 0.5, -0.4, 0.2]))).astype(float)
    fit = logistic.fit(xmat, y, ["c", "a", "b", "d"])
    ref = sm.Logit(y, xmat).fit(disp=0)
    np.testing.assert_allclose(fit.params, ref.params, atol=1e-8)
    np.testing.assert_allclose(fit.bse, ref.bse, rtol=1e-6)
    assert fit.loglik == pytest.approx(ref.llf, rel=1e-10)
    terms = fit.terms()
    np.testing.assert_allclose([t["p"] for t in terms], ref.pvalues, rtol=1e-6)
    lo, hi = np.exp(ref.conf_int()).T
    np.testing.assert_allclose([t["or_lo"] for t in terms], lo, rtol=1e-6)
    np.testing.assert_allclose([t["or_hi"] for t in terms], hi, rtol=1e-6)


def test_batched_newton_equals_fits_one_by_one():
    rng = np.random.default_rng(5)
    xmat = np.array([[1, 0], [1, 1], [1, -1.0]])
    n = rng.integers(20, 60, size=(6, 3)).astype(float)
    k = np.floor(n * rng.uniform(0.2, 0.8, size=(6, 3)))
    beta, _, ok = logistic.newton(xmat, k, n)
    assert ok.all()
    for b in range(6):
        y = np.concatenate([np.r_[np.ones(int(k[b, c])), np.zeros(int(n[b, c] - k[b, c]))] for c in range(3)])
        x = np.concatenate([np.full(int(n[b, c]), xmat[c, 1]) for c in range(3)])
        np.testing.assert_allclose(beta[b], sm.Logit(y, sm.add_constant(x)).fit(disp=0).params, atol=1e-8)


def test_separation_and_missing_information_are_flagged():
    xmat = np.array([[1, 0], [1, 1.0]])
    _, _, ok = logistic.newton(
        xmat, np.array([[5, 10], [5, 0], [5, 4]]), np.array([[10, 10], [10, 0], [10, 10]])
    )
    # all successes in one cell: separation; no trials in a cell: no information; else fine.
    assert ok.tolist() == [False, False, True]
    assert (
        logistic.fit(np.column_stack([np.ones(4), [0, 0, 1, 1]]), np.array([0, 1, 1, 1.0]), ["c", "x"])
        is None
    )
