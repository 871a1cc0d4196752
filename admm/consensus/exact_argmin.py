"""Algorithms 1 and 2 of Huang et al.: the exact local argmin, without and with output noise."""

from __future__ import annotations

from dataclasses import replace
from time import perf_counter

import numpy as np

from vfl.core.params import Param
from vfl.core.releases import Release
from vfl.core.solver import Reference
from vfl.core.typed_records import PrivacyInfo
from vfl.privacy.moments import dp_admm_epsilon

from ..local_solvers import fista, kkt_residual, lipschitz, newton, smooth_grad
from .base import (
    _ACCOUNTANT,
    _COMMON_PARAMS,
    _DELTA,
    _EPSILON,
    _EPSILON_PER_ITERATION,
    _EXACT_PARAMS,
    _NEIGHBOURS,
    _ROW_BOUND,
    _assumptions,
    _Consensus,
    per_iteration_epsilon,
)
from .providers import ProviderGroup
from .schedules import (
    HUANG_PAPER,
    algorithm2_enforced_sensitivity,
    algorithm2_paper_sensitivity,
    gaussian_sigma,
)


def _penalties(regularizer: str, lam_per_provider: float) -> tuple[float, float]:
    """``(alpha1, alpha2)`` of :mod:`~vfl.admm.local_solvers`: ``(lambda/N) R`` as an l1 or a
    squared-l2 term."""
    return (lam_per_provider, 0.0) if regularizer == "l1" else (0.0, lam_per_provider)


class ExactGroup(ProviderGroup):
    """Line 4 of Algorithms 1 and 2 for a group of providers: each one's exact local argmin.

    Provider i minimizes ``f_i(w) - <gamma_i^k, w - w^k> + rho/2 ||w - w^k||^2``,
    equal up to a constant to ``f_i(w) + rho/2 ||w - c_i||^2`` with
    ``c_i = w^k + gamma_i^k / rho`` (complete the square), warm-started from its
    previous clean solution ``w_i^k`` (Huang et al. 2019, Sec. VI-B, say only
    "searching by gradients"), until its own KKT residual is at most
    ``inner_tol`` (:mod:`~vfl.admm.local_solvers`: a converged provider is
    frozen, so its solve is its own). The warm start is state the trainer
    never sees: a group rebuilt elsewhere solves its journal's iterations again.
    """

    def __init__(self, A, b, *, start, spec):
        super().__init__(A, b, start=start, spec=spec)
        options = spec.settings
        self.method = options["local_solver"]
        self.tol, self.max_inner = float(options["inner_tol"]), int(options["max_inner"])
        self.alpha1, self.alpha2 = _penalties(self.regularizer, self.lam_per_provider)
        # FISTA's step: each provider's Lipschitz constant, from its own rows
        self.L = lipschitz(A, alpha2=self.alpha2, rho=self.rho) if self.method == "fista" else None
        self.centre = np.zeros_like(self.W)

    def _solve(self, centre, w0):
        kw = dict(alpha1=self.alpha1, alpha2=self.alpha2, rho=self.rho, w0=w0, tol=self.tol, max_iter=self.max_inner)
        if self.method == "newton":
            return newton(self.A, self.b, centre, **kw)
        return fista(self.A, self.b, centre, L=self.L, **kw)

    def local_step(self, w, public):
        self.centre = w[..., None, :] + self.gamma / self.rho
        res = self._solve(self.centre, self.W)
        return res.w, {"inner_iterations": res.steps, "converged": res.converged}

    def residuals(self):
        g = smooth_grad(self.A, self.b, self.W, self.centre, alpha2=self.alpha2, rho=self.rho)
        return kkt_residual(g, self.W, self.alpha1)


class _ExactLocal(_Consensus):
    """Algorithms 1 and 2: the exact local argmin of line 4, in each provider's group."""

    params = _COMMON_PARAMS + _EXACT_PARAMS
    provider_group = ExactGroup

    @classmethod
    def group_settings(cls, params, regularizer):
        choice = params.local_solver
        if choice == "auto":
            choice = "fista" if regularizer == "l1" else "newton"
        return {"local_solver": choice, "inner_tol": float(params.inner_tol), "max_inner": int(params.max_inner)}

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(
            data, objective=objective, params=params, privacy=privacy, streams=streams, iterations=iterations
        )
        options = self.spec.settings
        self.local_solver = options["local_solver"]
        self.inner_tol, self.max_inner = options["inner_tol"], options["max_inner"]
        self._alpha1, alpha2 = _penalties(self.regularizer, self.lam_per_provider)
        #: strong convexity of every local objective, rho + (lam/N) R''
        self.mu = self.rho + alpha2

    def _local_iteration(self, noise) -> tuple[np.ndarray, dict, np.ndarray]:
        """Lines 3-5 at every provider (wherever they run): the dual step with ``w^k``, the
        local argmin, the release; returns the releases, the solves' statistics and which
        providers' solves converged."""
        shared, stats = self.providers.update(self.w, {}, noise)
        converged = stats["converged"]
        return (
            shared,
            {"inner_iterations": int(stats["inner_iterations"].max()), "inner_unconverged": int((~converged).sum())},
            converged,
        )

    def kkt_residuals(self) -> np.ndarray:
        """Exact KKT residual of every provider's last local solve, ``(N,)``."""
        return self.providers.residuals()

    def evaluate(self) -> dict:
        out = self._metrics()
        out["kkt_residual"] = float(self.kkt_residuals().max()) if self.iteration else float("nan")
        return out

    def _describe_exact(self) -> dict:
        how = {
            "newton": (
                "batched Newton, Armijo backtracking"
                if self._alpha1 == 0
                else "batched proximal Newton (coordinate-descent model solve), Armijo backtracking"
            ),
            "fista": "batched accelerated proximal gradient (constant strongly-convex momentum)",
        }
        return {
            "local_solve": {
                "method": how[self.local_solver],
                "stop": f"each provider at its own KKT residual <= {self.inner_tol:g} (frozen while the others go on)",
                "max_inner": self.max_inner,
                "warm_start": "previous clean local solution",
                "strong_convexity_mu": self.mu,
            }
        }


class ConsensusADMM(_ExactLocal):
    """Algorithm 1 of Huang et al.: non-private consensus ADMM with exact local solves."""

    name = "consensus_admm"
    title = "ADMM (Algorithm 1, non-private)"
    reference = Reference(HUANG_PAPER, "Algorithm 1", "(1a)-(1b); augmented Lagrangian of Sec. II-B")
    columns = (
        "augmented_objective",
        "empirical_loss",
        "consensus_violation",
        "kkt_residual",
        "inner_iterations",
        "inner_unconverged",
        "local_time_s",
        "trainer_time_s",
    )

    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        W, stats, _ = self._local_iteration(None)  # released as it is
        t1 = perf_counter()
        self._trainer_and_duals(W)
        return {**stats, "local_time_s": t1 - t0, "trainer_time_s": perf_counter() - t1}

    def describe(self) -> dict:
        return {
            "algorithm": "Huang et al. Algorithm 1 (non-private consensus ADMM)",
            **self._describe_common(),
            **self._describe_exact(),
        }


class ConsensusADMMPerturbed(_ExactLocal):
    """Algorithm 2 of Huang et al.: Algorithm 1 releasing ``w_i + N(0, sigma_i^2 I)``.

    ``privacy.sensitivity = "paper"`` (default) uses the paper's
    ``sigma = 2 S1 N sqrt(2 ln(1.25/delta)) / (m lam eps)`` as printed (Sec. VI;
    the setting of Figs. 4-6). ``"corrected"`` (NOT the paper's experiment)
    calibrates sigma to the bound the code enforces: the local argmin's
    ``2 S1 / (m (rho + (lam/N) R''))`` (Sec. III-A's bound ignores ``rho``)
    plus the inexact-solve slack ``2 g / mu``. Either way every Release
    carries that enforced bound, so with the paper's sigma the tight epsilon
    is far below the claimed one (the paper's sensitivity is ~590x too large
    at its settings).
    """

    name = "consensus_admm_perturbed"
    paper_claim = "Theorem 2, the moments accountant of Huang et al."
    #: the trainer's w is an average of the released (noisy) w_i
    released_columns = ("test_logloss", "test_accuracy", "sigma")
    title = "ADMM with primal perturbation (Algorithm 2)"
    reference = Reference(
        HUANG_PAPER,
        "Algorithm 2",
        "Sec. III-A and VI (sigma_i; its sensitivity ignores rho)",
        note="the paper runs it with the l2 regularizer only",
    )
    privacy_params = (
        _EPSILON,
        _EPSILON_PER_ITERATION,
        _DELTA,
        Param(
            "sensitivity",
            str,
            "paper",
            "which sensitivity calibrates sigma: paper = "
            "2 S1 N / (m lam) as printed; corrected = 2 S1 / (m (rho + (lam/N) R'')) + "
            "2 inner_tol / mu (strongly convex argmin, inexact solve; not the paper's)",
            choices=("paper", "corrected"),
        ),
        _ROW_BOUND,
        _ACCOUNTANT,
    )
    columns = ConsensusADMM.columns + ("sigma",)
    _shared_name = "noisy w~_i"
    _private = True

    def __init__(self, data, *, objective, params, privacy, streams, iterations):
        super().__init__(
            data, objective=objective, params=params, privacy=privacy, streams=streams, iterations=iterations
        )
        privacy = self.privacy  # the typed record
        self.delta = float(privacy.delta)
        self.sensitivity_mode = privacy.sensitivity
        if self.sensitivity_mode == "paper" and self.lam <= 0:
            raise ValueError("the paper's Algorithm 2 sensitivity 2 S1 N / (m lam) needs lam > 0")
        #: the bound every release carries (what the code enforces)
        self.enforced_sensitivity = algorithm2_enforced_sensitivity(m=self.m, mu=self.mu, tol=self.inner_tol)
        self.paper_sensitivity = (
            algorithm2_paper_sensitivity(N=self.N, m=self.m, lam=self.lam) if self.lam > 0 else float("nan")
        )
        calibrated = self.paper_sensitivity if self.sensitivity_mode == "paper" else self.enforced_sensitivity
        self.epsilon_target = privacy.epsilon
        self.epsilon = per_iteration_epsilon(privacy, iterations, self.enforced_sensitivity / calibrated)
        self.sigma = float(gaussian_sigma(calibrated, self.epsilon, self.delta))
        self._rng = streams.noise()

    def step(self) -> dict:
        self.begin_releases()
        t0 = perf_counter()
        shared, stats, converged = self._local_iteration((np.arange(self.N), self.sigma, self.enforced_sensitivity))
        # A provider whose solve hit max_inner has no enforced bound: NaN. (It drew its noise
        # at the scale of the others: the scale does not depend on how its solve went.)
        (event,) = self._releases
        # (with the audit's runs ahead of the providers: unbound if unconverged in any run)
        converged = np.all(converged, axis=tuple(range(np.ndim(converged) - 1)))
        self._releases = [replace(event, sensitivity=np.where(converged, event.sensitivity, np.nan))]
        t1 = perf_counter()
        self._trainer_and_duals(shared)
        return {**stats, "sigma": self.sigma, "local_time_s": t1 - t0, "trainer_time_s": perf_counter() - t1}

    def evaluate(self) -> dict:
        out = super().evaluate()
        out["sigma"] = self.sigma
        return out

    def planned_releases(self):
        return [
            Release(
                "gaussian",
                np.arange(self.N),
                np.full(self.N, self.enforced_sensitivity),
                np.full(self.N, self.sigma),
                self.d,
            )
        ]

    def paper_epsilon(self):
        """Theorem 2's moments accountant (sigma / Delta_paper = sqrt(2 L) / eps, as in Alg. 3)."""
        if self.iteration == 0:
            return None
        return dp_admm_epsilon(self.epsilon, self.delta, self.iteration), self.delta

    def privacy_info(self) -> PrivacyInfo:
        return PrivacyInfo(
            **{
                "neighbouring": _NEIGHBOURS,
                "mechanism": (
                    "Gaussian: provider i releases w_i^{k+1} + N(0, sigma^2 I_d) every "
                    "iteration (Algorithm 2, line 5); gamma_i^k is post-processing"
                ),
                "sigma": self.sigma,
                "sigma_calibrated_to": (
                    "paper: 2 S1 N / (m lam) (Sec. III-A, VI)"
                    if self.sensitivity_mode == "paper"
                    else "corrected (not the paper's): 2 S1/(m mu) + 2 inner_tol/mu"
                ),
                "sensitivity_enforced": {
                    "formula": (
                        "2 S1 / (m mu) + 2 g / mu, mu = rho + (lam/N) R'' (the local argmin is "
                        "mu-strongly convex, which Sec. III-A ignores; plus the inexact "
                        "solve: a KKT residual g on a mu-strongly convex objective is "
                        "within g / mu of its minimizer)"
                    ),
                    "value": self.enforced_sensitivity,
                    "mu": self.mu,
                    "g": self.inner_tol,
                    "NaN_when": "a provider's local solve hits max_inner before reaching inner_tol",
                },
                "sensitivity_paper": self.paper_sensitivity,
                "assumptions": _assumptions(self),
                "dp_guarantee": True,
                "paper_claim": (
                    "(epsilon, delta) per iteration and (epsilon_bar, delta) after T by "
                    "Theorem 2's moments accountant (Sec. VI-B: the same as DP-ADMM's)"
                ),
                "not_accounted": "pre-training rows (public); the paper runs Algorithm 2 for l2 only",
            }
        )

    def describe(self) -> dict:
        return {
            "algorithm": "Huang et al. Algorithm 2 (primal perturbation of exact ADMM)",
            **self._describe_common(),
            **self._describe_exact(),
            "sigma": self.sigma,
            "sensitivity": self.sensitivity_mode,
            "epsilon_per_iteration": self.epsilon,
            "epsilon_target": self.epsilon_target,
            "rows_clipped": self.rows_clipped,
        }
