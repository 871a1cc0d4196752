"""CSV user files: a header line, a label column, numeric and categorical features."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable
from vfl.datasets.dataset import RawDataset
from vfl.datasets.userfiles.columns import _Column, _parse_csv, _read_csv, _select_columns
from vfl.datasets.userfiles.holdout import _split, _split_record
from vfl.datasets.userfiles.label_rules import _binary_labels
from vfl.datasets.userfiles.options import (
    _csv_options,
    _label_positive,
    _path_option,
    _test_options,
    declared_labels,
)
from vfl.datasets.userfiles.previews import _preview, _show
from vfl.datasets.userfiles.private_reading import fill_option, load_csv_records
from vfl.datasets.userfiles.reading import _files, read_user_file


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
    (:func:`vfl.datasets.userfiles.private_reading.load_csv_records`).
    """
    if not strict:
        return load_csv_records(options)
    opts = _csv_options(options)
    train_path = _path_option("csv", options, "path", required=True)
    test_path, fraction, seed = _test_options("csv", options)
    label_positive = _label_positive("csv", options)
    labels = declared_labels("csv", options)

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
            raise DataError(
                f"{test.path}: column(s) {_preview(extra)} are not in the training "
                f"file {train.path} (set features to choose the columns)"
            )
        test_columns, y_t_raw = _parse_csv(test, frame_t, label, features, categorical, False, y_raw.dtype.kind == "f")

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
        return RawTable(
            names=names,
            kinds=kinds,
            numeric=np.column_stack(num) if num else np.zeros((rows.size, 0)),
            categorical=np.column_stack(cat) if cat else None,
        )

    detected = [c.name for c in columns if c.detected]
    fitted = ()
    if detected:
        fitted += (
            (f"column(s) {_preview(detected)} were found categorical from their values", "data.categorical_columns"),
        )
    if test is None and opts["stratify"]:
        fitted += (("the stratified test split depends on every record's label", "data.stratify = false"),)
    checksums, files = _files(train, test)
    return RawDataset(
        name="csv",
        train=table(columns, train_rows),
        y_train=y,
        test=table(test_columns, test_rows),
        y_test=y_t,
        description=f"csv file {train.path.name} ({len(columns)} columns)",
        checksums=checksums,
        fitted=fitted,
        vocabulary_rows=table(columns, np.arange(len(columns[0].values))) if test is None and columns else None,
        provenance={
            "source": "user files",
            "files": files,
            "parsing": {
                "format": "csv",
                "parser": "pandas.read_csv",
                "header": True,
                "delimiter": opts["delimiter"],
                "label": label,
                "features": features,
                "categorical_columns": {
                    c.name: "detected" if c.detected else "declared" for c in columns if c.kind == "categorical"
                },
            },
            "split": _split_record(test_path, fraction, seed, train_rows.size, test_rows.size, opts["stratify"]),
            "label_mapping": mapping,
            "parsed": (
                f"features in {'the given' if opts['features'] else 'file'} order; labels "
                f"{_show(mapping['-1'])} -> -1, {_show(mapping['+1'])} -> +1 ({mapping['rule']})"
            ),
        },
    )
