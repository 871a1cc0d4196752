"""Per-sample losses l(u_i; b_i) of a linear score u_i = D^i x and label b_i.

The ADMM sharing problem (Hu et al., eq. (1)) absorbs the labels into the loss
``l(sum_m D_m x_m)``. Here ``l(u) = w * sum_i l_i(u_i)`` with ``w = 1`` for
``reduction="sum"`` and ``w = 1/N`` for ``reduction="mean"``, the same meaning
as PyTorch's ``reduction`` argument.

Each loss exposes what the solvers need, all vectorized over samples:

- ``value``/``grad``/``hess``: l_i, l_i' and l_i'' elementwise (unweighted);
- ``prox_linear(s, y, rho, w)``: the minimizer of the z-subproblem (7),
  ``w * l_i(z) - y_i z + rho/2 (s_i - z)^2``, for every sample at once.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["Loss", "LogisticLoss", "SquaredLoss", "get_loss", "LOSSES"]


class Loss:
    """Interface of a smooth convex per-sample loss with labels ``b``."""

    name: str = ""
    #: Upper bound of l_i'' (Lipschitz constant of l_i'), for Assumption 1.
    curvature: float = 0.0

    def value(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def grad(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def hess(self, u: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def prox_linear(self, s, y, b, rho, w, tol=1e-10, max_iter=100, z0=None):
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogisticLoss(Loss):
    """``l_i(u) = log(1 + exp(-b_i u))`` with ``b_i`` in {-1, +1}."""

    name = "logistic"
    curvature = 0.25

    def value(self, u, b):
        return np.logaddexp(0.0, -b * u)

    def grad(self, u, b):
        return -b * expit(-b * u)

    def hess(self, u, b):
        # sigmoid(u) * sigmoid(-u), not p * (1 - p): no cancellation for large u.
        return expit(u) * expit(-u)

    def _grad_hess(self, u, b):
        # One sigmoid for both: q = sigmoid(-b u), l' = -b q, l'' = q (1 - q).
        # (1 - q) may lose relative accuracy when l'' is tiny, harmless where
        # l'' is only ever added to rho.
        q = expit(-b * u)
        return -b * q, q * (1.0 - q)

    def prox_linear(self, s, y, b, rho, w, tol=1e-10, max_iter=100, z0=None):
        r"""Solve (7) for every sample: ``w l_i(z) - y_i z + rho/2 (z - s_i)^2``.

        The optimality condition ``g(z) = w l_i'(z) - y_i + rho (z - s_i) = 0``
        has a strictly increasing left side, and since ``|l_i'| < 1`` its root
        lies in ``[s_i + (y_i - w)/rho, s_i + (y_i + w)/rho]``. The bracket
        shrinks with the sign of ``g``; a Newton step is taken when it lands
        inside the bracket and is at most half the step before last, else the
        bracket is bisected (``rtsafe`` of Numerical Recipes, vectorized). So
        convergence is guaranteed, and quadratic near the root.

        Iteration stops once every step is at most ``tol`` (in units of ``z``,
        whatever the scales of ``w`` and ``rho``); that last step is applied.
        ``z0`` warm-starts it (ADMM passes the previous epoch's z, which is
        close: two or three steps instead of four or five on a9a).
        """
        c = s + y / rho  # minimizer when w = 0; the bracket is c +- w/rho
        lo = c - w / rho
        hi = c + w / rho
        z = c.copy() if z0 is None else np.clip(z0, lo, hi)
        dx = hi - lo  # the last step and the one before, per sample
        dx_old = dx.copy()
        for _ in range(max_iter):
            grad, hess = self._grad_hess(z, b)
            g = w * grad + rho * (z - c)
            step = g / (w * hess + rho)
            pos = g > 0
            hi = np.where(pos, z, hi)
            lo = np.where(pos, lo, z)
            z_newton = z - step
            newton = ((z_newton > lo) & (z_newton < hi) & (2.0 * np.abs(step) <= np.abs(dx_old))) \
                | (np.abs(step) <= tol)  # a last tiny step may round onto a bracket end
            dx_old = dx
            dx = np.where(newton, step, z - 0.5 * (lo + hi))
            z = z - dx
            if np.max(np.abs(dx), initial=0.0) <= tol:
                break
        return z


class SquaredLoss(Loss):
    """``l_i(u) = (u - b_i)^2`` (ridge regression; PyTorch's ``MSELoss``)."""

    name = "squared"
    curvature = 2.0

    def value(self, u, b):
        return (u - b) ** 2

    def grad(self, u, b):
        return 2.0 * (u - b)

    def hess(self, u, b):
        return np.full_like(u, 2.0, dtype=float)

    def prox_linear(self, s, y, b, rho, w, tol=1e-10, max_iter=100, z0=None):
        # 2w(z - b) - y + rho(z - s) = 0 has a closed form (z0 is not needed).
        return (2.0 * w * b + y + rho * s) / (2.0 * w + rho)


LOSSES: dict[str, type[Loss]] = {"logistic": LogisticLoss, "squared": SquaredLoss}


def get_loss(name: str) -> Loss:
    """Return the loss called ``name`` (one of :data:`LOSSES`)."""
    try:
        return LOSSES[name]()
    except KeyError:
        raise ValueError(
            f"unknown loss {name!r}; expected one of {sorted(LOSSES)}"
        ) from None
