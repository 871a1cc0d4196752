"""Reading one number off a committed table for README's facts: the one row a selector
picks, a single value, how a number is printed, and :class:`Fact`, one number read off a
table (``docs/readme_facts.py`` lists them, ``docs/readme_tables.py`` writes them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


class FactError(ValueError):
    """A fact README marks that cannot be read off its CSV (the message names the fact)."""


def _where(table: pd.DataFrame, csv: str, where: dict) -> pd.DataFrame:
    """The rows of ``table`` whose columns equal ``where``'s values."""
    keep = pd.Series(True, index=table.index)
    for column, value in where.items():
        if column not in table.columns:
            raise FactError(f"{csv} has no column {column!r}")
        keep &= table[column] == value
    return table[keep]


def _one(table: pd.DataFrame, csv: str, where: dict) -> pd.Series:
    rows = _where(table, csv, where)
    if len(rows) != 1:
        said = ", ".join(f"{k}={v!r}" for k, v in where.items())
        raise FactError(f"{len(rows)} rows of {csv} have {said}, not one")
    return rows.iloc[0]


def _unique(values, what: str):
    found = sorted(set(values))
    if len(found) != 1:
        raise FactError(f"{what} takes {len(found)} values {found}, not one")
    return found[0]


def _exp(digits: int) -> Callable[[float], str]:
    """``1.0e7``, ``1e-5``: scientific notation without the exponent's sign and padding."""

    def fmt(x: float) -> str:
        mantissa, exponent = f"{x:.{digits}e}".split("e")
        return f"{mantissa}e{int(exponent)}"

    return fmt


_WORDS = ("none", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _word(n: int) -> str:
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def read_figure(figures: Path, name: str) -> pd.DataFrame:
    """A committed CSV under ``figures`` (``audits/audits.csv``), as the tables read it (the
    utility CSVs may carry ``#`` comment lines)."""
    return pd.read_csv(figures / name, comment="#" if name.startswith(("private/", "dp-admm/")) else None)


@dataclass(frozen=True)
class Fact:
    """One number README's prose quotes: ``value`` of the CSV ``csv`` (under docs/figures, or
    a tuple of them, concatenated), printed by ``fmt`` (a format spec or a function)."""

    csv: str | tuple[str, ...]
    value: Callable[[pd.DataFrame], object]
    fmt: str | Callable[[object], str] = "g"

    def text(self, figures: Path) -> str:
        names = (self.csv,) if isinstance(self.csv, str) else self.csv
        table = pd.concat([read_figure(figures, n) for n in names], ignore_index=True)
        value = self.value(table)
        return self.fmt(value) if callable(self.fmt) else format(value, self.fmt)


def cell(csv: str, column: str, fmt="g", **where) -> Fact:
    """``column`` of the one row of ``csv`` whose columns equal ``where``."""
    return Fact(csv, lambda t: _one(t, csv, where)[column], fmt)


def count(csv: str, fmt="d", **where) -> Fact:
    """How many rows of ``csv`` have ``where``."""
    return Fact(csv, lambda t: len(_where(t, csv, where)), fmt)
