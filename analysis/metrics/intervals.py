"""Proportions with 95% Wilson score intervals, and the two-group comparison the papers use."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

Z95 = float(stats.norm.ppf(0.975))


def wilson(k: float, n: float, z: float = Z95) -> tuple[float | None, float | None, float | None]:
    """(proportion, lower, upper) of the Wilson score interval for k successes in n trials;
    (None, None, None) when n is 0."""
    if n <= 0:
        return None, None, None
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return p, min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))


def proportion(k: float, n: float) -> dict:
    """{"k", "n", "p", "lo", "hi"}: a proportion with its 95% Wilson interval."""
    p, lo, hi = wilson(k, n)
    return {"k": int(k), "n": int(n), "p": p, "lo": lo, "hi": hi}


def proportion_of(values) -> dict:
    """The proportion of True among the non-missing values of a boolean sequence."""
    a = np.asarray([v for v in values if v is not None and v == v], dtype=bool)
    return proportion(int(a.sum()), int(a.size))


def logit_difference(k1: int, n1: int, k2: int, n2: int) -> dict:
    """Compare the proportions k1/n1 and k2/n2: the difference in percentage points, and the
    Wald test of the slope of a logistic regression of the outcome on a 0/1 group indicator
    (log odds ratio, SE = sqrt(1/a + 1/b + 1/c + 1/d)). This is the test behind the p-values
    of paper 000's Tables 44-45 (it reproduces all six of them; a pooled two-proportion z test
    or Fisher's exact test does not). p is None when a cell is empty (the slope is infinite)."""
    out = {"diff_pp": None, "log_or": None, "se": None, "z": None, "p": None}
    if n1 <= 0 or n2 <= 0:
        return out
    out["diff_pp"] = 100 * (k1 / n1 - k2 / n2)
    cells = [k1, n1 - k1, k2, n2 - k2]
    if min(cells) <= 0:
        return out
    log_or = math.log(k1 / (n1 - k1)) - math.log(k2 / (n2 - k2))
    se = math.sqrt(sum(1 / c for c in cells))
    z = log_or / se
    out.update(log_or=log_or, se=se, z=z, p=float(2 * stats.norm.sf(abs(z))))
    return out
