"""The ``[preprocessing]`` section's keys and their check (:func:`check_spec`): every key's
value or source validated, with one line naming the key, before anything is fitted
(:mod:`vfl.datasets.stage` fits the stage)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from vfl.core.errors import ConfigError
from vfl.core.preprocessing import (
    ENCODINGS,
    SCALINGS,
    check_bounds,
    check_vocabulary,
)

__all__ = ["PREPROCESSING_KEYS", "check_spec"]

PREPROCESSING_KEYS = (
    "encoding",
    "categories",
    "other",
    "scaling",
    "range",
    "bounds",
    "stats",
    "row_clip",
    "normalize_rows",
    "intercept",
)
_SOURCE_WORDS = {
    "categories": ("auto", "schema", "train"),
    "bounds": ("auto", "schema", "train", "public"),
    "stats": ("train", "public"),
}


def _key(k: str) -> str:
    return f"preprocessing.{k}"


def _pair(key: str, value) -> tuple[float, float]:
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)
    ):
        raise ConfigError(f"{key} must be [lower, upper] (two numbers), got {value!r}")
    try:
        return check_bounds(key, value)
    except ValueError as exc:
        raise ConfigError(f"{key}: {str(exc).split(': ', 1)[1]}") from None


def _source_or_table(key: str, value, words, pair: bool):
    if isinstance(value, str):
        if value not in words:
            raise ConfigError(f"{_key(key)} = {value!r} is not one of: {', '.join(words)}, or a table of columns")
        return value
    if pair and isinstance(value, list):
        return _pair(_key(key), value)
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{_key(key)} must be one of {', '.join(words)} or a table {{column = ...}}, got {value!r}")
    out = {}
    for col, v in value.items():
        if key == "categories":
            try:
                out[col] = check_vocabulary(col, v)
            except ValueError as exc:
                raise ConfigError(f"{_key(key)}.{col}: {str(exc).split(': ', 1)[1]}") from None
        elif key == "stats":
            if (
                not isinstance(v, list)
                or len(v) != 2
                or any(isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) for x in v)
            ):
                raise ConfigError(f"{_key(key)}.{col} must be [mean, scale], got {v!r}")
            if v[1] <= 0:
                raise ConfigError(f"{_key(key)}.{col}: scale must be > 0, got {v[1]:g} (a zero scale divides by zero)")
            out[col] = (float(v[0]), float(v[1]))
        else:
            out[col] = _pair(f"{_key(key)}.{col}", v)
    return out


def check_spec(table: Mapping[str, Any], defaults: Mapping[str, Any] = ()) -> dict:
    """Validate a ``[preprocessing]`` table; returns it with every key resolved.

    ``defaults`` are the dataset's (its registry entry): they fill the keys
    the table leaves unset, and a scaling default brings its ``range`` only
    when the table does not choose its own scaling.
    """
    table = dict(table)
    for k in table:
        if k not in PREPROCESSING_KEYS:
            raise ConfigError(
                f"unknown key '{_key(k)}'; valid keys in [preprocessing]: {', '.join(PREPROCESSING_KEYS)}"
            )
    defaults = dict(defaults or {})
    if "scaling" in table:
        defaults.pop("range", None)
        defaults.pop("scaling", None)
    spec = {**defaults, **table}
    encoding = spec.get("encoding", "onehot")
    if encoding not in ENCODINGS:
        raise ConfigError(f"{_key('encoding')} = {encoding!r} is not one of: {', '.join(ENCODINGS)}")
    scaling = spec.get("scaling", "none")
    if scaling not in SCALINGS:
        raise ConfigError(f"{_key('scaling')} = {scaling!r} is not one of: {', '.join(SCALINGS)}")
    for k, needs in (("range", ("minmax",)), ("bounds", ("minmax", "clip")), ("stats", ("standard",))):
        if k in table and scaling not in needs:
            raise ConfigError(f"{_key(k)} applies to scaling = {' or '.join(map(repr, needs))}, not {scaling!r}")
    out = {
        "encoding": encoding,
        "scaling": scaling,
        "categories": _source_or_table(
            "categories", spec.get("categories", "auto"), _SOURCE_WORDS["categories"], False
        ),
        "other": spec.get("other", False),
    }
    if not isinstance(out["other"], bool):
        raise ConfigError(f"{_key('other')} must be true or false, got {out['other']!r}")
    if scaling == "minmax":
        out["range"] = _pair(_key("range"), spec.get("range", [0.0, 1.0]))
    if scaling in ("minmax", "clip"):
        out["bounds"] = _source_or_table("bounds", spec.get("bounds", "auto"), _SOURCE_WORDS["bounds"], True)
    if scaling == "standard":
        out["stats"] = _source_or_table("stats", spec.get("stats", "train"), _SOURCE_WORDS["stats"], False)
    clip = spec.get("row_clip")
    if clip is not None and (
        isinstance(clip, bool) or not isinstance(clip, (int, float)) or not math.isfinite(clip) or clip <= 0
    ):
        raise ConfigError(f"{_key('row_clip')} must be a finite number > 0, got {clip!r}")
    out["row_clip"] = None if clip is None else float(clip)
    for k in ("normalize_rows", "intercept"):
        v = spec.get(k)
        if v is not None and not isinstance(v, bool):
            raise ConfigError(f"{_key(k)} must be true or false, got {v!r}")
        out[k] = v
    out["normalize_rows"] = bool(out["normalize_rows"])
    return out
