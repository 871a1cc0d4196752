"""Algorithm 3 of Huang et al. (DP-ADMM): the linearized local step with Theorem 1's noise."""

from __future__ import annotations

import math
from time import perf_counter

import numpy as np

from vfl.core.params import Param
from vfl.core.releases import Release
from vfl.core.solver import Reference
from vfl.core.typed_records import PrivacyInfo
from vfl.privacy.moments import dp_admm_epsilon

from ..pretrain import pretrain_dw
from .base import (
    _ACCOUNTANT,
    _COMMON_PARAMS,
    _DELTA,
    _EPSILON,
    _EPSILON_PER_ITERATION,
    _NEIGHBOURS,
    _ROW_BOUND,
    _assumptions,
    _Consensus,
    per_iteration_epsilon,
)
from .batched import dp_admm_closed_form
from .providers import ProviderGroup
from .schedules import (
    HUANG_PAPER,
    S1,
    S3,
    S4,
    lemma1_sensitivity,
    theorem1_sigma,
    theorem3_eta,
    theorem4_eta,
)


class LinearizedGroup(ProviderGroup):
    """Algorithm 3's local step for a group of providers: the closed form (3a).

    Each provider minimizes the approximate augmented Lagrangian (2),
    linearized at its own last release ``w~_i^k`` (Huang et al. 2019, Sec.
    III-B), with the iteration's public step size ``eta^{k+1}`` (``public["eta"]``,
    Theorem 3 or 4).
    """

    def local_step(self, w, public):
        return dp_admm_closed_form(
            self.A,
            self.b,
            self.shared,
            w,
            self.gamma,
            eta=public["eta"],
            rho=self.rho,
            lam_per_provider=self.lam_per_provider,
            regularizer=self.regularizer,
        ), {}


class DPADMM(_Consensus):
    """Algorithm 3 of Huang et al. (DP-ADMM): linearized local step (3a) with Gaussian noise (3b).

    Each iteration ``k`` (0-based): ``eta = eta^{k+1}`` of Theorem 3 (l1) or
    Theorem 4 (l2); every provider computes the closed form of (3a) at its own
    noisy ``w~_i^k`` and releases ``w~_i^{k+1} = w_i^{k+1} + N(0, sigma_{k+1}^2 I)``
    with Theorem 1's sigma (line 6, which prints ``w~ + xi``, read as (3b)); then (3c), (3d).

    ``D_w`` comes from ``params.D_w`` or, if unset, from pre-training on
    ``data.public`` (Sec. VI: 162 rows; here the centralized problem on those rows
    with weight ``lam / N``). ``privacy.noise = false`` runs the same iteration
    without noise (linearized ADMM with the same eta; not private).
    """

    name = "dp_admm"
    #: its providers run as party services too (each its own, :meth:`unit_noise` its floor)
    backends = ("inprocess", "dask", "services")
    accounted_backends = ("inprocess", "dask", "services")
    paper_claim = "Theorem 2, the moments accountant of Huang et al."
    #: the trainer's w is computed from the released (noisy) w_i alone; eta and sigma
    #: follow the public schedule
    released_columns = ("test_logloss", "test_accuracy", "eta", "sigma")
    title = "DP-ADMM (Algorithm 3)"
    reference = Reference(HUANG_PAPER, "Algorithm 3", "(2), (3a)-(3d); Lemma 1; Theorems 1-4; Appendix A")
    params = _COMMON_PARAMS + (
        Param(
            "D_w",
            float,
            None,
            "bound on ||w*|| in the step sizes; unset: pre-train on the public rows (Huang et al. 2019, Sec. VI)",
            low=0,
            low_open=True,
        ),
        Param(
            "dw_weight",
            str,
            "lam_over_N",
            "regularization weight of the D_w pre-training: "
            "lam/N (the weight inside each f_i) or lam (gives a smaller D_w)",
            choices=("lam_over_N", "lam"),
        ),
    )
    privacy_params = (
        _EPSILON,
        _EPSILON_PER_ITERATION,
        _DELTA,
        Param(
            "noise",
            bool,
            True,
            "false: the same iteration without noise (linearized ADMM; not private, nothing released)",
        ),
        _ROW_BOUND,
        _ACCOUNTANT,
    )
    columns = (
        "augmented_objective",
        "empirical_loss",
        "consensus_violation",
        "eta",
        "sigma",
        "local_time_s",
        "trainer_time_s",
    )
    provider_group = LinearizedGroup
    _shared_name = "noisy w~_i"
    _private = True

    @classmethod
    def claims_guarantee(cls, privacy) -> bool:
        privacy = cls.typed_privacy(privacy)
        return bool(privacy.noise) and privacy.delta is not None

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(
            data, objective=objective, params=params, privacy=privacy, streams=streams, iterations=iterations
        )
        params, privacy = self.params, self.privacy  # the typed records
        self.delta = float(privacy.delta)
        self.noise = bool(privacy.noise)
        self.epsilon_target = privacy.epsilon
        # Lemma 1's sensitivity is also what Theorem 1 calibrates to: the ratio is 1
        self.epsilon = per_iteration_epsilon(privacy, iterations)
        self.D_w, self.D_w_source = self.d_w(data.public, objective, params, self.N)
        self._rng = streams.noise() if self.noise else None
        self.eta = float("nan")
        self.sigma = 0.0

    @classmethod
    def d_w(cls, public, objective, params, N: int) -> tuple[float, str]:
        """``(D_w, its source)``: ``solver.D_w``, or ``||w_hat||`` pre-trained on the public
        rows (what the trainer and, in the party services, every provider computes);
        ``params``: ``[solver]`` values or their typed record."""
        params = cls.typed_params(params)
        if params.D_w is not None:
            return float(params.D_w), "params.D_w"
        if public is None or len(public[1]) == 0:
            raise ValueError(
                "dp_admm needs D_w: set solver.D_w or give pre-training rows "
                "(HorizontalData.public, e.g. 162 rows as in the paper)"
            )
        A0, b0 = (np.asarray(v, dtype=float) for v in public)
        lam = float(objective.lam)
        weight = lam / N if params.dw_weight == "lam_over_N" else lam
        D_w = pretrain_dw(A0, b0, weight, objective.regularizer)
        if not D_w > 0:
            raise ValueError("pre-training gave w_hat = 0, so D_w = 0 and eta = 0; set solver.D_w or use a smaller lam")
        return D_w, (
            f"pre-trained on {len(b0)} public rows, weight "
            f"{'lam/N' if params.dw_weight == 'lam_over_N' else 'lam'} = {weight:g}"
        )

    @staticmethod
    def _eta(k, *, regularizer, D_w, lam, N, m, d, epsilon, delta):
        if regularizer == "l1":
            return theorem3_eta(k, D_w=D_w, lam=lam, N=N, d=d)
        return theorem4_eta(k, D_w=D_w, lam=lam, N=N, m=m, epsilon=epsilon, delta=delta)

    @classmethod
    def unit_noise(cls, widths, N, objective, params, privacy, iterations):
        """Each provider's Theorem 1 sigma and Lemma 1 sensitivity, one per iteration
        ``(providers, T)``, by the schedules the trainer follows: ``widths`` are the
        providers' row widths d, ``N`` each one's rows m, ``params["D_w"]`` its D_w
        (:meth:`d_w`): what a provider service checks requests against, from its own
        config."""
        params, privacy = cls.typed_params(params), cls.typed_privacy(privacy)
        if not cls.claims_guarantee(privacy):
            raise NotImplementedError(
                "dp_admm without privacy.delta (or with privacy.noise = false) releases nothing a provider checks"
            )
        n, m, d = len(widths), int(N), int(widths[0])
        eps, delta, rho = per_iteration_epsilon(privacy, iterations), float(privacy.delta), float(params.rho)
        etas = [
            cls._eta(
                k,
                regularizer=objective.regularizer,
                D_w=float(params.D_w),
                lam=float(objective.lam),
                N=n,
                m=m,
                d=d,
                epsilon=eps,
                delta=delta,
            )
            for k in range(int(iterations))
        ]
        sigmas = [theorem1_sigma(e, m=m, rho=rho, epsilon=eps, delta=delta) for e in etas]
        sens = [lemma1_sensitivity(e, m=m, rho=rho) for e in etas]
        return np.tile(np.asarray(sigmas, dtype=float), (n, 1)), np.tile(np.asarray(sens, dtype=float), (n, 1))

    # -- schedules ------------------------------------------------------------
    def eta_schedule(self, k):
        """``eta^{k+1}`` for loop index ``k``: Theorem 3 (l1) or Theorem 4 (l2)."""
        return self._eta(
            k,
            regularizer=self.regularizer,
            D_w=self.D_w,
            lam=self.lam,
            N=self.N,
            m=self.m,
            d=self.d,
            epsilon=self.epsilon,
            delta=self.delta,
        )

    def sigma_schedule(self, k):
        """Theorem 1's ``sigma_{k+1}`` for loop index ``k`` (ignores ``noise``)."""
        return theorem1_sigma(self.eta_schedule(k), m=self.m, rho=self.rho, epsilon=self.epsilon, delta=self.delta)

    def sensitivity_schedule(self, k):
        """Lemma 1's ``2 S1 / (m (rho + 1/eta^{k+1}))``, the enforced release sensitivity."""
        return lemma1_sensitivity(self.eta_schedule(k), m=self.m, rho=self.rho)

    # -- one iteration -------------------------------------------------------
    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        k = self.iteration
        eta = float(self.eta_schedule(k))
        # each provider: (3d) with the w^k it receives, the closed form (3a) at its own
        # w~_i^k, its release (3b) (wherever the providers run: :mod:`.providers`)
        noise, sigma = None, 0.0
        if self.noise:
            sigma = float(theorem1_sigma(eta, m=self.m, rho=self.rho, epsilon=self.epsilon, delta=self.delta))
            noise = (np.arange(self.N), sigma, float(lemma1_sensitivity(eta, m=self.m, rho=self.rho)))
        shared, _ = self.providers.update(self.w, {"eta": eta}, noise)
        t1 = perf_counter()
        self._trainer_and_duals(shared)
        self.eta, self.sigma = eta, sigma
        return {"eta": eta, "sigma": sigma, "local_time_s": t1 - t0, "trainer_time_s": perf_counter() - t1}

    def evaluate(self) -> dict:
        return {**self._metrics(), "eta": self.eta, "sigma": self.sigma}

    def planned_releases(self):
        if not self.noise:
            return []
        k = self.iteration
        return [
            Release(
                "gaussian",
                np.arange(self.N),
                np.full(self.N, float(self.sensitivity_schedule(k))),
                np.full(self.N, float(self.sigma_schedule(k))),
                self.d,
            )
        ]

    def paper_epsilon(self):
        """Theorem 2 / Appendix A: ``(eps_bar, delta)`` after the iterations so far."""
        if not self.noise or self.iteration == 0:
            return None
        return dp_admm_epsilon(self.epsilon, self.delta, self.iteration), self.delta

    def privacy_info(self) -> PrivacyInfo | None:
        if not self.noise:
            return PrivacyInfo(
                **{
                    "dp_guarantee": False,
                    "mechanism": None,
                    "note": "privacy.noise = false: linearized ADMM without noise "
                    "(same eta); every w_i^{k+1} is shared in the clear",
                }
            )
        return PrivacyInfo(
            **{
                "neighbouring": _NEIGHBOURS,
                "mechanism": (
                    "Gaussian: provider i releases w~_i^{k+1} = w_i^{k+1} + "
                    "N(0, sigma_{k+1}^2 I_d) (3b); w_i^{k+1} depends on the data only "
                    "through its own released w~_i^k, w^k, gamma_i^k and D_i (3a)"
                ),
                "sensitivity_enforced": {"formula": "2 S1 / (m (rho + 1/eta^{k+1})) (Lemma 1, eq. (6))", "S1": S1},
                "sigma": "2 S1 sqrt(2 ln(1.25/delta)) / (m eps (rho + 1/eta^{k+1})) (Theorem 1)",
                "assumptions": _assumptions(self),
                "dp_guarantee": True,
                "paper_claim": (
                    "(epsilon, delta) per iteration (Theorem 1) and (epsilon_bar, delta) "
                    "after T by Theorem 2's moments accountant"
                ),
                "not_accounted": (
                    "the pre-training rows that set D_w are treated as public "
                    "(Huang et al. 2019, Sec. VI, do not account for them)"
                ),
            }
        )

    def describe(self) -> dict:
        schedule = (
            "Theorem 3: eta^{k+1} = D_w / ((S1 + lam sqrt(d) / N) sqrt(2 (k+1)))"
            if self.regularizer == "l1"
            else "Theorem 4: eta^{k+1} = (S3 + lam S4 / N + 2 S1 sqrt(4 (k+1) ln(1.25/delta)) / (m eps D_w))^-1"
        )
        return {
            "algorithm": "Huang et al. Algorithm 3 (DP-ADMM), closed form of (3a)",
            **self._describe_common(),
            "D_w": self.D_w,
            "D_w_source": self.D_w_source,
            "eta": schedule,
            "constants": {"S1": S1, "S2": math.sqrt(self.d), "S3": S3, "S4": S4},
            "noise": self.noise,
            "epsilon_per_iteration": self.epsilon,
            "epsilon_target": self.epsilon_target,
            "rows_clipped": self.rows_clipped,
        }
