"""A noisy release: the event the ledger composes, and the draw of its noise.

A solver publishes every noisy value through :meth:`~vfl.core.solver.Solver.release`,
which records a :class:`Release` (dp-accounting style: mechanism, units, enforced
sensitivities, scales) and draws the noise with :func:`add_noise`; a group of units elsewhere
draws its rows of a release with :func:`add_noise_to_rows`. Only sensitivities the code
*enforces* may appear in a release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .arrays import FloatArray
from .sampling import ExactSampler, randomized_response

__all__ = ["Release", "add_noise", "add_noise_to_rows"]


@dataclass(frozen=True)
class Release:
    """The noisy releases of one kind by some protected units in one iteration.

    Vectorized over units: ``units[k]`` released ``size`` values whose mean,
    under the solver's neighbouring relation, moves by at most
    ``sensitivity[k]`` between neighbouring datasets (l2 for ``"gaussian"``,
    where ``scale`` is the standard deviation per entry; l1 for
    ``"laplace"``, where ``scale`` is the Laplace scale ``b = 1/beta``).

    A sensitivity is given only when the code *enforces* every assumption
    behind it (clipping, projection, normalized rows, bounded gradients);
    otherwise it is NaN, and no guarantee is composed from the release.
    """

    mechanism: str
    units: np.ndarray
    sensitivity: np.ndarray
    scale: np.ndarray
    size: int
    #: drawn by the exact integer sampler on a grid (:mod:`vfl.core.sampling`): the
    #: sensitivity includes the grid's rounding, and the ledger composes the release
    #: with bounds that hold for the discrete mechanism
    exact: bool = False
    #: ``"laplace"`` only: an enforced l2 bound on the same shift of the mean, or None.
    #: Each coordinate is then ``|shift_j| / b``-DP, so the release is ``alpha
    #: ||shift||_2^2 / (2 b^2)``-RDP (Bun and Steinke 2016, Prop. 3.3, summed over the
    #: coordinates), far below the l1 bound's when the shift spreads over coordinates
    l2_sensitivity: np.ndarray | None = None
    #: the relation whose ledger composes it: ``"features"`` (the solver's stated relation,
    #: unit = the party whose block changes) or ``"labels"`` (:data:`~vfl.core.relations.LABELS`,
    #: unit 0 = the label holder); ``"randomized_response"`` releases have sensitivity 1 (one
    #: label flipped) and scale ``1 / epsilon``
    relation: str = "features"

    @property
    def noise_multiplier(self) -> FloatArray:
        multiplier: FloatArray = self.scale / self.sensitivity
        return multiplier


def add_noise(
    mechanism: str, mean: npt.ArrayLike, scale: npt.ArrayLike, rng: np.random.Generator | ExactSampler
) -> FloatArray:
    """``mean`` plus noise of per-unit ``scale`` (rows of ``mean`` are units).

    With an exact sampler as ``rng`` (deployment runs), the noise is exact
    discrete noise on a grid (:class:`vfl.core.sampling.ExactSampler`).
    """
    if mechanism == "randomized_response":  # labels +-1, scale 1 / epsilon (one unit)
        return randomized_response(np.asarray(mean, dtype=float), 1.0 / float(np.ravel(scale)[0]), rng)
    if isinstance(rng, ExactSampler):
        return rng.add(mechanism, mean, scale)
    mean = np.asarray(mean, dtype=np.float64)
    s = (
        np.asarray(scale, dtype=float).reshape((-1,) + (1,) * (mean.ndim - 1))
        if mean.ndim > 1
        else np.asarray(scale, dtype=float)
    )
    if mechanism == "gaussian":
        return mean + s * rng.standard_normal(mean.shape)
    if mechanism == "laplace":
        return mean + s * rng.laplace(0.0, 1.0, mean.shape)
    raise ValueError(f"unknown mechanism {mechanism!r}")


def add_noise_to_rows(
    mechanism: str,
    mean: npt.ArrayLike,
    scale: npt.ArrayLike,
    rng: np.random.Generator | ExactSampler,
    rows: slice,
    total: int,
) -> FloatArray:
    """Rows ``rows`` of :func:`add_noise` on a ``(total, ...)`` array whose rows ``rows`` are
    ``mean`` (``scale``: those rows' scales), drawn where those rows are held.

    A seeded stream draws the whole array's noise and keeps these rows, so a group of units
    elsewhere releases the numbers of the whole draw in this process to the bit (the noise of
    a replayable run is public to whoever holds the seed anyway); an exact sampler draws the
    rows' noise alone (its noise is never replayed).
    """
    mean = np.asarray(mean, dtype=np.float64)
    shape = (int(total),) + mean.shape[1:]
    if mechanism == "l2_laplace":
        assert isinstance(rng, np.random.Generator), "l2_laplace is drawn from a seeded stream"
        # density ~ exp(-||y||_2 / scale) per row: a Gamma(d, scale) radius times a uniform
        # direction, drawn whole (numpy's gamma is scale times a standard gamma draw, so the
        # rows' radii do not depend on the other rows' scales)
        direction = rng.standard_normal(shape)
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        radius = rng.gamma(shape=mean.shape[1], scale=1.0, size=int(total))
        return mean + (np.asarray(scale, dtype=float) * radius[rows])[:, None] * direction[rows]
    if isinstance(rng, ExactSampler):
        return rng.add(mechanism, mean, scale)
    s = np.asarray(scale, dtype=float).reshape((-1,) + (1,) * (mean.ndim - 1))
    if mechanism == "gaussian":
        return mean + s * rng.standard_normal(shape)[rows]
    if mechanism == "laplace":
        return mean + s * rng.laplace(0.0, 1.0, shape)[rows]
    raise ValueError(f"unknown mechanism {mechanism!r}")
