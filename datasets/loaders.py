"""Reading the datasets' records: :func:`load_raw`, and :func:`load_dataset` on top of it.

Every loader reads each file once, checks its sha256 against the registry,
parses it and records that in the provenance. The parsed arrays of a9a and
gisette are cached, keyed by the stored file's sha256: a second load reads
them instead of decompressing and parsing again. It returns the records as
read (:class:`~vfl.datasets.base.RawDataset`): encoding and scaling belong
to the preprocessing stage (:mod:`vfl.datasets.stage`), whose parameters a
private run takes only from public sources. The one exception, gisette's
LIBSVM scaling, is fitted on the training records by its loader and marked
as such, so a private run refuses it.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

from vfl.core.preprocessing import RawTable
from vfl.datasets._checks import integer
from vfl.datasets.base import Dataset, RawDataset
from vfl.datasets.files import (find_file, read_file, require_files, resolve_data_dir,
                                user_cache_dir)
from vfl.datasets.preprocessing import apply_minmax, fit_minmax
from vfl.datasets.schemas import ADULT_SCHEMA, SCHEMA_DEFAULTS
from vfl.datasets.registry import SYNTHETIC_NAME, DatasetSpec, FileSpec, get_spec
from vfl.datasets.synthetic import SYNTHETIC_OPTIONS, synthetic_from_options
from vfl.datasets.userfiles import USER_FILE_LOADERS, USER_FILE_OPTIONS
from vfl.core.errors import DataError

__all__ = ["load_dataset", "load_raw", "LOADER_OPTIONS", "MOVED_OPTIONS"]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _file(spec: DatasetSpec, name: str) -> FileSpec:
    return next(f for f in spec.files if f.name == name)


class _Reader:
    """Reads a dataset's files and remembers what was read, for provenance."""

    def __init__(self, spec: DatasetSpec, data_dir, verify: bool, use_cache: bool = True):
        self.spec = spec
        self.data_dir = resolve_data_dir(data_dir)
        self.verify = verify
        self.use_cache = use_cache
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

    def parsed(self, file_name: str, parse, *args) -> tuple:
        """``parse(path, content, *args)`` of one file, from the parsed-array cache when the
        stored file is one parsed before.

        The cache (``user_cache_dir()/parsed``) is keyed by the sha256 of the file as stored
        (no decompression needed to look it up) and :data:`PARSER_VERSION`; each entry keeps
        the content sha256 verified when it was parsed, which is checked against the registry
        as a fresh read would be. A damaged entry is parsed again and replaced. Without
        ``use_cache`` the file is parsed, and nothing is read from or written to the cache.
        """
        if not self.use_cache:
            return parse(*self.read(file_name), *args)
        path = find_file(_file(self.spec, file_name), self.data_dir)
        key = f"{_stored_sha256(path)}-{PARSER_VERSION}-{'-'.join(map(str, args))}"
        entry = user_cache_dir() / "parsed" / f"{key}.npz"
        hit = _load_parsed(entry)
        if hit is not None:
            content_sha, arrays = hit
            spec = _file(self.spec, file_name)
            if self.verify and content_sha != spec.sha256:
                raise DataError(f"{spec.name}: sha256 mismatch in {path}: expected "
                                f"{spec.sha256}, got {content_sha} (re-download with "
                                f"`vfl datasets fetch {self.spec.name} --force`)")
            self.paths[file_name], self.checksums[file_name] = str(path), content_sha
            return arrays
        source, content = self.read(file_name)
        arrays = parse(source, content, *args)
        _save_parsed(entry, self.checksums[file_name], arrays)
        return arrays

    def provenance(self, **extra) -> dict:
        return {"source": "files", "data_dir": str(self.data_dir), "files": dict(self.paths),
                "verified": self.verify, **extra}


#: bump when a parser's output changes: every cached parse is then redone
PARSER_VERSION = 1


def _stored_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _load_parsed(entry: Path):
    """(content sha256, arrays) of a cache entry, or None when absent or unreadable."""
    try:
        with np.load(entry, allow_pickle=False) as z:
            sha = str(z["content_sha256"])
            if "csr_data" in z:
                X = sp.csr_matrix((z["csr_data"], z["csr_indices"], z["csr_indptr"]),
                                  shape=tuple(z["csr_shape"]))
                return sha, (X, z["y"]) if "y" in z else (X,)
            return sha, tuple(z[f"a{i}"] for i in range(int(z["n"])))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def _save_parsed(entry: Path, content_sha: str, arrays) -> None:
    """Write a cache entry atomically; a cache that cannot be written is only slower."""
    arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    if sp.issparse(arrays[0]):
        X = arrays[0].tocsr()
        payload = {"csr_data": X.data, "csr_indices": X.indices, "csr_indptr": X.indptr,
                   "csr_shape": np.array(X.shape), **({"y": arrays[1]} if len(arrays) > 1 else {})}
    else:
        payload = {"n": np.array(len(arrays)), **{f"a{i}": a for i, a in enumerate(arrays)}}
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(f".{entry.stem}.{os.getpid()}.partial.npz")
        np.savez(tmp, content_sha256=np.array(content_sha), **payload)
        os.replace(tmp, entry)
    except OSError:
        pass


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
    ``n_features=123``. Option ``tile = k`` repeats the training records k
    times, in file order (a9a's problem at k times its rows, for scaling
    measurements: with ``lam`` times k it has a9a's optimum); the test file
    is unchanged.
    """
    n = reader.spec.n_features
    tile = integer("a9a", "tile", options.get("tile", 1), 1)
    X_train, y_train = reader.parsed("a9a", _parse_svmlight, n)
    X_test, y_test = reader.parsed("a9a.t", _parse_svmlight, n)
    if tile > 1:
        X_train, y_train = sp.vstack([X_train] * tile, format="csr"), np.tile(y_train, tile)
    names = tuple(f"f{j + 1}" for j in range(n))  # LIBSVM's one-based feature numbers
    return RawDataset(
        name="a9a", train=RawTable.from_matrix(X_train, names), y_train=y_train,
        test=RawTable.from_matrix(X_test, names), y_test=y_test,
        description="a9a (LIBSVM; UCI Adult binarised, 123 sparse binary features)"
                    + (f", training records repeated {tile} times" if tile > 1 else ""),
        checksums=reader.checksums,
        provenance=reader.provenance(
            parsing="LIBSVM's binary features as distributed (width 123 from the registry), "
                    "labels +1/-1"
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


def _parse_dense_tuple(source: str, content: bytes, n_features: int) -> tuple[np.ndarray]:
    return (_parse_dense(source, content, n_features),)


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
    X_train, = reader.parsed("gisette_train.data", _parse_dense_tuple, n)
    y_train = _parse_labels(*reader.read("gisette_train.labels"), X_train.shape[0])
    X_test, = reader.parsed("gisette_valid.data", _parse_dense_tuple, n)
    y_test = _parse_labels(*reader.read("gisette_valid.labels"), X_test.shape[0])
    lo, hi = fit_minmax(X_train)
    n_constant = int(np.sum(lo == hi))
    apply_minmax(X_train, lo, hi, -1.0, 1.0)
    apply_minmax(X_test, lo, hi, -1.0, 1.0)
    return RawDataset(
        name="gisette", train=RawTable.from_matrix(X_train), y_train=y_train,
        test=RawTable.from_matrix(X_test), y_test=y_test,
        description="gisette (UCI; train/valid files, features scaled to [-1, 1])",
        checksums=reader.checksums,
        # (what, key) pairs, as fit_stage reads them
        fitted=(("the loader's min/max scaling to [-1, 1] (LIBSVM's gisette_scale) is fitted "
                 "on the training records",
                 "data.dataset to a dataset without a loader fit (gisette is read only as "
                 "LIBSVM's gisette_scale)"),),
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


def _load_adult(reader: _Reader, options: Mapping[str, Any]) -> RawDataset:
    """UCI adult.data / adult.test as raw records, with Adult's published schema.

    Every record with a missing value (``?``) is dropped: 30162 train / 15060
    test records remain (the 30162 of Huang et al. 2019, Section VI). Label
    +1 for ``>50K``, -1 for ``<=50K``. Encoding and scaling are the
    preprocessing stage's (:mod:`vfl.datasets.stage`), with the vocabularies
    and declared ranges of :data:`vfl.datasets.schemas.ADULT_SCHEMA`.
    """
    train, n_train_raw = _parse_adult(*reader.read("adult.data"))
    test, n_test_raw = _parse_adult(*reader.read("adult.test"))

    def table(frame: pd.DataFrame) -> RawTable:
        kinds = tuple("numeric" if c in _ADULT_CONTINUOUS else "categorical"
                      for c in _ADULT_COLUMNS[:-1])
        numeric = frame[[c for c in _ADULT_COLUMNS[:-1] if c in _ADULT_CONTINUOUS]]
        categorical = frame[[c for c in _ADULT_COLUMNS[:-1] if c not in _ADULT_CONTINUOUS]]
        return RawTable(names=tuple(_ADULT_COLUMNS[:-1]), kinds=kinds,
                        numeric=numeric.to_numpy(dtype=np.float64),
                        categorical=categorical.to_numpy(dtype=object))

    y_train = train["income"].map(_ADULT_LABELS).to_numpy(dtype=np.float64)
    y_test = test["income"].map(_ADULT_LABELS).to_numpy(dtype=np.float64)
    return RawDataset(
        name="adult", train=table(train), y_train=y_train, test=table(test), y_test=y_test,
        description="adult (UCI; complete records)",
        checksums=reader.checksums,
        provenance=reader.provenance(
            parsing="rows with '?' dropped; label +1 = '>50K'",
            rows_dropped={"train": n_train_raw - len(train), "test": n_test_raw - len(test)},
        ),
        schema=ADULT_SCHEMA, defaults=SCHEMA_DEFAULTS["adult"],
    )


# -------------------------------------------------------------------- entry point

_LOADERS = {"a9a": _load_a9a, "gisette": _load_gisette, "adult": _load_adult}

#: Dataset-specific ``options`` keys accepted by :func:`load_raw`.
LOADER_OPTIONS: dict[str, tuple[str, ...]] = {
    "a9a": ("tile",), "gisette": (), "adult": (),
    SYNTHETIC_NAME: SYNTHETIC_OPTIONS, **USER_FILE_OPTIONS,
}

#: options that moved to the ``[preprocessing]`` section, with their new key
MOVED_OPTIONS = {
    "normalize_rows": "preprocessing.normalize_rows",
    "encoding": "preprocessing.encoding",
    "categorical": "preprocessing.encoding",
    "scaling": "preprocessing.scaling (with preprocessing.range)",
    "row_norm": "preprocessing.normalize_rows or preprocessing.row_clip",
    "fit": "preprocessing.bounds",
}


def _as_raw(data: Dataset, fitted: tuple = ()) -> RawDataset:
    """A generated (numeric) dataset as raw records."""
    return RawDataset(name=data.name, train=RawTable.from_matrix(data.X_train), y_train=data.y_train,
                      test=RawTable.from_matrix(data.X_test), y_test=data.y_test,
                      description=data.description, is_stand_in=data.is_stand_in,
                      checksums=data.checksums, provenance=data.provenance, fitted=fitted)


def load_raw(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    verify: bool = True,
    use_cache: bool = True,
) -> RawDataset:
    """Read a dataset's records, before the preprocessing stage.

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
        ``synthetic``: the keyword arguments of :func:`make_synthetic` plus
        ``preset``; ``libsvm`` / ``csv``: see :mod:`vfl.datasets.userfiles`.
        Encoding, scaling and row norms are the ``[preprocessing]`` section's
        (:mod:`vfl.datasets.stage`), not dataset options.
    verify : bool
        Check each file's sha256 before parsing (default). With False the
        digests are still computed and recorded, but not compared.
    use_cache : bool
        Read and write the parsed-array cache (default). False (a release-only
        run): nothing is left in the user cache directory.

    Raises
    ------
    DataError
        Unknown dataset or option, missing / corrupt / malformed files.
    """
    options = dict(options or {})
    base = name.split(":", 1)[0] if isinstance(name, str) else name
    if base != SYNTHETIC_NAME and name not in USER_FILE_LOADERS:
        get_spec(name)  # unknown names fail first, listing the known ones
    valid = LOADER_OPTIONS[base]
    unknown = sorted(set(options) - set(valid))
    moved = [k for k in unknown if k in MOVED_OPTIONS]
    if moved:
        raise DataError(f"{name}: option {moved[0]} moved to the [preprocessing] section: set "
                        f"{MOVED_OPTIONS[moved[0]]}")
    if unknown:
        raise DataError(f"{name}: unknown option(s) {', '.join(unknown)}; "
                        f"valid options: {', '.join(valid) or '(none)'}")

    if base == SYNTHETIC_NAME:
        if ":" in name:
            preset = name.split(":", 1)[1]
            if options.setdefault("preset", preset) != preset:
                raise DataError(f"{name}: conflicting option preset={options['preset']!r}")
        return _as_raw(synthetic_from_options(options))
    if name in USER_FILE_LOADERS:  # the user's own files, named by the options
        data = USER_FILE_LOADERS[name](options)
        data.provenance["options"] = dict(options)
        return data
    data = _LOADERS[name](_Reader(get_spec(name), data_dir, verify, use_cache), options)
    data.provenance["options"] = dict(options)
    return data


def load_dataset(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    verify: bool = True,
    preprocessing: Mapping[str, Any] | None = None,
) -> Dataset:
    """Load a dataset and run the preprocessing stage on it, outside any private run.

    ``preprocessing`` holds ``[preprocessing]`` keys (see
    :mod:`vfl.datasets.stage`); unset keys take the dataset's defaults
    (Adult: one-hot with its published vocabulary, min/max to [0, 1] within
    its declared ranges). Parameters the schema does not give may be fitted
    on the training records here, and the provenance says so; a private run
    goes through :func:`vfl.datasets.stage.fit_stage` with ``private=True``.
    """
    from vfl.datasets.stage import preprocess

    raw = load_raw(name, data_dir, options=options, verify=verify)
    return preprocess(raw, preprocessing or {})
