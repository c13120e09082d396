"""Distance and agreement between two rankings of the same items (paper 003, Table 4).

Kendall's tau distance normalised by n(n-1)/2, Spearman's footrule normalised by
floor(n^2/2), and ordinal and nominal Krippendorff's alpha over the two rank vectors.

A ranking is a dict name -> rank (lower is better; equal ranks are ties) or a sequence of
names, best first, in which an element may be a list, tuple or set of tied names. Ranks are
turned into mid-ranks 1..n (tied items share the mean of their positions). Only the items in
both rankings are compared. With ties, a pair tied in exactly one ranking counts half a
discordance in Kendall's distance (Fagin et al.'s K^(1/2)); a pair tied in both counts none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.stats import rankdata

Ranked = Mapping[str, float] | Sequence


def as_ranks(ranking: Ranked) -> dict[str, float]:
    """Mid-ranks 1..n of a ranking given as a dict name -> rank or as an ordered sequence."""
    if isinstance(ranking, Mapping):
        names = list(ranking)
        values = np.array([float(ranking[k]) for k in names])
    else:
        names, values = [], []
        for position, item in enumerate(ranking):
            group = sorted(item) if isinstance(item, set | frozenset) else item
            group = list(group) if isinstance(group, list | tuple) else [group]
            names += [str(x) for x in group]
            values += [position] * len(group)
        values = np.array(values, dtype=float)
    if len(set(names)) != len(names):
        raise ValueError("a ranking names an item twice")
    return dict(zip(names, rankdata(values, method="average").tolist())) if names else {}


def _common(a: Ranked, b: Ranked) -> tuple[list[str], np.ndarray, np.ndarray, dict]:
    ra, rb = as_ranks(a), as_ranks(b)
    items = sorted(set(ra) & set(rb))
    # Re-rank on the common items so that both are rankings of the same n items.
    x = rankdata([ra[i] for i in items], method="average") if items else np.array([])
    y = rankdata([rb[i] for i in items], method="average") if items else np.array([])
    missing = {"only_in_a": sorted(set(ra) - set(rb)), "only_in_b": sorted(set(rb) - set(ra))}
    return items, np.asarray(x, dtype=float), np.asarray(y, dtype=float), missing


def kendall_tau_distance(a: Ranked, b: Ranked) -> float | None:
    """Discordant pairs (ties in one ranking only: 1/2) divided by n(n-1)/2; 0 = same order,
    1 = reversed. None for fewer than two common items."""
    _, x, y, _ = _common(a, b)
    n = len(x)
    if n < 2:
        return None
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    discordant = (dx * dy < 0) & upper
    half = ((dx == 0) != (dy == 0)) & upper
    return float((discordant.sum() + 0.5 * half.sum()) / (n * (n - 1) / 2))


def footrule_distance(a: Ranked, b: Ranked) -> float | None:
    """Sum of |rank_a - rank_b| over the items divided by floor(n^2 / 2), its maximum over
    permutations (reached by a reversed order). None for fewer than two common items."""
    _, x, y, _ = _common(a, b)
    n = len(x)
    if n < 2:
        return None
    return float(np.abs(x - y).sum() / (n * n // 2))


def krippendorff_alpha(a: Ranked, b: Ranked, level: str = "ordinal") -> float | None:
    """Krippendorff's alpha (`krippendorff` package) treating the two rankings as two coders
    and the items as units, the ranks being the values. None when undefined (fewer than two
    items, or a single value overall)."""
    import krippendorff

    _, x, y, _ = _common(a, b)
    if len(x) < 2 or len(np.unique(np.r_[x, y])) < 2:
        return None
    value = krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement=level)
    return float(value) if np.isfinite(value) else None


def compare_rankings(a: Ranked, b: Ranked) -> dict:
    """All four measures between two rankings, with the number of common items and the items
    only one ranking has."""
    items, _, _, missing = _common(a, b)
    return {
        "n": len(items),
        "kendall_tau_distance": kendall_tau_distance(a, b),
        "footrule_distance": footrule_distance(a, b),
        "alpha_ordinal": krippendorff_alpha(a, b, "ordinal"),
        "alpha_nominal": krippendorff_alpha(a, b, "nominal"),
        **missing,
    }
