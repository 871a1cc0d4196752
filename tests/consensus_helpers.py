"""Planted consensus problems and solvers built on them, shared by tests/test_consensus.py and
tests/test_consensus_solver.py."""

import numpy as np
from scipy.special import expit

from vfl.admm.consensus import DPADMM, ConsensusADMM, ConsensusADMMPerturbed, split_providers
from vfl.core.objective import Objective
from vfl.core.params import validate_table
from vfl.core.streams import Streams

REGS = ("l1", "half_l2sq")


SOLVERS = (ConsensusADMM, ConsensusADMMPerturbed, DPADMM)


# ---------------------------------------------------------------- helpers --
def unit_rows(X):
    return X / np.linalg.norm(X, axis=-1, keepdims=True)


def planted(N=6, m=30, d=5, seed=0, public=40):
    """Providers' rows of unit norm with logistic labels from a planted model."""
    rng = np.random.default_rng(seed)
    n = N * m + public
    X = unit_rows(rng.standard_normal((n, d)) + 0.3)
    w = 3.0 * rng.standard_normal(d)
    y = np.where(rng.random(n) < expit(X @ w), 1.0, -1.0)
    data, _ = split_providers(
        X, y, providers=N, samples_per_provider=m, public=public, rng=np.random.default_rng(seed + 1)
    )
    return data


def objective(reg, m, lam=0.17):
    return Objective(loss="logistic", lam=lam, reduction="unit_mean", regularizer=reg, unit_size=m)


def make(cls, data, reg, *, params=None, privacy=None, lam=0.17, seed=3, iterations=100):
    p = validate_table("solver", params or {}, cls.params, owner=cls.name)
    q = validate_table("privacy", privacy or {}, cls.privacy_params, owner=cls.name)
    return cls(
        data,
        objective=objective(reg, data.A.shape[1], lam),
        params=p,
        privacy=q,
        streams=Streams(seed=seed),
        iterations=iterations,
    )


def loss_grad(A, b, w):
    """(1/m) sum_j l'(a_j, b_j, w) for one provider, written out per sample."""
    return np.mean([-bj * aj * expit(-bj * aj @ w) for aj, bj in zip(A, b)], axis=0)
