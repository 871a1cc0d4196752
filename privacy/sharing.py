"""Sound sensitivities of ADMM sharing's released shares (Hu et al., updates (10)).

Every epoch party ``m`` publishes ``s_m = clip(D_m x_m, [-c, c]) + N(0, sigma^2 I_N)``,
where ``x_m`` depends on the data only through party m's own block ``D_m``
and the public history (the shares, ``z`` and ``y`` already broadcast). So
each epoch is a Gaussian mechanism on party m's block, and the epochs compose
adaptively, *provided* the l2 distance between the release means under
neighbouring datasets is bounded for **every** public history. The bounds
below are such bounds; each states the assumptions it uses, and the solver
enforces every one of them (unit rows, the ball, both clips, an exact
constrained x-update).

Why Lemma 1 of Hu et al. is not used as a guarantee: its proof uses
``||(D_m^T D_m)^{-1}|| = 1/d_m`` (false in general: unit rows give
``trace(D_m^T D_m) = N`` and the normalized a9a blocks are rank deficient),
drops factors ``||D_k||`` and assumes ``||y||, ||z|| <= b1``, which nothing
enforces (on a9a ``||y||`` is about 100 and ``||z||`` about 1000). A white-box
audit refutes the epsilons it gives (docs/privacy.md). :mod:`.paper` keeps
it as the paper's claim.
"""

from __future__ import annotations

import math

from . import _checks

__all__ = ["NEIGHBOURS", "column_sensitivity", "row_gradient_gap", "row_sensitivity"]

#: The neighbouring relations of ADMM sharing's accounting mode.
NEIGHBOURS = {
    "column": (
        "datasets differing in one feature column of one party's block D_m "
        "(Definition 2 of Hu et al.); rows of every block have unit l2 norm"
    ),
    "row": (
        "datasets differing in one sample's feature vector in one party's block D_m "
        "(one row of D_m replaced by another unit-norm row); labels are not protected"
    ),
}


def column_sensitivity(n_samples: int, clip: float, b1: float) -> float:
    """l2 sensitivity ``2 min(c, b1) sqrt(N)`` of one released share, any relation.

    Assumptions (all enforced by the solver): every row of ``D_m`` has unit
    l2 norm; ``x_m`` lies in the ball ``||x_m|| <= b1``; the share is clipped
    entrywise to ``[-c, c]``. Then every entry of the released mean lies in
    ``[-min(c, b1), min(c, b1)]`` (``|D_i x| <= ||D_i|| ||x|| <= b1``) under
    *both* datasets, whatever the history, so the two means differ by at most
    ``2 min(c, b1)`` per entry. This holds for any change of ``D_m`` that
    keeps its rows unit, in particular one changed column. It is nearly
    attained: with two columns and every row ``(1, -1)/sqrt(2)``, the model
    ``b1 (1, -1)/sqrt(2)`` gives every entry ``b1``; negating column 2 makes
    the rows ``(1, 1)/sqrt(2)`` and the same model gives 0, a distance of
    ``b1 sqrt(N)`` (half the bound when ``c >= b1``). No bound independent of
    N exists for releasing N per-sample values under column-level neighbours.
    """
    n = _checks.count("n_samples", n_samples)
    c = _checks.positive("clip", clip)
    b1 = _checks.positive("b1", b1)
    return 2.0 * min(c, b1) * math.sqrt(n)


def row_sensitivity(clip: float, b1: float, rho: float, lam: float, input_clip: float) -> float:
    """l2 sensitivity of one released share when one row of ``D_m`` is replaced.

    ``Delta_row = sqrt( (2 min(c, b1))^2 + G(rho b1, R)^2 / (8 lam rho) )``, with
    ``G(P, R) = max_theta P sin(theta) + 2 R sin(theta/2)`` (:func:`row_gradient_gap`).

    Derivation. Party m's x-update is the exact minimizer over the ball
    ``X = {||x|| <= b1}`` of the quadratic

        f(x) = lam ||x||^2 + rho/2 ||D_m x||^2 - <r, D_m x>,

    with ``r = clip(rho v - y, [-R, R])`` built from public values only
    (``v = z - sum_{k != m} s_k``). Row i changes from ``a`` to ``a'`` (both
    unit); ``f'`` is ``f`` with ``a'``. Split ``f = h + phi``, ``f' = h + phi'``
    with ``h`` the part of the other rows (Hessian ``H0 = 2 lam I + rho
    D_{-i}^T D_{-i}``) and ``phi(x) = rho/2 (a.x)^2 - r_i a.x`` convex. The
    first-order conditions of the two constrained minimizers ``x, x'`` and the
    monotonicity of ``grad phi`` give, for ``e = x - x'``,

        e^T H0 e <= <g, e>,   g = grad phi'(x') - grad phi(x')
                                = rho (a' a'^T - a a^T) x' - r_i (a' - a).

    Hence ``rho ||D_{-i} e||^2 = e^T H0 e - 2 lam ||e||^2 <= ||g|| ||e|| -
    2 lam ||e||^2 <= ||g||^2 / (8 lam)``, maximized over ``||e||``. With
    ``theta`` the angle between ``a`` and ``a'``, ``||a' a'^T - a a^T|| =
    sin(theta)`` and ``||a' - a|| = 2 sin(theta/2)``, so ``||g|| <= G(rho b1,
    R)``; :func:`row_gradient_gap` gives its maximum in closed form (it is
    also the maximum over rows in the unit ball, checked numerically in the
    tests). The entries of the release are disjoint coordinates: entry i
    changes by at most ``2 min(c, b1)`` (both rows unit, both models in the
    ball, the clip), every other entry j by at most ``|a_j e|`` (clipping is
    1-Lipschitz), and the squares add.

    vfl up to 0.1 charged ``2 min(c, b1) + 2 (rho b1 + R) / sqrt(2 lam rho)``
    (the triangle inequality across entries, ``||g|| <= 2 rho b1 + 2 R`` and
    ``||e||_H0 <= ||g|| / sqrt(2 lam)``); the white-box audit exercised a
    quarter of it. At ``c = b1 = rho = lam = 1``, ``R = 2`` this bound is
    2.46 times smaller, so the same epsilon costs 2.46 times less noise.

    Assumptions (all enforced by the solver): unit rows; the x-update is the
    exact constrained minimizer over the ball (not a projection of the
    unconstrained one); the pulled input is clipped to ``[-R, R]``; the
    share is clipped to ``[-c, c]``; ``lam > 0`` with the regularizer
    ``lam ||x||^2``. Labels enter only through ``y`` and ``z``, which every
    party sees: this relation does not protect them.
    """
    c = _checks.positive("clip", clip)
    b1 = _checks.positive("b1", b1)
    rho = _checks.positive("rho", rho)
    lam = _checks.positive("lam", lam)
    R = _checks.positive("input_clip", input_clip)
    gap = row_gradient_gap(rho * b1, R)
    return math.sqrt((2.0 * min(c, b1)) ** 2 + gap * gap / (8.0 * lam * rho))


def row_gradient_gap(P: float, R: float) -> float:
    """``G(P, R) = max over theta in [0, pi] of P sin(theta) + 2 R sin(theta/2)``.

    The largest ``||P (a' a'^T - a a^T) e - R (a' - a)||`` over unit rows ``a,
    a'`` and a unit ``e`` (see :func:`row_sensitivity`). With ``u = theta/2``
    the maximand is ``2 sin(u) (P cos(u) + R)``; its derivative vanishes at
    ``cos(u) = (sqrt(R^2 + 8 P^2) - R) / (4 P)``. ``G(0, R) = 2 R``,
    ``G(P, 0) = P``; always ``<= P + 2 R``.
    """
    P = float(P)
    R = float(R)
    if P <= 0.0:
        return 2.0 * R
    t = (math.sqrt(R * R + 8.0 * P * P) - R) / (4.0 * P)
    return 2.0 * math.sqrt(max(0.0, 1.0 - t * t)) * (P * t + R)
