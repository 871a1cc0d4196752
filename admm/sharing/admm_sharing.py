"""ADMM sharing as the registered solver ``admm_sharing``: declarations, privacy, audit pairs.

:class:`ADMMSharingSolver` declares the ``[solver]`` and ``[privacy]`` keys,
checks a config, builds the iteration (:class:`~.iteration.ADMMSharing`) with
the accounting plan of :mod:`.accounting`, and answers the runner's
protocol (metrics, claims, releases, the audit's neighbouring pairs).
"""

from __future__ import annotations

import numpy as np

from vfl.core.layouts import PartyBlocks
from vfl.core.metrics import accuracy, log_loss
from vfl.core.releases import Release
from vfl.core.solver import Reference, Setting
from vfl.core.typed_records import PrivacyInfo
from vfl.core.wire import Wire

from . import party as party_views
from .accounting import (
    CALIBRATION,
    LABELS_NOTE,
    block_facts,
    corollary1_claim,
    describe_plan,
    plan_privacy,
)
from .audit_pairs import SharingAuditPairs
from .iteration import (
    ADMMSharing,
)
from .keys import SharingKeys
from .party import SHARING_PROTOCOL
from .variant import blas_threads_for, scaled_rho

__all__ = ["ADMMSharingSolver"]


class ADMMSharingSolver(SharingKeys, SharingAuditPairs, PartyBlocks, ADMMSharing):
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

    #: the accounting plan (:func:`.accounting.plan_privacy`); None outside accounting mode
    _plan = None

    @staticmethod
    def _with_label_dp(solver, privacy, streams, iterations, M):
        """Label DP on every pull (:meth:`ADMMSharing._label_noise`): T epochs of M pulls."""
        if privacy.label_epsilon is None:
            return solver
        from vfl.privacy.labels import label_sigma  # lazy: start-up (it loads dp-accounting, 0.6 s)

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
        from vfl.privacy import composed_gaussian_epsilon  # lazy: start-up (it loads dp-accounting, 0.6 s)

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
        from vfl.privacy.labels import label_guarantee  # lazy: start-up (it loads dp-accounting, 0.6 s)

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
