"""The ``options`` of ``load_raw("libsvm" | "csv", ...)``, each checked with a one-line error."""

from __future__ import annotations

import numbers
import os
from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from vfl.core.errors import DataError
from vfl.datasets._generator_checks import integer
from vfl.datasets.userfiles.previews import _preview

#: ``options`` accepted by ``load_raw("libsvm", ...)``.
LIBSVM_OPTIONS = (
    "path",
    "test_path",
    "test_fraction",
    "split_seed",
    "stratify",
    "n_features",
    "zero_based",
    "label_positive",
    "labels",
)


#: ``options`` accepted by ``load_raw("csv", ...)``.
CSV_OPTIONS = (
    "path",
    "label",
    "features",
    "categorical_columns",
    "test_path",
    "test_fraction",
    "split_seed",
    "stratify",
    "label_positive",
    "delimiter",
    "labels",
    "fill",
)


USER_FILE_OPTIONS: dict[str, tuple[str, ...]] = {"libsvm": LIBSVM_OPTIONS, "csv": CSV_OPTIONS}


_MAX_SEED = 2**32 - 1  # what sklearn's random_state accepts


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
        raise DataError(
            f"{fmt}: needs test_path (a separate test file) or test_fraction "
            "(the share of the rows of path held out for testing, e.g. 0.2)"
        )
    if fraction is not None:
        ok = isinstance(fraction, numbers.Real) and not isinstance(fraction, bool) and 0.0 < fraction < 1.0
        if not ok:
            raise DataError(f"{fmt}: test_fraction must be a number in (0, 1), got {fraction!r}")
        fraction = float(fraction)
    seed = integer(fmt, "split_seed", options.get("split_seed", 0), 0)
    if seed > _MAX_SEED:
        raise DataError(f"{fmt}: split_seed must be an integer >= 0 and <= {_MAX_SEED}, got {seed}")
    return test_path, fraction, seed


def _label_positive(fmt: str, options: Mapping):
    value = options.get("label_positive")
    if value is not None and not isinstance(value, (str, numbers.Real)):
        raise DataError(f"{fmt}: label_positive must be a label value (number or string), got {value!r}")
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

    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(map(ok, value)) or value[0] == value[1]:
        raise DataError(
            f"{fmt}: labels must be [negative, positive], two different label "
            f"values (numbers or strings), got {value!r}"
        )
    return list(value)


def _name_list(fmt: str, options: Mapping, key: str) -> list[str] | None:
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) and v for v in value):
        raise DataError(f"{fmt}: {key} must be a non-empty list of column names, got {value!r}")

    twice = sorted(v for v, n in Counter(value).items() if n > 1)
    if twice:
        raise DataError(f"{fmt}: {key} lists {_preview(twice)} more than once")
    return list(value)


def _libsvm_options(options: Mapping) -> tuple[int | None, Any]:
    n_features = options.get("n_features")
    if n_features is not None:
        n_features = integer("libsvm", "n_features", n_features, 1)
    zero_based = options.get("zero_based", "auto")
    if zero_based != "auto" and not isinstance(zero_based, (bool, np.bool_)):
        raise DataError(f'libsvm: zero_based must be "auto", true or false, got {zero_based!r}')
    return n_features, zero_based if zero_based == "auto" else bool(zero_based)


def _csv_options(options: Mapping) -> dict:
    label = options.get("label")
    if not isinstance(label, str) or not label:
        raise DataError(
            "csv: option label (the name of the label column) is required"
            + ("" if label is None else f", got {label!r}")
        )
    delimiter = options.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\n\r':
        raise DataError(f'csv: delimiter must be one character such as ",", ";" or "\\t", got {delimiter!r}')
    return {
        "label": label,
        "delimiter": delimiter,
        "stratify": _stratify("csv", options),
        "features": _name_list("csv", options, "features"),
        "declared": set(_name_list("csv", options, "categorical_columns") or ()),
    }
