"""Win matrices and Bradley–Terry rankings of interlocutors (paper 003 §5).

Pure functions over (interlocutor 1, interlocutor 2, winner) outcomes, with bootstrap intervals that
resample comparisons (aggregated into win matrices with numpy, never per comparison)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

ALPHA = 0.01  # the paper's I-LSR regularisation
WINNERS = {"1": 0, "2": 1, "tie": 2}  # outcome codes: first wins, second wins, tie


@dataclass(frozen=True)
class Ranking:
    labels: list[str]
    wins: np.ndarray  # wins[i, j]: times labels[i] was judged more persuasive than labels[j]
    strengths: np.ndarray  # Bradley–Terry log-strengths, mean 0

    def ordered(self) -> list[tuple[str, float]]:
        order = np.argsort(-self.strengths, kind="stable")
        return [(self.labels[i], float(self.strengths[i])) for i in order]


def win_matrix(
    outcomes: Iterable[tuple[str, str, str]], labels: list[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """outcomes: (interlocutor_1, interlocutor_2, winner) with winner '1', '2' or 'tie'.
    A tie adds half a win to each side."""
    outcomes = list(outcomes)
    labels = labels or sorted({x for a, b, _ in outcomes for x in (a, b)})
    index = {label: n for n, label in enumerate(labels)}
    codes = []
    for _, _, winner in outcomes:
        if winner not in WINNERS:
            raise ValueError(f"winner must be '1', '2' or 'tie', got {winner!r}")
        codes.append(WINNERS[winner])
    first = np.array([index[a] for a, _, _ in outcomes], dtype=int)
    second = np.array([index[b] for _, b, _ in outcomes], dtype=int)
    return labels, win_matrix_codes(first, second, np.array(codes, dtype=int), len(labels))


def win_matrix_codes(first: np.ndarray, second: np.ndarray, codes: np.ndarray, n: int) -> np.ndarray:
    """Win matrix from index arrays: codes 0 (first wins), 1 (second wins), 2 (tie, half a
    win each)."""
    first, second, codes = (np.asarray(a, dtype=int) for a in (first, second, codes))
    flat = np.zeros(n * n)
    ij, ji = first * n + second, second * n + first
    flat += np.bincount(ij, weights=(codes == 0) + 0.5 * (codes == 2), minlength=n * n)
    flat += np.bincount(ji, weights=(codes == 1) + 0.5 * (codes == 2), minlength=n * n)
    return flat.reshape(n, n)


def fit_strengths(wins: np.ndarray, alpha: float = ALPHA, initial: np.ndarray | None = None) -> np.ndarray:
    """Bradley–Terry log-strengths by I-LSR (choix), centred to mean 0."""
    import choix

    if len(wins) < 2 or wins.sum() == 0:
        return np.zeros(len(wins))
    strengths = choix.ilsr_pairwise_dense(np.asarray(wins, dtype=float), alpha=alpha, initial_params=initial)
    return strengths - strengths.mean()


def bradley_terry(labels: list[str], wins: np.ndarray, alpha: float = ALPHA) -> Ranking:
    """Strengths by I-LSR (Maystre & Grossglauser 2015) with regularisation alpha, as the
    paper fits them with `choix`."""
    return Ranking(labels, wins, fit_strengths(wins, alpha))


def ranks(strengths: np.ndarray, decimals: int = 9) -> np.ndarray:
    """Rank 1 for the strongest; equal strengths (to `decimals`) share their mean rank."""
    return rankdata(-np.round(np.asarray(strengths, dtype=float), decimals), method="average")


def bootstrap_win_matrices(
    first: np.ndarray,
    second: np.ndarray,
    codes: np.ndarray,
    n: int,
    replicates: int,
    rng: np.random.Generator,
):
    """Yield batches of bootstrap win matrices (batch, n, n), each from N comparisons drawn
    with replacement. Resampling comparisons is drawing multinomial counts over the distinct
    (pair, outcome) categories, which is what is done, in one call per batch."""
    first, second, codes = (np.asarray(a, dtype=int) for a in (first, second, codes))
    total = len(codes)
    category = (first * n + second) * 3 + codes
    cats, counts = np.unique(category, return_counts=True)
    pair, code = cats // 3, cats % 3
    i, j = pair // n, pair % n
    ij, ji = i * n + j, j * n + i
    probabilities = counts / total
    batch = max(1, min(replicates, 4_000_000 // max(n * n + len(cats), 1)))
    done = 0
    while done < replicates:
        size = min(batch, replicates - done)
        drawn = rng.multinomial(total, probabilities, size=size).astype(float)
        flat = np.zeros((size, n * n))
        for c, targets, weight in ((0, ij, 1.0), (1, ji, 1.0), (2, ij, 0.5), (2, ji, 0.5)):
            mask = code == c
            if mask.any():
                # Within one outcome code each pair occurs once, so the targets are distinct.
                flat[:, targets[mask]] += weight * drawn[:, mask]
        yield flat.reshape(size, n, n)
        done += size


def bootstrap_strengths(
    first: np.ndarray,
    second: np.ndarray,
    codes: np.ndarray,
    n: int,
    replicates: int,
    rng: np.random.Generator,
    alpha: float = ALPHA,
    initial: np.ndarray | None = None,
) -> np.ndarray:
    """(replicates, n) Bradley–Terry strengths refitted on resampled comparisons."""
    out = np.zeros((replicates, n))
    row = 0
    for batch in bootstrap_win_matrices(first, second, codes, n, replicates, rng):
        for wins in batch:
            out[row] = fit_strengths(wins, alpha, initial)
            row += 1
    return out
