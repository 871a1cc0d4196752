"""ADMM sharing over vertically partitioned features (Hu et al., Algorithm 1),
and its differentially private variant (updates (10)).

Problem (3)-(4): minimize ``l(z) + lam * sum_m ||x_m||^2`` subject to
``sum_m D_m x_m = z``. One epoch is a Jacobi sweep:

- (6) every party m, in parallel, using the other parties' shares from the
  previous epoch::

      x_m <- argmin lam ||x_m||^2 + <y, D_m x_m>
                    + rho/2 || sum_{k != m} D_k x_k + D_m x_m - z ||^2

  then pushes its share ``s_m = D_m x_m`` (one value per sample);
- (7) the central node: ``z <- argmin l(z) - <y, z> + rho/2 ||sum_m s_m - z||^2``,
  N independent scalar problems;
- (8) ``y <- y + rho (sum_m s_m - z)``.

With the l2 regularizer, (6) is the linear system
``(2 lam I + rho D_m^T D_m) x_m = D_m^T (rho v - y)`` with
``v = z - sum_{k != m} s_k``; its matrix never changes, so it is factored
once per party (:class:`BlockSolver`) and every epoch costs two passes over
``D_m`` plus a triangular solve.

This module is pure computation: no files, no printing, no global state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .objective import Objective

__all__ = ["ADMMSharing", "BlockSolver", "EpochStats", "NOISE_FORMS"]

NOISE_FORMS = ("variable", "variable_whitened", "output")


def _gram(A) -> np.ndarray:
    """``A^T A`` as a dense array, without densifying a sparse ``A``."""
    if sp.issparse(A):
        return (A.T @ A).toarray()
    return A.T @ A


class BlockSolver:
    r"""Exact solver of the x-update (6) for one party.

    Solves ``(a I + rho D^T D) x = D^T r`` for any right-hand side ``r`` in
    R^N, where ``a = 2 lam``. The factorization is chosen by shape:

    - ``d_m <= N``: Cholesky of the ``d_m x d_m`` matrix ``a I + rho D^T D``;
    - ``d_m > N``: by the push-through (Woodbury) identity
      ``(a I + rho D^T D)^{-1} D^T = D^T (a I + rho D D^T)^{-1}``, a Cholesky
      of the ``N x N`` matrix ``a I + rho D D^T``, so the cost is set by the
      smaller dimension.
    """

    def __init__(self, D, lam: float, rho: float):
        # A column slice of a dense array is a strided view, which BLAS cannot
        # use in place: numpy would copy the whole block on every product.
        self.D = D.tocsr() if sp.issparse(D) else np.ascontiguousarray(D, dtype=float)
        # D^T as its own CSR: transposed products then run row-wise too.
        self.DT = self.D.T.tocsr() if sp.issparse(D) else self.D.T
        n, d = self.D.shape
        self.wide = d > n
        a = 2.0 * lam
        if self.wide:
            K = rho * _gram(self.DT)  # D D^T
        else:
            K = rho * _gram(self.D)  # D^T D
        K[np.diag_indices_from(K)] += a
        singular = ValueError(
            "the x-update matrix 2*lam*I + rho*D_m^T D_m is singular for a block of "
            f"shape {self.D.shape} (collinear or empty columns); use lam > 0"
        )
        try:
            self._factor = scipy.linalg.cho_factor(K, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            raise singular from None
        # Rounding can leave a tiny positive pivot for a rank-deficient K, so
        # Cholesky succeeding is not proof of definiteness: check the pivots.
        pivots = np.diag(self._factor[0]) ** 2
        if pivots.min() <= K.shape[0] * np.finfo(float).eps * max(pivots.max(), a):
            raise singular
        # Dense blocks: the solution operator W = (a I + rho D^T D)^{-1} D^T
        # (d_m x N, obtained by solving, never by inverting) costs one pass
        # like D^T itself, so an x-update is a single product instead of a
        # product plus two memory-bound triangular solves (measured on the
        # gisette-shaped blocks: 25 -> 16 ms per epoch). It takes one more
        # block's worth of memory. Sparse blocks keep the factor: W is dense.
        self._W = None
        if not sp.issparse(self.D):
            if self.wide:  # W = D^T (a I + rho D D^T)^{-1}
                self._W = scipy.linalg.cho_solve(self._factor, self.D, check_finite=False).T
            else:
                self._W = scipy.linalg.cho_solve(self._factor, self.DT, check_finite=False)
            self._W = np.ascontiguousarray(self._W)

    def _range_basis(self):
        """Eigenpairs of the Gram matrix on ``D``'s range, computed once.

        Tall: ``D^T D = V diag(lam) V^T``; wide: ``D D^T = U diag(lam) U^T``.
        Eigenvalues below ``n * eps * max`` are the null space and dropped,
        so rank-deficient blocks (one-hot groups plus an intercept) work.
        """
        if getattr(self, "_basis", None) is None:
            G = _gram(self.DT if self.wide else self.D)
            lam, V = np.linalg.eigh(G)
            keep = lam > max(G.shape) * np.finfo(float).eps * max(lam.max(), 0.0)
            self._basis = (lam[keep], V[:, keep])
        return self._basis

    def whitened_noise(self, sigma: float, rng: np.random.Generator):
        """Draw ``xi ~ N(0, sigma^2 (D^T D)^+)`` and return ``(xi, D xi)``.

        The noise of 000 eq. (10): its image ``D xi`` has covariance
        ``sigma^2 P`` with ``P`` the orthogonal projection onto ``range(D)``.
        Sampled from the eigenpairs of the Gram matrix, never from an
        explicit inverse: tall ``xi = sigma V diag(lam^-1/2) e``; wide
        ``D xi = sigma U e`` and ``xi = sigma D^T U diag(lam^-1) e``.
        """
        lam, V = self._range_basis()
        e = rng.standard_normal(lam.size)
        if self.wide:
            share = sigma * (V @ e)
            return sigma * (self.DT @ (V @ (e / lam))), share
        xi = sigma * (V @ (e / np.sqrt(lam)))
        return xi, self.D @ xi

    def solve(self, r: np.ndarray) -> np.ndarray:
        """Return ``x = (a I + rho D^T D)^{-1} D^T r``."""
        if self._W is not None:
            return self._W @ r
        if self.wide:
            return self.DT @ scipy.linalg.cho_solve(self._factor, r, check_finite=False)
        return scipy.linalg.cho_solve(self._factor, self.DT @ r, check_finite=False)

    def matvec(self, x: np.ndarray) -> np.ndarray:
        return self.D @ x

    def rmatvec(self, r: np.ndarray) -> np.ndarray:
        return self.DT @ r


@dataclass
class EpochStats:
    """What one epoch of Algorithm 1 produced, for recording."""

    epoch: int
    objective: float
    primal_residual: float
    dual_residual: float
    x_seconds: float = 0.0
    z_seconds: float = 0.0
    y_seconds: float = 0.0
    extra: dict = field(default_factory=dict)


class ADMMSharing:
    """Parallel ADMM sharing (Algorithm 1) with exact x- and z-updates.

    Parameters
    ----------
    blocks : list of (N, d_m) arrays or sparse matrices
        The parties' feature blocks ``D_1, ..., D_M`` (same rows).
    b : (N,) array of labels (+-1 for the logistic loss).
    objective : Objective
        Loss, reduction and ``lam`` of problem (1).
    rho : float, > 0
        Penalty of the augmented Lagrangian (5).
    z_tol : float
        Tolerance of the vectorized Newton solve of (7).
    sigma : float or sequence of M floats, >= 0
        Noise scale of the private variant (000 updates (10), 001 (6)-(9));
        0 (the default) is Algorithm 1 exactly. May be changed between
        epochs (time-varying noise) through the ``sigma`` attribute.
    noise_form : {"variable", "variable_whitened", "output"}
        How each party perturbs its share before pushing it:

        - ``"variable"``: ``x~ = x + xi``, ``xi ~ N(0, sigma^2 I)``; the share
          is ``D_m x~`` (001 eq. (7); the authors' prototype);
        - ``"variable_whitened"``: ``xi ~ N(0, sigma^2 (D_m^T D_m)^{-1})`` so
          ``D_m xi ~ N(0, sigma^2 P_m)`` (000 eq. (10));
        - ``"output"``: ``D_m x + N(0, sigma^2 I_N)``.
    noise_rngs : list of M numpy Generators
        Party m's noise stream; required when any sigma is positive.
    x_radius : float, optional
        ``b1`` of Assumption 2.1 of Hu et al.: after each x-update the local
        model is projected onto the l2 ball of this radius (the feasible set
        ``X_m`` of (2)), which the sensitivity bound of Lemma 1 needs. Off by
        default; how many parties were projected is recorded per epoch.

    Attributes
    ----------
    x : list of (d_m,) arrays, the local models ``x_m^t``.
    shares : list of (N,) arrays, the shared values ``s_m^t = D_m x_m^t``
        (perturbed in the private variant: what the other parties receive).
    z, y : (N,) arrays, the auxiliary and dual variables.
    epoch : int, number of completed epochs ``t``.

    Initial ``x``, ``y`` and ``z`` are zero, as in the paper's experiments.
    """

    def __init__(self, blocks, b, objective: Objective, rho: float = 1.0, *, z_tol=1e-10,
                 sigma=0.0, noise_form: str = "variable", noise_rngs=None, x_radius=None):
        if not blocks:
            raise ValueError("at least one feature block is required")
        n = len(b)
        for m, D in enumerate(blocks, start=1):
            if D.ndim != 2 or D.shape[0] != n:
                raise ValueError(
                    f"party {m}: block of shape {D.shape} does not have {n} rows"
                )
            if D.shape[1] == 0:
                raise ValueError(f"party {m}: block has no columns")
        if not (np.isfinite(rho) and rho > 0):
            raise ValueError(f"rho must be a finite number > 0, got {rho!r}")
        if noise_form not in NOISE_FORMS:
            raise ValueError(f"noise_form must be one of {NOISE_FORMS}, got {noise_form!r}")
        self.objective = objective
        self.noise_form = noise_form
        self.noise_rngs = noise_rngs
        if x_radius is not None and not (np.isfinite(x_radius) and x_radius > 0):
            raise ValueError(f"x_radius must be a finite number > 0, got {x_radius!r}")
        self.x_radius = x_radius
        self.rho = float(rho)
        self.z_tol = float(z_tol)
        self.b = np.asarray(b, dtype=float)
        self._w = objective.weight(n)
        self._loss = objective.loss_fn
        self.solvers = [BlockSolver(D, objective.lam, self.rho) for D in blocks]
        self.x = [np.zeros(D.shape[1]) for D in blocks]
        self.shares = [np.zeros(n) for _ in blocks]
        self.share_sum = np.zeros(n)
        self._margins = np.zeros(n)
        self.z = np.zeros(n)
        self.y = np.zeros(n)
        self.epoch = 0
        self.sigma = sigma  # validated (needs the parties) by the property setter

    @property
    def n_parties(self) -> int:
        return len(self.solvers)

    @property
    def sigma(self) -> np.ndarray:
        """Per-party noise scales (M,)."""
        return self._sigma

    @sigma.setter
    def sigma(self, value):
        n_parties = len(self.x) if hasattr(self, "x") else None
        sig = np.array(value, dtype=float).reshape(-1)
        if sig.size == 1 and n_parties:
            sig = np.full(n_parties, sig[0])
        if n_parties and sig.size != n_parties:
            raise ValueError(f"sigma needs one value per party ({n_parties}), got {sig.size}")
        if not np.all(np.isfinite(sig)) or np.any(sig < 0):
            raise ValueError(f"sigma must be finite and >= 0, got {value!r}")
        if np.any(sig > 0):
            rngs = self.noise_rngs
            if rngs is None or n_parties is None or len(rngs) != sig.size:
                raise ValueError("a positive sigma needs noise_rngs: one numpy Generator per party")
        self._sigma = sig

    # -- one epoch ---------------------------------------------------------
    def x_update(self, m: int) -> np.ndarray:
        """Minimizer of (6) for party ``m`` (0-based) given the current state."""
        v = self.z - (self.share_sum - self.shares[m])
        return self.solvers[m].solve(self.rho * v - self.y)

    def z_update(self, share_sum: np.ndarray) -> np.ndarray:
        """Minimizer of (7) given ``sum_m D_m x_m^{t+1}``."""
        return self._loss.prox_linear(
            share_sum, self.y, self.b, self.rho, self._w, tol=self.z_tol, z0=self.z
        )

    def publish(self, m: int, x_m: np.ndarray, share: np.ndarray) -> np.ndarray:
        """The value party ``m`` pushes to the central node.

        Algorithm 1 pushes the exact share ``D_m x_m``. With ``sigma_m > 0``
        it pushes the perturbed share of updates (10) in the configured
        ``noise_form``, drawn from party m's own stream. The party keeps its
        unperturbed ``x_m``; only the pushed value is noisy.
        """
        sigma = self.sigma[m]
        if sigma == 0:
            return share  # no draw at all: sigma = 0 replays Algorithm 1 exactly
        rng = self.noise_rngs[m]
        if self.noise_form == "output":
            return share + rng.normal(0.0, sigma, size=share.shape)
        if self.noise_form == "variable":
            xi = rng.normal(0.0, sigma, size=x_m.shape)
            return share + self.solvers[m].matvec(xi)
        _, d_xi = self.solvers[m].whitened_noise(sigma, rng)
        return share + d_xi

    def step(self, diagnostics: bool = True) -> EpochStats:
        """Run one epoch of Algorithm 1 and return its statistics.

        With ``diagnostics=False`` the objective and residuals are not
        evaluated (NaN), leaving only the algorithm's own work to time.
        """
        t0 = perf_counter()
        # Jacobi: every x-update reads the shares of the previous epoch.
        new_x = [self.x_update(m) for m in range(self.n_parties)]
        projected = 0
        if self.x_radius is not None:
            for m, xm in enumerate(new_x):
                norm = float(np.linalg.norm(xm))
                if norm > self.x_radius:  # Euclidean projection onto the ball X_m
                    new_x[m] = xm * (self.x_radius / norm)
                    projected += 1
        exact = [s.matvec(xm) for s, xm in zip(self.solvers, new_x)]
        self.x = new_x
        self._margins = np.sum(exact, axis=0)
        self.shares = [self.publish(m, xm, e) for m, (xm, e) in enumerate(zip(new_x, exact))]
        self.share_sum = np.sum(self.shares, axis=0)
        t1 = perf_counter()
        self.z = self.z_update(self.share_sum)
        t2 = perf_counter()
        self.y = self.y + self.rho * (self.share_sum - self.z)
        t3 = perf_counter()
        self.epoch += 1
        nan = float("nan")
        return EpochStats(
            epoch=self.epoch,
            objective=self.objective_value() if diagnostics else nan,
            primal_residual=self.primal_residual() if diagnostics else nan,
            dual_residual=self.dual_residual() if diagnostics else nan,
            x_seconds=t1 - t0,
            z_seconds=t2 - t1,
            y_seconds=t3 - t2,
            extra={"projected_parties": projected} if self.x_radius is not None else {},
        )

    # -- diagnostics ---------------------------------------------------------
    def margins(self) -> np.ndarray:
        """``sum_m D_m x_m`` for the current models (exact, unperturbed)."""
        return self._margins

    def objective_value(self) -> float:
        """F(x) of problem (1) at the current ``x``."""
        return self.objective.value_from_margins(self.margins(), self.b, self.x)

    def primal_residual(self) -> float:
        """``|| sum_m D_m x_m - z ||`` on the shared values, constraint (4)."""
        return float(np.linalg.norm(self.share_sum - self.z))

    def dual_residual(self) -> float:
        """``|| grad_x L_0(x, y) ||`` = ``sqrt(sum_m ||2 lam x_m + D_m^T y||^2)``.

        The stationarity residual of the un-augmented Lagrangian in x at the
        current dual y: zero exactly when the x-block KKT conditions hold.
        """
        sq = 0.0
        for s, xm in zip(self.solvers, self.x):
            r = 2.0 * self.objective.lam * xm + s.rmatvec(self.y)
            sq += float(r @ r)
        return float(np.sqrt(sq))

    def coef(self) -> np.ndarray:
        """All parties' models concatenated (only for evaluation, never shared)."""
        return np.concatenate(self.x)
