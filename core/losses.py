"""Per-sample losses l(u_i; b_i) of a linear score u_i = D^i x and label b_i.

The ADMM sharing problem (Hu et al., eq. (1)) absorbs the labels into the loss
``l(sum_m D_m x_m)``. Here ``l(u) = w * sum_i l_i(u_i)`` with ``w = 1`` for
``reduction="sum"`` and ``w = 1/N`` for ``reduction="mean"``, the same meaning
as PyTorch's ``reduction`` argument.

Each loss exposes what the solvers need, all vectorized over samples:

- ``value``/``grad``/``hess``: l_i, l_i' and l_i'' elementwise (unweighted);
- ``prox_linear(s, y, rho, w)``: the minimizer of the z-subproblem (7),
  ``w * l_i(z) - y_i z + rho/2 (s_i - z)^2``, for every sample at once;
- ``prox_newton(...)``: the same minimizer by plain in-place Newton steps,
  used when they provably converge (``rho > w * max l''``), else
  ``prox_linear`` (ADMM sharing's ``z_update = "newton"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from .arrays import FloatArray

__all__ = ["Loss", "LogisticLoss", "NewtonWork", "SquaredLoss", "get_loss", "LOSSES"]

#: samples per chunk of :meth:`LogisticLoss.prox_newton`'s steps (its vectors' chunks fit
#: in a core's cache)
NEWTON_CHUNK = 1 << 15


class NewtonWork:
    """What :meth:`LogisticLoss.prox_newton` keeps between calls at the same labels ``b``.

    A caller that solves (7) every epoch (ADMM sharing's z-update) passes one:
    the label terms ``-w b`` and ``w b^2`` are computed once per ``w``, and the
    solve's N-vectors are ``buffer(0..3)`` (arrays the caller owns and does not
    read meanwhile) instead of fresh arrays. The same operations in the same
    order, so the same numbers to the bit; the point is speed at scale, where
    a fresh N-vector is a fresh mapping of pages to fault in and zero (above
    glibc's 32 MB mmap threshold, four million rows, every one of them).
    """

    def __init__(self, b: FloatArray, buffer: Callable[[int], FloatArray]):
        self.b = b
        self.buffer = buffer
        self._terms: dict[float, tuple[FloatArray, FloatArray | float]] = {}

    def terms(self, w: float) -> tuple[FloatArray, FloatArray | float]:
        """``(-w b, w b^2)`` (see :func:`label_terms`)."""
        found = self._terms.get(w)
        if found is None:
            found = self._terms[w] = label_terms(self.b, w)
        return found


def label_terms(b: npt.ArrayLike, w: float) -> tuple[FloatArray, FloatArray | float]:
    """``(-w b, w b^2)``; ``w b^2`` is one number when every ``b_i^2`` is the same (+-1
    labels): the value of every entry, so a product with it gives the same numbers, and a
    Newton step reads one N-vector less from memory."""
    b = np.asarray(b, dtype=float)
    b2 = b * b
    if b2.size and np.all(b2 == b2[0]):
        return -w * b, w * b2[0]
    return -w * b, w * b2


class Loss:
    """Interface of a smooth convex per-sample loss with labels ``b``."""

    name: str = ""
    #: Upper bound of l_i'' (Lipschitz constant of l_i'), for Assumption 1.
    curvature: float = 0.0

    def value(self, u: FloatArray, b: FloatArray) -> FloatArray:
        raise NotImplementedError

    def grad(self, u: FloatArray, b: FloatArray) -> FloatArray:
        raise NotImplementedError

    def hess(self, u: FloatArray, b: FloatArray) -> FloatArray:
        raise NotImplementedError

    def prox_linear(
        self,
        s: FloatArray,
        y: FloatArray,
        b: FloatArray,
        rho: float,
        w: float,
        tol: float = 1e-10,
        max_iter: int = 100,
        z0: FloatArray | None = None,
        b_max: float | None = None,
    ) -> FloatArray:
        raise NotImplementedError

    def prox_newton(
        self,
        s: FloatArray,
        y: FloatArray,
        b: FloatArray,
        rho: float,
        w: float,
        tol: float = 1e-10,
        max_iter: int = 100,
        z0: FloatArray | None = None,
        b2_max: float | None = None,
        work: NewtonWork | None = None,
    ) -> FloatArray:
        """The minimizer of (7) by the fastest safe method (default: :meth:`prox_linear`;
        ``work``, the buffers of :class:`NewtonWork`, is not needed then)."""
        return self.prox_linear(s, y, b, rho, w, tol=tol, max_iter=max_iter, z0=z0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class LogisticLoss(Loss):
    """``l_i(u) = log(1 + exp(-b_i u))``, usually with ``b_i`` in {-1, +1}.

    Any real ``b_i`` is handled exactly (``l'' = b^2 s(bu) s(-bu)``), so the
    literal {0, 1} reading of Xiao et al. (``b = 0``: a constant loss) works too.
    """

    name = "logistic"
    curvature = 0.25

    def value(self, u: FloatArray, b: FloatArray) -> FloatArray:
        return np.logaddexp(0.0, -b * u)

    def grad(self, u: FloatArray, b: FloatArray) -> FloatArray:
        g: FloatArray = -b * expit(-b * u)  # (scipy's expit is untyped)
        return g

    def hess(self, u: FloatArray, b: FloatArray) -> FloatArray:
        # sigmoid(bu) * sigmoid(-bu), not p * (1 - p): no cancellation for large u.
        bu = b * u
        h: FloatArray = (b * b) * (expit(bu) * expit(-bu))
        return h

    def _grad_hess(self, u: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
        # One sigmoid for both: q = sigmoid(-b u), l' = -b q, l'' = q (1 - q).
        # (1 - q) may lose relative accuracy when l'' is tiny, harmless where
        # l'' is only ever added to rho.
        q = expit(-b * u)
        return -b * q, (b * b) * (q * (1.0 - q))

    def prox_linear(
        self,
        s: FloatArray,
        y: FloatArray,
        b: FloatArray,
        rho: float,
        w: float,
        tol: float = 1e-10,
        max_iter: int = 100,
        z0: FloatArray | None = None,
        b_max: float | None = None,
    ) -> FloatArray:
        r"""Solve (7) for every sample: ``w l_i(z) - y_i z + rho/2 (z - s_i)^2``.

        The optimality condition ``g(z) = w l_i'(z) - y_i + rho (z - s_i) = 0``
        has a strictly increasing left side, and since ``|l_i'| < |b_i| <= B``
        (``B = max_i |b_i|``, 1 for +-1 labels; ``b_max`` if the caller knows
        it) its root lies in ``[s_i + (y_i - w B)/rho, s_i + (y_i + w B)/rho]``. The bracket
        shrinks with the sign of ``g``; a Newton step is taken when it lands
        inside the bracket and is at most half the step before last, else the
        bracket is bisected (``rtsafe`` of Numerical Recipes, vectorized). So
        convergence is guaranteed, and quadratic near the root.

        Iteration stops once every step is at most ``tol`` (in units of ``z``,
        whatever the scales of ``w`` and ``rho``); that last step is applied.
        ``z0`` warm-starts it (ADMM passes the previous epoch's z, which is
        close: two or three steps instead of four or five on a9a).
        """
        c = s + y / rho  # minimizer when w = 0; the bracket is c +- w B/rho
        if b_max is None:
            b_max = float(np.max(np.abs(b), initial=0.0))
        half = w / rho if b_max == 1.0 else w * b_max / rho  # (the former: as it always was)
        lo = c - half
        hi = c + half
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
            newton = ((z_newton > lo) & (z_newton < hi) & (2.0 * np.abs(step) <= np.abs(dx_old))) | (
                np.abs(step) <= tol
            )  # a last tiny step may round onto a bracket end
            dx_old = dx
            dx = np.where(newton, step, z - 0.5 * (lo + hi))
            z = z - dx
            if np.max(np.abs(dx), initial=0.0) <= tol:
                break
        return z

    def prox_newton(
        self,
        s: FloatArray,
        y: FloatArray,
        b: FloatArray,
        rho: float,
        w: float,
        tol: float = 1e-10,
        max_iter: int = 100,
        z0: FloatArray | None = None,
        b2_max: float | None = None,
        work: NewtonWork | None = None,
    ) -> FloatArray:
        r"""Solve (7) like :meth:`prox_linear`, by in-place Newton steps.

        ``g(z) = w l'(z) - y + rho (z - c)`` has ``g' = w l'' + rho`` in
        ``[rho, rho + L]`` with ``L = w max_i b_i^2 / 4`` (``l'' <= b^2/4``).
        A Newton step maps the error ``e`` to ``e (1 - gbar'/g'(z))``, where
        ``gbar'`` is the mean of ``g'`` between ``z`` and the root, so
        ``|e+| <= (L / rho) |e|``: when ``rho > L`` plain Newton converges
        from any start (linearly at rate ``L/rho``, quadratically near the
        root) and no bracket is kept. When ``rho <= L`` (the small penalties
        of the Boyd form) each iterate is projected onto the static bracket
        ``c +- w max|b| / rho`` that contains the root (a projection that
        never moves away from the root), and any sample whose step is still
        above ``tol`` after ``max_iter`` steps (none observed on a9a) is
        finished by the safeguarded :meth:`prox_linear` from where it is.
        One ``exp`` per sample and step with buffers reused in place, about
        5x faster than :meth:`prox_linear`. Stops once every step is at most
        ``tol``, like it. ``b2_max`` is ``max_i b_i^2`` if the caller knows it. ``work``
        (:class:`NewtonWork`, for labels ``b``): buffers and label terms kept between calls;
        only the returned ``z`` is a new array.
        """
        b = np.asarray(b, dtype=float)
        if b2_max is None:
            b2_max = float(np.max(b * b, initial=0.0))
        b_max = math.sqrt(b2_max)
        new: Callable[[int], FloatArray] = (lambda _: np.empty(len(b))) if work is None else work.buffer
        c = np.divide(y, rho, out=new(0))
        np.add(s, c, out=c)  # c = s + y / rho
        z = c.copy() if z0 is None else np.array(z0, dtype=float)  # a copy: updated in place
        u = new(1)
        bracket: tuple[FloatArray, FloatArray] | None = None
        half = w * b_max / rho  # |l'| <= max |b|: the root is within c +- half
        if not rho > w * b2_max / 4.0:
            bracket = (np.subtract(c, half, out=new(2)), np.add(c, half, out=new(3)))
            np.clip(z, *bracket, out=z)
        # exp(-b z) overflows beyond 709; cap -b z at 700 (sigma(700) = 1 in float64)
        # unless no iterate can get there: bracketed iterates stay in c +- half,
        # plain ones (contracting) within |z0 - z*| of the root
        reach = float(np.abs(c, out=u).max(initial=0.0)) + half
        if bracket is None:
            reach = 2.0 * reach + float(np.abs(z, out=u).max(initial=0.0))
        cap = b_max * reach > 700.0
        rc = np.multiply(c, rho, out=c)  # rho c (c itself is not needed any more)
        # l' = -b q, times w; and w b^2
        nbw, wb2 = label_terms(b, w) if work is None else work.terms(w)
        # every step is elementwise: it runs a chunk of samples at a time, all its operations
        # while the chunk is in cache (one pass over memory per step instead of one per
        # operation); the same operations on every sample, so the same numbers. e and d hold
        # a chunk's values only: chunk-sized, they never leave the cache
        lo, hi = bracket if bracket is not None else (None, None)
        e, d = np.empty(min(NEWTON_CHUNK, len(z))), np.empty(min(NEWTON_CHUNK, len(z)))
        chunks: list[
            tuple[
                FloatArray,
                FloatArray,
                FloatArray,
                FloatArray,
                FloatArray,
                FloatArray | float,
                FloatArray,
                FloatArray,
                FloatArray | None,
                FloatArray | None,
            ]
        ] = []
        for a in range(0, len(z), NEWTON_CHUNK):
            k = min(NEWTON_CHUNK, len(z) - a)
            chunks.append(
                (
                    b[a : a + k],
                    z[a : a + k],
                    u[a : a + k],
                    e[:k],
                    d[:k],
                    wb2 if isinstance(wb2, float) else wb2[a : a + k],  # one number: as is
                    nbw[a : a + k],
                    rc[a : a + k],
                    None if lo is None else lo[a : a + k],
                    None if hi is None else hi[a : a + k],
                )
            )
        for _ in range(max_iter):
            for b_, z_, u_, e_, d_, wb2_, nbw_, rc_, lo_, hi_ in chunks:
                np.multiply(b_, z_, out=u_)
                np.negative(u_, out=u_)
                if cap:
                    np.minimum(u_, 700.0, out=u_)
                np.exp(u_, out=e_)  # e = exp(-b z)
                np.add(e_, 1.0, out=d_)
                np.reciprocal(d_, out=d_)  # d = sigma(b z)
                np.multiply(e_, d_, out=e_)  # e = q = sigma(-b z)
                np.multiply(e_, d_, out=d_)  # d = q sigma(b z) = l''/b^2, no cancellation
                d_ *= wb2_
                d_ += rho  # d = g'(z)
                np.multiply(z_, rho, out=u_)
                u_ -= rc_
                e_ *= nbw_
                u_ += e_  # u = g(z) = w l'(z) + rho (z - c)
                u_ /= d_  # u = the Newton step
                z_ -= u_
                if lo_ is not None and hi_ is not None:  # both or neither
                    np.clip(z_, lo_, hi_, out=z_)
            if u.max(initial=0.0) <= tol and -u.min(initial=0.0) <= tol:
                return z
        left = np.flatnonzero(np.abs(u) > tol)
        z[left] = self.prox_linear(
            s[left], y[left], b[left], rho, w, tol=tol, max_iter=max_iter, z0=z[left], b_max=b_max
        )
        return z


class SquaredLoss(Loss):
    """``l_i(u) = (u - b_i)^2`` (ridge regression; PyTorch's ``MSELoss``)."""

    name = "squared"
    curvature = 2.0

    def value(self, u: FloatArray, b: FloatArray) -> FloatArray:
        return (u - b) ** 2

    def grad(self, u: FloatArray, b: FloatArray) -> FloatArray:
        return 2.0 * (u - b)

    def hess(self, u: FloatArray, b: FloatArray) -> FloatArray:
        return np.full_like(u, 2.0, dtype=float)

    def prox_linear(
        self,
        s: FloatArray,
        y: FloatArray,
        b: FloatArray,
        rho: float,
        w: float,
        tol: float = 1e-10,
        max_iter: int = 100,
        z0: FloatArray | None = None,
        b_max: float | None = None,
    ) -> FloatArray:
        # 2w(z - b) - y + rho(z - s) = 0 has a closed form (z0 is not needed).
        return (2.0 * w * b + y + rho * s) / (2.0 * w + rho)


LOSSES: dict[str, type[Loss]] = {"logistic": LogisticLoss, "squared": SquaredLoss}


def get_loss(name: str) -> Loss:
    """Return the loss called ``name`` (one of :data:`LOSSES`)."""
    try:
        return LOSSES[name]()
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; expected one of {sorted(LOSSES)}") from None
