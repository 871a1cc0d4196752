"""Typed, validated parameters: how a solver declares its config keys.

A solver lists its ``[solver]`` and ``[privacy]`` keys as :class:`Param`
objects; the config layer builds and validates those tables from the
declaration alone, so adding a key touches only the solver's module. Every
value is checked by pydantic (strict types, bounds, choices, no NaN or inf);
a bad one is a :class:`~vfl.core.errors.ConfigError` that names the key, in
one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from .errors import ConfigError

__all__ = [
    "Param",
    "validate_table",
    "as_number",
    "as_integer",
    "as_choice",
    "as_boolean",
    "MAX_EPSILON",
    "MIN_EPSILON",
    "MAX_ITERATIONS",
    "MAX_REPEATS",
    "check_epsilon",
]

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
        raise ConfigError(
            f"{key} = {value:g}: must be <= {MAX_EPSILON:g} (e^epsilon overflows "
            "beyond; such a target protects nothing)"
        )
    if value < MIN_EPSILON:
        raise ConfigError(
            f"{key} = {value:g}: must be >= {MIN_EPSILON:g} (the noise it needs is "
            "beyond a million times the sensitivity, where the accountants lose "
            "their precision)"
        )
    return value


def _typename(value: object) -> str:
    return type(value).__name__


# Every value is validated by pydantic (strict: no bool for a number, no "1" for an int,
# no NaN or inf); its errors are turned into the one line that names the key.
@cache
def _adapter(
    kind: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    choices: tuple[str, ...] | None = None,
) -> TypeAdapter[Any]:
    bounds: dict[str, float] = {}
    if low is not None:
        bounds["gt" if low_open else "ge"] = low
    if high is not None:
        bounds["lt" if high_open else "le"] = high
    if kind == "number":
        return TypeAdapter(Annotated[StrictFloat, Field(allow_inf_nan=False, **bounds)])
    if kind == "integer":
        return TypeAdapter(Annotated[StrictInt, Field(**bounds)])
    if kind == "boolean":
        return TypeAdapter(StrictBool)
    if kind == "choice":
        # Literal[choices] is built at run time from the declaration's choices
        return TypeAdapter(Literal[choices] if choices else StrictStr)  # type: ignore[arg-type]
    raise TypeError(f"unsupported kind {kind!r}")  # pragma: no cover - a declaration bug


_WORDS = {"number": "a number", "integer": "an integer", "boolean": "true or false", "choice": "a string"}


def _validated(
    key: str,
    value: Any,
    kind: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    choices: Sequence[str] | None = None,
) -> Any:
    """``value`` validated by pydantic, or a :class:`ConfigError` naming ``key`` (one line).

    ``value`` is a TOML value and the result's type is ``kind``'s, known at run time only
    (hence ``Any``: the typed :func:`as_number` ... below narrow it)."""
    try:
        return _adapter(kind, low, high, low_open, high_open, tuple(choices) if choices else None).validate_python(
            value
        )
    except ValidationError as exc:
        kind_of_error = exc.errors()[0]["type"]
    if kind_of_error == "finite_number":
        raise ConfigError(f"{key} must be finite, got {value!r}") from None
    if kind_of_error == "literal_error" and isinstance(value, str):
        raise ConfigError(f"{key} = {value!r} is not one of: {', '.join(choices or ())}") from None
    if not kind_of_error.startswith(("greater_than", "less_than")):
        raise ConfigError(f"{key} must be {_WORDS[kind]}, got {value!r} ({_typename(value)})") from None
    fmt = "g" if kind == "number" else ""
    if low is not None and high is not None and kind == "number":
        raise ConfigError(
            f"{key} must be in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}, got {value:g}"
        ) from None
    if kind_of_error.startswith("greater_than"):
        raise ConfigError(f"{key} must be {'>' if low_open else '>='} {low:{fmt}}, got {value:{fmt}}") from None
    raise ConfigError(f"{key} must be {'<' if high_open else '<='} {high:{fmt}}, got {value:{fmt}}") from None


def as_number(
    key: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite real number in the given range (``bool`` is refused)."""
    return float(_validated(key, value, "number", low=low, high=high, low_open=low_open, high_open=high_open))


def as_integer(key: str, value: object, *, low: int | None = None, high: int | None = None) -> int:
    """An integer (not a bool, not a float) in ``[low, high]``."""
    checked: int = _validated(key, value, "integer", low=low, high=high)
    return checked


def as_choice(key: str, value: object, choices: Iterable[str]) -> str:
    """One of ``choices`` (strings)."""
    checked: str = _validated(key, value, "choice", choices=tuple(choices))
    return checked


def as_boolean(key: str, value: object) -> bool:
    """``true`` or ``false`` (not 0 or 1)."""
    checked: bool = _validated(key, value, "boolean")
    return checked


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

    def validate(self, section: str, value: Any) -> Any:
        """``value`` (a TOML value, or None) checked; the result's type is ``kind``
        (known at run time only, hence ``Any``)."""
        key = f"{section}.{self.name}"
        if value is None:
            return None
        if self.kind is float:
            value = as_number(
                key, value, low=self.low, high=self.high, low_open=self.low_open, high_open=self.high_open
            )
        elif self.kind is int:
            value = as_integer(
                key,
                value,
                low=None if self.low is None else int(self.low),
                high=None if self.high is None else int(self.high),
            )
        elif self.kind is bool:
            value = as_boolean(key, value)
        elif self.kind is str:
            value = _validated(key, value, "choice", choices=self.choices)
        elif self.kind is list:
            if not isinstance(value, list) or not value:
                raise ConfigError(f"{key} must be a non-empty list of numbers, got {value!r}")
            value = [
                as_number(
                    f"{key}[{i}]", v, low=self.low, high=self.high, low_open=self.low_open, high_open=self.high_open
                )
                for i, v in enumerate(value)
            ]
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


def validate_table(
    section: str, table: Mapping[str, Any], params: tuple[Param, ...], *, owner: str, fixed: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Validate ``table`` against ``params``; returns every key with its value or default.

    ``fixed`` keys are handled by the caller (e.g. ``solver.name``) and are
    accepted without validation here. An unknown key lists the valid ones.
    """
    names = [p.name for p in params]
    for key in table:
        if key not in names and key not in fixed:
            valid = ", ".join([*fixed, *names]) or "(none)"
            raise ConfigError(f"unknown key '{section}.{key}' for {owner}; valid keys in [{section}]: {valid}")
    return {p.name: p.validate(section, table.get(p.name, p.default)) for p in params}
