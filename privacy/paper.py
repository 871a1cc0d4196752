"""Hu et al.'s privacy analysis of the perturbed ADMM sharing updates (10).

Section 4 of *Learning Privately over Distributed Features* bounds, for party
``m``, the l2 sensitivity of its shared message ``D_m x_m^{t+1}`` between
neighbouring datasets (Definition 2: ``D_m`` and ``D'_m`` differ in one feature
column), calibrates a per-iteration Gaussian noise to it (Theorem 1) and
composes ``T`` iterations with the advanced composition theorem (Corollary 1):

- Lemma 1:     ``C = 3 / (d_m rho) * [lam c1 + (1 + M rho) b1]``;
- Theorem 1:   ``sigma = sqrt(2 ln(1.25/delta)) C / eps`` gives (eps, delta)-DP
  per iteration, for ``eps`` in (0, 1];
- Corollary 1: ``T`` iterations are ``(eps', T delta + delta')``-DP with
  ``eps' = sqrt(2 T ln(1/delta')) eps + T eps (e^eps - 1)``  (eq. (11)).

Assumption 2 behind Lemma 1: ``||x||, ||y||, ||z|| <= b1`` (2.1),
``|R_m''| <= c1`` (2.2; ``c1 = 2`` for ``R_m(x) = ||x||^2``) and unit-norm
rows of ``D_m`` (2.3). These functions evaluate the paper's formulas as
stated; :mod:`vfl.privacy.accountant` gives the tight epsilon of the same
Gaussian noise.
"""

from __future__ import annotations

import math

from . import _checks

__all__ = [
    "NEIGHBOURING",
    "lemma1_sensitivity",
    "theorem1_sigma",
    "theorem1_epsilon",
    "corollary1",
    "split_delta",
    "data_dependent_sensitivity",
]

#: The neighbouring relation every epsilon reported by ``vfl`` refers to.
NEIGHBOURING = "datasets differing in one feature column of one party's block D_m (Definition 2 of Hu et al.)"


def _lemma1(d_m: int, rho: float, lam: float, n_parties: int, b1: float, c1: float) -> float:
    return 3.0 / (d_m * rho) * (lam * c1 + (1.0 + n_parties * rho) * b1)


def lemma1_sensitivity(d_m: int, rho: float, lam: float, n_parties: int, b1: float, c1: float = 2.0) -> float:
    """Lemma 1: the l2 sensitivity bound ``C`` of ``D_m x_m^{t+1}``.

    ``C = 3 / (d_m rho) * [lam c1 + (1 + M rho) b1]``.

    Parameters
    ----------
    d_m : int >= 1
        Number of features held by party ``m``. The proof uses
        ``||(D_m^T D_m)^{-1}|| = 1/d_m``, which is the paper's step, not a
        property of every unit-row ``D_m``; the formula is reproduced as stated.
    rho : float > 0
        ADMM penalty.
    lam : float >= 0
        Regularizer weight (the paper's lambda).
    n_parties : int >= 1
        Number of parties ``M``.
    b1 : float > 0
        Assumption 2.1's bound on ``||x||``, ``||y||`` and ``||z||``.
    c1 : float >= 0
        Assumption 2.2's bound on ``|R_m''|`` (2 for ``R_m(x) = ||x||^2``).
    """
    d_m = _checks.count("d_m", d_m)
    rho = _checks.positive("rho", rho)
    lam = _checks.nonnegative("lam", lam)
    n_parties = _checks.count("n_parties", n_parties)
    b1 = _checks.positive("b1", b1)
    c1 = _checks.nonnegative("c1", c1)
    return _lemma1(d_m, rho, lam, n_parties, b1, c1)


def _epsilon_in_theorem1_range(epsilon: object) -> float:
    eps = _checks._real("epsilon", epsilon)
    if not 0.0 < eps <= 1.0:
        raise ValueError(f"epsilon must be in (0, 1]: Theorem 1 holds only for epsilon in (0, 1], got {epsilon!r}")
    return eps


def theorem1_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """Theorem 1: per-iteration noise std ``sqrt(2 ln(1.25/delta)) C / epsilon``.

    The classical Gaussian-mechanism calibration (Dwork and Roth, Thm. A.1);
    its proof (Section 7.4) needs ``epsilon <= 1``, so larger values are
    refused rather than silently given a bound that was never proved.
    """
    eps = _epsilon_in_theorem1_range(epsilon)
    delta = _checks.probability("delta", delta)
    C = _checks.positive("sensitivity", sensitivity)
    return math.sqrt(2.0 * math.log(1.25 / delta)) * C / eps


def theorem1_epsilon(sigma: float, delta: float, sensitivity: float) -> float:
    """Inverse of :func:`theorem1_sigma`: ``sqrt(2 ln(1.25/delta)) C / sigma``.

    The per-iteration epsilon the classical bound assigns to Gaussian noise of
    std ``sigma`` on a query of l2 sensitivity ``C``. A value above 1 is
    returned as computed: it means Theorem 1 does not cover this noise level
    (the caller must then not claim (epsilon, delta)-DP from it; use
    :func:`vfl.privacy.epsilon_of` for a valid bound at any noise level).
    """
    sigma = _checks.positive("sigma", sigma)
    delta = _checks.probability("delta", delta)
    C = _checks.positive("sensitivity", sensitivity)
    return math.sqrt(2.0 * math.log(1.25 / delta)) * C / sigma


def split_delta(delta: float, T: int) -> tuple[float, float]:
    """(delta_iter, delta') with T * delta_iter + delta' = delta (Corollary 1)."""
    return delta / (2 * T), delta / 2


def corollary1(epsilon: float, T: int, delta: float, delta_prime: float) -> tuple[float, float]:
    """Corollary 1 (advanced composition): the guarantee after ``T`` iterations.

    Returns ``(eps', T delta + delta')`` with, eq. (11),
    ``eps' = sqrt(2 T ln(1/delta')) eps + T eps (e^eps - 1)``.

    The composition theorem itself (Dwork and Roth, Thm. 3.20) holds for any
    per-iteration ``epsilon > 0``; only Theorem 1's calibration needs
    ``epsilon <= 1``. A total delta ``>= 1`` is returned as computed (the
    guarantee is then vacuous).
    """
    eps = _checks.positive("epsilon", epsilon)
    T = _checks.count("T", T)
    delta = _checks.probability("delta", delta)
    delta_prime = _checks.probability("delta_prime", delta_prime)
    eps_total = math.sqrt(2.0 * T * math.log(1.0 / delta_prime)) * eps + T * eps * math.expm1(eps)
    return eps_total, T * delta + delta_prime


def data_dependent_sensitivity(
    d_m: int,
    rho: float,
    lam: float,
    n_parties: int,
    y_norm: float,
    residual_norm: float,
    x_norm: float,
    c1: float = 2.0,
) -> float:
    """Lemma 1 with ``b1`` replaced by the current iterate's norms.

    **This is NOT a differential-privacy guarantee on its own**: the noise
    scale derived from it depends on the private data (through the iterates),
    so the released noise level itself leaks information, and the worst case
    over neighbouring datasets that Definition 2 requires is not taken. It
    reproduces how the authors' prototype scales its noise; report epsilons
    computed from it as "data-dependent", never as (epsilon, delta)-DP.

    The proof of Lemma 1 (Section 7.3) first bounds the sensitivity by
    ``3/(d_m rho) [lam c1 + ||y^t|| + rho ||sum_{k != m} D_k x~_k - z||]``
    and only then uses Assumption 2.1 (``||y||, ||z||, ||x~_k|| <= b1``) to
    reach ``(1 + M rho) b1``. Here ``b1`` is replaced by
    ``max(y_norm, residual_norm, x_norm)``:

    - ``y_norm = ||y^t||`` bounds the dual term;
    - ``residual_norm = ||s - D_m x_m||``, where ``s = sum_k D_k x~_k - z`` is
      the message party ``m`` pulls (Algorithm 1, lines 3-4), so it is exactly
      the proof's ``||sum_{k != m} D_k x~_k - z||``;
    - ``x_norm = ||x_m||`` keeps Assumption 2.1's bound on the primal iterate.

    Since ``M >= 1``, ``(1 + M rho) max(...) >= ||y|| + rho ||residual||``, so
    the value is never below the proof's intermediate bound at this iterate.
    The result can be 0 (``lam = 0`` and all norms 0); callers must handle it.
    """
    d_m = _checks.count("d_m", d_m)
    rho = _checks.positive("rho", rho)
    lam = _checks.nonnegative("lam", lam)
    n_parties = _checks.count("n_parties", n_parties)
    y_norm = _checks.nonnegative("y_norm", y_norm)
    residual_norm = _checks.nonnegative("residual_norm", residual_norm)
    x_norm = _checks.nonnegative("x_norm", x_norm)
    c1 = _checks.nonnegative("c1", c1)
    b = max(y_norm, residual_norm, x_norm)
    return _lemma1(d_m, rho, lam, n_parties, b, c1)
