"""``vfl datasets inspect``: a user file's format, index base, columns and a suggested
partition among parties."""

from __future__ import annotations

import numbers
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import fit_stage
from vfl.datasets.userfiles.columns import _parse_csv, _read_csv, _select_columns
from vfl.datasets.userfiles.label_rules import _binary_labels
from vfl.datasets.userfiles.libsvm import _libsvm_columns, _parse_libsvm, index_base
from vfl.datasets.userfiles.options import USER_FILE_OPTIONS, _csv_options
from vfl.datasets.userfiles.previews import _preview, _show
from vfl.datasets.userfiles.reading import _EXTENSIONS, read_user_file


def guess_format(path: str | os.PathLike) -> tuple[str, str]:
    """``(format, delimiter)`` from the name: ``.csv`` / ``.tsv`` (before any
    compression suffix) are CSV, anything else LIBSVM."""
    name = Path(path).name.lower()
    for suffix in _EXTENSIONS:
        name = name.removesuffix(suffix)
    if name.endswith(".tsv"):
        return "csv", "\t"
    return ("csv", ",") if name.endswith(".csv") else ("libsvm", ",")


def suggest_partition(widths: Sequence[int], n_parties: int) -> list[int]:
    """Column counts for ``[partition] columns``: near-equal shares, cut only
    between blocks (``widths`` are the encoded widths of the file's columns,
    so a one-hot block is never split between parties). Party 1 gets the
    larger share on a tie."""
    widths = [int(w) for w in widths]
    if isinstance(n_parties, bool) or not isinstance(n_parties, numbers.Integral) or n_parties < 1:
        raise DataError(f"the number of parties must be an integer >= 1, got {n_parties!r}")
    if len(widths) < n_parties:
        raise DataError(
            f"cannot split {len(widths)} column(s) among {n_parties} parties: every party needs at least one"
        )
    ends = np.cumsum(widths)
    total, edges, first = int(ends[-1]), [0], 0
    for k in range(1, n_parties):
        # Party k ends after block b; leave one block for each later party.
        candidates = ends[first : len(widths) - (n_parties - k)]
        gap = np.abs(candidates - k * total / n_parties)
        b = first + int(np.flatnonzero(gap == gap.min())[-1])
        edges.append(int(ends[b]))
        first = b + 1
    edges.append(total)
    return [b - a for a, b in zip(edges[:-1], edges[1:])]


def _column_stats(X) -> dict:
    """Shape, sparsity and value ranges of a dense or CSR matrix (all rows)."""
    n, d = X.shape
    if sp.issparse(X):
        nnz = int(X.count_nonzero())
        lo = X.min(axis=0).toarray().ravel()
        hi = X.max(axis=0).toarray().ravel()
        not_binary = (X.data != 0) & (X.data != 1)
        binary = np.bincount(X.indices[not_binary], minlength=d) == 0
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    else:
        nnz = int(np.count_nonzero(X))
        lo, hi = X.min(axis=0), X.max(axis=0)
        binary = np.all((X == 0) | (X == 1), axis=0)
        norms = np.linalg.norm(X, axis=1)
    return {
        "n_rows": n,
        "n_features": d,
        "nnz": nnz,
        "density": nnz / (n * d),
        "min": float(lo.min()),
        "max": float(hi.max()),
        "binary_columns": int(binary.sum()),
        "n_constant_columns": int(np.sum(lo == hi)),
        "constant_columns": np.flatnonzero(lo == hi)[:20].tolist(),  # the first few
        "max_row_norm": float(norms.max()),
        "mean_row_norm": float(norms.mean()),
    }


def inspect_file(
    path: str | os.PathLike, fmt: str | None = None, *, label: str | None = None, delimiter: str | None = None
) -> dict:
    """Describe a data file the way ``load_raw`` would read it.

    The file goes through the same reading, parsing and validation as
    :func:`load_libsvm` / :func:`load_csv` (so it fails with the same
    DataError), but all rows are described and categories are taken from the
    whole file. Returns a JSON-ready dict: ``file`` (provenance record),
    ``format``, ``options`` (the ``[data]`` options that reproduce this
    reading), ``labels`` (raw value, mapped value and count per class),
    ``columns`` (name, kind, encoded width and observed values or range per
    column of the file, in order; None for LIBSVM, whose columns are its
    features), ``n_rows``, ``n_features``, ``nnz``, ``density``, ``min`` /
    ``max`` over all entries, ``binary_columns`` (how many hold only 0 and
    1), ``n_constant_columns`` and the first 20 ``constant_columns``
    (0-based), and ``max_row_norm`` / ``mean_row_norm`` (l2).
    """
    guessed, guessed_delimiter = guess_format(path)
    fmt = fmt or guessed
    if fmt not in USER_FILE_OPTIONS:
        raise DataError(f"unknown format {fmt!r}; use libsvm or csv")
    f = read_user_file(path)
    if fmt == "libsvm":
        if label is not None:
            raise DataError("--label applies to CSV files; a LIBSVM file's label is the first value of each line")
        X, y_raw = _parse_libsvm(f)
        one_based, why = index_base(f, X)
        X = _libsvm_columns(f, X, one_based, None)
        if X.shape[1] == 0:
            raise DataError(f"{f.path}: no features (every line holds only a label)")
        # explicit, so that a private run's width and index base depend on no record
        options = {"path": str(f.path), "n_features": X.shape[1], "zero_based": not one_based}
        columns = None  # one per feature: the widths are all 1
        extra = {"indices": "one-based" if one_based else "zero-based", "indices_why": why}
    else:
        if label is None:
            frame = _read_csv(f, delimiter or guessed_delimiter, [])
            raise DataError(f"{f.path}: a CSV file needs --label COLUMN; columns are: {_preview(list(frame.columns))}")
        opts = _csv_options({"label": label, "delimiter": delimiter or guessed_delimiter})
        frame = _read_csv(f, opts["delimiter"], [label])
        features = _select_columns(f, frame, label, None, set())
        parsed, y_raw = _parse_csv(f, frame, label, features, set(), True, None)
        rows = np.arange(frame.shape[0])
        y0 = np.where(np.arange(rows.size) % 2 == 0, 1.0, -1.0)  # labels play no part here
        names = tuple(c.name for c in parsed)
        num = [c.values for c in parsed if c.kind == "numeric"]
        cat = [c.values for c in parsed if c.kind == "categorical"]
        table = RawTable(
            names=names,
            kinds=tuple(c.kind for c in parsed),
            numeric=np.column_stack(num) if num else np.zeros((rows.size, 0)),
            categorical=np.column_stack(cat) if cat else None,
        )
        raw = RawDataset(name="csv", train=table, y_train=y0, test=table, y_test=y0)
        stage = fit_stage(raw, {}, private=False)
        X = stage.columns(table)
        options = {"path": str(f.path), "label": label}
        if opts["delimiter"] != ",":
            options["delimiter"] = opts["delimiter"]
        detected = [c.name for c in parsed if c.kind == "categorical"]
        if detected:
            options["categorical_columns"] = detected
        columns = []
        for c in parsed:
            entry = {"name": c.name, "kind": c.kind, "width": stage.encoder._width(c.name)}
            if c.kind == "categorical":
                entry["values"] = list(stage.encoder.vocabularies[c.name])
            else:
                entry["range"] = [float(c.values.min()), float(c.values.max())]
            columns.append(entry)
        extra = {"categorical": {c: len(stage.encoder.vocabularies[c]) for c in detected}}
    classes = np.unique(y_raw)
    chosen = None  # two values other than {0, 1} / {-1, +1}: shown as larger = +1, to be set
    if classes.size == 2 and (y_raw.dtype.kind != "f" or set(classes.tolist()) not in ({0.0, 1.0}, {-1.0, 1.0})):
        chosen = classes[1]
    y, _, mapping = _binary_labels(f, y_raw, chosen)
    if chosen is not None:
        mapping["rule"] = f"not read as such: set label_positive = {_show(chosen)} or labels = [negative, positive]"
    labels = [{"raw": mapping[key], "value": int(key), "count": int(np.sum(y == int(key)))} for key in ("-1", "+1")]
    return {
        "file": f.record(),
        "format": fmt,
        "options": options,
        "labels": labels,
        "label_rule": mapping["rule"],
        "columns": columns,
        **extra,
        **_column_stats(X),
    }
