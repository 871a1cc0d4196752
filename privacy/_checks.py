"""Argument checks shared by the privacy modules (one-line ``ValueError``s)."""

from __future__ import annotations

import numbers

import numpy as np
import numpy.typing as npt

from vfl.core.arrays import FloatArray


def positive(name: str, value: object) -> float:
    v = _real(name, value)
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return v


def nonnegative(name: str, value: object) -> float:
    v = _real(name, value)
    if not (np.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def probability(name: str, value: object) -> float:
    """A delta: strictly inside (0, 1); 0 and 1 make every bound vacuous or infinite."""
    v = _real(name, value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return v


def count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def noise_multipliers(values: npt.ArrayLike) -> FloatArray:
    """A non-empty 1-D array of finite noise multipliers z_k = sigma_k / C_k > 0."""
    try:
        z = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"noise_multipliers must be a sequence of numbers, got {values!r}") from None
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"noise_multipliers must be a non-empty 1-D sequence, got shape {z.shape}")
    bad = ~(np.isfinite(z) & (z > 0))
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"noise_multipliers must all be finite and > 0, got {z[k]!r} at index {k}")
    return z


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    return float(value)
