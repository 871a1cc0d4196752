"""The regularized empirical risk minimized over distributed data.

Hu et al., eq. (1) with the l2 regularizer ``R_m(x_m) = ||x_m||^2``::

    F(x) = w * sum_i l_i( sum_m D_m^i x_m ) + lam * sum_m ||x_m||^2,

with ``w = 1`` (``reduction="sum"``), ``w = 1/N`` (``reduction="mean"``) or,
for data spread over units (providers, agents) of ``m`` samples each,
``w = 1/m`` (``reduction="unit_mean"``: the sum over units of each unit's
mean loss, the objective of Huang et al. (1a) and Xiao et al. (1)). The
regularizer is ``lam ||x||^2`` (``"l2sq"``, Hu et al.), ``lam/2 ||x||^2``
(``"half_l2sq"``, Huang et al.'s ``R(w) = ||w||^2/2``) or ``lam ||x||_1``
(``"l1"``). The same object is used by every solver and the central reference
solver, so every method minimizes exactly the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .arrays import Design, FloatArray
from .losses import Loss, get_loss

__all__ = ["Objective", "REDUCTIONS", "REGULARIZERS"]

REDUCTIONS = ("sum", "mean", "unit_mean")
REGULARIZERS = ("l2sq", "half_l2sq", "l1")


@dataclass(frozen=True)
class Objective:
    """``F(x) = w * sum_i loss(u_i, b_i) + lam * R(x)`` with ``u = D x``.

    Parameters
    ----------
    loss : {"logistic", "squared"}
    lam : float, >= 0
        Weight of the regularizer (the paper's lambda).
    reduction : {"sum", "mean", "unit_mean"}
        How per-sample losses are combined: PyTorch's meaning for the first
        two; ``"unit_mean"`` sums each unit's mean over units of
        ``unit_size`` samples (weight ``1/unit_size``).
    regularizer : {"l2sq", "half_l2sq", "l1"}
        ``R(x) = ||x||^2``, ``||x||^2 / 2`` or ``||x||_1``.
    unit_size : int, optional
        Samples per unit; required by ``"unit_mean"``.
    """

    loss: str = "logistic"
    lam: float = 1e-3
    reduction: str = "sum"
    regularizer: str = "l2sq"
    unit_size: int | None = None

    def __post_init__(self) -> None:
        get_loss(self.loss)  # validates the name
        if self.reduction not in REDUCTIONS:
            raise ValueError(f"unknown reduction {self.reduction!r}; expected one of {REDUCTIONS}")
        if not np.isfinite(self.lam) or self.lam < 0:
            raise ValueError(f"lam must be a finite number >= 0, got {self.lam!r}")
        if self.regularizer not in REGULARIZERS:
            raise ValueError(f"unknown regularizer {self.regularizer!r}; expected one of {REGULARIZERS}")
        if self.reduction == "unit_mean" and not (self.unit_size and self.unit_size >= 1):
            raise ValueError("reduction 'unit_mean' needs unit_size >= 1 (samples per unit)")

    @property
    def smooth(self) -> bool:
        """The regularizer is differentiable (not l1)."""
        return self.regularizer != "l1"

    @property
    def reg_curvature(self) -> float:
        """``lam R''``: 2 lam for l2sq, lam for half_l2sq, 0 for l1."""
        return {"l2sq": 2.0, "half_l2sq": 1.0, "l1": 0.0}[self.regularizer] * self.lam

    @property
    def loss_fn(self) -> Loss:
        return get_loss(self.loss)

    def weight(self, n_samples: int) -> float:
        """The factor ``w`` in front of the summed loss."""
        if self.reduction == "unit_mean":
            assert self.unit_size is not None  # __post_init__ requires it for unit_mean
            return 1.0 / self.unit_size
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
        parts = x if isinstance(x, (list, tuple)) else [x]
        if self.regularizer == "l1":
            return self.lam * float(sum(np.abs(xm).sum() for xm in parts))
        scale = 1.0 if self.regularizer == "l2sq" else 0.5
        return scale * self.lam * float(sum(xm @ xm for xm in parts))

    def _require_smooth(self, what: str) -> None:
        if not self.smooth:
            raise ValueError(f"{what} needs a differentiable regularizer; l1 has none (use a proximal method)")

    def value_from_margins(self, u: np.ndarray, b: np.ndarray, x: np.ndarray | list[np.ndarray]) -> float:
        """F at ``x`` given the margins ``u = D x`` already computed."""
        return self.data_term(u, b) + self.reg_term(x)

    # -- evaluated from a full design matrix, for central solvers --
    def value(self, x: np.ndarray, D: Design, b: np.ndarray) -> float:
        return self.value_from_margins(D @ x, b, x)

    def value_and_grad(self, x: np.ndarray, D: Design, b: np.ndarray) -> tuple[float, FloatArray]:
        self._require_smooth("the gradient")
        u = D @ x
        w = self.weight(len(b))
        f = self.value_from_margins(u, b, x)
        g = w * (D.T @ self.loss_fn.grad(u, b)) + self.reg_curvature * x
        return f, np.asarray(g).ravel()

    def hessp(self, x: np.ndarray, p: np.ndarray, D: Design, b: np.ndarray) -> np.ndarray:
        """Hessian-vector product ``(w D^T H D + lam R'' I) p``."""
        self._require_smooth("the Hessian")
        w = self.weight(len(b))
        h = self.loss_fn.hess(D @ x, b)
        return np.asarray(w * (D.T @ (h * (D @ p)))).ravel() + self.reg_curvature * p

    def hess(self, x: np.ndarray, D: Design, b: np.ndarray) -> FloatArray:
        """Dense Hessian ``w D^T diag(l'') D + lam R'' I`` (for small d only)."""
        self._require_smooth("the Hessian")
        w = self.weight(len(b))
        h = w * self.loss_fn.hess(D @ x, b)
        H: FloatArray
        if hasattr(D, "weighted_gram"):  # a design held as blocks (baselines.ColumnBlocks)
            H = D.weighted_gram(h)
        elif hasattr(D, "multiply"):  # sparse: keep the product sparse until the end
            H = (D.T @ D.multiply(h[:, None])).toarray()
        else:
            H = D.T @ (D * h[:, None])  # type: ignore[operator]  # dense D: ndarray's *
        H[np.diag_indices_from(H)] += self.reg_curvature
        return H

    def describe(self) -> str:
        """A one-line formula, written into run manifests."""
        w = {"sum": "sum_i", "mean": "(1/N) sum_i", "unit_mean": f"sum_units (1/{self.unit_size}) sum_(i in unit)"}[
            self.reduction
        ]
        term = {
            "logistic": "log(1 + exp(-b_i u_i))",
            "squared": "(u_i - b_i)^2",
        }[self.loss]
        reg = {"l2sq": "||x||^2", "half_l2sq": "||x||^2 / 2", "l1": "||x||_1"}[self.regularizer]
        return f"F(x) = {w} {term} + {self.lam:g} * {reg},  u = D x"
