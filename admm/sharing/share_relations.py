"""The neighbouring relations of ADMM sharing's accounting mode: column or row.

Every epoch party m releases ``clip(D_m x_m, [-c, c]) + N(0, sigma_m^2 I_N)``
(Hu et al. 2019, updates (10)), a Gaussian mechanism on its block ``D_m``. A
relation says which datasets are neighbours, and so:

- the sound l2 sensitivity of one release (:mod:`vfl.privacy.sharing`) and
  what the solver must enforce for it (how ``x_m`` is kept in the ball);
- the config it needs;
- the audit's neighbouring pairs.

:class:`ColumnRelation`: one feature column of one party's block changed
(Definition 2 of Hu et al.). :class:`RowRelation`: one sample's feature
vector in one party's block replaced by another unit row. :data:`RELATIONS`
maps the ``privacy.neighbours`` flag to its class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np
import scipy.sparse as sp

from vfl.privacy.sharing import NEIGHBOURS, column_sensitivity, row_sensitivity

if TYPE_CHECKING:  # (the plan holds a relation: a type only)
    from .plan import PrivacyPlan

__all__ = ["ColumnRelation", "NeighbouringRelation", "RELATIONS", "RowRelation"]


class NeighbouringRelation:
    """A neighbouring relation of the released shares (strategy interface)."""

    #: the ``privacy.neighbours`` flag
    name: ClassVar[str]
    #: how the solver keeps ``x_m`` in the ``b1`` ball (``ADMMSharing(ball=...)``)
    ball: ClassVar[str]

    @property
    def words(self) -> str:
        """The relation in words (for manifests)."""
        return NEIGHBOURS[self.name]

    def check_penalty_range(self, params: dict) -> None:
        """``ValueError`` if an adaptive penalty's range leaves the bound open."""

    def check_privacy(self, privacy: dict) -> None:
        """``ValueError`` if a ``[privacy]`` key the bound needs is missing."""

    def sensitivity(
        self,
        *,
        n_samples: int,
        clip: float,
        b1: float,
        lam: float,
        input_clip: float | None,
        rho_range: tuple,
        x_rho_scale: int,
    ) -> float:
        """The l2 sensitivity of one released share.

        ``rho_range`` holds the penalties the run may use (its ends, when
        adaptive); the x-update's penalty is ``x_rho_scale`` times it.
        """
        raise NotImplementedError

    def describe_sensitivity(self, plan: PrivacyPlan) -> str:
        """The bound, in words, with the penalty it is taken at."""
        raise NotImplementedError

    def enforced(self, plan: PrivacyPlan) -> dict:
        """What the solver enforces for the bound besides unit rows, the ball and the clip."""
        raise NotImplementedError

    def neighbours(self, D, y: np.ndarray, rng: np.random.Generator, pair: Callable) -> list:
        """The audit's pairs for one party's block ``D``.

        ``pair(kind, what, B, base=None)`` makes the :class:`~vfl.core.neighbours.Neighbour`
        with ``B`` (and ``base``, for a crafted dataset of the relation) as
        the party's block.
        """
        raise NotImplementedError


class ColumnRelation(NeighbouringRelation):
    """One feature column of one party's block changed (Definition 2 of Hu et al.).

    Sensitivity ``2 min(c, b1) sqrt(N)`` (:func:`~vfl.privacy.sharing.column_sensitivity`):
    it holds whatever the penalty, so the x-update may be projected onto the ball.
    """

    name = "column"
    ball = "project"

    def sensitivity(self, *, n_samples, clip, b1, lam, input_clip, rho_range, x_rho_scale):
        return column_sensitivity(n_samples, clip, b1)

    def describe_sensitivity(self, plan):
        return "2 min(c, b1) sqrt(N) (vfl.privacy.sharing.column_sensitivity)"

    def enforced(self, plan):
        return {"x_update": "projected onto the ball"}

    def neighbours(self, D, y, rng, pair):
        """One column of the block changed, every row keeping norm <= 1 (all the bound uses).

        Natural: a column of median norm set to zero. Candidates (the audit
        keeps the one whose runs exercise most): the heaviest real column
        zeroed, and a canary: the block replaced by one column holding
        the labels (rows ``+-e_j``, exactly unit), which drives ``x_m`` to the
        ball's edge so every share is ``+-b1``; the neighbour flips the sign
        of that column on a fraction ``f < 1/2`` of the rows, keeping the
        labels' majority (and so ``x_m``) while those shares flip from ``b1``
        to ``-b1``: an l2 change near ``2 b1 sqrt(f N)``, up to 0.7 of the
        bound. Negating a whole column changes no release (the coefficient
        just flips).
        """
        out = []
        norms = np.sqrt(np.asarray(D.multiply(D).sum(axis=0)).ravel()) if sp.issparse(D) else np.linalg.norm(D, axis=0)
        used = np.flatnonzero(norms > 0)
        if used.size == 0:
            return out
        order = used[np.argsort(norms[used])]
        # (zeroing a real column moves the shares by ~1e-3 of the bound: one such candidate)
        for kind, j in [("natural", order[len(order) // 2]), ("candidate", order[-1])]:
            keep = np.ones(D.shape[1])
            keep[j] = 0.0
            B = sp.csr_matrix(D @ sp.diags(keep)) if sp.issparse(D) else D * keep
            out.append(pair(kind, f"column {j} zeroed (norm {norms[j]:.3g})", B))
        canary = np.zeros(D.shape, dtype=float)
        canary[:, 0] = np.where(y >= 0, 1.0, -1.0)
        for f in (0.4, 0.45):
            flip = rng.permutation(len(y))[: int(f * len(y))]
            B = canary.copy()
            B[flip, 0] *= -1.0
            out.append(
                pair(
                    "candidate",
                    f"canary block (column 1 = the labels), its sign flipped on {f:.0%} of the rows",
                    B,
                    canary,
                )
            )
        return out


class RowRelation(NeighbouringRelation):
    """One sample's row of one party's block replaced by another unit row.

    Sensitivity ``sqrt((2 min(c, b1))^2 + G(rho b1, R)^2 / (8 lam rho))``
    (:func:`~vfl.privacy.sharing.row_sensitivity`), with ``rho`` the
    x-update's penalty. It needs the exact minimizer of (6) over the ball
    and the pulled value clipped to ``[-R, R]``; ``G(rho b1, R)^2 / rho`` is a
    max over theta of ``(alpha sqrt(rho) + beta / sqrt(rho))^2``, ``alpha,
    beta >= 0``, each largest at an end of an interval of penalties: so is
    the bound over ``[rho_min, rho_max]``.
    """

    name = "row"
    ball = "exact"

    def check_penalty_range(self, params):
        if params.rho_max is None:
            raise ValueError(
                "row-level accounting with solver.rho_schedule = 'spectral' needs "
                "solver.rho_max too: the row bound (its G(rho b1, R)^2 / (8 lam rho) "
                "term) is taken at the worst rho of [rho_min, rho_max]"
            )

    def check_privacy(self, privacy):
        if privacy.input_clip is None:
            raise ValueError(
                "privacy.neighbours = 'row' needs privacy.input_clip (R): the "
                "row-level bound clips what a party pulls to [-R, R]"
            )

    def sensitivity(self, *, n_samples, clip, b1, lam, input_clip, rho_range, x_rho_scale):
        if lam <= 0:
            raise ValueError("privacy.neighbours = 'row' needs objective.lam > 0 (the bound divides by 8 lam rho)")
        return max(row_sensitivity(clip, b1, x_rho_scale * r, lam, input_clip) for r in rho_range)

    def describe_sensitivity(self, plan):
        sens = "sqrt((2 min(c, b1))^2 + G(rho b1, R)^2 / (8 lam rho)) (vfl.privacy.sharing.row_sensitivity)"
        lo, hi = plan.rho_range
        if plan.x_rho_scale != 1 or lo != hi:
            penalty = "M rho, Boyd form" if plan.x_rho_scale != 1 else "rho"
            sens += f", with rho the x-update's penalty ({penalty})" + (
                f" at the worst rho of [{lo:g}, {hi:g}]" if lo != hi else ""
            )
        return sens

    def enforced(self, plan):
        return {"input_clip_R": plan.input_clip, "x_update": "exact minimizer over the ball"}

    def neighbours(self, D, y, rng, pair):
        """One row of the block replaced by another unit row.

        Natural: by the row of a sample with the other label. Candidates: the
        row most aligned with ``u = D_m^T y`` (where the local model points)
        replaced by its negation, by ``-u``, and by rotations of it away from
        ``u``; and canaries, that row set to ``u`` and replaced by a rotation
        of ``u`` by ``theta`` (180 degrees moves the own share by ``2 |u .
        x_m|``, up to ``2 min(c, b1)``; 137 degrees maximizes the gradient gap
        G of ``row_sensitivity``).
        """
        out = []
        N = len(y)
        dense = D.toarray() if sp.issparse(D) else D
        u = dense.T @ y
        if not np.any(u):
            u = np.ones(D.shape[1])
        u /= np.linalg.norm(u)
        i = int(np.argmax(dense @ u))
        others = np.flatnonzero(y != y[i])
        j = int(others[rng.integers(others.size)]) if others.size else (i + 1) % N

        def replaced(row, base_row=None):
            B = dense.copy()
            B[i] = row
            base = None
            if base_row is not None:
                base = dense.copy()
                base[i] = base_row
            return B, base

        a = dense[i] / max(np.linalg.norm(dense[i]), 1e-300)
        out.append(pair("natural", f"row {i} replaced by row {j} (the other label)", *replaced(dense[j])))
        out.append(pair("candidate", f"row {i} negated", *replaced(-dense[i])))
        w = _orthogonal_unit(u, rng)
        for theta in (180.0, 137.0, 120.0):
            t = np.deg2rad(theta)
            rot = np.cos(t) * u + np.sin(t) * w
            out.append(pair("candidate", f"row {i} replaced by u rotated {theta:.0f} deg", *replaced(rot)))
            out.append(
                pair("candidate", f"canary row {i} = u, replaced by u rotated {theta:.0f} deg", *replaced(rot, u))
            )
        if abs(a @ u) < 1.0 - 1e-12:
            out.append(pair("candidate", f"row {i} replaced by -u", *replaced(-u)))
        # Canary bases. In noisy runs x_m points where the noise in the pulled r sends it, so a
        # fixed row sees |a . x_m| of a few hundredths; on a9a the canaries above exercise a
        # third of what a noiseless probe finds. Tilting every row toward u by its label,
        # c b_j u + sqrt(1 - c^2) w_j (w_j its part orthogonal to u), leaves little curvature
        # along u while the labels in r (through y and z) add up along it: x_m reaches the
        # ball's edge along u on every history, and row i = u against -u flips its share by
        # 2 min(c, b1), the first term of the bound, in nearly every epoch.
        W = dense - np.outer(dense @ u, u)
        norms = np.linalg.norm(W, axis=1, keepdims=True)
        W = np.where(norms > 1e-12, W / np.maximum(norms, 1e-300), 0.0)
        for tilt in (0.05, 0.1):
            base = tilt * np.where(y >= 0, 1.0, -1.0)[:, None] * u + math.sqrt(1 - tilt**2) * W
            base /= np.linalg.norm(base, axis=1, keepdims=True)
            base[i] = u
            B = base.copy()
            B[i] = -u
            out.append(
                pair(
                    "candidate",
                    f"canary base (every row tilted toward u by {tilt:g} times its label), row {i} = u replaced by -u",
                    B,
                    base,
                )
            )
        return out


def _orthogonal_unit(u, rng):
    """A unit vector orthogonal to the unit vector ``u`` (``u`` itself in one dimension)."""
    if u.size == 1:
        return u.copy()
    w = rng.standard_normal(u.size)
    w -= (w @ u) * u
    return w / np.linalg.norm(w)


RELATIONS: dict[str, type[NeighbouringRelation]] = {cls.name: cls for cls in (ColumnRelation, RowRelation)}
