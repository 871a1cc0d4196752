"""Per-release log-likelihood ratios of the white-box audit (:mod:`vfl.privacy.audit`).

Vectorized over units and entries: a release ``o`` with its mean under ``D``
and under ``D'`` given the same history gives one term of the transcript's
privacy loss ``L``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from vfl.core.arrays import FloatArray

if TYPE_CHECKING:
    from vfl.core.releases import Release


def gaussian_log_ratio(
    o: npt.ArrayLike, mean: npt.ArrayLike, mean_other: npt.ArrayLike, sigma: npt.ArrayLike
) -> FloatArray:
    """``log N(o; mean, sigma^2 I) - log N(o; mean_other, sigma^2 I)`` per released vector.

    The last axis of ``o`` holds one release's entries; ``mean`` and
    ``mean_other`` broadcast against ``o``; ``sigma`` (the per-entry standard
    deviation, ``Release.scale``) broadcasts against ``o.shape[:-1]``, one per
    vector. Equal to ``(||o - mu'||^2 - ||o - mu||^2) / (2 sigma^2)``, computed
    as ``(mu - mu') . (2 o - mu - mu') / (2 sigma^2)``, which does not cancel
    when ``o`` is far from both means. Returns shape ``o.shape[:-1]``.
    """
    o, mu, mu2 = _vectors(o, mean, mean_other)
    s = _scale("sigma", sigma, o.shape[:-1])
    ratio: FloatArray = np.sum((mu - mu2) * (2.0 * o - mu - mu2), axis=-1) / (2.0 * s**2)
    return ratio


def laplace_log_ratio(o: npt.ArrayLike, mean: npt.ArrayLike, mean_other: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """``(||o - mu'||_1 - ||o - mu||_1) / b``: i.i.d. Laplace entries of scale ``b``.

    Shapes as in :func:`gaussian_log_ratio`, with ``b`` (``Release.scale``)
    one per vector. Returns shape ``o.shape[:-1]``.
    """
    o, mu, mu2 = _vectors(o, mean, mean_other)
    s = _scale("b", b, o.shape[:-1])
    ratio: FloatArray = np.sum(np.abs(o - mu2) - np.abs(o - mu), axis=-1) / s
    return ratio


def uniform_laplace_logpdf(o: npt.ArrayLike, lo: npt.ArrayLike, hi: npt.ArrayLike, b: npt.ArrayLike) -> FloatArray:
    """Log density of ``Y + Laplace(0, b)`` with ``Y ~ Uniform[lo, hi]``, entrywise.

    This is the "Laplace with a uniformly random mean" of Xiao, Ye and
    Devadas (Lemma 2.1, Thm. 2.2): the convolution

        p(o) = (1/w) int_lo^hi e^(-|o - y|/b) / (2b) dy,   w = hi - lo,

    which in closed form, with ``phi(t) = 1 - e^(-t)``, ``r = w / b`` and the
    distances ``u = clip(o - lo, 0, w)``, ``v = clip(hi - o, 0, w)``, is

        p(o) = e^(-dist(o, [lo, hi]) / b) / (2b) * (phi(u/b) + phi(v/b)) / r.

    Outside the interval ``u + v = w`` reduces the last factor to
    ``phi(r)/r``; inside, ``dist = 0``. Computed in log space with ``expm1``,
    so it is accurate far in the tails and as ``w -> 0`` (the factor tends
    to 1 and ``p`` to the Laplace density at ``lo``). All arguments
    broadcast elementwise; ``lo <= hi`` is required, ``lo == hi`` allowed.
    """
    x = _finite("o", o)
    a = _finite("lo", lo)
    z = _finite("hi", hi)
    if np.any(a > z):
        raise ValueError("uniform_laplace_logpdf needs lo <= hi everywhere")
    scale = np.asarray(b, dtype=float)
    if not (np.all(np.isfinite(scale)) and np.all(scale > 0)):
        raise ValueError("the Laplace scale b must be finite and > 0")
    return _uniform_laplace_logpdf(x, a, z, scale)


def uniform_laplace_log_ratio(
    o: npt.ArrayLike,
    lo: npt.ArrayLike,
    hi: npt.ArrayLike,
    lo_other: npt.ArrayLike,
    hi_other: npt.ArrayLike,
    b: npt.ArrayLike,
) -> FloatArray:
    """Log ratio of two uniform-mean Laplace densities, summed over a release's entries.

    Entry ``l`` of a release has mean uniform on ``[lo[l], hi[l]]`` under
    ``D`` and on ``[lo_other[l], hi_other[l]]`` under ``D'`` (the
    neighbour's interval, shifted by its different data term), plus
    independent Laplace noise of scale ``b``. Returns ``sum_l log p(o_l) -
    log p'(o_l)`` (see :func:`uniform_laplace_logpdf`); ``b`` is one per
    vector, broadcast against ``o.shape[:-1]``, the intervals against ``o``.
    """
    x = _finite("o", o)
    if x.ndim == 0:
        raise ValueError("o must have at least one axis (the release's entries)")
    s = _scale("b", b, x.shape[:-1])[..., None]
    ratio: FloatArray = np.sum(
        uniform_laplace_logpdf(x, lo, hi, s) - uniform_laplace_logpdf(x, lo_other, hi_other, s), axis=-1
    )
    return ratio


def release_log_ratio(release: Release, o: npt.ArrayLike, mean: npt.ArrayLike, mean_other: npt.ArrayLike) -> FloatArray:
    """Per-unit log ratios of one :class:`~vfl.core.releases.Release`.

    ``o``, ``mean`` and ``mean_other`` hold ``len(release.units) *
    release.size`` values each (one row per unit, or one vector for a
    single unit, as passed to ``Solver.release``); they are reshaped to
    ``(units, size)``. Uses ``release.scale`` (the per-unit standard
    deviation for ``"gaussian"``, Laplace scale ``b`` for ``"laplace"``);
    the sensitivity plays no part: the audit uses the actual means.
    Returns shape ``(len(release.units),)``; their sum is the release's
    contribution to ``L``.
    """
    shape = (len(release.units), int(release.size))
    try:
        x, mu, mu2 = (
            np.broadcast_to(np.asarray(a, dtype=float), np.shape(o)).reshape(shape) for a in (o, mean, mean_other)
        )
    except ValueError:
        raise ValueError(f"release values do not fit {shape[0]} units x size {shape[1]}") from None
    if release.mechanism == "gaussian":
        return gaussian_log_ratio(x, mu, mu2, release.scale)
    if release.mechanism == "laplace":
        return laplace_log_ratio(x, mu, mu2, release.scale)
    if release.mechanism == "randomized_response":  # labels +-1: eps where the means differ
        eps = 1.0 / np.asarray(release.scale, dtype=float)[:, None]
        flips: FloatArray = np.sum(np.where(mu == mu2, 0.0, np.where(x == mu, eps, -eps)), axis=-1)
        return flips
    raise ValueError(f"unknown mechanism {release.mechanism!r}")


# ------------------------------------------------------------- helpers --
def _vectors(
    o: npt.ArrayLike, mean: npt.ArrayLike, mean_other: npt.ArrayLike
) -> tuple[FloatArray, FloatArray, FloatArray]:
    x = _finite("o", o)
    if x.ndim == 0:
        raise ValueError("o must have at least one axis (the release's entries)")
    mu = _finite("mean", mean)
    mu2 = _finite("mean_other", mean_other)
    try:
        x, mu, mu2 = np.broadcast_arrays(x, mu, mu2)
    except ValueError:
        raise ValueError(
            f"means of shapes {np.shape(mean)}, {np.shape(mean_other)} do not "
            f"broadcast to the released values' shape {x.shape}"
        ) from None
    return x, mu, mu2


def _finite(name: str, values: npt.ArrayLike) -> FloatArray:
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be an array of numbers") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _scale(name: str, scale: npt.ArrayLike, shape: tuple[int, ...]) -> FloatArray:
    """A positive scale per released vector: broadcastable to ``shape``, not beyond it."""
    s = _finite(name, scale)
    if not np.all(s > 0):
        raise ValueError(f"{name} must be > 0")
    try:
        ok = np.broadcast_shapes(s.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"{name} of shape {s.shape} must broadcast to {tuple(shape)}, "
            "one per released vector (the last axis holds its entries)"
        )
    return s


def _uniform_laplace_logpdf(o: FloatArray, lo: FloatArray, hi: FloatArray, b: FloatArray) -> FloatArray:
    w = hi - lo
    r = w / b
    u = np.clip(o - lo, 0.0, w) / b
    v = np.clip(hi - o, 0.0, w) / b
    dist = np.maximum(np.maximum(lo - o, o - hi), 0.0) / b
    with np.errstate(divide="ignore", invalid="ignore"):
        # (phi(u) + phi(v)) / r -> 1 as w -> 0 (each phi(t) ~ t, u + v = r)
        ratio = np.where(r > 0, (-np.expm1(-u) - np.expm1(-v)) / np.where(r > 0, r, 1.0), 1.0)
    return -dist - np.log(2.0 * b) + np.log(ratio)
