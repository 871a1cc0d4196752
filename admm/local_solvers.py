"""Batched exact solvers of regularized logistic subproblems, one per provider.

Every provider ``i`` of a batch (shape ``(B, m, d)``) minimizes

    phi_i(w) = (1/m) sum_j log(1 + exp(-b_ij a_ij^T w))
               + alpha1 ||w||_1 + (alpha2 / 2) ||w||^2 + (rho / 2) ||w - c_i||^2.

This is the local step (line 4) of Huang et al.'s Algorithms 1 and 2 with
``c_i = w^k + gamma_i^k / rho``: ``f_i(w) - <gamma_i, w - w^k> + rho/2 ||w - w^k||^2``
equals ``phi_i`` up to a constant (complete the square). With ``rho = 0`` and a
batch of one it is the centralized problem (pre-training for D_w, the
centralized optimum).

Two solvers, both vectorized over the batch (no Python loop over providers):

- :func:`newton`: Newton's method for ``alpha1 = 0``; proximal Newton for
  ``alpha1 > 0`` (the l1 model subproblem is solved by coordinate descent,
  a loop over the d coordinates vectorized over the batch). Armijo
  backtracking on ``phi`` makes it globally convergent.
- :func:`fista`: accelerated proximal gradient with the constant momentum of
  a ``mu``-strongly convex objective, ``mu = rho + alpha2`` (Nesterov). With
  ``||a|| <= 1`` and ``rho = 1`` the condition number is at most
  ``(1/4 + rho) / rho = 1.25``, so it converges in a few tens of steps.

Both stop only when every problem's KKT residual (the norm of the minimum-norm
subgradient of ``phi_i``, or a certified upper bound of it) is at most
``tol``. Because ``phi_i`` is ``mu``-strongly convex, a point with a
subgradient of norm ``g`` is within ``g / mu`` of the exact minimizer; this is
what makes the inexact solve's error boundable in a sensitivity (see
:func:`vfl.admm.consensus.algorithm2_enforced_sensitivity`).

Pure numpy: no files, no printing, no global state, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

__all__ = ["SolveResult", "phi_value", "smooth_grad", "kkt_residual", "lipschitz", "newton",
           "fista", "soft_threshold"]

#: Armijo sufficient-decrease fraction and the most step halvings tried.
_ARMIJO = 0.25
_MAX_HALVINGS = 60


@dataclass
class SolveResult:
    """What a batched solve returns.

    ``residual[i]`` is the KKT residual of ``w[i]`` (exact for :func:`newton`,
    a certified upper bound for :func:`fista`); ``converged[i]`` is
    ``residual[i] <= tol``; ``iterations`` counts outer iterations (the batch
    moves together: the count is that of the slowest problem).
    """

    w: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    iterations: int


def _margins(A: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``A_i w_i`` for every problem: ``(B, m)`` (batched BLAS, faster than einsum)."""
    return np.matmul(A, w[:, :, None])[:, :, 0]


def _rmatvec(A: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``A_i^T s_i`` for every problem: ``(B, d)``."""
    return np.matmul(s[:, None, :], A)[:, 0, :]


def soft_threshold(x: np.ndarray, t) -> np.ndarray:
    """Prox of ``t ||.||_1``: ``sign(x) max(|x| - t, 0)``."""
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def phi_value(A, b, w, c, *, alpha1=0.0, alpha2=0.0, rho=0.0) -> np.ndarray:
    """``phi_i(w_i)`` for every problem, ``(B,)``."""
    m = A.shape[1]
    val = np.logaddexp(0.0, -b * _margins(A, w)).sum(axis=1) / m
    val += 0.5 * alpha2 * np.einsum("bd,bd->b", w, w)
    if rho:
        r = w - c
        val += 0.5 * rho * np.einsum("bd,bd->b", r, r)
    if alpha1:
        val += alpha1 * np.abs(w).sum(axis=1)
    return val


def smooth_grad(A, b, w, c, *, alpha2=0.0, rho=0.0, with_curvature=False):
    """Gradient of the smooth part of ``phi`` (everything but ``alpha1 ||w||_1``).

    With ``with_curvature`` also returns ``l''`` per sample (for the Hessian).
    """
    m = A.shape[1]
    q = expit(-b * _margins(A, w))  # sigmoid(-b u): l'(u) = -b q
    g = _rmatvec(A, -b * q) / m + alpha2 * w
    if rho:
        g += rho * (w - c)
    if with_curvature:
        return g, q * (1.0 - q)
    return g


def kkt_residual(grad: np.ndarray, w: np.ndarray, alpha1: float = 0.0) -> np.ndarray:
    """Norm of the minimum-norm subgradient of ``phi`` at ``w``, ``(B,)``.

    ``grad`` is the gradient of the smooth part. Coordinates with ``w_j != 0``
    contribute ``grad_j + alpha1 sign(w_j)``; zero coordinates contribute the
    part of ``|grad_j|`` above ``alpha1`` (0 when ``0`` is in the
    subdifferential). Zero exactly at the minimizer.
    """
    if alpha1:
        r = np.where(w != 0.0, grad + alpha1 * np.sign(w),
                     np.sign(grad) * np.maximum(np.abs(grad) - alpha1, 0.0))
    else:
        r = grad
    return np.sqrt(np.einsum("bd,bd->b", r, r))


def lipschitz(A: np.ndarray, *, alpha2: float = 0.0, rho: float = 0.0) -> np.ndarray:
    """Per-problem Lipschitz constant of the smooth gradient, ``(B,)``.

    ``l'' <= 1/4`` for the logistic loss, so the data Hessian is at most
    ``lambda_max(A_i^T A_i) / (4 m)``.
    """
    m = A.shape[1]
    gram = np.matmul(A.transpose(0, 2, 1), A)
    return np.linalg.eigvalsh(gram)[:, -1] / (4.0 * m) + alpha2 + rho


def _check(A, b, c, w0, alpha1, alpha2, rho, tol, max_iter):
    if A.ndim != 3 or b.shape != A.shape[:2]:
        raise ValueError(f"A must be (B, m, d) and b (B, m); got {A.shape} and {b.shape}")
    B, _, d = A.shape
    for name, v in (("c", c), ("w0", w0)):
        if v is not None and np.shape(v) != (B, d):
            raise ValueError(f"{name} must have shape {(B, d)}, got {np.shape(v)}")
    for name, v in (("alpha1", alpha1), ("alpha2", alpha2), ("rho", rho)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    if rho and c is None:
        raise ValueError("rho > 0 needs the centres c")


def _cd_l1_model(g, H, w, alpha1, sweeps, tol):
    """Minimize ``g^T (z - w) + 1/2 (z - w)^T H (z - w) + alpha1 ||z||_1`` over z.

    Cyclic coordinate descent with exact coordinate minimization
    (soft-thresholding), vectorized over the batch; ``r = H (z - w)`` is kept
    up to date column by column. Stops after ``sweeps`` sweeps or when no
    coordinate moved more than ``tol`` in a sweep. Returns z.
    """
    z = w.copy()
    r = np.zeros_like(w)
    diag = np.einsum("bii->bi", H)
    d = w.shape[1]
    for _ in range(sweeps):
        biggest = 0.0
        for j in range(d):
            hjj = diag[:, j]
            zj = z[:, j]
            new = soft_threshold(zj - (g[:, j] + r[:, j]) / hjj, alpha1 / hjj)
            step = new - zj
            r += H[:, :, j] * step[:, None]
            z[:, j] = new
            biggest = max(biggest, float(np.max(np.abs(step), initial=0.0)))
        if biggest <= tol:
            break
    return z


def newton(A, b, c=None, *, alpha1=0.0, alpha2=0.0, rho=0.0, w0=None, tol=1e-10,
           max_iter=100, cd_sweeps=200) -> SolveResult:
    """(Proximal) Newton's method on every ``phi_i`` at once.

    Each iteration: gradient and Hessian ``(1/m) A^T diag(l'') A + (alpha2 + rho) I``
    (one batched product); the direction solves the quadratic model (a
    batched linear solve, or coordinate descent on the l1 model); Armijo
    backtracking on ``phi`` with fraction 1/4. Problems whose exact KKT
    residual is already ``<= tol`` are frozen (their direction is zero), so
    the returned ``w[i]`` has exactly the residual reported. Stops when all are
    frozen or after ``max_iter`` iterations.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    _check(A, b, c, w0, alpha1, alpha2, rho, tol, max_iter)
    B, m, d = A.shape
    w = np.zeros((B, d)) if w0 is None else np.array(w0, dtype=float)
    kw = dict(alpha2=alpha2, rho=rho)
    eye = np.eye(d)
    it = 0
    while True:
        g, h = smooth_grad(A, b, w, c, with_curvature=True, **kw)
        res = kkt_residual(g, w, alpha1)
        active = res > tol
        if not active.any() or it >= max_iter:
            break
        it += 1
        H = np.matmul(A.transpose(0, 2, 1), A * (h / m)[:, :, None]) + (alpha2 + rho) * eye
        if alpha1:
            # The model's own accuracy only has to beat the outer tolerance.
            z = _cd_l1_model(g, H, w, alpha1, cd_sweeps, 1e-3 * tol)
            p = z - w
            decrease = np.einsum("bd,bd->b", g, p) + alpha1 * (np.abs(z).sum(1) - np.abs(w).sum(1))
        else:
            p = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
            decrease = np.einsum("bd,bd->b", g, p)
        p[~active] = 0.0
        decrease[~active] = 0.0
        f0 = phi_value(A, b, w, c, alpha1=alpha1, **kw)
        # Near the minimizer the predicted decrease falls below the rounding
        # error of phi; the slack lets those (tiny, Newton-exact) steps pass.
        slack = 8.0 * np.finfo(float).eps * (1.0 + np.abs(f0))
        t = np.ones(B)
        todo = active.copy()
        for _ in range(_MAX_HALVINGS):
            trial = w + t[:, None] * p
            f = phi_value(A, b, trial, c, alpha1=alpha1, **kw)
            ok = f <= f0 + _ARMIJO * t * decrease + slack
            todo &= ~ok
            if not todo.any():
                break
            t = np.where(todo, 0.5 * t, t)
        # A direction that cannot decrease phi at all (rounding floor): stay put.
        t[todo] = 0.0
        w = w + t[:, None] * p
    return SolveResult(w, res, ~active, it)


def fista(A, b, c=None, *, alpha1=0.0, alpha2=0.0, rho=0.0, w0=None, tol=1e-10,
          max_iter=1000, L=None) -> SolveResult:
    """Accelerated proximal gradient on every ``phi_i`` at once.

    Momentum ``(1 - sqrt(mu/L)) / (1 + sqrt(mu/L))`` with ``mu = rho + alpha2``
    (Nesterov's constant-momentum scheme for strongly convex objectives;
    ``mu = 0`` falls back to the FISTA sequence ``(t_k - 1)/t_{k+1}``).

    Stopping uses a certified bound: with ``w+ = prox(y - grad s(y) / L)``,
    the vector ``grad s(w+) - grad s(y) - L (w+ - y)`` is a subgradient of
    ``phi`` at ``w+`` (optimality of the prox step) and, since
    ``0 <= Hess s <= L``, its norm is at most ``L ||w+ - y||``. The solve stops
    when that bound is ``<= tol`` for every problem, and reports it as the
    residual.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    _check(A, b, c, w0, alpha1, alpha2, rho, tol, max_iter)
    B, m, d = A.shape
    L = lipschitz(A, alpha2=alpha2, rho=rho) if L is None else np.broadcast_to(L, (B,))
    mu = alpha2 + rho
    w = np.zeros((B, d)) if w0 is None else np.array(w0, dtype=float)
    w_prev = w
    kw = dict(alpha2=alpha2, rho=rho)
    t_k = 1.0
    bound = np.full(B, np.inf)
    it = 0
    while it < max_iter:
        it += 1
        if mu > 0:
            beta = ((1.0 - np.sqrt(mu / L)) / (1.0 + np.sqrt(mu / L)))[:, None]
        else:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
            beta, t_k = (t_k - 1.0) / t_next, t_next
        y = w + beta * (w - w_prev)
        g = smooth_grad(A, b, y, c, **kw)
        step = y - g / L[:, None]
        w_new = soft_threshold(step, (alpha1 / L)[:, None]) if alpha1 else step
        bound = L * np.sqrt(np.einsum("bd,bd->b", w_new - y, w_new - y))
        w_prev, w = w, w_new
        if np.all(bound <= tol):
            break
    return SolveResult(w, bound, bound <= tol, it)
