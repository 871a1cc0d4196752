"""The GDP estimator of the white-box audit: each run's realised mu, observed exactly
(:mod:`vfl.privacy.audit`; Nasr et al. 2023, "Tight auditing of differentially private
machine learning", Sec. 4).

Under teacher forcing every Gaussian release of a run is, given the history, ``o ~ N(m,
sigma^2 I)`` under ``D`` with the neighbour's mean ``m'`` known, so its log ratio is
exactly ``N(d^2 / 2, d^2)`` with ``d = ||m - m'|| / sigma``. The run's *realised mu* is
``mu_k = sqrt(sum over releases of ||m - m'||^2 / sigma^2)``: a number computed, not
estimated. A ledger that charges every release its enforced sensitivity claims
``mu_k <= mu`` on every history, hence ``mu``-GDP (Dong, Roth and Su 2022, Thm. 3.2 and
its adaptive form).

**The assumption (G).** Given its realised ``mu_k``, a run's privacy loss is
``N(mu_k^2 / 2, mu_k^2)``: the pair's privacy-loss distribution under ``P`` is the mixture
over the realised ``mu`` of Gaussian losses. It holds exactly when no release's mean
depends on earlier noise along ``m - m'`` (one release; means fixed by the data), and
approximately when the realised ``mu`` moves little with the noise. It implies that the
standardized losses ``Z_k = (L_k - mu_k^2 / 2) / mu_k`` are i.i.d. ``N(0, 1)``; every audit
tests that (:func:`standardized_losses`, a Kolmogorov-Smirnov test), and the tests of this
package check it on every solver family.

**The bound.** Under (G), ``delta_PQ(eps) = E[delta_mu(eps)]`` (the expectation of the
mixture's hockey-stick, :func:`gdp_delta`), and since ``delta_mu`` grows with ``mu``,

    delta_PQ(eps) >= P(mu >= x) delta_x(eps) >= (1 - F(x-)) delta_x(eps)

for every ``x``. With the ``K`` realised mus sorted, ``mu_(1) <= ... <= mu_(K)``, the
number of runs below a point ``y`` with ``F(y) >= beta`` is binomial, so for any
distribution of ``mu`` (atoms included) ``P(F(mu_(j)-) > beta) <= P(Bin(K, beta) <= j - 1)``;
``beta_j``, the level-``alpha / |J|`` Clopper-Pearson upper limit, bounds ``F(mu_(j)-)`` for
every rank ``j`` of a set ``J`` fixed in advance (:data:`RANK_FRACTIONS`) at once, with
probability at least ``1 - alpha``. So, simultaneously for every ``eps`` and ``j`` in ``J``,

    delta_PQ(eps) >= (1 - beta_j) delta_{mu_(j)}(eps)                    (*)

and one event covers every claim tested against the pair: a point ``(eps, delta)`` is
refuted when the right side exceeds ``delta``; the pair is not ``mu'``-GDP for any ``mu'``
below a ``mu_(j)`` with a positive factor (the ratio of the two curves grows without bound
in ``eps``; the search stops at ``EPS_TOP_DELTA``, far in the tail but finite, so that a
mu equal to the claim up to rounding refutes nothing).

Where the samples of the hockey-stick bounds (:mod:`.bounds`) must see a tail event of
probability ``delta`` to refute at ``delta``, (*) needs no run in the tail: the tail is
read off the Gaussian, and ``K`` only sets ``t``. That is the price of (G).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy import stats
from scipy.optimize import brentq
from scipy.special import log_ndtr

from vfl.core.arrays import FloatArray, IntArray

from .. import _checks
from .bounds import AuditResult, DeltaEstimate

__all__ = [
    "EPS_TOP_DELTA",
    "GDPBound",
    "gdp_bound",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_profile_verdict",
    "gdp_verdict",
    "realised_mu",
    "standardized_losses",
]

#: the profile is searched up to the epsilon where the claimed curve falls to this delta
EPS_TOP_DELTA = 1e-30
#: the ranks ``J`` of (*): the smallest two (tight when the realised mu barely moves, as in
#: one release) and these fractions of ``K`` (when it spreads)
RANK_FRACTIONS = (0.25, 0.5, 0.75)


def realised_mu(squares: npt.ArrayLike) -> FloatArray:
    """``sqrt(sum ||m - m'||^2 / sigma^2)`` per run, from each run's summed squares."""
    q: FloatArray = np.asarray(squares, dtype=float)
    if q.ndim != 1 or q.size == 0 or not np.all(np.isfinite(q) & (q >= 0)):
        raise ValueError("the realised squares must be a non-empty 1-D array of finite numbers >= 0")
    return np.sqrt(q)


def gdp_delta(epsilon: npt.ArrayLike, mu: npt.ArrayLike) -> FloatArray:
    """``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` (Balle and Wang 2018,
    Thm. 8), broadcast over ``epsilon`` and ``mu``, in log space (exact far in the tail);
    0 where ``mu = 0``."""
    eps, mus = np.broadcast_arrays(np.asarray(epsilon, dtype=float), np.asarray(mu, dtype=float))
    out = np.zeros(eps.shape)
    ok = mus > 0
    if np.any(ok):
        e, m = eps[ok], mus[ok]
        la = log_ndtr(-e / m + m / 2.0)
        lb = log_ndtr(-e / m - m / 2.0)
        with np.errstate(divide="ignore"):
            out[ok] = np.exp(la + np.log(-np.expm1(np.minimum(e + lb - la, 0.0))))
    return out


def gdp_epsilon(delta: float, mu: float, top: float | None = None) -> float:
    """The smallest ``eps >= 0`` with ``delta_mu(eps) <= delta`` (0 if ``delta_mu(0)`` is; inf
    for ``delta = 0``: a Gaussian is no pure-DP mechanism)."""
    if mu > 0 and delta <= 0:
        return math.inf
    if mu <= 0 or gdp_delta(0.0, mu) <= delta:
        return 0.0
    hi = top if top is not None else mu * mu / 2.0 + 40.0 * mu + 1.0
    return float(
        brentq(
            lambda e: math.log(max(float(gdp_delta(e, mu)), 1e-320)) - math.log(delta), 0.0, hi, xtol=1e-12, rtol=1e-12
        )
    )


def standardized_losses(losses: npt.ArrayLike, mus: npt.ArrayLike) -> FloatArray:
    """``Z_k = (L_k - mu_k^2 / 2) / mu_k``: i.i.d. ``N(0, 1)`` under (G) (NaN where ``mu_k = 0``,
    whose loss is 0)."""
    L = np.asarray(losses, dtype=float)
    mu = np.asarray(mus, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        z: FloatArray = np.where(mu > 0, (L - mu * mu / 2.0) / mu, np.nan)
    return z


@dataclass(frozen=True)
class GDPBound:
    """(*) of the module docstring for one pair and direction: ``delta(eps) >= max_j
    factor[j] delta_{mus[j]}(eps)`` (``factor[j] = 1 - beta_j``) for every ``eps``, at level
    ``confidence``.

    ``check`` is the Kolmogorov-Smirnov p-value of the standardized losses against
    ``N(0, 1)`` (the test of assumption (G); NaN without losses or with fewer than 2 runs
    that moved anything).
    """

    mus: FloatArray
    factors: FloatArray
    confidence: float
    K: int
    check: float = math.nan
    sample: FloatArray | None = None  # every run's realised mu, sorted

    def estimate(self, epsilon: float) -> float:
        """The mixture's ``delta(eps)`` under (G): the mean of ``delta_{mu_k}(eps)`` over the
        runs (unbiased; no confidence attached)."""
        assert self.sample is not None  # gdp_bound keeps it
        return float(np.mean(gdp_delta(float(epsilon), self.sample)))

    @property
    def mu_lower(self) -> float:
        """The largest ``mu_(j)`` with a positive factor: the pair is not ``mu'``-GDP for
        any ``mu'`` below it (under (G), at ``confidence``)."""
        ok = self.factors > 0
        return float(self.mus[ok].max()) if np.any(ok) else 0.0

    def delta_lower(self, epsilon: float | npt.ArrayLike) -> FloatArray | float:
        """The lower bound of (*) at each ``epsilon``."""
        eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
        out: FloatArray
        if not np.any(self.factors > 0):
            out = np.zeros(eps.shape)
        else:
            out = (self.factors[:, None] * gdp_delta(eps[None, :], self.mus[:, None])).max(0)
        return float(out[0]) if np.ndim(epsilon) == 0 else out

    def epsilon_lower(self, delta: float) -> float:
        """``sup{eps >= 0 : delta_lower(eps) > delta}`` (0 if none): the largest epsilon
        refuted at ``delta``."""
        best = 0.0
        for mu, f in zip(self.mus, self.factors):
            if f > 0 and delta / f < 1.0:
                best = max(best, gdp_epsilon(delta / f, mu))
        return best

    def refutes(self, epsilon: float, delta: float) -> bool:
        """Whether (*) exceeds ``delta`` at ``epsilon``: the point claim is refuted."""
        return bool(self.delta_lower(float(epsilon)) > delta)


def ranks(K: int) -> IntArray:
    """The ranks ``J`` (1-based) of (*) for ``K`` runs, fixed before any run."""
    out = {1, min(2, K)} | {max(1, math.ceil(f * K)) for f in RANK_FRACTIONS}
    return np.array(sorted(out))


@lru_cache(maxsize=256)
def _factors(K: int, confidence: float) -> tuple[IntArray, FloatArray]:
    """The ranks ``J`` and ``1 - beta_j``: ``beta_j`` the level-``alpha / |J|`` Clopper-Pearson
    upper limit of ``F(mu_(j)-)``, for ``j - 1`` of ``K`` runs below ``mu_(j)``."""
    J = ranks(K)
    alpha = (1.0 - confidence) / J.size
    beta = stats.beta.ppf(1.0 - alpha, J, K - J + 1)
    return J, np.maximum(1.0 - beta, 0.0)


def gdp_bound(mus: npt.ArrayLike, confidence: float = 0.95, losses: npt.ArrayLike | None = None) -> GDPBound:
    """(*) from the realised ``mus`` of ``K`` independent runs, at level ``confidence``.

    ``losses`` (the runs' privacy losses, same order) adds the check of (G).
    """
    mu = np.sort(np.asarray(mus, dtype=float))
    if mu.ndim != 1 or mu.size == 0 or not np.all(np.isfinite(mu) & (mu >= 0)):
        raise ValueError("mus must be a non-empty 1-D array of finite numbers >= 0")
    c = _checks._real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    K = mu.size
    J, factors = _factors(K, c)
    check = math.nan
    if losses is not None:
        z = standardized_losses(losses, mus)
        z = z[np.isfinite(z)]
        if z.size >= 2:
            check = float(stats.kstest(z, "norm").pvalue)
    return GDPBound(mu[J - 1], factors, c, int(K), check, mu)


def gdp_verdict(forward: GDPBound, reverse: GDPBound | None, epsilon: float, delta: float) -> AuditResult:
    """The claim ``(epsilon, delta)`` against (*) in each direction: REFUTED when either
    direction's bound exceeds ``delta`` at ``epsilon``. ``epsilon_refuted`` is the largest
    epsilon either refutes at ``delta``. One event (*) per direction covers every claim,
    so the caller splits the confidence over pairs and directions only."""
    eps = _checks.nonnegative("epsilon", epsilon)
    delta = _checks.nonnegative("delta", delta)
    ests, refuted, best = [], False, 0.0
    for b in (forward, reverse):
        if b is None:
            continue
        lower = float(b.delta_lower(eps))
        ests.append(DeltaEstimate(eps, b.estimate(eps), lower, math.nan, b.confidence, b.K, "gdp"))
        refuted |= lower > delta
        best = max(best, b.epsilon_lower(delta))
    level = 1.0 - (1.0 - forward.confidence) * len(ests)
    return AuditResult(
        eps, delta, level, "gdp", "REFUTED" if refuted else "PASS", best, ests[0], ests[1] if len(ests) > 1 else None
    )


def gdp_profile_verdict(forward: GDPBound, reverse: GDPBound | None, mu: float) -> AuditResult:
    """The claim "the pair is ``mu``-GDP" (a Gaussian ledger's whole curve) against (*): REFUTED
    when either direction's bound exceeds the curve at some epsilon up to where the curve
    falls to :data:`EPS_TOP_DELTA`. Reported at the smallest epsilon refuted (or, when none
    is, where the bound comes closest to the curve), with the curve's delta there."""
    mu = _checks.positive("mu", mu)
    top = gdp_epsilon(EPS_TOP_DELTA, mu)
    grid = np.linspace(0.0, top, 801)
    claim = gdp_delta(grid, mu)
    with np.errstate(divide="ignore"):
        gap = np.max(
            [
                np.log(np.maximum(b.delta_lower(grid), 1e-320)) - np.log(claim)
                for b in (forward, reverse)
                if b is not None
            ],
            axis=0,
        )
    refuted = bool(np.any(gap > 0))
    # refuted: the smallest epsilon refuted (the largest delta); else the closest approach
    at = float(grid[int(np.argmax(gap > 0))] if refuted else grid[int(np.argmax(gap))])
    result = gdp_verdict(forward, reverse, at, float(gdp_delta(at, mu)))
    if refuted != result.refuted:  # (the grid point is the one that refutes: they agree)
        raise AssertionError("the profile's verdict and its point's disagree")
    return result
