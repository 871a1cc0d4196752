"""How user-file errors show values: one line, a short preview, raw labels as written."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _preview(values: Sequence, limit: int = 10) -> str:
    """``'a', 'b', ... (N in all)``: names in messages, never a screenful."""
    shown = ", ".join(_show(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _show(value) -> str:
    """A raw label or cell value as the user would recognise it."""
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    if isinstance(value, (numbers.Integral, np.integer)):
        return str(int(value))
    return repr(str(value))


def _jsonable(value):
    """Raw label values for provenance: float, or str."""
    return float(value) if isinstance(value, (numbers.Real, np.floating)) else str(value)
