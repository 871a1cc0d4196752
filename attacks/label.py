"""The attacks themselves: scores per sample from what a party received.

A *view* is what one party received that the attack reads, one row per
training sample: ``V`` of shape ``(N, T)`` (ADMM sharing: the value pulled in
each of T epochs; FDML: the loss derivative of each epoch's batch; private
stacking: the labels sent, T = 1). Scores are oriented so that a larger score
means "label +1" (or "feature set").

- :func:`label_norm` (Li et al. 2021, norm scoring): the norm of the sample's
  centred messages; the minority class has the larger derivatives, so the sign
  is chosen by which class is rarer (what the known labels tell).
- :func:`label_direction` (Li et al. 2021, direction scoring): the cosine of the
  sample's centred messages with those of a sample whose label is known.
- :func:`model_completion` (Fu et al. 2022, adapted to messages): a small
  logistic model on the view's leading principal components, fit on the few
  known labels.
- :func:`feature_reconstruction`: party 1 predicts a passive party's binary
  feature from the shares it received, fit on a public auxiliary set of rows
  whose features it knows.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MIN_KNOWN", "feature_reconstruction", "label_direction", "label_norm", "model_completion"]

#: the fewest known labels (of both classes) a model is fit on
MIN_KNOWN = 10


def _centred(V) -> np.ndarray:
    V = np.asarray(V, dtype=float)
    V = V.reshape(V.shape[0], -1)
    return V - V.mean(axis=0, keepdims=True)


def _check_known(known, y_known, need: int, attack: str) -> None:
    y_known = np.asarray(y_known)
    if len(known) < need or (need > 1 and len(np.unique(y_known)) < 2):
        raise ValueError(
            f"{attack} needs at least {need} known labels{' of both classes' if need > 1 else ''} (got {len(known)})"
        )


def label_norm(V, known, y_known) -> np.ndarray:
    """Norm scoring: ``||v_i - mean||``, larger for the rarer class among the known labels
    (its sign flipped when +1 is the more common one)."""
    _check_known(known, y_known, 1, "label-norm")
    score = np.linalg.norm(_centred(V), axis=1)
    rare_positive = np.mean(np.asarray(y_known) > 0) <= 0.5
    return score if rare_positive else -score


def label_direction(V, known, y_known) -> np.ndarray:
    """Direction scoring: the cosine of ``v_i - mean`` with the first known sample's, signed
    by its label."""
    _check_known(known, y_known, 1, "label-direction")
    C = _centred(V)
    ref = C[known[0]]
    norms = np.linalg.norm(C, axis=1) * max(np.linalg.norm(ref), 1e-300)
    cos = (C @ ref) / np.where(norms > 0, norms, 1.0)
    return cos * (1.0 if y_known[0] > 0 else -1.0)


def _components(V, k: int = 5) -> np.ndarray:
    """The leading ``k`` principal components of the centred view, standardized."""
    C = _centred(V)
    if C.shape[1] > k:
        _, _, Wt = np.linalg.svd(C[:: max(1, C.shape[0] // 4000)], full_matrices=False)
        C = C @ Wt[:k].T
    sd = C.std(axis=0)
    return C / np.where(sd > 0, sd, 1.0)


def _logistic(X, y, lam: float = 1.0, iters: int = 50) -> np.ndarray:
    """Ridge logistic regression with an intercept (Newton), ``y`` in {-1, +1}."""
    Z = np.column_stack([np.ones(len(X)), X])
    w = np.zeros(Z.shape[1])
    reg = np.full(Z.shape[1], lam)
    reg[0] = 1e-6
    for _ in range(iters):
        u = Z @ w
        p = 1.0 / (1.0 + np.exp(y * u))  # sigma(-y u)
        g = Z.T @ (-y * p) + reg * w
        h = p * (1 - p)
        H = (Z.T * h) @ Z + np.diag(reg)
        step = np.linalg.solve(H, g)
        w -= step
        if np.linalg.norm(step) < 1e-10:
            break
    return w


def _fit_score(X, known, y_known) -> np.ndarray:
    w = _logistic(X[known], np.where(np.asarray(y_known) > 0, 1.0, -1.0))
    return w[0] + X @ w[1:]


def model_completion(V, known, y_known) -> np.ndarray:
    """Model completion with a few known labels: a ridge logistic model on the view's
    leading principal components, fit on the known samples (at least :data:`MIN_KNOWN`)."""
    _check_known(known, y_known, MIN_KNOWN, "model-completion")
    return _fit_score(_components(V), known, y_known)


def feature_reconstruction(S, target, aux) -> np.ndarray:
    """Party 1's scores that a passive party's binary feature ``target`` is set, from the
    shares ``S`` it received, fit on the auxiliary rows ``aux`` whose features it knows."""
    target = np.asarray(target) > 0
    _check_known(aux, target[aux], MIN_KNOWN, "feature-reconstruction")
    return _fit_score(_components(S), aux, np.where(target[aux], 1.0, -1.0))
