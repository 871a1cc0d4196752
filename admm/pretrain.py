"""Centralized solvers for Huang et al.'s experiments: D_w pre-training and the optimum.

- :func:`central_solve`: ``argmin_w (1/n) sum_j log(1 + exp(-b_j a_j^T w)) + alpha R(w)``
  for ``R = ||.||_1`` (proximal Newton) or ``R = ||.||^2 / 2`` (Newton), to a
  KKT residual of ``1e-10`` by default.
- :func:`pretrain_dw`: spec decision D3. ``D_w = ||w_hat||`` with ``w_hat`` the
  centralized solution on the pre-training samples with ``alpha = lambda / N``
  (the per-provider weight), the bound on ``||w* - w^0||`` with zero
  initialization used by the step sizes of Theorems 3 and 4.
- :func:`consensus_optimum`: the optimum ``w*`` of problem (1a)-(1b) on all
  providers' pooled rows (the "centralized optimum" reference line).

Problem (1a) with equal ``m_i = m`` is ``sum_i (1/m) sum_j l + lambda R =
N [ (1/(N m)) sum_{i,j} l + (lambda / N) R ]``, so its minimizer is the
pooled mean-loss problem with ``alpha = lambda / N``.
"""

from __future__ import annotations

import numpy as np

from .local_solvers import newton

__all__ = ["central_solve", "pretrain_dw", "consensus_optimum", "CENTRAL_REGULARIZERS"]

#: Regularizer names understood here (those of :class:`vfl.admm.Objective`).
CENTRAL_REGULARIZERS = ("l1", "half_l2sq")


def _alphas(regularizer: str, alpha: float) -> tuple[float, float]:
    if regularizer not in CENTRAL_REGULARIZERS:
        raise ValueError(f"regularizer must be one of {CENTRAL_REGULARIZERS}, got {regularizer!r}")
    if not (np.isfinite(alpha) and alpha >= 0):
        raise ValueError(f"the regularization weight must be a finite number >= 0, got {alpha!r}")
    return (alpha, 0.0) if regularizer == "l1" else (0.0, alpha)


def central_solve(A, b, *, alpha: float, regularizer: str, tol: float = 1e-10, max_iter: int = 200) -> np.ndarray:
    """``argmin_w mean_j log(1 + exp(-b_j a_j^T w)) + alpha R(w)`` on dense rows.

    Newton (``half_l2sq``) or proximal Newton with an accelerated proximal
    gradient model solve (``l1``), from zero, until the KKT residual (norm of the
    minimum-norm subgradient) is at most ``tol``.

    Raises
    ------
    ValueError
        Bad shapes or arguments, or the solve did not reach ``tol`` in
        ``max_iter`` iterations (e.g. separable data with ``alpha = 0``).
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.ndim != 2 or b.shape != (A.shape[0],) or A.shape[0] == 0:
        raise ValueError(f"A must be (n, d) with n >= 1 and b (n,); got {A.shape} and {b.shape}")
    a1, a2 = _alphas(regularizer, alpha)
    res = newton(A[None], b[None], alpha1=a1, alpha2=a2, tol=tol, max_iter=max_iter, model_iter=20_000)
    if not res.converged[0]:
        raise ValueError(
            f"the centralized {regularizer} logistic solve did not reach a KKT "
            f"residual of {tol:g} in {max_iter} iterations (residual "
            f"{res.residual[0]:.3g}); is the data separable with a tiny alpha?"
        )
    return res.w[0]


def pretrain_dw(A0, b0, lam_per_provider: float, regularizer: str, *, tol: float = 1e-10) -> float:
    """D_w of spec decision D3: ``||w_hat||_2`` on the pre-training rows.

    ``w_hat = argmin (1/n0) sum l(a, b, w) + (lambda / N) R(w)`` with the
    experiment's own regularizer (``"l1"`` or ``"half_l2sq"``). Pass
    ``lam_per_provider = lambda`` for the spec's alternative (a smaller D_w).
    The pre-training rows are treated as public (the paper does not account
    for them, erratum E16).
    """
    return float(np.linalg.norm(central_solve(A0, b0, alpha=lam_per_provider, regularizer=regularizer, tol=tol)))


def consensus_optimum(A, b, *, lam: float, regularizer: str, tol: float = 1e-10):
    """Optimum of (1a)-(1b) for providers' rows ``A`` ``(N, m, d)``, labels ``b`` ``(N, m)``.

    Returns ``(w_star, F_star)`` with ``F_star = sum_i (1/m) sum_j l + lambda R(w_star)``,
    the objective of :class:`vfl.admm.Objective` with ``reduction="unit_mean"``
    (equal ``m``: the pooled problem with weight ``lambda / N``, scaled by N).
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    if A.ndim != 3 or b.shape != A.shape[:2]:
        raise ValueError(f"A must be (N, m, d) and b (N, m); got {A.shape} and {b.shape}")
    N, m, d = A.shape
    w = central_solve(A.reshape(N * m, d), b.reshape(-1), alpha=lam / N, regularizer=regularizer, tol=tol / N)
    loss = float(np.logaddexp(0.0, -b * (A @ w)).sum() / m)
    reg = np.abs(w).sum() if regularizer == "l1" else 0.5 * float(w @ w)
    return w, loss + lam * float(reg)
