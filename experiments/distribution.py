"""What every setting's distribution of the data shares: one repeat's :class:`Prepared` data,
the records as split (:class:`SplitRecords`), the preprocessing stage fitted on the training
rows, and the objective the config names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import ConfigError
from vfl.core.objective import Objective
from vfl.core.solver import Setting
from vfl.datasets import Dataset
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import Stage, fit_stage

from .config import Config


@dataclass
class Prepared:
    """One repeat's data, distributed, and what the manifest says about it."""

    data: Any  # VerticalData | HorizontalData | NetworkData
    test: Any  # held-out features in the solver's layout
    y_test: np.ndarray
    y_train: np.ndarray  # labels in the order of ``solver.train_margins()``
    distribution: dict
    objective: Objective
    baselines: dict = field(default_factory=dict)
    split: dict = field(default_factory=dict)  # what fixes the random split (seed, repeat)
    preprocessing: list = field(default_factory=list)  # the stage's steps, with their sources
    # rows declared public, disjoint from the private ones, in the solver's layout with labels
    public: Any = None
    #: why the test rows are records the relation protects ("" when they come from a source
    #: it does not protect: the published test file, a separate test file): a private run's
    #: metrics scored on them are then diagnostic
    test_private: str = ""


def fit_config_stage(config: Config, raw: RawDataset, cls) -> Stage:
    """The ``[preprocessing]`` stage of ``config`` on ``raw`` for solver class ``cls``.

    A run that claims a guarantee takes no parameter from its training rows
    (:func:`vfl.datasets.stage.fit_stage` refuses with the key to set).
    """
    try:
        return fit_stage(
            raw,
            config.preprocessing.values,
            private=config.privacy.claims_guarantee,
            intercept_default=config.setting is Setting.VERTICAL,
            unit_rows=cls.unit_rows(cls.typed_privacy(config.privacy.values)),
            solver=cls.name,
        )
    except ValueError as exc:
        raise ConfigError(f"preprocessing: {exc}") from None


@dataclass(frozen=True, eq=False)
class SplitRecords:
    """The encoded records of a vertical run once split into the parties' blocks.

    What the references and the manifest read besides the blocks: the name,
    checksums and provenance (the data's identity for the baseline cache), the
    labels and the sizes. The matrices themselves are not kept: the parties'
    blocks are all the solver and the references need, and a copy of the
    rows beside them would double the run's memory.
    """

    name: str
    y_train: np.ndarray
    y_test: np.ndarray
    description: str
    is_stand_in: bool
    checksums: dict
    provenance: dict
    n_features: int
    n_train: int
    n_test: int
    #: the encoded training matrix's bytes before the split (CSR: values, column indices and
    #: row pointers; dense: its values)
    train_bytes: int

    @classmethod
    def of(cls, dataset: Dataset) -> SplitRecords:
        X = dataset.X_train
        nbytes = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) if sp.issparse(X) else X.nbytes
        return cls(
            name=dataset.name,
            y_train=dataset.y_train,
            y_test=dataset.y_test,
            description=dataset.description,
            is_stand_in=dataset.is_stand_in,
            checksums=dataset.checksums,
            provenance=dataset.provenance,
            n_features=dataset.n_features,
            n_train=dataset.n_train,
            n_test=dataset.n_test,
            train_bytes=int(nbytes),
        )


def _encoded(raw: RawDataset, stage: Stage, X_train, X_test, y_test=None) -> Dataset:
    """The data after the column steps, as the baselines and the manifest see it."""
    return Dataset(
        name=raw.name,
        X_train=X_train,
        y_train=raw.y_train,
        X_test=X_test,
        y_test=raw.y_test if y_test is None else y_test,
        description=raw.description,
        is_stand_in=raw.is_stand_in,
        checksums=raw.checksums,
        provenance={**raw.provenance, "feature_names": stage.feature_names, "preprocessing": stage.describe("row")},
    )


def make_objective(config: Config) -> Objective:
    o = config.objective
    unit = config.partition.samples_per_agent if o.reduction == "unit_mean" else None
    return Objective(loss=o.loss, lam=o.lam, reduction=o.reduction, regularizer=o.regularizer, unit_size=unit)
