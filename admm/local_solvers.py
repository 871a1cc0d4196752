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
  ``alpha1 > 0`` (the l1 model subproblem is solved by accelerated proximal
  gradient, vectorized over the batch, to a tolerance that shrinks with the
  KKT residual). Armijo backtracking on ``phi`` makes it globally
  convergent.
- :func:`fista`: accelerated proximal gradient with the constant momentum of
  a ``mu``-strongly convex objective, ``mu = rho + alpha2`` (Nesterov). With
  ``||a|| <= 1`` and ``rho = 1`` the condition number is at most
  ``(1/4 + rho) / rho = 1.25``, so it converges in a few tens of steps.

Each problem stops on its own: once its KKT residual (the norm of the
minimum-norm subgradient of ``phi_i``, or a certified upper bound of it) is
at most ``tol`` it is frozen (a vectorized mask) while the others go on, so
problem i's result is the one a batch of problem i alone gives, to the bit,
whichever problems share its batch (Huang et al. 2019, Algorithm 1, line 4
is each provider's own argmin: a provider cannot see the others' solves).
Because ``phi_i`` is ``mu``-strongly convex, a point with a subgradient of
norm ``g`` is within ``g / mu`` of the exact minimizer; this is what makes
the inexact solve's error boundable in a sensitivity (see
:func:`vfl.admm.consensus.algorithm2_enforced_sensitivity`).

Pure numpy: no files, no printing, no global state, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SolveResult", "phi_value", "smooth_grad", "kkt_residual", "lipschitz", "newton", "fista", "soft_threshold"]

#: Armijo sufficient-decrease fraction and the most step halvings tried.
_ARMIJO = 0.25
_MAX_HALVINGS = 60
#: Proximal Newton (l1) solves its model to ``MODEL_FRACTION min(r, 1) r`` at KKT residual r.
MODEL_FRACTION = 1e-2


@dataclass
class SolveResult:
    """What a batched solve returns.

    ``residual[i]`` is the KKT residual of ``w[i]`` (exact for :func:`newton`,
    a certified upper bound for :func:`fista`); ``converged[i]`` is
    ``residual[i] <= tol``; ``steps[i]`` counts problem i's outer iterations
    (it is frozen after them); ``iterations`` is the largest of them.
    """

    w: np.ndarray
    residual: np.ndarray
    converged: np.ndarray
    iterations: int
    steps: np.ndarray


def _margins(A: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``A_i w_i`` for every problem: ``(B, m)`` (batched BLAS, faster than einsum).

    ``w`` may carry leading axes (the audit's runs, ``(R, B, d)``): then each problem's
    rows meet all its runs in one matrix product, the runs as columns (BLAS-3).
    """
    if w.ndim == 2:
        return np.matmul(A, w[:, :, None])[:, :, 0]
    B, d = w.shape[-2:]
    cols = np.moveaxis(w.reshape(-1, B, d), 0, -1)  # (B, d, R)
    return np.moveaxis(np.matmul(A, cols), -1, 0).reshape(w.shape[:-1] + (A.shape[1],))


def _rmatvec(A: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``A_i^T s_i`` for every problem: ``(B, d)`` (leading axes of ``s`` as in :func:`_margins`)."""
    if s.ndim == 2:
        return np.matmul(s[:, None, :], A)[:, 0, :]
    B, m = s.shape[-2:]
    rows = np.moveaxis(s.reshape(-1, B, m), 0, 1)  # (B, R, m)
    return np.moveaxis(np.matmul(rows, A), 1, 0).reshape(s.shape[:-1] + (A.shape[2],))


#: ``exp`` arguments are clipped to +-this: beyond it the results are exact to
#: 1e-304 absolute, and over- or underflowing ``exp`` takes libm's slow path (a
#: few times slower; Algorithm 2's noisy iterates have margins ~1e3).
_EXP_CLIP = 700.0


def _softplus(z: np.ndarray) -> np.ndarray:
    """``log(1 + exp(z))`` without overflow (a few times faster than ``np.logaddexp(0, z)``)."""
    a = np.abs(z)
    np.minimum(a, _EXP_CLIP, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    np.log1p(a, out=a)
    a += np.maximum(z, 0.0)
    return a


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))``, exact to 1e-304 absolute (see :data:`_EXP_CLIP`)."""
    e = np.maximum(z, -_EXP_CLIP)  # two ufuncs: cheaper than np.clip's Python layers
    np.minimum(e, _EXP_CLIP, out=e)
    np.negative(e, out=e)
    np.exp(e, out=e)
    e += 1.0
    return np.reciprocal(e, out=e)


def soft_threshold(x: np.ndarray, t) -> np.ndarray:
    """Prox of ``t ||.||_1``: ``sign(x) max(|x| - t, 0)``."""
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def phi_value(A, b, w, c, *, alpha1=0.0, alpha2=0.0, rho=0.0) -> np.ndarray:
    """``phi_i(w_i)`` for every problem, ``(B,)``."""
    return _phi_at(_margins(A, w), b, w, c, alpha1=alpha1, alpha2=alpha2, rho=rho)


def _phi_at(u, b, w, c, *, alpha1=0.0, alpha2=0.0, rho=0.0) -> np.ndarray:
    """``phi_i(w_i)`` from the margins ``u = A_i w_i`` (saves the product when they are known)."""
    val = _softplus(-b * u).mean(axis=1)
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
    return _grad_at(A, b, _margins(A, w), w, c, alpha2=alpha2, rho=rho, with_curvature=with_curvature)


def _grad_at(A, b, u, w, c, *, alpha2=0.0, rho=0.0, with_curvature=False):
    """:func:`smooth_grad` from the margins ``u = A_i w_i``."""
    m = A.shape[1]
    q = _sigmoid(-b * u)  # sigmoid(-b u): l'(u) = -b q
    g = _rmatvec(A, -b * q) / m + alpha2 * w
    if rho:
        g += rho * (w - c)
    if with_curvature:
        h = q * (1.0 - q)
        # Saturated samples (|margin| ~ 700, Algorithm 2's noisy centres) have
        # l'' ~ 1e-304; their products with the rows are subnormal numbers,
        # which the FPU handles ~100x slower. Below 1e-200 they are exact zeros
        # to far beyond the solve's tolerance.
        h[h < 1e-200] = 0.0
        return g, h
    return g


def kkt_residual(grad: np.ndarray, w: np.ndarray, alpha1: float = 0.0) -> np.ndarray:
    """Norm of the minimum-norm subgradient of ``phi`` at ``w``, ``(B,)``.

    ``grad`` is the gradient of the smooth part. Coordinates with ``w_j != 0``
    contribute ``grad_j + alpha1 sign(w_j)``; zero coordinates contribute the
    part of ``|grad_j|`` above ``alpha1`` (0 when ``0`` is in the
    subdifferential). Zero exactly at the minimizer.
    """
    if alpha1:
        r = np.where(w != 0.0, grad + alpha1 * np.sign(w), np.sign(grad) * np.maximum(np.abs(grad) - alpha1, 0.0))
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
        if v is not None and np.shape(v)[-2:] != (B, d):
            raise ValueError(f"{name} must have shape {(B, d)} (after any leading axes of runs), got {np.shape(v)}")
    for name, v in (("alpha1", alpha1), ("alpha2", alpha2), ("rho", rho)):
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    if not (np.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a finite number > 0, got {tol!r}")
    if int(max_iter) < 1:
        raise ValueError(f"max_iter must be >= 1, got {max_iter!r}")
    if rho and c is None:
        raise ValueError("rho > 0 needs the centres c")


def _model_value(g, H, p, alpha1, z):
    """``g^T p + 1/2 p^T H p + alpha1 ||z||_1`` with ``p = z - w`` (the l1 model, batched)."""
    Hp = np.matmul(H, p[:, :, None])[:, :, 0]
    return np.einsum("bd,bd->b", g + 0.5 * Hp, p) + alpha1 * np.abs(z).sum(axis=1)


def _l1_model(g, H, w, alpha1, max_iter, tol, skip):
    """Minimize ``q(z) = g^T (z - w) + 1/2 (z - w)^T H (z - w) + alpha1 ||z||_1`` over z.

    Accelerated proximal gradient on the quadratic model, vectorized over the
    batch, from ``z = w``: step ``1/L`` and momentum ``(1 - sqrt(mu/L)) /
    (1 + sqrt(mu/L))`` with ``mu``, ``L`` the extreme eigenvalues of each
    ``H`` (the FISTA sequence where ``mu = 0``). A problem is frozen once its
    certified model residual ``L ||z+ - y||`` (a bound on a subgradient of
    ``q`` at ``z+``, as in :func:`fista`) is at most its own ``tol[i]`` or at
    the rounding level of ``z``; the problems in ``skip`` (the outer loop's
    converged ones) stay at ``z = w``. It stops when all are frozen, or after
    ``max_iter`` iterations. The iterates are not monotone, so a problem
    whose ``z`` does not decrease the model below ``q(w)`` gets the
    (monotone) proximal gradient step from ``w`` instead: the Newton
    direction ``z - w`` is then always one of descent.
    """
    ev = np.linalg.eigvalsh(H)
    L = np.maximum(ev[:, -1], np.finfo(float).tiny)
    root = np.sqrt(np.clip(ev[:, 0], 0.0, None) / L)
    strong = root > 0
    beta_strong = (1.0 - root) / (1.0 + root)
    thr = (alpha1 / L)[:, None]
    floor = 64.0 * np.finfo(float).eps * L
    z = w.copy()
    z_prev = z
    done = skip.copy()
    t_k = 1.0
    first = None
    for _ in range(max_iter):
        if done.all():
            break
        t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
        beta = np.where(strong, beta_strong, (t_k - 1.0) / t_next)[:, None]
        t_k = t_next
        y = z + beta * (z - z_prev)
        grad = g + np.matmul(H, (y - w)[:, :, None])[:, :, 0]
        z_new = soft_threshold(y - grad / L[:, None], thr)
        if first is None:
            first = z_new  # y = w here: the proximal gradient step from w
        step = np.sqrt(np.einsum("bd,bd->b", z_new - y, z_new - y))
        reached = L * step <= np.maximum(tol, floor * (1.0 + np.abs(z_new).max(axis=1)))
        frozen = done[:, None]
        z_prev, z = np.where(frozen, z_prev, z), np.where(frozen, z, z_new)
        done |= reached
    worse = (_model_value(g, H, z - w, alpha1, z) >= alpha1 * np.abs(w).sum(axis=1)) & ~skip
    if worse.any():
        z[worse] = first[worse]
    return z


def newton(
    A, b, c=None, *, alpha1=0.0, alpha2=0.0, rho=0.0, w0=None, tol=1e-10, max_iter=100, model_iter=2000
) -> SolveResult:
    """(Proximal) Newton's method on every ``phi_i`` at once.

    Each iteration: gradient and Hessian ``(1/m) A^T diag(l'') A + (alpha2 + rho) I``
    (one batched product); the direction solves the quadratic model (a
    batched linear solve, or accelerated proximal gradient on the l1 model,
    at most ``model_iter`` iterations, see :func:`_l1_model`); Armijo
    backtracking on ``phi`` with fraction 1/4. Problems whose exact KKT
    residual is already ``<= tol`` are frozen (they keep their point), so the
    returned ``w[i]`` has exactly the residual reported, and each problem's
    steps, model tolerance and step halvings are its own. Stops when all are
    frozen or after ``max_iter`` iterations.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    _check(A, b, c, w0, alpha1, alpha2, rho, tol, max_iter)
    B, m, d = A.shape
    shape = np.broadcast_shapes(*(np.shape(v) for v in (c, w0) if v is not None), (B, d))
    if len(shape) > 2:  # leading axes (the audit's runs): one batch of problems per run
        c_r = None if c is None else np.broadcast_to(c, shape).reshape(-1, B, d)
        w_r = None if w0 is None else np.broadcast_to(w0, shape).reshape(-1, B, d)
        runs = [
            newton(
                A,
                b,
                None if c is None else c_r[k],
                alpha1=alpha1,
                alpha2=alpha2,
                rho=rho,
                w0=None if w0 is None else w_r[k],
                tol=tol,
                max_iter=max_iter,
                model_iter=model_iter,
            )
            for k in range(int(np.prod(shape[:-2])))
        ]
        lead = shape[:-2]
        return SolveResult(
            np.stack([r.w for r in runs]).reshape(shape),
            np.stack([r.residual for r in runs]).reshape(lead + (B,)),
            np.stack([r.converged for r in runs]).reshape(lead + (B,)),
            max(r.iterations for r in runs),
            np.stack([r.steps for r in runs]).reshape(lead + (B,)),
        )
    w = np.zeros((B, d)) if w0 is None else np.array(w0, dtype=float)
    kw = dict(alpha2=alpha2, rho=rho)
    eye = np.eye(d)
    it = 0
    steps = np.zeros(B, dtype=int)
    u = _margins(A, w)
    while True:
        g, h = _grad_at(A, b, u, w, c, with_curvature=True, **kw)
        res = kkt_residual(g, w, alpha1)
        active = res > tol
        if not active.any() or it >= max_iter:
            break
        it += 1
        steps += active
        H = np.matmul(A.transpose(0, 2, 1), A * (h / m)[:, :, None]) + (alpha2 + rho) * eye
        if alpha1:
            # Inexact proximal Newton: far from the minimizer the model needs
            # solving only to a fraction of the problem's own KKT residual
            # (squared, which keeps the local rate superlinear); the stopping
            # test of the outer loop stays the exact residual <= tol.
            model_tol = np.maximum(1e-3 * tol, MODEL_FRACTION * np.minimum(res, 1.0) * res)
            z = _l1_model(g, H, w, alpha1, model_iter, model_tol, ~active)
            p = z - w
            decrease = np.einsum("bd,bd->b", g, p) + alpha1 * (np.abs(z).sum(1) - np.abs(w).sum(1))
        else:
            p = -np.linalg.solve(H, g[:, :, None])[:, :, 0]
            decrease = np.einsum("bd,bd->b", g, p)
        p[~active] = 0.0
        decrease[~active] = 0.0
        f0 = _phi_at(u, b, w, c, alpha1=alpha1, **kw)
        # Near the minimizer the predicted decrease falls below the rounding
        # error of phi; the slack lets those (tiny, Newton-exact) steps pass.
        slack = 8.0 * np.finfo(float).eps * (1.0 + np.abs(f0))
        Ap = _margins(A, p)  # margins along the ray: A (w + t p) = u + t A p
        t = np.ones(B)
        todo = active.copy()
        for _ in range(_MAX_HALVINGS):
            trial = w + t[:, None] * p
            f = _phi_at(u + t[:, None] * Ap, b, trial, c, alpha1=alpha1, **kw)
            ok = f <= f0 + _ARMIJO * t * decrease + slack
            todo &= ~ok
            if not todo.any():
                break
            t = np.where(todo, 0.5 * t, t)
        # A direction that cannot decrease phi at all (rounding floor): stay put.
        t[todo] = 0.0
        w = np.where(active[:, None], w + t[:, None] * p, w)
        # Recomputed, not updated along the ray, so the residual reported is
        # that of the returned w exactly.
        u = _margins(A, w)
    return SolveResult(w, res, ~active, it, steps)


def fista(A, b, c=None, *, alpha1=0.0, alpha2=0.0, rho=0.0, w0=None, tol=1e-10, max_iter=1000, L=None) -> SolveResult:
    """Accelerated proximal gradient on every ``phi_i`` at once.

    Momentum ``(1 - sqrt(mu/L)) / (1 + sqrt(mu/L))`` with ``mu = rho + alpha2``
    (Nesterov's constant-momentum scheme for strongly convex objectives;
    ``mu = 0`` falls back to the FISTA sequence ``(t_k - 1)/t_{k+1}``).

    Stopping uses a certified bound: with ``w+ = prox(y - grad s(y) / L)``,
    the vector ``grad s(w+) - grad s(y) - L (w+ - y)`` is a subgradient of
    ``phi`` at ``w+`` (optimality of the prox step) and, since
    ``0 <= Hess s <= L``, its norm is at most ``L ||w+ - y||``. A problem is
    frozen at the first ``w+`` whose bound is ``<= tol`` (reported as its
    residual); the solve stops when all are frozen.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    _check(A, b, c, w0, alpha1, alpha2, rho, tol, max_iter)
    B, m, d = A.shape
    L = lipschitz(A, alpha2=alpha2, rho=rho) if L is None else np.broadcast_to(L, (B,))
    mu = alpha2 + rho
    # leading axes of c or w0 (the audit's runs) are problems of their own
    shape = np.broadcast_shapes(*(np.shape(v) for v in (c, w0) if v is not None), (B, d))
    w = np.zeros(shape) if w0 is None else np.array(np.broadcast_to(w0, shape), dtype=float)
    w_prev = w
    kw = dict(alpha2=alpha2, rho=rho)
    t_k = 1.0
    bound = np.full(shape[:-1], np.inf)
    active = np.ones(shape[:-1], dtype=bool)
    steps = np.zeros(shape[:-1], dtype=int)
    it = 0
    while it < max_iter and active.any():
        it += 1
        steps += active
        if mu > 0:
            beta = ((1.0 - np.sqrt(mu / L)) / (1.0 + np.sqrt(mu / L)))[:, None]
        else:
            t_next = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t_k * t_k))
            beta, t_k = (t_k - 1.0) / t_next, t_next
        y = w + beta * (w - w_prev)
        g = smooth_grad(A, b, y, c, **kw)
        step = y - g / L[:, None]
        w_new = soft_threshold(step, (alpha1 / L)[:, None]) if alpha1 else step
        # a converged problem keeps its point and bound (its momentum state is moot)
        frozen = ~active[..., None]
        w_prev, w = np.where(frozen, w_prev, w), np.where(frozen, w, w_new)
        bound = np.where(active, L * np.sqrt(np.einsum("...d,...d->...", w_new - y, w_new - y)), bound)
        active &= ~(bound <= tol)
    return SolveResult(w, bound, bound <= tol, it, steps)
