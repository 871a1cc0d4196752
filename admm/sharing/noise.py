"""Noise forms of the perturbed shares (Hu et al. 2019, updates (10)).

Each epoch party m pushes a perturbed version of its share ``s_m = D_m x_m``
and keeps its exact ``x_m``. A noise form says where the Gaussian goes:

- :class:`OutputNoise`: on the share, ``D_m x_m + N(0, sigma^2 I_N)``, the
  reading that reproduces the authors' Figs. 2-3 and the only form whose
  release accounting mode composes (an isotropic Gaussian mechanism);
- :class:`VariableNoise`: on the model, ``D_m (x_m + xi)`` with
  ``xi ~ N(0, sigma^2 I)`` (the NeurIPS version of Hu et al., eq. (7); the
  authors' prototype);
- :class:`WhitenedVariableNoise`: on the model with the whitened covariance
  ``xi ~ N(0, sigma^2 (D_m^T D_m)^+)``, so that ``D_m xi ~ N(0, sigma^2
  P_m)`` (Hu et al. 2019, eq. (10)).

:data:`NOISE` maps the ``privacy.form`` flag to its class; the solver
resolves the flag once, when it is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from .block import BlockSolver

__all__ = ["NOISE", "NOISE_FORMS", "NoiseForm", "OutputNoise", "VariableNoise", "WhitenedVariableNoise"]


class NoiseForm:
    """Where party m's Gaussian goes before its share is pushed (strategy interface).

    :meth:`perturb` is called only for ``sigma > 0``: with ``sigma = 0`` the
    solver pushes the exact share and draws nothing, which replays
    Algorithm 1 bit for bit.
    """

    #: the ``privacy.form`` flag
    name: ClassVar[str]
    #: True when the release is a Gaussian on the shared value itself, the
    #: mechanism the sensitivities of :mod:`vfl.privacy.sharing` bound
    accountable: ClassVar[bool] = False

    def perturb(
        self,
        share: np.ndarray,
        x_m: np.ndarray,
        *,
        sigma: float,
        rng: np.random.Generator,
        block: BlockSolver,
        release: Callable[..., np.ndarray],
    ) -> np.ndarray:
        """The value pushed for the (clipped) ``share = D_m x_m`` of the model ``x_m``.

        ``rng`` is party m's own stream, ``block`` its :class:`BlockSolver`,
        and ``release(mean, scale=, rng=)`` the solver's
        :meth:`~vfl.core.solver.Solver.release`, bound to party m.
        """
        raise NotImplementedError


class OutputNoise(NoiseForm):
    """``D_m x_m + N(0, sigma^2 I_N)``: a Gaussian on the share."""

    name = "output"
    accountable = True

    def perturb(self, share, x_m, *, sigma, rng, block, release):
        # a Release event, so the audit can watch (and replace) the released value
        return release(share, scale=sigma, rng=rng)


class VariableNoise(NoiseForm):
    """``D_m (x_m + xi)``, ``xi ~ N(0, sigma^2 I)`` (NeurIPS version of Hu et al., eq. (7))."""

    name = "variable"

    def perturb(self, share, x_m, *, sigma, rng, block, release):
        xi = rng.normal(0.0, sigma, size=x_m.shape)
        return share + block.matvec(xi)


class WhitenedVariableNoise(NoiseForm):
    """``D_m (x_m + xi)``, ``xi ~ N(0, sigma^2 (D_m^T D_m)^+)`` (Hu et al. 2019, eq. (10)).

    The image ``D_m xi`` has covariance ``sigma^2 P_m``, ``P_m`` the
    projection onto ``range(D_m)`` (:meth:`BlockSolver.whitened_noise`).
    """

    name = "variable_whitened"

    def perturb(self, share, x_m, *, sigma, rng, block, release):
        _, d_xi = block.whitened_noise(sigma, rng)
        return share + d_xi


#: ``privacy.form`` -> its noise form (in the order the help lists them)
NOISE: dict[str, type[NoiseForm]] = {cls.name: cls for cls in (VariableNoise, WhitenedVariableNoise, OutputNoise)}
NOISE_FORMS = tuple(NOISE)
