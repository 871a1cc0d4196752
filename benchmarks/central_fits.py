"""The central references the variants are timed against: sklearn's LogisticRegression
(lbfgs, newton-cholesky) on the same objective, each target reached at the loosest
tolerance that reaches it, timed with BLAS as configured and pinned to one thread.
"""

from __future__ import annotations

import warnings
from statistics import median
from time import perf_counter

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

from .problems import OBJECTIVE, Settings

#: the relative suboptimalities every variant and reference is timed to
TARGETS = (1e-4, 1e-6)


def sklearn_fit(D, y, f_star, solver, tol):
    C = OBJECTIVE.weight(len(y)) / (2 * OBJECTIVE.lam)
    est = LogisticRegression(C=C, fit_intercept=False, solver=solver, tol=tol, max_iter=100_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        t = perf_counter()
        est.fit(D, y)
        sec = perf_counter() - t
    sub = (OBJECTIVE.value(est.coef_.ravel(), D, y) - f_star) / abs(f_star)
    return {"tol": tol, "seconds": sec, "n_iter": int(np.max(est.n_iter_)), "suboptimality": float(sub)}


def time_to_targets(fit, tols, targets, repeats) -> dict:
    """For each target: the loosest tolerance whose fit reaches it, timed (median of repeats)."""
    search, out = [], {}
    remaining = sorted(targets, reverse=True)
    for tol in tols:
        r = fit(tol)
        search.append(r)
        while remaining and r["suboptimality"] <= remaining[0]:
            out[f"{remaining.pop(0):g}"] = r
        if not remaining:
            break
    for key, r in list(out.items()):
        times = [r["seconds"]] + [fit(r["tol"])["seconds"] for _ in range(repeats - 1)]
        out[key] = {**r, "seconds": median(times)}
    for target in remaining:
        out[f"{target:g}"] = None
    return {"search": search, "targets": out}


SKLEARN_TOLS = {
    "lbfgs": (1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7, 3e-8, 1e-8, 1e-9),
    "newton-cholesky": (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-10),
}


def sklearn_references(D, y, f_star, cfg: Settings, solvers=("lbfgs", "newton-cholesky")) -> dict:
    """sklearn's time to each target, with BLAS as configured and pinned to one thread."""
    out = {}
    for solver in solvers:
        for threads in (None, 1):

            def fit(tol, solver=solver, threads=threads):
                if threads is None:
                    return sklearn_fit(D, y, f_star, solver, tol)
                with threadpool_limits(limits=threads, user_api="blas"):
                    return sklearn_fit(D, y, f_star, solver, tol)

            name = solver + ("" if threads is None else f", {threads} BLAS thread")
            out[name] = time_to_targets(fit, SKLEARN_TOLS[solver], TARGETS, cfg.time_repeats)
    return out


def best_reference(refs: dict, solver: str, target: float):
    """The faster of ``solver``'s two thread settings at ``target`` (None if neither reached it)."""
    rows = [
        (name, r["targets"][f"{target:g}"])
        for name, r in refs.items()
        if name.split(",")[0] == solver and r["targets"][f"{target:g}"]
    ]
    if not rows:
        return None
    name, r = min(rows, key=lambda nr: nr[1]["seconds"])
    return {"name": name, **r}
