"""The moments accountant of DP-ADMM (Huang et al., Theorem 2 and Appendix A).

Each of the ``T`` iterations adds Gaussian noise calibrated by the classical
bound to be (eps, delta)-DP, i.e. a Gaussian mechanism with sensitivity 1 and
``sigma = sqrt(2 ln(1.25/delta)) / eps``. Its log moment of order ``tau`` is
``tau (tau + 1) / (2 sigma^2) = tau (tau + 1) eps^2 / (4 ln(1.25/delta))``,
log moments add over iterations, and the tail bound gives

    eps_bar = min_{tau in Z+} (alpha(tau) + ln(1/delta)) / tau,
    alpha(tau) = T tau (tau + 1) eps^2 / (4 ln(1.25/delta)),

with the same ``delta`` as the total delta. This is how the paper's Section VI
numbers (eps_bar = 0.5009 and 1.0193 for eps = 0.05 and 0.1, delta = 1e-3,
T = 100) are obtained. It is a valid but loose bound; the tight epsilon of the
same noise is ``vfl.privacy.epsilon_of(gaussian_events([z] * T), delta)``.
"""

from __future__ import annotations

import math

import numpy as np

from . import _checks

__all__ = ["dp_admm_epsilon"]


def dp_admm_epsilon(epsilon: float, delta: float, T: int, max_order: int = 10_000) -> float:
    """Total epsilon of ``T`` (eps, delta)-DP Gaussian iterations, Theorem 2.

    Parameters
    ----------
    epsilon : float > 0
        Per-iteration epsilon (the paper takes it in (0, 1]; the log-moment
        computation is valid for any value since it only uses the Gaussian's
        ``sigma = sqrt(2 ln(1.25/delta)) / epsilon``).
    delta : float in (0, 1)
        Per-iteration delta in ``sigma``, and also the total delta.
    T : int >= 1
        Number of iterations.
    max_order : int >= 1
        Largest moment order ``tau`` tried. The objective is convex in ``tau``
        with real minimizer ``sqrt(ln(1/delta) / a)``,
        ``a = T eps^2 / (4 ln(1.25/delta))``; if that exceeds ``max_order`` the
        result is still a valid (larger) bound.

    Returns
    -------
    float
        ``eps_bar`` such that the ``T`` iterations are (eps_bar, delta)-DP.
    """
    eps = _checks.positive("epsilon", epsilon)
    delta = _checks.probability("delta", delta)
    T = _checks.count("T", T)
    max_order = _checks.count("max_order", max_order)
    tau = np.arange(1, max_order + 1, dtype=float)
    alpha = T * tau * (tau + 1.0) * eps**2 / (4.0 * math.log(1.25 / delta))
    return float(np.min((alpha + math.log(1.0 / delta)) / tau))
