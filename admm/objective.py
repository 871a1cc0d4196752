"""The regularized empirical risk minimized over distributed features.

Hu et al., eq. (1) with the l2 regularizer ``R_m(x_m) = ||x_m||^2``::

    F(x) = w * sum_i l_i( sum_m D_m^i x_m ) + lam * sum_m ||x_m||^2,

with ``w = 1`` (``reduction="sum"``) or ``w = 1/N`` (``reduction="mean"``).
The same object is used by the ADMM solver, the central reference solver and
the SGD baseline, so every method minimizes exactly the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .losses import Loss, get_loss

__all__ = ["Objective", "REDUCTIONS"]

REDUCTIONS = ("sum", "mean")


@dataclass(frozen=True)
class Objective:
    """``F(x) = w * sum_i loss(u_i, b_i) + lam * ||x||^2`` with ``u = D x``.

    Parameters
    ----------
    loss : {"logistic", "squared"}
    lam : float, >= 0
        Weight of the l2 regularizer (the paper's lambda).
    reduction : {"sum", "mean"}
        How per-sample losses are combined (PyTorch's meaning).
    """

    loss: str = "logistic"
    lam: float = 1e-3
    reduction: str = "sum"

    def __post_init__(self):
        get_loss(self.loss)  # validates the name
        if self.reduction not in REDUCTIONS:
            raise ValueError(
                f"unknown reduction {self.reduction!r}; expected one of {REDUCTIONS}"
            )
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {self.lam!r}")

    @property
    def loss_fn(self) -> Loss:
        return get_loss(self.loss)

    def weight(self, n_samples: int) -> float:
        """The factor ``w`` in front of the summed loss."""
        return 1.0 if self.reduction == "sum" else 1.0 / n_samples

    def smoothness(self, n_samples: int) -> float:
        """Lipschitz constant L of the gradient of ``l(z)`` (Assumption 1.1)."""
        return self.weight(n_samples) * self.loss_fn.curvature

    def min_rho(self, n_samples: int) -> float:
        """Smallest rho allowed by Assumption 1.2(c) of Hu et al.

        The z-subproblem (7) is ``rho``-strongly convex, so
        ``rho * gamma(rho) > 2 L^2`` and ``rho >= L`` hold iff
        ``rho > sqrt(2) L``. Below it the Jacobi iteration may diverge.
        """
        return float(np.sqrt(2.0) * self.smoothness(n_samples))

    # -- evaluated from the margins u = D x (what ADMM parties can share) --
    def data_term(self, u: np.ndarray, b: np.ndarray) -> float:
        return self.weight(len(b)) * float(np.sum(self.loss_fn.value(u, b)))

    def reg_term(self, x: np.ndarray | list[np.ndarray]) -> float:
        if isinstance(x, (list, tuple)):
            return self.lam * float(sum(xm @ xm for xm in x))
        return self.lam * float(x @ x)

    def value_from_margins(self, u, b, x) -> float:
        """F at ``x`` given the margins ``u = D x`` already computed."""
        return self.data_term(u, b) + self.reg_term(x)

    # -- evaluated from a full design matrix, for central solvers --
    def value(self, x: np.ndarray, D, b: np.ndarray) -> float:
        return self.value_from_margins(D @ x, b, x)

    def value_and_grad(self, x: np.ndarray, D, b: np.ndarray):
        u = D @ x
        w = self.weight(len(b))
        f = self.value_from_margins(u, b, x)
        g = w * (D.T @ self.loss_fn.grad(u, b)) + 2.0 * self.lam * x
        return f, np.asarray(g).ravel()

    def hessp(self, x: np.ndarray, p: np.ndarray, D, b: np.ndarray) -> np.ndarray:
        """Hessian-vector product ``(w D^T H D + 2 lam I) p``."""
        w = self.weight(len(b))
        h = self.loss_fn.hess(D @ x, b)
        return np.asarray(w * (D.T @ (h * (D @ p)))).ravel() + 2.0 * self.lam * p

    def hess(self, x: np.ndarray, D, b: np.ndarray) -> np.ndarray:
        """Dense Hessian ``w D^T diag(l'') D + 2 lam I`` (for small d only)."""
        w = self.weight(len(b))
        h = w * self.loss_fn.hess(D @ x, b)
        if hasattr(D, "multiply"):  # sparse: keep the product sparse until the end
            H = (D.T @ D.multiply(h[:, None])).toarray()
        else:
            H = D.T @ (D * h[:, None])
        H[np.diag_indices_from(H)] += 2.0 * self.lam
        return H

    def describe(self) -> str:
        """A one-line formula, written into run manifests."""
        w = "sum_i" if self.reduction == "sum" else "(1/N) sum_i"
        term = {
            "logistic": "log(1 + exp(-b_i u_i))",
            "squared": "(u_i - b_i)^2",
        }[self.loss]
        return f"F(x) = {w} {term} + {self.lam:g} * ||x||^2,  u = D x"
