"""Evaluation of a linear model from its margins ``u = D x``, and the record of an epoch.

Labels are in {-1, +1}; the predicted probability of +1 is ``sigmoid(u)``,
so the log loss is ``mean_i log(1 + exp(-b_i u_i))`` (natural log, the same
number as ``sklearn.metrics.log_loss``) and a sample is classified +1 when
``u > 0`` (the convention of ``sklearn``'s ``decision_function``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["EpochStats", "log_loss", "accuracy"]


def log_loss(u: np.ndarray, b: np.ndarray) -> float:
    """Mean logistic loss of margins ``u`` for labels ``b`` in {-1, +1}.

    ``softplus(t) = max(t, 0) + log1p(exp(-|t|))`` with ``|t|`` capped at 700:
    the same value as ``logaddexp(0, t)`` (the cap changes it by < 1e-304),
    without libm's slow subnormal path for the huge margins of noisy runs.
    """
    t = -b * u
    return float(np.mean(np.maximum(t, 0.0) + np.log1p(np.exp(-np.minimum(np.abs(t), 700.0)))))


def accuracy(u: np.ndarray, b: np.ndarray) -> float:
    """Fraction of samples with ``sign(u)`` equal to ``b`` (``u = 0`` -> -1)."""
    return float(np.mean(np.where(u > 0, 1.0, -1.0) == b))


@dataclass
class EpochStats:
    """What one epoch of an iterative solver produced, for recording (ADMM sharing, SGD).

    ``y_seconds`` is the central node's time after (7): the y-update plus,
    for the variants, the relaxation, penalty and acceleration bookkeeping
    (``extra["accel_seconds"]`` of which is the acceleration alone).
    """

    epoch: int
    objective: float
    primal_residual: float
    dual_residual: float
    x_seconds: float = 0.0
    z_seconds: float = 0.0
    y_seconds: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)
