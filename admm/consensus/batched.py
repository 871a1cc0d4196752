"""An iteration's pieces, batched over providers: closed form (3a), objectives (1a), (2)."""

from __future__ import annotations

import numpy as np

from ..local_solvers import _margins as _each
from ..local_solvers import _rmatvec, _sigmoid, _softplus


def _margins(A, w):
    """``A_i w`` (common ``w`` of shape (d,)) or ``A_i w_i`` (``(N, d)``): ``(N, m)``; with
    leading axes (the audit's runs, ``(R, N, d)``), ``(R, N, m)``, the runs as columns."""
    if w.ndim == 1:
        return A @ w
    return _each(A, w)


def _loss_grad(A, b, W):
    """``(1/m) sum_j l'(a_ij, b_ij, W_i)`` for every provider, ``(N, d)`` (leading axes kept)."""
    q = _sigmoid(-b * _margins(A, W))
    return _rmatvec(A, -b * q) / A.shape[1]


def _reg_value(W, regularizer):
    if regularizer == "l1":
        return np.abs(W).sum(axis=-1)
    return 0.5 * np.einsum("...d,...d->...", W, W)


def _reg_subgrad(W, regularizer):
    """``R'(W)``: ``sgn(W)`` with sgn(0) = 0 (as MATLAB's; matters only at w = 0), or ``W``."""
    return np.sign(W) if regularizer == "l1" else W


def dp_admm_closed_form(A, b, W_tilde, w, gamma, *, eta, rho, lam_per_provider, regularizer):
    """Minimizer of the approximate augmented Lagrangian (2), eq. (3a), for every provider.

    ``w_i = (rho w + gamma_i + W_tilde_i / eta - f_i'(W_tilde_i)) / (rho + 1/eta)``,
    ``f_i'(v) = (1/m) sum_j l'(a_ij, b_ij, v) + (lambda/N) R'(v)``. ``eta`` is a
    scalar or one value per provider.
    """
    inv_eta = 1.0 / np.asarray(eta, dtype=float).reshape(-1, 1) if np.ndim(eta) else 1.0 / eta
    grad = _loss_grad(A, b, W_tilde) + lam_per_provider * _reg_subgrad(W_tilde, regularizer)
    return (rho * w[..., None, :] + gamma + W_tilde * inv_eta - grad) / (rho + inv_eta)


def local_objectives(A, b, W, *, lam_per_provider: float, regularizer: str) -> np.ndarray:
    """``f_i(W_i)`` per provider, ``(N,)`` (``W`` ``(N, d)``, or one ``w`` ``(d,)`` for all)."""
    loss = _softplus(-b * _margins(A, W)).mean(axis=1)
    return loss + lam_per_provider * _reg_value(W, regularizer)


def empirical_loss(A, b, w) -> float:
    """Metric 2 of Sec. VI: ``sum_i (1/m) sum_j l(a_ij, b_ij, w)`` (no regularizer).

    ``N ln 2`` at ``w = 0``.
    """
    return float(_softplus(-b * _margins(A, np.asarray(w, dtype=float))).mean(axis=1).sum())


def augmented_objective(A, b, W_bar, w_bar, *, lam_per_provider: float, regularizer: str) -> float:
    """Metric 1 of Sec. VI: ``sum_i f_i(W_bar_i) + ||W_bar_i - w_bar||`` (unsquared l2, beta = 1).

    ``W_bar``/``w_bar`` are the ergodic averages of the local and global
    iterates (Sec. V); the expectation is the mean over repeated runs.
    """
    f = local_objectives(A, b, W_bar, lam_per_provider=lam_per_provider, regularizer=regularizer)
    gap = np.sqrt(np.einsum("nd,nd->n", W_bar - w_bar, W_bar - w_bar))
    return float(f.sum() + gap.sum())
