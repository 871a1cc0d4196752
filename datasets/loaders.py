"""Reading the datasets' records: :func:`load_raw`, and :func:`load_dataset` on top of it.

Every loader reads each file once, checks its sha256 against the registry,
parses it and records that in the provenance. A run that claims a guarantee
(``strict=False``) reads every record as one row instead of stopping at a bad
one (:mod:`vfl.datasets.records`), and records a checksum mismatch under
``provenance["diagnostic"]`` rather than stopping. The parsed arrays of a9a and
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets._checks import integer
from vfl.datasets.adult import ADULT_OPTIONS, load_adult
from vfl.datasets.base import Dataset, RawDataset
from vfl.datasets.files import find_file, read_file, require_files, resolve_data_dir, user_cache_dir
from vfl.datasets.parties.join import load_parties
from vfl.datasets.parties.spec import DATA_KEYS as PARTY_DATA_KEYS
from vfl.datasets.preprocessing import apply_minmax, fit_minmax
from vfl.datasets.records import LibsvmRules, parse_libsvm, record_lines
from vfl.datasets.registry import SYNTHETIC_NAME, DatasetSpec, FileSpec, get_spec
from vfl.datasets.schemas import FILE_RECORDS
from vfl.datasets.stage import preprocess, refuse_private
from vfl.datasets.synthetic import SYNTHETIC_OPTIONS, synthetic_from_options
from vfl.datasets.userfiles import USER_FILE_LOADERS, USER_FILE_OPTIONS

__all__ = ["load_dataset", "load_raw", "LOADER_OPTIONS", "MOVED_OPTIONS"]


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _file(spec: DatasetSpec, name: str) -> FileSpec:
    return next(f for f in spec.files if f.name == name)


class _Reader:
    """Reads a dataset's files and remembers what was read, for provenance."""

    def __init__(self, spec: DatasetSpec, data_dir, verify: bool, strict: bool = True, use_cache: bool = True):
        self.spec = spec
        self.data_dir = resolve_data_dir(data_dir)
        self.verify = verify
        # A run that claims a guarantee does not stop on a changed file: that would tell a
        # changed record apart. The mismatch is recorded (diagnostic) instead.
        self.strict = strict
        self.mismatched: list[str] = []
        self.use_cache = use_cache
        self.paths: dict[str, str] = {}
        self.checksums: dict[str, str] = {}
        # Report every missing file at once, before spending time on any.
        require_files(spec.name, spec.files, self.data_dir)

    def read(self, file_name: str) -> tuple[str, bytes]:
        """Return (path actually read, decompressed content) of one file."""
        spec = _file(self.spec, file_name)
        path, content, sha = read_file(self.spec.name, spec, self.data_dir, verify=self.verify and self.strict)
        self._checked(file_name, sha)
        self.paths[file_name] = str(path)
        self.checksums[file_name] = sha
        return str(path), content

    def _checked(self, file_name: str, sha: str) -> None:
        if self.verify and not self.strict and sha != _file(self.spec, file_name).sha256:
            self.mismatched.append(file_name)

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
            if self.verify and self.strict and content_sha != spec.sha256:
                raise DataError(
                    f"{spec.name}: sha256 mismatch in {path}: expected "
                    f"{spec.sha256}, got {content_sha} (re-download with "
                    f"`vfl datasets fetch {self.spec.name} --force`)"
                )
            self._checked(file_name, content_sha)
            self.paths[file_name], self.checksums[file_name] = str(path), content_sha
            return arrays
        source, content = self.read(file_name)
        arrays = parse(source, content, *args)
        _save_parsed(entry, self.checksums[file_name], arrays)
        return arrays

    def provenance(self, **extra) -> dict:
        """What was read; ``diagnostic`` (always present) holds what depends on the records."""
        diagnostic = {**extra.pop("diagnostic", {})}
        if self.verify and not self.strict:
            diagnostic["sha256_mismatch"] = list(self.mismatched)
        return {
            "source": "files",
            "data_dir": str(self.data_dir),
            "files": dict(self.paths),
            "verified": self.verify,
            **extra,
            "diagnostic": diagnostic,
        }


#: bump when a parser's output changes: every cached parse is then redone
PARSER_VERSION = 2


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
            n = int(z["n"])
            if "csr_data" in z:
                X = sp.csr_matrix((z["csr_data"], z["csr_indices"], z["csr_indptr"]), shape=tuple(z["csr_shape"]))
                return sha, (X, *(z[f"a{i}"] for i in range(1, n)))
            return sha, tuple(z[f"a{i}"] for i in range(n))
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile):
        return None


def _save_parsed(entry: Path, content_sha: str, arrays) -> None:
    """Write a cache entry atomically; a cache that cannot be written is only slower."""
    arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    payload = {"n": np.array(len(arrays)), **{f"a{i}": a for i, a in enumerate(arrays)}}
    if sp.issparse(arrays[0]):
        X = arrays[0].tocsr()
        del payload["a0"]
        payload.update(csr_data=X.data, csr_indices=X.indices, csr_indptr=X.indptr, csr_shape=np.array(X.shape))
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
    from sklearn.datasets import load_svmlight_file  # lazy: start-up (sklearn.datasets, 1.0 s)

    try:
        # zero_based=False: LIBSVM files are 1-based; an index 0 is an error,
        # not a reason to silently shift every column.
        X, y = load_svmlight_file(io.BytesIO(content), n_features=n_features, dtype=np.float64, zero_based=False)
    except (ValueError, RuntimeError, IndexError) as exc:
        raise DataError(f"{source}: malformed svmlight file ({_one_line(exc)})") from exc
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
    :func:`vfl.datasets.records.parse_libsvm`): an entry outside the 123 binary features
    is left out, a label other than -1 / +1 is -1, a blank or comment line is an empty
    row. Returns (X, y, repair counts)."""
    try:
        lines = record_lines(content, header=header, count=count)
    except ValueError as exc:
        raise DataError(f"{source}: {exc}") from None
    X, y, repairs = parse_libsvm(lines, LibsvmRules(n_features, **_A9A_RULES))
    counts = (repairs.records, repairs.labels, repairs.fields.get("entries", 0), repairs.malformed_records)
    return X, y, np.array(counts, dtype=np.int64)


def _a9a_file(reader: _Reader, name: str, n: int, strict: bool, repairs: dict):
    if strict:
        return reader.parsed(name, _parse_svmlight, n)
    layout = FILE_RECORDS[name]
    X, y, counts = reader.parsed(name, _parse_a9a_records, n, layout.header, layout.count)
    repairs[name] = dict(zip(_REPAIR_KEYS, map(int, counts)))
    return X, y


def _load_a9a(reader: _Reader, options: Mapping[str, Any], strict: bool = True) -> Dataset:
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


# ------------------------------------------------------------------------- gisette


def _parse_dense(source: str, content: bytes, n_features: int) -> np.ndarray:
    try:
        # numpy >= 1.23 parses in C; faster here than pandas and str.split.
        X = np.loadtxt(io.BytesIO(content), dtype=np.float64, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{source}: malformed data file ({_one_line(exc)})") from exc
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
        raise DataError(f"{source}: malformed labels file ({_one_line(exc)})") from exc
    if y.shape[0] != n_rows:
        raise DataError(f"{source}: expected {n_rows} labels (one per data row), got {len(y)}")
    if not np.all(np.abs(y) == 1):
        raise DataError(f"{source}: labels must be -1 or 1")
    return y


#: (what, key) of gisette's loader fit, as fit_stage reads it
_GISETTE_FITTED = (
    (
        "the loader's min/max scaling to [-1, 1] (LIBSVM's gisette_scale) is fitted on the training records",
        "data.dataset to a dataset without a loader fit (gisette is read only as LIBSVM's gisette_scale)",
    ),
)


def _load_gisette(reader: _Reader, options: Mapping[str, Any], strict: bool = True) -> Dataset:
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
        fitted=_GISETTE_FITTED,
        provenance=reader.provenance(
            preprocessing=(
                "as LIBSVM gisette_scale: each feature linearly scaled to [-1, 1] with "
                "training min/max; constant features set to 0; test (= UCI valid) "
                "scaled with training ranges, not clipped"
            ),
            constant_features=n_constant,
        ),
    )


# -------------------------------------------------------------------- entry point

_LOADERS = {"a9a": _load_a9a, "gisette": _load_gisette, "adult": load_adult}
#: what a run that claims a guarantee refuses before reading a file: a loader fit
_REFUSED_PRIVATE = {"gisette": _GISETTE_FITTED}

#: Dataset-specific ``options`` keys accepted by :func:`load_raw`.
LOADER_OPTIONS: dict[str, tuple[str, ...]] = {
    "a9a": ("tile",),
    "gisette": (),
    "adult": ADULT_OPTIONS,
    SYNTHETIC_NAME: SYNTHETIC_OPTIONS,
    **USER_FILE_OPTIONS,
    "parties": PARTY_DATA_KEYS,
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
    return RawDataset(
        name=data.name,
        train=RawTable.from_matrix(data.X_train),
        y_train=data.y_train,
        test=RawTable.from_matrix(data.X_test),
        y_test=data.y_test,
        description=data.description,
        is_stand_in=data.is_stand_in,
        checksums=data.checksums,
        provenance=data.provenance,
        fitted=fitted,
    )


def load_raw(
    name: str,
    data_dir: str | os.PathLike | None = None,
    *,
    options: Mapping[str, Any] | None = None,
    verify: bool = True,
    strict: bool = True,
    use_cache: bool = True,
) -> RawDataset:
    """Read a dataset's records, before the preprocessing stage.

    Parameters
    ----------
    name : str
        ``"a9a"``, ``"gisette"``, ``"adult"`` (read from ``data_dir``), or
        ``"synthetic"`` / ``"synthetic:<preset>"`` (generated; ``data_dir``
        and ``verify`` are then unused), or ``"libsvm"`` / ``"csv"`` (the
        user's own files, named by options; see :mod:`vfl.datasets.userfiles`), or
        ``"parties"`` (one file per party, aligned; :mod:`vfl.datasets.parties`).
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
    strict : bool
        True (a run that claims no guarantee): a malformed record is an error
        naming it. False (a run that claims one): every record of the file is
        one row, whatever its bytes: a missing or malformed field takes a
        public default, each record is parsed alone and N is fixed by the
        file's line structure (:mod:`vfl.datasets.records`); a checksum
        mismatch is recorded under ``provenance["diagnostic"]`` instead of
        stopping the run, and options a private run cannot use are refused
        before any file is read.
    use_cache : bool
        Read and write the parsed-array cache (default). False (a release-only
        run): nothing is left in the user cache directory.

    Raises
    ------
    DataError
        Unknown dataset or option, missing / corrupt / malformed files.
    ConfigError
        ``strict=False`` on a dataset a private run cannot read (a loader fit:
        gisette), or on a user file without the public options it needs.
    """
    options = dict(options or {})
    base = name.split(":", 1)[0] if isinstance(name, str) else name
    if base != SYNTHETIC_NAME and name not in USER_FILE_LOADERS and name != "parties":
        get_spec(name)  # unknown names fail first, listing the known ones
    valid = LOADER_OPTIONS[base]
    unknown = sorted(set(options) - set(valid))
    moved = [k for k in unknown if k in MOVED_OPTIONS]
    if moved:
        raise DataError(
            f"{name}: option {moved[0]} moved to the [preprocessing] section: set {MOVED_OPTIONS[moved[0]]}"
        )
    if unknown:
        raise DataError(
            f"{name}: unknown option(s) {', '.join(unknown)}; valid options: {', '.join(valid) or '(none)'}"
        )

    if base == SYNTHETIC_NAME:
        if ":" in name:
            preset = name.split(":", 1)[1]
            if options.setdefault("preset", preset) != preset:
                raise DataError(f"{name}: conflicting option preset={options['preset']!r}")
        return _as_raw(synthetic_from_options(options))
    if not strict and name in _REFUSED_PRIVATE:  # before any record is read
        what, key = _REFUSED_PRIVATE[name][0]
        raise refuse_private(f"{name}: {what}", key)
    if name == "parties":  # one file per party, rows aligned by PSI
        data = load_parties(options, strict=strict)
        data.provenance["options"] = dict(options)
        return data
    if name in USER_FILE_LOADERS:  # the user's own files, named by the options
        data = USER_FILE_LOADERS[name](options, strict=strict)
        data.provenance["options"] = dict(options)
        return data
    data = _LOADERS[name](_Reader(get_spec(name), data_dir, verify, strict, use_cache), options, strict)
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
    raw = load_raw(name, data_dir, options=options, verify=verify)
    return preprocess(raw, preprocessing or {})
