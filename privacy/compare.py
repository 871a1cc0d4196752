"""One mechanism, every analysis: epsilon for a sigma, sigma for an epsilon.

Used by ``vfl privacy`` and the README's comparison table. The mechanism is
T epochs of a Gaussian with standard deviation ``sigma`` on a value of l2
sensitivity ``C`` (z = sigma / C), without subsampling.

Under Hu et al.'s analysis a total ``delta`` is split as
``T * delta_iter + delta'`` with ``delta' = delta / 2`` and
``delta_iter = delta / (2 T)`` (Corollary 1); the other analyses use
``delta`` as the total directly.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq

from vfl.core.params import check_epsilon

from .accountant import calibrate_sigma, composed_gaussian_epsilon, epsilon_of, gaussian_events
from .moments import dp_admm_epsilon
from .paper import corollary1, split_delta, theorem1_epsilon, theorem1_sigma

__all__ = ["ANALYSES", "ANALYSIS_LABELS", "epsilons_for_sigma", "report", "sigmas_for_epsilon"]

ANALYSES = ("paper", "moments", "pld", "rdp", "exact")


def _check(delta: float, T: int, sensitivity: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if int(T) != T or T < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {T!r}")
    if not sensitivity > 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")


def epsilons_for_sigma(sigma: float, sensitivity: float, T: int, delta: float) -> dict[str, float | None]:
    """Total epsilon of T epochs at total ``delta`` under every analysis.

    ``None`` where an analysis does not apply (Theorem 1 and the moments
    accountant of DP-ADMM need a per-iteration epsilon in (0, 1]).
    """
    _check(delta, T, sensitivity)
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma!r}")
    z = sigma / sensitivity
    d_iter, d_prime = split_delta(delta, T)
    e_iter = theorem1_epsilon(sigma, d_iter, sensitivity)
    e_moments = theorem1_epsilon(sigma, delta, sensitivity)
    return {
        "paper": corollary1(e_iter, T, d_iter, d_prime)[0] if e_iter <= 1 else None,
        "moments": dp_admm_epsilon(e_moments, delta, T) if e_moments <= 1 else None,
        "pld": epsilon_of(gaussian_events([z] * T), delta, "pld"),
        "rdp": epsilon_of(gaussian_events([z] * T), delta, "rdp"),
        "exact": composed_gaussian_epsilon([z] * T, delta),
    }


def sigmas_for_epsilon(epsilon: float, sensitivity: float, T: int, delta: float) -> dict[str, float | None]:
    """The sigma each analysis needs for total ``(epsilon, delta)`` over T epochs."""
    _check(delta, T, sensitivity)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    d_iter, d_prime = split_delta(delta, T)
    out: dict[str, float | None] = {}

    # Corollary 1 is increasing in the per-iteration epsilon: invert it on (0, 1].
    def f(e: float) -> float:
        return corollary1(e, T, d_iter, d_prime)[0] - epsilon

    out["paper"] = (
        theorem1_sigma(brentq(f, 1e-12, 1.0, xtol=1e-14), d_iter, sensitivity) if f(1.0) >= 0 >= f(1e-12) else None
    )

    def g(e: float) -> float:
        return dp_admm_epsilon(e, delta, T) - epsilon

    out["moments"] = (
        theorem1_sigma(brentq(g, 1e-12, 1.0, xtol=1e-14), delta, sensitivity) if g(1.0) >= 0 >= g(1e-12) else None
    )  # no root: below its reach
    out["pld"] = calibrate_sigma(epsilon, delta, T, sensitivity, accountant="pld")
    out["rdp"] = calibrate_sigma(epsilon, delta, T, sensitivity, accountant="rdp")
    # exact: T Gaussians with z compose to one with z / sqrt(T); invert in log z

    def h(lz: float) -> float:
        return composed_gaussian_epsilon([math.exp(lz)] * T, delta) - epsilon

    lo, hi = math.log(1e-3), math.log(1e4)
    if h(hi) > 0:  # a tiny epsilon needs more noise than the usual bracket holds
        lo, hi = hi, math.log(Z_RANGE[1])
    out["exact"] = sensitivity * math.exp(brentq(h, lo, hi, xtol=1e-10))
    return out


#: what each analysis is, as ``vfl privacy`` prints it
ANALYSIS_LABELS = {
    "paper": "Hu et al. Theorem 1 + Corollary 1 (delta split T*delta_i + delta')",
    "moments": "DP-ADMM moments accountant (Huang et al. Theorem 2)",
    "pld": "dp-accounting PLD",
    "rdp": "dp-accounting RDP",
    "exact": "exact composed Gaussian (z_eff = z / sqrt(T))",
}


def _finite(option: str, value: float | None, *, positive: bool = True) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{option} must be a finite number, got {value}")
    if value is not None and positive and value <= 0:
        raise ValueError(f"{option} must be > 0, got {value:g}")


#: noise multipliers sigma / sensitivity the analyses can represent in float64
Z_RANGE = (1e-6, 1e10)


def report(*, sigma: float | None, epsilon: float | None, sensitivity: float, epochs: int, delta: float) -> list[str]:
    """``vfl privacy``'s lines: the epsilon of ``sigma``, or the sigma of ``epsilon``, under every
    analysis. A bad argument is a one-line ``ValueError`` naming its option."""
    _finite("--epsilon", epsilon)
    if epsilon is not None:
        check_epsilon("--epsilon", epsilon)
    if not (math.isfinite(delta) and 0 < delta < 1):
        raise ValueError(f"--delta must be in (0, 1), got {delta:g}")
    _finite("--sigma", sigma)
    _finite("--sensitivity", sensitivity)
    if sigma is not None and not Z_RANGE[0] <= sigma / sensitivity <= Z_RANGE[1]:
        raise ValueError(
            f"--sigma / --sensitivity = {sigma / sensitivity:g}: the noise multiplier "
            f"must be in [{Z_RANGE[0]:g}, {Z_RANGE[1]:g}] (beyond, the analyses "
            "overflow: nothing or everything is private)"
        )
    try:
        if sigma is not None:
            values = epsilons_for_sigma(sigma, sensitivity, epochs, delta)
            head = (
                f"sigma {sigma:g}, sensitivity {sensitivity:g} (z = {sigma / sensitivity:.4g}), "
                f"T = {epochs}, total delta {delta:g}: epsilon"
            )
        else:
            assert epsilon is not None  # the CLI asks for exactly one of sigma and epsilon
            values = sigmas_for_epsilon(epsilon, sensitivity, epochs, delta)
            head = (
                f"total (epsilon {epsilon:g}, delta {delta:g}) over T = {epochs}, "
                f"sensitivity {sensitivity:g}: sigma needed"
            )
    except (ValueError, OverflowError) as exc:
        raise ValueError(f"privacy: {' '.join(str(exc).split())}") from None
    lines = [head]
    for name, value in values.items():
        shown = "n/a (per-iteration epsilon outside its range)" if value is None else f"{value:.6g}"
        lines.append(f"  {name:8} {shown:>12}   {ANALYSIS_LABELS[name]}")
    return lines
