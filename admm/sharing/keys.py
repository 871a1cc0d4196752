"""The keys of ADMM sharing's ``[solver]`` and ``[privacy]`` sections, its config checks and the
noise each party's releases carry: what :class:`~vfl.admm.sharing.admm_sharing.ADMMSharingSolver`
declares to the runner."""

from __future__ import annotations

import numpy as np

from vfl.core.params import Param

from .accounting import (
    CALIBRATION,
    CALIBRATIONS,
    plan_privacy,
)
from .iteration import (
    ACCELERATIONS,
    FORMS,
    ORDERS,
    RHO_SCHEDULES,
    Z_UPDATES,
    check_variant,
)
from .noise import NOISE, NOISE_FORMS
from .penalty import RHO_SCHEDULE
from .share_relations import RELATIONS
from .variant import RHO_PARTIES, scaled_rho

__all__ = ["SharingKeys"]


class SharingKeys:
    """The parameters and the declarations the runner reads (a mixin of the solver)."""

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

    @classmethod
    def unit_noise(cls, widths, N, objective, params, privacy, iterations):
        """Each party's calibrated sigma and enforced sensitivity, by the plan :meth:`build`
        makes (:func:`.accounting.plan_privacy`): what a party service checks requests
        against, from its own config."""
        params = cls.typed_params(params)
        params = params.replace(rho=scaled_rho(params.rho, len(widths), params.rho_parties))
        plan = plan_privacy(widths, N, objective, params, cls.typed_privacy(privacy), iterations)
        return np.asarray(plan.sigmas, dtype=float), np.asarray(plan.release_sensitivity, dtype=float)
