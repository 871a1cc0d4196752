"""Datasets from the user's own files: any LIBSVM or CSV file.

``load_raw("libsvm", options={"path": ..., ...})`` and
``load_raw("csv", options={"path": ..., "label": ..., ...})`` read a
training file and either a separate test file (``test_path``) or hold out a
seeded share of the training rows (label-stratified unless ``stratify = false``) (``test_fraction``).

Files may be plain or ``.gz`` / ``.bz2`` / ``.xz`` compressed. The extension
decides how a file is decompressed and the leading bytes must agree with it:
a ``.gz`` that is not gzip, or a gzip file without ``.gz``, is an error
rather than a guess. Relative paths are resolved against the current working
directory (where ``vfl`` is run), not against the data directory, which only
holds the registry datasets.

Parsing is done by :func:`sklearn.datasets.load_svmlight_file` and
:func:`pandas.read_csv`; this module only checks what they return, so that
every problem a user can cause is one :class:`~vfl.core.errors.DataError`
line naming the file (and the line and column where that makes sense),
raised before anything is computed or written. Line numbers are 1-based
lines of the (decompressed) file, assuming one record per line.

Labels must take two values. The smaller one maps to -1 and the larger to
+1 (numeric order if every label is a number, else string order), unless
``label_positive`` names the raw value that becomes +1; ``{0, 1}`` and
``{-1, +1}`` therefore map as expected. The logistic and squared losses are
symmetric under swapping the classes (``y -> -y``, ``w -> -w``), so the
choice changes no objective value or accuracy; it is recorded anyway.

Every file read is recorded in ``Dataset.checksums`` (resolved path ->
sha256 of the file as stored, i.e. of the compressed bytes for a compressed
file) and ``Dataset.provenance["files"]`` (path as given and resolved, size,
sha256, compression and, for compressed files, the sha256 of the
decompressed content), with the parsing options, the split, the label
mapping and the preprocessing, so that a rerun on a changed file shows in
the manifest.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import numbers
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.datasets._checks import integer
from vfl.core.preprocessing import RawTable
from vfl.datasets.base import RawDataset

__all__ = [
    "USER_FILE_LOADERS",
    "USER_FILE_OPTIONS",
    "UserFile",
    "read_user_file",
    "load_libsvm",
    "load_csv",
    "guess_format",
    "inspect_file",
    "suggest_partition",
]

#: ``options`` accepted by ``load_raw("libsvm", ...)``.
LIBSVM_OPTIONS = ("path", "test_path", "test_fraction", "split_seed", "stratify", "n_features",
                  "zero_based", "label_positive", "labels")
#: ``options`` accepted by ``load_raw("csv", ...)``.
CSV_OPTIONS = ("path", "label", "features", "categorical_columns",
               "test_path", "test_fraction", "split_seed", "stratify", "label_positive",
               "delimiter", "labels", "fill")
USER_FILE_OPTIONS: dict[str, tuple[str, ...]] = {"libsvm": LIBSVM_OPTIONS, "csv": CSV_OPTIONS}

_MAX_SEED = 2**32 - 1  # what sklearn's random_state accepts


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _preview(values: Sequence, limit: int = 10) -> str:
    """``'a', 'b', ... (N in all)``: names in messages, never a screenful."""
    shown = ", ".join(_show(v) for v in values[:limit])
    return shown + (f", ... ({len(values)} in all)" if len(values) > limit else "")


def _show(value) -> str:
    """A raw label or cell value as the user would recognise it."""
    if isinstance(value, (float, np.floating)):
        return f"{value:g}"
    if isinstance(value, (numbers.Integral, np.integer)):
        return str(int(value))
    return repr(str(value))


def _jsonable(value):
    """Raw label values for provenance: float, or str."""
    return float(value) if isinstance(value, (numbers.Real, np.floating)) else str(value)


# ------------------------------------------------------------------ reading files

_EXTENSIONS = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
_SUFFIX = {v: k for k, v in _EXTENSIONS.items()}
# bzip2: "BZh", block size digit, then a block header or the end-of-stream
# marker; requiring all 10 bytes keeps a CSV header "BZh..." from matching.
_SNIFF = (
    ("gzip", re.compile(rb"\x1f\x8b")),
    ("bzip2", re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")),
    ("xz", re.compile(rb"\xfd7zXZ\x00")),
)
# Formats people save tables in that are not text at all.
_FOREIGN = (
    (b"PK\x03\x04", "a zip archive (or an .xlsx workbook)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed"),
    (b"PAR1", "a Parquet file"),
    (b"\x93NUMPY", "a NumPy .npy file"),
)


def _sniff(raw: bytes) -> str | None:
    return next((kind for kind, magic in _SNIFF if magic.match(raw)), None)


def _decompress(kind: str, raw: bytes) -> bytes:
    return {"gzip": gzip.decompress, "bzip2": bz2.decompress, "xz": lzma.decompress}[kind](raw)


@dataclass(frozen=True, eq=False)
class UserFile:
    """One file read for a user dataset: where it is, what it was, its text.

    ``sha256`` and ``size`` describe the file as stored (compressed bytes for
    a compressed file); ``content`` is the decompressed text that is parsed.
    """

    given: str
    path: Path
    size: int
    sha256: str
    compression: str | None
    content: bytes

    def record(self) -> dict:
        """JSON-ready provenance of this file."""
        rec = {"path": str(self.path), "given": self.given, "size": self.size,
               "sha256": self.sha256, "compression": self.compression or "none"}
        if self.compression:
            rec["content_sha256"] = hashlib.sha256(self.content).hexdigest()
            rec["content_size"] = len(self.content)
        return rec


def read_user_file(path: str | os.PathLike, *, strict: bool = True) -> UserFile:
    """Read, check and decompress one data file.

    Relative paths are resolved against the current directory. The whole
    file is read once: the bytes that are hashed are the bytes that are
    decompressed and parsed. ``strict=False`` (a run that claims a guarantee):
    the extension alone decides the decompression and the text is not checked
    (a record's bytes never stop the run; :mod:`vfl.datasets.records`).

    Raises
    ------
    DataError
        Missing or unreadable file, a directory, an empty file, an
        extension that disagrees with the content (``.gz`` that is not gzip,
        or compressed content without the matching extension), a truncated or
        corrupt compressed file, or binary (non-text) content.
    """
    given = os.fspath(path)
    p = Path(given).expanduser()
    resolved = (p if p.is_absolute() else Path.cwd() / p).resolve()
    if not resolved.exists():
        where = (f" (relative paths are resolved against the current directory {Path.cwd()})"
                 if not p.is_absolute() else "")
        raise DataError(f"{resolved}: no such file{where}")
    if resolved.is_dir():
        raise DataError(f"{resolved}: is a directory, not a data file")
    try:
        raw = resolved.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {resolved}: {exc.strerror or _one_line(exc)}") from exc
    if not raw:
        raise DataError(f"{resolved}: empty file (0 bytes)")

    expected = _EXTENSIONS.get(resolved.suffix.lower())
    # a plain file's first bytes are a record (LIBSVM): sniffed only in a strict reading
    actual = _sniff(raw) if strict or expected else None
    if expected and actual != expected:
        what = f"{actual}-compressed" if actual else f"not {expected}-compressed"
        raise DataError(f"{resolved}: the name ends in {resolved.suffix} but the content is "
                        f"{what} (it starts with {raw[:8]!r})")
    if actual and not expected:
        raise DataError(f"{resolved}: the content is {actual}-compressed but the name does not "
                        f"end in {_SUFFIX[actual]}; rename it to {resolved.name}{_SUFFIX[actual]}")
    content = raw
    if expected:
        try:
            content = _decompress(expected, raw)
        except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
            reason = _one_line(exc)
            if isinstance(exc, EOFError) or "ended before the end-of-stream" in reason:
                raise DataError(f"{resolved}: truncated {expected} file (the compressed data "
                                "ends before its end-of-stream marker)") from exc
            raise DataError(f"{resolved}: corrupt {expected} file ({reason})") from exc
    if not strict:
        return UserFile(given=given, path=resolved, size=len(raw),
                        sha256=hashlib.sha256(raw).hexdigest(), compression=expected,
                        content=content)
    _refuse_binary(resolved, content, f" (decompressed from {expected})" if expected else "")
    if not content.strip():
        raise DataError(f"{resolved}: empty file (no data"
                        + (" after decompression)" if expected else ", only whitespace)"))
    return UserFile(given=given, path=resolved, size=len(raw),
                    sha256=hashlib.sha256(raw).hexdigest(), compression=expected,
                    content=content)


def _refuse_binary(path: Path, content: bytes, decompressed: str) -> None:
    """Reject content that is not text: archives, other formats, NUL bytes."""
    for magic, what in _FOREIGN:
        if content.startswith(magic):
            raise DataError(f"{path}: the content{decompressed} is {what}, not LIBSVM or CSV "
                            "text (vfl reads plain, .gz, .bz2 and .xz text files)")
    again = _sniff(content)
    if again:  # only possible inside a compressed file: plain ones were checked above
        raise DataError(f"{path}: the content{decompressed} is compressed again ({again})")
    if b"\x00" in content[:1 << 16]:
        raise DataError(f"{path}: binary content{decompressed} (NUL bytes), not a text file "
                        "(a UTF-16 export? save it as UTF-8)")


def _data_line_numbers(content: bytes, comments: bool) -> np.ndarray:
    """1-based file line of each record, skipping blank (and ``#`` comment) lines.

    Only called to word an error, so a Python pass over the lines is fine.
    """
    lines = content.split(b"\n")
    if comments:
        keep = [i + 1 for i, line in enumerate(lines) if line.split(b"#", 1)[0].strip()]
    else:
        keep = [i + 1 for i, line in enumerate(lines) if line.strip()]
    return np.asarray(keep, dtype=np.int64)


# ------------------------------------------------------------------- option checks

def _path_option(fmt: str, options: Mapping, key: str, required: bool) -> str | None:
    value = options.get(key)
    if value is None:
        if required:
            raise DataError(f"{fmt}: option {key} is required (the training file)")
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise DataError(f"{fmt}: option {key} must be a file path, got {value!r}")
    return os.fspath(value)


def _stratify(fmt: str, options: Mapping) -> bool:
    value = options.get("stratify", True)
    if not isinstance(value, (bool, np.bool_)):
        raise DataError(f"{fmt}: stratify must be true or false, got {value!r}")
    return bool(value)


def _test_options(fmt: str, options: Mapping) -> tuple[str | None, float | None, int]:
    """(test_path, test_fraction, split_seed), exactly one of the first two set."""
    test_path = _path_option(fmt, options, "test_path", required=False)
    fraction = options.get("test_fraction")
    if test_path is not None and fraction is not None:
        raise DataError(f"{fmt}: give test_path or test_fraction, not both")
    if test_path is None and fraction is None:
        raise DataError(f"{fmt}: needs test_path (a separate test file) or test_fraction "
                        "(the share of the rows of path held out for testing, e.g. 0.2)")
    if fraction is not None:
        ok = (isinstance(fraction, numbers.Real) and not isinstance(fraction, bool)
              and 0.0 < fraction < 1.0)
        if not ok:
            raise DataError(f"{fmt}: test_fraction must be a number in (0, 1), got {fraction!r}")
        fraction = float(fraction)
    seed = integer(fmt, "split_seed", options.get("split_seed", 0), 0)
    if seed > _MAX_SEED:
        raise DataError(f"{fmt}: split_seed must be an integer >= 0 and <= {_MAX_SEED}, "
                        f"got {seed}")
    return test_path, fraction, seed


def _label_positive(fmt: str, options: Mapping):
    value = options.get("label_positive")
    if value is not None and not isinstance(value, (str, numbers.Real)):
        raise DataError(f"{fmt}: label_positive must be a label value (number or string), "
                        f"got {value!r}")
    return value


def declared_labels(fmt: str, options: Mapping) -> list | None:
    """``labels = [negative, positive]``: the two raw label values (numbers or strings),
    the first read as -1, the second as +1; None when not given."""
    value = options.get("labels")
    if value is None:
        return None
    if options.get("label_positive") is not None:
        raise DataError(f"{fmt}: give labels or label_positive, not both")

    def ok(v):
        if isinstance(v, str):
            return bool(v.strip())
        return isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v)

    if (not isinstance(value, (list, tuple)) or len(value) != 2 or not all(map(ok, value))
            or value[0] == value[1]):
        raise DataError(f"{fmt}: labels must be [negative, positive], two different label "
                        f"values (numbers or strings), got {value!r}")
    return list(value)


def _name_list(fmt: str, options: Mapping, key: str) -> list[str] | None:
    value = options.get(key)
    if value is None:
        return None
    if (not isinstance(value, (list, tuple)) or not value
            or not all(isinstance(v, str) and v for v in value)):
        raise DataError(f"{fmt}: {key} must be a non-empty list of column names, got {value!r}")
    from collections import Counter

    twice = sorted(v for v, n in Counter(value).items() if n > 1)
    if twice:
        raise DataError(f"{fmt}: {key} lists {_preview(twice)} more than once")
    return list(value)


# ----------------------------------------------------------------------- labels

def _binary_labels(train: UserFile, y_raw: np.ndarray, label_positive,
                   test: UserFile | None = None, y_test_raw: np.ndarray | None = None,
                   declared: list | None = None):
    """Map the two raw label values to -1 / +1.

    ``y_raw`` is float64, or an object array of str (CSV labels that are not
    all numbers); ``y_test_raw`` has the same kind. Returns ``(y, y_test,
    mapping)`` with ``mapping`` JSON-ready. ``declared`` (``labels``): the two
    values, negative first; any other label is an error.
    """
    if declared is not None:
        return _declared_labels(train, y_raw, declared, test, y_test_raw)
    classes = np.unique(y_raw)
    if classes.size == 1:
        raise DataError(f"{train.path}: constant label: every row has label "
                        f"{_show(classes[0])}; binary classification needs two classes")
    if classes.size > 2:
        raise DataError(f"{train.path}: {classes.size} distinct labels "
                        f"({_preview(list(classes), 5)}); binary classification needs "
                        "exactly two")
    numeric = y_raw.dtype.kind == "f"
    if label_positive is None:
        negative, positive = classes
        if not numeric or {float(negative), float(positive)} not in ({0.0, 1.0}, {-1.0, 1.0}):
            # README: {0, 1} and {-1, +1} are read as such; two other values are named
            raise DataError(f"{train.path}: labels {_show(negative)} and {_show(positive)} are "
                            "neither {0, 1} nor {-1, +1}: say which is +1 with label_positive "
                            f"= {_show(positive)} (or labels = [negative, positive])")
        rule = "larger label is +1"
    else:
        try:
            wanted = float(label_positive) if numeric else str(label_positive)
        except ValueError:
            wanted = None
        if wanted not in classes.tolist():
            raise DataError(f"{train.path}: label_positive = {label_positive!r} is not one of "
                            f"the labels {_show(classes[0])}, {_show(classes[1])}")
        positive = wanted
        negative = classes[0] if classes[1] == wanted else classes[1]
        rule = f"label_positive = {label_positive!r}"
    mapping = {"-1": _jsonable(negative), "+1": _jsonable(positive), "rule": rule}
    y_test = None
    if y_test_raw is not None:
        unknown = np.setdiff1d(np.unique(y_test_raw), classes)
        if unknown.size:
            raise DataError(f"{test.path}: test label(s) {_preview(list(unknown), 5)} do not "
                            f"occur in the training file (whose labels are "
                            f"{_show(classes[0])}, {_show(classes[1])})")
        y_test = np.where(y_test_raw == positive, 1.0, -1.0)
    return np.where(y_raw == positive, 1.0, -1.0), y_test, mapping


def _declared_labels(train, y_raw, declared, test, y_test_raw):
    numeric = y_raw.dtype.kind == "f"
    try:
        values = [float(v) if numeric else str(v) for v in declared]
    except ValueError:
        raise DataError(f"{train.path}: labels = {declared!r} are not numbers, but every label "
                        "in the file is") from None
    out = []
    for f, raw in ((train, y_raw), (test, y_test_raw)):
        if raw is None:
            out.append(None)
            continue
        unknown = np.setdiff1d(np.unique(raw), values)
        if unknown.size:
            raise DataError(f"{f.path}: label(s) {_preview(list(unknown), 5)} are not among "
                            f"labels = [{_show(values[0])}, {_show(values[1])}]")
        out.append(np.where(raw == values[1], 1.0, -1.0))
    mapping = {"-1": _jsonable(values[0]), "+1": _jsonable(values[1]), "rule": "data.labels"}
    return out[0], out[1], mapping


def _split(train: UserFile, y: np.ndarray, fraction: float, seed: int, mapping: dict,
           stratify: bool = True):
    """Seeded split, stratified by label unless ``stratify`` is false; each part keeps the
    file's row order.

    Without stratification the split is one seeded permutation of the row
    numbers: which part a record lands in depends on nothing but its
    position, so replacing one record moves no other (what a private run
    needs; a stratified split lets every label decide every row's part).
    """
    from sklearn.model_selection import train_test_split  # deferred: heavy import

    if not stratify:
        n_test = int(np.ceil(fraction * y.size))
        if n_test < 1 or y.size - n_test < 1:
            raise DataError(f"{train.path}: test_fraction = {fraction:g} of {y.size} rows leaves "
                            f"{n_test} for testing and {y.size - n_test} for training")
        perm = np.random.default_rng(seed).permutation(y.size)
        return np.sort(perm[n_test:]), np.sort(perm[:n_test])

    for value, raw in ((-1.0, mapping["-1"]), (1.0, mapping["+1"])):
        count = int(np.sum(y == value))
        if count < 2:
            raise DataError(f"{train.path}: cannot hold out test_fraction = {fraction:g} "
                            f"stratified by label: label {_show(raw)} has only {count} row and "
                            "a stratified split needs at least 2 of each")
    n_test = int(np.ceil(fraction * y.size))  # sklearn's rounding of test_size
    if n_test < 2 or y.size - n_test < 2:
        raise DataError(f"{train.path}: test_fraction = {fraction:g} of {y.size} rows leaves "
                        f"{n_test} row{'s' if n_test != 1 else ''} for testing and "
                        f"{y.size - n_test} for training; a stratified split needs at least "
                        "one row of each label in each part")
    try:
        tr, te = train_test_split(np.arange(y.size), test_size=fraction, stratify=y,
                                  random_state=seed, shuffle=True)
    except ValueError as exc:  # not expected after the checks above
        raise DataError(f"{train.path}: cannot hold out test_fraction = {fraction:g} of "
                        f"{y.size} rows stratified by label ({_one_line(exc)})") from exc
    return np.sort(tr), np.sort(te)


def _split_record(test_path, fraction, seed, n_train, n_test, stratify=True) -> dict:
    if test_path is not None:
        return {"test": "test_path", "n_train": n_train, "n_test": n_test}
    return {"test": "held out from path", "test_fraction": fraction, "split_seed": seed,
            "stratified_by_label": stratify, "row_order": "file order within each part",
            "n_train": n_train, "n_test": n_test}


def _files(train: UserFile, test: UserFile | None) -> tuple[dict, dict]:
    """(checksums, provenance files) of the files read."""
    read = {"train": train, **({"test": test} if test is not None else {})}
    return ({str(f.path): f.sha256 for f in read.values()},
            {role: f.record() for role, f in read.items()})


# ---------------------------------------------------------------------- LIBSVM

def _parse_libsvm(f: UserFile) -> tuple[sp.csr_matrix, np.ndarray]:
    """Parse with the indices as written (column k holds index k); check values."""
    from sklearn.datasets import load_svmlight_file  # deferred: heavy import

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
            raise DataError(f"{f.path} line {lines[bad_y[0]]}: label {y[bad_y[0]]:g} is not a "
                            "finite number")
        raise DataError(f"{f.path} line {lines[row_x]}: feature {X.indices[bad_x[0]]} has value "
                        f"{X.data[bad_x[0]]:g} (NaN and inf are not allowed)")
    return X, np.asarray(y, dtype=np.float64)


def _first_entry(f: UserFile, X: sp.csr_matrix, mask: np.ndarray) -> tuple[int, int]:
    """(file line, column) of the first stored entry selected by ``mask``."""
    k = int(np.flatnonzero(mask)[0])
    row = int(np.searchsorted(X.indptr, k, side="right") - 1)
    return int(_data_line_numbers(f.content, comments=True)[row]), int(X.indices[k])


def _has_index_zero(X: sp.csr_matrix | None) -> bool:
    return X is not None and X.nnz > 0 and int(X.indices.min()) == 0


def _libsvm_columns(f: UserFile, X: sp.csr_matrix, one_based: bool,
                    n_features: int | None) -> sp.csr_matrix:
    """Columns 0.. of a file parsed as written: drop a one-based file's empty column 0."""
    if one_based and _has_index_zero(X):  # only with zero_based = false: "auto" saw no 0
        line, _ = _first_entry(f, X, X.indices == 0)
        raise DataError(f"{f.path} line {line}: feature index 0 in a one-based file "
                        "(zero_based = false); set zero_based = true if the files count "
                        "features from 0")
    if one_based:
        X = X[:, 1:] if X.shape[1] else X
    if n_features is not None and X.shape[1] > n_features:
        line, column = _first_entry(f, X, X.indices >= n_features)
        raise DataError(f"{f.path} line {line}: feature index {column + int(one_based)} exceeds "
                        f"n_features = {n_features} (indices are "
                        f"{'one' if one_based else 'zero'}-based)")
    return X


def _pad(X: sp.csr_matrix, n: int) -> sp.csr_matrix:
    return sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n))


def _libsvm_options(options: Mapping) -> tuple[int | None, Any]:
    n_features = options.get("n_features")
    if n_features is not None:
        n_features = integer("libsvm", "n_features", n_features, 1)
    zero_based = options.get("zero_based", "auto")
    if zero_based != "auto" and not isinstance(zero_based, (bool, np.bool_)):
        raise DataError(f"libsvm: zero_based must be \"auto\", true or false, got {zero_based!r}")
    return n_features, zero_based if zero_based == "auto" else bool(zero_based)


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
    read alone (:func:`vfl.datasets.userrecords.load_libsvm_records`).
    """
    if not strict:
        from vfl.datasets.userrecords import load_libsvm_records

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
            raise DataError(f"{test.path} line {line}: feature index {column + int(one_based)} "
                            f"is beyond the {n} features of the training file {train.path} "
                            "(set n_features to the true number of features)")
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
        fitted += (("the index base is detected from the indices in the files",
                    "data.zero_based"),)
    if test is None and stratify:
        fitted += (("the stratified test split depends on every record's label",
                    "data.stratify = false"),)
    names = tuple(f"f{j + int(one_based)}" for j in range(n))
    return RawDataset(
        name="libsvm", train=RawTable.from_matrix(X, names), y_train=y,
        test=RawTable.from_matrix(X_t, names), y_test=y_t,
        description=f"libsvm file {train.path.name} ({n} sparse features)",
        checksums=checksums, fitted=fitted,
        provenance={
            "source": "user files",
            "files": files,
            "parsing": {"format": "libsvm", "parser": "sklearn.datasets.load_svmlight_file",
                        "indices": indices, "zero_based_option": zero_based,
                        "n_features": n, "n_features_option": n_features},
            "split": _split_record(test_path, fraction, seed, X.shape[0], X_t.shape[0],
                                   stratify),
            "label_mapping": mapping,
            "parsed": (
                f"features as in the file ({indices} indices, {n} columns, sparse); "
                f"labels {_show(mapping['-1'])} -> -1, {_show(mapping['+1'])} -> +1 "
                f"({mapping['rule']})"
            ),
        },
    )


# ------------------------------------------------------------------------- CSV

_NAN_SPELLINGS = ("nan", "+nan", "-nan")
_MISSING = "missing value (fill or drop the row; vfl does not impute)"


@dataclass(frozen=True, eq=False)
class _Column:
    """One parsed feature column of a CSV file."""

    name: str
    kind: str  # "numeric" or "categorical"
    values: np.ndarray  # float64 (numeric), object array of str (categorical)
    detected: bool = False  # categorical because no cell is a number (not declared)


def _text(series: pd.Series) -> pd.Series:
    return series.astype(str).str.strip()


def _numeric(series: pd.Series):
    """float64 values of a column, and per cell: empty, not a number at all."""
    if pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        values = series.to_numpy(dtype=np.float64)  # booleans become 1 / 0
        none = np.zeros(values.size, dtype=bool)
        return values, none, none
    text = _text(series)
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    empty = (text == "").to_numpy()
    nan_literal = text.str.lower().isin(_NAN_SPELLINGS).to_numpy()
    return values, empty, np.isnan(values) & ~empty & ~nan_literal


def _parse_column(name: str, series: pd.Series, categorical: bool, detect: bool):
    """One feature column and the (row, message) of its first bad cell, or None."""
    detected = False
    if not categorical:
        values, empty, non_numeric = _numeric(series)
        if detect and non_numeric.any() and not (~empty & ~non_numeric).any():
            categorical = detected = True  # no cell is a number: e.g. "sex", "city"
        else:
            bad = np.flatnonzero(empty | non_numeric | ~np.isfinite(values))
            problem = None
            if bad.size:
                i, raw = int(bad[0]), str(series.iloc[bad[0]]).strip()
                problem = (i, _MISSING if empty[i] else
                           f"non-numeric value {raw!r} in a numeric column (list the column in "
                           "categorical_columns if it is categorical)" if non_numeric[i] else
                           f"value {raw!r} is not finite (NaN and inf are not allowed)")
            return _Column(name, "numeric", values), problem
    text = _text(series)
    empty = np.flatnonzero((text == "").to_numpy())
    return (_Column(name, "categorical", text.to_numpy(dtype=object), detected),
            (int(empty[0]), _MISSING) if empty.size else None)


def _parse_labels(series: pd.Series, numeric: bool | None):
    """Raw labels: float64 if every label is a number (or ``numeric``), else str."""
    values, empty, non_numeric = _numeric(series)
    if empty.any():
        return values, (int(np.flatnonzero(empty)[0]), "missing label")
    if numeric is False or (numeric is None and non_numeric.any()):
        return _text(series).to_numpy(dtype=object), None
    bad = np.flatnonzero(non_numeric | ~np.isfinite(values))
    if bad.size:
        raw = str(series.iloc[bad[0]]).strip()
        what = ("does not occur in the training file" if non_numeric[bad[0]]
                else "is not a finite number")
        return values, (int(bad[0]), f"label {raw!r} {what}")
    return values, None


def _read_csv(f: UserFile, delimiter: str, text_columns) -> pd.DataFrame:
    try:
        frame = pd.read_csv(io.BytesIO(f.content), sep=delimiter, na_filter=False,
                            skipinitialspace=True, low_memory=False,
                            dtype={c: str for c in text_columns})
    except UnicodeDecodeError as exc:
        raise DataError(f"{f.path}: not UTF-8 text ({_one_line(exc)})") from exc
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{f.path}: malformed CSV file ({_one_line(exc)})") from exc
    if frame.shape[0] == 0:
        raise DataError(f"{f.path}: empty file (a header line but no data rows)")
    # pandas renames a repeated header name "a" to "a.1"; refuse instead of guessing.
    header = pd.read_csv(io.BytesIO(f.content), sep=delimiter, header=None, nrows=1,
                         dtype=str, na_filter=False, skipinitialspace=True).iloc[0].tolist()
    from collections import Counter

    repeated = sorted(h for h, n in Counter(header).items() if n > 1)
    if repeated:
        raise DataError(f"{f.path}: column name(s) {_preview(repeated)} appear more than once "
                        "in the header line")
    frame.columns = [str(c) for c in frame.columns]
    frame.attrs["delimiter"] = delimiter  # to word a short row's error
    return frame


def _select_columns(f: UserFile, frame: pd.DataFrame, label: str,
                    features: list[str] | None, declared: set[str]) -> list[str]:
    present = list(frame.columns)
    if label not in present:
        raise DataError(f"{f.path}: label column {label!r} not found; columns are: "
                        f"{_preview(present)}")
    if features is None:
        features = [c for c in present if c != label]
        if not features:
            raise DataError(f"{f.path}: no feature columns besides the label {label!r}")
    elif label in features:
        raise DataError(f"csv: features lists the label column {label!r}")
    have = set(present)
    missing = [c for c in features if c not in have]
    if missing:
        raise DataError(f"{f.path}: feature column(s) {_preview(missing)} not found; "
                        f"columns are: {_preview(present)}")
    stray = sorted(declared - set(features))
    if stray:
        raise DataError(f"csv: categorical_columns lists {_preview(stray)}, not among the "
                        "feature columns")
    return features


def _parse_csv(f: UserFile, frame: pd.DataFrame, label: str, features: list[str],
               categorical: set[str], detect: bool, numeric_labels: bool | None):
    """Feature columns and raw labels of one file; raise its first bad cell."""
    columns, problems = [], []
    for j, name in enumerate(features):
        column, problem = _parse_column(name, frame[name], name in categorical, detect)
        columns.append(column)
        if problem:
            problems.append((problem[0], j + 1, name, problem[1]))
    y_raw, problem = _parse_labels(frame[label], numeric_labels)
    if problem:
        problems.append((problem[0], 0, label, problem[1]))
    if problems:
        row, _, name, message = min(problems, key=lambda p: (p[0], p[1]))
        lines = _data_line_numbers(f.content, comments=False)
        line = lines[row + 1]  # after the header
        fields = _fields(f, frame, line)
        if fields is not None and fields < frame.shape[1]:
            raise DataError(f"{f.path} line {line}: a short row: {fields} fields where the "
                            f"header has {frame.shape[1]}")
        if message in (_MISSING, "missing label"):
            message += _missing_rows(frame, [*features, label], lines)
        raise DataError(f"{f.path} line {line}, column {name!r}: {message}")
    return columns, y_raw


def _fields(f: UserFile, frame: pd.DataFrame, line: int) -> int | None:
    """How many fields file line ``line`` has (None where it cannot be told)."""
    import csv

    delimiter = frame.attrs.get("delimiter")
    if delimiter is None:
        return None
    text = f.content.split(b"\n")[line - 1].decode("utf-8", "replace").rstrip("\r")
    try:
        return len(next(csv.reader([text], delimiter=delimiter)))
    except (csv.Error, StopIteration):
        return None


def _missing_rows(frame: pd.DataFrame, names: list[str], lines: np.ndarray) -> str:
    """How many rows have an empty cell, and their first lines (one error says it all)."""
    empty = np.zeros(frame.shape[0], dtype=bool)
    for name in names:
        series = frame[name]
        if not (pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series)):
            empty |= (_text(series) == "").to_numpy()
    rows = np.flatnonzero(empty)
    if rows.size <= 1:
        return ""
    shown = ", ".join(str(int(lines[r + 1])) for r in rows[:5])
    return f"; {rows.size} rows have a missing value (lines {shown}{' ...' if rows.size > 5 else ''})"


def _csv_options(options: Mapping) -> dict:
    label = options.get("label")
    if not isinstance(label, str) or not label:
        raise DataError("csv: option label (the name of the label column) is required"
                        + ("" if label is None else f", got {label!r}"))
    delimiter = options.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in "\"\n\r":
        raise DataError(f"csv: delimiter must be one character such as \",\", \";\" or "
                        f"\"\\t\", got {delimiter!r}")
    return {"label": label, "delimiter": delimiter, "stratify": _stratify("csv", options),
            "features": _name_list("csv", options, "features"),
            "declared": set(_name_list("csv", options, "categorical_columns") or ())}


def load_csv(options: Mapping[str, Any], *, strict: bool = True) -> RawDataset:
    """A CSV file with a header line, as raw records (numeric columns and categorical strings).

    Encoding (one-hot or ordinal over a declared or fitted vocabulary) and
    scaling are the preprocessing stage's (:mod:`vfl.datasets.stage`).

    Options
    -------
    path : str
        Training file (plain, .gz, .bz2 or .xz); relative to the current directory.
    label : str
        Name of the label column.
    features : list of str, optional
        Feature columns in the order wanted; default every other column, in
        file order.
    categorical_columns : list of str, optional
        Columns to encode as categories even though their cells are numbers
        (codes, ids). Besides these, a column is categorical when none of its
        training cells is a number; a column mixing numbers and other text is
        an error naming the first non-numeric cell.
    test_path : str, or test_fraction : float in (0, 1)
        As for :func:`load_libsvm` (``split_seed`` too). A test file needs the
        label and feature columns, in any order; with ``features`` unset it
        may not have columns the training file lacks.
    label_positive : str or number, optional
        The raw label that becomes +1 (default: the larger of the two).
    delimiter : str
        One character, default ``","``.

    Cells are read as written (leading spaces dropped): an empty cell is an
    error, not imputed; ``nan`` or ``inf`` in a numeric column is an error;
    ``True``/``False`` columns become 1/0.
    stratify : bool
        Stratify the ``test_fraction`` split by label (default true; a
        private run needs false, see :func:`_split`).
    labels : [negative, positive], optional
        The two raw labels, declared (a private run needs them).
    fill : {column = number}, optional
        A private run's value for a missing or malformed number (default 0).

    ``strict=False`` (a run that claims a guarantee): every line after the
    header is a record, read alone, and no cell stops the run
    (:func:`vfl.datasets.userrecords.load_csv_records`).
    """
    if not strict:
        from vfl.datasets.userrecords import load_csv_records

        return load_csv_records(options)
    opts = _csv_options(options)
    train_path = _path_option("csv", options, "path", required=True)
    test_path, fraction, seed = _test_options("csv", options)
    label_positive = _label_positive("csv", options)
    labels = declared_labels("csv", options)
    from vfl.datasets.userrecords import fill_option

    fill_option("csv", options)  # checked here too; a strict reading has nothing to fill
    label, declared = opts["label"], opts["declared"]

    train = read_user_file(train_path)
    test = read_user_file(test_path) if test_path is not None else None
    frame = _read_csv(train, opts["delimiter"], [label, *declared])
    features = _select_columns(train, frame, label, opts["features"], declared)
    columns, y_raw = _parse_csv(train, frame, label, features, declared, True, None)
    categorical = {c.name for c in columns if c.kind == "categorical"}

    y_t_raw = None
    if test is not None:
        frame_t = _read_csv(test, opts["delimiter"], [label, *categorical])
        _select_columns(test, frame_t, label, features, declared)
        known = set(frame.columns)
        extra = [c for c in frame_t.columns if c not in known]
        if opts["features"] is None and extra:
            raise DataError(f"{test.path}: column(s) {_preview(extra)} are not in the training "
                            f"file {train.path} (set features to choose the columns)")
        test_columns, y_t_raw = _parse_csv(test, frame_t, label, features, categorical, False,
                                           y_raw.dtype.kind == "f")

    y, y_t, mapping = _binary_labels(train, y_raw, label_positive, test, y_t_raw, labels)
    if test is None:
        train_rows, test_rows = _split(train, y, fraction, seed, mapping, opts["stratify"])
        y, y_t, test_columns = y[train_rows], y[test_rows], columns
    else:
        train_rows, test_rows = np.arange(y.size), np.arange(y_t.size)
    names = tuple(c.name for c in columns)
    kinds = tuple(c.kind for c in columns)

    def table(cols: list[_Column], rows: np.ndarray) -> RawTable:
        num = [c.values[rows] for c in cols if c.kind == "numeric"]
        cat = [c.values[rows] for c in cols if c.kind == "categorical"]
        return RawTable(names=names, kinds=kinds,
                        numeric=np.column_stack(num) if num else np.zeros((rows.size, 0)),
                        categorical=np.column_stack(cat) if cat else None)

    detected = [c.name for c in columns if c.detected]
    fitted = ()
    if detected:
        fitted += ((f"column(s) {_preview(detected)} were found categorical from their values",
                    "data.categorical_columns"),)
    if test is None and opts["stratify"]:
        fitted += (("the stratified test split depends on every record's label",
                    "data.stratify = false"),)
    checksums, files = _files(train, test)
    return RawDataset(
        name="csv", train=table(columns, train_rows), y_train=y,
        test=table(test_columns, test_rows), y_test=y_t,
        description=f"csv file {train.path.name} ({len(columns)} columns)",
        checksums=checksums, fitted=fitted,
        vocabulary_rows=table(columns, np.arange(len(columns[0].values))) if test is None
        and columns else None,
        provenance={
            "source": "user files",
            "files": files,
            "parsing": {"format": "csv", "parser": "pandas.read_csv", "header": True,
                        "delimiter": opts["delimiter"], "label": label, "features": features,
                        "categorical_columns": {c.name: "detected" if c.detected else "declared"
                                                for c in columns if c.kind == "categorical"}},
            "split": _split_record(test_path, fraction, seed, train_rows.size, test_rows.size,
                                   opts["stratify"]),
            "label_mapping": mapping,
            "parsed": (
                f"features in {'the given' if opts['features'] else 'file'} order; labels "
                f"{_show(mapping['-1'])} -> -1, {_show(mapping['+1'])} -> +1 ({mapping['rule']})"
            ),
        },
    )


USER_FILE_LOADERS = {"libsvm": load_libsvm, "csv": load_csv}


# --------------------------------------------------------------------- inspect

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
        raise DataError(f"cannot split {len(widths)} column(s) among {n_parties} parties: "
                        "every party needs at least one")
    ends = np.cumsum(widths)
    total, edges, first = int(ends[-1]), [0], 0
    for k in range(1, n_parties):
        # Party k ends after block b; leave one block for each later party.
        candidates = ends[first:len(widths) - (n_parties - k)]
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
        "n_rows": n, "n_features": d, "nnz": nnz, "density": nnz / (n * d),
        "min": float(lo.min()), "max": float(hi.max()),
        "binary_columns": int(binary.sum()),
        "n_constant_columns": int(np.sum(lo == hi)),
        "constant_columns": np.flatnonzero(lo == hi)[:20].tolist(),  # the first few
        "max_row_norm": float(norms.max()), "mean_row_norm": float(norms.mean()),
    }


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
    return True, ("assumed: no index 0 occurs, so the file reads both ways; set zero_based = "
                  "true if it counts from 0, as scikit-learn's dump_svmlight_file does")


def inspect_file(path: str | os.PathLike, fmt: str | None = None, *, label: str | None = None,
                 delimiter: str | None = None) -> dict:
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
    from vfl.datasets.stage import fit_stage

    guessed, guessed_delimiter = guess_format(path)
    fmt = fmt or guessed
    if fmt not in USER_FILE_OPTIONS:
        raise DataError(f"unknown format {fmt!r}; use libsvm or csv")
    f = read_user_file(path)
    if fmt == "libsvm":
        if label is not None:
            raise DataError("--label applies to CSV files; a LIBSVM file's label is the first "
                            "value of each line")
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
            raise DataError(f"{f.path}: a CSV file needs --label COLUMN; columns are: "
                            f"{_preview(list(frame.columns))}")
        opts = _csv_options({"label": label, "delimiter": delimiter or guessed_delimiter})
        frame = _read_csv(f, opts["delimiter"], [label])
        features = _select_columns(f, frame, label, None, set())
        parsed, y_raw = _parse_csv(f, frame, label, features, set(), True, None)
        rows = np.arange(frame.shape[0])
        y0 = np.where(np.arange(rows.size) % 2 == 0, 1.0, -1.0)  # labels play no part here
        names = tuple(c.name for c in parsed)
        num = [c.values for c in parsed if c.kind == "numeric"]
        cat = [c.values for c in parsed if c.kind == "categorical"]
        table = RawTable(names=names, kinds=tuple(c.kind for c in parsed),
                         numeric=np.column_stack(num) if num else np.zeros((rows.size, 0)),
                         categorical=np.column_stack(cat) if cat else None)
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
    if classes.size == 2 and (y_raw.dtype.kind != "f" or set(classes.tolist()) not in
                              ({0.0, 1.0}, {-1.0, 1.0})):
        chosen = classes[1]
    y, _, mapping = _binary_labels(f, y_raw, chosen)
    if chosen is not None:
        mapping["rule"] = (f"not read as such: set label_positive = {_show(chosen)} or "
                           "labels = [negative, positive]")
    labels = [{"raw": mapping[key], "value": int(key), "count": int(np.sum(y == int(key)))}
              for key in ("-1", "+1")]
    return {"file": f.record(), "format": fmt, "options": options, "labels": labels,
            "label_rule": mapping["rule"], "columns": columns, **extra, **_column_stats(X)}
