"""Holding out test rows from the training file: a seeded split, label-stratified or not."""

from __future__ import annotations

import numpy as np

from vfl.core.errors import DataError
from vfl.datasets.userfiles.previews import _one_line, _show
from vfl.datasets.userfiles.reading import UserFile


def _split(train: UserFile, y: np.ndarray, fraction: float, seed: int, mapping: dict, stratify: bool = True):
    """Seeded split, stratified by label unless ``stratify`` is false; each part keeps the
    file's row order.

    Without stratification the split is one seeded permutation of the row
    numbers: which part a record lands in depends on nothing but its
    position, so replacing one record moves no other (what a private run
    needs; a stratified split lets every label decide every row's part).
    """
    from sklearn.model_selection import train_test_split  # lazy: start-up (sklearn.model_selection, 0.9 s)

    if not stratify:
        n_test = int(np.ceil(fraction * y.size))
        if n_test < 1 or y.size - n_test < 1:
            raise DataError(
                f"{train.path}: test_fraction = {fraction:g} of {y.size} rows leaves "
                f"{n_test} for testing and {y.size - n_test} for training"
            )
        perm = np.random.default_rng(seed).permutation(y.size)
        return np.sort(perm[n_test:]), np.sort(perm[:n_test])

    for value, raw in ((-1.0, mapping["-1"]), (1.0, mapping["+1"])):
        count = int(np.sum(y == value))
        if count < 2:
            raise DataError(
                f"{train.path}: cannot hold out test_fraction = {fraction:g} "
                f"stratified by label: label {_show(raw)} has only {count} row and "
                "a stratified split needs at least 2 of each"
            )
    n_test = int(np.ceil(fraction * y.size))  # sklearn's rounding of test_size
    if n_test < 2 or y.size - n_test < 2:
        raise DataError(
            f"{train.path}: test_fraction = {fraction:g} of {y.size} rows leaves "
            f"{n_test} row{'s' if n_test != 1 else ''} for testing and "
            f"{y.size - n_test} for training; a stratified split needs at least "
            "one row of each label in each part"
        )
    try:
        tr, te = train_test_split(np.arange(y.size), test_size=fraction, stratify=y, random_state=seed, shuffle=True)
    except ValueError as exc:  # not expected after the checks above
        raise DataError(
            f"{train.path}: cannot hold out test_fraction = {fraction:g} of "
            f"{y.size} rows stratified by label ({_one_line(exc)})"
        ) from exc
    return np.sort(tr), np.sort(te)


def _split_record(test_path, fraction, seed, n_train, n_test, stratify=True) -> dict:
    if test_path is not None:
        return {"test": "test_path", "n_train": n_train, "n_test": n_test}
    return {
        "test": "held out from path",
        "test_fraction": fraction,
        "split_seed": seed,
        "stratified_by_label": stratify,
        "row_order": "file order within each part",
        "n_train": n_train,
        "n_test": n_test,
    }
