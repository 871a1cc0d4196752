"""White-box Monte-Carlo audit of a DP mechanism: the statistics behind ``vfl audit``.

How the samples arise (the experiments layer does this part). For a pair of
neighbouring datasets ``(D, D')`` the mechanism runs ``K`` times on ``D`` with
fresh noise; in each run the solver on ``D'`` is teacher-forced to consume the
same released transcript, so for every release ``o`` we know its mean under
``D`` (``mu``) and under ``D'`` (``mu'``) given the same history. Then

    L = sum over releases of  log p_D(o | history) - log p_D'(o | history)

is one exact draw of the privacy-loss random variable of the whole adaptive
composition under ``P = M(D)``. Running on ``D'`` and forcing ``D`` gives
draws under ``Q = M(D')`` of ``log q/p``.

What is built here:

- per-release log-likelihood ratios (vectorized over units and entries):
  :func:`gaussian_log_ratio`, :func:`laplace_log_ratio`,
  :func:`uniform_laplace_log_ratio` (Laplace noise around a mean drawn
  uniformly on ``[lo, hi]``, Xiao et al.'s mixture, Lemma 2.1 / Thm. 2.2),
  and :func:`release_log_ratio` for a :class:`~vfl.core.releases.Release`;
- the hockey-stick divergence ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` with
  one-sided confidence bounds (:func:`estimate_delta`), a summary of the
  sampled privacy-loss distribution (:func:`summarize_losses`), and the curve
  of a claimed Gaussian mechanism (:func:`gaussian_delta`,
  :func:`gaussian_loss_moments`);
- the verdict at a claimed ``(eps, delta)`` (:func:`audit_verdict`) and the
  largest epsilon the samples refute at that delta
  (:func:`epsilon_lower_bound`);
- the GDP estimator (Nasr et al. 2023): each run's realised mu, observed
  exactly under teacher forcing, and a lower bound on the pair's whole
  profile that holds under a stated, tested assumption (:mod:`.gdp`);
- the one-run audit of Steinke, Nasr and Jagielski (NeurIPS 2023)
  (:func:`one_run_p_value`, :func:`one_run_epsilon`).

What a "95% lower bound" means here. ``lower`` is a function of the ``K``
samples such that, whatever the mechanism and the neighbouring pair, if the
``K`` runs are independent and identically distributed and ``K`` was fixed
before looking at them, then ``P(lower <= delta_PQ(eps)) >= 0.95`` over the
randomness of the runs (and of the method's own coin flips, for
``"clopper-pearson"``). It is a statement about the procedure, not a
posterior probability. ``delta_PQ`` is the divergence of *this* pair; a DP
claim bounds it for every pair, so a lower bound above the claimed delta
refutes the claim. The upper bound is the mirror statement; the two together
form a two-sided interval of level ``1 - 2 alpha``.

Randomness that the transcript does not reveal and the densities do not
integrate out (minibatch sampling, say) must be the same in both runs of a
pair; the audit is then conditional on it, and a claim that relies on
amplification by that randomness is not what is being tested.
"""

from __future__ import annotations

from .bounds import (
    AUDIT_METHODS,
    AuditResult,
    DeltaEstimate,
    LossSummary,
    audit_verdict,
    epsilon_lower_bound,
    estimate_delta,
    gaussian_delta,
    gaussian_loss_moments,
    hockey_stick_samples,
    summarize_losses,
)
from .gdp import (
    GDPBound,
    gdp_bound,
    gdp_delta,
    gdp_epsilon,
    gdp_profile_verdict,
    gdp_verdict,
    realised_mu,
    standardized_losses,
)
from .one_run import one_run_epsilon, one_run_p_value
from .power import (
    choose_bound,
    family_level,
    powerful_epsilon,
    refutation_threshold,
    truncation_level,
)
from .ratios import (
    gaussian_log_ratio,
    laplace_log_ratio,
    release_log_ratio,
    uniform_laplace_log_ratio,
    uniform_laplace_logpdf,
)

__all__ = [
    "AUDIT_METHODS",
    "gaussian_log_ratio",
    "laplace_log_ratio",
    "uniform_laplace_logpdf",
    "uniform_laplace_log_ratio",
    "release_log_ratio",
    "hockey_stick_samples",
    "DeltaEstimate",
    "estimate_delta",
    "LossSummary",
    "summarize_losses",
    "gaussian_loss_moments",
    "gaussian_delta",
    "AuditResult",
    "audit_verdict",
    "epsilon_lower_bound",
    "one_run_p_value",
    "one_run_epsilon",
    "refutation_threshold",
    "choose_bound",
    "powerful_epsilon",
    "truncation_level",
    "family_level",
    "GDPBound",
    "gdp_bound",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_verdict",
    "gdp_profile_verdict",
    "realised_mu",
    "standardized_losses",
]
