"""Power chosen a priori: which bound, which profile point and which cap give the audit
most power for ``K`` runs, from the claim alone (:mod:`vfl.privacy.audit`)."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy import stats

from vfl.core.arrays import FloatArray

from .. import _checks
from .bounds import AUDIT_METHODS, _bisect, _claimed_delta, _clip, _confidence, _kl, gaussian_delta


def refutation_threshold(
    K: int, delta: float, confidence: float = 0.95, *, method: str = "kl", clip: float | None = None
) -> float:
    """The true ``delta_PQ(eps)`` at which one direction refutes ``delta`` with probability ~1/2.

    A function of ``K``, the claimed ``delta`` and the level only, never of
    the samples, so choosing a bound or an epsilon by it keeps every bound
    valid. ``"kl"`` refutes when ``Ybar > y*`` (``kl(y* || delta) = log(1/alpha)
    / K``), so about half the time when the mean is ``y*``. ``"clopper-pearson"``
    refutes when the randomized count ``B ~ Binomial(K, delta_PQ)`` reaches
    ``b*``, the smallest count whose bound exceeds ``delta``: about half the
    time at ``delta_PQ`` = the binomial's median ``b*``, i.e. ``(b* - 1/3) / K``
    (the median of a binomial lies within ``ln 2`` of ``K p``; ``1/3`` is the
    usual correction). ``"truncated-kl"`` refutes when the mean of ``min(Y,
    tau)`` exceeds ``tau`` times ``"kl"``'s threshold at ``delta / tau``: so at that
    true divergence, if truncation removes little of the mean (the choice of
    :func:`truncation_level`). Returns ``inf`` when no outcome refutes.
    """
    K = _checks.count("K", K)
    delta = _claimed_delta(delta)
    alpha = 1.0 - _confidence(confidence)
    if method == "truncated-kl":
        tau = _clip(method, clip)
        if delta >= tau:
            return math.inf
        return tau * refutation_threshold(K, delta / tau, 1.0 - alpha, method="kl")
    if method == "kl":
        c = math.log(1.0 / alpha) / K
        if _kl(1.0, delta) <= c:
            return math.inf
        return float(_bisect(np.array(delta), np.array(1.0), lambda y: _kl(y, delta) <= c)[1])
    if method == "clopper-pearson":
        sf = stats.binom.sf(np.arange(K + 1) - 1, K, delta)
        hits = np.nonzero(sf < alpha)[0]
        return math.inf if hits.size == 0 else max(float(hits[0]) - 1.0 / 3.0, 0.0) / K
    raise ValueError(f"method must be one of {AUDIT_METHODS}, got {method!r}")


def choose_bound(K: int, delta: float, confidence: float = 0.95, clip: float | None = None) -> str:
    """The bound that refutes at the smallest true divergence (:func:`refutation_threshold`).

    Decided before any sample is drawn, so the choice costs no confidence.
    Neither of the first two wins everywhere: at 95% and ``K = 30``,
    Clopper-Pearson refutes ``delta = 1e-3`` from a true divergence of 0.022
    against Chernoff-KL's 0.037, while at ``delta = 1e-5`` Chernoff-KL needs
    0.016 against 0.022. With ``clip`` (a claim with a Gaussian profile, whose
    samples :func:`truncation_level` bounds), ``"truncated-kl"`` competes too.
    """
    k = refutation_threshold(K, delta, confidence, method="kl")
    c = refutation_threshold(K, delta, confidence, method="clopper-pearson")
    best = "clopper-pearson" if c < k else "kl"
    if clip is not None and _clip("truncated-kl", clip) < 1.0:
        t = refutation_threshold(K, delta, confidence, method="truncated-kl", clip=clip)
        if t < min(c, k) * (1.0 - 1e-6):  # a cap within rounding of 1 is no gain
            best = "truncated-kl"
    return best


def truncation_level(mu: float, K: int, epsilon: float, factor: float = 2.0) -> float:
    """``tau`` for ``"truncated-kl"`` at ``epsilon``, chosen from a claimed ``mu`` and ``K`` alone.

    Under the alternative the audit is built to catch, noise off by
    ``factor`` (a ``factor mu``-GDP pair: ``L ~ N(m^2 / 2, m^2)``, ``m = factor
    mu``), ``tau`` is ``Y = (1 - e^(eps - L))_+`` at the ``1 - 1/(4K)`` quantile of
    ``L``: the ``K`` samples are expected to hold a quarter of one value above
    it, so capping there costs the mean almost nothing while the range shrinks
    from 1 to ``tau``. Never a function of the samples, so any bound at this
    ``tau`` stays valid. Returns 1 (no cap) when that quantile is below
    ``epsilon`` or ``tau`` would not shrink the range.
    """
    mu = _checks.positive("mu", mu)
    K = _checks.count("K", K)
    eps = _checks.nonnegative("epsilon", epsilon)
    m = factor * mu
    top = m * m / 2.0 + stats.norm.isf(1.0 / (4.0 * K)) * m
    if not top > eps:
        return 1.0
    return float(min(-math.expm1(eps - top), 1.0))


def powerful_epsilon(
    mu: float,
    K: int,
    epsilon_max: float,
    confidence: float = 0.95,
    *,
    method: str = "kl",
    factor: float = 2.0,
    claimed: Callable[[FloatArray], npt.ArrayLike] | None = None,
) -> float:
    """The point of a claimed ``mu``-GDP profile where an audit of ``K`` runs has most power.

    A claim that a mechanism's pairs are ``mu``-GDP (a Gaussian ledger)
    claims the whole curve ``delta_mu(eps)`` (:func:`gaussian_delta`), not
    only the printed point. At a small printed epsilon the printed delta
    sits far in the tail, where ``K`` runs see no violation unless the noise
    is off by a large factor. This picks, on a grid of ``[0, epsilon_max]``,
    the epsilon that maximizes ``(delta_alt(e) - threshold(e)) / sd``:
    ``delta_alt`` the profile of ``factor * mu`` (noise off by ``factor``),
    ``threshold`` :func:`refutation_threshold` at the claimed
    ``delta_mu(e)``, ``sd`` the binomial standard deviation of a mean of
    ``K`` draws. It depends on ``mu``, ``K`` and the level only, never on
    the samples, so testing the claim ``(e, delta_mu(e))`` there is as
    valid as testing the printed point.

    ``claimed`` (a function of an array of epsilons) replaces ``delta_mu`` as
    the claimed curve: a ledger that is not one Gaussian (Laplace releases
    composed by RDP) claims its own profile, and ``mu`` is then only its
    Gaussian equivalent, for the alternative.
    """
    mu = _checks.positive("mu", mu)
    K = _checks.count("K", K)
    top = _checks.positive("epsilon_max", epsilon_max)
    grid = np.linspace(top / 200.0, top, 200)
    curve = gaussian_delta(grid, 1.0 / mu) if claimed is None else np.asarray(claimed(grid), dtype=float)
    alt = gaussian_delta(grid, 1.0 / (factor * mu))
    thresholds = np.array(
        [refutation_threshold(K, float(min(d, 1.0 - 1e-12)), confidence, method=method) for d in np.atleast_1d(curve)]
    )
    sd = np.sqrt(np.maximum(alt * (1.0 - alt), 1e-300) / K)
    score = (alt - thresholds) / sd
    return float(grid[int(np.argmax(score))])


def family_level(confidence: float, pairs: int, claims: int = 1, directions: int = 2) -> float:
    """The level of each one-sided test so that the whole family errs with probability at
    most ``1 - confidence`` (Bonferroni): every pair, each of its directions and each claim
    tested separately (``claims = 1`` for an estimator whose one event covers every claim,
    :func:`vfl.privacy.audit.gdp_bound`). A verdict of REFUTED anywhere in the family, and
    every lower bound it prints, then hold at ``confidence`` together."""
    conf = _confidence(confidence)
    n = _checks.count("pairs", pairs) * _checks.count("claims", claims) * _checks.count("directions", directions)
    return 1.0 - (1.0 - conf) / n
