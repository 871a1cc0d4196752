"""The a9a loader (LIBSVM's a9a and a9a.t): parsed by sklearn, or record by record in a run
that claims a guarantee (:mod:`vfl.datasets.record_parsers`)."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets._generator_checks import integer
from vfl.datasets.dataset import Dataset, RawDataset
from vfl.datasets.file_reader import FileReader, one_line
from vfl.datasets.record_parsers import LibsvmRules, parse_libsvm, record_lines
from vfl.datasets.schemas import FILE_RECORDS

__all__ = ["load_a9a"]


def _parse_svmlight(source: str, content: bytes, n_features: int):
    """Parse LIBSVM text; ``source`` (the path read) names the file in errors."""
    # Imported here, not at module level: `vfl --help` should not pay for sklearn.
    from sklearn.datasets import load_svmlight_file  # lazy: start-up (sklearn.datasets, 1.0 s)

    try:
        # zero_based=False: LIBSVM files are 1-based; an index 0 is an error,
        # not a reason to silently shift every column.
        X, y = load_svmlight_file(io.BytesIO(content), n_features=n_features, dtype=np.float64, zero_based=False)
    except (ValueError, RuntimeError, IndexError) as exc:
        raise DataError(f"{source}: malformed svmlight file ({one_line(exc)})") from exc
    bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
    if bad.size:
        raise DataError(f"{source}: labels must be -1 or +1, found {bad[:5].tolist()}")
    X = X.tocsr()
    if not np.all(np.isfinite(X.data)):
        raise DataError(
            f"{source}: malformed svmlight file (a value is not a finite number; NaN and inf are not allowed)"
        )
    return X, np.asarray(y, dtype=np.float64)


_A9A_RULES = dict(one_based=True, labels={-1.0: -1.0, 1.0: 1.0}, default_label=-1.0, binary=True)
_REPAIR_KEYS = ("records_incomplete", "labels_missing", "entries_left_out", "records_malformed")


def _parse_a9a_records(source: str, content: bytes, n_features: int, header: int, count: int):
    """The documented records of an a9a file, each parsed alone (a per-record function,
    :func:`vfl.datasets.record_parsers.parse_libsvm`): an entry outside the 123 binary features
    is left out, a label other than -1 / +1 is -1, a blank or comment line is an empty
    row. Returns (X, y, repair counts)."""
    try:
        lines = record_lines(content, header=header, count=count)
    except ValueError as exc:
        raise DataError(f"{source}: {exc}") from None
    X, y, repairs = parse_libsvm(lines, LibsvmRules(n_features, **_A9A_RULES))
    counts = (repairs.records, repairs.labels, repairs.fields.get("entries", 0), repairs.malformed_records)
    return X, y, np.array(counts, dtype=np.int64)


def _a9a_file(reader: FileReader, name: str, n: int, strict: bool, repairs: dict):
    if strict:
        return reader.parsed(name, _parse_svmlight, n)
    layout = FILE_RECORDS[name]
    X, y, counts = reader.parsed(name, _parse_a9a_records, n, layout.header, layout.count)
    repairs[name] = dict(zip(_REPAIR_KEYS, map(int, counts)))
    return X, y


def load_a9a(reader: FileReader, options: Mapping[str, Any], strict: bool = True) -> Dataset:
    """a9a / a9a.t from LIBSVM, kept sparse (CSR, 123 binary features).

    ``a9a.t`` never uses feature 123, so both files are parsed with
    ``n_features=123``. Option ``tile = k`` repeats the training records k
    times, in file order (a9a's problem at k times its rows, for scaling
    measurements: with ``lam`` times k it has a9a's optimum); the test file
    is unchanged. ``strict=False`` (a run that claims a guarantee): every
    documented line is a record, parsed alone (:func:`_parse_a9a_records`).
    """
    n = reader.spec.n_features
    tile = integer("a9a", "tile", options.get("tile", 1), 1)
    repairs: dict = {}
    X_train, y_train = _a9a_file(reader, "a9a", n, strict, repairs)
    X_test, y_test = _a9a_file(reader, "a9a.t", n, strict, repairs)
    if tile > 1:
        X_train, y_train = sp.vstack([X_train] * tile, format="csr"), np.tile(y_train, tile)
    names = tuple(f"f{j + 1}" for j in range(n))  # LIBSVM's one-based feature numbers
    return RawDataset(
        name="a9a",
        train=RawTable.from_matrix(X_train, names),
        y_train=y_train,
        test=RawTable.from_matrix(X_test, names),
        y_test=y_test,
        description="a9a (LIBSVM; UCI Adult binarised, 123 sparse binary features)"
        + (f", training records repeated {tile} times" if tile > 1 else ""),
        checksums=reader.checksums,
        provenance=reader.provenance(
            parsing="LIBSVM's binary features as distributed (width 123 from the registry), "
            "labels +1/-1"
            + (
                ""
                if strict
                else "; record by record: one record per documented "
                "line, parsed alone, an entry outside the 123 binary features left out, "
                "another label -1, a blank or comment line an empty row"
            ),
            **({} if strict else {"diagnostic": {"repairs": repairs}}),
        ),
    )
