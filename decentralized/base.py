"""What every network-setting solver shares: data checks, local oracles, metrics, privacy.

A solver is the network's side of an iteration: it fixes the iteration's
public values (step sizes, noise rates, the enforced sensitivities it records
as :class:`~vfl.core.releases.Release` events), has every agent take its step
where its samples are (:mod:`.agents`: one group in this process, or groups on
Dask workers), delivers what each agent releases along the graph's edges,
counts those messages (:class:`~vfl.core.wire.Wire`) and reads the
diagnostics. Every per-iteration operation is one array operation over the
agents (batched products and solves, sparse rows of the graph).
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
from vfl.core.records import PrivacyInfo
from vfl.core.releases import Release
from vfl.core.solver import Setting, Solver
from vfl.core.streams import Streams
from vfl.core.wire import Inference, Wire

try:  # the audit's neighbouring datasets (newer vfl.core)
    from vfl.core.neighbours import Neighbour
except ImportError:  # pragma: no cover
    Neighbour = None

from .agent_side import AGENTS_PROTOCOL, Agents, AgentSpec
from .agents import draw_rows
from .graphs import check_adjacency, degrees, is_complete
from .problem import central_optimum, check_objective, sensitivity_of
from .secret_sharing import AdditiveSecretSharing

__all__ = ["NetworkSolver", "PrivateNetworkSolver", "NEIGHBOURING", "validated", "DIVERGENCE_FACTOR"]

#: see :meth:`NetworkSolver.check_iterates`
DIVERGENCE_FACTOR = 1e6

NEIGHBOURING = (
    "agent i's local function f_i differs in one of its b_i samples (one sample "
    "(z, L) replaced by another from the same domain); every other agent and any "
    "eavesdropper may collude and see the whole transcript (local DP)"
)


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

LAPLACE_PRIVACY = (
    Param(
        "noise",
        bool,
        True,
        "add the Laplace noise Delta ~ Lap(0, beta_k)^d (false: the noiseless algorithm, e.g. Fig. D; no privacy)",
    ),
    Param(
        "beta0",
        float,
        1.0,
        "Laplace RATE (inverse scale) base: beta_k = beta0 * beta_growth^k, density "
        "(beta/2) e^{-beta|y|}, std sqrt(2)/beta; the update producing x^{k+1} uses beta_{k+1}",
        **_positive(),
    ),
    Param(
        "beta_growth",
        float,
        1.02,
        "growth of the Laplace rate per iteration (> 1: diminishing noise; paper 1.02)",
        **_positive(),
    ),
    Param(
        "B_inf",
        float,
        None,
        "l_inf local sensitivity of grad f_i for the paper's privacy curves; default: the bound "
        "the data enforce (1/b_i for {0,1} labels and features in [0,1])",
        **_positive(),
    ),
    Param(
        "delta",
        float,
        None,
        "set to claim a guarantee: the runner composes the Laplace releases (enforced l1 and l2 "
        "sensitivities) into a sound (epsilon, delta); unset: a replayable simulation of the "
        "paper",
        low=0.0,
        high=1.0,
        low_open=True,
        high_open=True,
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


class PrivateNetworkSolver(NetworkSolver):
    """A solver that releases noisy iterates and tracks the paper's privacy loss.

    Columns: ``privacy_loss`` (the paper's per-agent cumulative loss, mean over
    agents: Theorem 2.2's realized value for Laplace-output methods),
    ``privacy_loss_max`` (its max over agents) and ``privacy_loss_worst``
    (the worst-case cumulative ``sum_k d alpha_{k+1} beta_{k+1} B_inf``, max
    over agents). All are ``inf`` when the noise is switched off.
    """

    diagnostic_note = (
        "scored with the average of the agents' exact models, which no agent releases (its test metrics are diagnostic)"
    )
    #: Theorem 2.2's realized loss is ex post: it depends on the agents' exact iterates
    diagnostic_columns = ("epsilon_paper", "delta_paper")

    columns = ("log10_error", "privacy_loss", "privacy_loss_max", "privacy_loss_worst")
    privacy_params = LAPLACE_PRIVACY
    #: what ``privacy_loss`` is, in words (summaries, manifests)
    paper_claim = "Theorem 2.2's realized loss (Xiao et al.), ex post, max over agents"
    loss_meaning = "Theorem 2.2's realized loss: ex post and data dependent, not a worst-case guarantee"

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        q = self.privacy_settings
        self.noise = getattr(q, "noise", True)
        self.B_inf = q.B_inf if getattr(q, "B_inf", None) is not None else self.sensitivity.B_inf
        self._noise_rng = self.streams.noise()
        if self.noise:  # Laplace draws reach about 20 noise scales over a run
            smallest_rate = min(self.beta(1), self.beta(self.iterations))
            self._x_bound += DIVERGENCE_FACTOR * 20.0 / smallest_rate

    def beta(self, k: int) -> float:
        """``beta_k = beta0 * beta_growth^k`` (a Laplace rate)."""
        q = self.privacy_settings
        return q.beta0 * q.beta_growth**k

    def publish(self, mean, *, scale, sensitivity, mechanism="laplace", l2_sensitivity=None):
        """Release ``mean`` + noise through :meth:`Solver.release` (all agents at once).

        ``"l2_laplace"`` (density ``~ exp(-||y||_2 / scale)``, the native
        mechanism of [42] and [43]) is not one of ``add_noise``'s mechanisms:
        its event is recorded and the observer called as ``release`` does, and
        the noise is :func:`~.agents.draw_rows`'s.
        """
        if mechanism != "l2_laplace":
            return self.release(
                mean,
                units=self._units,
                scale=scale,
                sensitivity=sensitivity,
                rng=self._noise_rng,
                mechanism=mechanism,
                l2_sensitivity=l2_sensitivity,
            )
        scale = self.record_noise(scale=scale, sensitivity=sensitivity, mechanism=mechanism)
        if self.observer is not None:
            return self.observer(self, self._releases[-1], mean, self._noise_rng)
        return draw_rows(mechanism, mean, scale, self._noise_rng, slice(None), self.N)

    def record_noise(self, *, scale, sensitivity, mechanism="laplace", l2_sensitivity=None) -> np.ndarray:
        """Record the iteration's :class:`Release` of noise drawn where the agents are (their
        Dask workers); returns every agent's scale to draw with (grown for an exact
        sampler's grid)."""
        if mechanism != "l2_laplace":
            return self.record_release(
                units=self._units,
                scale=scale,
                sensitivity=sensitivity,
                rng=self._noise_rng,
                size=self.d,
                mechanism=mechanism,
                l2_sensitivity=l2_sensitivity,
            ).scale
        scale = np.broadcast_to(np.asarray(scale, float), (self.N,)).copy()
        sens = np.broadcast_to(np.asarray(sensitivity, float), (self.N,)).copy()
        if self._releases is None:
            self._releases = []
        self._releases.append(Release("l2_laplace", self._units.copy(), sens, scale, self.d))
        return scale

    @property
    def _loss(self) -> np.ndarray:
        """Theorem 2.2's realized cumulative loss per agent (each agent evaluates its own)."""
        return self.agents.losses()[0]

    @property
    def _worst(self) -> np.ndarray:
        """The worst-case cumulative loss per agent."""
        return self.agents.losses()[1]

    def evaluate(self) -> dict:
        out = super().evaluate()
        if not self.noise:
            return {**out, "privacy_loss": math.inf, "privacy_loss_max": math.inf, "privacy_loss_worst": math.inf}
        loss, worst = self.agents.losses()
        return {
            **out,
            "privacy_loss": float(np.mean(loss)),
            "privacy_loss_max": float(np.max(loss)),
            "privacy_loss_worst": float(np.max(worst)),
        }

    @classmethod
    def protected_replaced(cls, data, privacy: dict, rng: np.random.Generator):
        """Every sample ``(z, L)`` of every agent replaced by another one of the data (a random
        permutation over all agents' samples): each stays in the domain."""
        A = np.asarray(data.A, dtype=float)
        b = np.asarray(data.b, dtype=float)
        order = rng.permutation(b.size)
        return NetworkData(
            data.adjacency,
            A.reshape(b.size, -1)[order].reshape(A.shape),
            b.reshape(-1)[order].reshape(b.shape),
            data.x0,
            data.x_star,
        )

    @classmethod
    def neighbours(cls, data, privacy: dict, rng: np.random.Generator) -> list:
        """Neighbouring datasets under :data:`NEIGHBOURING` (one sample of one agent replaced).

        Natural: the sample is replaced by another agent's sample (same domain).
        Adversarial: the sample's label is changed to the other class of the
        encoding (0 <-> 1, or -1 <-> +1), features kept, which moves its
        gradient coordinate by up to the whole of ``B_inf``.
        """
        A = np.asarray(data.A, dtype=float)
        b = np.asarray(data.b, dtype=float)
        N, m, _ = A.shape
        unit = int(rng.integers(N))
        j = int(rng.integers(m))
        donor = int((unit + 1 + rng.integers(N - 1)) % N)
        k = int(rng.integers(m))
        A1, b1 = A.copy(), b.copy()
        A1[unit, j], b1[unit, j] = A[donor, k], b[donor, k]
        labels = np.unique(b)
        other = {0.0: 1.0, 1.0: 0.0} if set(labels) <= {0.0, 1.0} else {-1.0: 1.0, 1.0: -1.0}
        # prefer a sample whose label has a gradient ({0,1}: label 1)
        cand = np.flatnonzero(b[unit] == (1.0 if 1.0 in other else b[unit, 0]))
        ja = int(cand[0]) if cand.size else j
        b2 = b.copy()
        b2[unit, ja] = other.get(float(b[unit, ja]), b[unit, ja])

        def nd(A_, b_):
            return NetworkData(data.adjacency, A_, b_, data.x0, data.x_star)

        pairs = [
            Neighbour(
                "replace_sample",
                "natural",
                unit,
                nd(A1, b1),
                f"agent {unit}: sample {j} replaced by agent {donor}'s sample {k}",
            ),
            Neighbour(
                "flip_label (candidate)",
                "candidate",
                unit,
                nd(A, b2),
                f"agent {unit}: label of sample {ja} changed {b[unit, ja]:g} -> {b2[unit, ja]:g}",
            ),
        ]
        # Canary: two rows of the data's domain on disjoint halves of the support, with the
        # label that has a gradient; their gradients differ by up to B_1 in l1 (see
        # problem.gradient_sensitivity). Nonnegative entries keep every domain's box.
        d = A.shape[-1]
        if d >= 2:
            label = 1.0
            half = np.zeros(d)
            half[: d // 2] = 1.0 / math.sqrt(d // 2)
            rest = np.zeros(d)
            rest[d // 2 :] = 1.0 / math.sqrt(d - d // 2)
            A2, A3, b3 = A.copy(), A.copy(), b.copy()
            A2[unit, j], A3[unit, j], b3[unit, j] = half, rest, label
            pairs.append(
                Neighbour(
                    "canary sample on disjoint supports (candidate)",
                    "candidate",
                    unit,
                    nd(A3, b3),
                    f"agent {unit}: sample {j} set to a unit row on the first "
                    f"{d // 2} features (label 1), replaced by one on the other {d - d // 2}",
                    nd(A2, b3),
                )
            )
        return pairs

    def other_claims(self) -> dict:
        """The worst-case total of Theorem 2.2's corollary (pure, max over agents)."""
        if not self.noise or not np.isfinite(self.B_inf) or not np.all(np.isfinite(self._worst)):
            return {}
        return {"worst_case": (float(np.max(self._worst)), 0.0)}

    def describe(self) -> dict:
        q = self.privacy_settings
        return {
            **super().describe(),
            "noise": (f"Laplace rate beta_k = {q.beta0:g} * {q.beta_growth:g}^k" if self.noise else "off"),
            "B_inf": self.B_inf,
            "sensitivity_domain": self.sensitivity.domain,
        }

    def paper_epsilon(self):
        """Theorem 2.2's realized cumulative loss, max over agents (pure, delta = 0)."""
        if not self.noise or not np.isfinite(self.B_inf):
            return None
        return float(np.max(self._loss)), 0.0

    def _b_inf_info(self) -> dict:
        s = self.sensitivity
        return {
            "B_inf": self.B_inf,
            "B_inf_source": (
                "privacy.B_inf (assumed, not checked)"
                if getattr(self.privacy_settings, "B_inf", None) is not None
                else "enforced by the data checks"
            ),
            "enforced_bounds": {"B_inf": s.B_inf, "B_1": s.B_1, "B_2": s.B_2, "domain": s.domain, "basis": s.basis},
            "B_inf_rests_on": (
                "labels read as {0,1} with loss log(1+exp(-L x^T z)) (label-0 "
                "samples have zero gradient) and features in [0,1] (min-max scaled, "
                "nonnegative); unit rows are not needed for B_inf (they bound "
                "B_2, B_1 and the smoothness M_i); the code checks these on the "
                "agents' data at construction and sets every Release "
                "sensitivity to NaN when they fail"
            ),
        }

    def _releases_enforced(self) -> bool:
        """Whether every release carries a sensitivity the code enforces (a sound ledger)."""
        return bool(self.noise and np.isfinite(self.sensitivity.B_1))

    def _privacy_mode(self) -> dict:
        """What the run claims, in the keys every summary reads (``mode``, ``dp_guarantee``)."""
        if not self.noise:
            return {
                "mode": "simulation",
                "dp_guarantee": False,
                "note": "privacy.noise = false: the noiseless algorithm, no privacy at all",
            }
        if getattr(self.privacy_settings, "delta", None) is None:
            return {
                "mode": "simulation",
                "dp_guarantee": False,
                "note": (
                    f"no privacy.delta: a simulation of the paper; privacy_loss is "
                    f"{self.loss_meaning}. Set privacy.delta for a composed "
                    f"(epsilon, delta)"
                ),
            }
        if self._releases_enforced():
            return {"mode": "accounting", "dp_guarantee": True}
        return {
            "mode": "accounting",
            "dp_guarantee": False,
            "warning": (
                "the releases carry no enforced sensitivity (see "
                "release_sensitivity), so no epsilon of this run is a guarantee"
            ),
        }

    def privacy_info(self) -> PrivacyInfo:
        return PrivacyInfo(**self._privacy_fields())

    def _privacy_fields(self) -> dict:
        info = {
            **self._privacy_mode(),
            "neighbouring": NEIGHBOURING,
            "noise": "Laplace, rate beta_k = beta0 * beta_growth^k per coordinate (numpy scale 1/beta)"
            if self.noise
            else "none: no privacy guarantee",
            "adversary_knows": "every released x_j^k, the dual variables (functions of them), "
            "D_i / eta_k and the graph; not agent i's random weights or noise",
            "realized_loss": (
                "privacy_loss is Theorem 2.2's realized loss: an ex-post, "
                "data-dependent quantity evaluated with the true f_i's interval "
                "on this transcript; it is NOT a worst-case guarantee"
            ),
            "worst_case": (
                "privacy_loss_worst = sum_k d alpha_{k+1} beta_{k+1} B_inf is a pure "
                "LDP guarantee when B_inf is enforced (the random mean is "
                "data-independent, so the mixture is no worse than each Laplace "
                "component)"
            ),
            "release_sensitivity": (
                "each Laplace Release carries the l1 bound alpha_{k+1} B_1 "
                "and the l2 bound alpha_{k+1} B_2 enforced by the data "
                "checks, else NaN; the ledger charges each release the "
                "smaller of the l1 Laplace RDP and the coordinates' zCDP "
                "alpha (alpha_{k+1} B_2 beta_{k+1})^2 / 2"
            ),
            "other_claims_meaning": {
                "worst_case": (
                    "the worst case sum_k d alpha beta B_inf: a pure LDP bound (basic composition) "
                    "when B_inf is enforced, else the paper's claim"
                )
            },
            **self._b_inf_info(),
        }
        if self._sharing is not None:
            info["exchange"] = (
                "secret sharing: only the network sum is revealed; the releases "
                "recorded are the individual noisy iterates, an upper bound"
            )
        return info
