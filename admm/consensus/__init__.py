"""Consensus ADMM over horizontally partitioned data, and its private variants.

Huang, Hu, Chan-Tin, Gong, *DP-ADMM: ADMM-based Distributed Learning with
Differential Privacy* (Huang et al. 2019, arXiv 1808.10101v1). N
providers each hold ``m`` rows ``A[i]`` ``(m, d)`` with labels ``b[i]`` in
{-1, +1}; a central trainer holds nothing. Problem (1a)-(1b)::

    min sum_i f_i(w_i)  s.t.  w_i = w,   f_i(w) = (1/m) sum_j l(a_ij, b_ij, w) + (lambda/N) R(w),

with the logistic loss and ``R = ||.||_1`` or ``||.||^2 / 2``. Three solvers:

- :class:`ConsensusADMM` (``consensus_admm``), Algorithm 1: exact local
  argmin (line 4), trainer average (line 6), dual step (line 8);
- :class:`ConsensusADMMPerturbed` (``consensus_admm_perturbed``), Algorithm 2:
  Algorithm 1 with the local solution released as ``w_i + N(0, sigma^2 I)``
  at the paper's constant sigma (Sec. III-A);
- :class:`DPADMM` (``dp_admm``), Algorithm 3: the closed form of (3a), the
  argmin of the approximate augmented Lagrangian (2) linearized at the
  provider's own noisy iterate, released with the time-varying sigma of
  Theorem 1, step sizes of Theorem 3 (l1) or Theorem 4 (l2).

Everything is vectorized over providers (arrays ``(N, m, d)``, ``(N, d)``):
there is no Python loop over providers or samples inside an iteration.
Initialization is zero for every variable: the paper gives no values, and its
bound ``D_w = ||w*||`` on ``||w* - w^0||`` (Appendices C, E) holds only then. The
order within an iteration is the listings' ``w_i -> w -> gamma_i`` (Algorithms
1-3; the text of Sec. II-B names them in another order).

Privacy (Sec. IV). Neighbouring datasets: one record of one provider's
dataset replaced by another (``m`` unchanged), both with ``||a|| <= 1`` and
``b`` in {-1, +1}; the protected unit is the provider. Then
``||l'(a, b, w)|| <= ||a|| <= 1 = S1`` for the logistic loss. The solvers
enforce both assumptions at construction (labels are checked; rows are
checked, or clipped, to norm <= 1: privacy key ``row_bound``) and put into
every :class:`~vfl.core.releases.Release` only a sensitivity that follows from
what the code enforces:

- DP-ADMM: Lemma 1, ``2 S1 / (m (rho + 1/eta^{k+1}))`` (the closed form is
  exact, so the bound is exact too);
- Algorithm 2: the exact local argmin is ``mu``-strongly convex with
  ``mu = rho + (lambda/N) R''`` (``R'' = 1`` for l2, 0 for l1), so its
  sensitivity is ``2 S1 / (m mu)`` (the paper's ``2 S1 N / (m lambda)``,
  Sec. III-A and VI, ignores ``rho``), plus ``2 g / mu`` for the inexact solve
  stopped at KKT residual ``g`` (see :func:`algorithm2_enforced_sensitivity`).

Pure computation: no files, no printing, no global state; every random draw
comes from the given :class:`~vfl.core.streams.Streams`.

Modules: ``schedules`` (constants, step sizes, sensitivities and sigmas),
``batched`` (the closed form (3a) and the objectives), ``data`` (the providers'
split and the row bound), ``base`` (what the three solvers share), ``exact``
(Algorithms 1 and 2, with their providers' exact local step), ``dp_admm``
(Algorithm 3, with its providers' closed form) and ``neighbouring`` (the audit's
neighbouring datasets); the providers' side of each
is a :class:`~vfl.admm.consensus.providers.ProviderGroup` subclass (``providers``), so it runs wherever
the providers are.
"""

from .batched import augmented_objective, dp_admm_closed_form, empirical_loss, local_objectives
from .data import enforce_row_bound, split_providers
from .dp_admm import DPADMM
from .exact_argmin import ConsensusADMM, ConsensusADMMPerturbed
from .schedules import (
    HUANG_PAPER,
    S1,
    S3,
    S4,
    algorithm2_argmin_sensitivity,
    algorithm2_enforced_sensitivity,
    algorithm2_paper_sensitivity,
    algorithm2_sigma,
    gaussian_sigma,
    lemma1_sensitivity,
    theorem1_sigma,
    theorem3_eta,
    theorem4_eta,
)

__all__ = [
    "S1",
    "S3",
    "S4",
    "theorem3_eta",
    "theorem4_eta",
    "theorem1_sigma",
    "lemma1_sensitivity",
    "gaussian_sigma",
    "algorithm2_paper_sensitivity",
    "algorithm2_argmin_sensitivity",
    "algorithm2_enforced_sensitivity",
    "algorithm2_sigma",
    "dp_admm_closed_form",
    "local_objectives",
    "empirical_loss",
    "augmented_objective",
    "split_providers",
    "enforce_row_bound",
    "ConsensusADMM",
    "ConsensusADMMPerturbed",
    "DPADMM",
    "HUANG_PAPER",
]
