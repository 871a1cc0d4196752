"""Label DP in private stacking: randomized response to the passive parties, a debiased fit.

Party 1 sends the passive parties its labels through randomized response
(Warner 1965; the label-DP baseline of Ghazi et al. 2021): each label kept
with probability ``e^eps / (1 + e^eps)``, flipped with ``q = 1 / (1 + e^eps)``,
one draw for all passive parties (they may pool what they receive). That one
release is ``eps``-DP under :data:`~vfl.core.relations.LABELS`; everything
the passive parties compute from the noisy labels is post-processing.

A passive party fits with the unbiased estimator of the loss of Natarajan et
al. (2013, Lemma 1) for symmetric noise of rate ``q``:
``l~(t, y~) = ((1 - q) l(t, y~) - q l(t, -y~)) / (1 - 2q)``. For the logistic
loss ``l(t, y) - l(t, -y) = -y t``, so ``l~(t, y~) = l(t, y~) - c y~ t`` with
``c = q / (1 - 2q)``: the local fit (eq. L) plus the linear term
``- c sum_i y~_i a_i . x``, still ``2 lam``-strongly convex. Its per-sample
gradient is ``-y~ (sigma(-y~ t) + c) a``, of norm at most ``1 + c``: the
model's feature sensitivity grows to ``(1 + c + gtol) / lam_m``
(:func:`~.mechanism.model_sensitivity`), enforced by the same fit. The base
rate is debiased too: ``p = (p~ - q) / (1 - 2q)``.

Pure numpy: the flips are drawn by :func:`vfl.core.sampling.randomized_response`
from the generator party 1 passes (an exact sampler in deployment).
"""

from __future__ import annotations

import math

import numpy as np

from vfl.core.relations import LABELS
from vfl.core.sampling import rr_epsilon

__all__ = ["base_rate_logit", "debias", "flip_rate", "gradient_bound", "guarantee", "tilt"]


def flip_rate(label_epsilon: float | None) -> float:
    """``q = 1 / (1 + e^eps)`` at the epsilon RR runs at (0: labels sent as they are)."""
    if label_epsilon is None:
        return 0.0
    return 1.0 / (1.0 + math.exp(rr_epsilon(label_epsilon)[1]))


def debias(q: float) -> float:
    """``c = q / (1 - 2q)``: the weight of the debiased loss's linear term."""
    if not 0.0 <= q < 0.5:
        raise ValueError(f"a flip rate must be in [0, 1/2), got {q!r}")
    return q / (1.0 - 2.0 * q)


def gradient_bound(q: float) -> float:
    """The per-sample gradient bound ``1 + c`` of the debiased logistic loss (unit rows)."""
    return 1.0 + debias(q)


def tilt(D, y_noisy, q: float) -> np.ndarray | None:
    """The linear term ``c D^T y~`` of the debiased objective (None without noise)."""
    if q == 0:
        return None
    return debias(q) * np.asarray(D.T @ np.asarray(y_noisy, dtype=float)).ravel()


def base_rate_logit(y_noisy, q: float) -> float:
    """The base-rate logit of the true labels estimated from the noisy ones:
    ``p = (p~ - q) / (1 - 2q)``, clamped away from 0 and 1."""
    p = (float(np.mean(np.asarray(y_noisy) > 0)) - q) / (1.0 - 2.0 * q)
    p = min(max(p, 1e-6), 1 - 1e-6)
    return math.log(p / (1.0 - p))


def guarantee(label_epsilon: float) -> dict:
    """The manifest's ``label_guarantee`` of randomized response at ``label_epsilon``."""
    eps, q = rr_epsilon(label_epsilon)[1], flip_rate(label_epsilon)
    return {
        **LABELS.describe(),
        "epsilon": eps,
        "delta": 0.0,
        "mechanism": f"randomized response (Warner 1965): each label flipped with "
        f"probability q = 1 / (1 + e^eps) = {q:.6g}, one draw sent to every "
        "passive party (exact Bernoulli in deployment); the passive parties "
        "fit with the debiased loss of Natarajan et al. (2013), whose gradient "
        "bound 1 + q / (1 - 2q) enters the models' feature sensitivity",
        "enforced": {"labels_in": [-1, 1], "one_release": True},
    }
