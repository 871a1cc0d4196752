"""Local DP of decentralized optimization with random aggregation (Xiao, Ye, Devadas).

Xiao et al., "Local Differential Privacy in Decentralized Optimization"
(arXiv 1902.06101): agent i releases, per coordinate l, a Laplace variable of
rate ``beta`` (density ``beta/2 e^{-beta|y|}``; ``beta`` is a *rate*, the
numpy scale is ``1/beta``) whose mean is uniform on an interval ``[lo, hi]``
known to the adversary. Changing one of agent i's samples moves the interval
by at most ``T = alpha B_inf`` (``alpha = 1/D`` in Algorithm 1, ``eta_k`` in
Algorithms 2 / 2*, ``B_inf`` the l_inf local sensitivity of the gradient).

- :func:`realized_loss`: Theorem 2.2, eq. (10), evaluated on an observed
  output (in log space). This is an **ex-post, data-dependent**
  quantity: it uses the true interval of this transcript, and is *not* a
  worst-case guarantee over transcripts;
- :func:`worst_case_cumulative`: the corollary of Theorem 2.2,
  ``sum_k d alpha_{k+1} beta_{k+1} B_inf``, a sound pure-LDP bound whenever
  ``B_inf`` is enforced (the random mean is data-independent, so the mixture
  is no worse than each of its Laplace components);
- :func:`gamma_bound`: Theorem 2.3, eq. (11), in closed form;
  :func:`gamma_exact`: the exact expectation ``E[Theta] / (alpha beta B_inf)``
  by quadrature; :func:`gamma_bound_corrected`: eq. (11)'s Jensen bound with
  the edge-band ratio taken at the maximizing shift (Xiao et al. 2019, App. D,
  take ``t = -alpha B_inf`` there, but ``+alpha B_inf`` is the maximum, so
  eq. (11) is not a rigorous bound);
- :func:`advanced_composition`: footnote 1 (Kairouz et al., Theorem 3.5);
  the tight (epsilon, delta) of the worst-case Laplace mechanisms is
  :func:`vfl.privacy.accountant.laplace_composition_epsilon` (dp-accounting's PLD).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import integrate

from vfl.core.arrays import FloatArray

from . import _checks

__all__ = [
    "geometric_schedule",
    "interval_log_mass",
    "realized_loss",
    "worst_case_cumulative",
    "gamma_bound",
    "gamma_exact",
    "gamma_bound_corrected",
    "advanced_composition",
]


def geometric_schedule(base: float, growth: float, k: npt.ArrayLike) -> FloatArray:
    """``base * growth**k``: e.g. Laplace rates ``beta_k = 1.02^k``, steps ``eta_k = 0.95^k``."""
    base = _checks.positive("base", base)
    growth = _checks.positive("growth", growth)
    return base * growth ** np.asarray(k, dtype=float)


# ------------------------------------------------------------ Theorem 2.2 --
def _log_mass(r: FloatArray, omega: float | FloatArray, beta: float | FloatArray) -> FloatArray:
    """``log int_0^omega e^{-beta |r - y|} dy`` for offsets ``r = x - lo`` (omega > 0).

    Stable closed form: outside the interval the mass is
    ``e^{-beta dist} (1 - e^{-beta omega}) / beta``; inside it is
    ``(2 - e^{-beta r} - e^{-beta (omega - r)}) / beta``, written with
    ``expm1`` so that tiny intervals keep their relative precision.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = np.where(r < 0, -r, np.where(r > omega, r - omega, 0.0))
        outside = -beta * dist + np.log(-np.expm1(-beta * omega))
        rin = np.clip(r, 0.0, omega)
        inside = np.log(-np.expm1(-beta * rin) - np.expm1(-beta * (omega - rin)))
        return np.where((r < 0) | (r > omega), outside, inside) - np.log(beta)


def interval_log_mass(x: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike, beta: npt.ArrayLike) -> FloatArray:
    """``log int_lo^hi e^{-beta |x - y|} dy`` elementwise (``-inf`` when ``hi == lo``)."""
    x, lo, hi, beta = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, lo, hi, beta)))
    if np.any(hi < lo):
        raise ValueError("interval_log_mass needs hi >= lo")
    if np.any(beta <= 0):
        raise ValueError("beta (a Laplace rate) must be > 0")
    return _log_mass(x - lo, hi - lo, beta)


def realized_loss(
    x: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike, beta: npt.ArrayLike, T: npt.ArrayLike
) -> float | FloatArray:
    """Theorem 2.2, eq. (10): per-coordinate privacy loss of the observed ``x``.

    ``x`` is a released coordinate ``x_i^{k+1}[l]``; its mean was uniform on
    ``[lo, hi]`` (the interval ``tau``, known given the transcript), plus
    Laplace noise of rate ``beta``; a neighbouring ``f_i`` shifts the
    interval by at most ``T = alpha B_inf``. Returns

        max_{|t| <= T} | g(0) - g(t) |,   g(t) = log int_{tau + t} e^{-beta |x - y|} dy,

    attained at ``t = +-T`` because ``g`` is concave (a convolution of
    log-concave functions). Shifting the interval by ``t`` is evaluated as
    shifting ``x`` by ``-t`` so the interval length is computed once. For a
    degenerate interval (``hi == lo``: fixed parameters) it is the pure Laplace
    loss ``beta max_t | |x - lo - t| - |x - lo| |``. Never above ``beta T``, and
    strictly below it when ``x`` lies inside the interval.

    Ex-post and data-dependent: it is evaluated with the true ``f_i``'s
    interval on one transcript, as the paper does, and is not a worst-case
    guarantee (that is ``beta T`` per coordinate).
    """
    x, lo, hi, beta, T = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (x, lo, hi, beta, T)))
    if np.any(hi < lo):
        raise ValueError("realized_loss needs hi >= lo (order the interval endpoints)")
    if np.any(beta <= 0) or np.any(T < 0):
        raise ValueError("realized_loss needs beta > 0 (a Laplace rate) and T >= 0")
    r = x - lo
    omega = hi - lo
    degenerate = omega <= 0
    om = np.where(degenerate, 1.0, omega)  # placeholder where the closed form is not used
    g0 = _log_mass(r, om, beta)
    gp = _log_mass(r - T, om, beta)
    gm = _log_mass(r + T, om, beta)
    mixture = np.maximum(np.abs(g0 - gp), np.abs(g0 - gm))
    a = np.abs(r)
    pure = beta * np.maximum(np.abs(np.abs(r - T) - a), np.abs(np.abs(r + T) - a))
    out = np.where(degenerate, pure, mixture)
    return out if out.ndim else float(out)


def worst_case_cumulative(d: int, alpha: npt.ArrayLike, beta: npt.ArrayLike, B_inf: float) -> FloatArray:
    """Corollary of Theorem 2.2: ``cumsum_k d alpha_{k+1} beta_{k+1} B_inf``.

    ``alpha`` and ``beta`` are the per-iteration sequences (already indexed
    ``k + 1``, as in the corollary's sum). With ``alpha = 0.1``, ``beta_k = 1.02^k``,
    ``d = 14``, ``B_inf = 0.01`` the total at ``K = 100`` is 4.459 (the worst case
    of Xiao et al. 2019, Fig. 2(b)).
    """
    alpha, beta = np.broadcast_arrays(np.asarray(alpha, float), np.asarray(beta, float))
    return np.cumsum(int(d) * alpha * beta * float(B_inf))


# ------------------------------------------------------------ Theorem 2.3 --
def gamma_bound(omega: npt.ArrayLike, beta: npt.ArrayLike, aB: npt.ArrayLike) -> float | FloatArray:
    """Theorem 2.3, eq. (11): the paper's bound on the amplification factor gamma.

    With ``a = alpha B_inf``, ``h = (omega - a)/2`` and ``b = beta``::

        I1 = [2h - (1 - e^{-bh})/b - (e^{-b(omega-h)} - e^{-b omega})/b] / (2 omega)
        I2 = [2h - (e^{-ba} - e^{-b(h+a)})/b - (e^{-b(omega-a-h)} - e^{-b(omega-a)})/b] / (2 omega)
        gamma <= log(e^{ab} (1 - 2 I1) + 2 I2) / (ab)

    (``I1``, ``I2`` are eq. (11)'s double integrals of
    ``Phi(x, y) = beta/(2 omega) e^{-beta|x-y|}``.) Valid for ``omega > a``.
    As printed, not a rigorous bound (off by < 1%; see
    :func:`gamma_bound_corrected`), kept paper-faithful for Fig. 1.
    """
    omega, beta, a = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (omega, beta, aB)))
    if np.any(a <= 0) or np.any(beta <= 0):
        raise ValueError("gamma_bound needs beta > 0 and alpha * B_inf > 0")
    if np.any(omega <= a):
        raise ValueError("gamma_bound (Theorem 2.3) needs omega > alpha * B_inf")
    b = beta
    h = (omega - a) / 2
    e = np.exp
    I1 = (2 * h - (1 - e(-b * h)) / b - (e(-b * (omega - h)) - e(-b * omega)) / b) / (2 * omega)
    I2 = (2 * h - (e(-b * a) - e(-b * (h + a))) / b - (e(-b * (omega - a - h)) - e(-b * (omega - a))) / b) / (2 * omega)
    out = np.log(e(a * b) * (1 - 2 * I1) + 2 * I2) / (a * b)
    return out if out.ndim else float(out)


def _mixture_density(x: npt.ArrayLike, omega: float, beta: float) -> FloatArray:
    """Density of Laplace(rate beta) noise around a mean uniform on [0, omega]."""
    return np.exp(_log_mass(np.asarray(x, float), omega, beta)) * beta / (2 * omega)


def _tail_probability(omega: float, beta: float, T: float) -> float:
    """``P(x < -T)`` (= ``P(x > omega + T)``) under the mixture density."""
    return math.exp(-beta * T) * -math.expm1(-beta * omega) / (2 * omega * beta)


def _gamma_exact_scalar(omega: float, beta: float, T: float) -> float:
    def theta(x: float) -> float:
        return float(realized_loss(x, 0.0, omega, beta, T))

    def f(x: float) -> float:
        return theta(x) * float(_mixture_density(x, omega, beta))

    # Beyond [-T, omega + T] the loss is exactly beta T (pure Laplace tail).
    tails = 2 * beta * T * _tail_probability(omega, beta, T)
    pts = sorted({-T, 0.0, T, (omega - T) / 2, omega / 2, (omega + T) / 2, omega - T, omega, omega + T})
    middle = sum(
        float(integrate.quad(f, lo, hi, epsabs=1e-14, epsrel=1e-11, limit=200)[0])
        for lo, hi in zip(pts[:-1], pts[1:])
        if hi > lo
    )
    return (tails + middle) / (beta * T)


def gamma_exact(omega: npt.ArrayLike, beta: npt.ArrayLike, aB: npt.ArrayLike) -> float | FloatArray:
    """``E[Theta] / (alpha beta B_inf)``: the exact amplification factor, by quadrature.

    ``Theta(x)`` is :func:`realized_loss` for a mean uniform on
    ``[0, omega]``, and ``x`` follows the mixture density
    ``(beta / 2 omega) int_0^omega e^{-beta|x-y|} dy`` (App. D, eq. (25)).
    Defined for every ``omega > 0``. Eq. (11) is not a rigorous bound on it
    (App. D takes the edge-band ratio at the wrong shift): at ``omega = 0.1``,
    ``beta = 10``, ``alpha B_inf = 0.001`` it is 0.7906 (eq. (11): 0.7878).
    """
    omega, beta, a = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (omega, beta, aB)))
    if np.any(omega <= 0) or np.any(beta <= 0) or np.any(a <= 0):
        raise ValueError("gamma_exact needs omega > 0, beta > 0 and alpha * B_inf > 0")
    out = np.vectorize(_gamma_exact_scalar, otypes=[float])(omega, beta, a)
    return out if out.ndim else float(out)


def _gamma_corrected_scalar(omega: float, beta: float, T: float) -> float:
    h = (omega - T) / 2

    def dens(x: float) -> float:
        return float(_mixture_density(x, omega, beta))

    band_p = float(integrate.quad(dens, 0.0, h, epsabs=1e-14, epsrel=1e-11)[0])
    # In the edge band the largest ratio is e^{Theta(x)} (at t = +T; App. D uses t = -T).
    band_r = float(
        integrate.quad(
            lambda x: math.exp(float(realized_loss(x, 0.0, omega, beta, T))) * dens(x),
            0.0,
            h,
            epsabs=1e-14,
            epsrel=1e-11,
        )[0]
    )
    return math.log(math.exp(beta * T) * (1 - 2 * band_p) + 2 * band_r) / (beta * T)


def gamma_bound_corrected(omega: npt.ArrayLike, beta: npt.ArrayLike, aB: npt.ArrayLike) -> float | FloatArray:
    """Eq. (11)'s Jensen bound with the maximizing ratio in the edge bands (a true bound).

    Same construction as App. D (``E[Theta] <= log E[e^Theta]``, the global
    ratio ``e^{alpha beta B_inf}`` outside the two edge bands
    ``[0, h]`` and ``[omega - h, omega]``), but inside them the ratio is the
    maximum over ``t = +-alpha B_inf`` rather than the printed ``t = -alpha
    B_inf``. 0.7949 at ``omega = 0.1, beta = 10`` (exact 0.7906, eq. (11) 0.7878).
    """
    omega, beta, a = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (omega, beta, aB)))
    if np.any(a <= 0) or np.any(beta <= 0):
        raise ValueError("gamma_bound_corrected needs beta > 0 and alpha * B_inf > 0")
    if np.any(omega <= a):
        raise ValueError("gamma_bound_corrected needs omega > alpha * B_inf")
    out = np.vectorize(_gamma_corrected_scalar, otypes=[float])(omega, beta, a)
    return out if out.ndim else float(out)


# ------------------------------------------------------------ composition --
def advanced_composition(eps: npt.ArrayLike, delta: float, *, paper_form: bool = False) -> float:
    """Footnote 1: (epsilon', delta) from per-step pure losses ``eps`` (Kairouz et al.).

    Kairouz, Oh and Viswanath (2015), Theorem 3.5, for ``eps_l``-DP steps
    composed adaptively::

        min{ sum eps_l,
             sum eps_l tanh(eps_l/2) + sqrt(2 sum eps_l^2 log(e + sqrt(sum eps_l^2)/delta)),
             sum eps_l tanh(eps_l/2) + sqrt(2 sum eps_l^2 log(1/delta)) }

    (``(e^eps - 1) eps / (e^eps + 1) = eps tanh(eps/2)``). The footnote states
    the last term alone (``paper_form=True``; it writes the sum to ``K``
    where ``K - 1`` is meant). Applied to :func:`realized_loss` values the
    result inherits their ex-post, data-dependent nature.
    """
    e = np.asarray(eps, dtype=float).ravel()
    if e.size == 0 or np.any(~np.isfinite(e)) or np.any(e < 0):
        raise ValueError("eps must be a non-empty array of finite losses >= 0")
    delta = _checks.probability("delta", delta)
    first = float(np.sum(e * np.tanh(e / 2)))
    s2 = float(np.sum(e**2))
    third = first + math.sqrt(2 * s2 * math.log(1 / delta))
    if paper_form:
        return third
    second = first + math.sqrt(2 * s2 * math.log(math.e + math.sqrt(s2) / delta))
    return min(float(np.sum(e)), second, third)
