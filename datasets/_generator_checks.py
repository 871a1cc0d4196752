"""Argument checks shared by the synthetic generators (one wording for both)."""

from __future__ import annotations

import numbers

import numpy as np

from vfl.core.errors import DataError


def integer(prefix: str, name: str, value, minimum: int) -> int:
    """``value`` as an int ``>= minimum`` (bools refused), else a DataError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise DataError(f"{prefix}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def real(prefix: str, name: str, value, low: float, high: float | None = None, *, open_low: bool = False) -> float:
    """``value`` as a finite float in ``[low, high)`` (``(low, high)`` with ``open_low``)."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)
    if ok:
        ok = (value > low if open_low else value >= low) and (high is None or value < high)
    if not ok:
        bound = f"{'>' if open_low else '>='} {low:g}" + ("" if high is None else f" and < {high:g}")
        raise DataError(f"{prefix}: {name} must be a finite number {bound}, got {value!r}")
    return float(value)
