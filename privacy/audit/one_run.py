"""The one-run audit of Steinke, Nasr and Jagielski (NeurIPS 2023) (:mod:`vfl.privacy.audit`)."""

from __future__ import annotations

import numpy as np
from scipy import stats
from scipy.special import expit

from vfl.core.arrays import FloatArray

from .. import _checks
from .bounds import _claimed_delta, _confidence


def one_run_p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P-value of ``v`` correct guesses out of ``r`` under "(epsilon, delta)-DP" (one-run audit).

    Steinke, Nasr and Jagielski (2023), "Privacy Auditing with One (1)
    Training Run", main theorem (approximate DP): ``m`` canaries are each
    included independently with probability 1/2; after one run the auditor
    guesses in/out for ``r`` of them (a number fixed in advance; it abstains
    on the rest) and ``W`` guesses are right. If the algorithm is
    ``(epsilon, delta)``-DP with respect to adding or removing one canary,

        P[W >= v] <= beta + 2 m delta * max_{1<=i<=v} P[v - i <= W~ < v] / i,

    ``beta = P[W~ >= v]``, ``W~ ~ Binomial(r, e^eps / (1 + e^eps))`` (the
    accuracy of eps-randomized response); the ``delta`` term is their
    correction, which grows with ``m``, not ``r``. With ``delta = 0`` this
    is the pure-DP bound (tight for randomized response). Returns the bound,
    capped at 1.
    """
    m, r, v = _guesses(m, r, v)
    eps = _checks.nonnegative("epsilon", epsilon)
    delta = _claimed_delta(delta)
    return float(_one_run_p(m, r, v, np.array([eps]), delta)[0])


def one_run_epsilon(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """Lower bound on epsilon from ``v`` correct of ``r`` guesses on ``m`` canaries (one run).

    ``inf{eps >= 0 : one_run_p_value(m, r, v, eps, delta) >= 1 - confidence}``:
    every smaller epsilon is rejected by the test of
    :func:`one_run_p_value`, so with probability at least ``confidence`` the
    algorithm's true epsilon at ``delta`` is at least this value. The
    infimum (not a plain bisection, which assumes the p-value monotone in
    epsilon) is found by scanning a 256-point grid up to where the binomial
    term alone reaches ``alpha``, then bisecting the first crossing.
    Returns 0 when ``v`` is no better than chance.
    """
    m, r, v = _guesses(m, r, v)
    delta = _claimed_delta(delta)
    alpha = 1.0 - _confidence(confidence)
    if _one_run_p(m, r, v, np.array([0.0]), delta)[0] >= alpha:
        return 0.0
    # beta(eps) alone reaches alpha somewhere (v <= r, beta -> 1), so p does.
    hi = 1.0
    while stats.binom.sf(v - 1, r, expit(hi)) < alpha:
        hi *= 2.0
    grid = np.linspace(0.0, hi, 257)
    p = _one_run_p(m, r, v, grid, delta)
    k = int(np.argmax(p >= alpha))  # first grid point not rejected; k >= 1
    lo, hi = grid[k - 1], grid[k]
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if _one_run_p(m, r, v, np.array([mid]), delta)[0] < alpha:
            lo = mid
        else:
            hi = mid
    return float(lo)


# ------------------------------------------------------------- helpers --
def _guesses(m: object, r: object, v: object) -> tuple[int, int, int]:
    canaries = _checks.count("m", m)
    counts = []
    for name, x in (("r", r), ("v", v)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {x!r}")
        counts.append(int(x))
    guessed, right = counts
    if not right <= guessed <= canaries:
        raise ValueError(f"need 0 <= v <= r <= m, got m={canaries}, r={r}, v={v}")
    return canaries, guessed, right


def _one_run_p(m: int, r: int, v: int, eps: FloatArray, delta: float) -> FloatArray:
    """The bound of :func:`one_run_p_value` on a vector of epsilons."""
    if v == 0:
        return np.ones_like(eps)
    q = expit(eps)[:, None]
    beta = stats.binom.sf(v - 1, r, q[:, 0])
    if delta > 0:
        # window sums P[v - i <= W~ <= v - 1] for i = 1..v, summed from the top down
        # (accurate even where the binomial cdf is close to 1); rows in chunks of
        # at most ~4e6 entries
        j = np.arange(v - 1, -1, -1)[None, :]
        i = np.arange(1, v + 1)[None, :]
        step = max(1, 4_000_000 // v)
        window = np.concatenate(
            [
                (np.cumsum(stats.binom.pmf(j, r, q[k : k + step]), axis=1) / i).max(axis=1)
                for k in range(0, len(q), step)
            ]
        )
        beta = beta + 2.0 * m * delta * window
    p: FloatArray = np.minimum(beta, 1.0)  # scipy's binomial tails are untyped
    return p
