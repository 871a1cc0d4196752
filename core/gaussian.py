"""The exact privacy profile of the Gaussian mechanism (Balle and Wang 2018, Thm. 8).

A Gaussian mechanism with noise multiplier ``z`` (std over l2 sensitivity) is
``(eps, delta(eps))``-DP exactly for

    delta(eps) = Phi(-eps z + 1/(2z)) - e^eps Phi(-eps z - 1/(2z)),

and T of them compose to one with ``z_eff = (sum_k z_k^-2)^(-1/2)``. The ledger
(``core.ledger``) and the accountants (``vfl.privacy``) both read it from here,
so the core needs nothing above it.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

__all__ = ["log_delta", "epsilon"]


def log_delta(eps: float, z: float) -> float:
    """``log delta(eps)`` of a Gaussian with std ``z`` and sensitivity 1 (in log space: the
    difference of two tail probabilities underflows long before it is 0)."""
    a = -eps * z + 0.5 / z
    b = -eps * z - 0.5 / z
    log_first = log_ndtr(a)
    log_second = eps + log_ndtr(b)  # < log_first for every eps >= 0
    if log_second >= log_first:  # only by rounding, far in the tail
        return -math.inf
    return float(log_first + math.log1p(-math.exp(log_second - log_first)))


def epsilon(z: float, delta: float) -> float:
    """The smallest ``eps`` with ``delta(eps) <= delta`` (0 when ``delta(0) <= delta``):
    ``delta(eps)`` decreases, so Brent's method on a doubling bracket finds it."""
    target = math.log(delta)
    if log_delta(0.0, z) <= target:
        return 0.0
    lo, hi = 0.0, 1.0
    while log_delta(hi, z) > target:
        lo, hi = hi, 2.0 * hi
    return float(brentq(lambda e: log_delta(e, z) - target, lo, hi, xtol=1e-14, rtol=1e-12))
