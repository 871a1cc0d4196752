"""One party's own file, read by that party alone: :func:`load_party`.

A party file is a CSV with an ID column (the label holder's also has the label
column), or a LIBSVM file whose lines start with the ID (``ID [label]
index:value ...``). :func:`load_party` reads the party's training file and its
test file, if it has one, and nothing else: on Dask and in the party services
each party's process calls it with its own :class:`~.spec.PartySpec`.

The reading follows the rules of every user file (:mod:`vfl.datasets.userfiles`,
:mod:`vfl.datasets.record_parsers`): a run that claims no guarantee stops at the first
bad cell with one line naming the party, line and column; a run that claims one
reads every line as one record and a missing or malformed field takes its
public default. The IDs are checked in both: a missing ID, an ID twice, or an
ID of the wrong type is one line naming the party (a record without a usable ID
cannot be aligned). IDs are compared as integers when every one is an integer
(``007`` is ``7``), else as the text written (leading and trailing blanks
dropped).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable, Schema
from vfl.datasets.record_parsers import (
    Columns,
    LibsvmRules,
    number,
    parse_delimited,
    parse_libsvm,
    record_lines,
)
from vfl.datasets.stage import refuse_private
from vfl.datasets.userfiles import UserFile, read_user_file
from vfl.datasets.userfiles.columns import _parse_column, _parse_labels, _read_csv

from .party_spec import PartySpec, resolve
from .schema import load_schema

__all__ = ["PartyPart", "PartyTable", "load_party", "canonical_ids"]

_INTEGER = re.compile(r"[+-]?\d+")


@dataclass(frozen=True, eq=False)
class PartyPart:
    """One file's records as its party holds them: IDs (canonical text, file order), the
    feature columns, the labels (label holder only)."""

    ids: np.ndarray  # object array of str
    table: RawTable
    y: np.ndarray | None
    file: UserFile
    repairs: dict | None = None  # a private reading: how many fields took a default

    @property
    def n_rows(self) -> int:
        return int(self.ids.size)


@dataclass(frozen=True, eq=False)
class PartyTable:
    """What :func:`load_party` returns: the party's training part, its test part (None when
    the test rows are held out of the aligned rows), the type of its IDs, its declared schema
    and the label mapping (label holder)."""

    spec: PartySpec
    id_type: str  # "integer" or "string"
    train: PartyPart
    test: PartyPart | None
    schema: Schema | None = None
    label_mapping: dict | None = None
    #: the public parameters read from the schema, for the record
    notes: dict = field(default_factory=dict)


def _who(spec: PartySpec, f: UserFile | None = None) -> str:
    """``party 2 (telco.csv)``, naming the test file when it is the one read."""
    return spec.who if f is None or f.path.name == resolve(spec.path).name else f"party {spec.index} ({f.path.name})"


def canonical_ids(
    spec: PartySpec, f: UserFile, texts: list[str], lines: np.ndarray, declared: str
) -> tuple[np.ndarray, str]:
    """(canonical IDs, their type) of one file's ID texts; a missing, mistyped or repeated
    ID is one line naming the party and the file lines."""
    who = _who(spec, f)
    empty = next((i for i, t in enumerate(texts) if not t), None)
    if empty is not None:
        raise DataError(f"{who} line {lines[empty]}: missing ID" + (f" (column {spec.id!r})" if spec.id else ""))
    integer = [bool(_INTEGER.fullmatch(t)) for t in texts]
    kind = "integer" if all(integer) else "string"
    if declared == "integer" and kind != "integer":
        i = integer.index(False)
        raise DataError(
            f'{who} line {lines[i]}: ID {texts[i]!r} is not an integer (data.alignment.id_type = "integer")'
        )
    if declared == "string":
        kind = "string"
    ids = np.array([str(int(t)) for t in texts] if kind == "integer" else texts, dtype=object)
    dup = pd.Series(ids).duplicated(keep=False).to_numpy()
    if dup.any():
        first = np.flatnonzero(dup)[0]
        again = np.flatnonzero(ids == ids[first])
        raise DataError(
            f"{who}: ID {texts[first]!r} occurs more than once (lines "
            f"{', '.join(str(lines[j]) for j in again[:5])}); every row of a party "
            "file needs its own ID"
        )
    return ids, kind


# --------------------------------------------------------------------------- CSV --


def _header(spec: PartySpec, f: UserFile) -> list[str]:
    first = f.content.split(b"\n", 1)[0].decode("utf-8-sig", "replace").rstrip("\r")
    names = [n.strip() for n in next(csv.reader([first], delimiter=spec.delimiter, skipinitialspace=True), [])]
    if not any(names):
        raise DataError(f"{_who(spec, f)}: the first line names no columns")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise DataError(f"{_who(spec, f)}: column {twice[0]!r} appears more than once in the header line")
    return names


def _columns(spec: PartySpec, f: UserFile, names: list[str], schema: Schema | None) -> list[str]:
    """The feature columns, checked against the file's header (and the schema)."""
    who = _who(spec, f)
    need = [spec.id] + ([spec.label] if spec.label else [])
    for key, col in zip(("ID", "label"), need):
        if col not in names:
            raise DataError(
                f"{who}: {key} column {col!r} not found; columns are: "
                f"{', '.join(map(repr, names[:12]))}{' ...' if len(names) > 12 else ''}"
            )
    features = list(spec.features) if spec.features is not None else [n for n in names if n not in need]
    missing = [c for c in features if c not in names]
    if missing:
        raise DataError(
            f"{who}: feature column(s) {', '.join(map(repr, missing))} not in the file (its config names them)"
        )
    if not features:
        raise DataError(f"{who}: no feature columns besides the ID" + (" and the label" if spec.label else ""))
    stray = [c for c in spec.categorical_columns if c not in features]
    if stray:
        raise DataError(f"{who}: categorical_columns lists {stray[0]!r}, not a feature column")
    if schema is not None:
        declared = {c.name for c in schema.columns}
        absent = [c for c in features if c not in declared]
        if absent:
            raise DataError(f"{who}: column(s) {', '.join(map(repr, absent))} are not in the schema {schema.citation}")
    return features


def _label_of(labels):
    table = {(float(v) if not isinstance(v, str) else v): s for v, s in zip(labels, (-1.0, 1.0))}

    def label_of(text):
        hit = table.get(text)
        if hit is None:
            v = number(text)
            hit = None if v is None else table.get(v)
        return hit

    return label_of


def _strict_csv(spec, f, names, features, categorical, labels):
    """pandas' reading: the first bad cell stops the run, named by line and column."""
    who = _who(spec, f)
    frame = _read_csv(f, spec.delimiter, [spec.id, *([spec.label] if spec.label else []), *categorical])
    problems, cols = [], []
    for j, name in enumerate(features):
        col, problem = _parse_column(name, frame[name], name in categorical, True)
        cols.append(col)
        if problem:
            problems.append((problem[0], j + 1, name, problem[1]))
    y_raw = None
    if spec.label:
        y_raw, problem = _parse_labels(frame[spec.label], None)
        if problem:
            problems.append((problem[0], 0, spec.label, problem[1]))
    if problems:
        row, _, name, message = min(problems, key=lambda p: (p[0], p[1]))
        raise DataError(f"{who} line {row + 2}, column {name!r}: {message}")
    ids = frame[spec.id].astype(str).str.strip().tolist()
    kinds = tuple(c.kind for c in cols)
    num = [c.values for c in cols if c.kind == "numeric"]
    cat = [c.values for c in cols if c.kind == "categorical"]
    table = RawTable(
        names=tuple(features),
        kinds=kinds,
        numeric=np.column_stack(num) if num else np.zeros((len(ids), 0)),
        categorical=np.column_stack(cat) if cat else None,
    )
    return ids, table, y_raw, None


def _private_csv(spec, f, names, features, categorical, labels):
    """Every line after the header one record, read alone (a private run)."""
    at = {n: j for j, n in enumerate(names)}
    numeric = tuple((at[c], c) for c in features if c not in categorical)
    cols = Columns(
        n_fields=len(names),
        numeric=numeric,
        categorical=tuple((at[c], c) for c in features if c in categorical),
        label=at[spec.label] if spec.label else None,
        label_of=_label_of(labels) if spec.label else (lambda _: None),
        fill={c: spec.fill.get(c, 0.0) for _, c in numeric},
    )
    lines = record_lines(f.content, header=1)
    d = spec.delimiter

    def split(s):
        return next(csv.reader([s], delimiter=d, skipinitialspace=True), [])

    num, cat, y, _, rep = parse_delimited(lines, split, cols)
    ids = []
    for raw in lines:
        fields = split(raw.decode("utf-8", "replace").rstrip("\r"))
        ids.append(fields[at[spec.id]].strip() if len(fields) == len(names) else "")
    kinds = tuple("categorical" if c in categorical else "numeric" for c in features)
    table = RawTable(names=tuple(features), kinds=kinds, numeric=num, categorical=cat if cat.shape[1] else None)
    return ids, table, (y if spec.label else None), rep.describe()


def _read_csv_part(spec: PartySpec, f: UserFile, strict: bool, schema, labels, features=None):
    names = _header(spec, f)
    feats = _columns(spec, f, names, schema) if features is None else features
    missing = [c for c in feats if c not in names]
    if missing:
        raise DataError(
            f"{_who(spec, f)}: column(s) {', '.join(map(repr, missing))} of the training file are not in this file"
        )
    categorical = set(spec.categorical_columns)
    if schema is not None:
        categorical |= {c.name for c in schema.columns if c.kind == "categorical"}
    if not record_lines(f.content, header=1):
        raise DataError(f"{_who(spec, f)}: empty file (a header line but no data rows)")
    reader = _strict_csv if strict else _private_csv
    ids, table, y_raw, repairs = reader(spec, f, names, feats, categorical, labels)
    lines = np.arange(len(ids)) + 2
    return ids, lines, table, y_raw, repairs, feats


# ------------------------------------------------------------------------ LIBSVM --


def _libsvm_lines(spec: PartySpec, f: UserFile):
    """(ID texts, file line numbers, the lines without their ID): ``ID [label] i:v ...``."""
    lines = record_lines(f.content)
    ids, rest, numbers_ = [], [], []
    for k, raw in enumerate(lines):
        tokens = raw.split(b"#", 1)[0].split()
        if not tokens:
            continue  # a blank or comment line: no ID, so no record to align
        ids.append(tokens[0].decode("utf-8", "replace").strip())
        body = b" ".join(tokens[1:])
        rest.append(body if spec.label_holder else b"0 " + body)
        numbers_.append(k + 1)
    if not ids:
        raise DataError(f"{_who(spec, f)}: empty file (no data lines)")
    return ids, np.asarray(numbers_), rest


def _read_libsvm_part(spec: PartySpec, f: UserFile, strict: bool, labels):
    ids, lines, rest = _libsvm_lines(spec, f)
    base = 0 if spec.zero_based else 1
    first, last = spec.indices or (base, None)
    if strict:
        from sklearn.datasets import load_svmlight_file  # lazy: start-up (sklearn.datasets, 1.0 s)

        try:
            X, y = load_svmlight_file(io.BytesIO(b"\n".join(rest)), dtype=np.float64, zero_based=True)
        except (ValueError, RuntimeError, IndexError, OverflowError, TypeError) as exc:
            raise DataError(f"{_who(spec, f)}: malformed LIBSVM party file ({' '.join(str(exc).split())})") from None
        X = X.tocsr()
        if X.shape[0] != len(ids):
            raise DataError(f"{_who(spec, f)}: malformed LIBSVM party file (a line without fields)")
        if not np.all(np.isfinite(X.data)) or not np.all(np.isfinite(y)):
            raise DataError(f"{_who(spec, f)}: a value or label is not a finite number")
        last = last if last is not None else max(first, X.shape[1] - 1)
        if X.nnz and (X.indices.min() < first or X.indices.max() > last):
            k = int(np.flatnonzero((X.indices < first) | (X.indices > last))[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            raise DataError(
                f"{_who(spec, f)} line {lines[row]}: feature index "
                f"{X.indices[k]} is outside the party's indices [{first}, {last}]"
            )
        X = sp.csr_matrix((X.data, X.indices - first, X.indptr), shape=(len(ids), last - first + 1))
        repairs = None
    else:
        if last is None:
            raise refuse_private(
                f"{spec.who}: the width would be read off the records", "indices = [first, last] in the party's table"
            )
        label_values = labels if spec.label_holder else [0, 1]
        rules = LibsvmRules(
            last + 1 - base, not spec.zero_based, {float(label_values[0]): -1.0, float(label_values[1]): 1.0}
        )
        X, y, rep = parse_libsvm(rest, rules)
        X = X[:, first - base :].tocsr()
        repairs = rep.describe()
    names = tuple(f"f{j}" for j in range(first, first + X.shape[1]))
    return ids, lines, RawTable.from_matrix(X, names), (y if spec.label_holder else None), repairs


# -------------------------------------------------------------------------- labels --


def _labels(spec: PartySpec, y_raw, labels, strict: bool):
    """(-1 / +1 labels, mapping); undeclared labels are inferred only in a strict reading."""
    if y_raw is None:
        return None, None
    if not strict:
        return np.asarray(y_raw, dtype=float), {
            "-1": labels[0],
            "+1": labels[1],
            "rule": "labels; any other label is -1",
        }
    y_raw = np.asarray(y_raw)
    numeric = y_raw.dtype.kind == "f"
    if labels is not None:
        values = [float(v) if numeric else str(v) for v in labels]
        unknown = sorted(set(y_raw.tolist()) - set(values), key=str)
        if unknown:
            raise DataError(f"{spec.who}: label {unknown[0]!r} is not among labels = {list(labels)}")
        neg, pos, rule = labels[0], labels[1], "labels"
    else:
        classes = np.unique(y_raw)
        if classes.size != 2:
            raise DataError(
                f"{spec.who}: {classes.size} distinct labels; binary "
                "classification needs exactly two (declare labels = [negative, "
                "positive])"
            )
        neg, pos, rule = classes[0], classes[1], "larger label is +1"
        if not numeric or {float(neg), float(pos)} not in ({0.0, 1.0}, {-1.0, 1.0}):
            raise DataError(
                f"{spec.who}: labels {neg!r} and {pos!r} are neither {{0, 1}} nor "
                "{-1, +1}: declare labels = [negative, positive]"
            )
        values = [neg, pos]
    y = np.where(y_raw == values[1], 1.0, -1.0)
    return y, {"-1": _as_json(neg), "+1": _as_json(pos), "rule": rule}


def _as_json(v):
    return float(v) if isinstance(v, (int, float, np.floating)) else str(v)


# --------------------------------------------------------------------------- entry --


def load_party(spec: PartySpec, *, strict: bool = True, id_type: str = "auto") -> PartyTable:
    """Read one party's own file (and its test file): IDs, feature columns, labels.

    ``strict=False`` (a run that claims a guarantee): every line is a record and a malformed
    field takes its public default; the labels, a LIBSVM file's indices and the categorical
    columns must be declared. The IDs are checked in both readings.
    """
    schema = load_schema(spec) if spec.schema else None
    labels = spec.labels
    if spec.label_holder and not strict and labels is None:
        raise refuse_private(
            f"{spec.who}: the two label values would be read off the records",
            "labels = [negative, positive] in party 1's table",
        )
    parts, kinds, mapping = [], set(), None
    features = None
    for path in (spec.path, spec.test_path):
        if path is None:
            parts.append(None)
            continue
        f = read_user_file(resolve(path), strict=strict)
        if spec.format == "csv":
            ids, lines, table, y_raw, repairs, features = _read_csv_part(spec, f, strict, schema, labels, features)
        else:
            ids, lines, table, y_raw, repairs = _read_libsvm_part(spec, f, strict, labels)
            if parts and parts[0] is not None and table.names != parts[0].table.names:
                table = _widen(table, parts[0].table.names)
        canon, kind = canonical_ids(spec, f, ids, lines, id_type)
        kinds.add(kind)
        y, m = _labels(spec, y_raw, labels if mapping is None else [mapping["-1"], mapping["+1"]], strict)
        mapping = mapping or m
        if parts and parts[0] is not None and table.kinds != parts[0].table.kinds:
            table = _as_kinds(table, parts[0].table)
        parts.append(PartyPart(ids=canon, table=table, y=y, file=f, repairs=repairs))
    kind = "string" if "string" in kinds else "integer"
    if kind == "string" and len(kinds) == 2:  # a test file of integers beside string IDs
        parts = [
            p
            if p is None
            else PartyPart(np.array([str(i) for i in p.ids], dtype=object), p.table, p.y, p.file, p.repairs)
            for p in parts
        ]
    return PartyTable(spec=spec, id_type=kind, train=parts[0], test=parts[1], schema=schema, label_mapping=mapping)


def _widen(table: RawTable, names) -> RawTable:
    """A LIBSVM test part on the training part's columns (a narrower file is padded)."""
    X = table.numeric
    if X.shape[1] > len(names):
        X = X[:, : len(names)]
    return RawTable.from_matrix(sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], len(names))), names)


def _as_kinds(table: RawTable, like: RawTable) -> RawTable:
    """A CSV test part read with the training part's column kinds (a column categorical in
    training stays categorical)."""
    num, cat = [], []
    for name, kind in zip(like.names, like.kinds):
        col = table.column(name)
        if kind == "numeric":
            num.append(np.asarray(col, dtype=float))
        else:
            cat.append(np.array([f"{v:g}" if isinstance(v, float) else str(v) for v in col], dtype=object))
    n = table.n_rows
    return RawTable(
        like.names, like.kinds, np.column_stack(num) if num else np.zeros((n, 0)), np.column_stack(cat) if cat else None
    )
