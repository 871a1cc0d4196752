"""CSV columns: reading with pandas, numeric or categorical cells, missing values refused."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vfl.core.errors import DataError
from vfl.datasets.userfiles.previews import _one_line, _preview
from vfl.datasets.userfiles.reading import UserFile, _data_line_numbers

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
                problem = (
                    i,
                    _MISSING
                    if empty[i]
                    else f"non-numeric value {raw!r} in a numeric column (list the column in "
                    "categorical_columns if it is categorical)"
                    if non_numeric[i]
                    else f"value {raw!r} is not finite (NaN and inf are not allowed)",
                )
            return _Column(name, "numeric", values), problem
    text = _text(series)
    empty = np.flatnonzero((text == "").to_numpy())
    return (
        _Column(name, "categorical", text.to_numpy(dtype=object), detected),
        (int(empty[0]), _MISSING) if empty.size else None,
    )


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
        what = "does not occur in the training file" if non_numeric[bad[0]] else "is not a finite number"
        return values, (int(bad[0]), f"label {raw!r} {what}")
    return values, None


def _read_csv(f: UserFile, delimiter: str, text_columns) -> pd.DataFrame:
    try:
        frame = pd.read_csv(
            io.BytesIO(f.content),
            sep=delimiter,
            na_filter=False,
            skipinitialspace=True,
            low_memory=False,
            dtype={c: str for c in text_columns},
        )
    except UnicodeDecodeError as exc:
        raise DataError(f"{f.path}: not UTF-8 text ({_one_line(exc)})") from exc
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{f.path}: malformed CSV file ({_one_line(exc)})") from exc
    if frame.shape[0] == 0:
        raise DataError(f"{f.path}: empty file (a header line but no data rows)")
    # pandas renames a repeated header name "a" to "a.1"; refuse instead of guessing.
    header = (
        pd.read_csv(
            io.BytesIO(f.content),
            sep=delimiter,
            header=None,
            nrows=1,
            dtype=str,
            na_filter=False,
            skipinitialspace=True,
        )
        .iloc[0]
        .tolist()
    )

    repeated = sorted(h for h, n in Counter(header).items() if n > 1)
    if repeated:
        raise DataError(f"{f.path}: column name(s) {_preview(repeated)} appear more than once in the header line")
    frame.columns = [str(c) for c in frame.columns]
    frame.attrs["delimiter"] = delimiter  # to word a short row's error
    return frame


def _select_columns(
    f: UserFile, frame: pd.DataFrame, label: str, features: list[str] | None, declared: set[str]
) -> list[str]:
    present = list(frame.columns)
    if label not in present:
        raise DataError(f"{f.path}: label column {label!r} not found; columns are: {_preview(present)}")
    if features is None:
        features = [c for c in present if c != label]
        if not features:
            raise DataError(f"{f.path}: no feature columns besides the label {label!r}")
    elif label in features:
        raise DataError(f"csv: features lists the label column {label!r}")
    have = set(present)
    missing = [c for c in features if c not in have]
    if missing:
        raise DataError(f"{f.path}: feature column(s) {_preview(missing)} not found; columns are: {_preview(present)}")
    stray = sorted(declared - set(features))
    if stray:
        raise DataError(f"csv: categorical_columns lists {_preview(stray)}, not among the feature columns")
    return features


def _parse_csv(
    f: UserFile,
    frame: pd.DataFrame,
    label: str,
    features: list[str],
    categorical: set[str],
    detect: bool,
    numeric_labels: bool | None,
):
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
            raise DataError(f"{f.path} line {line}: a short row: {fields} fields where the header has {frame.shape[1]}")
        if message in (_MISSING, "missing label"):
            message += _missing_rows(frame, [*features, label], lines)
        raise DataError(f"{f.path} line {line}, column {name!r}: {message}")
    return columns, y_raw


def _fields(f: UserFile, frame: pd.DataFrame, line: int) -> int | None:
    """How many fields file line ``line`` has (None where it cannot be told)."""
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
