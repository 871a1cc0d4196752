"""What every private network-setting solver shares: noisy releases through the solver's
release machinery, the paper's privacy loss (Xiao et al., Theorem 2.2), the audit's
neighbouring datasets and the privacy statement, over :class:`~.network.NetworkSolver`.
"""

from __future__ import annotations

import math

import numpy as np

from vfl.core.layouts import NetworkData
from vfl.core.neighbours import Neighbour
from vfl.core.params import Param
from vfl.core.releases import Release
from vfl.core.typed_records import PrivacyInfo

from .agents import draw_rows
from .network import DIVERGENCE_FACTOR, NetworkSolver, _positive

__all__ = ["PrivateNetworkSolver", "NEIGHBOURING", "LAPLACE_PRIVACY"]

NEIGHBOURING = (
    "agent i's local function f_i differs in one of its b_i samples (one sample "
    "(z, L) replaced by another from the same domain); every other agent and any "
    "eavesdropper may collude and see the whole transcript (local DP)"
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
