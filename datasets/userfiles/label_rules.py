"""Label rules: two raw label values mapped to -1 and +1 (by order, ``label_positive`` or
``labels = [negative, positive]``)."""

from __future__ import annotations

import numpy as np

from vfl.core.errors import DataError
from vfl.datasets.userfiles.previews import _jsonable, _preview, _show
from vfl.datasets.userfiles.reading import UserFile


def _binary_labels(
    train: UserFile,
    y_raw: np.ndarray,
    label_positive,
    test: UserFile | None = None,
    y_test_raw: np.ndarray | None = None,
    declared: list | None = None,
):
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
        raise DataError(
            f"{train.path}: constant label: every row has label "
            f"{_show(classes[0])}; binary classification needs two classes"
        )
    if classes.size > 2:
        raise DataError(
            f"{train.path}: {classes.size} distinct labels "
            f"({_preview(list(classes), 5)}); binary classification needs "
            "exactly two"
        )
    numeric = y_raw.dtype.kind == "f"
    if label_positive is None:
        negative, positive = classes
        if not numeric or {float(negative), float(positive)} not in ({0.0, 1.0}, {-1.0, 1.0}):
            # README: {0, 1} and {-1, +1} are read as such; two other values are named
            raise DataError(
                f"{train.path}: labels {_show(negative)} and {_show(positive)} are "
                "neither {0, 1} nor {-1, +1}: say which is +1 with label_positive "
                f"= {_show(positive)} (or labels = [negative, positive])"
            )
        rule = "larger label is +1"
    else:
        try:
            wanted = float(label_positive) if numeric else str(label_positive)
        except ValueError:
            wanted = None
        if wanted not in classes.tolist():
            raise DataError(
                f"{train.path}: label_positive = {label_positive!r} is not one of "
                f"the labels {_show(classes[0])}, {_show(classes[1])}"
            )
        positive = wanted
        negative = classes[0] if classes[1] == wanted else classes[1]
        rule = f"label_positive = {label_positive!r}"
    mapping = {"-1": _jsonable(negative), "+1": _jsonable(positive), "rule": rule}
    y_test = None
    if y_test_raw is not None:
        unknown = np.setdiff1d(np.unique(y_test_raw), classes)
        if unknown.size:
            raise DataError(
                f"{test.path}: test label(s) {_preview(list(unknown), 5)} do not "
                f"occur in the training file (whose labels are "
                f"{_show(classes[0])}, {_show(classes[1])})"
            )
        y_test = np.where(y_test_raw == positive, 1.0, -1.0)
    return np.where(y_raw == positive, 1.0, -1.0), y_test, mapping


def _declared_labels(train, y_raw, declared, test, y_test_raw):
    numeric = y_raw.dtype.kind == "f"
    try:
        values = [float(v) if numeric else str(v) for v in declared]
    except ValueError:
        raise DataError(
            f"{train.path}: labels = {declared!r} are not numbers, but every label in the file is"
        ) from None
    out = []
    for f, raw in ((train, y_raw), (test, y_test_raw)):
        if raw is None:
            out.append(None)
            continue
        unknown = np.setdiff1d(np.unique(raw), values)
        if unknown.size:
            raise DataError(
                f"{f.path}: label(s) {_preview(list(unknown), 5)} are not among "
                f"labels = [{_show(values[0])}, {_show(values[1])}]"
            )
        out.append(np.where(raw == values[1], 1.0, -1.0))
    mapping = {"-1": _jsonable(values[0]), "+1": _jsonable(values[1]), "rule": "data.labels"}
    return out[0], out[1], mapping
