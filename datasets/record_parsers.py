"""Records of a private file: every line is one record, and every record one bounded row.

A run that claims a guarantee reads its files with these parsers, not the
strict ones a user is better served by (:mod:`vfl.datasets.loaders`,
:mod:`vfl.datasets.userfiles`, which stop at the first bad field with one
line naming it). Here nothing a record holds can stop the run, drop the
record or touch another record:

- **the records** are the file's lines after its header (a CSV's column names,
  adult.test's ``|1x3 Cross validator``); a final newline adds no record, and a
  registry file must hold its documented record count (:func:`record_lines`).
  N is therefore fixed by the relation and public;
- **each record is parsed alone** (a per-record function): a field that is
  missing (empty, ``?``) or malformed (not a number, NaN, inf, an index
  outside the width, a repeated index) takes a public default: a categorical
  field the empty value, outside every vocabulary, which the stage sends to
  the ``other`` bucket (or an all-zero block); a numeric field its ``fill``
  constant (the config's, else the schema's lower bound, else 0); a LIBSVM
  entry is left out (the feature is 0); a label outside the declared two
  takes the default label (the negative class). A record with the wrong
  number of fields, a blank line or a comment line has every field missing.

How many fields took a default depends on the records: those counts go under
``provenance["diagnostic"]`` only.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

__all__ = ["MISSING", "Repairs", "record_lines", "number", "LibsvmRules", "parse_libsvm", "Columns", "parse_delimited"]

#: the value a missing or malformed categorical field becomes: outside every vocabulary (a
#: vocabulary holds non-empty strings only), so the stage's ``other`` rule applies to it
MISSING = ""


def record_lines(content: bytes, *, header: int = 0, count: int | None = None) -> list[bytes]:
    """The records of ``content``: its lines after ``header`` lines; a final newline adds no
    record.

    With ``count`` (a documented record count) the file must hold that many
    records, then nothing but empty lines (adult.data ends with one): else a
    ValueError. That checks the file's line structure, which the relation
    fixes, never what a record holds.
    """
    lines = content.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    body = lines[header:]
    if count is None:
        return body
    if len(body) < count or any(line.strip() for line in body[count:]):
        raise ValueError(f"{len(body)} lines after {header} header line(s), where {count} records are documented")
    return body[:count]


def number(text) -> float | None:
    """A finite float from ``text`` (str or bytes), or None: not a number, NaN or inf."""
    try:
        v = float(text)
    except (ValueError, TypeError):
        return None
    # float() also reads "1_000" and "infinity"; neither is a number a table holds
    if not math.isfinite(v) or ("_" in text if isinstance(text, str) else b"_" in text):
        return None
    return v


@dataclass
class Repairs:
    """What took a default in one file (data-dependent: diagnostic only)."""

    records: int = 0  # records with a missing or malformed field (defaulted, or dropped)
    labels: int = 0  # labels missing or outside the declared two
    fields: dict = field(default_factory=dict)  # column -> fields missing or malformed
    malformed_records: int = 0  # wrong field count, blank or comment lines
    dropped: int = 0

    def add(self, name: str, n: int = 1) -> None:
        self.fields[name] = self.fields.get(name, 0) + n

    def describe(self) -> dict:
        out = {
            "records_incomplete": self.records,
            "labels_missing": self.labels,
            "fields_missing": dict(self.fields),
            "records_malformed": self.malformed_records,
        }
        if self.dropped:
            out["records_dropped"] = self.dropped
        return out


# ------------------------------------------------------------------------- LIBSVM --


@dataclass(frozen=True)
class LibsvmRules:
    """The public reading of a LIBSVM file: width, index base, the two labels (raw value ->
    -1 / +1), the default label, and whether values must be 0 or 1 (a9a's binary features)."""

    n_features: int
    one_based: bool
    labels: dict
    default_label: float = -1.0
    binary: bool = False


def _libsvm_record(line: bytes, rules: LibsvmRules):
    """(columns, values, label or None, bad entries, blank) of one line."""
    tokens = line.split(b"#", 1)[0].split()
    if not tokens:
        return [], [], None, 0, True
    raw = number(tokens[0])
    label = None if raw is None else rules.labels.get(raw)
    base, n = int(rules.one_based), rules.n_features
    entries: dict[int, float] = {}
    bad = 0
    for token in tokens[1:]:
        index, sep, text = token.partition(b":")
        try:
            j = int(index) - base
        except ValueError:
            j = -1
        v = number(text) if sep else None
        if v is None or not 0 <= j < n or j in entries or (rules.binary and v != 0.0 and v != 1.0):
            bad += 1  # left out: the feature keeps LIBSVM's implicit 0
            continue
        entries[j] = v
    cols = sorted(entries)
    return cols, [entries[j] for j in cols], label, bad, False


def _fast_libsvm(lines: Sequence[bytes], rules: LibsvmRules):
    """scikit-learn's parse, when it reads every line as :func:`_libsvm_record` would
    (one row per line, labels declared, indices in range, sorted and unique, values
    finite); else None. The result is then the per-record function's, bit for bit."""
    from sklearn.datasets import load_svmlight_file  # lazy: start-up (sklearn.datasets, 1.0 s)

    content = b"\n".join(lines)
    if not lines or b"qid" in content:  # scikit-learn reads `qid:` as a query id, not a bad entry
        return None
    try:
        X, y = load_svmlight_file(io.BytesIO(content), dtype=np.float64, zero_based=True)
    except Exception:  # any failure: the line-by-line parse decides
        return None
    X = X.tocsr()
    base, n = int(rules.one_based), rules.n_features
    if X.shape[0] != len(lines) or not np.all(np.isin(y, list(rules.labels))):
        return None  # a blank or comment line was skipped, or a label is not declared
    if X.nnz and (X.indices.min() < base or X.indices.max() >= base + n):
        return None
    if not np.all(np.isfinite(X.data)) or (rules.binary and not np.all((X.data == 0.0) | (X.data == 1.0))):
        return None
    X = sp.csr_matrix((X.data, X.indices - base, X.indptr), shape=(len(lines), n))
    return X, np.array([rules.labels[v] for v in y.tolist()], dtype=np.float64)


#: lines a block: each block takes the fast parse or is parsed record by record, so a hostile
#: record costs its block (~17 ms), not the file (~0.5 s on a9a); blocks of a clean file
#: parse as fast as the whole file
BLOCK = 1024


def parse_libsvm(lines: Sequence[bytes], rules: LibsvmRules) -> tuple[sp.csr_matrix, np.ndarray, Repairs]:
    """One sparse row and one label per line (see the module docstring); the fast parse
    where it applies, block by block (the rows are the per-record function's either way,
    bit for bit)."""
    repairs = Repairs()
    indptr, indices, data = [np.zeros(1, dtype=np.int64)], [np.zeros(0, np.int32)], [np.zeros(0)]
    y = np.empty(len(lines))
    for start in range(0, len(lines), BLOCK):
        block = lines[start : start + BLOCK]
        fast = _fast_libsvm(block, rules)
        if fast is not None:
            X, y[start : start + len(block)] = fast
            cols, vals, ends = X.indices, X.data, X.indptr[1:]
        else:
            cols, vals, ends = _records(block, rules, y[start : start + len(block)], repairs)
        indices.append(np.asarray(cols, dtype=np.int32))
        data.append(np.asarray(vals, dtype=np.float64))
        indptr.append(indptr[-1][-1] + np.asarray(ends, dtype=np.int64))
    X = sp.csr_matrix(
        (np.concatenate(data), np.concatenate(indices), np.concatenate(indptr)), shape=(len(lines), rules.n_features)
    )
    return X, y, repairs


def _records(lines: Sequence[bytes], rules: LibsvmRules, y: np.ndarray, repairs: Repairs):
    """(columns, values, row ends) of ``lines`` parsed record by record; their labels go into
    ``y`` and what took a default into ``repairs``."""
    ends, indices, data = [], [], []
    for i, line in enumerate(lines):
        cols, vals, label, bad, blank = _libsvm_record(line, rules)
        indices += cols
        data += vals
        ends.append(len(indices))
        y[i] = rules.default_label if label is None else label
        repairs.labels += label is None
        repairs.malformed_records += blank
        if bad:
            repairs.add("entries", bad)
        repairs.records += bool(bad or label is None)
    return indices, data, ends


# ---------------------------------------------------------------- delimited text --


@dataclass(frozen=True)
class Columns:
    """The public reading of a delimited file's records.

    ``n_fields``: fields per record. ``numeric`` / ``categorical``: (field
    position, column name) in output order; ``fill``: column name -> the
    value a missing or malformed numeric field takes (default 0). ``label``:
    the label's position (None: the file holds no labels) and ``label_of``, raw text ->
    -1.0 / +1.0 or None (missing or undeclared: ``default_label``). ``missing``: tokens that mean
    "no value" besides the empty field (Adult's ``?``).
    """

    n_fields: int
    numeric: tuple[tuple[int, str], ...]
    categorical: tuple[tuple[int, str], ...]
    label: int | None  # None: a file without labels (a passive party's)
    label_of: Callable[[str], float | None]
    default_label: float = -1.0
    fill: dict = field(default_factory=dict)
    missing: tuple[str, ...] = ()


_BOOLEANS = {"true": 1.0, "false": 0.0}


def _undecodable(text: str) -> bool:
    return any("\udc80" <= ch <= "\udcff" for ch in text)


def _cell_number(text: str) -> float | None:
    v = number(text) if text else None
    return _BOOLEANS.get(text.lower()) if v is None else v


def parse_delimited(lines: Sequence[bytes], split: Callable[[str], list[str]], cols: Columns, *, drop: bool = False):
    """Numeric matrix, categorical matrix (object, str), labels, kept record numbers and
    repairs of ``lines``, each parsed alone by ``split`` (str -> fields; an exception is a
    malformed record).

    ``drop``: a record with any missing or malformed field (or a label outside the
    declared two) is left out instead of defaulted: the cleaned file of a paper that did
    so. Which records that is depends on each record alone.
    """
    n = len(lines)
    fills = np.array([cols.fill.get(name, 0.0) for _, name in cols.numeric], dtype=np.float64)
    num = np.tile(fills, (n, 1))
    cat = np.full((n, len(cols.categorical)), MISSING, dtype=object)
    y = np.full(n, cols.default_label)
    ok = np.ones(n, dtype=bool)
    repairs = Repairs()
    missing = set(cols.missing) | {""}
    for i, raw in enumerate(lines):
        # bytes that are not UTF-8 become lone surrogates: such a field is malformed
        line = raw.decode("utf-8", "surrogateescape").rstrip("\r")
        try:
            fields = [f.strip() for f in split(line)]
        except Exception:  # e.g. csv.Error: the record's fields cannot be told apart
            fields = None
        if fields is not None and not line.isascii():
            fields = [f if f.isascii() or not _undecodable(f) else "" for f in fields]
        if fields is None or len(fields) != cols.n_fields:
            ok[i] = False
            repairs.malformed_records += 1
            repairs.labels += 1
            continue
        for k, (pos, name) in enumerate(cols.numeric):
            v = None if fields[pos] in missing else _cell_number(fields[pos])
            if v is None:
                ok[i] = False
                repairs.add(name)
            else:
                num[i, k] = v
        for k, (pos, name) in enumerate(cols.categorical):
            if fields[pos] in missing:
                ok[i] = False
                repairs.add(name)
            else:
                cat[i, k] = fields[pos]
        if cols.label is None:
            continue
        label = None if fields[cols.label] in missing else cols.label_of(fields[cols.label])
        if label is None:
            ok[i] = False
            repairs.labels += 1
        else:
            y[i] = label
    repairs.records = int(n - ok.sum())
    if drop:
        repairs.dropped = repairs.records
        keep = np.flatnonzero(ok)
        return num[keep], cat[keep], y[keep], keep, repairs
    return num, cat, y, np.arange(n), repairs
