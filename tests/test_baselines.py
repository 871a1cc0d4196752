"""scikit-learn baselines: the C / alpha mapping makes sklearn minimize our objective.

``fit_sklearn_baseline`` documents that sklearn's ``C sum_i l_i + 1/2 ||x||^2``
with ``C = w / (2 lam)`` (and ``Ridge(alpha = lam / w)``) is our
``w sum_i l_i + lam ||x||^2`` rescaled, so its fitted weights must reach the
optimum that ``central_optimum`` (an unrelated trust-region Newton solver)
finds for the same ``Objective``.
"""

import json

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn.metrics
from scipy.special import expit
from threadpoolctl import threadpool_limits

from vfl.baselines import central_optimum, fit_sklearn_baseline, sklearn_estimator
from vfl.core.metrics import accuracy, log_loss
from vfl.core.objective import Objective

N_TRAIN, N_TEST = 200, 100


@pytest.fixture(autouse=True, scope="module")
def _single_threaded_blas():
    """The matrices here are tiny: multi-threaded BLAS only adds overhead, and
    on a loaded 2-core machine oversubscription made single tests take seconds."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


DOCUMENTED_KEYS = {
    "estimator",
    "params",
    "n_features",
    "objective",
    "train_logloss",
    "test_logloss",
    "train_accuracy",
    "test_accuracy",
    "fit_seconds",
    "n_iter",
    "converged",
}


def make_data(loss, d=30, seed=0, density=0.4):
    rng = np.random.default_rng(seed)
    n = N_TRAIN + N_TEST
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < density) / np.sqrt(density * d)
    X[:, 0] = 1.0  # an intercept column, regularized like the rest (as ADMM does)
    beta = 2.0 * rng.standard_normal(d)
    beta[0] = 0.3  # mild class imbalance only
    u = X @ beta
    if loss == "logistic":
        y = np.where(rng.random(n) < expit(u), 1.0, -1.0)
        assert 0.2 < np.mean(y[:N_TRAIN] > 0) < 0.8
    else:
        y = u + 0.3 * rng.standard_normal(n)
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


CASES = [
    ("logistic", "sum", 1e-3),
    ("logistic", "sum", 0.5),
    ("logistic", "mean", 1e-4),
    ("logistic", "mean", 1e-2),
    ("squared", "sum", 1e-2),
    ("squared", "mean", 1e-3),
]


@pytest.mark.parametrize("fmt", ["dense", "sparse"])
@pytest.mark.parametrize("loss,reduction,lam", CASES)
def test_sklearn_objective_matches_central_optimum(loss, reduction, lam, fmt):
    Xtr, ytr, Xte, yte = make_data(loss)
    if fmt == "sparse":
        Xtr, Xte = sp.csr_matrix(Xtr), sp.csr_matrix(Xte)
    obj = Objective(loss, lam, reduction)
    res = fit_sklearn_baseline(Xtr, ytr, Xte, yte, obj)
    central = central_optimum(Xtr, ytr, obj)
    assert res["converged"] is True
    assert res["objective"] == pytest.approx(central.value, rel=1e-7)
    assert res["objective"] >= central.value * (1 - 1e-12)  # central is the minimum
    # the documented mapping itself
    w = 1.0 if reduction == "sum" else 1.0 / N_TRAIN
    if loss == "logistic":
        assert res["estimator"] == "LogisticRegression"
        assert res["params"]["C"] == pytest.approx(w / (2 * lam), rel=1e-15)
        assert res["params"]["fit_intercept"] is False
        assert res["params"]["solver"] == "newton-cholesky"  # d <= 1000
    else:
        assert res["estimator"] == "Ridge"
        assert res["params"]["alpha"] == pytest.approx(lam / w, rel=1e-15)
        assert res["params"]["fit_intercept"] is False


def test_wide_logistic_uses_lbfgs_and_still_matches():
    Xtr, ytr, Xte, yte = make_data("logistic", d=1001, seed=1)
    obj = Objective("logistic", 0.1, "sum")
    res = fit_sklearn_baseline(Xtr, ytr, Xte, yte, obj)
    assert res["params"]["solver"] == "lbfgs" and res["n_features"] == 1001
    assert res["objective"] == pytest.approx(central_optimum(Xtr, ytr, obj).value, rel=1e-7)


@pytest.mark.parametrize("loss", ["logistic", "squared"])
def test_result_dict_keys_and_types(loss):
    Xtr, ytr, Xte, yte = make_data(loss)
    res = fit_sklearn_baseline(Xtr, ytr, Xte, yte, Objective(loss, 1e-2, "mean"))
    assert set(res) == DOCUMENTED_KEYS
    json.dumps(res)  # "JSON-ready"
    assert res["n_features"] == Xtr.shape[1]
    for k in ("objective", "train_logloss", "test_logloss", "train_accuracy", "test_accuracy", "fit_seconds"):
        assert isinstance(res[k], float) and np.isfinite(res[k]), k
    assert 0.0 <= res["train_accuracy"] <= 1.0 and 0.0 <= res["test_accuracy"] <= 1.0
    assert res["fit_seconds"] >= 0
    if loss == "logistic":
        assert isinstance(res["n_iter"], int) and res["n_iter"] >= 1
    else:
        assert res["n_iter"] is None or isinstance(res["n_iter"], int)
    assert all(isinstance(v, (int, float, str, bool, type(None))) for v in res["params"].values())


def test_lam_zero_maps_to_unpenalized_and_json_null():
    Xtr, ytr, Xte, yte = make_data("logistic", seed=2)
    res = fit_sklearn_baseline(Xtr, ytr, Xte, yte, Objective("logistic", 0.0, "sum"))
    assert res["params"]["C"] is None  # np.inf -> null
    json.dumps(res)


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_loglosses_and_accuracies_match_sklearn(reduction):
    Xtr, ytr, Xte, yte = make_data("logistic", seed=3)
    obj = Objective("logistic", 1e-2 if reduction == "sum" else 1e-3, reduction)
    res = fit_sklearn_baseline(Xtr, ytr, Xte, yte, obj)
    # the same (deterministic) estimator, evaluated the sklearn way
    est = sklearn_estimator(obj, *Xtr.shape).fit(Xtr, ytr)
    assert list(est.classes_) == [-1.0, 1.0]
    for X, y, part in ((Xtr, ytr, "train"), (Xte, yte, "test")):
        proba = est.predict_proba(X)
        assert res[f"{part}_logloss"] == pytest.approx(
            sklearn.metrics.log_loss(y, proba, labels=[-1.0, 1.0]), rel=1e-10
        )
        assert res[f"{part}_accuracy"] == pytest.approx(sklearn.metrics.accuracy_score(y, est.predict(X)), abs=1e-15)


def test_metrics_against_sklearn_on_margins():
    rng = np.random.default_rng(4)
    u = rng.normal(scale=6.0, size=1000)
    b = rng.choice([-1.0, 1.0], size=1000)
    p = expit(u)  # P(+1), what predict_proba's second column holds
    assert log_loss(u, b) == pytest.approx(
        sklearn.metrics.log_loss(b, np.column_stack([1 - p, p]), labels=[-1.0, 1.0]), rel=1e-10
    )
    assert accuracy(u, b) == pytest.approx(sklearn.metrics.accuracy_score(b, np.where(u > 0, 1.0, -1.0)))
    # decision_function convention: u = 0 is classified -1
    assert accuracy(np.zeros(4), np.array([-1.0, -1.0, 1.0, 1.0])) == 0.5
    assert accuracy(np.zeros(2), -np.ones(2)) == 1.0


@pytest.mark.parametrize("loss,reduction,lam", CASES)
def test_local_only_baseline_is_no_better(loss, reduction, lam):
    """Party 1's features alone cannot beat all features on the same objective."""
    Xtr, ytr, Xte, yte = make_data(loss, seed=5)
    obj = Objective(loss, lam, reduction)
    full = fit_sklearn_baseline(Xtr, ytr, Xte, yte, obj)
    local = fit_sklearn_baseline(Xtr[:, :10], ytr, Xte[:, :10], yte, obj)
    assert local["n_features"] == 10 and full["n_features"] == 30
    assert local["objective"] >= full["objective"]
    assert local["objective"] == pytest.approx(central_optimum(Xtr[:, :10], ytr, obj).value, rel=1e-7)
