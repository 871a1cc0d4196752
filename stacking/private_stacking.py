"""Private stacking over vertically partitioned features: one release per passive party.

The registered solver ``private_stacking`` (:class:`PrivateStacking`). Party 1
(the active party) holds the labels and its block ``D_1``; passive parties
m = 2..M hold ``D_m``. In one round:

1. party 1 sends the labels to every passive party (N values, one byte each);
   each fits a local logistic model on its own block with them (eq. L of
   :mod:`vfl.stacking.mechanism`; it learns the labels, as it does in ADMM
   sharing, where ``y`` and ``z`` reveal them) and publishes it by output
   perturbation (eq. O): ``x~_m = x_m + N(0, sigma_x^2 I)``.
   ``x~_m`` is treated as released to everyone, although in deployment only
   what it computes leaves the party: the analysis does not rely on it
   staying secret;
2. it publishes its clipped share on the training rows,
   ``t_m = clip(D_m x~_m, [-c, c]) + N(0, sigma_s^2 I_N)`` (eq. S), and the
   share's first two moments (eq. Q), unless the budget split gives them 0;
3. party 1 only post-processes (eqs. R1-R3, F): it calibrates the noisy
   shares on its own features and fits the stacking model on
   ``[D_1, s^]`` with a prior on the stacking weights, or, without shares,
   uses the product of experts ``u_1 + sum_m s_m``. Party 1's features never
   leave it. Predictions use each passive party's exact clipped share
   ``clip(D_m x~_m)`` of the new row.

The passive parties' side of the round is :mod:`.party` (:class:`~.party.Passives`,
in this process or on their own workers); party 1 is the solver. What the solver declares to the
runner is in :mod:`.declarations`, the audit's neighbouring datasets in :mod:`.neighbours`,
its manifest statement (and :data:`~.statement.NEIGHBOURS`) in :mod:`.statement`.

Privacy (``privacy.delta`` set). Neighbouring relation: one sample's feature
vector in one passive party's block replaced by any other vector of norm
<= 1 (rows of every block are scaled to unit norm, checked); the labels are
not protected. Each release is a Gaussian mechanism with an enforced l2
sensitivity (:mod:`vfl.stacking.mechanism`):

- ``x~_m``: ``(1 + gtol) / lam_m`` (Chaudhuri et al. 2011: strong convexity
  ``2 lam_m``, per-sample gradient norm <= 1, the fit stopped at
  ``||grad|| <= gtol``, checked);
- ``t_m`` given ``x~_m``: ``2 c`` (one entry, clipped);
- the moments: the largest ``||(u - v, u^2 - v^2)|| / N`` over ``u, v`` in
  ``[-c, c]``: ``2 c / N`` up to ``c = 1.665``; above it
  ``sqrt((2c - r)^2 (1 + r^2)) / N`` with ``r = (c + sqrt(c^2 - 2)) / 2``
  (``4.54 / N`` at ``c = 2``; :func:`~vfl.stacking.mechanism.moments_sensitivity`).

They compose adaptively per party, exactly as one Gaussian of
``mu^2 = sum_k (Delta_k / sigma_k)^2`` (Dong, Roth and Su 2022, GDP); the
target epsilon fixes ``mu`` (:func:`vfl.stacking.mechanism.gdp_mu`) and
``privacy.split`` divides ``mu^2`` between the model, the shares and the
moments. The runner's ledger recomposes the recorded releases into
``epsilon_tight``, which equals the target (to 1e-9 with the exact
Gaussian accountant, within 1e-5 with RDP). A simulation calibrates by the
exact Gaussian profile (``accountant = "pld"``); a deployment draws exact
discrete Gaussian noise, for which only RDP is known to be sound (its Renyi
divergences are the continuous Gaussian's; Canonne, Kamath and Steinke
2020), so the config layer sets ``accountant = "rdp"`` there: about 8 % more
noise at epsilon 1.

Hyper-parameters. ``lam_m`` follows a rule from public quantities when
``privacy.model_noise`` is set: ``lam_m = max(lam_local, (1 + gtol) /
(model_noise sqrt(f_model) mu))``, i.e. the released model carries noise of
standard deviation ``model_noise`` per coordinate. Everything else
(``clip``, ``split``, ``model_noise``, ``prior_sd``) is a config value:
``vfl reproduce private-utility`` picks it per epsilon on rows of the test
file declared public (``partition.public``), which the relation does not
protect, so the choice costs no privacy. A choice made on the private rows
would not be covered.
"""

from __future__ import annotations

from time import perf_counter

import numpy as np
import scipy.sparse as sp

from vfl.core.host import LocalEnv
from vfl.core.inprocess import InProcessUnits
from vfl.core.releases import Release
from vfl.core.sampling import rr_epsilon
from vfl.core.solver import Reference, Setting, Solver
from vfl.core.wire import Inference, Wire

from . import mechanism as mech
from . import party as party_views
from . import randomized_response as lab
from .declarations import _SPLIT_KEYS, StackingDeclarations
from .neighbour_pairs import StackingNeighbours
from .party import PASSIVES_PROTOCOL, Noise, Passives, PassiveSpec, share_moments
from .statement import StackingStatement

__all__ = ["PrivateStacking"]


class PrivateStacking(StackingDeclarations, StackingNeighbours, StackingStatement, Solver):
    """One-release differentially private stacking (see the module docstring).

    Parameters (``[solver]``): ``lam_local``, ``lam1``, ``prior_sd``;
    (``[privacy]``): ``delta``, ``epsilon``, ``clip``, ``split``,
    ``model_noise``, ``accountant``. Without ``privacy.delta`` nothing is
    perturbed: non-private stacking with the same clip, local models and
    fusion.
    """

    name = "private_stacking"
    title = "private stacking"
    setting = Setting.VERTICAL
    iteration_name = "round"
    audit_batch = True  # its kernels broadcast over the audit's runs
    backends = ("inprocess", "dask", "services")
    accounted_backends = ("inprocess", "dask", "services")
    protocol = PASSIVES_PROTOCOL
    #: the labels a passive party receives are +-1 each: no norm to score
    attacks = ("label-direction", "model-completion", "feature-reconstruction")
    label_view = staticmethod(party_views.labels_sent)
    share_view = staticmethod(party_views.shares_sent)
    reference = Reference(
        "vfl's one-release DP stacking for vertical FL (docs/privacy.md); output perturbation of "
        "Chaudhuri, Monteleoni and Sarwate (JMLR 2011), regression calibration (Carroll et al., "
        "Measurement Error in Nonlinear Models, ch. 4), Stein's unbiased risk estimate",
        "one round: local fits, releases, fusion at party 1",
        "L, O, S, Q, R1-R3, F of vfl.stacking.mechanism",
    )
    columns = (
        "release_time_s",
        "fusion_time_s",
        "weight_party*",
        "lam_party*",
        "sigma_model_party*",
        "sigma_share_party*",
        "kappa",
    )
    #: party 1 predicts from the released models, shares and moments, its own block and
    #: each passive party's share of a test row under its released model
    released_columns = ("test_logloss", "test_accuracy", "weight_party*", "lam_party*", "sigma_*", "kappa")
    #: party 1 holds the fused model and its own columns; each passive party holds its
    #: columns of a test row and sends its clipped share under its released model (eq. F)
    inference = Inference(
        1,
        "party 1 holds the fused model and scores its own columns; each "
        "passive party sends its clipped share B_m x_m of a test row under "
        "its released model (one value per row)",
        hub_holds_first=True,
    )

    @classmethod
    def build(cls, data, *, objective, params, privacy, streams, iterations):
        M = len(data.blocks) if data.units is None else data.units.n_parties
        params, privacy = cls.typed_params(params), cls.typed_privacy(privacy)
        return cls(
            data.blocks,
            data.y,
            lam_local=params.lam_local,
            lam1=params.lam1,
            prior_sd=params.prior_sd,
            epsilon=privacy.epsilon,
            delta=privacy.delta,
            clip=privacy.clip,
            split=privacy.split,
            model_noise=privacy.model_noise,
            accountant=privacy.accountant,
            noise_rngs=[streams.noise(m) for m in range(M)],
            shared_rng=streams.noise(),
            parties=data.units,
            label_epsilon=privacy.label_epsilon,
            label_rng=streams.noise(0, 1),
        )

    def __init__(
        self,
        blocks,
        y,
        *,
        lam_local=1.0,
        lam1=1.0,
        prior_sd=0.5,
        epsilon=None,
        delta=None,
        clip=2.0,
        split=(0.5, 0.48, 0.02),
        model_noise=None,
        accountant="pld",
        noise_rngs=None,
        shared_rng=None,
        parties=None,
        label_epsilon=None,
        label_rng=None,
    ):
        """``blocks``: every party's block, or with ``parties`` (the
        :class:`~vfl.core.units.Units` where the passive parties run) party 1's only."""
        M = len(blocks) if parties is None else parties.n_parties
        if M < 2:
            raise ValueError(f"private stacking needs party 1 and at least one passive party (got {M} block)")
        y = np.asarray(y, dtype=float)
        if not np.all(np.isin(y, (-1.0, 1.0))):
            raise ValueError("private stacking needs labels in {-1, +1}")
        n = len(y)
        for m, D in enumerate(blocks, start=1):
            if D.ndim != 2 or D.shape[0] != n:
                raise ValueError(f"party {m}: block of shape {D.shape} does not have {n} rows")
        for name, v in (("lam_local", lam_local), ("lam1", lam1), ("prior_sd", prior_sd), ("clip", clip)):
            if not (np.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
        split = np.asarray(split, dtype=float)
        if split.shape != (3,) or np.any(split < 0) or abs(split.sum() - 1) > 1e-9 or split[0] <= 0:
            raise ValueError(f"split must be 3 fractions >= 0 summing to 1 with split[0] > 0, got {split.tolist()}")
        D1 = blocks[0]
        self.D1 = D1.tocsr() if sp.issparse(D1) else np.ascontiguousarray(D1, dtype=float)
        self.y = y
        self.n_parties = M
        self.passive = np.arange(1, M)
        # the passive parties release through self.release here; elsewhere they draw their
        # noise themselves, at the scales of the events self.record_release records
        if label_epsilon is not None and label_rng is None:
            raise ValueError("label DP needs a noise generator for the labels")
        self.label_epsilon, self.label_rng = label_epsilon, label_rng
        self.q = lab.flip_rate(label_epsilon)  # 0: the labels as they are
        spec = PassiveSpec(clip=float(clip), n_passive=M - 1, label_flip=self.q or None)
        streams = [None] * M if noise_rngs is None else list(noise_rngs)
        if parties is None:
            parties = InProcessUnits.blocks(
                blocks,
                LocalEnv(
                    release=self.release, noise=lambda *m: streams[m[0]] if m else shared_rng, runs=self.audit_runs
                ),
            )
        self.passives = Passives(parties.open(PASSIVES_PROTOCOL, spec), n, self.record_release, streams[1:], shared_rng)
        self.lam1, self.prior_sd, self.clip = float(lam1), float(prior_sd), float(clip)
        self.split = split
        self.m0 = mech.base_rate_logit(y)
        self.private = delta is not None
        self.delta, self.epsilon, self.accountant = delta, epsilon, accountant
        self.model_noise = model_noise
        K = len(self.passive)
        if self.private:
            if epsilon is None:
                raise ValueError("a private run needs epsilon and delta")
            for m, worst in enumerate(self.passives.max_row_norms, start=2):
                if not worst <= 1.0 + 1e-9:  # NaN fails too
                    raise ValueError(
                        f"party {m}: a row has norm {worst:.4g} > 1; the sensitivity "
                        "bounds need unit rows (preprocessing.normalize_rows = true)"
                    )
            if noise_rngs is None or shared_rng is None:
                raise ValueError("a private run needs noise generators")
            self.mu, self.lam, self.sens, self.sigma = mech.calibrate(
                K,
                n,
                epsilon=epsilon,
                delta=delta,
                accountant=accountant,
                lam_local=lam_local,
                model_noise=model_noise,
                split=split,
                clip=self.clip,
                gradient_bound=lab.gradient_bound(self.q),
            )
        else:
            self.mu = np.inf
            self.lam = np.full(K, float(lam_local))
            self.sens = self.sigma = None
        self.round = 0
        self.wire = Wire(self.n_parties)
        self.x_released: list[np.ndarray] | None = None
        self.model: mech.FusionModel | None = None
        self._shares = self._moments = self._tau = None
        self._stats = {}

    # -- the round ------------------------------------------------------------
    @property
    def iteration(self) -> int:
        return self.round

    def _release_round(self) -> None:
        """Steps 1-2: the passive parties' local fits and releases (all that leaves them)."""
        sent = self._sent()
        labels = self.y.astype(np.int8)
        if self.label_epsilon is not None:  # randomized response: one release to all of them
            eps = rr_epsilon(self.label_epsilon)[1]
            labels = self.release(
                labels.astype(float),
                units=0,
                scale=1.0 / eps,
                sensitivity=1.0,
                rng=self.label_rng,
                mechanism="randomized_response",
                relation="labels",
            ).astype(np.int8)
        got = self.passives.round(labels, self.lam, sent)
        self.x_released = got.models  # the exact local models are not kept
        self._count_round(sent)
        if not self.private:  # the exact shares: party 1 computes their moments itself
            self._shares, self._tau = got.shares.T, np.zeros(len(self.passive))
            self._moments = share_moments(got.shares)
            return
        if got.shares is not None:
            self._shares, self._tau = got.shares.T, self.sigma["shares"].copy()
        self._moments = got.moments

    def _sent(self) -> dict:
        """What each passive party sends in the round: per release (eqs. O, S, Q) its noise,
        or None for the exact value of a non-private run; a release the run does not use (a
        zero share of the budget) is not sent."""
        if not self.private:
            return {"model": None, "shares": None}
        return {k: Noise(self.sigma[k], self.sens[k]) for k, f in zip(_SPLIT_KEYS, self.split) if f > 0}

    def _count_round(self, sent: dict) -> None:
        """The round's messages: party 1 sends the labels to every passive party (N values,
        +-1 in one byte each); each sends back its model, then its shares on the training
        rows and its two moments when the run uses them (one message each)."""
        n = len(self.y)
        self.wire.scatter(n, units=self.passive, dtype=np.int8)
        values = {"model": np.array(self.passives.widths), "shares": n, "moments": 2}
        for kind in sent:
            self.wire.gather(values[kind], units=self.passive)

    def _fuse(self) -> None:
        """Step 3: party 1's post-processing (no release)."""
        t0 = perf_counter()
        self.model = mech.fuse(
            self.D1,
            self.y,
            self._shares,
            self._tau,
            self._moments,
            lam1=self.lam1,
            prior_sd=self.prior_sd,
            n_passive=len(self.passive),
        )
        self._stats["fusion_time_s"] = perf_counter() - t0

    def step(self) -> dict:
        if self.round >= 1:
            raise RuntimeError("private stacking has one round")
        self.begin_releases()
        t0 = perf_counter()
        self._release_round()
        t1 = perf_counter()
        self.round = 1
        self._stats = {"release_time_s": t1 - t0, "fusion_time_s": 0.0}
        # The white-box audit (an observer on the releases) needs only what is
        # released; party 1's post-processing cannot change the privacy loss.
        if self.observer is None:
            self._fuse()
        return dict(self._stats)

    def _ensure_model(self) -> None:
        if self.round and self.model is None:
            self._fuse()

    # -- the runner protocol ------------------------------------------------------
    def evaluate(self) -> dict:
        self._ensure_model()
        out = {}
        if self.model is None:
            return out
        for j, m in enumerate(self.passive):
            out[f"weight_party{m + 1}"] = float(self.model.a[j])
            out[f"lam_party{m + 1}"] = float(self.lam[j])
            if self.private:
                out[f"sigma_model_party{m + 1}"] = float(self.sigma["model"][j])
                out[f"sigma_share_party{m + 1}"] = float(self.sigma["shares"][j])
        if "kappa" in self.model.details:
            out["kappa"] = float(self.model.details["kappa"])
        return out

    def initial_metrics(self) -> dict:
        return {}

    def _margins(self, D1, shares) -> np.ndarray:
        """Party 1's margins from its own columns ``D1`` and each passive party's clipped share
        under its released model (eq. F)."""
        self._ensure_model()
        return self.model.margins(D1, np.column_stack(shares))

    def train_margins(self) -> np.ndarray:
        if not self.round:
            return np.zeros(len(self.y))  # before the round: the zero model, like every solver
        return self._margins(self.D1, self.passives.shares())

    def decision_function(self, test) -> np.ndarray:
        if not self.round:
            return np.zeros(test[0].shape[0])
        return self._margins(test[0], self.passives.test_shares(test))

    def coef(self) -> np.ndarray | None:
        """Party 1's fusion coefficients, then each passive party's weight times its model."""
        if self.model is None:
            return None
        return np.concatenate([self.model.theta] + [a * x for a, x in zip(self.model.a, self.x_released)])

    def planned_releases(self) -> list[Release] | None:
        if self.round:
            return []
        rr = (
            []
            if self.label_epsilon is None
            else [
                Release(
                    "randomized_response",
                    np.array([0]),
                    np.array([1.0]),
                    np.array([1.0 / rr_epsilon(self.label_epsilon)[1]]),
                    len(self.y),
                    relation="labels",
                )
            ]
        )
        if not self.private:
            return rr
        out = rr + [
            Release(
                "gaussian", np.array([m]), self.sens["model"][[j]], self.sigma["model"][[j]], self.passives.widths[j]
            )
            for j, m in enumerate(self.passive)
        ]
        if self.split[1] > 0:
            out.append(Release("gaussian", self.passive, self.sens["shares"], self.sigma["shares"], len(self.y)))
        if self.split[2] > 0:
            out.append(Release("gaussian", self.passive, self.sens["moments"], self.sigma["moments"], 2))
        return out
