"""Decentralized consensus ADMM: Algorithm 1 of Xiao et al. and the ADMM baselines.

All are the primal step (eq. (12) in the paper's notation; on a general graph
``N - 1`` becomes ``|N_i|``, as App. E's ``rho_i = 0.5 D / |N_i|`` implies)::

    x_i^{k+1} = argmin_x f_i(x) - lambda_i^T x + sum_{j in N_i} 1/2 ||x - x_j^k||^2_{rho_i}
                                               + 1/2 ||x - x_i^k||^2_{Gamma_i}

with ``Gamma_i + |N_i| rho_i = D_i`` (diagonal weights), followed by the dual
step with the **corrected** sign (Xiao et al. 2019, Algorithm 1, print
``- zeta sum_j (x_j - x_i)``, which diverges)::

    lambda_i^{k+1} = lambda_i^k - zeta sum_{j in N_i} (x_i^{k+1} - x_j^{k+1})  = lambda - zeta (L x)_i.

Writing ``Gamma_i = w D`` and ``rho_i = (1 - w) D / |N_i|`` the primal step is
``argmin f_i(x) - v^T x + D/2 ||x||^2`` with
``v = lambda_i + D (w x_i^k + (1 - w) avg_{N_i} x^k)``; linearizing ``f_i``
at ``x_i^k`` (eq. (5)) gives Algorithm 1's closed form (6)/(13).

| name | primal | Gamma / rho | noise (rate beta_k) |
| --- | --- | --- | --- |
| ``ldp_admm`` | linearized (6) | w ~ U(0,1)^d per agent and iteration | output Laplace |
| ``op_admm`` [48] | linearized | w = 1/2 | output Laplace (native: Gaussian) |
| ``random_penalty_admm`` | exact (12) | w ~ U(0,1)^d | none |
| ``fixed_admm`` | exact | w = 1/2 | none |
| ``dvp_admm`` [42] | exact | w = 1/2 | dual perturbation D Delta (native: l2) |
| ``pp_admm`` [43] | exact | Gamma = eta_k |N_i|, rho = eta_k | penalty perturbation D_i^k Delta |

The agents' side of these steps (where the samples are) is :mod:`.admm_agents`.
"""

from __future__ import annotations

import math

import numpy as np

from vfl.core.params import Param
from vfl.core.solver import Reference

from .admm_agents import (
    ExactAgents,
    LinearizedAgents,
    PenaltyAgents,
    _FixedExactAgents,
    _FixedLinearizedAgents,
)
from .graphs import laplacian
from .network import EXCHANGE_PARAMS, NetworkSolver
from .private_network import LAPLACE_PRIVACY, PrivateNetworkSolver

__all__ = ["LDPADMM", "OPADMM", "RandomPenaltyADMM", "FixedADMM", "DVPADMM", "PPADMM"]

_XIAO = "Xiao, Ye, Devadas, Local Differential Privacy in Decentralized Optimization (arXiv 1902.06101)"

ADMM_PARAMS = (
    Param(
        "D",
        float,
        10.0,
        "D_i = Gamma_i + |N_i| rho_i, the total quadratic weight (paper: 10); "
        "alpha = 1/D is the sensitivity multiplier",
        low=0.0,
        low_open=True,
    ),
    Param("zeta", float, 0.5, "dual step: lambda <- lambda - zeta L x (paper: 0.5)", low=0.0, low_open=True),
) + EXCHANGE_PARAMS


class _ADMMState:
    """Mixin: what the ADMM solvers' network side shares."""

    def divergence_hint(self) -> str:
        """The dual step against the graph: ``zeta lambda_max(L) / D_i`` (the usual culprit).

        With fixed ``w = 1/2`` a Laplacian mode of eigenvalue ``mu`` is stable only
        while ``zeta mu / D`` stays below about ``2 (1 + a)``, ``a`` the mode's mixing
        factor (about 1/2), i.e. about 3; random penalties lower that to about 2.5
        (measured on a complete graph). The paper's ``zeta = 0.5``, ``D = 10`` suit
        its sparse graphs (``lambda_max(L)`` about 10) but not, e.g., a complete
        graph on 100 agents (``lambda_max(L) = 100``, ratio 5).
        """
        lam_max = float(np.linalg.eigvalsh(laplacian(self.adj).toarray())[-1])
        zeta = self.settings.zeta
        D = getattr(self.settings, "D", None)
        if D is None:
            return (
                f"the dual step zeta = {zeta:g} acts on a graph with lambda_max(L) = {lam_max:.3g}: lower solver.zeta"
            )
        return (
            f"zeta * lambda_max(L) / D = {zeta:g} * {lam_max:.3g} / {D:g} = "
            f"{zeta * lam_max / D:.3g}: the dual step is too large for this graph (stable "
            f"up to about 2.5 with random penalties, 3 with fixed ones); lower solver.zeta "
            f"or raise solver.D"
        )

    @property
    def lam(self) -> np.ndarray:
        """The agents' duals (in this process: a diagnostic of the tests)."""
        return self.agents.group.lam


# ----------------------------------------------------------------- Algorithm 1
class LDPADMM(_ADMMState, PrivateNetworkSolver):
    """Algorithm 1: linearized ADMM with random penalties and Laplace output noise.

    Per agent, iteration and coordinate ``w ~ U(0, 1)`` (``Gamma = w D``,
    ``|N_i| rho = (1 - w) D``), then (eq. (6), general graph)::

        x_i^{k+1} = w x_i^k + (1 - w) avg_{N_i} x^k - (grad f_i(x_i^k) - lambda_i^k) / D + Delta,

    ``Delta ~ Lap(0, beta_{k+1})^d``. The noiseless mean is uniform on the
    interval between ``x_i^k + c`` and ``avg + c``, ``c = (lambda_i - grad f_i)/D``:
    Theorem 2.2 with ``alpha = 1/D``.
    """

    name = "ldp_admm"
    title = "Algorithm 1 (LDP ADMM, random penalties)"
    reference = Reference(
        _XIAO,
        "Algorithm 1",
        "(5), (6), (10), (13)",
        "dual sign corrected (the printed one diverges); N-1 -> |N_i| on general graphs",
    )
    params = ADMM_PARAMS + (
        Param(
            "dual_sign",
            str,
            "corrected",
            "'corrected': lambda - zeta sum_j (x_i - x_j) (converges); 'printed': the paper's "
            "lambda - zeta sum_j (x_j - x_i), which diverges (kept to show it)",
            choices=("corrected", "printed"),
        ),
    )
    supports_sharing = True
    agent_group = LinearizedAgents

    def _alpha(self) -> float:
        return 1.0 / self.settings.D

    def _noise(self, beta) -> dict:
        """Output noise: Laplace of rate beta (l1 sensitivity alpha B_1, l2 alpha B_2)."""
        return {
            "scale": 1.0 / beta,
            "sensitivity": self._alpha() * self.sensitivity.B_1,
            "l2_sensitivity": self._alpha() * self.sensitivity.B_2,
        }

    def step(self) -> dict:
        self.begin_releases()
        beta = self.beta(self.iteration + 1)
        public = {"beta": beta, "T": self._alpha() * self.B_inf, "laplace": self._mechanism_is_laplace()}
        X_new, stats = self.agents.update(public, self._noise(beta) if self.noise else None)
        return self._released(X_new, stats)

    def _mechanism_is_laplace(self) -> bool:
        return True


class OPADMM(LDPADMM):
    """[48] Ding et al.: output perturbation of a fixed-penalty linearized ADMM.

    As set up in Xiao et al. 2019, App. E: Algorithm 1 with ``w = 1/2``
    (``Gamma = D/2``, ``rho = D / (2 |N_i|)``).
    Matched noise (default): ``Lap(0, beta_{k+1})^d``; native: Gaussian with
    the same variance, ``sigma = sqrt(2) / beta_{k+1}`` (l2 sensitivity
    ``B_2 / D``). Its privacy curve is the pure-Laplace Theorem 2.2 value
    (point mean); the paper omits it as "too loose".
    """

    name = "op_admm"
    title = "[48] output-perturbed ADMM (fixed penalties)"
    reference = Reference(
        "Ding, Gong, Pan, Han, Optimal Differentially Private ADMM for "
        "Distributed Machine Learning (arXiv 1901.02094) [48]",
        "output perturbation, linearized primal",
        note="implemented as Xiao et al.'s Algorithm 1 with w = 1/2 (App. E)",
    )
    params = ADMM_PARAMS
    privacy_params = LAPLACE_PRIVACY + (
        Param(
            "mechanism",
            str,
            "matched",
            "'matched': Laplace(beta_k) output noise, as Algorithm 1's; 'native': Gaussian "
            "output noise of std sqrt(2)/beta_k",
            choices=("matched", "native"),
        ),
    )
    agent_group = _FixedLinearizedAgents
    loss_meaning = "Theorem 2.2 with a point mean (pure Laplace): at most, and almost always equal to, the worst case"

    def _mechanism_is_laplace(self) -> bool:
        return self.privacy_settings.mechanism == "matched"

    def _noise(self, beta) -> dict:
        if self._mechanism_is_laplace():
            return super()._noise(beta)
        return {
            "scale": math.sqrt(2.0) / beta,
            "mechanism": "gaussian",
            "sensitivity": self._alpha() * self.sensitivity.B_2,
        }


# -------------------------------------------------------------- exact ADMM
class RandomPenaltyADMM(_ADMMState, NetworkSolver):
    """Algorithm 1 without the first-order approximation (eq. (12); Fig. D), no noise.

    ``x_i^{k+1} = argmin f_i(x) - v^T x + D/2 ||x||^2`` with
    ``v = lambda_i + D (w x_i^k + (1 - w) avg_{N_i} x^k)``, ``w ~ U(0,1)^d``,
    solved by batched Newton to ``||step|| < 1e-12`` (the paper names no solver).
    """

    columns = NetworkSolver.columns + ("newton_iterations",)
    name = "random_penalty_admm"
    title = "ADMM with random penalties (exact, non-private)"
    reference = Reference(_XIAO, "Algorithm 1 without first-order approximation", "(12)", "Fig. D; dual sign corrected")
    params = ADMM_PARAMS
    supports_sharing = True
    agent_group = ExactAgents

    def _public(self) -> dict:
        """The iteration's public values for the agents' step."""
        return {}

    def _perturbation(self, public):
        """The release of the linear term (the private baselines); None: no noise."""
        return None

    def step(self) -> dict:
        self.begin_releases()
        public = self._public()
        X_new, stats = self.agents.update(public, self._perturbation(public))
        return self._released(X_new, stats)


class FixedADMM(RandomPenaltyADMM):
    """Conventional decentralized ADMM with fixed penalties (Fig. D).

    ``Gamma = D/2``, ``rho = D/(2|N_i|)``: the expectation of the random ones.
    """

    name = "fixed_admm"
    title = "ADMM with fixed penalties (exact, non-private)"
    reference = Reference(_XIAO, "conventional ADMM with fixed parameters (Fig. D)", "(12)")
    agent_group = _FixedExactAgents


_RECONSTRUCTION = (
    "RECONSTRUCTION (Xiao et al. 2019, App. E, give only J): per iteration "
    "d beta_k B_inf / D_i^k + jacobian_rank * ln(1 + J), J = 2.8 / (10 b_i); "
    "the cited papers' theorems were not available to check, so this curve is "
    "not their exact expression"
)


class _PerturbedADMM(RandomPenaltyADMM, PrivateNetworkSolver):
    """Exact ADMM whose linear term is perturbed (objective perturbation, [42] / [43]).

    The perturbed linear term goes through :meth:`publish` (so the audit sees
    the noise), with sensitivity NaN: the released ``x`` is an argmin, and its
    guarantee needs an objective-perturbation (Jacobian) analysis that the
    code does not enforce. The privacy columns are our reconstruction of the
    cited papers' curves, for which Xiao et al. 2019, App. E, give no formula
    (see :attr:`privacy_info`).
    """

    columns = PrivateNetworkSolver.columns + ("newton_iterations",)
    paper_claim = None  # the curves are reconstructions, not the cited papers' accounting
    loss_meaning = "a RECONSTRUCTION of the cited paper's curve (no formula given), not its theorem"
    privacy_params = LAPLACE_PRIVACY + (
        Param(
            "mechanism",
            str,
            "matched",
            "'matched': perturbation = D_i^k * Lap(0, beta_k)^d, i.e. about Laplace(beta_k) on "
            "the iterate, like Algorithm 1's noise; 'native': the cited paper's l2 mechanism, "
            "density ~ exp(-beta_k ||eps||_2)",
            choices=("matched", "native"),
        ),
        Param(
            "J",
            float,
            None,
            "the Jacobian constant of the reconstruction; default 2.8 / (10 b_i) (the paper's J = 2.8 / (D B_i))",
            low=0.0,
        ),
        Param(
            "jacobian_rank",
            float,
            2.0,
            "multiplier of ln(1 + J) per iteration in the reconstruction (2: rank-2 Hessian "
            "change; d: a looser alternative)",
            low=0.0,
        ),
    )

    def _native_scale(self, beta):  # scale of the l2 mechanism on the linear term
        raise NotImplementedError

    def _weight(self, public):
        """``q``: every agent's total quadratic weight ``D_i^{k+1}`` (public)."""
        return np.full(self.N, self.settings.D)

    def _perturbation(self, public):
        """The noisy linear term ``lambda_i + xi``, and the reconstructed curve's loss."""
        if not self.noise:
            return None
        beta = self.beta(self.iteration + 1)
        p = self.privacy_settings
        J = p.J if p.J is not None else 2.8 / (10.0 * self.m)
        jac = p.jacobian_rank * math.log1p(J)
        nan = math.nan
        if p.mechanism == "matched":
            q = self._weight(public)
            noise = {"scale": q / beta, "sensitivity": nan}
            per = self.d * beta * self.B_inf / q + jac
        else:
            scale = self._native_scale(beta)
            noise = {"scale": scale, "sensitivity": nan, "mechanism": "l2_laplace"}
            B2 = self.sensitivity.B_2 if self.privacy_settings.B_inf is None else math.sqrt(self.d) * self.B_inf
            per = B2 / scale + jac
        public["loss"] = np.broadcast_to(per, (self.N,))
        return noise

    def paper_epsilon(self):
        return None  # the curves are reconstructions, not the cited papers' own accounting

    def _releases_enforced(self) -> bool:
        return False  # objective perturbation: sensitivity NaN (see the class docstring)

    def other_claims(self) -> dict:
        return {}

    def _privacy_fields(self) -> dict:
        info = super()._privacy_fields()
        info.update(
            {
                "realized_loss": _RECONSTRUCTION + "; privacy_loss_worst repeats its max over agents",
                "worst_case": "not available: objective perturbation needs the cited paper's "
                "Jacobian analysis, which the code does not enforce",
                "release_sensitivity": "NaN (objective perturbation: the noisy linear term is "
                "recorded, but no Laplace/Gaussian guarantee follows)",
            }
        )
        return info


class DVPADMM(_PerturbedADMM):
    """[42] Zhang & Zhu: dual variable perturbation, fixed penalties.

    As set up in Xiao et al. 2019, App. E:
    ``argmin f_i(x) - (lambda_i + xi)^T x + ...`` with ``Gamma = D/2``,
    ``rho = D/(2|N_i|)``; matched ``xi = D Delta``, ``Delta ~ Lap(0, beta_{k+1})^d``
    (perturbs x by about ``Delta``); native ``xi ~ exp(-beta ||xi||_2)``.
    """

    name = "dvp_admm"
    title = "[42] dual-variable-perturbation ADMM"
    reference = Reference(
        "Zhang, Zhu, Dynamic Differential Privacy for ADMM-Based Distributed "
        "Classification Learning, IEEE TIFS 12(1) 2017 [42]",
        "dual variable perturbation (DVP)",
        note="implemented in Xiao et al.'s notation, eq. (12)",
    )
    agent_group = _FixedExactAgents

    def _native_scale(self, beta):
        return np.full(self.N, 1.0 / beta)


class PPADMM(_PerturbedADMM):
    """[43] Zhang, Khalili, Liu: increasing penalties, penalty perturbation.

    As set up in Xiao et al. 2019, App. E:
    ``rho^{k+1} = eta_{k+1} = penalty0 * penalty_growth^{k+1}``,
    ``Gamma^{k+1} = eta_{k+1} |N_i|``, so ``D_i^{k+1} = 2 eta_{k+1} |N_i|``;
    dual step ``zeta`` (their theta). Matched perturbation
    ``pi = D_i^{k+1} Delta``; native ``pi = eta_{k+1} eps``,
    ``eps ~ exp(-beta ||eps||_2)``.
    """

    name = "pp_admm"
    title = "[43] penalty-perturbation ADMM (increasing penalties)"
    reference = Reference(
        "Zhang, Khalili, Liu, Improving the Privacy and Accuracy of ADMM-Based Distributed Algorithms, ICML 2018 [43]",
        "M-ADMM with penalty perturbation",
        note="implemented in Xiao et al.'s notation, eq. (12)",
    )
    params = (
        Param(
            "penalty0",
            float,
            0.5,
            "eta_k = penalty0 * penalty_growth^k (rho = eta_k, Gamma = eta_k |N_i|; paper 0.5)",
            low=0.0,
            low_open=True,
        ),
        Param(
            "penalty_growth", float, 1.02, "growth of the penalty per iteration (paper 1.02)", low=0.0, low_open=True
        ),
        Param(
            "zeta", float, 0.5, "dual step theta (<= eta_k for their convergence; paper 0.5)", low=0.0, low_open=True
        ),
    ) + EXCHANGE_PARAMS

    agent_group = PenaltyAgents

    def _eta(self, k):
        return self.settings.penalty0 * self.settings.penalty_growth**k

    def _public(self) -> dict:
        return {"eta": self._eta(self.iteration + 1)}

    def _weight(self, public):
        return 2.0 * public["eta"] * self.deg

    def _native_scale(self, beta):
        return np.full(self.N, self._eta(self.iteration + 1) / beta)
