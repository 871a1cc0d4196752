"""White-box Monte-Carlo audit of a DP mechanism: the statistics behind ``vfl audit``.

How the samples arise (the experiments layer does this part). For a pair of
neighbouring datasets ``(D, D')`` the mechanism runs ``K`` times on ``D`` with
fresh noise; in each run the solver on ``D'`` is teacher-forced to consume the
same released transcript, so for every release ``o`` we know its mean under
``D`` (``mu``) and under ``D'`` (``mu'``) given the same history. Then

    L = sum over releases of  log p_D(o | history) - log p_D'(o | history)

is one exact draw of the privacy-loss random variable of the whole adaptive
composition under ``P = M(D)``. Running on ``D'`` and forcing ``D`` gives
draws under ``Q = M(D')`` of ``log q/p``.

What is built here:

- per-release log-likelihood ratios (vectorized over units and entries):
  :func:`gaussian_log_ratio`, :func:`laplace_log_ratio`,
  :func:`uniform_laplace_log_ratio` (Laplace noise around a mean drawn
  uniformly on ``[lo, hi]``, Xiao et al.'s mixture, Lemma 2.1 / Thm. 2.2),
  and :func:`release_log_ratio` for a :class:`~vfl.core.solver.Release`;
- the hockey-stick divergence ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` with
  one-sided confidence bounds (:func:`estimate_delta`), a summary of the
  sampled privacy-loss distribution (:func:`summarize_losses`), and the curve
  of a claimed Gaussian mechanism (:func:`gaussian_delta`,
  :func:`gaussian_loss_moments`);
- the verdict at a claimed ``(eps, delta)`` (:func:`audit_verdict`) and the
  largest epsilon the samples refute at that delta
  (:func:`epsilon_lower_bound`);
- the one-run audit of Steinke, Nasr and Jagielski (NeurIPS 2023)
  (:func:`one_run_p_value`, :func:`one_run_epsilon`).

What a "95% lower bound" means here. ``lower`` is a function of the ``K``
samples such that, whatever the mechanism and the neighbouring pair, if the
``K`` runs are independent and identically distributed and ``K`` was fixed
before looking at them, then ``P(lower <= delta_PQ(eps)) >= 0.95`` over the
randomness of the runs (and of the method's own coin flips, for
``"clopper-pearson"``). It is a statement about the procedure, not a
posterior probability. ``delta_PQ`` is the divergence of *this* pair; a DP
claim bounds it for every pair, so a lower bound above the claimed delta
refutes the claim. The upper bound is the mirror statement; the two together
form a two-sided interval of level ``1 - 2 alpha``.

Randomness that the transcript does not reveal and the densities do not
integrate out (minibatch sampling, say) must be the same in both runs of a
pair; the audit is then conditional on it, and a claim that relies on
amplification by that randomness is not what is being tested.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats
from scipy.optimize import brentq
from scipy.special import expit

from . import _checks
from .accountant import _analytic_log_delta

__all__ = [
    "AUDIT_METHODS",
    "gaussian_log_ratio",
    "laplace_log_ratio",
    "uniform_laplace_logpdf",
    "uniform_laplace_log_ratio",
    "release_log_ratio",
    "hockey_stick_samples",
    "DeltaEstimate",
    "estimate_delta",
    "LossSummary",
    "summarize_losses",
    "gaussian_loss_moments",
    "gaussian_delta",
    "AuditResult",
    "audit_verdict",
    "epsilon_lower_bound",
    "one_run_p_value",
    "one_run_epsilon",
    "refutation_threshold",
    "choose_bound",
    "powerful_epsilon",
    "truncation_level",
]

#: confidence-bound methods of :func:`estimate_delta` (see its docstring)
AUDIT_METHODS = ("kl", "clopper-pearson", "truncated-kl")

_QUANTILES = (0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99)
_BISECTIONS = 200  # halvings of [0, 1]: far below float resolution at any scale


# ------------------------------------------------ per-release log ratios --
def gaussian_log_ratio(o, mean, mean_other, sigma) -> np.ndarray:
    """``log N(o; mean, sigma^2 I) - log N(o; mean_other, sigma^2 I)`` per released vector.

    The last axis of ``o`` holds one release's entries; ``mean`` and
    ``mean_other`` broadcast against ``o``; ``sigma`` (the per-entry standard
    deviation, ``Release.scale``) broadcasts against ``o.shape[:-1]``, one per
    vector. Equal to ``(||o - mu'||^2 - ||o - mu||^2) / (2 sigma^2)``, computed
    as ``(mu - mu') . (2 o - mu - mu') / (2 sigma^2)``, which does not cancel
    when ``o`` is far from both means. Returns shape ``o.shape[:-1]``.
    """
    o, mu, mu2 = _vectors(o, mean, mean_other)
    s = _scale("sigma", sigma, o.shape[:-1])
    return np.sum((mu - mu2) * (2.0 * o - mu - mu2), axis=-1) / (2.0 * s**2)


def laplace_log_ratio(o, mean, mean_other, b) -> np.ndarray:
    """``(||o - mu'||_1 - ||o - mu||_1) / b``: i.i.d. Laplace entries of scale ``b``.

    Shapes as in :func:`gaussian_log_ratio`, with ``b`` (``Release.scale``)
    one per vector. Returns shape ``o.shape[:-1]``.
    """
    o, mu, mu2 = _vectors(o, mean, mean_other)
    s = _scale("b", b, o.shape[:-1])
    return np.sum(np.abs(o - mu2) - np.abs(o - mu), axis=-1) / s


def uniform_laplace_logpdf(o, lo, hi, b) -> np.ndarray:
    """Log density of ``Y + Laplace(0, b)`` with ``Y ~ Uniform[lo, hi]``, entrywise.

    This is the "Laplace with a uniformly random mean" of Xiao, Ye and
    Devadas (Lemma 2.1, Thm. 2.2): the convolution

        p(o) = (1/w) int_lo^hi e^(-|o - y|/b) / (2b) dy,   w = hi - lo,

    which in closed form, with ``phi(t) = 1 - e^(-t)``, ``r = w / b`` and the
    distances ``u = clip(o - lo, 0, w)``, ``v = clip(hi - o, 0, w)``, is

        p(o) = e^(-dist(o, [lo, hi]) / b) / (2b) * (phi(u/b) + phi(v/b)) / r.

    Outside the interval ``u + v = w`` reduces the last factor to
    ``phi(r)/r``; inside, ``dist = 0``. Computed in log space with ``expm1``,
    so it is accurate far in the tails and as ``w -> 0`` (the factor tends
    to 1 and ``p`` to the Laplace density at ``lo``). All arguments
    broadcast elementwise; ``lo <= hi`` is required, ``lo == hi`` allowed.
    """
    o = _finite("o", o)
    lo = _finite("lo", lo)
    hi = _finite("hi", hi)
    if np.any(lo > hi):
        raise ValueError("uniform_laplace_logpdf needs lo <= hi everywhere")
    b = np.asarray(b, dtype=float)
    if not (np.all(np.isfinite(b)) and np.all(b > 0)):
        raise ValueError("the Laplace scale b must be finite and > 0")
    return _uniform_laplace_logpdf(o, lo, hi, b)


def uniform_laplace_log_ratio(o, lo, hi, lo_other, hi_other, b) -> np.ndarray:
    """Log ratio of two uniform-mean Laplace densities, summed over a release's entries.

    Entry ``l`` of a release has mean uniform on ``[lo[l], hi[l]]`` under
    ``D`` and on ``[lo_other[l], hi_other[l]]`` under ``D'`` (the
    neighbour's interval, shifted by its different data term), plus
    independent Laplace noise of scale ``b``. Returns ``sum_l log p(o_l) -
    log p'(o_l)`` (see :func:`uniform_laplace_logpdf`); ``b`` is one per
    vector, broadcast against ``o.shape[:-1]``, the intervals against ``o``.
    """
    o = _finite("o", o)
    if o.ndim == 0:
        raise ValueError("o must have at least one axis (the release's entries)")
    s = _scale("b", b, o.shape[:-1])[..., None]
    return np.sum(uniform_laplace_logpdf(o, lo, hi, s)
                  - uniform_laplace_logpdf(o, lo_other, hi_other, s), axis=-1)


def release_log_ratio(release, o, mean, mean_other) -> np.ndarray:
    """Per-unit log ratios of one :class:`~vfl.core.solver.Release`.

    ``o``, ``mean`` and ``mean_other`` hold ``len(release.units) *
    release.size`` values each (one row per unit, or one vector for a
    single unit, as passed to ``Solver.release``); they are reshaped to
    ``(units, size)``. Uses ``release.scale`` (the per-unit standard
    deviation for ``"gaussian"``, Laplace scale ``b`` for ``"laplace"``);
    the sensitivity plays no part: the audit uses the actual means.
    Returns shape ``(len(release.units),)``; their sum is the release's
    contribution to ``L``.
    """
    shape = (len(release.units), int(release.size))
    try:
        o, mu, mu2 = (np.broadcast_to(np.asarray(a, dtype=float), np.shape(o)).reshape(shape)
                      for a in (o, mean, mean_other))
    except ValueError:
        raise ValueError(f"release values do not fit {shape[0]} units x size {shape[1]}") \
            from None
    if release.mechanism == "gaussian":
        return gaussian_log_ratio(o, mu, mu2, release.scale)
    if release.mechanism == "laplace":
        return laplace_log_ratio(o, mu, mu2, release.scale)
    raise ValueError(f"unknown mechanism {release.mechanism!r}")


# ------------------------------------------- hockey-stick divergence --
def hockey_stick_samples(losses, epsilon) -> np.ndarray:
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

    epsilon: float | np.ndarray
    estimate: float | np.ndarray
    lower: float | np.ndarray
    upper: float | np.ndarray
    confidence: float
    K: int
    method: str


def estimate_delta(losses, epsilon, confidence: float = 0.95, *, method: str = "kl",
                   rng: np.random.Generator | None = None,
                   clip: float | None = None) -> DeltaEstimate:
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
    pick = (lambda a: float(a[0])) if scalar else (lambda a: a)
    return DeltaEstimate(pick(eps), pick(est), pick(lower), pick(upper),
                         float(1.0 - alpha), int(L.size), method)


@dataclass(frozen=True)
class LossSummary:
    """The sampled privacy-loss distribution: ``K``, mean (= KL(P||Q)), std, quantiles."""

    K: int
    mean: float
    std: float
    minimum: float
    maximum: float
    quantiles: dict = field(default_factory=dict)


def summarize_losses(losses, quantiles=_QUANTILES) -> LossSummary:
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
    return LossSummary(int(L.size), float(L.mean()),
                       float(L.std(ddof=1)) if L.size > 1 else math.nan,
                       float(L.min()), float(L.max()),
                       {float(k): float(v) for k, v in zip(q, values)})


def gaussian_loss_moments(noise_multipliers) -> tuple[float, float]:
    """``(mu^2 / 2, mu)``: mean and std of the exact privacy loss of composed Gaussians.

    ``T`` Gaussian mechanisms with noise multipliers ``z_k`` (shift of one
    sensitivity) compose to ``mu``-GDP with ``mu = (sum_k z_k^-2)^(1/2)``,
    whose privacy loss under P is exactly ``N(mu^2/2, mu^2)``. A scalar is
    one mechanism (or the already composed ``z_eff = 1/mu``).
    """
    mu = _gdp_mu(noise_multipliers)
    return 0.5 * mu * mu, mu


def gaussian_delta(epsilon, noise_multipliers):
    """Exact ``delta(eps)`` of composed Gaussians (Balle and Wang 2018, Thm. 8).

    ``delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` with
    ``mu`` as in :func:`gaussian_loss_moments`; evaluated in log space by
    :mod:`vfl.privacy.accountant`'s analytic formula (the one
    ``composed_gaussian_epsilon`` inverts). Symmetric in P and Q. A float
    for a scalar ``epsilon``, else an array.
    """
    mu = _gdp_mu(noise_multipliers)
    eps = _epsilons(epsilon)
    out = np.exp([_analytic_log_delta(float(e), 1.0 / mu) for e in eps])
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

    def to_dict(self) -> dict:
        """A flat, JSON-ready record (NaN where the reverse direction was not run)."""
        out = {"epsilon": self.epsilon, "delta": self.delta, "confidence": self.confidence,
               "method": self.method, "clip": self.clip, "verdict": self.verdict,
               "epsilon_refuted": self.epsilon_refuted}
        for name, est in (("forward", self.forward), ("reverse", self.reverse)):
            d = asdict(est) if est is not None else {}
            out[f"K_{name}"] = d.get("K")
            out[f"level_{name}"] = d.get("confidence", math.nan)
            for key in ("estimate", "lower", "upper"):
                out[f"delta_{key}_{name}"] = d.get(key, math.nan)
        return out


def audit_verdict(losses_P, losses_Q, epsilon: float, delta: float, confidence: float = 0.95,
                  *, method: str = "kl", rng: np.random.Generator | None = None,
                  clip: float | None = None) -> AuditResult:
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
    estimates, refuted_eps = [], []
    for L, u in directions:
        est, lower, upper = _delta_bounds(L, np.array([eps]), alpha, u, tau)
        estimates.append(DeltaEstimate(eps, float(est[0]), float(lower[0]), float(upper[0]),
                                       float(1.0 - alpha), int(L.size), method))
        refuted_eps.append(_refuted_epsilon(L, delta, alpha, u, tau))
    refuted = any(e.lower > delta for e in estimates)
    return AuditResult(eps, delta, conf, method, "REFUTED" if refuted else "PASS",
                       max(refuted_eps), estimates[0],
                       estimates[1] if len(estimates) > 1 else None, tau)


def epsilon_lower_bound(losses_P, losses_Q, delta: float, confidence: float = 0.95, *,
                        method: str = "kl", rng: np.random.Generator | None = None,
                        clip: float | None = None) -> float:
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


# ------------------------------------------------- power, chosen a priori --
def refutation_threshold(K: int, delta: float, confidence: float = 0.95, *,
                         method: str = "kl", clip: float | None = None) -> float:
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


def choose_bound(K: int, delta: float, confidence: float = 0.95,
                 clip: float | None = None) -> str:
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


def powerful_epsilon(mu: float, K: int, epsilon_max: float, confidence: float = 0.95, *,
                     method: str = "kl", factor: float = 2.0, claimed=None) -> float:
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
    claimed = gaussian_delta(grid, 1.0 / mu) if claimed is None else \
        np.asarray(claimed(grid), dtype=float)
    alt = gaussian_delta(grid, 1.0 / (factor * mu))
    thresholds = np.array([refutation_threshold(K, float(min(d, 1.0 - 1e-12)), confidence,
                                                method=method) for d in claimed])
    sd = np.sqrt(np.maximum(alt * (1.0 - alt), 1e-300) / K)
    score = (alt - thresholds) / sd
    return float(grid[int(np.argmax(score))])


# ------------------------------------------------------- one-run audit --
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
def _vectors(o, mean, mean_other):
    o = _finite("o", o)
    if o.ndim == 0:
        raise ValueError("o must have at least one axis (the release's entries)")
    mu = _finite("mean", mean)
    mu2 = _finite("mean_other", mean_other)
    try:
        o, mu, mu2 = np.broadcast_arrays(o, mu, mu2)
    except ValueError:
        raise ValueError(f"means of shapes {np.shape(mean)}, {np.shape(mean_other)} do not "
                         f"broadcast to the released values' shape {o.shape}") from None
    return o, mu, mu2


def _finite(name, a) -> np.ndarray:
    try:
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _scale(name, s, shape) -> np.ndarray:
    """A positive scale per released vector: broadcastable to ``shape``, not beyond it."""
    s = _finite(name, s)
    if not np.all(s > 0):
        raise ValueError(f"{name} must be > 0")
    try:
        ok = np.broadcast_shapes(s.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name} of shape {s.shape} must broadcast to {tuple(shape)}, "
                         "one per released vector (the last axis holds its entries)")
    return s


def _uniform_laplace_logpdf(o, lo, hi, b):
    w = hi - lo
    r = w / b
    u = np.clip(o - lo, 0.0, w) / b
    v = np.clip(hi - o, 0.0, w) / b
    dist = np.maximum(np.maximum(lo - o, o - hi), 0.0) / b
    with np.errstate(divide="ignore", invalid="ignore"):
        # (phi(u) + phi(v)) / r -> 1 as w -> 0 (each phi(t) ~ t, u + v = r)
        ratio = np.where(r > 0, (-np.expm1(-u) - np.expm1(-v)) / np.where(r > 0, r, 1.0), 1.0)
    return -dist - np.log(2.0 * b) + np.log(ratio)


def _losses(losses) -> np.ndarray:
    try:
        L = np.asarray(losses, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("losses must be an array of numbers") from None
    if L.ndim != 1 or L.size == 0:
        raise ValueError(f"losses must be a non-empty 1-D array, got shape {L.shape}")
    if np.isnan(L).any():
        raise ValueError("losses contain NaN")
    return L


def _epsilons(epsilon) -> np.ndarray:
    try:
        e = np.atleast_1d(np.asarray(epsilon, dtype=float))
    except (TypeError, ValueError):
        raise ValueError(f"epsilon must be a number or 1-D array, got {epsilon!r}") from None
    if e.ndim != 1 or e.size == 0 or not np.all(np.isfinite(e) & (e >= 0)):
        raise ValueError(f"epsilon must be finite and >= 0 (a number or 1-D array), "
                         f"got {epsilon!r}")
    return e


def _confidence(confidence) -> float:
    c = _checks._real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise ValueError(f"confidence must be in the open interval (0, 1), got {confidence!r}")
    return c


def _claimed_delta(delta) -> float:
    d = _checks.nonnegative("delta", delta)
    if d >= 1.0:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    return d


def _gdp_mu(noise_multipliers) -> float:
    z = _checks.noise_multipliers(np.atleast_1d(np.asarray(noise_multipliers, dtype=float)))
    return float(np.sqrt(np.sum(z**-2.0)))


def _uniforms(method, rng, n):
    if method in ("kl", "truncated-kl"):
        return None
    if method == "clopper-pearson":
        if not isinstance(rng, np.random.Generator):
            raise ValueError("method 'clopper-pearson' needs rng, a numpy Generator "
                             "(the run's 'audit' stream)")
        return rng.random(n)
    raise ValueError(f"method must be one of {AUDIT_METHODS}, got {method!r}")


def _clip(method, clip) -> float:
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


def _directions(losses_P, losses_Q, method, rng):
    out = []
    for L in (losses_P,) if losses_Q is None else (losses_P, losses_Q):
        L = _losses(L)
        out.append((L, _uniforms(method, rng, L.size)))
    return out


def _y(L, eps):
    """``(1 - e^(eps - L))_+`` of shape ``(len(eps), K)``; exact near 0 via expm1."""
    return -np.expm1(np.minimum(eps[:, None] - L[None, :], 0.0))


def _kl(p, q):
    """Bernoulli KL divergence ``kl(p || q)``, elementwise, with its limits at 0 and 1."""
    p, q = np.broadcast_arrays(np.asarray(p, float), np.asarray(q, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0)
        second = np.where(p < 1, (1 - p) * (np.log1p(-p) - np.log1p(-q)), 0.0)
    return first + second


def _kl_bounds(mean, n, alpha):
    """Chernoff-KL lower and upper bounds of a [0, 1] mean (bisection, conservative ends)."""
    c = math.log(1.0 / alpha) / n
    mean = np.asarray(mean, dtype=float)
    # lower: kl(mean, lo) > c >= kl(mean, hi) (or lo = 0); upper: the mirror
    lower = _bisect(np.zeros_like(mean), mean.copy(), lambda p: _kl(mean, p) > c)[0]
    upper = _bisect(mean.copy(), np.ones_like(mean), lambda p: _kl(mean, p) <= c)[1]
    return lower, upper


def _bisect(lo, hi, left):
    """Shrink ``[lo, hi]`` to float resolution around where ``left`` (True at lo) switches."""
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if np.all((mid == lo) | (mid == hi)):
            break
        go = left(mid)
        lo, hi = np.where(go, mid, lo), np.where(go, hi, mid)
    return lo, hi


def _cp_bounds(count, n, alpha):
    count = np.asarray(count)
    with np.errstate(invalid="ignore"):
        lower = np.where(count > 0, stats.beta.ppf(alpha, count, n - count + 1), 0.0)
        upper = np.where(count < n, stats.beta.ppf(1 - alpha, count + 1, n - count), 1.0)
    return lower, upper


def _delta_bounds(L, eps, alpha, u, tau=1.0):
    Y = _y(L, eps)
    est = Y.mean(axis=1)
    if u is None:
        lower, upper = _kl_bounds(est, L.size, alpha)
        if tau < 1.0:
            lower = tau * _kl_bounds(np.minimum(Y, tau).mean(axis=1) / tau, L.size, alpha)[0]
    else:
        lower, upper = _cp_bounds((u[None, :] < Y).sum(axis=1), L.size, alpha)
    return est, lower, upper


def _refuted_epsilon(L, delta, alpha, u, tau=1.0):
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

    def ybar(e):
        return float(np.minimum(_y(L, np.array([e]))[0], tau).mean() / tau)

    if ybar(0.0) <= y_star:
        return 0.0
    finite = L[np.isfinite(L)]
    top = float(finite.max()) if finite.size else 0.0
    if ybar(max(top, 0.0) + 1.0) > y_star:  # only infinite losses can keep Ybar up
        return math.inf
    return float(brentq(lambda e: ybar(e) - y_star, 0.0, max(top, 0.0) + 1.0,
                        xtol=1e-12, rtol=1e-12))


def _guesses(m, r, v):
    m = _checks.count("m", m)
    for name, x in (("r", r), ("v", v)):
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {x!r}")
    if not int(v) <= int(r) <= m:
        raise ValueError(f"need 0 <= v <= r <= m, got m={m}, r={r}, v={v}")
    return m, int(r), int(v)


def _one_run_p(m, r, v, eps, delta):
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
        window = np.concatenate([
            (np.cumsum(stats.binom.pmf(j, r, q[k:k + step]), axis=1) / i).max(axis=1)
            for k in range(0, len(q), step)])
        beta = beta + 2.0 * m * delta * window
    return np.minimum(beta, 1.0)
