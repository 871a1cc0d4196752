"""The exact x-update (6) of one party: factored once, solved every epoch."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

__all__ = ["BlockSolver"]


def _gram(A) -> np.ndarray:
    """``A^T A`` as a dense array, without densifying a sparse ``A``."""
    if sp.issparse(A):
        return (A.T @ A).toarray()
    return A.T @ A


class BlockSolver:
    r"""Exact solver of the x-update (6) for one party.

    Solves ``(a I + rho D^T D) x = D^T r`` for any right-hand side ``r`` in
    R^N, where ``a = 2 lam``. For the ``rho`` given at construction the
    factorization is chosen by shape:

    - ``d_m <= N``: Cholesky of the ``d_m x d_m`` matrix ``a I + rho D^T D``;
    - ``d_m > N``: by the push-through (Woodbury) identity
      ``(a I + rho D^T D)^{-1} D^T = D^T (a I + rho D D^T)^{-1}``, a Cholesky
      of the ``N x N`` matrix ``a I + rho D D^T``, so the cost is set by the
      smaller dimension.

    Any other ``rho`` (``solve(r, rho=...)``, for an adaptive penalty or the
    Boyd form) uses a one-time eigendecomposition of the smaller Gram matrix,
    ``D^T D = V diag(s) V^T`` (or ``D D^T`` when wide): then
    ``x = V diag(1 / (a + rho s)) V^T D^T r`` costs the two passes plus two
    small products, for every ``rho``. ``factor=False`` skips the Cholesky
    (a solver that will only ever see varying ``rho``).
    """

    def __init__(self, D, lam: float, rho: float, *, factor: bool = True):
        # A column slice of a dense array is a strided view, which BLAS cannot
        # use in place: numpy would copy the whole block on every product.
        self.D = D.tocsr() if sp.issparse(D) else np.ascontiguousarray(D, dtype=float)
        # D^T as a view (CSC over D's arrays), not a CSR copy: no second copy of the
        # block, and its products sum each entry in the same order (bit-identical).
        self.DT = self.D.T
        n, d = self.D.shape
        self.wide = d > n
        a = 2.0 * lam
        self._a, self._rho = a, rho
        self._factor = None
        self._W = None
        self._basis = None
        self._VtDt = None
        # the hint follows the cause: no regularizer, or a rho so large that
        # 2 lam vanishes next to rho D^T D in floating point
        cause = "use lam > 0" if a <= 0 else f"rho = {rho:g} swamps 2 lam = {a:g} in floating point; use a smaller rho"
        singular = ValueError(
            "the x-update matrix 2*lam*I + rho*D_m^T D_m is singular for a block of "
            f"shape {self.D.shape} (collinear or empty columns); {cause}"
        )
        if not factor:
            if a <= 0 and self._range_basis()[0].size < min(n, d):
                raise singular
            return
        if self.wide:
            K = rho * _gram(self.DT)  # D D^T
        else:
            K = rho * _gram(self.D)  # D^T D
        K[np.diag_indices_from(K)] += a
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
        if not sp.issparse(self.D):
            if self.wide:  # W = D^T (a I + rho D D^T)^{-1}
                self._W = scipy.linalg.cho_solve(self._factor, self.D, check_finite=False).T
            else:
                self._W = scipy.linalg.cho_solve(self._factor, self.DT, check_finite=False)
            self._W = np.ascontiguousarray(self._W)

    @property
    def rho(self) -> float:
        """The penalty the block was factored for."""
        return self._rho

    def _range_basis(self):
        """Eigenpairs of the Gram matrix on ``D``'s range, computed once.

        Tall: ``D^T D = V diag(lam) V^T``; wide: ``D D^T = U diag(lam) U^T``.
        Eigenvalues below ``n * eps * max`` are the null space and dropped,
        so rank-deficient blocks (one-hot groups plus an intercept) work.
        """
        if self._basis is None:
            G = _gram(self.DT if self.wide else self.D)
            lam, V = np.linalg.eigh(G)
            keep = lam > max(G.shape) * np.finfo(float).eps * max(lam.max(), 0.0)
            self._basis = (lam[keep], V[:, keep])
        return self._basis

    def whitened_noise(self, sigma: float, rng: np.random.Generator):
        """Draw ``xi ~ N(0, sigma^2 (D^T D)^+)`` and return ``(xi, D xi)``.

        The noise of Hu et al. (2019), eq. (10): its image ``D xi`` has covariance
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

    def solve_ball(self, r: np.ndarray, radius: float, rho: float | None = None) -> tuple[np.ndarray, bool]:
        """Exact minimizer of the x-update over the ball ``||x|| <= radius``.

        Minimizes ``a/2 ||x||^2 + rho/2 ||D x||^2 - <r, D x>`` (the x-update
        with ``a = 2 lam``) subject to ``||x|| <= radius``: a trust-region
        subproblem. With ``H = a I + rho D^T D`` positive definite its
        solution is ``x(nu) = (H + nu I)^{-1} D^T r`` with ``nu = 0`` if that
        point is inside the ball, else the ``nu > 0`` with
        ``||x(nu)|| = radius`` (Nocedal and Wright, Thm. 4.1). In the
        eigenbasis of the Gram matrix ``x(nu) = V c / (a + rho s + nu)``, and
        ``nu`` solves the secular equation ``1/||x(nu)|| = 1/radius`` by
        Newton's method (concave and increasing in ``nu``, so the iterates
        increase monotonically to the root), to 1e-13 relative. Returns
        ``(x, active)``; the row-level privacy bound needs this exact
        constrained minimizer, not the projection of the unconstrained one.
        ``rho`` defaults to the factored one.
        """
        rho = self._rho if rho is None else rho
        x = self.solve(r, rho)
        out = _norms(x.T) > radius  # () for one r; (R,) for rows of r (the audit's runs)
        if not np.any(out):
            return x, False
        s, V = self._range_basis()
        a = self._a
        rc = r.T  # (N,) or (N, R): the runs as columns
        sc = _column(s, rc)
        if self.wide:  # V holds U of D D^T = U diag(s) U^T; D^T r = V_x sqrt(s) U^T r
            c = np.sqrt(sc) * (V.T @ rc)
        else:
            c = V.T @ (self.DT @ rc)
        nu = np.zeros(np.shape(out))
        done = np.logical_not(out)  # the runs the ball does not bind stay at nu = 0
        for _ in range(100):
            den = a + rho * sc + nu
            q = c / den
            qn = _norms(q)
            phi = 1.0 / qn - 1.0 / radius
            done = done | (np.abs(phi) <= 1e-13 / radius)
            if np.all(done):
                break
            # d||q||/dnu = -(q . (q / den)) / ||q||
            dphi = _dots(q, q / den) / qn**3
            nu = np.where(done, nu, nu - phi / np.where(done, 1.0, dphi))
        coef = c / (a + rho * sc + nu)
        if self.wide:
            xb = self.DT @ (V @ (coef / np.sqrt(sc)))
        else:
            xb = V @ coef
        # rounding can leave ||x|| a few ulps above the radius
        xb = (xb * np.minimum(1.0, radius / _norms(xb))).T
        if np.ndim(out) == 0:
            return xb, True
        return np.where(out[:, None], xb, x), out

    def solve(self, r: np.ndarray, rho: float | None = None) -> np.ndarray:
        """Return ``x = (a I + rho D^T D)^{-1} D^T r`` (``rho``: the factored one by default)."""
        # rows of a 2-D r (the audit's runs) are right-hand sides: solved as columns (BLAS-3)
        if self._factor is None or (rho is not None and rho != self._rho):
            return self._solve_any(r, self._rho if rho is None else rho)
        if self._W is not None:
            return (self._W @ r.T).T
        if self.wide:
            return (self.DT @ scipy.linalg.cho_solve(self._factor, r.T, check_finite=False)).T
        return scipy.linalg.cho_solve(self._factor, self.DT @ r.T, check_finite=False).T

    def _solve_any(self, r: np.ndarray, rho: float) -> np.ndarray:
        # D^T r lies in range(D^T), spanned by the kept eigenvectors, so the
        # dropped null space contributes nothing (and a > 0 there anyway).
        s, V = self._range_basis()
        rc = r.T
        den = _column(self._a + rho * s, rc)
        if self.wide:  # D^T (a I + rho D D^T)^{-1} r
            return (self.DT @ (V @ ((V.T @ rc) / den))).T
        if not sp.issparse(self.D):
            if self._VtDt is None:  # (D V)^T: one pass instead of D^T then V^T
                self._VtDt = np.ascontiguousarray((self.D @ V).T)
            return (V @ ((self._VtDt @ rc) / den)).T
        return (V @ ((V.T @ (self.DT @ rc)) / den)).T

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """``D x``; for rows of a 2-D ``x`` (the audit's runs), ``(R, N)``."""
        return np.asarray(self.D @ x.T).T

    def rmatvec(self, r: np.ndarray) -> np.ndarray:
        return self.DT @ r


def _column(v: np.ndarray, like: np.ndarray) -> np.ndarray:
    """``v`` as a column against the columns of a 2-D ``like`` (itself for a vector)."""
    return v if np.ndim(like) == 1 else v[:, None]


def _norms(v: np.ndarray):
    """The l2 norm of a vector (as before: ``np.linalg.norm``), or of each column."""
    if np.ndim(v) == 1:
        return float(np.linalg.norm(v))
    return np.sqrt(np.einsum("kr,kr->r", v, v))


def _dots(u: np.ndarray, v: np.ndarray):
    """``u . v`` of two vectors, or of each pair of columns."""
    if np.ndim(u) == 1:
        return float(u @ v)
    return np.einsum("kr,kr->r", u, v)
