"""LIBSVM (svmlight) user files: parsed by scikit-learn, checked, kept sparse; which
index base (zero or one) a file uses."""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import RawDataset
from vfl.datasets.userfiles.holdout import _split, _split_record
from vfl.datasets.userfiles.label_rules import _binary_labels
from vfl.datasets.userfiles.options import (
    _label_positive,
    _libsvm_options,
    _path_option,
    _stratify,
    _test_options,
    declared_labels,
)
from vfl.datasets.userfiles.previews import _one_line, _show
from vfl.datasets.userfiles.private_reading import load_libsvm_records
from vfl.datasets.userfiles.reading import UserFile, _data_line_numbers, _files, read_user_file


def _parse_libsvm(f: UserFile) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse with the indices as written (column k holds index k); check values."""
    from sklearn.datasets import load_svmlight_file  # lazy: start-up (sklearn.datasets, 1.0 s)

    try:
        X, y = load_svmlight_file(io.BytesIO(f.content), dtype=np.float64, zero_based=True)
    except (ValueError, RuntimeError, IndexError, OverflowError, TypeError) as exc:
        raise DataError(f"{f.path}: malformed LIBSVM file ({_one_line(exc)})") from exc
    X = X.tocsr()
    if X.shape[0] == 0:
        raise DataError(f"{f.path}: empty file (no data lines, only comments or blank lines)")
    bad_x = np.flatnonzero(~np.isfinite(X.data))
    bad_y = np.flatnonzero(~np.isfinite(y))
    if bad_x.size or bad_y.size:
        lines = _data_line_numbers(f.content, comments=True)
        row_x = int(np.searchsorted(X.indptr, bad_x[0], side="right") - 1) if bad_x.size else None
        if bad_y.size and (row_x is None or bad_y[0] <= row_x):
            raise DataError(f"{f.path} line {lines[bad_y[0]]}: label {y[bad_y[0]]:g} is not a finite number")
        raise DataError(
            f"{f.path} line {lines[row_x]}: feature {X.indices[bad_x[0]]} has value "
            f"{X.data[bad_x[0]]:g} (NaN and inf are not allowed)"
        )
    return X, np.asarray(y, dtype=np.float64)


def _first_entry(f: UserFile, X: sp.csr_matrix, mask: np.ndarray) -> tuple[int, int]:
    """(file line, column) of the first stored entry selected by ``mask``."""
    k = int(np.flatnonzero(mask)[0])
    row = int(np.searchsorted(X.indptr, k, side="right") - 1)
    return int(_data_line_numbers(f.content, comments=True)[row]), int(X.indices[k])


def _has_index_zero(X: sp.csr_matrix | None) -> bool:
    return X is not None and X.nnz > 0 and int(X.indices.min()) == 0


def _libsvm_columns(f: UserFile, X: sp.csr_matrix, one_based: bool, n_features: int | None) -> sp.csr_matrix:
    """Columns 0.. of a file parsed as written: drop a one-based file's empty column 0."""
    if one_based and _has_index_zero(X):  # only with zero_based = false: "auto" saw no 0
        line, _ = _first_entry(f, X, X.indices == 0)
        raise DataError(
            f"{f.path} line {line}: feature index 0 in a one-based file "
            "(zero_based = false); set zero_based = true if the files count "
            "features from 0"
        )
    if one_based:
        X = X[:, 1:] if X.shape[1] else X
    if n_features is not None and X.shape[1] > n_features:
        line, column = _first_entry(f, X, X.indices >= n_features)
        raise DataError(
            f"{f.path} line {line}: feature index {column + int(one_based)} exceeds "
            f"n_features = {n_features} (indices are "
            f"{'one' if one_based else 'zero'}-based)"
        )
    return X


def _pad(X: sp.csr_matrix, n: int) -> sp.csr_matrix:
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n))


def load_libsvm(options: Mapping[str, Any], *, strict: bool = True) -> RawDataset:
    """A LIBSVM (svmlight) file, kept sparse (CSR, float64).

    Options
    -------
    path : str
        Training file (plain, .gz, .bz2 or .xz); relative to the current directory.
    test_path : str, or test_fraction : float in (0, 1)
        A separate test file, or the share of ``path``'s rows held out for
        testing (seeded by ``split_seed``, int, default 0; stratified by label
        unless ``stratify = false``, which a private run needs).
    n_features : int, optional
        Number of features; default: the largest index in the training file.
        An index beyond it is an error; files that use fewer are padded.
    zero_based : "auto" (default), true or false
        As in ``load_svmlight_file``: "auto" reads the files as one-based
        unless an index 0 occurs in either of them.
    label_positive : number, optional
        The raw label that becomes +1 (default: the larger of the two).
    labels : [negative, positive], optional
        The two raw labels, declared (a private run needs them): any other is an
        error here, and the negative label in a private run.

    ``strict=False`` (a run that claims a guarantee): every line is a record,
    read alone (:func:`vfl.datasets.userfiles.private_reading.load_libsvm_records`).
    """
    if not strict:
        return load_libsvm_records(options)
    train_path = _path_option("libsvm", options, "path", required=True)
    test_path, fraction, seed = _test_options("libsvm", options)
    stratify = _stratify("libsvm", options)
    n_features, zero_based = _libsvm_options(options)
    label_positive = _label_positive("libsvm", options)
    declared = declared_labels("libsvm", options)

    train = read_user_file(train_path)
    test = read_user_file(test_path) if test_path is not None else None
    X, y_raw = _parse_libsvm(train)
    X_t, y_t_raw = _parse_libsvm(test) if test is not None else (None, None)
    one_based = not zero_based if zero_based != "auto" else index_base(train, X, X_t)[0]
    X = _libsvm_columns(train, X, one_based, n_features)
    n = n_features if n_features is not None else X.shape[1]
    if n == 0:
        raise DataError(f"{train.path}: no features (every line holds only a label)")
    if test is not None:
        X_t = _libsvm_columns(test, X_t, one_based, n_features)
        if X_t.shape[1] > n:
            line, column = _first_entry(test, X_t, X_t.indices >= n)
            raise DataError(
                f"{test.path} line {line}: feature index {column + int(one_based)} "
                f"is beyond the {n} features of the training file {train.path} "
                "(set n_features to the true number of features)"
            )
        X_t = _pad(X_t, n)
    X = _pad(X, n)

    y, y_t, mapping = _binary_labels(train, y_raw, label_positive, test, y_t_raw, declared)
    if test is None:
        tr, te = _split(train, y, fraction, seed, mapping, stratify)
        X, X_t, y, y_t = X[tr], X[te], y[tr], y[te]

    indices = "one-based" if one_based else "zero-based"
    checksums, files = _files(train, test)
    fitted = ()
    if n_features is None:
        fitted += (("the width is the largest feature index in the file", "data.n_features"),)
    if zero_based == "auto":
        fitted += (("the index base is detected from the indices in the files", "data.zero_based"),)
    if test is None and stratify:
        fitted += (("the stratified test split depends on every record's label", "data.stratify = false"),)
    names = tuple(f"f{j + int(one_based)}" for j in range(n))
    return RawDataset(
        name="libsvm",
        train=RawTable.from_matrix(X, names),
        y_train=y,
        test=RawTable.from_matrix(X_t, names),
        y_test=y_t,
        description=f"libsvm file {train.path.name} ({n} sparse features)",
        checksums=checksums,
        fitted=fitted,
        provenance={
            "source": "user files",
            "files": files,
            "parsing": {
                "format": "libsvm",
                "parser": "sklearn.datasets.load_svmlight_file",
                "indices": indices,
                "zero_based_option": zero_based,
                "n_features": n,
                "n_features_option": n_features,
            },
            "split": _split_record(test_path, fraction, seed, X.shape[0], X_t.shape[0], stratify),
            "label_mapping": mapping,
            "parsed": (
                f"features as in the file ({indices} indices, {n} columns, sparse); "
                f"labels {_show(mapping['-1'])} -> -1, {_show(mapping['+1'])} -> +1 "
                f"({mapping['rule']})"
            ),
        },
    )


_BASE_COMMENT = re.compile(rb"^#\s*column indices are (zero|one)-based", re.I | re.M)


def index_base(f: UserFile, X: sp.csr_matrix, X_t: sp.csr_matrix | None = None) -> tuple[bool, str]:
    """``(one_based, why)`` for a LIBSVM file read with ``zero_based = "auto"``.

    scikit-learn's ``dump_svmlight_file`` writes zero-based indices by
    default and, given a comment, says so in a header line ("Column indices
    are zero-based"); that line decides. Otherwise an index 0 means
    zero-based; without one the file reads both ways and LIBSVM's one-based
    convention is taken, which ``why`` says.
    """
    head = f.content[:4096]
    said = _BASE_COMMENT.search(head)
    if said:
        return said.group(1).lower() == b"one", f"its header says {said.group(0)[1:].strip().decode()}"
    if _has_index_zero(X) or _has_index_zero(X_t):
        return False, "an index 0 occurs"
    return True, (
        "assumed: no index 0 occurs, so the file reads both ways; set zero_based = "
        "true if it counts from 0, as scikit-learn's dump_svmlight_file does"
    )
