"""What every network-setting solver shares: data checks, local oracles, exchange, metrics.

A solver is the network's side of an iteration: it fixes the iteration's
public values (step sizes, noise rates, the enforced sensitivities it records
as :class:`~vfl.core.solver.Release` events), has every agent take its step
where its samples are (:mod:`.agents`: one group in this process, or groups on
Dask workers), delivers what each agent releases along the graph's edges,
counts those messages (:class:`~vfl.core.wire.Wire`) and reads the
diagnostics. Every per-iteration operation is one array operation over the
agents (batched products and solves, sparse rows of the graph). The private solvers'
shared part (noisy releases, the paper's privacy loss, the audit's neighbours) is
:mod:`.private_network`.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from vfl.core.errors import ConfigError, DivergedError
from vfl.core.host import LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.layouts import NetworkData
from vfl.core.objective import Objective
from vfl.core.params import Param
from vfl.core.solver import Setting, Solver
from vfl.core.streams import Streams
from vfl.core.wire import Inference, Wire

try:  # the audit's neighbouring datasets (newer vfl.core)
    from vfl.core.neighbours import Neighbour
except ImportError:  # pragma: no cover
    Neighbour = None

from .agent_side import AGENTS_PROTOCOL, Agents, AgentSpec
from .graphs import check_adjacency, degrees, is_complete
from .problem import central_optimum, check_objective, sensitivity_of
from .secret_sharing import AdditiveSecretSharing

__all__ = ["NetworkSolver", "validated", "DIVERGENCE_FACTOR", "EXCHANGE_PARAMS"]

#: see :meth:`NetworkSolver.check_iterates`
DIVERGENCE_FACTOR = 1e6


def validated(declared: tuple[Param, ...], table: dict | None, section: str, owner: str) -> dict:
    """Every declared key with its validated value or default; ``ValueError`` on a bad one."""
    table = dict(table or {})
    names = [p.name for p in declared]
    unknown = sorted(set(table) - set(names))
    if unknown:
        raise ValueError(
            f"unknown key(s) {', '.join(f'{section}.{k}' for k in unknown)} for "
            f"{owner}; valid: {', '.join(names) or '(none)'}"
        )
    try:
        return {p.name: p.validate(section, table.get(p.name, p.default)) for p in declared}
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def _positive(low=0.0):
    return dict(low=low, low_open=True)


# Keys shared by several solvers.
EXCHANGE_PARAMS = (
    Param(
        "exchange",
        str,
        "plain",
        "how the network sum is exchanged: 'plain' messages, or 'secret_sharing' "
        "(Algorithm 3 / Theorem 2.1: additive shares over Z_p; complete graph only)",
        choices=("plain", "secret_sharing"),
    ),
    Param("ss_bits", int, 64, "secret sharing: the ring is Z_p with p = 2^ss_bits", low=8, high=64),
    Param(
        "ss_fractional_bits",
        int,
        32,
        "secret sharing: fixed-point fractional bits (encoding step 2^-f); at most ss_bits - 2",
        low=0,
        high=62,
    ),
)


def _samples(data: NetworkData, N: int):
    """The agents' samples ``A`` ``(N, m, d)`` and labels ``b`` ``(N, m)``, checked."""
    A = np.asarray(data.A, dtype=float)
    b = np.asarray(data.b, dtype=float)
    if A.ndim != 3 or A.shape[0] != N:
        raise ValueError(
            f"NetworkData.A must be (agents={N}, samples, d), got {A.shape} (agents must hold equally many samples)"
        )
    if b.shape != A.shape[:2]:
        raise ValueError(f"NetworkData.b must be {A.shape[:2]}, got {b.shape}")
    if not (np.isfinite(A).all() and np.isfinite(b).all()):
        raise ValueError("NetworkData holds non-finite values")
    return A, b


class NetworkSolver(Solver):
    """Base of the decentralized solvers of Xiao et al. and their baselines."""

    setting = Setting.NETWORK
    regularizers = ("l2sq", "half_l2sq")
    iteration_name = "iteration"
    columns: ClassVar[tuple[str, ...]] = ("log10_error",)
    #: whether the solver supports the secret-sharing exchange (needs only network sums)
    supports_sharing: ClassVar[bool] = False
    #: the agents' side of an iteration (an :class:`~.agents.AgentGroup`): in this process,
    #: or groups of agents on their own Dask workers (:mod:`vfl.experiments.agents`)
    agent_group: ClassVar[type]
    backends = ("inprocess", "dask")
    accounted_backends = ("inprocess", "dask")
    protocol = AGENTS_PROTOCOL
    diagnostic_keys = ("x_star_norm",)  # the central optimum's, fitted on every agent's samples
    #: whether the agents' releases are noisy (the private solvers: privacy.noise)
    noise: bool = False
    #: the solver's release of the agents' noisy iterates, ``publish(mean, scale=,
    #: sensitivity=, ...)`` and, where the agents draw the noise, ``record_noise(scale=,
    #: sensitivity=, ...)``; None: nothing is released with noise
    publish = None
    record_noise = None
    #: every agent holds its own model x_i and all d columns of a row: it scores test rows
    #: alone (the agents' average model of the test metrics is a diagnostic no agent holds)
    inference = Inference(
        0,
        "each agent holds its own model x_i and whole test rows, and "
        "scores them alone: no message (the test metrics use the agents' "
        "average model, a diagnostic)",
    )

    def __init__(
        self, data: NetworkData, *, objective: Objective, params: dict, privacy: dict, streams: Streams, iterations: int
    ):
        owner = f"solver {self.name!r}"
        # validated here too (a solver made directly, outside a config), then typed records
        self.settings = self.typed_params(validated(type(self).params, params, "solver", owner))
        self.privacy_settings = self.typed_privacy(validated(type(self).privacy_params, privacy, "privacy", owner))
        type(self).check_config(self.settings, self.privacy_settings, iterations)
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 0:
            raise ValueError(f"iterations must be an integer >= 0, got {iterations!r}")
        self.iterations = int(iterations)
        self.streams = streams

        self.adj = check_adjacency(data.adjacency)
        N = self.adj.shape[0]
        if data.units is None:  # the agents' samples are in this process
            A, b = _samples(data, N)
            _, m, d = A.shape
        else:
            A = b = None
            _, m, d = data.units.shape
        x0 = np.asarray(data.x0, dtype=float)
        if x0.shape != (N, d):
            raise ValueError(f"NetworkData.x0 must be (agents, d) = {(N, d)}, got {x0.shape}")
        if not np.isfinite(x0).all():
            raise ValueError("NetworkData holds non-finite values")
        check_objective(objective, m)
        self.objective = objective
        self.N, self.m, self.d = N, m, d
        self.deg = degrees(self.adj)
        self._units = np.arange(N)
        self.X = x0.copy()
        self.iteration = 0

        self._sharing = None
        if self.supports_sharing and getattr(self.settings, "exchange", None) == "secret_sharing":
            if not is_complete(self.adj) or N < 3:
                raise ValueError(
                    "exchange = 'secret_sharing' needs a complete graph on >= 3 "
                    "agents (Algorithm 3 sends a share to each of the N - 1 others)"
                )
            self._sharing = AdditiveSecretSharing(
                N, bits=self.settings.ss_bits, fractional_bits=self.settings.ss_fractional_bits
            )
        sharing = self._sharing
        spec = AgentSpec(
            group=type(self).agent_group.kind(),
            name=self.name,
            loss=objective.loss,
            lam=float(objective.lam),
            reduction=objective.reduction,
            regularizer=objective.regularizer,
            unit_size=objective.unit_size,
            settings=self.settings.values_dict(),
            ss_bits=None if sharing is None else sharing.bits,
            ss_fractional_bits=None if sharing is None else sharing.fractional_bits,
            indptr=self.adj.indptr.astype(np.int64),
            indices=self.adj.indices.astype(np.int64),
            x0=x0,
        )
        units = data.units
        if units is None:  # one group of all N here: its releases through self.publish
            units = InProcessUnits.rows(
                A,
                b,
                LocalEnv(
                    release=lambda mean, *, scale, sensitivity, mechanism, l2_sensitivity, **_: self.publish(
                        mean, scale=scale, sensitivity=sensitivity, mechanism=mechanism, l2_sensitivity=l2_sensitivity
                    ),
                    stream=streams.get,
                ),
            )
        self.agents = Agents(units.open(AGENTS_PROTOCOL, spec), self.adj, x0, (N, m, d), self.record_noise)
        self.sensitivity = sensitivity_of(self.agents.facts, objective)
        if data.x_star is None and A is None:
            raise ValueError("agents elsewhere need the runner's x* (NetworkData.x_star)")
        self.x_star = (
            central_optimum(A, b, objective) if data.x_star is None else np.asarray(data.x_star, dtype=float).reshape(d)
        )

        # Iterates beyond this bound count as divergence (x* and x^0 are O(1) here;
        # a diverging run otherwise goes on silently to 1e50 and beyond).
        self._x_bound = DIVERGENCE_FACTOR * (
            1.0 + float(np.max(np.abs(x0), initial=0.0)) + float(np.linalg.norm(self.x_star))
        )

        self.wire = Wire(N)
        if self._sharing is not None:
            self.agents.exchange()
        self._exchanged()  # x^0 reaches the neighbours before the first iteration

    @classmethod
    def check_config(cls, params: dict, privacy: dict, iterations: int) -> None:
        params = cls.typed_params(params)
        bits, frac = getattr(params, "ss_bits", 64), getattr(params, "ss_fractional_bits", 32)
        if bits is not None and frac is not None and frac > bits - 2:
            raise ValueError(f"solver.ss_fractional_bits = {frac} must be at most solver.ss_bits - 2 = {bits - 2}")

    # -- divergence ---------------------------------------------------------
    def check_iterates(self) -> None:
        """Raise :class:`DivergedError` when the iterates are non-finite or beyond any scale
        of the problem (``DIVERGENCE_FACTOR`` times ``1 + max|x^0| + ||x*||`` + noise scale)."""
        bad = not np.all(np.isfinite(self.X))
        if bad or np.max(np.abs(self.X)) > self._x_bound:
            what = "non-finite" if bad else f"larger than {self._x_bound:.3g}"
            hint = self.divergence_hint()
            raise DivergedError(
                f"{self.name}: iterates became {what} at iteration {self.iteration}" + (f"; {hint}" if hint else "")
            )

    # -- exchange -----------------------------------------------------------
    def _exchanged(self) -> None:
        """Count one exchange of the agents' iterates, as the protocol sends it.

        Plain: every agent sends its ``x_i`` (d values) to each neighbour.
        Secret sharing (Xiao et al. 2019, Algorithm 3): every agent sends a
        share to each of the ``N - 1`` others, then broadcasts its partial sum
        to them, both as ring elements (uint64). Every step calls it once, for
        the iterate it publishes; the constructor once, for ``x^0``.
        """
        if self._sharing is not None:
            self.wire.all_to_all(self.d, dtype=np.uint64)
            self.wire.all_to_all(self.d, dtype=np.uint64)
        else:
            self.wire.neighbours(self.deg, self.d)

    def _released(self, X_new, stats: dict) -> dict:
        """The end of an iteration: the agents' releases ``x^{k+1}`` reach their neighbours
        (with secret sharing, through Algorithm 3's rounds); returns the step's statistics."""
        self.X = X_new
        self.iteration += 1
        if self._sharing is not None:
            self.agents.exchange()
        self._exchanged()
        self.check_iterates()
        return stats

    # -- metrics ------------------------------------------------------------
    def mean_model(self) -> np.ndarray:
        return self.X.mean(axis=0)

    def error(self) -> float:
        """App. E's error, read as ``e = (1/N) sum_i ||x_i - x*||_2 / d`` (mean over agents)."""
        return float(np.mean(np.linalg.norm(self.X - self.x_star, axis=1)) / self.d)

    def evaluate(self) -> dict:
        e = self.error()
        return {"log10_error": math.log10(e) if e > 0 else -math.inf}

    def train_margins(self) -> np.ndarray:
        """Margins of the agents' average model on all training samples (agent-major order)."""
        return self.agents.margins(self.mean_model())

    def decision_function(self, test) -> np.ndarray:
        """Margins of the agents' average model on a held-out ``(n, d)`` matrix."""
        X = test[0] if isinstance(test, tuple) else test
        if X.shape[-1] != self.d:
            raise ValueError(f"test data has {X.shape[-1]} features, the model {self.d}")
        return np.asarray(X @ self.mean_model()).ravel()

    def describe(self) -> dict:
        out = {
            "agents": self.N,
            "edges": int(self.adj.nnz // 2),
            "degree_min": int(self.deg.min()),
            "degree_max": int(self.deg.max()),
            "samples_per_agent": self.m,
            "d": self.d,
            "complete_graph": is_complete(self.adj),
            "x_star_norm": float(np.linalg.norm(self.x_star)),
        }
        if self._sharing is not None:
            out["secret_sharing"] = self._sharing.describe()
        return out
