"""Seeded a9a-shaped data at any number of rows, for scaling measurements.

LIBSVM's a9a is UCI Adult with each of its 14 attributes one-hot coded:
continuous ones quantized into bins, categorical ones by value, 123 binary
columns in all, in 14 contiguous groups of 5, 8, 5, 16, 5, 7, 14, 6, 5, 2,
2, 2, 5 and 41 columns (found from a9a's co-occurrence: no two columns of a
group are ever set in one row). A row has one 1 per group, or none where
the attribute is missing (about 2 % of a9a's values); 24 % of its labels are
positive.

This generator keeps that shape, so that a sparse-matrix product costs what
it costs on a9a, at whatever ``n_train`` a benchmark asks for: each group's
category is drawn from a seeded skewed distribution (most mass on a few
categories, as in Adult), an attribute is missing with probability
``missing``, and the label is drawn from a logistic model that is additive
over the attributes, with the intercept set for a 24 % positive rate. It is
synthetic: it is not the a9a data and says so wherever it is shown.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from vfl.datasets._generator_checks import integer, real
from vfl.datasets.dataset import Dataset

__all__ = ["A9A_GROUPS", "make_a9a_like"]

#: a9a's one-hot groups, in column order (their sizes sum to its 123 columns)
A9A_GROUPS = (5, 8, 5, 16, 5, 7, 14, 6, 5, 2, 2, 2, 5, 41)
_POSITIVE_RATE = 0.24


def _positive_rate_intercept(margin: np.ndarray, rate: float) -> float:
    """The intercept b with mean(sigmoid(margin + b)) = rate (bisection on a sample)."""
    lo, hi = -20.0, 20.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if expit(margin + mid).mean() < rate else (lo, mid)
    return 0.5 * (lo + hi)


def _rows(rng: np.random.Generator, n: int, groups, offsets, cdfs, effects, missing: float):
    """``n`` rows: the one-hot CSR matrix and each row's logit margin (no intercept).
    Vectorized over rows; the loop is over a9a's 14 groups."""
    present = rng.random((n, len(groups))) >= missing
    cols = np.empty((n, len(groups)), dtype=np.int32)
    margin = np.zeros(n)
    for g, (k, cdf, w) in enumerate(zip(groups, cdfs, effects)):
        category = np.minimum(np.searchsorted(cdf, rng.random(n)), k - 1)
        cols[:, g] = offsets[g] + category
        margin += np.where(present[:, g], w[category], 0.0)
    indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
    X = sp.csr_matrix((np.ones(int(indptr[-1])), cols[present], indptr), shape=(n, int(groups.sum())))
    return X, margin


def make_a9a_like(
    n_train: int = 32561, n_test: int = 16281, *, missing: float = 0.02, logit_scale: float = 2.5, seed: int = 0
) -> Dataset:
    """Generate ``n_train + n_test`` a9a-shaped rows (CSR, 123 binary columns).

    Parameters
    ----------
    n_train, n_test : int
        Rows of each split (positive); the defaults are a9a's.
    missing : float in [0, 1)
        Probability that a row has no 1 in a group (a missing attribute).
    logit_scale : float > 0
        Standard deviation of the per-category effects on the logit; 2.5 puts
        a linear model's test accuracy near a9a's 0.85.
    seed : int
        Seed of the generators behind every draw (the model's, then one per split).
    """
    n_train = integer("synthetic", "n_train", n_train, 1)
    n_test = integer("synthetic", "n_test", n_test, 1)
    missing = real("synthetic", "missing", missing, 0.0, 1.0)
    logit_scale = real("synthetic", "logit_scale", logit_scale, 0.0, open_low=True)
    seed = integer("synthetic", "seed", seed, 0)
    groups = np.asarray(A9A_GROUPS)
    offsets = np.concatenate([[0], np.cumsum(groups)[:-1]])
    # the model, then each split, from its own stream: the training rows do not
    # depend on n_test, and no split is a slice (a copy) of a larger matrix
    model = np.random.default_rng([seed, 0])
    # skewed category frequencies (a few common values, a long tail), fixed per seed
    cdfs = [np.cumsum(model.dirichlet(np.full(k, 0.5))) for k in groups]
    effects = [logit_scale / np.sqrt(len(groups)) * model.standard_normal(k) for k in groups]
    # the intercept for a 24 % positive rate, set on a sample of the model's rows
    _, sample = _rows(np.random.default_rng([seed, 3]), 100_000, groups, offsets, cdfs, effects, missing)
    intercept = _positive_rate_intercept(sample, _POSITIVE_RATE)
    splits = []
    for part, n in ((1, n_train), (2, n_test)):
        rng = np.random.default_rng([seed, part])
        X, margin = _rows(rng, n, groups, offsets, cdfs, effects, missing)
        y = np.where(rng.random(n) < expit(margin + intercept), 1.0, -1.0)
        splits.append((X, y))
    (X_train, y_train), (X_test, y_test) = splits
    params = {"n_train": n_train, "n_test": n_test, "missing": missing, "logit_scale": logit_scale, "seed": seed}
    return Dataset(
        name="synthetic:a9a-shaped",
        X_train=X_train,
        y_train=y_train,
        X_test=X_test,
        y_test=y_test,
        description=(
            f"a9a-shaped synthetic data ({n_train}/{n_test} x 123 one-hot columns in "
            f"a9a's 14 groups, seed {seed}; NOT the real a9a data)"
        ),
        is_stand_in=False,
        checksums={},
        provenance={
            "source": "generated",
            "generator": "vfl.datasets.a9a_like.make_a9a_like",
            # part of the data's identity (cached baselines): bump when the draws change
            "generator_version": 1,
            "params": params,
            "groups": list(A9A_GROUPS),
        },
    )
