"""Mixed-effects logistic regression with a random intercept per participant, by maximum likelihood.

It is fitted with adaptive Gauss–Hermite quadrature (the estimator of R's lme4::glmer, which
uses the Laplace approximation, i.e. one quadrature node, by default).

    logit P(y_ij = 1 | u_i) = x_ij' beta + u_i,   u_i ~ N(0, sigma^2)

The marginal likelihood of participant i is the one-dimensional integral of the product of
their Bernoulli likelihoods over u_i; it is computed with `nodes` Gauss–Hermite nodes centred
at the mode of the integrand and scaled by its curvature, which is essentially exact with
20 nodes for the few judgements a participant makes. The fixed effects and sigma maximise the
summed log-likelihood (L-BFGS-B, sigma >= 0); their covariance is the inverse of the
numerical Hessian of the log-likelihood. When the maximum is at sigma = 0 the model is the
plain logistic regression, which is then returned exactly (with its own covariance).

Why not statsmodels' BinomialBayesMixedGLM: it is a Bayesian model (normal priors on the
fixed effects and on log sigma) fitted by a variational or MAP approximation, so its odds
ratios are shrunk and its intervals are posterior intervals; the paper reports frequentist
odds ratios with 95% Wald intervals and p-values, which is what glmer-style ML gives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats
from scipy.special import expit, log_expit

from analysis.metrics import logistic
from analysis.metrics.intervals import Z95

METHOD = "ML, adaptive Gauss-Hermite quadrature ({nodes} nodes), random intercept per participant"


@dataclass(frozen=True)
class MixedFit:
    names: list[str]
    params: np.ndarray
    cov: np.ndarray
    sigma: float
    sigma_se: float | None
    loglik: float
    n_obs: int
    n_groups: int
    converged: bool
    method: str

    @property
    def bse(self) -> np.ndarray:
        return np.sqrt(np.diag(self.cov))

    def terms(self) -> list[dict]:
        rows = []
        for name, b, se in zip(self.names, self.params, self.bse):
            ok = np.isfinite(se) and se > 0
            z = b / se if ok else None
            rows.append(
                {
                    "term": name,
                    "log_odds": float(b),
                    "se": float(se) if ok else None,
                    "z": None if z is None else float(z),
                    "p": None if z is None else float(2 * stats.norm.sf(abs(z))),
                    "odds_ratio": float(np.exp(b)),
                    "or_lo": float(np.exp(b - Z95 * se)) if ok else None,
                    "or_hi": float(np.exp(b + Z95 * se)) if ok else None,
                }
            )
        return rows

    @property
    def icc(self) -> float:
        """Share of latent-scale variance between participants: sigma^2 / (sigma^2 + pi^2/3)."""
        return self.sigma**2 / (self.sigma**2 + np.pi**2 / 3)


class _Likelihood:
    """Marginal log-likelihood and its gradient for data sorted by group."""

    def __init__(self, xmat: np.ndarray, y: np.ndarray, groups: np.ndarray, nodes: int):
        codes, group = np.unique(np.asarray(groups), return_inverse=True)
        order = np.argsort(group.reshape(-1), kind="stable")
        self.xmat = np.asarray(xmat, dtype=float)[order]
        self.y = np.asarray(y, dtype=float)[order]
        self.g = group.reshape(-1)[order]
        self.n_groups = len(codes)
        self.starts = np.flatnonzero(np.r_[True, np.diff(self.g) != 0])
        self.x, w = np.polynomial.hermite.hermgauss(nodes)
        self.logw = np.log(w) + self.x**2

    def _sum(self, values: np.ndarray) -> np.ndarray:
        return np.add.reduceat(values, self.starts, axis=0)

    def _modes(self, eta: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        z = np.zeros(self.n_groups)
        for _ in range(100):
            mu = expit(eta + sigma * z[self.g])
            d1 = sigma * self._sum(self.y - mu) - z
            d2 = -(sigma**2) * self._sum(mu * (1 - mu)) - 1
            step = d1 / d2
            z = z - step
            if np.max(np.abs(step)) < 1e-12:
                break
        mu = expit(eta + sigma * z[self.g])
        curvature = sigma**2 * self._sum(mu * (1 - mu)) + 1
        return z, 1 / np.sqrt(curvature)

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        beta, sigma = theta[:-1], float(theta[-1])
        eta = self.xmat @ beta
        zhat, scale = self._modes(eta, sigma)
        znodes = zhat[:, None] + np.sqrt(2) * scale[:, None] * self.x[None, :]  # (n_groups, K)
        lin = eta[:, None] + sigma * znodes[self.g]  # (N, K)
        loglik_obs = np.where(self.y[:, None] > 0.5, log_expit(lin), log_expit(-lin))
        h = self._sum(loglik_obs) - znodes**2 / 2 + self.logw[None, :]
        top = h.max(axis=1)
        lse = top + np.log(np.exp(h - top[:, None]).sum(axis=1))
        total = float(np.sum(np.log(scale) - 0.5 * np.log(np.pi) + lse))
        post = np.exp(h - lse[:, None])[self.g]  # (N, K): posterior weight of each node
        resid = self.y[:, None] - expit(lin)
        grad_beta = self.xmat.T @ (post * resid).sum(axis=1)
        grad_sigma = float(np.sum(post * resid * znodes[self.g]))
        return total, np.r_[grad_beta, grad_sigma]


def marginal_loglik(xmat, y, groups, beta, sigma: float, nodes: int = 20) -> float:
    """The marginal log-likelihood of the random-intercept model at (beta, sigma)."""
    return _Likelihood(xmat, y, groups, nodes)(np.r_[np.asarray(beta, dtype=float), sigma])[0]


def fit_random_intercept(
    xmat: np.ndarray, y: np.ndarray, groups, names: list[str], nodes: int = 20
) -> MixedFit | None:
    """Fit the random-intercept logistic model (xmat includes the constant column). None when
    even the plain logistic regression cannot be estimated (e.g. separation)."""
    xmat = np.asarray(xmat, dtype=float)
    y = np.asarray(y, dtype=float)
    plain = logistic.fit(xmat, y, names)
    if plain is None:
        return None
    like = _Likelihood(xmat, y, groups, nodes)
    method = METHOD.format(nodes=nodes)

    def boundary() -> MixedFit:
        return MixedFit(
            list(names), plain.params, plain.cov, 0.0, None, plain.loglik, len(y), like.n_groups, True, method
        )

    # At sigma = 0 the log-likelihood is flat in sigma and its slope in sigma^2 is
    # 1/2 * sum_i [(sum_j r_ij)^2 - sum_j w_ij]; if that is <= 0, sigma = 0 is a maximum.
    mu = expit(like.xmat @ plain.params)
    r = like._sum(like.y - mu)
    w = like._sum(mu * (1 - mu))
    slope_at_zero = 0.5 * float(np.sum(r**2 - w))

    def objective(theta):
        value, grad = like(theta)
        return -value, -grad

    start = np.r_[plain.params, 1.0]
    bounds = [(None, None)] * len(names) + [(0.0, 50.0)]
    result = optimize.minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": 500, "gtol": 1e-7, "ftol": 1e-13},
    )
    theta = result.x
    loglik = -float(result.fun)
    if slope_at_zero <= 0 and loglik <= plain.loglik + 1e-7:
        return boundary()
    if theta[-1] < 1e-4 or loglik <= plain.loglik + 1e-9:
        return boundary()
    hessian = _hessian(lambda t: like(t)[1], theta)
    try:
        cov_all = np.linalg.inv(-hessian)
    except np.linalg.LinAlgError:
        return None
    cov = cov_all[:-1, :-1]
    sigma_var = cov_all[-1, -1]
    gradient = like(theta)[1]
    converged = bool(result.success or np.max(np.abs(gradient)) < 1e-3)
    return MixedFit(
        list(names),
        theta[:-1],
        cov,
        float(theta[-1]),
        float(np.sqrt(sigma_var)) if sigma_var > 0 else None,
        loglik,
        len(y),
        like.n_groups,
        converged,
        method,
    )


def _hessian(gradient, theta: np.ndarray) -> np.ndarray:
    """Central differences of the analytic gradient, symmetrised."""
    p = len(theta)
    hess = np.zeros((p, p))
    for i in range(p):
        h = 1e-5 * max(1.0, abs(theta[i]))
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        hess[:, i] = (gradient(up) - gradient(down)) / (2 * h)
    return (hess + hess.T) / 2
