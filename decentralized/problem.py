"""The network problem of Xiao et al.: agents' local functions, x*, data layout.

Agent i holds ``b_i = m`` samples ``(z_j, L_j)`` (rows of ``A[i]``, labels
``b[i]``) and the local function (App. E, with the shared
:class:`~vfl.core.objective.Objective`)::

    f_i(x) = w sum_j loss(z_j^T x, L_j) + (lam / N) R(x),

so that ``sum_i f_i = F``, the objective's value on all samples (the
regularizer is split evenly). The paper's
``f_i = (1/b_i) sum_j log(1 + exp(-L_j x^T z_j)) + ||x||^2 / 2`` is
``Objective("logistic", lam=N, reduction="unit_mean", unit_size=m,
regularizer="half_l2sq")``.

The pure helpers here are what the experiments layer calls to build a
:class:`~vfl.core.layouts.NetworkData`: :func:`assign_samples` (App. E: each
agent gets 100 random samples), :func:`initial_models` (Algorithm 1 says only
"randomly"), :func:`central_optimum` (the ``x*`` of App. E's accuracy metric)
and :func:`encode_labels` (App. E's ``{0, 1}`` labels).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from vfl.core.layouts import NetworkData
from vfl.core.objective import Objective

from .graphs import check_adjacency

__all__ = [
    "LABEL_ENCODINGS",
    "encode_labels",
    "assign_samples",
    "initial_models",
    "loss_derivatives",
    "central_optimum",
    "Sensitivity",
    "gradient_sensitivity",
    "domain",
    "merge_domains",
    "sensitivity_of",
    "paper_objective",
    "build_network_data",
]

#: ``"paper01"``: the literal reading of App. E, ``>=50K -> 0``, ``<50K -> 1``
#: in ``log(1 + exp(-L x^T z))`` (label-0 samples contribute the constant
#: log 2); ``"pm1"``: ``+1`` for the positive class, ``-1`` otherwise.
LABEL_ENCODINGS = ("paper01", "pm1")

SUPPORTED_REGULARIZERS = ("l2sq", "half_l2sq")


def encode_labels(y, encoding: str = "paper01") -> np.ndarray:
    """Labels for the decentralized objective from ``+-1`` labels (``+1`` = positive class).

    ``vfl.datasets`` gives adult ``+1`` for ``>50K``. ``"paper01"`` maps
    ``+1 -> 0`` and ``-1 -> 1`` (App. E: ``{>=50k, <50k} -> {0, 1}``), the
    only reading under which the paper's ``B_inf = 1/b_i`` is exact;
    ``"pm1"`` keeps ``+-1`` (then ``B_inf = 2/b_i``).
    """
    if encoding not in LABEL_ENCODINGS:
        raise ValueError(f"unknown label encoding {encoding!r}; expected one of {', '.join(LABEL_ENCODINGS)}")
    y = np.asarray(y, dtype=float)
    if not np.all(np.isin(y, (-1.0, 1.0))):
        raise ValueError("encode_labels expects labels in {-1, +1} (+1 = positive class)")
    return np.where(y > 0, 0.0, 1.0) if encoding == "paper01" else y.copy()


def assign_samples(n_samples: int, agents: int, per_agent: int, rng: np.random.Generator) -> np.ndarray:
    """``(agents, per_agent)`` sample indices: disjoint, drawn without replacement (App. E)."""
    for name, v in (("n_samples", n_samples), ("agents", agents), ("per_agent", per_agent)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
    if agents * per_agent > n_samples:
        raise ValueError(
            f"{agents} agents x {per_agent} samples = {agents * per_agent} exceed the {n_samples} samples available"
        )
    return rng.choice(n_samples, size=agents * per_agent, replace=False).reshape(agents, per_agent)


def initial_models(agents: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``x_i^0 ~ N(0, I_d)`` i.i.d. per agent, shape ``(agents, d)`` (the paper: "randomly")."""
    return rng.standard_normal((int(agents), int(d)))


def check_objective(objective: Objective, per_agent: int) -> None:
    if not isinstance(objective, Objective):
        raise ValueError(f"objective must be a vfl.core.objective.Objective, got {objective!r}")
    if objective.regularizer not in SUPPORTED_REGULARIZERS:
        smooth = ", ".join(SUPPORTED_REGULARIZERS)
        raise ValueError(
            f"regularizer {objective.regularizer!r} is not supported by the "
            f"decentralized solvers (smooth ones: {smooth})"
        )
    if objective.reduction == "unit_mean" and objective.unit_size != per_agent:
        raise ValueError(f"objective unit_size = {objective.unit_size} but every agent holds {per_agent} samples")


def loss_derivatives(objective: Objective, u: np.ndarray, b: np.ndarray):
    """``(loss', loss'')`` at margins ``u`` for labels ``b`` (any real labels).

    The logistic curvature is ``L^2 sigma(L u) sigma(-L u)``: zero for a
    label-0 sample of the literal ``{0, 1}`` reading.
    """
    if objective.loss == "logistic":
        q = expit(-b * u)  # the sigmoid of LogisticLoss.grad, computed once for both
        return -b * q, b * b * expit(b * u) * q
    loss = objective.loss_fn
    return loss.grad(u, b), loss.hess(u, b)


def central_optimum(A, b, objective: Objective, *, tol: float = 1e-10, max_iter: int = 100) -> np.ndarray:
    """``x* = argmin sum_i f_i`` over all samples, by damped Newton to ``||grad|| < tol``.

    ``A`` is ``(n, d)`` or ``(N, m, d)`` (flattened), ``b`` the matching labels.
    Raises ``ValueError`` when the problem is not strongly convex (no
    regularization) or Newton does not reach ``tol``.
    """
    A = np.asarray(A, dtype=float)
    A = A.reshape(-1, A.shape[-1])
    b = np.asarray(b, dtype=float).ravel()
    if A.shape[0] != b.size:
        raise ValueError(f"{A.shape[0]} samples but {b.size} labels")
    if objective.regularizer not in SUPPORTED_REGULARIZERS or objective.lam <= 0:
        raise ValueError("central_optimum needs a strongly convex objective (l2sq or half_l2sq with lam > 0)")
    w = objective.weight(b.size)
    c = objective.reg_curvature
    d = A.shape[1]

    def value(x):
        return objective.value(x, A, b)

    x = np.zeros(d)
    for _ in range(max_iter):
        g1, h1 = loss_derivatives(objective, A @ x, b)
        grad = w * (A.T @ g1) + c * x
        if np.linalg.norm(grad) < tol:
            return x
        H = w * (A.T @ (A * h1[:, None])) + c * np.eye(d)
        step = np.linalg.solve(H, grad)
        t, f0, slope = 1.0, value(x), grad @ step
        # Armijo backtracking; the slack absorbs rounding once F is flat near x*.
        slack = 1e-13 * max(1.0, abs(f0))
        while value(x - t * step) > f0 - 1e-4 * t * slope + slack and t > 1e-12:
            t *= 0.5
        x = x - t * step
    g1 = objective.loss_fn.grad(A @ x, b)
    gn = float(np.linalg.norm(w * (A.T @ g1) + c * x))
    if gn < tol:
        return x
    raise ValueError(f"central Newton did not reach ||grad|| < {tol:g} in {max_iter} iterations (last {gn:.3g})")


@dataclass(frozen=True)
class Sensitivity:
    """Bounds on ``grad f_i - grad f^_i`` when one of agent i's samples is replaced.

    ``B_inf``, ``B_1``, ``B_2`` bound its l_inf, l1 and l2 norms for *every*
    neighbour inside ``domain`` (NaN when no bound is enforced); ``basis``
    says what was checked on the data.
    """

    B_inf: float
    B_1: float
    B_2: float
    domain: str
    basis: str

    @property
    def enforced(self) -> bool:
        return bool(np.isfinite(self.B_inf))


def gradient_sensitivity(A, b, objective: Objective) -> Sensitivity:
    """The local sensitivities the data let the code *enforce* (logistic loss only).

    A per-sample gradient is ``w c z`` with ``c = -L sigma(-L z^T x)``;
    ``|c| < 1`` for labels in ``{0, 1}`` or ``{-1, +1}``, and ``c`` is in
    ``(-1, 0]`` for ``{0, 1}``. The neighbour ``z'`` ranges over the same
    domain as the data, which is checked here:

    - labels ``{0, 1}`` and features in ``[0, 1]``: ``B_inf = w`` (two numbers
      of ``(-1, 0]`` differ by < 1; the paper's ``1/b_i``);
    - labels ``{0,1}`` or ``{-1,+1}`` and features in ``[-1, 1]``: ``B_inf = 2w``;
    - additionally rows of l2 norm <= 1: ``B_2 = sqrt(2) w`` (same-orthant
      case) or ``2w``, and ``B_1 = min(d, sqrt(2d)) w`` (same orthant) or
      ``min(d B_inf, 2 sqrt(d) w)``; without the row bound ``B_2 = sqrt(d)
      B_inf``, ``B_1 = d B_inf``.

    The same-orthant ``B_1``: both gradients are ``-w u``, ``-w v`` with
    ``u, v >= 0`` entrywise and ``||u||, ||v|| <= 1``, so ``|u_j - v_j| <=
    max(u_j, v_j)`` and ``||u - v||_1 <= sum over the coordinates where u
    is larger of u_j, plus the rest of v: at most ``sqrt(k) + sqrt(d - k)
    <= sqrt(2d)`` (Cauchy-Schwarz on each part). Attained as ``|c| -> 1`` by
    two rows with disjoint halves of the support; vfl up to 0.1 charged
    ``2 sqrt(d) w``, sqrt(2) more.

    Anything else (other labels, larger features, squared loss) enforces no
    bound: every field is NaN.
    """
    return sensitivity_of(domain(A, b), objective)


def domain(A, b) -> dict:
    """What :func:`gradient_sensitivity` reads of samples ``A`` ``(..., d)`` and labels ``b``:
    their label sets, feature range (0 included) and largest row norm. Read where the
    samples are; :func:`merge_domains` combines groups of agents exactly."""
    A = np.asarray(A, dtype=float)
    d = A.shape[-1]
    Z = A.reshape(-1, d)
    y = np.asarray(b, dtype=float).ravel()
    return {
        "labels01": bool(np.all(np.isin(y, (0.0, 1.0)))),
        "labels_pm": bool(np.all(np.isin(y, (-1.0, 1.0)))),
        "zmin": float(Z.min(initial=0.0)),
        "zmax": float(Z.max(initial=0.0)),
        "rmax": float(np.sqrt((Z * Z).sum(axis=1)).max(initial=0.0)),
        "samples": int(y.size),
        "d": int(d),
    }


def merge_domains(parts) -> dict:
    """The :func:`domain` of the union of groups of samples (all, min, max and sums: exact)."""
    parts = list(parts)
    # numpy's min / max keep a NaN (the builtins drop it when it is not first)
    return {
        "labels01": all(p["labels01"] for p in parts),
        "labels_pm": all(p["labels_pm"] for p in parts),
        "zmin": float(np.min([p["zmin"] for p in parts])),
        "zmax": float(np.max([p["zmax"] for p in parts])),
        "rmax": float(np.max([p["rmax"] for p in parts])),
        "samples": sum(p["samples"] for p in parts),
        "d": parts[0]["d"],
    }


def sensitivity_of(facts: dict, objective: Objective) -> Sensitivity:
    """:func:`gradient_sensitivity` from the :func:`domain` of the agents' samples."""
    d = facts["d"]
    w = objective.weight(facts["samples"])
    nan = float("nan")
    if objective.loss != "logistic":
        return Sensitivity(
            nan, nan, nan, "none", "squared-loss gradients are unbounded without clipping; no bound is enforced"
        )
    labels01, labels_pm = facts["labels01"], facts["labels_pm"]
    zmin, zmax, rmax = facts["zmin"], facts["zmax"], facts["rmax"]
    box01 = zmin >= 0.0 and zmax <= 1.0
    box = -zmin <= 1.0 and zmax <= 1.0  # each fails on NaN
    unit_rows = rmax <= 1.0 + 1e-9
    if not (labels01 or labels_pm) or not box:
        return Sensitivity(
            nan,
            nan,
            nan,
            "none",
            "labels outside {0,1}/{-1,+1} or features outside [-1, 1]: no gradient bound is enforced",
        )
    same_orthant = labels01 and box01
    B_inf = w * (1.0 if same_orthant else 2.0)
    if unit_rows:
        B_2 = w * (math.sqrt(2.0) if same_orthant else 2.0)
        B_1 = min(d * B_inf, (math.sqrt(2.0 * d) if same_orthant else 2.0 * math.sqrt(d)) * w)
    else:
        B_2 = math.sqrt(d) * B_inf
        B_1 = d * B_inf
    domain = (
        ("labels in {0,1}" if labels01 else "labels in {-1,+1}")
        + (", features in [0,1]" if box01 else ", features in [-1,1]")
        + (", rows ||z||_2 <= 1" if unit_rows else "")
    )
    basis = f"checked on agent data: {domain}; per-sample loss weight w = {w:g}; B_inf = " + (
        "w" if same_orthant else "2w"
    )
    return Sensitivity(B_inf, B_1, B_2, domain, basis)


def paper_objective(agents: int, per_agent: int) -> Objective:
    """App. E: ``sum_i [(1/b_i) sum_j log(1 + exp(-L x^T z)) + ||x||^2 / 2]``."""
    return Objective(
        loss="logistic", lam=float(agents), reduction="unit_mean", unit_size=int(per_agent), regularizer="half_l2sq"
    )


def build_network_data(
    X,
    y,
    adjacency,
    *,
    per_agent: int,
    objective: Objective,
    split_rng: np.random.Generator,
    x0_rng: np.random.Generator,
) -> tuple[NetworkData, np.ndarray]:
    """Split a sample pool over the graph's agents; returns the data and the indices.

    ``X`` is the ``(n, d)`` pool (dense), ``y`` its labels already encoded
    (:func:`encode_labels`). Each agent gets ``per_agent`` disjoint samples
    (:func:`assign_samples`), ``x0`` is :func:`initial_models`, ``x_star``
    :func:`central_optimum` of the union.
    """
    adj = check_adjacency(adjacency)
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be (n, d) and y (n,), got {X.shape} and {y.shape}")
    N = adj.shape[0]
    idx = assign_samples(X.shape[0], N, per_agent, split_rng)
    check_objective(objective, per_agent)
    A, b = X[idx], y[idx]
    x0 = initial_models(N, X.shape[1], x0_rng)
    return NetworkData(adjacency=adj, A=A, b=b, x0=x0, x_star=central_optimum(A, b, objective)), idx
