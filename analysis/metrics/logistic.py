"""Maximum-likelihood logistic regression on grouped data, vectorised over bootstrap replicates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.special import expit

from analysis.metrics.intervals import Z95

_LIMIT = 25.0  # |log-odds| beyond this is (quasi-)separation, not an estimate


@dataclass(frozen=True)
class LogisticFit:
    names: list[str]
    params: np.ndarray
    cov: np.ndarray
    loglik: float
    n: int
    converged: bool

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    def terms(self) -> list[dict]:
        """One dict per coefficient: log-odds, SE, z, p, odds ratio and its 95% Wald interval."""
        rows = []
        for name, b, se in zip(self.names, self.params, self.bse):
            z = b / se if se > 0 else None
            rows.append(
                {
                    "term": name,
                    "log_odds": float(b),
                    "se": float(se),
                    "z": None if z is None else float(z),
                    "p": None if z is None else float(2 * stats.norm.sf(abs(z))),
                    "odds_ratio": float(np.exp(b)),
                    "or_lo": float(np.exp(b - Z95 * se)),
                    "or_hi": float(np.exp(b + Z95 * se)),
                }
            )
        return rows


def newton(
    xmat: np.ndarray, k: np.ndarray, n: np.ndarray, max_iter: int = 60, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fit logit P(y=1) = xmat @ beta to k successes out of n trials per design row.

    xmat: (C, p) distinct design rows; k, n: (..., C), any leading batch shape.
    Returns beta (..., p), the information matrix (..., p, p), and a boolean `ok` (...)
    that is False where the fit did not converge, a coefficient diverged (separation) or a
    coefficient has no information (a design column with no trials)."""
    xmat = np.asarray(xmat, dtype=float)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    batch = k.shape[:-1]
    p = xmat.shape[1]
    beta = np.zeros(batch + (p,))
    ridge = 1e-10 * np.eye(p)
    info = np.zeros(batch + (p, p))
    step = np.full(batch, np.inf)
    for _ in range(max_iter):
        mu = expit(beta @ xmat.T)
        score = (k - n * mu) @ xmat
        w = n * mu * (1 - mu)
        info = np.einsum("...c,ci,cj->...ij", w, xmat, xmat)
        delta = np.linalg.solve(info + ridge, score[..., None])[..., 0]
        # A step longer than 5 log-odds units is cut (it only happens on the way to separation).
        size = np.abs(delta).max(axis=-1, keepdims=True)
        delta = np.where(size > 5, delta * 5 / np.maximum(size, 1e-300), delta)
        beta = beta + delta
        step = np.abs(delta).max(axis=-1)
        if np.all(step < tol):
            break
    mu = expit(beta @ xmat.T)
    info = np.einsum("...c,ci,cj->...ij", n * mu * (1 - mu), xmat, xmat)
    support = np.einsum("...c,ci->...i", n, np.abs(xmat))
    ok = (step < 1e-6) & np.all(np.abs(beta) < _LIMIT, axis=-1) & np.all(support > 0, axis=-1)
    return beta, info, ok


def group_rows(xmat: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Distinct design rows of xmat with successes and trials; also each row's group index."""
    xmat = np.asarray(xmat, dtype=float)
    y = np.asarray(y, dtype=float)
    rows, index = np.unique(xmat, axis=0, return_inverse=True)
    index = index.reshape(-1)
    k = np.bincount(index, weights=y, minlength=len(rows))
    n = np.bincount(index, minlength=len(rows)).astype(float)
    return rows, k, n, index


def fit(xmat: np.ndarray, y: np.ndarray, names: list[str]) -> LogisticFit | None:
    """Logistic regression of binary y on the columns of xmat (include a constant column).
    None when the model cannot be estimated (separation or a column without information)."""
    rows, k, n, _ = group_rows(xmat, y)
    if len(y) == 0 or np.linalg.matrix_rank(rows) < rows.shape[1]:
        return None
    beta, info, ok = newton(rows, k, n)
    if not ok:
        return None
    cov = np.linalg.inv(info)
    mu = expit(rows @ beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        loglik = float(
            np.sum(np.where(k > 0, k * np.log(mu), 0) + np.where(n - k > 0, (n - k) * np.log1p(-mu), 0))
        )
    return LogisticFit(list(names), beta, cov, loglik, int(len(y)), True)
