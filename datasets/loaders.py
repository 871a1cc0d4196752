"""Loading the file-backed datasets, and the :func:`load_dataset` entry point.

Every loader reads each file once, checks its sha256 against the registry,
parses it, applies the documented preprocessing and records all of that in
``Dataset.provenance``. Preprocessing statistics (ranges, categories) are
always fitted on the training part only and reused for the test part.
"""

from __future__ import annotations

import io
import os
from dataclasses import replace
from typing import Any, Mapping

import numpy as np
import pandas as pd

from vfl.datasets.base import Dataset
from vfl.datasets.files import read_file, require_files, resolve_data_dir
from vfl.datasets.preprocessing import (apply_minmax, apply_zscore, fit_minmax, fit_zscore,
                                        max_row_norm, normalize_rows)
from vfl.datasets.registry import SYNTHETIC_NAME, DatasetSpec, FileSpec, get_spec
from vfl.datasets.synthetic import SYNTHETIC_OPTIONS, synthetic_from_options
from vfl.datasets.userfiles import USER_FILE_LOADERS, USER_FILE_OPTIONS
from vfl.core.errors import DataError

__all__ = ["load_dataset", "LOADER_OPTIONS"]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _file(spec: DatasetSpec, name: str) -> FileSpec:
    return next(f for f in spec.files if f.name == name)


class _Reader:
    """Reads a dataset's files and remembers what was read, for provenance."""

    def __init__(self, spec: DatasetSpec, data_dir, verify: bool):
        self.spec = spec
        self.data_dir = resolve_data_dir(data_dir)
        self.verify = verify
        self.paths: dict[str, str] = {}
        self.checksums: dict[str, str] = {}
        # Report every missing file at once, before spending time on any.
        require_files(spec.name, spec.files, self.data_dir)

    def read(self, file_name: str) -> tuple[str, bytes]:
        """Return (path actually read, decompressed content) of one file."""
        path, content, sha = read_file(self.spec.name, _file(self.spec, file_name),
                                       self.data_dir, verify=self.verify)
        self.paths[file_name] = str(path)
        self.checksums[file_name] = sha
        return str(path), content

    def provenance(self, **extra) -> dict:
        return {"source": "files", "data_dir": str(self.data_dir), "files": dict(self.paths),
                "verified": self.verify, **extra}


# ----------------------------------------------------------------------------- a9a

def _parse_svmlight(source: str, content: bytes, n_features: int):
    """Parse LIBSVM text; ``source`` (the path read) names the file in errors."""
    # Imported here, not at module level: `vfl --help` should not pay for sklearn.
    from sklearn.datasets import load_svmlight_file

    try:
        # zero_based=False: LIBSVM files are 1-based; an index 0 is an error,
        # not a reason to silently shift every column.
        X, y = load_svmlight_file(io.BytesIO(content), n_features=n_features,
                                  dtype=np.float64, zero_based=False)
    except (ValueError, RuntimeError, IndexError) as exc:
        raise DataError(f"{source}: malformed svmlight file ({_one_line(exc)})") from exc
    bad = np.setdiff1d(np.unique(y), [-1.0, 1.0])
    if bad.size:
        raise DataError(f"{source}: labels must be -1 or +1, found {bad[:5].tolist()}")
    return X.tocsr(), np.asarray(y, dtype=np.float64)


def _load_a9a(reader: _Reader, options: Mapping[str, Any]) -> Dataset:
    """a9a / a9a.t from LIBSVM, kept sparse (CSR, 123 binary features).

    ``a9a.t`` never uses feature 123, so both files are parsed with
    ``n_features=123``.
    """
    n = reader.spec.n_features
    X_train, y_train = _parse_svmlight(*reader.read("a9a"), n)
    X_test, y_test = _parse_svmlight(*reader.read("a9a.t"), n)
    return Dataset(
        name="a9a", X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        description="a9a (LIBSVM; UCI Adult binarised, 123 sparse binary features)",
        checksums=reader.checksums,
        provenance=reader.provenance(
            preprocessing="none: LIBSVM's binary features used as distributed, labels +1/-1"
        ),
    )


# ------------------------------------------------------------------------- gisette

def _parse_dense(source: str, content: bytes, n_features: int) -> np.ndarray:
    try:
        # numpy >= 1.23 parses in C; faster here than pandas and str.split.
        X = np.loadtxt(io.BytesIO(content), dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{source}: malformed data file ({_one_line(exc)})") from exc
    if X.shape[1] != n_features:
        raise DataError(f"{source}: expected {n_features} values per row, got {X.shape[1]}")
    return X


def _parse_labels(source: str, content: bytes, n_rows: int) -> np.ndarray:
    try:
        y = np.array(content.split(), dtype=np.float64)
    except ValueError as exc:
        raise DataError(f"{source}: malformed labels file ({_one_line(exc)})") from exc
    if y.shape[0] != n_rows:
        raise DataError(f"{source}: expected {n_rows} labels (one per data row), got {len(y)}")
    if not np.all(np.abs(y) == 1):
        raise DataError(f"{source}: labels must be -1 or 1")
    return y


def _load_gisette(reader: _Reader, options: Mapping[str, Any]) -> Dataset:
    """UCI gisette, scaled as LIBSVM's ``gisette_scale``.

    Train = ``gisette_train.*`` (6000 rows), test = ``gisette_valid.*``
    (1000 rows; the official test labels were never released). Each feature
    is mapped linearly to [-1, 1] with the *training* min/max; features
    constant in training become 0; test values are not clipped.
    """
    n = reader.spec.n_features
    X_train = _parse_dense(*reader.read("gisette_train.data"), n)
    y_train = _parse_labels(*reader.read("gisette_train.labels"), X_train.shape[0])
    X_test = _parse_dense(*reader.read("gisette_valid.data"), n)
    y_test = _parse_labels(*reader.read("gisette_valid.labels"), X_test.shape[0])
    lo, hi = fit_minmax(X_train)
    n_constant = int(np.sum(lo == hi))
    apply_minmax(X_train, lo, hi, -1.0, 1.0)
    apply_minmax(X_test, lo, hi, -1.0, 1.0)
    return Dataset(
        name="gisette", X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        description="gisette (UCI; train/valid files, features scaled to [-1, 1])",
        checksums=reader.checksums,
        provenance=reader.provenance(
            preprocessing=(
                "as LIBSVM gisette_scale: each feature linearly scaled to [-1, 1] with "
                "training min/max; constant features set to 0; test (= UCI valid) "
                "scaled with training ranges, not clipped"
            ),
            constant_features=n_constant,
        ),
    )


# --------------------------------------------------------------------------- adult

_ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)
_ADULT_CONTINUOUS = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
                     "hours-per-week")
_ADULT_LABELS = {"<=50K": -1.0, ">50K": 1.0}


def _parse_adult(source: str, content: bytes) -> tuple[pd.DataFrame, int]:
    """Parse raw adult.data / adult.test; return complete records and the record count."""
    # adult.test starts with the comment line "|1x3 Cross validator".
    skip = 1 if content.startswith(b"|") else 0
    try:
        # Everything as text first: only '?' means missing, and numeric
        # columns are converted below with an error that names the column.
        frame = pd.read_csv(
            io.BytesIO(content), header=None, names=list(_ADULT_COLUMNS), skiprows=skip,
            skipinitialspace=True, na_values=["?"], keep_default_na=False, dtype=str,
        )
    except (ValueError, pd.errors.ParserError) as exc:
        raise DataError(f"{source}: malformed adult file ({_one_line(exc)})") from exc
    # Short records are padded with empty strings, which '?' never is.
    empty = frame.eq("").to_numpy()
    if empty.any():
        row, col = np.argwhere(empty)[0]
        what = (f"has fewer than {len(_ADULT_COLUMNS)} fields" if empty[row, -1]
                else f"has an empty {_ADULT_COLUMNS[col]} field")
        raise DataError(f"{source}: record {row + 1} {what}")
    for column in _ADULT_CONTINUOUS:
        try:
            frame[column] = pd.to_numeric(frame[column]).astype(np.float64)
        except (ValueError, TypeError) as exc:
            raise DataError(
                f"{source}: malformed adult file, column {column} is not numeric "
                f"({_one_line(exc)})"
            ) from exc
    frame["income"] = frame["income"].str.rstrip(".")  # adult.test writes ">50K."
    unknown = sorted(set(frame["income"].dropna()) - set(_ADULT_LABELS))
    if unknown:
        raise DataError(f"{source}: unexpected income label(s) {unknown[:3]}; "
                        f"expected <=50K or >50K")
    return frame.dropna().reset_index(drop=True), len(frame)


#: ``scaling`` of the adult loader: the numeric (non-one-hot) columns' transform.
ADULT_SCALINGS = ("minmax01", "minmax11", "zscore")
#: ``row_norm`` of the adult loader: what bounds the rows' l2 norms afterwards.
ADULT_ROW_NORMS = ("none", "unit", "max")


def _adult_choice(options: Mapping[str, Any], key: str, choices, default: str) -> str:
    value = options.get(key, default)
    if not isinstance(value, str) or value not in choices:
        raise DataError(f"adult: option {key} must be one of {', '.join(map(repr, choices))}, "
                        f"got {value!r}")
    return value


def _codes(values: pd.Series, categories: list[str]) -> np.ndarray:
    """Index of each value in the training categories; -1 if unseen in training."""
    return pd.Index(categories).get_indexer(values)


def _load_adult(reader: _Reader, options: Mapping[str, Any]) -> Dataset:
    """UCI adult.data / adult.test with the preprocessing below.

    1. Drop every record with a missing value (``?``): 30162 train / 15060
       test records remain (the 30162 of the DP-ADMM paper, Section VI).
    2. ``encoding="onehot"`` (default): drop ``fnlwgt`` (a census sampling
       weight, not an attribute of the person); one-hot encode the 8
       categorical columns with the categories seen in training (sorted;
       a test category unseen in training encodes as all zeros);
       103 features: 5 continuous columns first, then the one-hot blocks in
       column order.
       ``encoding="ordinal"``: keep all 14 attributes in file order (the
       d = 14 of the DP-ADMM and decentralized-LDP papers); each categorical
       becomes the index of its category among the sorted training
       categories (unseen test categories get one past the last index).
    3. ``scaling`` of every non-one-hot column, fitted on the training part
       and applied unchanged to the test part (test values are not clipped):
       ``"minmax01"`` (default) to [0, 1] with the training min/max,
       ``"minmax11"`` to [-1, 1] (MATLAB ``mapminmax``'s default; the
       DP-ADMM spec's decision D2), ``"zscore"`` to zero mean and unit
       (population) standard deviation. Constant columns become 0.
       ``fit = "all"`` fits the statistics on train and test together
       instead (for the decentralized-LDP paper, which pools both files).
    4. ``row_norm``: ``"none"`` (default); ``"unit"``: every row divided by
       its own l2 norm (all-zero rows stay zero), so ``||a|| = 1``;
       ``"max"``: every row (train and test) divided by the largest training
       row norm, so training rows have ``||a|| <= 1`` (test rows may exceed
       it). Either gives the ``||a|| <= 1`` of DP-ADMM's Section VI.
    5. Label +1 for ``>50K``, -1 for ``<=50K``.

    The DP-ADMM paper's preprocessing (spec decision D2) is
    ``{"encoding": "ordinal", "scaling": "minmax11", "row_norm": "unit"}``
    on ``X_train`` (the 30162 complete records of ``adult.data``).
    """
    encoding = _adult_choice(options, "encoding", ("onehot", "ordinal"), "onehot")
    scaling = _adult_choice(options, "scaling", ADULT_SCALINGS, "minmax01")
    row_norm = _adult_choice(options, "row_norm", ADULT_ROW_NORMS, "none")
    fit = _adult_choice(options, "fit", ("train", "all"), "train")
    train, n_train_raw = _parse_adult(*reader.read("adult.data"))
    test, n_test_raw = _parse_adult(*reader.read("adult.test"))
    categorical = [c for c in _ADULT_COLUMNS[:-1] if c not in _ADULT_CONTINUOUS]
    categories = {c: sorted(train[c].unique()) for c in categorical}

    if encoding == "onehot":
        numeric = [c for c in _ADULT_CONTINUOUS if c != "fnlwgt"]

        def encode(frame: pd.DataFrame) -> np.ndarray:
            blocks = [frame[numeric].to_numpy(dtype=np.float64)]
            for c in categorical:
                # Unseen test categories (code -1) leave the block all zero.
                codes = _codes(frame[c], categories[c])
                block = np.zeros((len(frame), len(categories[c])))
                seen = codes >= 0
                block[np.flatnonzero(seen), codes[seen]] = 1.0
                blocks.append(block)
            return np.hstack(blocks)

        feature_names = numeric + [f"{c}={v}" for c in categorical for v in categories[c]]
        encoded = ("fnlwgt dropped; 8 categoricals one-hot with training categories "
                   "(unseen -> all zeros)")
    else:
        numeric = list(_ADULT_COLUMNS[:-1])

        def encode(frame: pd.DataFrame) -> np.ndarray:
            out = np.empty((len(frame), len(numeric)))
            for j, c in enumerate(numeric):
                if c in categories:
                    codes = _codes(frame[c], categories[c])
                    out[:, j] = np.where(codes >= 0, codes, len(categories[c]))
                else:
                    out[:, j] = frame[c].to_numpy(dtype=np.float64)
            return out

        feature_names = numeric
        encoded = ("all 14 attributes; categoricals as index of sorted training category "
                   "(unseen -> one past last)")

    # The first len(numeric) columns are scaled; one-hot columns already are 0/1.
    scaled = len(numeric)
    X_train, X_test = encode(train), encode(test)
    # "all": one pool of both files (the decentralized-LDP paper samples its
    # agents from train + test), so every pooled value lands inside the range
    basis = X_train if fit == "train" else np.vstack([X_train, X_test])
    if scaling == "zscore":
        mean, std = fit_zscore(basis[:, :scaled])
        apply_zscore(X_train[:, :scaled], mean, std)
        apply_zscore(X_test[:, :scaled], mean, std)
        scaled_how = (f"z-scored ({'training' if fit == 'train' else 'train+test'} mean and "
                      "population std; constant -> 0)")
    else:
        lower = 0.0 if scaling == "minmax01" else -1.0
        lo, hi = fit_minmax(basis[:, :scaled])
        apply_minmax(X_train[:, :scaled], lo, hi, lower, 1.0)
        apply_minmax(X_test[:, :scaled], lo, hi, lower, 1.0)
        scaled_how = (f"min/max scaled to [{lower:g}, 1] with "
                      + ("training ranges (constant -> 0), test not clipped" if fit == "train"
                         else "the ranges of train and test together (constant -> 0)"))
    row_divisor = None
    if row_norm == "unit":
        X_train, X_test = normalize_rows(X_train), normalize_rows(X_test)
        scaled_how += "; every row then divided by its own l2 norm (zero rows kept)"
    elif row_norm == "max":
        row_divisor = max_row_norm(X_train)
        if row_divisor > 0:
            X_train /= row_divisor
            X_test /= row_divisor
        scaled_how += (f"; every row then divided by the largest training row norm "
                       f"({row_divisor:.6g}); test rows may exceed norm 1")
    y_train = train["income"].map(_ADULT_LABELS).to_numpy(dtype=np.float64)
    y_test = test["income"].map(_ADULT_LABELS).to_numpy(dtype=np.float64)
    return Dataset(
        name="adult", X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test,
        description=(f"adult (UCI; complete records, {encoding} encoding, {scaling} scaling"
                     + ("" if row_norm == "none" else f", row_norm {row_norm}") + ")"),
        checksums=reader.checksums,
        provenance=reader.provenance(
            preprocessing=(
                f"rows with '?' dropped; {encoded}; non-one-hot columns {scaled_how}; "
                "label +1 = '>50K'"
            ),
            encoding=encoding,
            scaling=scaling,
            row_norm=row_norm,
            fit=fit,
            row_norm_divisor=row_divisor,
            feature_names=feature_names,
            rows_dropped={"train": n_train_raw - len(train), "test": n_test_raw - len(test)},
        ),
    )


# -------------------------------------------------------------------- entry point

_LOADERS = {"a9a": _load_a9a, "gisette": _load_gisette, "adult": _load_adult}

#: Dataset-specific ``options`` keys accepted by :func:`load_dataset`.
LOADER_OPTIONS: dict[str, tuple[str, ...]] = {
    "a9a": (), "gisette": (), "adult": ("scaling", "row_norm", "encoding", "fit"),
    SYNTHETIC_NAME: SYNTHETIC_OPTIONS, **USER_FILE_OPTIONS,
}

# Accepted by every dataset, applied after the dataset's own preprocessing.
_COMMON_OPTIONS = ("normalize_rows",)


def load_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    verify: bool = True,
) -> Dataset:
    """Load a dataset by name.

    Parameters
    ----------
    name : str
        ``"a9a"``, ``"gisette"``, ``"adult"`` (read from ``data_dir``), or
        ``"synthetic"`` / ``"synthetic:<preset>"`` (generated; ``data_dir``
        and ``verify`` are then unused), or ``"libsvm"`` / ``"csv"`` (the
        user's own files, named by options; see :mod:`vfl.datasets.userfiles`).
    data_dir : path, optional
        Directory holding the files; see :func:`resolve_data_dir`.
    options : dict, optional
        ``normalize_rows`` (bool, any dataset): scale every row to unit l2
        norm after the dataset's own preprocessing, so that ``||x|| <= 1``
        as the DP-ADMM analysis assumes ("by data normalization, we enforce
        ||grad l|| <= 1", Section VI). ``adult``: ``encoding`` (``"onehot"``
        or ``"ordinal"``), ``scaling`` (``"minmax01"``, ``"minmax11"``,
        ``"zscore"``) and ``row_norm`` (``"none"``, ``"unit"``, ``"max"``);
        see :func:`_load_adult`. ``synthetic``: the keyword arguments of
        :func:`make_synthetic` plus ``preset``.
    verify : bool
        Check each file's sha256 before parsing (default). With False the
        digests are still computed and recorded, but not compared.

    Raises
    ------
    DataError
        Unknown dataset or option, missing / corrupt / malformed files.
    """
    options = dict(options or {})
    base = name.split(":", 1)[0] if isinstance(name, str) else name
    if base != SYNTHETIC_NAME and name not in USER_FILE_LOADERS:
        get_spec(name)  # unknown names fail first, listing the known ones
    valid = LOADER_OPTIONS[base] + _COMMON_OPTIONS
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise DataError(f"{name}: unknown option(s) {', '.join(unknown)}; "
                        f"valid options: {', '.join(valid)}")
    normalize = options.pop("normalize_rows", False)
    if not isinstance(normalize, (bool, np.bool_)):
        raise DataError(f"{name}: option normalize_rows must be true or false, got {normalize!r}")

    if base == SYNTHETIC_NAME:
        if ":" in name:
            preset = name.split(":", 1)[1]
            if options.setdefault("preset", preset) != preset:
                raise DataError(f"{name}: conflicting option preset={options['preset']!r}")
        data = synthetic_from_options(options)
    elif name in USER_FILE_LOADERS:  # the user's own files, named by the options
        data = USER_FILE_LOADERS[name](options)
        data.provenance["options"] = {**options, "normalize_rows": bool(normalize)}
    else:
        data = _LOADERS[name](_Reader(get_spec(name), data_dir, verify), options)
        data.provenance["options"] = {**options, "normalize_rows": bool(normalize)}

    if normalize:
        data = replace(
            data,
            X_train=normalize_rows(data.X_train),
            X_test=normalize_rows(data.X_test),
            description=data.description + ", rows l2-normalized",
            provenance={**data.provenance,
                        "normalize_rows": "each row scaled to unit l2 norm (zero rows kept)"},
        )
    return data
