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

One idea per module: :mod:`.reading` (a file, its compression, checksums),
:mod:`.options` (the options), :mod:`.labels` (label rules), :mod:`.holdout`
(the test split), :mod:`.libsvm` and :mod:`.csvfile` (the two loaders, with
:mod:`.columns`: CSV columns and missing values), :mod:`.inspection`
(``vfl datasets inspect``), :mod:`.private_reading` (a run that claims a guarantee:
every line one record, read alone) and :mod:`.messages` (how values show in errors).
"""

from __future__ import annotations

from vfl.datasets.userfiles.csvfile import load_csv
from vfl.datasets.userfiles.inspection import guess_format, inspect_file, suggest_partition
from vfl.datasets.userfiles.libsvm import index_base, load_libsvm  # noqa: F401 (as before)
from vfl.datasets.userfiles.options import (  # noqa: F401
    CSV_OPTIONS,
    LIBSVM_OPTIONS,
    USER_FILE_OPTIONS,
    declared_labels,
)
from vfl.datasets.userfiles.reading import UserFile, read_user_file

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

USER_FILE_LOADERS = {"libsvm": load_libsvm, "csv": load_csv}
