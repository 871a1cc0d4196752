"""Centralized scikit-learn baselines: all features, and party 1's only.

The paper compares ADMM sharing with ``sklearn``'s logistic regression
trained on all features (what the parties could reach if they pooled their
data) and on the first party's features alone (what the active party has
without collaboration).

Regularization is mapped so that sklearn minimizes *our* objective:
sklearn's ``C * sum_i l_i + 1/2 ||x||^2`` is our ``w sum_i l_i + lam ||x||^2``
divided by ``2 lam / w``, hence ``C = w / (2 lam)`` (``w = 1`` for
``reduction="sum"``, ``1/N`` for ``"mean"``). For the squared loss,
``Ridge(alpha = lam / w)``. The intercept is handled as ADMM handles it: a
column of ones inside the design matrix (regularized like every other
weight), with ``fit_intercept=False``, so both solve the same problem.

sklearn is imported when a baseline is built: a party's process imports this
package for its own side and never fits one, and sklearn with its scipy.stats
takes 0.5 s to import (half a party's start).
"""

from __future__ import annotations

import warnings
from time import perf_counter

import numpy as np

from vfl.core.metrics import accuracy, log_loss
from vfl.core.objective import Objective

__all__ = ["fit_sklearn_baseline", "sklearn_estimator"]


def sklearn_estimator(objective: Objective, n_samples: int, n_features: int, *, tol: float = 1e-8):
    """The sklearn estimator minimizing ``objective`` (see module docstring).

    ``newton-cholesky`` converges in ~10 iterations when the ``d x d``
    Hessian is cheap (a9a: 0.3 s against 8 s for ``lbfgs`` at C = 500);
    ``lbfgs`` takes over for wide data such as gisette.
    """
    from sklearn.linear_model import LogisticRegression, Ridge  # lazy: start-up (a party's 0.5 s)

    w = objective.weight(n_samples)
    if objective.loss == "logistic":
        C = np.inf if objective.lam == 0 else w / (2.0 * objective.lam)
        solver = "newton-cholesky" if n_features <= 1000 else "lbfgs"
        return LogisticRegression(C=C, fit_intercept=False, solver=solver, tol=tol, max_iter=10_000)
    return Ridge(alpha=objective.lam / w, fit_intercept=False, tol=tol)


def fit_sklearn_baseline(X_train, y_train, X_test, y_test, objective: Objective) -> dict:
    """Fit the sklearn counterpart of ``objective`` and evaluate it.

    Returns a JSON-ready dict: train/test log loss and accuracy, the value
    of ``objective`` at the fitted weights, fit time, iterations, and the
    estimator's parameters.
    """
    from sklearn.exceptions import ConvergenceWarning  # lazy: start-up (a party's 0.5 s)

    est = sklearn_estimator(objective, *X_train.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        t0 = perf_counter()
        try:
            est.fit(X_train, y_train)
            converged = True
        except ConvergenceWarning:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                est.fit(X_train, y_train)
            converged = False
        seconds = perf_counter() - t0
    coef = np.ravel(est.coef_)
    u_train = np.asarray(X_train @ coef).ravel()
    u_test = np.asarray(X_test @ coef).ravel()
    n_iter = getattr(est, "n_iter_", None)
    return {
        "estimator": type(est).__name__,
        "params": {
            k: (None if v is np.inf else v)
            for k, v in est.get_params().items()
            if isinstance(v, (int, float, str, bool, type(None)))
        },
        "n_features": int(X_train.shape[1]),
        "objective": objective.value_from_margins(u_train, y_train, coef),
        "train_logloss": log_loss(u_train, y_train),
        "test_logloss": log_loss(u_test, y_test),
        "train_accuracy": accuracy(u_train, y_train),
        "test_accuracy": accuracy(u_test, y_test),
        "fit_seconds": seconds,
        "n_iter": None if n_iter is None else int(np.max(n_iter)),
        "converged": converged,
    }
