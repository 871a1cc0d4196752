"""ADMM sharing as the registered solver ``admm_sharing``: declarations, privacy, audit pairs.

:class:`ADMMSharingSolver` declares the ``[solver]`` and ``[privacy]`` keys,
checks a config, builds the iteration (:class:`~.solver.ADMMSharing`) with
the accounting plan of :mod:`.accounting`, and answers the runner's
protocol (metrics, claims, releases, the audit's neighbouring pairs).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.core.metrics import accuracy, log_loss
from vfl.core.params import Param
from vfl.core.records import PrivacyInfo
from vfl.core.solver import (
    Neighbour,
    PartyBlocks,
    Reference,
    Release,
    Setting,
    VerticalData,
    label_neighbours,
)
from vfl.core.wire import Wire

from . import party as party_views
from .accounting import (
    CALIBRATION,
    CALIBRATIONS,
    LABELS_NOTE,
    block_facts,
    corollary1_claim,
    describe_plan,
    plan_privacy,
)
from .noise import NOISE, NOISE_FORMS
from .party import SHARING_PROTOCOL
from .penalty import RHO_SCHEDULE
from .relations import RELATIONS
from .solver import (
    ACCELERATIONS,
    FORMS,
    ORDERS,
    RHO_SCHEDULES,
    Z_UPDATES,
    ADMMSharing,
    check_variant,
)
from .variant import RHO_PARTIES, blas_threads_for, scaled_rho

__all__ = ["ADMMSharingSolver"]


class ADMMSharingSolver(PartyBlocks, ADMMSharing):
    """ADMM sharing as a registered solver (``solver.name = "admm_sharing"``).

    Without ``privacy.delta`` it runs Algorithm 1, or the perturbed updates
    (10) with the given ``privacy.sigma`` in the chosen ``privacy.form``: a
    simulation, no guarantee claimed. With ``privacy.delta`` it is in
    *accounting mode*: rows of every block have unit norm (checked), ``x_m``
    stays in the ``b1`` ball, released shares are clipped to
    ``[-clip, clip]`` and perturbed by ``N(0, sigma_m^2 I_N)``; the sound
    sensitivity of :mod:`vfl.privacy.sharing` for ``privacy.neighbours`` is
    enforced and composed (``epsilon_tight``), and the paper's Lemma 1 +
    Corollary 1 is shown beside it as the paper's claim (``epsilon_paper``).
    ``privacy.epsilon`` calibrates sigma from ``privacy.calibration``'s
    sensitivity: ``"sound"`` (the guarantee holds at that epsilon),
    ``"lemma1"`` (the paper's noise level; the guarantee is whatever
    ``epsilon_tight`` says) or ``"data_dependent"`` (the authors' prototype:
    sigma follows the iterates, so no guarantee at all).

    The ``[solver]`` variant keys (``form``, ``order``, ``relaxation``,
    ``rho_schedule`` and its bounds, ``acceleration``, ``z_update``,
    ``blas_threads``; see :mod:`vfl.admm.sharing`) default to Algorithm 1. All
    of them only post-process public values, so the release of every epoch
    is the same mechanism: the column-level bound holds unchanged, the
    row-level bound is taken at the x-update's penalty (``M rho`` in the Boyd
    form) and, with an adaptive penalty, at the worst penalty of
    ``[rho_min, rho_max]``; accounting needs those bounds given.
    """

    name = "admm_sharing"
    diagnostic_note = (
        "scored with every party's exact x_m, which no party releases: no party "
        "could deploy this model (its test metrics are diagnostic)"
    )
    title = "ADMM sharing"
    setting = Setting.VERTICAL
    iteration_name = "epoch"
    paper_claim = "Lemma 1 + Theorem 1 + Corollary 1 of Hu et al."
    reference = Reference(
        "Hu, Liu, Kong, Niu: Learning Privately over Distributed Features, an ADMM Sharing Approach (2019)",
        "Algorithm 1",
        "(6)-(8); perturbed shares (10)",
    )
    regularizers = ("l2sq",)
    backends = ("inprocess", "dask", "services")
    audit_batch = True  # its epoch broadcasts over the audit's runs (output noise)
    accounted_backends = ("inprocess", "dask", "services")
    protocol = SHARING_PROTOCOL
    attacks = ("label-norm", "label-direction", "model-completion", "feature-reconstruction")
    label_view = staticmethod(party_views.pulled)
    share_view = staticmethod(party_views.shared)
    params = (
        Param("rho", float, 1.0, "penalty of the augmented Lagrangian (5)", low=0, low_open=True),
        Param(
            "rho_parties",
            str,
            "fixed",
            "fixed = rho as given; scaled = rho (2/M)^0.6 for M "
            "parties, rho being the two-party value (Boyd form; fitted on a9a, M = 2 to 16: "
            "58 epochs to 1e-4 at M = 16 where a fixed rho needs about 170)",
            choices=RHO_PARTIES,
        ),
        Param("z_tol", float, 1e-10, "tolerance of the vectorized Newton solve of (7)", low=0, low_open=True),
        Param(
            "form",
            str,
            "hu",
            "hu = Algorithm 1's Jacobi update (6); boyd = sharing ADMM of "
            "Boyd et al. sec. 7.3 (Hu's update + the proximal term (M-1) rho/2 ||D_m(x - x^k)||^2"
            "): a two-block ADMM, convergent for any rho > 0, same messages",
            choices=FORMS,
        ),
        Param(
            "order",
            str,
            "jacobi",
            "jacobi = parties in parallel (Algorithm 1); gauss_seidel "
            "= in turn, each using the freshest shares (Hu form; M rounds of latency per epoch)",
            choices=ORDERS,
        ),
        Param(
            "relaxation",
            float,
            1.0,
            "alpha: the central node uses alpha S + (1 - alpha) z "
            "(Eckstein-Bertsekas over-relaxation; convergent in the Boyd form)",
            low=0,
            high=2,
            low_open=True,
            high_open=True,
        ),
        Param(
            "rho_schedule",
            str,
            "fixed",
            "fixed, or spectral = adaptive rho of Xu, Figueiredo and Goldstein (AADMM, 2017) with bounded changes",
            choices=RHO_SCHEDULES,
        ),
        Param(
            "rho_min",
            float,
            None,
            "floor of the spectral rho (default in the Hu form: "
            "sqrt(2) L of Assumption 1.2(c); required for privacy accounting)",
            low=0,
            low_open=True,
        ),
        Param(
            "rho_max",
            float,
            None,
            "ceiling of the spectral rho (required for row-level accounting)",
            low=0,
            low_open=True,
        ),
        Param("rho_every", int, 2, "epochs between spectral rho updates (AADMM's T_f)", low=1),
        Param("rho_change", float, 10.0, "largest factor of one spectral rho update", low=1, low_open=True),
        Param(
            "acceleration",
            str,
            "none",
            "nesterov_restart = fast ADMM with restart "
            "(Goldstein et al. 2014, Boyd form only); anderson = safeguarded type-II Anderson "
            "acceleration of the public state (Zhang, O'Donoghue, Boyd; Fu, Zhang, Boyd)",
            choices=ACCELERATIONS,
        ),
        Param("anderson_memory", int, 5, "Anderson's memory (differences kept)", low=1, high=50),
        Param(
            "z_update",
            str,
            "safeguarded",
            "safeguarded = bracketed Newton on (7); newton "
            "= in-place Newton, provably convergent for rho > w/4 (bracket-projected, with the "
            "safeguarded solver as fallback, otherwise): ~5x faster, equal to 1e-10",
            choices=Z_UPDATES,
        ),
        Param(
            "blas_threads",
            int,
            None,
            "limit BLAS to this many threads while the blocks are "
            "factored and inside each epoch (threadpoolctl). Default: by the blocks' storage, "
            "1 when every block is sparse (their products use no BLAS), untouched when one "
            "is dense (BLAS products, faster on every core). 1 is what run.backend = "
            '"dask" needs for the in-process numbers to the bit',
            low=1,
        ),
    )
    privacy_params = (
        Param("sigma", float, 0.0, "noise standard deviation (0: Algorithm 1 exactly)", low=0),
        Param(
            "form",
            str,
            "output",
            "where the noise goes: output = N(0, sigma^2 I_N) on the "
            "shared value (reproduces the authors' Figs. 2-3); variable = model noise, NeurIPS "
            "version of Hu et al. eq. (7); variable_whitened = Hu et al. 2019 eq. (10)",
            choices=NOISE_FORMS,
        ),
        Param(
            "delta",
            float,
            None,
            "total delta of the guarantee; setting it turns on accounting mode",
            low=0,
            high=1,
            low_open=True,
            high_open=True,
        ),
        Param(
            "epsilon",
            float,
            None,
            "target total epsilon over the planned epochs; calibrates sigma (needs delta)",
            low=0,
            low_open=True,
        ),
        Param(
            "neighbours",
            str,
            "column",
            "neighbouring relation: one feature column of one "
            "party's block (Definition 2) or one sample's feature vector in it",
            choices=tuple(RELATIONS),
        ),
        Param(
            "clip",
            float,
            None,
            "c: released shares are clipped to [-c, c] (required in accounting mode)",
            low=0,
            low_open=True,
        ),
        Param(
            "b1", float, 10.0, "radius of the ball every local model is kept in (Assumption 2.1)", low=0, low_open=True
        ),
        Param(
            "input_clip",
            float,
            None,
            "R: the pulled value rho v - y (M rho zeta_m - y in the "
            "Boyd form) is clipped to [-R, R] (required by neighbours = 'row')",
            low=0,
            low_open=True,
        ),
        Param(
            "calibration",
            str,
            "sound",
            "which sensitivity calibrates sigma from epsilon: the "
            "enforced one, the paper's Lemma 1, or the prototype's data-dependent one",
            choices=CALIBRATIONS,
        ),
        Param("accountant", str, "pld", "dp-accounting accountant composing the epochs", choices=("pld", "rdp")),
        Param(
            "label_epsilon",
            float,
            None,
            "label DP towards the passive parties: every "
            "pulled value clipped to [-label_clip, label_clip] and Gaussian noise added, "
            "calibrated over the epochs' M pulls",
            low=0,
            low_open=True,
        ),
        Param("label_delta", float, 1e-5, "delta of the label guarantee", low=0, high=1, low_open=True, high_open=True),
        Param(
            "label_clip",
            float,
            None,
            "L: the pulled values' bound for label DP (required with label_epsilon)",
            low=0,
            low_open=True,
        ),
    )
    columns = (
        "objective",
        "primal_residual",
        "dual_residual",
        "x_time_s",
        "z_time_s",
        "y_time_s",
        "rho",
        "restarted",
        "anderson_accepted",
        # accounting mode: projections onto the b1 ball, Assumption 2.1's norms, noise
        "projected_parties",
        "y_norm",
        "z_norm",
        "sigma_party*",
    )

    #: the accounting plan (:func:`.accounting.plan_privacy`); None outside accounting mode
    _plan = None

    #: the [solver] keys that select a variant (passed to ADMMSharing as they are)
    VARIANT_KEYS = (
        "form",
        "order",
        "relaxation",
        "rho_schedule",
        "rho_min",
        "rho_max",
        "rho_every",
        "rho_change",
        "acceleration",
        "anderson_memory",
        "z_update",
        "blas_threads",
    )

    @classmethod
    def check_config(cls, params, privacy, iterations):
        params, p = cls.typed_params(params), cls.typed_privacy(privacy)
        check_variant(**{k: getattr(params, k) for k in cls.VARIANT_KEYS}, rho=params.rho)
        if params.rho_parties == "scaled" and params.form != "boyd":
            raise ValueError(
                "solver.rho_parties = 'scaled' needs form = 'boyd' (in Hu's form a "
                "smaller rho at M = 16 diverges on a9a)"
            )
        if p.label_epsilon is not None and p.label_clip is None:
            raise ValueError(
                "privacy.label_epsilon needs privacy.label_clip (L): label DP bounds the pulled values to [-L, L]"
            )
        relation = RELATIONS[p.neighbours]()
        if p.delta is not None and RHO_SCHEDULE[params.rho_schedule].adaptive:
            if params.rho_min is None:
                raise ValueError(
                    "privacy accounting with solver.rho_schedule = 'spectral' needs "
                    "solver.rho_min: the sensitivities are bounded only over a "
                    "penalty range with a floor (Lemma 1's grows like 1/rho)"
                )
            relation.check_penalty_range(params)
        if p.epsilon is not None and p.sigma > 0:
            raise ValueError("give privacy.sigma or privacy.epsilon, not both (epsilon calibrates sigma)")
        if p.delta is None:
            for key in ("epsilon", "clip", "input_clip"):
                if getattr(p, key) is not None:
                    raise ValueError(f"privacy.{key} needs privacy.delta (accounting mode)")
            return
        if not NOISE[p.form].accountable:
            raise ValueError(
                f"privacy.form = {p.form!r} cannot be accounted: the guarantee is for Gaussian "
                "noise N(0, sigma^2 I) on the shared value, form = 'output'"
            )
        if p.clip is None:
            raise ValueError(
                "accounting mode (privacy.delta) needs privacy.clip: the sensitivity "
                "is bounded only for clipped shares (e.g. clip = 1.0)"
            )
        relation.check_privacy(p)
        if p.epsilon is None and p.sigma <= 0:
            raise ValueError("accounting mode (privacy.delta) needs noise: give privacy.sigma > 0 or privacy.epsilon")
        if not CALIBRATION[p.calibration].guarantee and p.epsilon is None:
            raise ValueError(
                "privacy.calibration = 'data_dependent' rescales sigma every epoch from privacy.epsilon; give it"
            )

    @classmethod
    def unit_rows(cls, privacy) -> bool:
        return cls.typed_privacy(privacy).delta is not None  # Assumption 2.3: every bound

    @classmethod
    def claims_guarantee(cls, privacy) -> bool:
        p = cls.typed_privacy(privacy)
        return p.delta is not None or p.label_epsilon is not None

    @staticmethod
    def _with_label_dp(solver, privacy, streams, iterations, M):
        """Label DP on every pull (:meth:`ADMMSharing._label_noise`): T epochs of M pulls."""
        if privacy.label_epsilon is None:
            return solver
        from vfl.privacy.labels import label_sigma  # lazy: start-up (vfl.privacy loads dp-accounting, 0.8 s)

        solver.label_epsilon, solver.label_delta = privacy.label_epsilon, privacy.label_delta
        solver.label_clip, solver.label_rng = privacy.label_clip, streams.noise(0, 1)
        # exact noise (a deployment) is accounted by RDP: calibrated by it too
        solver.label_sigma = label_sigma(
            solver.label_epsilon,
            solver.label_delta,
            iterations * M,
            solver.label_clip,
            "rdp" if streams.exact_noise else privacy.accountant,
        )
        return solver

    @classmethod
    def build(cls, data, *, objective, params, privacy, streams, iterations):
        blocks, y = data.blocks, data.y
        M, N = (len(blocks) if data.units is None else data.units.n_parties), len(y)
        params = cls.typed_params(params)
        params = params.replace(
            rho=scaled_rho(params.rho, M, params.rho_parties),
            blas_threads=blas_threads_for(blocks, params.blas_threads),
        )
        p = cls.typed_privacy(privacy)
        accounting = p.delta is not None
        self_kw = dict(
            rho=params.rho,
            z_tol=params.z_tol,
            noise_form=p.form,
            noise_rngs=[streams.noise(m) for m in range(M)],
            **{k: getattr(params, k) for k in cls.VARIANT_KEYS},
        )
        if not accounting:
            solver = cls(blocks, y, objective, sigma=p.sigma, parties=data.units, **self_kw)
            solver.wire = Wire(M)
            return cls._with_label_dp(solver, p, streams, iterations, M)
        widths, norms = block_facts(data)
        for m, norm in enumerate(norms, start=1):
            if not norm <= 1.0 + 1e-9:  # NaN fails too
                raise ValueError(
                    f"party {m}: a row has norm {norm:.4g} > 1; accounting "
                    "mode needs unit rows (preprocessing.normalize_rows = true)"
                )
        if blocks is None and not CALIBRATION[p.calibration].guarantee:
            raise ValueError(
                f"privacy.calibration = {p.calibration!r} rescales sigma every "
                "epoch from every party's block, which the coordinator does not "
                "hold on the dask backend: run it in-process"
            )
        plan = plan_privacy(widths, N, objective, params, p, iterations)
        solver = cls(
            blocks,
            y,
            objective,
            sigma=plan.sigmas,
            x_radius=p.b1,
            ball=plan.relation.ball,
            share_clip=p.clip,
            input_clip=p.input_clip,
            release_sensitivity=plan.release_sensitivity,
            parties=data.units,
            **self_kw,
        )
        solver._plan = plan
        solver.wire = Wire(M)
        return cls._with_label_dp(solver, p, streams, iterations, M)

    @classmethod
    def unit_noise(cls, widths, N, objective, params, privacy, iterations):
        """Each party's calibrated sigma and enforced sensitivity, by the plan :meth:`build`
        makes (:func:`.accounting.plan_privacy`): what a party service checks requests
        against, from its own config."""
        params = cls.typed_params(params)
        params = params.replace(rho=scaled_rho(params.rho, len(widths), params.rho_parties))
        plan = plan_privacy(widths, N, objective, params, cls.typed_privacy(privacy), iterations)
        return np.asarray(plan.sigmas, dtype=float), np.asarray(plan.release_sensitivity, dtype=float)

    @classmethod
    def protected_replaced(cls, data, privacy, rng):
        """Every party's rows replaced by random unit rows (inside both relations); the labels,
        which the relation does not protect, kept."""
        blocks = []
        for B in data.blocks:
            R = rng.standard_normal(B.shape)
            R /= np.linalg.norm(R, axis=1, keepdims=True)
            blocks.append(sp.csr_matrix(R) if sp.issparse(B) else R)
        return VerticalData(blocks, data.y)

    @classmethod
    def neighbours(cls, data, privacy, rng):
        """Neighbouring pairs under ``privacy.neighbours``, per party (docs/audit.md).

        Each relation makes its own natural pair and the candidates for the
        worst case (:meth:`ColumnRelation.neighbours`, :meth:`RowRelation.neighbours`).
        """
        privacy = cls.typed_privacy(privacy)
        relation = RELATIONS[privacy.neighbours]()
        out = []
        y = np.asarray(data.y, dtype=float)
        for m, D in enumerate(data.blocks):
            D = D.tocsr() if sp.issparse(D) else np.asarray(D, dtype=float)

            def with_block(B, m=m):
                blocks = list(data.blocks)
                blocks[m] = B
                return VerticalData(blocks, data.y)

            def pair(kind, what, B, base=None, m=m):
                return Neighbour(
                    f"party {m + 1}, {what} ({kind})",
                    kind,
                    m,
                    with_block(B),
                    what,
                    None if base is None else with_block(base),
                )

            out.extend(relation.neighbours(D, y, rng, pair))
        if privacy.label_epsilon is not None:  # and the label relation's
            out += label_neighbours(data, rng)
        return out

    # -- the runner protocol ------------------------------------------------
    def step(self, diagnostics: bool = False) -> dict:
        if self._plan is not None:
            self._plan.calibrator.before_epoch(self)
        stats = ADMMSharing.step(self, diagnostics=False)
        # Hu et al. Algorithm 1: every party sends its N shares D_m x_m, and gets N values back
        self.wire.gather(len(self.b))
        self.wire.scatter(len(self.b))
        out = {"x_time_s": stats.x_seconds, "z_time_s": stats.z_seconds, "y_time_s": stats.y_seconds}
        if self.x_radius is not None:
            out["projected_parties"] = stats.extra["projected_parties"]
        if "rho" in stats.extra:
            out["rho"] = self.rho  # the penalty the next epoch uses
        for key in ("restarted", "anderson_accepted"):
            if key in stats.extra:
                out[key] = int(stats.extra[key])
        return out

    def evaluate(self) -> dict:
        out = {
            "objective": self.objective_value(),
            "primal_residual": self.primal_residual(),
            "dual_residual": self.dual_residual(),
        }
        if self._plan is not None:
            # Assumption 2.1 of Hu et al. bounds ||y||, ||z|| by b1: recorded, never enforced
            out["y_norm"] = float(np.linalg.norm(self.y))
            out["z_norm"] = float(np.linalg.norm(self.z))
            for m, sig in enumerate(self.sigma):
                out[f"sigma_party{m + 1}"] = float(sig) if self.epoch else 0.0
        return out

    def released_metrics(self) -> dict:
        """From released values alone (a deployment): the primal residual on the shares the
        parties published, and the loss and accuracy of their sum, the noisy margins the
        central node holds (Hu et al. 2019, Algorithm 1, line 5)."""
        u = self.share_sum
        return {
            "primal_residual": self.primal_residual(),
            "released_train_logloss": log_loss(u, self.b),
            "released_train_accuracy": accuracy(u, self.b),
        }

    def initial_metrics(self) -> dict:
        """Row 0 (x = y = z = 0): residuals are exactly 0."""
        out = {"objective": self.objective_value(), "primal_residual": 0.0, "dual_residual": 0.0}
        if self._plan is not None:
            out.update(
                {
                    "y_norm": 0.0,
                    "z_norm": 0.0,
                    "projected_parties": 0,
                    **{f"sigma_party{m + 1}": 0.0 for m in range(self.n_parties)},
                }
            )
        if self.penalty.adaptive:
            out["rho"] = self.rho
        return out

    def paper_epsilon(self):
        plan = self._plan
        if plan is None or self.epoch == 0:
            return None if plan is None else (0.0, 0.0)
        return corollary1_claim(plan, self.epoch)

    def other_claims(self):
        """``lemma1``: Lemma 1's sensitivity composed tightly (what vfl 0.1 printed as a guarantee)."""
        plan = self._plan
        if plan is None or not plan.calibrator.guarantee:
            return {}
        from vfl.privacy import composed_gaussian_epsilon  # lazy: start-up (vfl.privacy loads dp-accounting, 0.8 s)

        if self.epoch == 0:
            return {"lemma1": (0.0, plan.delta)}
        worst = max(
            composed_gaussian_epsilon([s / c / np.sqrt(self.epoch)], plan.delta)
            for s, c in zip(plan.sigmas, plan.lemma1_sensitivity)
        )
        return {"lemma1": (float(worst), plan.delta)}

    def planned_releases(self):
        """The next epoch's releases: the same Gaussians every epoch (constant sigma)."""
        plan = self._plan
        if plan is None or not plan.calibrator.guarantee:
            return None
        return [
            Release(
                "gaussian",
                np.arange(self.n_parties),
                plan.release_sensitivity,
                np.asarray(plan.sigmas, dtype=float),
                len(self.y),
            )
        ]

    def divergence_hint(self) -> str:
        """The likely cause of a divergence, from the actual settings."""
        rho_min = self.objective.min_rho(len(self.y))
        if self.form == "hu" and self.rho <= rho_min:
            return (
                f"rho = {self.rho:g}, while Assumption 1.2(c) of Hu et al. asks for "
                f"rho > sqrt(2) L = {rho_min:.4g} (or use solver.form = 'boyd', convergent "
                "for any rho)"
            )
        if np.any(self.sigma > 0):
            return (
                f"noise sigma = {float(self.sigma.max()):g} swamps the shares; lower "
                "privacy.sigma (rho satisfies Assumption 1.2(c))"
            )
        return "check the data scale (rho satisfies Assumption 1.2(c))"

    def describe(self) -> dict:
        n = len(self.y)
        rho_min = self.objective.min_rho(n)
        satisfied = self._smallest_rho() >= rho_min if self.penalty.adaptive else self.rho > rho_min
        # Hu's Jacobi form needs Assumption 1.2(c); the Boyd form converges for any rho
        warn = self.form == "hu" and not satisfied
        variant = self.variant()
        return {
            "algorithm": (
                "ADMM sharing, Hu et al. Algorithm 1, updates (6)-(8), Jacobi"
                + ("; perturbed shares as in updates (10)" if np.any(self.sigma > 0) else "")
            ),
            **({"variant": variant} if variant else {}),
            "x_update": (
                (
                    "exact: Cholesky of 2*lam*I + rho*D_m^T D_m (push-through N x N form when d_m > N)"
                    if not self.penalty.adaptive
                    else "exact, any rho: eigendecomposition of D_m^T D_m (D_m D_m^T when d_m > N), computed once"
                )
                + ("; penalty M*rho (Boyd form)" if self.form == "boyd" else "")
                + ("; exact minimizer over the b1 ball (trust-region subproblem)" if self.ball == "exact" else "")
            ),
            # (this key also names the [solver] z_update value: "newton: ..." or the default)
            "z_update": self.z_solver.describe,
            **({"blas_threads": self.blas_threads} if self.blas_threads else {}),
            "init": "x = y = z = 0",
            **(
                {"assumption_1_2c": {"L": self.objective.smoothness(n), "rho_min": rho_min, "satisfied": satisfied}}
                if self.form == "hu"
                else {"convergence": "any rho > 0 (a two-block ADMM: Boyd et al. 2011, sec. 3.2)"}
            ),
            **(
                {
                    "warnings": [
                        f"rho = {self.rho:g} is not above sqrt(2) L = {rho_min:.4g} "
                        "(Assumption 1.2(c)); convergence is not guaranteed"
                    ]
                }
                if warn
                else {}
            ),
        }

    def privacy_info(self) -> PrivacyInfo | None:
        out = self._feature_info()
        if self.label_sigma is None:
            return out
        from vfl.privacy.labels import label_guarantee  # lazy: start-up (vfl.privacy loads dp-accounting, 0.8 s)

        label = label_guarantee(
            self.label_epsilon,
            self.label_delta,
            (
                f"every pulled value clipped to [-L, L] entry by entry and N(0, "
                f"{self.label_sigma:.4g}^2) added (the label holder's own pull too: every share is "
                "then a function of noisy pulls); M pulls per epoch, each of sensitivity 2 L, "
                "composed over the epochs"
            ),
            {"pull_clip_L": self.label_clip},
        )
        out = (
            out.dump()
            if out is not None
            else {
                "mode": "simulation",
                "dp_guarantee": False,
                "note": "no noise on the shares: the features are not protected",
            }
        )
        return PrivacyInfo(**{**out, "label_guarantee": label, "labels": "label DP: see label_guarantee"})

    def _feature_info(self) -> PrivacyInfo | None:
        plan = self._plan
        if plan is None:
            if not np.any(self.sigma > 0):
                return None
            return PrivacyInfo(
                **{
                    "mode": "simulation",
                    "dp_guarantee": False,
                    "note": (
                        "noise of scale sigma with no accounting: sigma alone is no privacy "
                        "guarantee (set privacy.delta for accounting mode)"
                    ),
                    "form": self.noise_form,
                    "sigma": self.sigma.tolist(),
                    "labels": LABELS_NOTE,
                }
            )
        return describe_plan(plan)
