"""Private hyper-parameter tuning: random search with a random number of trials.

Papernot and Steinke, *Hyperparameter Tuning with Renyi Differential Privacy* (ICLR
2022). Run K trials, K drawn from the truncated negative binomial distribution
``D_{eta, gamma}`` on {1, 2, ...}; each trial picks a candidate uniformly at random and
runs the private algorithm Q on the private data; output the best trial (scored on data
the relation does not protect). Theorem 2: if Q is ``(lam, eps(lam))``-RDP and
``(lam^, eps(lam^))``-RDP, the tuning is ``(lam, eps')``-RDP with

    eps' = eps(lam) + (1 + eta) (1 - 1/lam^) eps(lam^) + (1 + eta) log(1/gamma) / lam^
           + log(E[K]) / (lam - 1),

minimised over ``lam^ >= 1``. ``eta = 0`` is the logarithmic distribution,
``P[K = k] = (1 - gamma)^k / (k log(1/gamma))``, ``E[K] = (1/gamma - 1) / log(1/gamma)``;
``eta = 1`` the geometric one, ``E[K] = 1/gamma``.

A trial here is a Gaussian mechanism of GDP parameter ``mu`` (the worst candidate's;
every release of the solvers tuned is Gaussian), so ``eps(lam) = lam mu^2 / 2`` and the
minimum over ``lam^`` has a closed form.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from vfl.core.arrays import FloatArray

__all__ = ["expected_trials", "gamma_for_mean", "draw_trials", "tuning_rdp"]


def expected_trials(eta: float, gamma: float) -> float:
    """``E[K]`` of ``D_{eta, gamma}``."""
    if not 0.0 < gamma < 1.0:
        raise ValueError(f"gamma must be in (0, 1), got {gamma!r}")
    if eta == 0:
        return (1.0 / gamma - 1.0) / math.log(1.0 / gamma)
    return float(eta * (1.0 - gamma) / (gamma * (1.0 - gamma**eta)))


def gamma_for_mean(mean: float, eta: float = 0.0) -> float:
    """The ``gamma`` whose ``D_{eta, gamma}`` has ``E[K] = mean`` (> 1), by bisection."""
    if not mean > 1.0:
        raise ValueError(f"the expected number of trials must be > 1, got {mean!r}")
    lo, hi = 1e-12, 1.0 - 1e-12  # E[K] falls from +inf to 1 as gamma rises
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if expected_trials(eta, mid) > mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def draw_trials(eta: float, gamma: float, rng: np.random.Generator) -> int:
    """One draw of K from ``D_{eta, gamma}`` (``eta`` 0 or a positive number)."""
    if eta == 0:
        return int(rng.logseries(1.0 - gamma))
    while True:  # the negative binomial conditioned on K >= 1
        k = int(rng.negative_binomial(eta, gamma))
        if k >= 1:
            return k


def tuning_rdp(orders: npt.ArrayLike, mu: float, eta: float, gamma: float) -> FloatArray:
    """The tuning's RDP ``eps'(lam)`` at each order ``lam > 1`` (Theorem 2, a mu-GDP Q)."""
    lam = np.asarray(orders, dtype=float)
    if mu < 0 or not math.isfinite(mu):
        raise ValueError(f"mu must be a finite number >= 0, got {mu!r}")
    log_inv_gamma = math.log(1.0 / gamma)
    # min over lam^ >= 1 of (lam^ - 1) mu^2 / 2 + log(1/gamma) / lam^
    hat = max(1.0, math.sqrt(2.0 * log_inv_gamma) / mu) if mu > 0 else math.inf
    inner = (
        log_inv_gamma if hat == 1.0 else (0.0 if math.isinf(hat) else (hat - 1.0) * mu**2 / 2.0 + log_inv_gamma / hat)
    )
    return lam * mu**2 / 2.0 + (1.0 + eta) * inner + math.log(expected_trials(eta, gamma)) / (lam - 1.0)
