"""The config of party files: one ``[[data.party]]`` table per party, checked before any work.

::

    [data]
    dataset = "parties"
    test_fraction = 0.2          # or every party's test_path (rows the relation does not protect)
    stratify = false

    [data.alignment]
    min_rows = 100               # fewer aligned rows is an error naming the party
    id_type = "auto"             # auto | integer | string: what every party's IDs are

    [[data.party]]               # party 1: the label holder (active party)
    name = "bank"
    path = "bank.csv"            # CSV (plain, .gz, .bz2, .xz) or LIBSVM with the ID first
    id = "customer_id"           # CSV: the ID column
    label = "default"            # the label holder's label column
    labels = [0, 1]              # negative, positive (a private run needs them)
    features = ["age", "job"]    # default: every other column
    categorical_columns = ["job"]
    schema = "bank.schema.json"  # a Frictionless Table Schema: kinds, bounds, categories

    [[data.party]]
    name = "telco"
    path = "telco.libsvm"        # LIBSVM party file: "ID [label] index:value ..." per line
    indices = [67, 123]          # the feature indices it holds, as written (default 1..width)

Each party's table holds everything that party needs to read its own file and
nothing about another's, so that the same table is a party service's own
config (``load_party(spec)`` runs in the party's own process once parties are services).
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vfl.core.errors import ConfigError

__all__ = [
    "PARTY_KEYS",
    "DATA_KEYS",
    "ALIGNMENT_KEYS",
    "ID_TYPES",
    "PartySpec",
    "AlignmentSpec",
    "check_parties",
    "party_format",
]

#: keys of one ``[[data.party]]`` table
PARTY_KEYS = (
    "name",
    "path",
    "test_path",
    "format",
    "id",
    "label",
    "labels",
    "features",
    "categorical_columns",
    "delimiter",
    "fill",
    "indices",
    "zero_based",
    "schema",
)
#: ``[data]`` keys of ``dataset = "parties"``
DATA_KEYS = ("party", "alignment", "test_fraction", "split_seed", "stratify")
ALIGNMENT_KEYS = ("min_rows", "id_type", "seed")
ID_TYPES = ("auto", "integer", "string")
FORMATS = ("csv", "libsvm")
_COMPRESSED = (".gz", ".bz2", ".xz")


def party_format(path: str) -> str:
    """``csv`` for ``.csv`` / ``.tsv`` (before a compression suffix), ``parquet`` for
    ``.parquet``, else ``libsvm``."""
    name = Path(path).name.lower()
    for suffix in _COMPRESSED:
        name = name.removesuffix(suffix)
    if name.endswith((".csv", ".tsv")):
        return "csv"
    return "parquet" if name.endswith(".parquet") else "libsvm"


@dataclass(frozen=True)
class PartySpec:
    """One party's file and how to read it (``index`` 1 is the label holder)."""

    index: int
    name: str
    path: str
    format: str
    test_path: str | None = None
    id: str | None = None  # CSV: the ID column; LIBSVM: each line's first field
    label: str | None = None
    labels: tuple | None = None
    features: tuple[str, ...] | None = None
    categorical_columns: tuple[str, ...] = ()
    delimiter: str = ","
    fill: dict = field(default_factory=dict)
    indices: tuple[int, int] | None = None
    zero_based: bool = False
    schema: str | None = None

    @property
    def label_holder(self) -> bool:
        return self.index == 1

    @property
    def who(self) -> str:
        """How errors name this party: ``party 2 (telco.csv)``."""
        return f"party {self.index} ({Path(self.path).name})"

    def to_dict(self) -> dict:
        """The table as a config holds it (unset keys left out)."""
        out: dict[str, Any] = {"name": self.name, "path": self.path, "format": self.format}
        for key in ("test_path", "id", "label", "schema"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        for key in ("labels", "features", "indices"):
            if getattr(self, key) is not None:
                out[key] = list(getattr(self, key))
        if self.categorical_columns:
            out["categorical_columns"] = list(self.categorical_columns)
        if self.fill:
            out["fill"] = dict(self.fill)
        if self.delimiter != ",":
            out["delimiter"] = self.delimiter
        if self.format == "libsvm":
            out["zero_based"] = self.zero_based
        return out


@dataclass(frozen=True)
class AlignmentSpec:
    """``[data.alignment]``: the least number of aligned rows, the IDs' declared type, and the
    seed of the agreed order (None: a fresh key from OS entropy, as in a deployment)."""

    min_rows: int = 1
    id_type: str = "auto"
    seed: int | None = None


def _fail(where: str, message: str) -> ConfigError:
    return ConfigError(f"{where}: {message}")


def _string(where: str, key: str, value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, f"{key} must be a non-empty string, got {value!r}")
    return value


def _names(where: str, key: str, value) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise _fail(where, f"{key} must be a non-empty list of column names, got {value!r}")
    twice = sorted({v for v in value if value.count(v) > 1})
    if twice:
        raise _fail(where, f"{key} lists {twice[0]!r} twice")
    return tuple(value)


def _labels(where: str, value) -> tuple:
    def ok(v):
        if isinstance(v, str):
            return bool(v.strip())
        return isinstance(v, numbers.Real) and not isinstance(v, bool)

    if not isinstance(value, list) or len(value) != 2 or not all(map(ok, value)) or value[0] == value[1]:
        raise _fail(where, f"labels must be [negative, positive], two different label values, got {value!r}")
    return tuple(value)


def _party(i: int, table, test_fraction) -> PartySpec:
    where = f"data.party[{i}]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{where} must be a table ([[data.party]]), got {table!r}")
    unknown = [k for k in table if k not in PARTY_KEYS]
    if unknown:
        raise ConfigError(f"unknown key '{where}.{unknown[0]}'; valid keys in [[data.party]]: {', '.join(PARTY_KEYS)}")
    if "path" not in table:
        raise ConfigError(f"{where}.path is required (the party's own file)")
    path = _string(where, "path", table["path"])
    where = f"party {i} ({Path(path).name})"
    fmt = table.get("format", party_format(path))
    if fmt == "parquet":
        raise _fail(where, "Parquet party files are not read yet; write the table as CSV")
    if fmt not in FORMATS:
        raise _fail(where, f"format = {fmt!r} is not one of: {', '.join(FORMATS)}")
    spec: dict[str, Any] = {
        "index": i,
        "name": _string(where, "name", table.get("name", f"party {i}")),
        "path": path,
        "format": fmt,
    }
    if "test_path" in table:
        spec["test_path"] = _string(where, "test_path", table["test_path"])
    csv_only = ("id", "features", "categorical_columns", "delimiter", "fill")
    libsvm_only = ("indices", "zero_based")
    wrong = [k for k in (libsvm_only if fmt == "csv" else csv_only) if k in table]
    if wrong:
        other = "LIBSVM" if fmt == "csv" else "CSV"
        hint = " (a LIBSVM party file's ID is each line's first field)" if wrong[0] == "id" else ""
        raise _fail(where, f"{wrong[0]} applies to a {other} party file, not to {fmt}{hint}")
    if fmt == "csv":
        if "id" not in table:
            raise _fail(where, "id is required: the name of the ID column the parties align on")
        spec["id"] = _string(where, "id", table["id"])
        if "features" in table:
            spec["features"] = _names(where, "features", table["features"])
        if "categorical_columns" in table:
            spec["categorical_columns"] = _names(where, "categorical_columns", table["categorical_columns"])
        d = table.get("delimiter", ",")
        if not isinstance(d, str) or len(d) != 1 or d in '"\n\r':
            raise _fail(where, f"delimiter must be one character, got {d!r}")
        spec["delimiter"] = d
        fill = table.get("fill", {})
        if not isinstance(fill, Mapping) or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in fill.values()
        ):
            raise _fail(where, f"fill must be a table {{column = number}}, got {fill!r}")
        spec["fill"] = {str(k): float(v) for k, v in fill.items()}
    else:
        zb = table.get("zero_based", False)
        if not isinstance(zb, bool):
            raise _fail(where, f"zero_based must be true or false, got {zb!r}")
        spec["zero_based"] = zb
        if "indices" in table:
            ix = table["indices"]
            if (
                not isinstance(ix, list)
                or len(ix) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in ix)
                or ix[0] < int(not zb)
                or ix[1] < ix[0]
            ):
                raise _fail(
                    where,
                    f"indices must be [first, last], the feature indices the file "
                    f"holds (first >= {int(not zb)}), got {ix!r}",
                )
            spec["indices"] = (ix[0], ix[1])
    if i == 1:
        if fmt == "csv":
            if "label" not in table:
                raise _fail(where, "label is required: party 1 holds the labels (name the label column)")
            spec["label"] = _string(where, "label", table["label"])
            if spec["label"] == spec["id"]:
                raise _fail(where, f"label and id name the same column {spec['label']!r}")
        elif "label" in table:
            raise _fail(
                where, "label applies to a CSV party file: a LIBSVM label holder's label is each line's second field"
            )
        if "labels" in table:
            spec["labels"] = _labels(where, table["labels"])
    else:
        for key in ("label", "labels"):
            if key in table:
                raise _fail(where, f"{key}: only party 1, the label holder, holds the labels")
    if "schema" in table:
        spec["schema"] = _string(where, "schema", table["schema"])
    feats = spec.get("features")
    if fmt == "csv" and feats is not None:
        for key in ("id", "label"):
            if spec.get(key) in feats:
                raise _fail(where, f"features lists the {key} column {spec[key]!r}")
    return PartySpec(**spec)


def _alignment(table) -> AlignmentSpec:
    if not isinstance(table, Mapping):
        raise ConfigError(f"data.alignment must be a table, got {table!r}")
    unknown = [k for k in table if k not in ALIGNMENT_KEYS]
    if unknown:
        raise ConfigError(f"unknown key 'data.alignment.{unknown[0]}'; valid keys: {', '.join(ALIGNMENT_KEYS)}")
    rows = table.get("min_rows", 1)
    if not isinstance(rows, int) or isinstance(rows, bool) or rows < 1:
        raise ConfigError(f"data.alignment.min_rows must be an integer >= 1, got {rows!r}")
    kind = table.get("id_type", "auto")
    if kind not in ID_TYPES:
        raise ConfigError(f"data.alignment.id_type = {kind!r} is not one of: {', '.join(ID_TYPES)}")
    seed = table.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or seed < 0):
        raise ConfigError(f"data.alignment.seed must be an integer >= 0, got {seed!r}")
    return AlignmentSpec(min_rows=rows, id_type=kind, seed=seed)


def check_parties(options: Mapping) -> tuple[list[PartySpec], AlignmentSpec]:
    """The party tables and the alignment of ``[data]`` (``dataset = "parties"``), checked:
    at least two parties, party 1 the label holder, unique names, a test source."""
    unknown = [k for k in options if k not in DATA_KEYS]
    if unknown:
        raise ConfigError(
            f"unknown key 'data.{unknown[0]}' for dataset = \"parties\"; valid keys: {', '.join(DATA_KEYS)}"
        )
    tables = options.get("party")
    if not isinstance(tables, list) or len(tables) < 2:
        raise ConfigError(
            'dataset = "parties" needs at least two [[data.party]] tables, one '
            "per party, party 1 the label holder"
            + ("" if tables is None else f"; got {len(tables) if isinstance(tables, list) else tables!r}")
        )
    fraction = options.get("test_fraction")
    parties = [_party(i + 1, t, fraction) for i, t in enumerate(tables)]
    seen: dict[str, int] = {}
    for p in parties:
        if p.name in seen:
            raise ConfigError(f"{p.who}: name {p.name!r} is party {seen[p.name]}'s too")
        seen[p.name] = p.index
    with_test = [p for p in parties if p.test_path is not None]
    if fraction is not None:
        if with_test:
            raise ConfigError(f"{with_test[0].who}: give every party's test_path or data.test_fraction, not both")
        if not isinstance(fraction, numbers.Real) or isinstance(fraction, bool) or not 0.0 < fraction < 1.0:
            raise ConfigError(f"data.test_fraction must be a number in (0, 1), got {fraction!r}")
    elif len(with_test) != len(parties):
        missing = next(p for p in parties if p.test_path is None)
        raise ConfigError(
            f"{missing.who}: needs test_path (its own test file, aligned like the "
            "training files), or set data.test_fraction for every party"
        )
    for key in ("split_seed",):
        v = options.get(key)
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ConfigError(f"data.{key} must be an integer >= 0, got {v!r}")
    if not isinstance(options.get("stratify", False), bool):
        raise ConfigError(f"data.stratify must be true or false, got {options['stratify']!r}")
    return parties, _alignment(options.get("alignment", {}))


def resolve(path: str) -> Path:
    """A party's path as read: relative to the current directory, as every user file."""
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else Path.cwd() / p
