"""The paper's prototype strategy for ADMM sharing, re-implemented for comparison.

Hu et al. describe generic numerical solvers for each subproblem: the
x-update (6) of every party by ``scipy.optimize.minimize(method="L-BFGS-B")``
warm-started at the party's previous model, and the z-update (7) by
``scipy.optimize.minimize_scalar`` for each sample in turn. Same Jacobi
order, same initialization (x = y = z = 0) and same updates as
:class:`vfl.admm.ADMMSharing`, so the iterates agree up to the tolerances of
those solvers; only the way each subproblem is solved differs.

The scalar loop over N samples is slow, so :meth:`PrototypeADMM.step` can
solve (7) by ``minimize_scalar`` on a subset of samples only (timed) and
take the remaining samples from the exact vectorized solver (untimed), so
the later epochs still follow the true iterates; the reported z time is
then the subset's time scaled linearly to N.

This lives in the benchmarks, not in the product.
"""

from __future__ import annotations

import math
from time import perf_counter

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from vfl.core.objective import Objective

__all__ = ["PrototypeADMM"]


def _logistic(t: float) -> float:
    """``log(1 + exp(-t))``, stable for any sign of t."""
    if t > 0:
        return math.log1p(math.exp(-t))
    return -t + math.log1p(math.exp(t))


class PrototypeADMM:
    """ADMM sharing with generic scipy solvers for (6) and (7) (logistic loss only)."""

    def __init__(
        self,
        blocks,
        b,
        objective: Objective,
        rho: float = 1.0,
        *,
        lbfgs_options: dict | None = None,
        scalar_options: dict | None = None,
    ):
        if objective.loss != "logistic":
            raise ValueError("the prototype re-implementation covers the logistic loss only")
        self.blocks = [D.tocsr() if sp.issparse(D) else np.asarray(D, float) for D in blocks]
        self.b = np.asarray(b, dtype=float)
        self.objective = objective
        self.lam = objective.lam
        self.rho = float(rho)
        self.w = objective.weight(len(self.b))
        self.lbfgs_options = dict(lbfgs_options or {})
        self.scalar_options = dict(scalar_options or {})
        n = len(self.b)
        self.x = [np.zeros(D.shape[1]) for D in self.blocks]
        self.shares = [np.zeros(n) for _ in self.blocks]
        self.share_sum = np.zeros(n)
        self.z = np.zeros(n)
        self.y = np.zeros(n)
        self.epoch = 0
        self.lbfgs_iterations: list[list[int]] = []

    # -- (6) by L-BFGS-B ------------------------------------------------------
    def x_update(self, m: int):
        D = self.blocks[m]
        offset = self.share_sum - self.shares[m] - self.z  # sum_{k != m} s_k - z
        lam, rho, y = self.lam, self.rho, self.y

        def fun(x):
            r = D @ x + offset
            f = lam * float(x @ x) + float(y @ (D @ x)) + 0.5 * rho * float(r @ r)
            g = 2.0 * lam * x + D.T @ (y + rho * r)
            return f, np.asarray(g).ravel()

        res = scipy.optimize.minimize(fun, self.x[m], jac=True, method="L-BFGS-B", options=self.lbfgs_options)
        return res.x, int(res.nit)

    # -- (7) by minimize_scalar, one sample at a time -----------------------------
    def z_sample(self, i: int) -> float:
        w, rho, bi, yi, si = self.w, self.rho, float(self.b[i]), float(self.y[i]), float(self.share_sum[i])

        def f(z):
            return w * _logistic(bi * z) - yi * z + 0.5 * rho * (si - z) ** 2

        return float(scipy.optimize.minimize_scalar(f, **self.scalar_options).x)

    def step(self, z_samples=None) -> dict:
        """One Jacobi epoch; returns the timings in seconds.

        ``z_samples``: indices solved by ``minimize_scalar`` (default: all);
        the others come from the exact vectorized prox, untimed, and the z
        time is extrapolated linearly to all N samples.
        """
        n = len(self.b)
        t0 = perf_counter()
        results = [self.x_update(m) for m in range(len(self.blocks))]
        new_x = [r[0] for r in results]
        self.shares = [D @ xm for D, xm in zip(self.blocks, new_x)]
        self.x = new_x
        self.share_sum = np.sum(self.shares, axis=0)
        t1 = perf_counter()
        idx = np.arange(n) if z_samples is None else np.asarray(z_samples)
        z_new = np.empty(n)
        for i in idx:
            z_new[i] = self.z_sample(int(i))
        t2 = perf_counter()
        if idx.size < n:
            rest = np.setdiff1d(np.arange(n), idx)
            exact = self.objective.loss_fn.prox_linear(self.share_sum, self.y, self.b, self.rho, self.w)
            z_new[rest] = exact[rest]
        self.z = z_new
        t3 = perf_counter()
        self.y = self.y + self.rho * (self.share_sum - self.z)
        t4 = perf_counter()
        self.epoch += 1
        self.lbfgs_iterations.append([r[1] for r in results])
        z_measured = t2 - t1
        return {
            "x_seconds": t1 - t0,
            "z_seconds": z_measured * n / max(idx.size, 1),
            "z_seconds_measured": z_measured,
            "z_samples_timed": int(idx.size),
            "y_seconds": t4 - t3,
            "lbfgs_iterations": [r[1] for r in results],
        }
