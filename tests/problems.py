"""Small planted problems shared by the solver tests."""

import numpy as np
from scipy.special import expit


def planted_problem(loss, dims, n, seed=0, density=1.0):
    """Random design (sparse-ish if density < 1) split into blocks of widths
    ``dims``, with labels from a planted linear model: +-1 drawn from the
    logistic model, or a noisy linear response for the squared loss."""
    rng = np.random.default_rng(seed)
    d = sum(dims)
    D = rng.standard_normal((n, d)) * (rng.random((n, d)) < density) / np.sqrt(density * d)
    u = D @ (2.0 * rng.standard_normal(d))
    if loss == "logistic":
        b = np.where(rng.random(n) < expit(u), 1.0, -1.0)
    else:
        b = u + 0.3 * rng.standard_normal(n)
    return D, np.split(D, np.cumsum(dims)[:-1], axis=1), b
