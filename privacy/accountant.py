"""Tight accounting of the Gaussian noise through Google's ``dp-accounting``.

A party that releases ``D_m x_m + N(0, sigma_k^2)`` at iteration ``k``, with
``C_k`` a bound on the l2 distance between the releases under neighbouring
datasets (Lemma 1 of Hu et al.), runs a Gaussian mechanism with noise
multiplier ``z_k = sigma_k / C_k``. This module composes those mechanisms with
the privacy-loss-distribution ("pld", tight up to a discretization that is
rounded pessimistically) or Renyi ("rdp", a looser upper bound) accountant.

Neighbouring relation: ``C_k`` already bounds the distance between the two
neighbours' releases, so each step is exactly a Gaussian shifted by one noise
multiplier. That is dp-accounting's ``GaussianDpEvent`` under its default
``ADD_OR_REMOVE_ONE`` relation (its ``REPLACE_ONE`` would double the shift,
as it assumes per-record contributions of norm ``<= C``). The relation the
epsilons refer to is :data:`vfl.privacy.NEIGHBOURING`.

Without subsampling, ``T`` Gaussian mechanisms compose exactly to a single
Gaussian with ``z_eff = (sum_k z_k^-2)^(-1/2)`` (the privacy losses are
independent normals). :func:`composed_gaussian_epsilon` evaluates that single
Gaussian with the analytic formula of Balle and Wang (2018) and is the
independent cross-check of the PLD accountant.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence

import dp_accounting
import numpy as np
import numpy.typing as npt
from dp_accounting import pld, rdp

from vfl.core.gaussian import epsilon as _analytic_epsilon

from . import _checks

__all__ = [
    "ACCOUNTANTS",
    "gaussian_events",
    "laplace_event",
    "epsilon_of",
    "delta_of",
    "composed_gaussian_epsilon",
    "calibrate_sigma",
    "epsilon_curve",
    "laplace_composition_epsilon",
]

ACCOUNTANTS = ("pld", "rdp")

# The PLD discretizes the privacy loss on a grid of step ``rel * epsilon`` (with
# epsilon estimated first), so the grid has a bounded number of points (~3/rel)
# whatever epsilon is: dp-accounting's fixed default 1e-4 takes ~8 s for one
# Gaussian at epsilon ~ 300 and is needlessly coarse at epsilon ~ 0.01.
# A single Gaussian (or one self-composed run of equal ones) is one closed-form
# PLD whose epsilon matches the analytic one to ~1e-11 even at rel = 1e-2
# (checked from epsilon 0.002 to 700). The rounding error of n convolved PLDs
# grows like n rel^2, hence rel = 1e-3 / sqrt(n) there (relative error ~1e-6).
_PLD_SINGLE_INTERVAL = 1e-2
_PLD_COMPOSED_INTERVAL = 1e-3
# Grid of the first, cheap pass that estimates epsilon for non-Gaussian events.
_PLD_COARSE_INTERVAL = 1e-2
# Above this epsilon the PLD's float64 e^epsilon overflows (near 709) and its
# answer degrades; Gaussian-only events then get the exact analytic value.
_PLD_MAX_EPSILON = 500.0


# --------------------------------------------------------------- events --
def gaussian_events(noise_multipliers: Sequence[float]) -> dp_accounting.DpEvent:
    """The composition of Gaussian mechanisms with noise multipliers ``z_k``.

    Consecutive equal ``z_k`` are grouped into one ``SelfComposedDpEvent``
    (the PLD accountant composes such a group in closed form), so a long run
    with constant noise costs the same as one step.
    """
    z = _checks.noise_multipliers(noise_multipliers)
    events = []
    for value, run in itertools.groupby(z.tolist()):
        n = sum(1 for _ in run)
        g = dp_accounting.GaussianDpEvent(value)
        events.append(g if n == 1 else dp_accounting.SelfComposedDpEvent(g, n))
    return events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)


def laplace_event(parameter: float, count: int = 1) -> dp_accounting.DpEvent:
    """``count`` Laplace mechanisms of scale ``parameter`` on an l1-sensitivity-1 query.

    For a query of l1 sensitivity ``Delta`` and noise scale ``b`` pass
    ``parameter = b / Delta``.
    """
    b = _checks.positive("parameter", parameter)
    count = _checks.count("count", count)
    event = dp_accounting.LaplaceDpEvent(b)
    return event if count == 1 else dp_accounting.SelfComposedDpEvent(event, count)


# ----------------------------------------------------------- accounting --
def epsilon_of(event: dp_accounting.DpEvent, delta: float, accountant: str = "pld") -> float:
    """Smallest epsilon such that ``event`` is (epsilon, delta)-DP per ``accountant``.

    ``"pld"`` is tight up to the discretization of the privacy loss, which is
    rounded pessimistically so the result stays an upper bound; its grid step
    is set relative to a first estimate of epsilon (see the module constants).
    For Gaussian-only events with epsilon above 500, where the PLD's float64
    ``e^epsilon`` arithmetic breaks down, the exact value of
    :func:`composed_gaussian_epsilon` is returned instead. ``"rdp"`` is a
    looser upper bound (about 3-10% above the exact value for Gaussians).
    """
    delta = _checks.probability("delta", delta)
    _check_accountant(accountant)
    _check_event(event, accountant)
    return _epsilon(event, delta, accountant)


def delta_of(event: dp_accounting.DpEvent, epsilon: float, accountant: str = "pld") -> float:
    """Smallest delta such that ``event`` is (epsilon, delta)-DP per ``accountant``.

    ``epsilon`` must be > 0 (at 0 the question is about total variation, not
    the (epsilon, delta) trade-off this module reports).
    """
    epsilon = _checks.positive("epsilon", epsilon)
    _check_accountant(accountant)
    _check_event(event, accountant)
    acc = _fresh(accountant, _pld_interval(event, epsilon))
    return float(acc.compose(event).get_delta(epsilon))


def composed_gaussian_epsilon(noise_multipliers: Sequence[float], delta: float) -> float:
    """Exact epsilon at ``delta`` of the composed Gaussian mechanisms (no subsampling).

    The composition equals one Gaussian with ``z_eff = (sum_k z_k^-2)^(-1/2)``,
    whose exact privacy profile is (Balle and Wang 2018, Thm. 8, sensitivity 1)

        delta(eps) = Phi(-eps z + 1/(2z)) - e^eps Phi(-eps z - 1/(2z)),

    decreasing in ``eps``; it is solved for ``eps`` with Brent's method in log
    space. Returns 0 when ``delta(0) <= delta``.
    """
    z = _checks.noise_multipliers(noise_multipliers)
    delta = _checks.probability("delta", delta)
    return _analytic_epsilon(float(np.sum(z**-2.0)) ** -0.5, delta)


def calibrate_sigma(
    target_epsilon: float,
    delta: float,
    T: int,
    sensitivity: float = 1.0,
    accountant: str = "pld",
) -> float:
    """Smallest constant sigma whose ``T``-fold Gaussian composition is (target, delta)-DP.

    Searches the noise multiplier ``z = sigma / sensitivity`` with
    ``dp_accounting.calibrate_dp_mechanism`` (Brent's method, to a relative
    tolerance of 1e-5, and the returned ``z`` always meets the target). The
    search starts from the exact ``z`` of :func:`composed_gaussian_epsilon`,
    a lower bound for any valid accountant.
    """
    target = _checks.positive("target_epsilon", target_epsilon)
    delta = _checks.probability("delta", delta)
    T = _checks.count("T", T)
    sensitivity = _checks.positive("sensitivity", sensitivity)
    _check_accountant(accountant)
    return _calibrated_multiplier(target, delta, T, accountant) * sensitivity


@functools.lru_cache(maxsize=1024)
def _calibrated_multiplier(target: float, delta: float, T: int, accountant: str) -> float:
    """The noise multiplier of :func:`calibrate_sigma` (a pure function: cached, since the
    audit and sweeps build the same calibrated solver many times)."""
    z_exact = dp_accounting.get_sigma_gaussian(target, delta) * math.sqrt(T)

    def make_event(z: float) -> dp_accounting.DpEvent:
        g = dp_accounting.GaussianDpEvent(z)
        return g if T == 1 else dp_accounting.SelfComposedDpEvent(g, T)

    interval = _pld_interval(make_event(z_exact), target)

    z = dp_accounting.calibrate_dp_mechanism(
        lambda: _fresh(accountant, interval),
        make_event,
        target,
        delta,
        # Below 0.9 z_exact every valid accountant exceeds the target; the
        # library widens the bracket upwards if 1.5 z_exact is not enough.
        bracket_interval=dp_accounting.LowerEndpointAndGuess(0.9 * z_exact, 1.5 * z_exact),
        tol=1e-5 * z_exact,
    )
    return float(z)


def epsilon_curve(noise_multipliers: Sequence[float], delta: float, accountant: str = "pld") -> np.ndarray:
    """Epsilon at ``delta`` after each prefix ``t = 1..T`` of the Gaussian steps.

    Each prefix is accounted as its exactly equivalent single Gaussian,
    ``z_eff(t) = (sum_{k<=t} z_k^-2)^(-1/2)``: for the PLD this is the same
    closed form the library uses for a run of equal ``z`` (so the curve's last
    value equals ``epsilon_of(gaussian_events(z), delta)`` when all ``z`` are
    equal), and it avoids ``O(T^2)`` PLD convolutions for varying ``z``; for
    RDP it is exact since Gaussian RDP is additive in ``z^-2``.
    """
    z = _checks.noise_multipliers(noise_multipliers)
    delta = _checks.probability("delta", delta)
    _check_accountant(accountant)
    z_eff = np.cumsum(z**-2.0) ** -0.5
    return np.array([_epsilon(dp_accounting.GaussianDpEvent(float(ze)), delta, accountant) for ze in z_eff])


def laplace_composition_epsilon(parameters: npt.ArrayLike, delta: float, accountant: str = "pld") -> float:
    """Tight epsilon at ``delta`` of composed Laplace mechanisms (Xiao et al. 2019's worst case).

    ``parameters[k] = (noise scale) / (l1 sensitivity)``; for the worst case of
    Algorithm 1 per coordinate that is ``1 / (beta_{k+1} alpha B_inf)``.
    Equal parameters are grouped into one self-composed event.
    """
    p = np.asarray(parameters, dtype=float).ravel()
    if p.size == 0 or np.any(~np.isfinite(p)) or np.any(p <= 0):
        raise ValueError("parameters must be a non-empty array of finite numbers > 0")
    values, starts = np.unique(p, return_index=True)
    # keep the original order of first appearance; order does not change a composition
    events = [laplace_event(float(v), int(np.sum(p == v))) for v in values[np.argsort(starts)]]
    event = events[0] if len(events) == 1 else dp_accounting.ComposedDpEvent(events)
    return epsilon_of(event, delta, accountant)


# -------------------------------------------------------------- helpers --
def _check_accountant(accountant: object) -> None:
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")


def _check_event(event: object, accountant: str) -> None:
    if not isinstance(event, dp_accounting.DpEvent):
        raise ValueError(f"event must be a dp_accounting.DpEvent, got {event!r}")
    if not _fresh(accountant, _PLD_COARSE_INTERVAL).supports(event):
        raise ValueError(f"event is not supported by the {accountant!r} accountant: {event!r}")


def _fresh(accountant: str, interval: float) -> dp_accounting.PrivacyAccountant:
    if accountant == "pld":
        return pld.PLDAccountant(value_discretization_interval=interval)
    return rdp.RdpAccountant()


def _epsilon(event: dp_accounting.DpEvent, delta: float, accountant: str) -> float:
    """``epsilon_of`` without the argument checks."""
    if accountant == "rdp":
        return float(rdp.RdpAccountant().compose(event).get_epsilon(delta))
    precision = _gaussian_precision(event)
    if precision is not None:
        hint = _analytic_epsilon(precision**-0.5, delta) if precision > 0 else 0.0
        if hint > _PLD_MAX_EPSILON:
            return hint
    else:
        hint = pld.PLDAccountant(value_discretization_interval=_PLD_COARSE_INTERVAL).compose(event).get_epsilon(delta)
        if not np.isfinite(hint):
            return float(hint)
    acc = pld.PLDAccountant(value_discretization_interval=_pld_interval(event, hint))
    return float(acc.compose(event).get_epsilon(delta))


def _pld_interval(event: dp_accounting.DpEvent, epsilon_hint: float) -> float:
    n = _n_components(event)
    rel = _PLD_SINGLE_INTERVAL if n == 1 else _PLD_COMPOSED_INTERVAL / math.sqrt(n)
    return rel * max(epsilon_hint, 1e-3)


def _n_components(event: dp_accounting.DpEvent) -> int:
    """How many PLDs the accountant convolves for ``event``."""
    if isinstance(event, dp_accounting.ComposedDpEvent):
        return max(1, sum(_n_components(e) for e in event.events))
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        if isinstance(event.event, dp_accounting.GaussianDpEvent):
            return 1  # composed in closed form: std / sqrt(count)
        return int(event.count) * _n_components(event.event)
    return 1


def _gaussian_precision(event: dp_accounting.DpEvent) -> float | None:
    """``sum_k z_k^-2`` if ``event`` composes only Gaussians, else None."""
    if isinstance(event, dp_accounting.GaussianDpEvent):
        z = float(event.noise_multiplier)
        return z**-2.0 if z > 0 else None
    if isinstance(event, dp_accounting.NoOpDpEvent):
        return 0.0
    if isinstance(event, dp_accounting.SelfComposedDpEvent):
        inner = _gaussian_precision(event.event)
        return None if inner is None else event.count * inner
    if isinstance(event, dp_accounting.ComposedDpEvent):
        parts = [_gaussian_precision(e) for e in event.events]
        known = [p for p in parts if p is not None]
        return None if len(known) < len(parts) else float(sum(known))
    return None
