"""The hockey-stick divergence from privacy-loss samples, its one-sided bounds and the
verdict on a claimed ``(epsilon, delta)`` (:mod:`vfl.privacy.audit`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import stats
from scipy.optimize import brentq

from vfl.core.arrays import BoolArray, FloatArray
from vfl.core.gaussian import log_delta as _analytic_log_delta

from .. import _checks

#: confidence-bound methods of :func:`estimate_delta` (see its docstring)
AUDIT_METHODS = ("kl", "clopper-pearson", "truncated-kl")

_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
_BISECTIONS = 200  # halvings of [0, 1]: far below float resolution at any scale


# ------------------------------------------- hockey-stick divergence --
def hockey_stick_samples(losses: npt.ArrayLike, epsilon: float | npt.ArrayLike) -> FloatArray:
    """``Y_i = (1 - e^(eps - L_i))_+ in [0, 1]``, whose mean under P is ``delta_PQ(eps)``.

    ``delta_PQ(eps) = sup_S P(S) - e^eps Q(S) = E_P[(1 - e^(eps - L))_+]``
    with ``L = log dP/dQ`` (the optimal ``S`` is ``{L > eps}``).
    ``epsilon`` may be a scalar (shape ``(K,)``) or a 1-D array (shape
    ``(len(epsilon), K)``).
    """
    L = _losses(losses)
    Y = _y(L, _epsilons(epsilon))
    return Y[0] if np.ndim(epsilon) == 0 else Y


@dataclass(frozen=True)
class DeltaEstimate:
    """``delta_PQ(eps)`` from ``K`` samples of ``L`` under P, with one-sided bounds.

    ``estimate`` is the unbiased sample mean of ``(1 - e^(eps - L))_+``;
    ``lower`` and ``upper`` are each one-sided bounds at level
    ``confidence`` (see the module docstring for their exact meaning). With
    ``"clopper-pearson"`` the bounds come from the randomized count, not from
    ``estimate``, and need not bracket it. The fields are floats for a
    scalar ``epsilon`` and arrays for an array.
    """

    epsilon: float | FloatArray
    estimate: float | FloatArray
    lower: float | FloatArray
    upper: float | FloatArray
    confidence: float
    K: int
    method: str


def estimate_delta(
    losses: npt.ArrayLike,
    epsilon: float | npt.ArrayLike,
    confidence: float = 0.95,
    *,
    method: str = "kl",
    rng: np.random.Generator | None = None,
    clip: float | None = None,
) -> DeltaEstimate:
    """Estimate ``delta_PQ(eps)`` from samples ``L_i ~ P`` with one-sided confidence bounds.

    The ``Y_i = (1 - e^(eps - L_i))_+`` are i.i.d. in ``[0, 1]`` with mean
    ``delta_PQ(eps)``. Three ways to bound that mean, ``alpha = 1 -
    confidence``:

    ``"kl"`` (default): the Chernoff-Hoeffding bound in Kullback-Leibler form,
        ``P(Ybar >= p + t) <= exp(-K kl(p + t || p))``, valid for *any*
        variables in ``[0, 1]`` (Hoeffding 1963, Thm. 1; the Bernoulli is
        the worst case), and its mirror for the lower tail. Inverted:
        ``lower = min{p <= Ybar : K kl(Ybar || p) <= log(1/alpha)}``, ``upper``
        likewise above ``Ybar``. Deterministic in the samples, monotone in
        ``Ybar`` (so the epsilon search of :func:`epsilon_lower_bound` stays
        valid), and tight where an audit needs it, at means near 0: with no
        positive ``Y`` the upper bound is ``1 - alpha^(1/K)``, exactly
        Clopper-Pearson's. It is conservative when the ``Y_i`` are spread
        inside ``(0, 1)`` (coverage close to 1 rather than ``confidence``).
        Chosen over empirical Bernstein (Maurer-Pontil 2009), whose
        ``7 log(2/alpha) / (3 (K-1))`` term keeps the lower bound at 0 until
        ``Ybar`` exceeds about 0.03 at ``K = 300``: useless against the
        claimed deltas (1e-5) an audit tests.

    ``"truncated-kl"``: the lower bound of ``"kl"`` applied to
        ``min(Y_i, tau) / tau``, times ``tau`` (``clip``, in ``(0, 1]``,
        fixed before the samples are seen: :func:`truncation_level`). Valid
        because ``E min(Y, tau) <= E Y``; its slack is the range. ``"kl"``
        must allow a rare ``Y_i`` near 1, so at a mean ``delta`` it assumes
        a Bernoulli's variance ``delta (1 - delta)``. The white-box samples of
        a mechanism close to its claim spread far less: a ``mu``-GDP pair
        with ``mu = 4e-4`` has ``Y ~ mu Z_+``, sd ``2.3e-4`` at a mean of
        ``1.6e-4``. Capping at ``tau`` of a few ``mu`` makes the worst case's
        variance ``tau delta``, and the runs needed to separate two deltas
        shrink by the factor ``tau`` (from about 2e5 to about 1000 there). The
        upper bound is ``"kl"``'s (truncation bounds the mean from below only).

    ``"clopper-pearson"``: draws ``U_i ~ Uniform(0, 1)`` from ``rng`` and
        counts ``B = #{U_i < Y_i}``, exactly ``Binomial(K, delta_PQ(eps))``;
        the exact Clopper-Pearson bounds of ``B`` are then valid with
        coverage close to nominal and usually tighter than ``"kl"`` where
        ``delta`` is not tiny (at claimed deltas near 1e-5 neither has more
        power throughout), at the price of extra randomness: results depend
        on ``rng`` (pass the run's ``"audit"`` stream) and cannot be
        recomputed from the losses alone. The same ``U_i`` serve every
        ``epsilon`` of one call, so the bounds are monotone in ``epsilon``.

    ``epsilon`` may be a scalar or a 1-D array (a whole curve).
    """
    L = _losses(losses)
    eps = _epsilons(epsilon)
    alpha = 1.0 - _confidence(confidence)
    u = _uniforms(method, rng, L.size)
    est, lower, upper = _delta_bounds(L, eps, alpha, u, _clip(method, clip))
    scalar = np.ndim(epsilon) == 0
    pick: Callable[[FloatArray], float | FloatArray] = (lambda a: float(a[0])) if scalar else (lambda a: a)
    return DeltaEstimate(pick(eps), pick(est), pick(lower), pick(upper), float(1.0 - alpha), int(L.size), method)


@dataclass(frozen=True)
class LossSummary:
    """The sampled privacy-loss distribution: ``K``, mean (= KL(P||Q)), std, quantiles."""

    K: int
    mean: float
    std: float
    minimum: float
    maximum: float
    quantiles: dict[float, float] = field(default_factory=dict)


def summarize_losses(losses: npt.ArrayLike, quantiles: npt.ArrayLike = _QUANTILES) -> LossSummary:
    """Mean, standard deviation (``ddof=1``), extremes and quantiles of the sampled ``L``.

    Compare with :func:`gaussian_loss_moments` for a claimed Gaussian: its
    loss is ``N(mu^2/2, mu^2)``; a real mechanism's pair may move the mean by
    less than the sensitivity, giving a smaller loss, never a larger one if
    the claim holds.
    """
    L = _losses(losses)
    q = np.asarray(quantiles, dtype=float).ravel()
    if np.any((q < 0) | (q > 1)):
        raise ValueError("quantiles must lie in [0, 1]")
    values = np.quantile(L, q) if q.size else np.array([])
    return LossSummary(
        int(L.size),
        float(L.mean()),
        float(L.std(ddof=1)) if L.size > 1 else math.nan,
        float(L.min()),
        float(L.max()),
        {float(k): float(v) for k, v in zip(q, values)},
    )


def gaussian_loss_moments(noise_multipliers: npt.ArrayLike) -> tuple[float, float]:
    """``(mu^2 / 2, mu)``: mean and std of the exact privacy loss of composed Gaussians.

    ``T`` Gaussian mechanisms with noise multipliers ``z_k`` (shift of one
    sensitivity) compose to ``mu``-GDP with ``mu = (sum_k z_k^-2)^(1/2)``,
    whose privacy loss under P is exactly ``N(mu^2/2, mu^2)``. A scalar is
    one mechanism (or the already composed ``z_eff = 1/mu``).
    """
    mu = _gdp_mu(noise_multipliers)
    return 0.5 * mu * mu, mu


def gaussian_delta(epsilon: float | npt.ArrayLike, noise_multipliers: npt.ArrayLike) -> float | FloatArray:
    """Exact ``delta(eps)`` of composed Gaussians (Balle and Wang 2018, Thm. 8).

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` with
    ``mu`` as in :func:`gaussian_loss_moments`; evaluated in log space by
    :mod:`vfl.privacy.accountant`'s analytic formula (the one
    ``composed_gaussian_epsilon`` inverts). Symmetric in P and Q. A float
    for a scalar ``epsilon``, else an array.
    """
    mu = _gdp_mu(noise_multipliers)
    eps = _epsilons(epsilon)
    out: FloatArray = np.exp([_analytic_log_delta(float(e), 1.0 / mu) for e in eps])
    return float(out[0]) if np.ndim(epsilon) == 0 else out


# ----------------------------------------------------------- verdict --
@dataclass(frozen=True)
class AuditResult:
    """The audit of a claimed ``(epsilon, delta)`` from samples in one or both directions.

    ``forward`` bounds ``delta_PQ(eps)`` from samples under ``P = M(D)``,
    ``reverse`` (None if not run) ``delta_QP(eps)`` from samples under
    ``Q = M(D')``; with both, each is at level ``1 - alpha/2``
    (``alpha = 1 - confidence``) so that the verdict, which refutes if
    either lower bound exceeds ``delta``, wrongly refutes a true claim with
    probability at most ``alpha``.

    ``verdict`` is ``"REFUTED"`` (the samples certify, at ``confidence``,
    that the mechanism is not ``(epsilon, delta)``-DP for this pair) or
    ``"PASS"``, which only means *not refuted*: this pair, these ``K`` runs
    and this test found no violation. A pass is not a proof of privacy.
    ``epsilon_refuted`` is :func:`epsilon_lower_bound` of the same samples
    (and the same coin flips): the mechanism is not ``(e, delta)``-DP for
    any ``e < epsilon_refuted``, at the same confidence.
    """

    epsilon: float
    delta: float
    confidence: float
    method: str
    verdict: str
    epsilon_refuted: float
    forward: DeltaEstimate
    reverse: DeltaEstimate | None = None
    clip: float = 1.0  # "truncated-kl"'s cap tau (1: none)

    @property
    def K(self) -> int:
        return self.forward.K

    @property
    def K_reverse(self) -> int | None:
        return None if self.reverse is None else self.reverse.K

    @property
    def refuted(self) -> bool:
        return self.verdict == "REFUTED"

    def to_dict(self) -> dict[str, object]:
        """A flat, JSON-ready record (NaN where the reverse direction was not run)."""
        out: dict[str, object] = {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "confidence": self.confidence,
            "method": self.method,
            "clip": self.clip,
            "verdict": self.verdict,
            "epsilon_refuted": self.epsilon_refuted,
        }
        for name, est in (("forward", self.forward), ("reverse", self.reverse)):
            d = asdict(est) if est is not None else {}
            out[f"K_{name}"] = d.get("K")
            out[f"level_{name}"] = d.get("confidence", math.nan)
            for key in ("estimate", "lower", "upper"):
                out[f"delta_{key}_{name}"] = d.get(key, math.nan)
        return out


def audit_verdict(
    losses_P: npt.ArrayLike,
    losses_Q: npt.ArrayLike | None,
    epsilon: float,
    delta: float,
    confidence: float = 0.95,
    *,
    method: str = "kl",
    rng: np.random.Generator | None = None,
    clip: float | None = None,
) -> AuditResult:
    """Test the claim "the mechanism is (epsilon, delta)-DP" against privacy-loss samples.

    ``losses_P`` are draws of ``log p/q`` under ``P = M(D)``; ``losses_Q``
    draws of ``log q/p`` under ``Q = M(D')`` (the audit run on ``D'``
    forcing ``D``), or None to audit one direction at full ``confidence``.
    ``(epsilon, delta)``-DP for the pair means ``delta_PQ(eps) <= delta``
    and ``delta_QP(eps) <= delta``; the claim is ``"REFUTED"`` when the
    lower confidence bound (see :func:`estimate_delta`) of either exceeds
    ``delta``, else ``"PASS"`` (not refuted; not a proof). ``delta = 0``
    (a pure-DP claim) is refuted by any sample with ``L > epsilon``.
    ``clip`` is ``"truncated-kl"``'s cap (:func:`estimate_delta`).
    """
    eps = _checks.nonnegative("epsilon", epsilon)
    delta = _claimed_delta(delta)
    conf = _confidence(confidence)
    tau = _clip(method, clip)
    directions = _directions(losses_P, losses_Q, method, rng)
    alpha = (1.0 - conf) / len(directions)
    estimates: list[DeltaEstimate] = []
    refuted_eps: list[float] = []
    for L, u in directions:
        est, lower, upper = _delta_bounds(L, np.array([eps]), alpha, u, tau)
        estimates.append(
            DeltaEstimate(eps, float(est[0]), float(lower[0]), float(upper[0]), float(1.0 - alpha), int(L.size), method)
        )
        refuted_eps.append(_refuted_epsilon(L, delta, alpha, u, tau))
    refuted = any(e.lower > delta for e in estimates)
    return AuditResult(
        eps,
        delta,
        conf,
        method,
        "REFUTED" if refuted else "PASS",
        max(refuted_eps),
        estimates[0],
        estimates[1] if len(estimates) > 1 else None,
        tau,
    )


def epsilon_lower_bound(
    losses_P: npt.ArrayLike,
    losses_Q: npt.ArrayLike | None,
    delta: float,
    confidence: float = 0.95,
    *,
    method: str = "kl",
    rng: np.random.Generator | None = None,
    clip: float | None = None,
) -> float:
    """The largest epsilon the samples refute at ``delta``: an empirical lower bound on epsilon.

    Returns ``sup{e >= 0 : a lower bound of delta_PQ(e) or delta_QP(e)
    exceeds delta}`` (0 if none), with the directions split as in
    :func:`audit_verdict`. With probability at least ``confidence`` it does
    not exceed the mechanism's true ``epsilon(delta)`` (for this pair, hence
    for the mechanism): every lower bound is nonincreasing in ``e``, so it
    can only exceed the true ``epsilon(delta)`` if the single bound at that
    point fails. For ``"kl"`` this is the root of ``Ybar(e) = y*``, ``y*``
    the mean above which the lower bound exceeds ``delta``; for
    ``"clopper-pearson"`` it is the ``b*``-th largest ``L_i + log(1 - U_i)``,
    ``b*`` the smallest count whose Clopper-Pearson bound exceeds ``delta``;
    for ``"truncated-kl"`` the root of the mean of ``min(Y(e), tau)`` (also
    nonincreasing in ``e``, ``tau`` being fixed).
    """
    delta = _claimed_delta(delta)
    conf = _confidence(confidence)
    tau = _clip(method, clip)
    directions = _directions(losses_P, losses_Q, method, rng)
    alpha = (1.0 - conf) / len(directions)
    return max(_refuted_epsilon(L, delta, alpha, u, tau) for L, u in directions)


# ------------------------------------------------------------- helpers --
def _losses(losses: npt.ArrayLike) -> FloatArray:
    try:
        L = np.asarray(losses, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("losses must be an array of numbers") from None
    if L.ndim != 1 or L.size == 0:
        raise ValueError(f"losses must be a non-empty 1-D array, got shape {L.shape}")
    if np.isnan(L).any():
        raise ValueError("losses contain NaN")
    return L


def _epsilons(epsilon: float | npt.ArrayLike) -> FloatArray:
    try:
        e = np.atleast_1d(np.asarray(epsilon, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number or 1-D array, got {epsilon!r}") from None
    if e.ndim != 1 or e.size == 0 or not np.all(np.isfinite(e) & (e >= 0)):
        raise ValueError(f"epsilon must be finite and >= 0 (a number or 1-D array), got {epsilon!r}")
    return e


def _confidence(confidence: object) -> float:
    c = _checks._real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in the open interval (0, 1), got {confidence!r}")
    return c


def _claimed_delta(delta: object) -> float:
    d = _checks.nonnegative("delta", delta)
    if d >= 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return d


def _gdp_mu(noise_multipliers: npt.ArrayLike) -> float:
    z = _checks.noise_multipliers(np.atleast_1d(np.asarray(noise_multipliers, dtype=float)))
    return float(np.sqrt(np.sum(z**-2.0)))


def _uniforms(method: str, rng: np.random.Generator | None, n: int) -> FloatArray | None:
    if method in ("kl", "truncated-kl"):
        return None
    if method == "clopper-pearson":
        if not isinstance(rng, np.random.Generator):
            raise ValueError("method 'clopper-pearson' needs rng, a numpy Generator (the run's 'audit' stream)")
        return rng.random(n)
    raise ValueError(f"method must be one of {AUDIT_METHODS}, got {method!r}")


def _clip(method: str, clip: float | None) -> float:
    """``"truncated-kl"``'s cap ``tau`` in ``(0, 1]`` (1, no cap, when not given); 1 otherwise."""
    if method != "truncated-kl":
        if clip is not None and clip != 1.0:
            raise ValueError(f"clip applies to method 'truncated-kl' only, not {method!r}")
        return 1.0
    if clip is None:
        return 1.0
    tau = _checks._real("clip", clip)
    if not 0.0 < tau <= 1.0:
        raise ValueError(f"clip must be in (0, 1], got {clip!r}")
    return tau


def _directions(
    losses_P: npt.ArrayLike, losses_Q: npt.ArrayLike | None, method: str, rng: np.random.Generator | None
) -> list[tuple[FloatArray, FloatArray | None]]:
    out = []
    for given in (losses_P,) if losses_Q is None else (losses_P, losses_Q):
        L = _losses(given)
        out.append((L, _uniforms(method, rng, L.size)))
    return out


def _y(L: FloatArray, eps: FloatArray) -> FloatArray:
    """``(1 - e^(eps - L))_+`` of shape ``(len(eps), K)``; exact near 0 via expm1."""
    return -np.expm1(np.minimum(eps[:, None] - L[None, :], 0.0))


def _kl(p: npt.ArrayLike, q: npt.ArrayLike) -> FloatArray:
    """Bernoulli KL divergence ``kl(p || q)``, elementwise, with its limits at 0 and 1."""
    p, q = np.broadcast_arrays(np.asarray(p, float), np.asarray(q, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
        second = np.where(p < 1, (1 - p) * (np.log1p(-p) - np.log1p(-q)), 0.0)
    return first + second


def _kl_bounds(mean: npt.ArrayLike, n: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    """Chernoff-KL lower and upper bounds of a [0, 1] mean (bisection, conservative ends)."""
    c = math.log(1.0 / alpha) / n
    m = np.asarray(mean, dtype=float)
    # lower: kl(mean, lo) > c >= kl(mean, hi) (or lo = 0); upper: the mirror
    lower = _bisect(np.zeros_like(m), m.copy(), lambda p: _kl(m, p) > c)[0]
    upper = _bisect(m.copy(), np.ones_like(m), lambda p: _kl(m, p) <= c)[1]
    return lower, upper


def _bisect(lo: FloatArray, hi: FloatArray, left: Callable[[FloatArray], BoolArray]) -> tuple[FloatArray, FloatArray]:
    """Shrink ``[lo, hi]`` to float resolution around where ``left`` (True at lo) switches."""
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        go = left(mid)
        lo, hi = np.where(go, mid, lo), np.where(go, hi, mid)
    return lo, hi


def _cp_bounds(counts: npt.ArrayLike, n: int, alpha: float) -> tuple[FloatArray, FloatArray]:
    count = np.asarray(counts)
    with np.errstate(invalid="ignore"):
        lower = np.where(count > 0, stats.beta.ppf(alpha, count, n - count + 1), 0.0)
        upper = np.where(count < n, stats.beta.ppf(1 - alpha, count + 1, n - count), 1.0)
    return lower, upper


def _delta_bounds(
    L: FloatArray, eps: FloatArray, alpha: float, u: FloatArray | None, tau: float = 1.0
) -> tuple[FloatArray, FloatArray, FloatArray]:
    Y = _y(L, eps)
    est = Y.mean(axis=1)
    if u is None:
        lower, upper = _kl_bounds(est, L.size, alpha)
        if tau < 1.0:
            lower = tau * _kl_bounds(np.minimum(Y, tau).mean(axis=1) / tau, L.size, alpha)[0]
    else:
        lower, upper = _cp_bounds((u[None, :] < Y).sum(axis=1), L.size, alpha)
    return est, lower, upper


def _refuted_epsilon(L: FloatArray, delta: float, alpha: float, u: FloatArray | None, tau: float = 1.0) -> float:
    """``sup{e >= 0 : lower(e) > delta}`` for one direction (0 if the set is empty)."""
    n = L.size
    if u is not None:
        # lower(e) > delta  <=>  B(e) >= b*, with B(e) = #{L_i + log(1 - U_i) > e}
        sf = stats.binom.sf(np.arange(n + 1) - 1, n, delta)  # P[Bin >= b], b = 0..n
        hits = np.nonzero(sf < alpha)[0]
        if hits.size == 0:
            return 0.0
        t = np.sort(L + np.log1p(-u))[::-1]
        return float(max(t[hits[0] - 1], 0.0))
    # "kl": lower(Ybar) > delta  <=>  Ybar > y*, the largest mean whose lower bound is <= delta
    # ("truncated-kl": the same for min(Y, tau) / tau against delta / tau)
    c = math.log(1.0 / alpha) / n
    d = delta / tau
    if d >= 1.0 or _kl(1.0, d) <= c:  # even Ybar = 1 cannot refute
        return 0.0
    y_star = float(_bisect(np.array(d), np.array(1.0), lambda y: _kl(y, d) <= c)[1])

    def ybar(e: float) -> float:
        return float(np.minimum(_y(L, np.array([e]))[0], tau).mean() / tau)

    if ybar(0.0) <= y_star:
        return 0.0
    finite = L[np.isfinite(L)]
    top = float(finite.max()) if finite.size else 0.0
    if ybar(max(top, 0.0) + 1.0) > y_star:  # only infinite losses can keep Ybar up
        return math.inf
    return float(brentq(lambda e: ybar(e) - y_star, 0.0, max(top, 0.0) + 1.0, xtol=1e-12, rtol=1e-12))
