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
in this process or on their own workers); party 1 is the solver.

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
from vfl.core.params import Param
from vfl.core.records import PrivacyInfo
from vfl.core.sampling import rr_epsilon
from vfl.core.solver import Neighbour, Reference, Release, Setting, Solver, VerticalData, label_neighbours
from vfl.core.units import InProcessUnits
from vfl.core.wire import Inference, Wire

from . import labels as lab
from . import mechanism as mech
from . import party as party_views
from .party import PASSIVES_PROTOCOL, Noise, Passives, PassiveSpec, share_moments

__all__ = ["PrivateStacking", "NEIGHBOURS"]

#: The neighbouring relation every epsilon of this solver refers to.
NEIGHBOURS = (
    "datasets differing in one sample's feature vector in one passive party's block "
    "D_m (m >= 2), replaced by any vector of l2 norm <= 1 (rows are unit-normalized); "
    "labels and party 1's block are not protected by this relation"
)

_LABELS_NOTE = (
    "labels are not protected: party 1 sends them to every passive party, which fits "
    "its local model with them (ADMM sharing reveals them too: y and z reach every "
    "party each epoch)"
)

_SPLIT_KEYS = ("model", "shares", "moments")


class PrivateStacking(Solver):
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
    params = (
        Param(
            "lam_local",
            float,
            1.0,
            "lam_m: l2 weight of each passive party's local model "
            "(sum form); the floor of the rule when privacy.model_noise is set",
            low=0,
            low_open=True,
        ),
        Param("lam1", float, 1.0, "l2 weight of party 1's own local model (sum form)", low=0, low_open=True),
        Param(
            "prior_sd",
            float,
            0.5,
            "standard deviation of the Gaussian prior N(1, sd^2) on every stacking weight (1: the product of experts)",
            low=0,
            low_open=True,
        ),
    )
    privacy_params = (
        Param(
            "delta",
            float,
            None,
            "delta of the guarantee; setting it turns on the privacy mechanism",
            low=0,
            high=1,
            low_open=True,
            high_open=True,
        ),
        Param(
            "epsilon",
            float,
            None,
            "target epsilon of the whole round, per passive party (needs delta)",
            low=0,
            low_open=True,
        ),
        Param(
            "clip", float, 2.0, "c: shares are clipped to [-c, c] (released and at prediction)", low=0, low_open=True
        ),
        Param(
            "split",
            list,
            [0.5, 0.48, 0.02],
            "budget split [model, shares, moments]: fractions of mu^2, summing to 1",
            low=0,
        ),
        Param(
            "model_noise",
            float,
            None,
            "rule for lam_m: the released model's noise standard "
            "deviation per coordinate (lam_m = max(lam_local, (1 + gtol) / (model_noise "
            "sqrt(f_model) mu)))",
            low=0,
            low_open=True,
        ),
        Param(
            "accountant",
            str,
            "pld",
            "dp-accounting accountant of the calibration and the "
            "ledger (a deployment run, exact discrete noise, uses and requires rdp)",
            choices=("pld", "rdp"),
        ),
        Param(
            "label_epsilon",
            float,
            None,
            "label DP towards the passive parties: the labels "
            "reach them through randomized response at this epsilon (pure, delta 0), and "
            "they fit with the debiased loss",
            low=0,
            low_open=True,
        ),
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
    def protected_replaced(cls, data, privacy, rng):
        """Every passive party's training rows replaced by random unit-norm rows; party 1's
        block and the labels (not protected) kept."""
        blocks = [data.blocks[0]]
        for B in data.blocks[1:]:
            R = rng.standard_normal(B.shape)
            R /= np.linalg.norm(R, axis=1, keepdims=True)
            blocks.append(sp.csr_matrix(R) if sp.issparse(B) else R)
        return VerticalData(blocks, data.y)

    # -- declarations the runner reads ------------------------------------------
    @classmethod
    def check_config(cls, params, privacy, iterations):
        p = cls.typed_privacy(privacy)
        if iterations != 1:
            raise ValueError(f"private_stacking releases once, in one round: set solver.epochs = 1 (got {iterations})")
        split = p.split
        if len(split) != 3:
            raise ValueError(f"privacy.split needs 3 fractions [model, shares, moments], got {len(split)}")
        if abs(sum(split) - 1.0) > 1e-9:
            raise ValueError(f"privacy.split must sum to 1, got {split} (sum {sum(split):.6g})")
        if split[0] <= 0:
            raise ValueError(
                "privacy.split[0] (the model) must be > 0: the local models are released, so they must be perturbed"
            )
        if split[1] == 0 and split[2] > 0:
            raise ValueError(
                "privacy.split[2] > 0 spends budget on share moments, which are used only with shares (split[1] = 0)"
            )
        if p.delta is None:
            for key in ("epsilon", "model_noise"):
                if getattr(p, key) is not None:
                    raise ValueError(f"privacy.{key} needs privacy.delta (the private mechanism)")
        elif p.epsilon is None:
            raise ValueError("privacy.delta needs privacy.epsilon: the target that calibrates the noise")

    @classmethod
    def unit_rows(cls, privacy) -> bool:
        return cls.typed_privacy(privacy).delta is not None

    @classmethod
    def claims_guarantee(cls, privacy) -> bool:
        p = cls.typed_privacy(privacy)
        return p.delta is not None or p.label_epsilon is not None

    @classmethod
    def unit_noise(cls, widths, N, objective, params, privacy, iterations):
        """Per party (party 1, the coordinator, releases nothing of this kind: NaN), the
        noise scale and enforced sensitivity of each release the round uses (its model, its
        shares, their moments: those with a share of the budget), by the calibration the
        solver makes (:func:`.mechanism.calibrate`): what a passive party service checks requests
        against, from its own config."""
        params, privacy = cls.typed_params(params), cls.typed_privacy(privacy)
        K = len(widths) - 1
        split = np.asarray(privacy.split, dtype=float)
        _, _, sens, sigma = mech.calibrate(
            K,
            int(N),
            epsilon=privacy.epsilon,
            delta=privacy.delta,
            accountant=privacy.accountant,
            lam_local=params.lam_local,
            model_noise=privacy.model_noise,
            split=split,
            clip=float(privacy.clip),
            gradient_bound=lab.gradient_bound(lab.flip_rate(privacy.label_epsilon)),
        )
        used = [k for k, f in zip(_SPLIT_KEYS, split) if f > 0]
        sigmas = np.full((K + 1, len(used)), np.nan)
        sensitivities = np.full((K + 1, len(used)), np.nan)
        for j, k in enumerate(used):
            sigmas[1:, j], sensitivities[1:, j] = sigma[k], sens[k]
        return sigmas, sensitivities

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

    # -- the audit's neighbours ---------------------------------------------------
    @classmethod
    def neighbours(cls, data, privacy, rng):
        """Neighbouring datasets under :data:`NEIGHBOURS`, for every passive party.

        Natural: a random sample's row replaced by the row of a random sample
        with the other label. Adversarial, at the sample with the largest
        per-sample gradient of a reference local fit (``lam = 1``): its row
        negated, and its row replaced by the unit vector among ``-a_i``,
        ``+-v`` (``v`` the Hessian's flattest direction) and ``+-x*/||x*||``
        that moves the local model most by one Newton step.
        """
        y = np.asarray(data.y, dtype=float)
        m0 = mech.base_rate_logit(y)
        out = []
        for m in range(1, len(data.blocks)):
            D = data.blocks[m]
            D = D.tocsr() if sp.issparse(D) else np.asarray(D, dtype=float)
            dense_row = (lambda i, D=D: D[i].toarray().ravel()) if sp.issparse(D) else (lambda i, D=D: D[i].copy())

            def with_row(i, new, D=D, m=m):
                B = D.tolil() if sp.issparse(D) else D.copy()
                B[i] = new
                blocks = list(data.blocks)
                blocks[m] = B.tocsr() if sp.issparse(D) else B
                return VerticalData(blocks, data.y)

            i = int(rng.integers(len(y)))
            others = np.flatnonzero(y != y[i])
            j = int(others[rng.integers(others.size)]) if others.size else (i + 1) % len(y)
            out.append(
                Neighbour(
                    f"party {m + 1}, row {i} replaced (natural)",
                    "natural",
                    m,
                    with_row(i, dense_row(j)),
                    f"row {i} of party {m + 1}'s block replaced by row {j} (a sample with the other label)",
                )
            )
            # adversarial: the sample whose loss gradient is largest under a reference fit
            x, _ = mech.fit_logistic(D, y, 1.0, offset=m0)
            u = m0 + np.asarray(D @ x).ravel()
            p = 1.0 / (1.0 + np.exp(y * u))  # sigma(-y u)
            k = int(np.argmax(p))
            a = dense_row(k)
            h = 1.0 / (1.0 + np.exp(-u)) / (1.0 + np.exp(u))
            H = mech._dense_hessian(D.toarray() if sp.issparse(D) else D, h, np.full(D.shape[1], 1.0))
            ev, V = np.linalg.eigh(H)
            cands = [-a, V[:, 0], -V[:, 0]]
            if np.linalg.norm(x) > 0:
                cands += [x / np.linalg.norm(x), -x / np.linalg.norm(x)]
            g_old = -y[k] * p[k] * a

            def shift(b):
                pb = 1.0 / (1.0 + np.exp(y[k] * (m0 + b @ x)))  # noqa: B023 (called within this iteration)
                return float(np.linalg.norm(np.linalg.solve(H, g_old + y[k] * pb * b)))  # noqa: B023 (called within this iteration)

            best = max(cands[1:], key=shift)
            out.append(
                Neighbour(
                    f"party {m + 1}, row {k} negated (adversarial)",
                    "adversarial",
                    m,
                    with_row(k, -a),
                    f"row {k} of party {m + 1}'s block (largest per-sample gradient) replaced by its negation",
                )
            )
            out.append(
                Neighbour(
                    f"party {m + 1}, row {k} moved most (adversarial)",
                    "adversarial",
                    m,
                    with_row(k, best / np.linalg.norm(best)),
                    f"row {k} of party {m + 1}'s block replaced by the unit vector "
                    f"that moves the local model most (one Newton step: "
                    f"{shift(best):.3g} at lam = 1)",
                )
            )
            if np.linalg.norm(x) > 0:
                # canary: row k along the local model (its share is as large as a unit row's
                # can be), against the opposite row: the share moves by 2 |x~ . x^|
                xh = x / np.linalg.norm(x)
                out.append(
                    Neighbour(
                        f"party {m + 1}, canary row {k} along the local model, negated (candidate)",
                        "candidate",
                        m,
                        with_row(k, -xh),
                        f"row {k} of party {m + 1}'s block set "
                        "to x*/||x*|| (x* a reference local fit), replaced by -x*/||x*||",
                        with_row(k, xh),
                    )
                )
        if cls.typed_privacy(privacy).label_epsilon is not None:  # and the label relation's
            out += label_neighbours(data, rng)
        return out

    # -- what the manifest says ---------------------------------------------------
    def describe(self) -> dict:
        return {
            "algorithm": "one round: passive local fits (eq. L), releases (O, S, Q), party-1 fusion (R1-R3, F)",
            "local_fit": f"Newton with line search to ||grad|| <= {mech.GTOL:g} (checked)",
            "fusion": (
                "product of experts (no shares released)"
                if self.private and self.split[1] == 0
                else "regression calibration (SURE ridge on D_1) + "
                "logistic fit on [D_1, s^] with prior N(1, prior_sd^2) on the weights"
            ),
            "lam_local": self.lam.tolist(),
            "base_rate_logit": self.m0,
            "messages_per_passive_party": {
                "labels_received": len(self.y),
                "model": [int(d) for d in self.passives.widths],
                "shares": len(self.y) if (not self.private or self.split[1] > 0) else 0,
            },
        }

    def label_guarantee(self) -> dict | None:
        """The label guarantee (towards the passive parties), or None without one."""
        return None if self.label_epsilon is None else lab.guarantee(self.label_epsilon)

    def privacy_info(self) -> PrivacyInfo | None:
        label = self.label_guarantee()
        note = (
            f"labels: {label['epsilon']:.6g}-label-DP towards the passive parties (randomized response)"
            if label
            else _LABELS_NOTE
        )
        if not self.private:
            return PrivacyInfo(
                **{
                    "mode": "non-private",
                    "dp_guarantee": False,
                    "note": "no noise on the features: non-private stacking (set privacy.delta "
                    "and privacy.epsilon for the private mechanism)",
                    "labels": note,
                    **({"label_guarantee": label} if label else {}),
                }
            )
        return PrivacyInfo(
            **{
                "mode": "accounting",
                "dp_guarantee": True,
                "neighbouring": NEIGHBOURS,
                "towards": "party 1 (it receives the passive parties' releases)",
                "labels": note,
                **({"label_guarantee": label} if label else {}),
                "protected_units": "each passive party m >= 2 (party 1 releases nothing)",
                "mechanism": (
                    "Gaussian, per passive party: x~_m = x_m + N(0, s_x^2 I) (output "
                    "perturbation; treated as public), t_m = clip(D_m x~_m, [-c, c]) + "
                    "N(0, s_s^2 I_N), moments (mean s, mean s^2) + N(0, s_q^2 I_2); "
                    "composed adaptively as one Gaussian (GDP)"
                ),
                "enforced": {
                    "rows_unit_norm": True,
                    "local_fit_gradient_tol": mech.GTOL,
                    "share_clip_c": self.clip,
                    "strong_convexity": "2 lam_m (sum form)",
                },
                "sensitivity": {
                    "model": "(1 + gtol) / lam_m"
                    if not self.q
                    else "(1 + q / (1 - 2q) + gtol) / lam_m (debiased loss)",
                    "shares": "2 c",
                    "moments": "max over u, v in [-c, c] of ||(u - v, u^2 - v^2)|| / N "
                    "(2 c / N up to c = 1.665; sqrt((2c - r)^2 (1 + r^2)) "
                    "/ N above, r = (c + sqrt(c^2 - 2)) / 2)",
                    "moments_value": float(mech.moments_sensitivity(self.clip, len(self.y))),
                },
                "epsilon_target": self.epsilon,
                "delta": self.delta,
                "accountant": self.accountant,
                "gdp_mu": self.mu,
                "split": dict(zip(_SPLIT_KEYS, self.split.tolist())),
                "lam_rule": (
                    None
                    if self.model_noise is None
                    else f"lam_m = max(lam_local, (1 + gtol) / ({self.model_noise:g} sqrt(f_model) mu))"
                ),
                "per_party": [
                    {
                        "party": int(m) + 1,
                        "lam": float(self.lam[j]),
                        **{f"sensitivity_{k}": float(self.sens[k][j]) for k in _SPLIT_KEYS},
                        **{
                            f"sigma_{k}": (float(self.sigma[k][j]) if np.isfinite(self.sigma[k][j]) else None)
                            for k in _SPLIT_KEYS
                        },
                    }
                    for j, m in enumerate(self.passive)
                ],
                "tuning": (
                    "hyper-parameters come from the config; `vfl reproduce private-utility` "
                    "chooses them on rows of the test file declared public "
                    "(partition.public), which the relation does not protect: the choice "
                    "costs no privacy"
                ),
            }
        )
