"""The penalty schedule: a fixed ``rho``, or the adaptive one of AADMM.

:class:`SpectralPenalty` is the adaptive penalty of Xu, Figueiredo and
Goldstein (AADMM, AISTATS 2017): every ``every`` epochs, Barzilai-Borwein
curvature estimates of the two dual functions from the last differences of
``(S, y_hat)`` and ``(z, y)`` give ``rho = sqrt(alpha_hat beta_hat)`` when
their correlations exceed 0.2. Safeguards: each change is by at most a factor
``min(change, 1 + 1e10/k^2)`` (the latter is AADMM's bound, whose finite
product gives convergence of the two-block form, Xu et al. Thm. 1), and rho
stays in ``[rho_min, rho_max]``. In Hu's form ``rho_min`` defaults to
Assumption 1.2(c)'s ``sqrt(2) L``: below it the Jacobi sweep may diverge,
and the estimates do drive rho there on a9a.

:data:`RHO_SCHEDULE` maps the ``solver.rho_schedule`` flag to its class.
"""

from __future__ import annotations

import math
from typing import ClassVar

__all__ = ["FixedPenalty", "PenaltySchedule", "RHO_SCHEDULE", "SpectralPenalty"]

#: AADMM's constants (Xu et al. 2017, section 5): correlation threshold and C_cg
_SPECTRAL_EPS_COR = 0.2
_SPECTRAL_C_CG = 1e10


class PenaltySchedule:
    """How ``rho`` evolves between epochs (strategy interface)."""

    #: the ``solver.rho_schedule`` flag
    name: ClassVar[str]
    #: whether rho changes during the run (the x-update then factors for any rho)
    adaptive: ClassVar[bool]

    def __init__(self, rho_min=None, rho_max=None, every: int = 2, change: float = 10.0):
        # a fixed schedule keeps the defaults (check_variant refuses others)
        self.rho_min, self.rho_max = rho_min, rho_max
        self.every, self.change = int(every), float(change)

    def update(self, solver, P, z_in, y_in) -> dict:
        """Adapt ``solver.rho`` after an epoch that read ``(P, z_in, y_in)``; its metrics."""
        raise NotImplementedError

    def floor(self, rho: float) -> float:
        """The smallest penalty the run can use."""
        raise NotImplementedError


class FixedPenalty(PenaltySchedule):
    """``rho`` stays as given (Algorithm 1)."""

    name = "fixed"
    adaptive = False

    def update(self, solver, P, z_in, y_in):
        return {}

    def floor(self, rho):
        return rho


class SpectralPenalty(PenaltySchedule):
    """AADMM's spectral penalty (Xu et al. 2017), with bounded changes.

    In this problem's signs the x-side pair is ``(S, y_hat)`` with ``y_hat =
    y + rho (S - z_in)`` the dual the x-update satisfies (``-D_m^T y_hat =
    grad R_m``, ``<dS, dy_hat> <= 0``); the z-side pair is ``(z, y)`` with
    ``y = grad l(z)``, ``<dz, dy> >= 0``. The Boyd form takes one pair per
    block (:meth:`SharingForm.spectral_pairs`). Reports ``rho``: the penalty
    the next epoch uses.
    """

    name = "spectral"
    adaptive = True

    def __init__(self, rho_min=None, rho_max=None, every: int = 2, change: float = 10.0):
        super().__init__(rho_min, rho_max, every, change)
        self._snapshot = None  # (epoch, vectors) at the last rho update

    def floor(self, rho):
        return self.rho_min if self.rho_min is not None else 0.0

    def update(self, solver, P, z_in, y_in):
        self._update(solver, P, z_in, y_in)
        return {"rho": solver.rho}

    def _update(self, solver, P, z_in, y_in):
        H, L, G, y = solver.sharing.spectral_pairs(solver, P, z_in, y_in)
        snap = self._snapshot
        k = solver.epoch + 1  # this epoch's number
        if snap is None:
            self._snapshot = (k, H, L, G, y)
            return
        if k - snap[0] < self.every:
            return
        _, H0, L0, G0, y0 = snap
        self._snapshot = (k, H, L, G, y)
        dy = y - y0
        # x side: h = -dS, a = dy_hat (summed over blocks)
        ha = -sum(float((h - h0) @ (a - a0)) for h, h0, a, a0 in zip(H, H0, L, L0))
        hh = sum(float((h - h0) @ (h - h0)) for h, h0 in zip(H, H0))
        aa = sum(float((a - a0) @ (a - a0)) for a, a0 in zip(L, L0))
        # z side: g = d zeta (or dz), b = dy in every block
        nb = len(G)
        gb = sum(float((g - g0) @ dy) for g, g0 in zip(G, G0))
        gg = sum(float((g - g0) @ (g - g0)) for g, g0 in zip(G, G0))
        bb = nb * float(dy @ dy)
        a_hat, a_cor = _estimate(ha, aa, hh)
        b_hat, b_cor = _estimate(gb, bb, gg)
        ok_a, ok_b = a_cor > _SPECTRAL_EPS_COR, b_cor > _SPECTRAL_EPS_COR
        if ok_a and ok_b:
            tau = math.sqrt(a_hat * b_hat)
        elif ok_a:
            tau = a_hat
        elif ok_b:
            tau = b_hat
        else:
            return
        new = tau / solver.sharing.scale  # tau is the penalty of the two-block problem
        bound = min(self.change, 1.0 + _SPECTRAL_C_CG / k**2)
        new = min(max(new, solver.rho / bound), solver.rho * bound)
        if self.rho_min is not None:
            new = max(new, self.rho_min)
        if self.rho_max is not None:
            new = min(new, self.rho_max)
        solver.rho = float(new)  # y is the unscaled dual: it carries over unchanged


def _estimate(inner, aa, hh):
    """Barzilai-Borwein curvature (hybrid steepest-descent / minimum-gradient) and correlation."""
    if not (inner > 0 and aa > 0 and hh > 0):
        return None, 0.0
    sd, mg = aa / inner, inner / hh
    est = mg if 2.0 * mg > sd else sd - mg / 2.0
    return est, inner / math.sqrt(aa * hh)


RHO_SCHEDULE: dict[str, type[PenaltySchedule]] = {cls.name: cls for cls in (FixedPenalty, SpectralPenalty)}
