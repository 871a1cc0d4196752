"""The preprocessing stage in front of every mechanism: encode, scale, bound the rows.

A DP guarantee covers the raw file only if no transform in front of the
mechanism lets one record change what another becomes. The stage therefore
separates two kinds of step:

- **column steps** (categorical encoding, feature scaling) have parameters
  that are not per record: a vocabulary, bounds, means and scales. Each
  parameter carries its ``source``: the dataset's published ``schema``,
  constants in the ``config``, ``public_rows`` (rows declared public and
  disjoint from the private ones), or the ``training_rows`` (allowed only in
  a run that claims no guarantee, and recorded as such);
- **row steps** (intercept, clipping a row to an l2 norm, normalising a row)
  act on one record alone (``source = "per_record"``): replacing one record
  leaves every other record's output bit-identical.

A categorical value outside the vocabulary never becomes a new column: it
goes to a declared "other" bucket (one extra column per categorical in the
one-hot encoding, or the code ``len(values)`` in the ordinal one) or, in the
one-hot encoding without the bucket, to an all-zero block.

Everything here is pure numpy/scipy and raises ``ValueError``; the
experiments layer resolves sources and turns errors into one-line messages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import cast

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

# the row steps live beside this module; they are part of the stage's public names
from vfl.core.arrays import BoolArray, FloatArray, IntArray, Matrix
from vfl.core.rows import RowSteps, add_intercept, clip_rows, normalize_rows, row_norms

__all__ = [
    "SOURCES",
    "ENCODINGS",
    "SCALINGS",
    "ColumnSpec",
    "Schema",
    "RawTable",
    "Encoder",
    "Scaler",
    "RowSteps",
    "Pipeline",
    "clip_rows",
    "normalize_rows",
    "add_intercept",
    "row_norms",
]

#: where a column step's parameters come from
SOURCES = ("schema", "config", "public_rows", "training_rows")
ENCODINGS = ("onehot", "ordinal")
SCALINGS = ("none", "standard", "minmax", "clip")
KINDS = ("numeric", "categorical")


# ----------------------------------------------------------------- schemas --
@dataclass(frozen=True)
class ColumnSpec:
    """One raw column: its kind and, where published, its values or range.

    ``values`` (categorical) is the vocabulary; codes follow its order.
    ``bounds`` (numeric) is the declared ``[lo, hi]`` range.
    """

    name: str
    kind: str
    values: tuple[str, ...] | None = None
    bounds: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"column {self.name!r}: kind must be numeric or categorical, got {self.kind!r}")
        if self.values is not None:
            check_vocabulary(self.name, self.values)
        if self.bounds is not None:
            check_bounds(self.name, self.bounds)


def check_vocabulary(name: str, values: object) -> tuple[str, ...]:
    """A non-empty tuple of distinct non-empty strings, or ValueError naming the column."""
    if isinstance(values, str) or not hasattr(values, "__iter__"):
        raise ValueError(f"column {name!r}: values must be a list of strings, got {values!r}")
    values = tuple(values)
    if not values:
        raise ValueError(f"column {name!r}: values is empty (list every category)")
    bad = [v for v in values if not isinstance(v, str) or not v.strip()]
    if bad:
        raise ValueError(f"column {name!r}: values must be non-empty strings, got {bad[0]!r}")
    seen: set[str] = set()
    dup: list[str] = []
    for v in values:
        if v in seen:
            dup.append(v)
        seen.add(v)
    if dup:
        raise ValueError(f"column {name!r}: value {dup[0]!r} is listed twice")
    return values


def check_bounds(name: str, bounds: Iterable[float]) -> tuple[float, float]:
    """``(lo, hi)`` finite with ``lo < hi``, or ValueError naming the column."""
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"column {name!r}: bounds must be [lower, upper], got {bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"column {name!r}: bounds must be finite, got [{lo:g}, {hi:g}]")
    if lo >= hi:
        raise ValueError(
            f"column {name!r}: bounds need lower < upper, got [{lo:g}, {hi:g}] (a zero range scales nothing)"
        )
    return lo, hi


@dataclass(frozen=True)
class Schema:
    """A dataset's published description: its columns, their kinds, values and ranges.

    ``citation`` says where it is published; ``layouts`` maps an encoding to
    the raw columns it uses, in output order (e.g. Adult's one-hot layout
    drops ``fnlwgt`` and puts the numeric columns first).
    """

    name: str
    columns: tuple[ColumnSpec, ...]
    citation: str
    layouts: dict[str, Sequence[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"schema {self.name}: column {dup[0]!r} is declared twice")

    def column(self, name: str) -> ColumnSpec | None:
        return next((c for c in self.columns if c.name == name), None)

    def layout(self, encoding: str) -> tuple[str, ...]:
        return tuple(self.layouts.get(encoding, [c.name for c in self.columns]))


# -------------------------------------------------------------- raw records --
@dataclass(frozen=True, eq=False)
class RawTable:
    """Records before encoding.

    ``names``/``kinds`` list the feature columns in file order. Numeric
    columns are the columns of ``numeric`` (float64, dense or CSR) in the
    order they appear in ``names``; categorical columns are the columns of
    ``categorical`` (an object array of ``str``), in the same way.
    """

    names: tuple[str, ...]
    kinds: tuple[str, ...]
    numeric: Matrix  # float64, dense or CSR
    categorical: npt.NDArray[np.object_] | None = None

    @classmethod
    def from_matrix(cls, X: Matrix, names: Iterable[str] | None = None) -> RawTable:
        names = tuple(names) if names is not None else tuple(f"x{j}" for j in range(X.shape[1]))
        return cls(names=names, kinds=("numeric",) * X.shape[1], numeric=X)

    @property
    def n_rows(self) -> int:
        return int(self.numeric.shape[0])

    @property
    def numeric_names(self) -> tuple[str, ...]:
        return tuple(n for n, k in zip(self.names, self.kinds) if k == "numeric")

    @property
    def categorical_names(self) -> tuple[str, ...]:
        return tuple(n for n, k in zip(self.names, self.kinds) if k == "categorical")

    def take(self, rows: npt.ArrayLike) -> RawTable:
        rows = np.asarray(rows)
        cat = None if self.categorical is None else self.categorical[rows]
        return RawTable(self.names, self.kinds, self.numeric[rows], cat)

    def stack(self, other: RawTable) -> RawTable:
        """These records followed by ``other``'s (same columns)."""
        if other.names != self.names or other.kinds != self.kinds:
            raise ValueError("cannot stack tables with different columns")
        num = (
            sp.vstack([self.numeric, other.numeric]).tocsr()
            if sp.issparse(self.numeric)
            else np.vstack([self.numeric, other.numeric])
        )
        cat = (
            None
            if self.categorical is None or other.categorical is None
            else np.vstack([self.categorical, other.categorical])
        )  # same columns: both or neither
        return RawTable(self.names, self.kinds, num, cat)

    def column(self, name: str) -> np.ndarray:
        """One column's values (float64 for numeric, str objects for categorical)."""
        kind = self.kinds[self.names.index(name)]
        if kind == "numeric":
            j = self.numeric_names.index(name)
            col = self.numeric[:, j]
            return np.asarray(col.todense()).ravel() if sp.issparse(col) else np.asarray(col)
        assert self.categorical is not None  # a categorical column is in it
        return self.categorical[:, self.categorical_names.index(name)]


# ---------------------------------------------------------------- encoding --
@dataclass(frozen=True)
class Encoder:
    """Raw records -> a numeric matrix of fixed width.

    ``layout``: the raw columns used, in output order. ``vocabularies``: the
    categories of each categorical column (codes follow their order).
    One-hot puts ``len(values)`` columns (plus one ``name=<other>`` column
    with ``other``) where the column stands; ordinal puts one column holding
    the code, ``len(values)`` for a value outside the vocabulary. The width
    depends only on these parameters, never on the records.
    """

    layout: tuple[str, ...]
    kinds: Mapping[str, str]
    vocabularies: Mapping[str, Sequence[str]]
    encoding: str = "onehot"
    other: bool = False

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {', '.join(ENCODINGS)}, got {self.encoding!r}")
        missing = [n for n in self.layout if self.kinds[n] == "categorical" and n not in self.vocabularies]
        if missing:
            raise ValueError(f"categorical column {missing[0]!r} has no vocabulary")

    def _width(self, name: str) -> int:
        if self.kinds[name] == "categorical" and self.encoding == "onehot":
            return len(self.vocabularies[name]) + int(self.other)
        return 1

    @property
    def width(self) -> int:
        return sum(self._width(n) for n in self.layout)

    @property
    def feature_names(self) -> list[str]:
        out: list[str] = []
        for n in self.layout:
            if self.kinds[n] == "categorical" and self.encoding == "onehot":
                out += [f"{n}={v}" for v in self.vocabularies[n]]
                out += [f"{n}=<other>"] if self.other else []
            else:
                out.append(n)
        return out

    @property
    def onehot_columns(self) -> BoolArray:
        """Output columns that hold 0/1 indicators (never scaled)."""
        flags: list[bool] = []
        for n in self.layout:
            one = self.kinds[n] == "categorical" and self.encoding == "onehot"
            flags += [one] * self._width(n)
        return np.asarray(flags, dtype=bool)

    @property
    def passthrough(self) -> bool:
        return all(self.kinds[n] == "numeric" for n in self.layout)

    def codes(self, table: RawTable, name: str) -> IntArray:
        """Index of each value in the vocabulary; ``len(values)`` outside it."""
        vocab = self.vocabularies[name]
        outside = len(vocab)
        lookup = {v: i for i, v in enumerate(vocab)}
        values = table.column(name)
        # one hash lookup a value (sorting the column's text to find its distinct values cost
        # ~8 ms a column of Adult); a value that misses is looked up again as numpy's
        # ``astype(str)`` reads it, its text without trailing NULs, which the codes always were
        codes = np.fromiter(map(lookup.get, values, repeat(outside)), dtype=np.int64, count=len(values))
        for i in np.flatnonzero(codes == outside):
            codes[i] = lookup.get(str(values[i]).rstrip("\x00"), outside)
        return codes

    def transform(self, table: RawTable, *, copy: bool = True) -> Matrix:
        """The encoded matrix of ``table``; ``copy=False`` lets numeric-only records pass as
        they are (the caller then must not write into the result)."""
        if self.passthrough and self.layout == table.numeric_names:
            # numeric-only data keeps its (sparse) type
            return table.numeric.copy() if copy else table.numeric
        n = table.n_rows
        X = np.zeros((n, self.width))
        at = 0
        for name in self.layout:
            w = self._width(name)
            if self.kinds[name] == "numeric":
                X[:, at] = table.column(name)
            else:
                code = self.codes(table, name)
                if self.encoding == "ordinal":
                    X[:, at] = code
                else:
                    k = len(self.vocabularies[name])
                    hit = np.flatnonzero(code < k) if not self.other else np.arange(n)
                    X[hit, at + code[hit]] = 1.0
            at += w
        return X

    def describe(self, sources: Mapping[str, str]) -> dict[str, object]:
        return {
            "step": "encode",
            "encoding": self.encoding,
            "other_bucket": self.other,
            "width": self.width,
            "categorical": {
                n: {"values": list(self.vocabularies[n]), "source": sources.get(n)}
                for n in self.layout
                if self.kinds[n] == "categorical"
            },
            "columns": list(self.layout),
        }


# ----------------------------------------------------------------- scaling --
@dataclass(frozen=True, eq=False)
class Scaler:
    """Per-feature scaling of the encoded matrix (one-hot indicators are left alone).

    - ``minmax``: clip each feature to ``[lo, hi]``, then map it linearly to
      ``[lower, upper]``; every output lies in ``[lower, upper]``;
    - ``clip``: clip each feature to ``[lo, hi]``, no rescaling;
    - ``standard``: ``(x - mean) / scale``;
    - ``none``.

    ``columns`` are the output columns scaled. A fitted zero range (a
    constant feature) maps the feature to ``lower`` (minmax) or 0 (standard)
    and is listed in ``constant``.
    """

    kind: str
    columns: IntArray
    lo: FloatArray | None = None  # minmax, clip
    hi: FloatArray | None = None  # minmax, clip
    mean: FloatArray | None = None  # standard
    scale: FloatArray | None = None  # standard
    lower: float = 0.0
    upper: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in SCALINGS:
            raise ValueError(f"scaling must be one of {', '.join(SCALINGS)}, got {self.kind!r}")
        if not self.lower < self.upper:
            raise ValueError(f"range must have lower < upper, got [{self.lower:g}, {self.upper:g}]")

    @property
    def constant(self) -> IntArray:
        if self.kind in ("minmax", "clip"):
            lo, hi = self._range()
            return self.columns[hi <= lo]
        if self.kind == "standard":
            _, scale = self._standard()
            return self.columns[scale <= 0]
        return self.columns[:0]

    def _keeps_zero(self) -> bool:
        """Whether every scaled feature maps 0 to 0 (then a sparse matrix stays sparse)."""
        if self.kind == "none":
            return True
        return bool(np.all(self._column(np.zeros(self.columns.size), slice(None)) == 0))

    def _range(self) -> tuple[FloatArray, FloatArray]:
        """``(lo, hi)`` of a minmax or clip scaler (fitted with them)."""
        assert self.lo is not None and self.hi is not None, f"a {self.kind} scaler without bounds"
        return self.lo, self.hi

    def _standard(self) -> tuple[FloatArray, FloatArray]:
        """``(mean, scale)`` of a standard scaler (fitted with them)."""
        assert self.mean is not None and self.scale is not None, "a standard scaler unfitted"
        return self.mean, self.scale

    def transform(self, X: Matrix, *, copy: bool = True) -> Matrix:
        """``X`` scaled, in a new matrix (never written in place; ``copy=False``: ``X`` itself
        when nothing is scaled)."""
        if self.kind == "none" or self.columns.size == 0:
            return X.copy() if copy else X
        if sp.issparse(X):
            if not self._keeps_zero():
                X = X.toarray()
            else:
                X = X.tocsc(copy=True)
                for k, j in enumerate(self.columns):
                    a, b = X.indptr[j], X.indptr[j + 1]
                    X.data[a:b] = self._column(X.data[a:b], k)
                return X.tocsr()
        X = np.array(X, dtype=np.float64, copy=True)
        X[:, self.columns] = self._column(X[:, self.columns], slice(None))
        return X

    def _column(self, v: FloatArray, k: int | slice) -> FloatArray:
        """Values ``v`` of scaled feature ``k`` (or of all, ``k = slice(None)``) scaled."""
        if self.kind == "standard":
            mean, scale = self._standard()
            s = scale[k]
            safe = np.where(s > 0, s, 1.0)
            return np.where(s > 0, (v - mean[k]) / safe, 0.0)
        lo_all, hi_all = self._range()
        lo, hi = lo_all[k], hi_all[k]
        v = np.clip(v, lo, hi)
        if self.kind == "clip":
            return v
        span = hi - lo
        safe = np.where(span > 0, span, 1.0)
        return np.where(span > 0, self.lower + (v - lo) * ((self.upper - self.lower) / safe), self.lower)

    def describe(self, names: Sequence[str], source: str | None) -> dict[str, object]:
        out: dict[str, object] = {
            "step": "scale",
            "scaling": self.kind,
            "source": source,
            "features": [names[j] for j in self.columns],
        }
        if self.kind in ("minmax", "clip"):
            out["bounds"] = [[float(a), float(b)] for a, b in zip(*self._range())]
        if self.kind == "minmax":
            out["range"] = [self.lower, self.upper]
        if self.kind == "standard":
            mean, scale = self._standard()
            out["mean"] = [float(m) for m in mean]
            out["scale"] = [float(s) for s in scale]
        const = self.constant
        if const.size:
            out["constant_features"] = [names[j] for j in const]
        return out


@dataclass(frozen=True, eq=False)
class Pipeline:
    """The fitted column steps (encode, scale); the row steps ride along for the setting."""

    encoder: Encoder
    scaler: Scaler
    rows: RowSteps
    sources: dict[str, object]  # step or column -> source (categories: column -> source)

    def columns(self, table: RawTable) -> Matrix:
        """Encode and scale ``table``: the column steps only."""
        return self.scaler.transform(self.encoder.transform(table))

    @property
    def feature_names(self) -> list[str]:
        return self.encoder.feature_names

    def describe(self, unit: str) -> list[dict[str, object]]:
        names = self.feature_names
        # datasets/stage.py writes them: column -> source, and the scaling's source
        categories = cast("dict[str, str]", self.sources.get("categories", {}))
        scaling = cast("str | None", self.sources.get("scaling"))
        steps = [self.encoder.describe(categories)]
        steps.append(self.scaler.describe(names, scaling))
        return steps + self.rows.describe(unit)
