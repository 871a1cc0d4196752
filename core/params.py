"""Typed, validated parameters: how a solver declares its config keys.

A solver lists its ``[solver]`` and ``[privacy]`` keys as :class:`Param`
objects; the config layer builds and validates those tables from the
declaration alone, so adding a key touches only the solver's module. A bad
value is a :class:`~vfl.core.errors.ConfigError` that names the key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from .errors import ConfigError

__all__ = ["Param", "validate_table", "as_number", "as_integer", "as_choice", "as_boolean",
           "MAX_EPSILON", "MIN_EPSILON", "MAX_ITERATIONS", "MAX_REPEATS", "check_epsilon"]

#: e^epsilon overflows float64 near 709: no accountant can represent a larger target
MAX_EPSILON = 700.0
#: below this the accountants' root finding loses its precision (and the noise needed
#: is beyond a million times the sensitivity): such a target is a typo
MIN_EPSILON = 1e-6
#: more iterations than this is a typo, not an experiment (1e6 ADMM epochs on a9a take hours)
MAX_ITERATIONS = 1_000_000
#: more independent replications than this is a typo too
MAX_REPEATS = 10_000


def check_epsilon(key: str, value: float) -> float:
    """A target epsilon in [MIN_EPSILON, MAX_EPSILON], or a ConfigError naming ``key``."""
    if value > MAX_EPSILON:
        raise ConfigError(f"{key} = {value:g}: must be <= {MAX_EPSILON:g} (e^epsilon overflows "
                          "beyond; such a target protects nothing)")
    if value < MIN_EPSILON:
        raise ConfigError(f"{key} = {value:g}: must be >= {MIN_EPSILON:g} (the noise it needs is "
                          "beyond a million times the sensitivity, where the accountants lose "
                          "their precision)")
    return value


def _typename(value) -> str:
    return type(value).__name__


def as_number(key: str, value, *, low: float | None = None, high: float | None = None,
              low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number in the given range (``bool`` is refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{key} must be a number, got {value!r} ({_typename(value)})")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"{key} must be finite, got {value!r}")
    below = low is not None and (value < low or (low_open and value == low))
    above = high is not None and (value > high or (high_open and value == high))
    if (below or above) and low is not None and high is not None:
        raise ConfigError(f"{key} must be in {'(' if low_open else '['}{low:g}, {high:g}"
                          f"{')' if high_open else ']'}, got {value:g}")
    if low is not None and (value < low or (low_open and value == low)):
        raise ConfigError(f"{key} must be {'>' if low_open else '>='} {low:g}, got {value:g}")
    if high is not None and (value > high or (high_open and value == high)):
        raise ConfigError(f"{key} must be {'<' if high_open else '<='} {high:g}, got {value:g}")
    return value


def as_integer(key: str, value, *, low: int | None = None, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key} must be an integer, got {value!r} ({_typename(value)})")
    if low is not None and value < low:
        raise ConfigError(f"{key} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ConfigError(f"{key} must be <= {high}, got {value}")
    return value


def as_choice(key: str, value, choices) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{key} must be a string, got {value!r} ({_typename(value)})")
    if value not in choices:
        raise ConfigError(f"{key} = {value!r} is not one of: {', '.join(choices)}")
    return value


def as_boolean(key: str, value) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key} must be true or false, got {value!r} ({_typename(value)})")
    return value


@dataclass(frozen=True)
class Param:
    """One config key of a solver.

    ``kind`` is ``float``, ``int``, ``str``, ``bool`` or ``list`` (a list of
    numbers). ``default=None`` makes the key optional with no value. Numeric
    bounds are inclusive unless ``low_open`` / ``high_open``; ``check`` is an
    extra ``(key, value) -> value`` validator for rules bounds cannot say.
    """

    name: str
    kind: type
    default: Any
    help: str
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    check: Callable[[str, Any], Any] | None = None

    def validate(self, section: str, value):
        key = f"{section}.{self.name}"
        if value is None:
            return None
        if self.kind is float:
            value = as_number(key, value, low=self.low, high=self.high,
                              low_open=self.low_open, high_open=self.high_open)
        elif self.kind is int:
            value = as_integer(key, value, low=None if self.low is None else int(self.low),
                               high=None if self.high is None else int(self.high))
        elif self.kind is bool:
            value = as_boolean(key, value)
        elif self.kind is str:
            value = as_choice(key, value, self.choices) if self.choices else value
            if not isinstance(value, str):
                raise ConfigError(f"{key} must be a string, got {value!r} ({_typename(value)})")
        elif self.kind is list:
            if not isinstance(value, list) or not value:
                raise ConfigError(f"{key} must be a non-empty list of numbers, got {value!r}")
            value = [as_number(f"{key}[{i}]", v, low=self.low, high=self.high,
                               low_open=self.low_open, high_open=self.high_open)
                     for i, v in enumerate(value)]
        else:  # pragma: no cover - a declaration bug, not a user error
            raise TypeError(f"unsupported Param kind {self.kind!r}")
        if self.check is not None:
            value = self.check(key, value)
        return value

    def describe(self) -> str:
        """One line for ``--help`` style listings and README tables."""
        rng = ""
        if self.choices:
            rng = " | ".join(self.choices)
        elif self.low is not None or self.high is not None:
            lo = "" if self.low is None else f"{'(' if self.low_open else '['}{self.low:g}"
            hi = "" if self.high is None else f"{self.high:g}{')' if self.high_open else ']'}"
            rng = f"{lo or '(-inf'}, {hi or 'inf)'}"
        default = "none" if self.default is None else repr(self.default)
        return f"{self.name} ({self.kind.__name__}{'; ' + rng if rng else ''}; default {default}): {self.help}"


def validate_table(section: str, table: dict, params: tuple[Param, ...], *, owner: str,
                   fixed: tuple[str, ...] = ()) -> dict:
    """Validate ``table`` against ``params``; returns every key with its value or default.

    ``fixed`` keys are handled by the caller (e.g. ``solver.name``) and are
    accepted without validation here. An unknown key lists the valid ones.
    """
    names = [p.name for p in params]
    for key in table:
        if key not in names and key not in fixed:
            valid = ", ".join([*fixed, *names]) or "(none)"
            raise ConfigError(f"unknown key '{section}.{key}' for {owner}; valid keys in "
                              f"[{section}]: {valid}")
    return {p.name: p.validate(section, table.get(p.name, p.default)) for p in params}
