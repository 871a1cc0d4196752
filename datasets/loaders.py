"""Reading the datasets' records: :func:`load_raw`, and :func:`load_dataset` on top of it.

Every loader reads each file once, checks its sha256 against the registry,
parses it and records that in the provenance. A run that claims a guarantee
(``strict=False``) reads every record as one row instead of stopping at a bad
one (:mod:`vfl.datasets.record_parsers`), and records a checksum mismatch under
``provenance["diagnostic"]`` rather than stopping. The parsed arrays of a9a and
gisette are cached, keyed by the stored file's sha256: a second load reads
them instead of decompressing and parsing again. It returns the records as
read (:class:`~vfl.datasets.dataset.RawDataset`): encoding and scaling belong
to the preprocessing stage (:mod:`vfl.datasets.stage`), whose parameters a
private run takes only from public sources. The one exception, gisette's
LIBSVM scaling, is fitted on the training records by its loader and marked
as such, so a private run refuses it.

The registry datasets' loaders are :mod:`vfl.datasets.a9a`, :mod:`vfl.datasets.gisette` and
:mod:`vfl.datasets.adult`, each reading through :mod:`vfl.datasets.file_reader`; this module
dispatches to them, to the user's files and to the synthetic generators.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.a9a import load_a9a
from vfl.datasets.adult import ADULT_OPTIONS, load_adult
from vfl.datasets.catalog import SYNTHETIC_NAME, get_spec
from vfl.datasets.dataset import Dataset, RawDataset
from vfl.datasets.file_reader import FileReader
from vfl.datasets.gisette import GISETTE_FITTED, load_gisette
from vfl.datasets.parties.join import load_parties
from vfl.datasets.parties.party_spec import DATA_KEYS as PARTY_DATA_KEYS
from vfl.datasets.stage import preprocess, refuse_private
from vfl.datasets.synthetic import SYNTHETIC_OPTIONS, synthetic_from_options
from vfl.datasets.userfiles import USER_FILE_LOADERS, USER_FILE_OPTIONS

__all__ = ["load_dataset", "load_raw", "LOADER_OPTIONS", "MOVED_OPTIONS"]


_LOADERS = {"a9a": load_a9a, "gisette": load_gisette, "adult": load_adult}
#: what a run that claims a guarantee refuses before reading a file: a loader fit
_REFUSED_PRIVATE = {"gisette": GISETTE_FITTED}

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
        file's line structure (:mod:`vfl.datasets.record_parsers`); a checksum
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
    data = _LOADERS[name](FileReader(get_spec(name), data_dir, verify, strict, use_cache), options, strict)
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
