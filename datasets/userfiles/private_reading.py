"""The user's own files in a run that claims a guarantee: every line one record, read alone.

:func:`load_libsvm_records` and :func:`load_csv_records` read what
:func:`~vfl.datasets.userfiles.load_libsvm` and
:func:`~vfl.datasets.userfiles.load_csv` read, with the rules of
:mod:`vfl.datasets.record_parsers`: N is the number of lines (after a CSV's header
line; a final newline adds no record), and a missing or malformed field takes
its public default instead of stopping the run. Everything that decides how a
record is read is public and checked before any file is read: the labels
(``labels = [negative, positive]``), a LIBSVM file's width and index base,
which CSV columns are categorical (``categorical_columns``; every other
column is numeric), and an unstratified split. The CSV header line names the
columns: it is part of the file's structure, not a record.
"""

from __future__ import annotations

import csv
import numbers
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from vfl.core.errors import ConfigError, DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import RawDataset
from vfl.datasets.record_parsers import (
    Columns,
    LibsvmRules,
    number,
    parse_delimited,
    parse_libsvm,
    record_lines,
)
from vfl.datasets.stage import refuse_private
from vfl.datasets.userfiles.columns import _select_columns
from vfl.datasets.userfiles.holdout import _split, _split_record
from vfl.datasets.userfiles.options import (
    _csv_options,
    _label_positive,
    _libsvm_options,
    _path_option,
    _stratify,
    _test_options,
    declared_labels,
)
from vfl.datasets.userfiles.previews import _jsonable, _show
from vfl.datasets.userfiles.reading import UserFile, _files, read_user_file

__all__ = ["load_libsvm_records", "load_csv_records", "fill_option"]


def _needs(fmt: str, key: str, why: str) -> ConfigError:
    return refuse_private(f"{fmt}: {why}", key)


def _labels(fmt: str, options: Mapping) -> tuple[list, dict]:
    """The declared labels and the mapping record; refused when not declared."""
    labels = declared_labels(fmt, options)
    if labels is None:
        if _label_positive(fmt, options) is not None:
            raise ConfigError(
                f"{fmt}: a run that claims a guarantee reads the labels declared "
                "in data.labels = [negative, positive], not label_positive"
            )
        raise _needs(
            fmt,
            "data.labels = [negative, positive] (the two raw label values)",
            "the two label values would be read off the records",
        )
    return labels, {
        "-1": _jsonable(labels[0]),
        "+1": _jsonable(labels[1]),
        "rule": "data.labels; any other label is -1",
    }


def _label_of(labels: list):
    """raw text -> -1.0 / +1.0, or None: numbers compare as numbers, strings as written."""
    table = {}
    for value, sign in zip(labels, (-1.0, 1.0)):
        table[float(value) if not isinstance(value, str) else value] = sign

    def label_of(text):
        hit = table.get(text)
        if hit is None:
            v = number(text)
            hit = None if v is None else table.get(v)
        return hit

    return label_of


def _split_options(fmt: str, options: Mapping):
    test_path, fraction, seed = _test_options(fmt, options)
    if test_path is None and _stratify(fmt, options):
        raise _needs(fmt, "data.stratify = false", "the stratified test split depends on every record's label")
    return test_path, fraction, seed


def fill_option(fmt: str, options: Mapping) -> dict:
    """``fill = {column = number}``: finite numbers by column name."""
    fill = options.get("fill", {})
    if not isinstance(fill, Mapping):
        raise DataError(f"{fmt}: fill must be a table {{column = number}}, got {fill!r}")
    for name, value in fill.items():
        if not (isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value)):
            raise DataError(f"{fmt}: fill.{name} must be a finite number, got {value!r}")
    return {str(k): float(v) for k, v in fill.items()}


def _parts(train: UserFile, y: np.ndarray, test_path, fraction, seed, mapping):
    """(train rows, test rows) of the training file: all of it with a test file, else the
    seeded permutation of the row numbers (it depends on N alone)."""
    if test_path is not None:
        return np.arange(y.size), None
    return _split(train, y, fraction, seed, mapping, stratify=False)


def _provenance(train, test, test_path, fraction, seed, n_train, n_test, mapping, parsing, repairs) -> dict:
    _, files = _files(train, test)
    return {
        "source": "user files",
        "files": files,
        "parsing": parsing,
        "split": _split_record(test_path, fraction, seed, n_train, n_test, False),
        "label_mapping": mapping,
        "parsed": f"labels {_show(mapping['-1'])} -> -1, {_show(mapping['+1'])} -> +1 "
        f"(data.labels); record by record: one record per line, read alone, "
        "a missing or malformed field takes its public default",
        "diagnostic": {"repairs": repairs},
    }


# ---------------------------------------------------------------------- LIBSVM --


def load_libsvm_records(options: Mapping[str, Any]) -> RawDataset:
    """A LIBSVM file as :func:`~vfl.datasets.userfiles.load_libsvm` reads it, one row per
    line: an entry whose index is outside ``n_features`` or repeated, or whose value is
    not a finite number, is left out (0); a label outside ``labels`` is the negative one;
    a blank or comment line is an empty row with that label."""
    _path_option("libsvm", options, "path", required=True)
    test_path, fraction, seed = _split_options("libsvm", options)
    n_features, zero_based = _libsvm_options(options)
    if n_features is None:
        raise _needs("libsvm", "data.n_features", "the width would be the largest feature index in the file")
    if zero_based == "auto":
        raise _needs("libsvm", "data.zero_based", "the index base would be detected from the indices in the files")
    labels, mapping = _labels("libsvm", options)
    try:
        rules = LibsvmRules(n_features, not zero_based, {float(labels[0]): -1.0, float(labels[1]): 1.0})
    except ValueError:
        raise DataError(f"libsvm: labels must be numbers in a LIBSVM file, got {labels!r}") from None
    train = read_user_file(options["path"], strict=False)
    test = read_user_file(test_path, strict=False) if test_path is not None else None
    X, y, rep = parse_libsvm(record_lines(train.content), rules)
    repairs = {"train": rep.describe()}
    if test is not None:
        X_t, y_t, rep_t = parse_libsvm(record_lines(test.content), rules)
        repairs["test"] = rep_t.describe()
    else:
        tr, te = _parts(train, y, None, fraction, seed, mapping)
        X, X_t, y, y_t = X[tr], X[te], y[tr], y[te]
    one_based = not zero_based
    names = tuple(f"f{j + int(one_based)}" for j in range(n_features))
    indices = "one-based" if one_based else "zero-based"
    parsing = {
        "format": "libsvm",
        "parser": "vfl.datasets.record_parsers.parse_libsvm",
        "indices": indices,
        "zero_based_option": zero_based,
        "n_features": n_features,
        "n_features_option": n_features,
    }
    return RawDataset(
        name="libsvm",
        train=RawTable.from_matrix(X, names),
        y_train=y,
        test=RawTable.from_matrix(X_t, names),
        y_test=y_t,
        description=f"libsvm file {train.path.name} ({n_features} sparse features)",
        checksums=_files(train, test)[0],
        provenance=_provenance(
            train, test, test_path, fraction, seed, X.shape[0], X_t.shape[0], mapping, parsing, repairs
        ),
    )


# ------------------------------------------------------------------------- CSV --


def _header(f: UserFile, delimiter: str) -> list[str]:
    """The column names: the file's first line (its structure, not a record)."""
    first = f.content.split(b"\n", 1)[0].decode("utf-8-sig", "replace").rstrip("\r")
    try:
        names = [n.strip() for n in next(csv.reader([first], delimiter=delimiter, skipinitialspace=True), [])]
    except csv.Error as exc:
        raise DataError(f"{f.path}: malformed header line ({exc})") from None
    if not any(names):
        raise DataError(f"{f.path}: the first line names no columns")

    repeated = sorted(n for n, k in Counter(names).items() if k > 1)
    if repeated:
        raise DataError(
            f"{f.path}: column name(s) {', '.join(map(repr, repeated))} appear more than once in the header line"
        )
    return names


def _read(f: UserFile, opts: dict, features: list[str] | None, labels: list, fill: dict):
    """One CSV file's records: (features, numeric, categorical, labels, repairs)."""
    names = _header(f, opts["delimiter"])
    frame = pd.DataFrame(columns=names)  # the header alone, for the shared column checks
    features = _select_columns(f, frame, opts["label"], features, opts["declared"])
    stray = sorted(set(fill) - {c for c in features if c not in opts["declared"]})
    if stray:
        raise DataError(f"csv: fill.{stray[0]}: not a numeric feature column")
    at = {n: j for j, n in enumerate(names)}
    cols = Columns(
        n_fields=len(names),
        numeric=tuple((at[c], c) for c in features if c not in opts["declared"]),
        categorical=tuple((at[c], c) for c in features if c in opts["declared"]),
        label=at[opts["label"]],
        label_of=_label_of(labels),
        fill=fill,
    )
    lines = record_lines(f.content, header=1)
    if not lines:
        raise DataError(f"{f.path}: empty file (a header line but no data rows)")
    d = opts["delimiter"]
    num, cat, y, _, rep = parse_delimited(
        lines, lambda s: next(csv.reader([s], delimiter=d, skipinitialspace=True), []), cols
    )
    return features, num, cat, y, rep.describe()


def load_csv_records(options: Mapping[str, Any]) -> RawDataset:
    """A CSV file as :func:`~vfl.datasets.userfiles.load_csv` reads it, one row per line
    after the header: a numeric cell that is empty or not a finite number takes ``fill``
    (default 0), an empty categorical cell is outside every vocabulary, a label outside
    ``labels`` is the negative one, a line with the wrong number of fields has every field
    missing."""
    opts = _csv_options(options)
    _path_option("csv", options, "path", required=True)
    test_path, fraction, seed = _split_options("csv", options)
    labels, mapping = _labels("csv", options)
    fill = fill_option("csv", options)
    train = read_user_file(options["path"], strict=False)
    test = read_user_file(test_path, strict=False) if test_path is not None else None
    features, num, cat, y, rep = _read(train, opts, opts["features"], labels, fill)
    repairs = {"train": rep}
    if test is not None:
        _, num_t, cat_t, y_t, repairs["test"] = _read(test, opts, features, labels, fill)
    else:
        tr, te = _parts(train, y, None, fraction, seed, mapping)
        num, num_t, cat, cat_t, y, y_t = num[tr], num[te], cat[tr], cat[te], y[tr], y[te]
    kinds = tuple("categorical" if c in opts["declared"] else "numeric" for c in features)

    def table(n, c):
        return RawTable(names=tuple(features), kinds=kinds, numeric=n, categorical=c if c.shape[1] else None)

    parsing = {
        "format": "csv",
        "parser": "vfl.datasets.record_parsers.parse_delimited",
        "header": True,
        "delimiter": opts["delimiter"],
        "label": opts["label"],
        "features": features,
        "categorical_columns": {c: "declared" for c in features if c in opts["declared"]},
        "fill": {c: fill.get(c, 0.0) for c in features if c not in opts["declared"]},
    }
    return RawDataset(
        name="csv",
        train=table(num, cat),
        y_train=y,
        test=table(num_t, cat_t),
        y_test=y_t,
        description=f"csv file {train.path.name} ({len(features)} columns)",
        checksums=_files(train, test)[0],
        provenance=_provenance(train, test, test_path, fraction, seed, y.size, y_t.size, mapping, parsing, repairs),
    )
