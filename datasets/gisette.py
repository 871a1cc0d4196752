"""The gisette loader (the NIPS 2003 feature-selection challenge's dense files), with its
LIBSVM scaling fitted on the training records and marked as such (:data:`GISETTE_FITTED`),
so that a private run refuses it."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import Dataset, RawDataset
from vfl.datasets.file_reader import FileReader, one_line
from vfl.datasets.svm_scale import apply_minmax, fit_minmax

__all__ = ["load_gisette", "GISETTE_FITTED"]


def _parse_dense(source: str, content: bytes, n_features: int) -> np.ndarray:
    try:
        # numpy >= 1.23 parses in C; faster here than pandas and str.split.
        X = np.loadtxt(io.BytesIO(content), dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{source}: malformed data file ({one_line(exc)})") from exc
    if X.shape[1] != n_features:
        raise DataError(f"{source}: expected {n_features} values per row, got {X.shape[1]}")
    if not np.all(np.isfinite(X)):
        raise DataError(f"{source}: a value is not a finite number (NaN and inf are not allowed)")
    return X


def _parse_dense_tuple(source: str, content: bytes, n_features: int) -> tuple[np.ndarray]:
    return (_parse_dense(source, content, n_features),)


def _parse_labels(source: str, content: bytes, n_rows: int) -> np.ndarray:
    try:
        y = np.array(content.split(), dtype=np.float64)
    except ValueError as exc:
        raise DataError(f"{source}: malformed labels file ({one_line(exc)})") from exc
    if y.shape[0] != n_rows:
        raise DataError(f"{source}: expected {n_rows} labels (one per data row), got {len(y)}")
    if not np.all(np.abs(y) == 1):
        raise DataError(f"{source}: labels must be -1 or 1")
    return y


#: (what, key) of gisette's loader fit, as fit_stage reads it
GISETTE_FITTED = (
    (
        "the loader's min/max scaling to [-1, 1] (LIBSVM's gisette_scale) is fitted on the training records",
        "data.dataset to a dataset without a loader fit (gisette is read only as LIBSVM's gisette_scale)",
    ),
)


def load_gisette(reader: FileReader, options: Mapping[str, Any], strict: bool = True) -> Dataset:
    """UCI gisette, scaled as LIBSVM's ``gisette_scale``.

    Train = ``gisette_train.*`` (6000 rows), test = ``gisette_valid.*``
    (1000 rows; the official test labels were never released). Each feature
    is mapped linearly to [-1, 1] with the *training* min/max; features
    constant in training become 0; test values are not clipped.
    """
    n = reader.spec.n_features
    (X_train,) = reader.parsed("gisette_train.data", _parse_dense_tuple, n)
    y_train = _parse_labels(*reader.read("gisette_train.labels"), X_train.shape[0])
    (X_test,) = reader.parsed("gisette_valid.data", _parse_dense_tuple, n)
    y_test = _parse_labels(*reader.read("gisette_valid.labels"), X_test.shape[0])
    lo, hi = fit_minmax(X_train)
    n_constant = int(np.sum(lo == hi))
    apply_minmax(X_train, lo, hi, -1.0, 1.0)
    apply_minmax(X_test, lo, hi, -1.0, 1.0)
    return RawDataset(
        name="gisette",
        train=RawTable.from_matrix(X_train),
        y_train=y_train,
        test=RawTable.from_matrix(X_test),
        y_test=y_test,
        description="gisette (UCI; train/valid files, features scaled to [-1, 1])",
        checksums=reader.checksums,
        fitted=GISETTE_FITTED,
        provenance=reader.provenance(
            preprocessing=(
                "as LIBSVM gisette_scale: each feature linearly scaled to [-1, 1] with "
                "training min/max; constant features set to 0; test (= UCI valid) "
                "scaled with training ranges, not clipped"
            ),
            constant_features=n_constant,
        ),
    )
