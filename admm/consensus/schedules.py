"""Huang et al.'s constants, step sizes and noise scales (Theorems 1, 3, 4, Lemma 1)."""

from __future__ import annotations

import math

import numpy as np

#: Bound on ``||l'||`` that the solvers enforce (||a|| <= 1, |b| = 1, logistic loss).
S1 = 1.0
#: Bound on ``||Hess l||`` given ``||a|| <= 1``: ``l'' <= 1/4`` (Theorem 4).
S3 = 0.25
#: Bound on ``||Hess R||`` for ``R = ||w||^2 / 2`` (Theorem 4).
S4 = 1.0

HUANG_PAPER = (
    "Huang, Hu, Chan-Tin, Gong: DP-ADMM: ADMM-based Distributed Learning with "
    "Differential Privacy (arXiv 1808.10101v1, 2018)"
)
REGULARIZERS = ("l1", "half_l2sq")
#: Slack allowed on a row norm before ``row_bound = "check"`` refuses the data.
ROW_TOLERANCE = 1e-9


def _positive(name, value):
    v = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _log_term(delta: float) -> float:
    """``ln(1.25 / delta)``, the L of the classical Gaussian mechanism."""
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return math.log(1.25 / delta)


def _loop_index(k):
    k = np.asarray(k)
    if not np.issubdtype(k.dtype, np.integer) or np.any(k < 0):
        raise ValueError(f"k is the 0-based loop index (integer >= 0), got {k!r}")
    return k.astype(float)


def theorem3_eta(k, *, D_w: float, lam: float, N: int, d: int, S1: float = S1):
    """Step size of Theorem 3 (l1): ``eta^{k+1} = D_w / ((S1 + lam S2 / N) sqrt(2 (k+1)))``.

    ``k`` is the 0-based loop index (iteration k produces ``k+1``);
    ``S2 = sqrt(d)`` bounds ``||sgn(w)||`` (Sec. VI-A). Vectorized over ``k``.
    """
    kk = _loop_index(k)
    _positive("D_w", D_w)
    return D_w / ((S1 + lam * math.sqrt(d) / N) * np.sqrt(2.0 * (kk + 1.0)))


def theorem4_eta(
    k,
    *,
    D_w: float,
    lam: float,
    N: int,
    m: int,
    epsilon: float,
    delta: float,
    S1: float = S1,
    S3: float = S3,
    S4: float = S4,
):
    """Step size of Theorem 4 (l2): ``(S3 + lam S4 / N + 2 S1 sqrt(4 (k+1) L) / (m eps D_w))^-1``.

    ``L = ln(1.25 / delta)``; depends on the privacy level (Sec. VI-B).
    """
    kk = _loop_index(k)
    _positive("D_w", D_w)
    _positive("epsilon", epsilon)
    L = _log_term(delta)
    privacy_term = 2.0 * S1 * np.sqrt(4.0 * (kk + 1.0) * L) / (m * epsilon * D_w)
    return 1.0 / (S3 + lam * S4 / N + privacy_term)


def lemma1_sensitivity(eta, *, m: int, rho: float, S1: float = S1):
    """Lemma 1, eq. (6): l2 sensitivity of (3a), ``2 S1 / (m (rho + 1/eta))``."""
    return 2.0 * S1 / (m * (rho + 1.0 / _positive("eta", eta)))


def gaussian_sigma(sensitivity, epsilon: float, delta: float):
    """Classical Gaussian mechanism: ``sigma = Delta sqrt(2 ln(1.25/delta)) / eps``."""
    _positive("epsilon", epsilon)
    return np.asarray(sensitivity, dtype=float) * math.sqrt(2.0 * _log_term(delta)) / epsilon


def theorem1_sigma(eta, *, m: int, rho: float, epsilon: float, delta: float, S1: float = S1):
    """Theorem 1: ``sigma_{k+1} = 2 S1 sqrt(2 ln(1.25/delta)) / (m eps (rho + 1/eta^{k+1}))``."""
    return gaussian_sigma(lemma1_sensitivity(eta, m=m, rho=rho, S1=S1), epsilon, delta)


def algorithm2_paper_sensitivity(*, N: int, m: int, lam: float, S1: float = S1) -> float:
    """The paper's Algorithm 2 sensitivity ``2 S1 N / (m lam)`` (Sec. III-A, VI)."""
    _positive("lam", lam)
    return 2.0 * S1 * N / (m * lam)


def algorithm2_argmin_sensitivity(*, m: int, mu: float, S1: float = S1) -> float:
    """Sensitivity of the exact local argmin, ``2 S1 / (m mu)``.

    The local objective ``f_i(w) - <gamma, w - w^k> + rho/2 ||w - w^k||^2`` is
    ``mu``-strongly convex with ``mu = rho + (lambda/N) R''``. Replacing one
    record changes it by ``(l_new - l_old) / m``, whose gradient has norm at
    most ``2 S1 / m``; strong monotonicity of the subdifferential of the
    common part then gives ``mu ||w - w'||^2 <= (2 S1 / m) ||w - w'||``
    (valid for the non-smooth l1 regularizer too). Huang et al. 2019, Sec.
    III-A, print ``2 S1 N / (m lambda)``, which ignores ``rho``.
    """
    return 2.0 * S1 / (m * float(_positive("mu", mu)))


def algorithm2_enforced_sensitivity(*, m: int, mu: float, tol: float, S1: float = S1) -> float:
    """The bound the code enforces for Algorithm 2: ``2 S1 / (m mu) + 2 g / mu``.

    The local solve stops at a point ``w_hat`` with a subgradient ``s`` of
    norm at most ``g = tol`` (:mod:`vfl.admm.local_solvers`). For the
    ``mu``-strongly convex local objective and its minimizer ``w*``,
    ``<s - 0, w_hat - w*> >= mu ||w_hat - w*||^2``, so by Cauchy-Schwarz
    ``||w_hat - w*|| <= g / mu``. For neighbours D, D' (each solved to the same
    tolerance, from any warm start) the triangle inequality gives
    ``||w_hat_D - w_hat_D'|| <= g/mu + 2 S1/(m mu) + g/mu``. The warm start
    (the provider's previous clean solution) is a deterministic function of
    the data and the released history, so each iteration is still a Gaussian
    mechanism of this sensitivity conditional on what was released before
    (adaptive composition).
    """
    return algorithm2_argmin_sensitivity(m=m, mu=mu, S1=S1) + 2.0 * float(tol) / float(mu)


def algorithm2_sigma(*, N: int, m: int, lam: float, epsilon: float, delta: float, S1: float = S1) -> float:
    """The paper's Algorithm 2 noise ``2 S1 N sqrt(2 ln(1.25/delta)) / (m lam eps)``, as printed."""
    return float(gaussian_sigma(algorithm2_paper_sensitivity(N=N, m=m, lam=lam, S1=S1), epsilon, delta))
