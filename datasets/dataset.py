"""The :class:`Dataset` container returned by every loader."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import DataError
from vfl.core.preprocessing import RawTable, Schema
from vfl.core.relations import Cleaning

__all__ = ["Dataset", "RawDataset"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """A binary classification task split into train and test parts.

    Attributes
    ----------
    name : str
        ``"a9a"``, ``"gisette"``, ``"adult"``, ``"synthetic"`` or
        ``"synthetic:<preset>"`` (e.g. ``"synthetic:gisette-shaped"``).
    X_train, X_test : ndarray or scipy.sparse.csr_matrix
        float64 feature matrices with the same number of columns and the same
        type (a9a and sparse synthetic data stay CSR, the rest are dense).
    y_train, y_test : ndarray
        float64 labels in {-1.0, +1.0}.
    description : str
        Human-readable label. Stand-ins say so explicitly.
    is_stand_in : bool
        True when the data only imitates the shape of a real dataset (the
        ``gisette-shaped`` synthetic preset); results on it are not results
        on the real data.
    checksums : dict
        File name -> sha256 of the decompressed content that was loaded
        (empty for generated data).
    provenance : dict
        JSON-serializable record of where the data came from: resolved file
        paths and preprocessing, or generator parameters and seed.
    """

    name: str
    X_train: np.ndarray | sp.csr_matrix
    y_train: np.ndarray
    X_test: np.ndarray | sp.csr_matrix
    y_test: np.ndarray
    description: str = ""
    is_stand_in: bool = False
    checksums: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        # Loaders are the only producers, so a failure here is a loader bug or
        # a hand-built Dataset; either way fail early with the exact mismatch.
        for part in ("train", "test"):
            X, y = getattr(self, f"X_{part}"), getattr(self, f"y_{part}")
            if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
                raise DataError(f"{self.name}: X_{part} has shape {X.shape} but y_{part} has shape {y.shape}")
            if not np.all(np.abs(y) == 1.0):
                raise DataError(f"{self.name}: y_{part} must hold only -1.0 and +1.0")
        if self.X_train.shape[1] != self.X_test.shape[1]:
            raise DataError(
                f"{self.name}: X_train has {self.X_train.shape[1]} features but X_test has {self.X_test.shape[1]}"
            )
        if sp.issparse(self.X_train) != sp.issparse(self.X_test):
            raise DataError(f"{self.name}: X_train and X_test must both be dense or both sparse")

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def n_train(self) -> int:
        return int(self.X_train.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.X_test.shape[0])

    @property
    def is_sparse(self) -> bool:
        return sp.issparse(self.X_train)

    def __repr__(self) -> str:
        kind = "sparse" if self.is_sparse else "dense"
        return (
            f"Dataset(name={self.name!r}, train={self.n_train}x{self.n_features}, "
            f"test={self.n_test}x{self.n_features}, {kind}"
            f"{', stand-in' if self.is_stand_in else ''})"
        )


@dataclass(frozen=True, eq=False)
class RawDataset:
    """A dataset's records as read, before the preprocessing stage.

    ``train``/``test`` are :class:`~vfl.core.preprocessing.RawTable` s
    (numeric columns plus categorical strings); ``schema`` is the dataset's
    published description when it has one (Adult's attribute values and
    declared ranges), ``defaults`` the preprocessing keys a config inherits
    from the registry entry. ``fitted`` names any step the *loader* fitted on
    the records themselves (gisette's LIBSVM scaling): a private run refuses
    such data, since no relation on the raw file covers it. ``provenance``
    holds what the loader read; what depends on the records (how many fields
    took a default, records dropped) only under ``provenance["diagnostic"]``.
    """

    name: str
    train: RawTable
    y_train: np.ndarray
    test: RawTable
    y_test: np.ndarray
    description: str = ""
    is_stand_in: bool = False
    checksums: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    schema: Schema | None = None
    defaults: dict = field(default_factory=dict)
    fitted: tuple = ()
    #: records a run that claims no guarantee reads categories from, when they are not
    #: the training part: the whole training file before a test_fraction split, so the
    #: width does not depend on split_seed
    vocabulary_rows: RawTable | None = None
    #: the public rule that removed records before the mechanism (``missing = "drop"``), or
    #: None: every record of the file is a row. A private run's relation is then stated on
    #: the cleaned file.
    cleaning: Cleaning | None = None
    #: the raw columns each party holds, party 1 first, when the parties brought their own
    #: files (:mod:`vfl.datasets.parties`): the vertical setting gives each party its own
    parties: tuple | None = None

    def __post_init__(self):
        for part in ("train", "test"):
            t, y = getattr(self, part), getattr(self, f"y_{part}")
            if y.ndim != 1 or t.n_rows != y.shape[0]:
                raise DataError(f"{self.name}: {part} has {t.n_rows} records but {y.shape} labels")
            if not np.all(np.abs(y) == 1.0):
                raise DataError(f"{self.name}: y_{part} must hold only -1.0 and +1.0")
        if self.train.names != self.test.names:
            raise DataError(f"{self.name}: train and test have different columns")

    @property
    def n_columns(self) -> int:
        return len(self.train.names)
