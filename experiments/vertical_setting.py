"""The vertical setting: the columns dealt to the parties (party 1 holds the labels), each
repeat's blocks, and its references."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.layouts import VerticalData
from vfl.core.streams import Streams
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import Stage, _user_listed

from .config import Config
from .distribution import Prepared, SplitRecords, _encoded, make_objective
from .heldout import (
    HELD_OUT_FILE,
    refuse_private_public,
    test_part_private,
    test_source,
)
from .partition import PartitionError, make_partition
from .setting_baselines import vertical_baselines


def _party_columns(config: Config, raw: RawDataset, stage: Stage):
    """``[partition]``, or with party files each party's own columns after encoding."""
    if raw.parties is None:
        return config.partition
    widths = [sum(stage.encoder._width(n) for n in names) for names in raw.parties]
    return replace(config.partition, columns=widths)


def _listed_widths(raw: RawDataset, stage: Stage) -> str:
    """Where a width mismatch may come from: the categorical columns whose values a list the
    user wrote sets (a value of the file left out of it adds no column)."""

    listed = []
    for name, source in stage.sources.get("categories", {}).items():
        where = _user_listed(raw, name, source)
        if where is not None:
            listed.append(f"{name!r} {stage.encoder._width(name)} from {where}")
    if not listed:
        return ""
    return f" (one-hot columns: {', '.join(listed)}; a value left out of a list has no column of its own)"


class VerticalSetting:
    """Parties hold columns (``[partition]`` columns / ranges / indices)."""

    repeats_share_baselines = True
    #: party m holds the same records in every repeat (a deployment's repeats add per party)
    same_units_every_repeat = True

    def __init__(self, config: Config, raw: RawDataset, stage: Stage):
        k = config.partition.public
        test_table, y_test, public = raw.test, raw.y_test, None
        self.test_private = test_part_private(raw)
        refuse_private_public(config, HELD_OUT_FILE if self.test_private else None)
        if k:  # rows of the test part declared public: out of the test set, for tuning and fits
            if k >= raw.test.n_rows:
                raise ConfigError(
                    f"partition.public = {k}: the test part has {raw.test.n_rows} rows and some must stay for testing"
                )
            perm = Streams(config.run.seed).get("split").permutation(raw.test.n_rows)
            pub, rest = np.sort(perm[:k]), np.sort(perm[k:])
            public, test_table, y_test = raw.test.take(pub), raw.test.take(rest), raw.y_test[rest]
        elif stage.needs_public_rows:
            raise ConfigError(
                "preprocessing: source 'public' needs rows declared public: set "
                "partition.public (rows of the test part)"
            )
        scaler = stage.fit_public(stage.encode(public)) if stage.needs_public_rows else stage.scaler
        # copy=False: records the column steps leave as they are (a9a) are split straight from
        # the matrix as read, never copied first (the split's blocks are new matrices)
        dataset = _encoded(
            raw,
            stage,
            stage.columns(raw.train, scaler, copy=False),
            stage.columns(test_table, scaler, copy=False),
            y_test,
        )
        # the per-record steps act on each party's block (Assumption 2.3 of Hu et al.)
        try:
            partition = make_partition(_party_columns(config, raw, stage), dataset.n_features, rows=stage.rows)
        except PartitionError as exc:
            raise PartitionError(f"{exc}{_listed_widths(raw, stage)}") from None
        self.config, self.partition, self.stage = config, partition, stage
        self.n_features = dataset.n_features
        self.steps = stage.describe("party block", scaler)
        self.objective = make_objective(config)
        self._train = partition.split(dataset.X_train)
        self._test = partition.split(dataset.X_test)
        # from here on the blocks are the data: the encoded matrices are not kept
        self.dataset = SplitRecords.of(dataset)
        del dataset
        self._public = None if public is None else (partition.split(stage.columns(public, scaler)), raw.y_test[pub])

    def prepare(self, streams: Streams) -> Prepared:
        # The split is fixed by the partition: every repeat sees the same blocks.
        return Prepared(
            data=VerticalData(self._train, self.dataset.y_train),
            test=self._test,
            y_test=self.dataset.y_test,
            y_train=self.dataset.y_train,
            distribution={
                "setting": "vertical",
                "parties": self.partition.describe(),
                "public": self.config.partition.public,
                **test_source("the dataset's test part", self.test_private),
            },
            objective=self.objective,
            preprocessing=self.steps,
            public=self._public,
            test_private=self.test_private,
        )

    def baselines(self, prepared: Prepared, *, use_cache: bool, which: str = "all") -> dict:
        return vertical_baselines(
            self.dataset,
            self.partition,
            self.objective,
            use_cache=use_cache,
            which=which,
            blocks=(self._train, self._test),
        )

    def records(self):
        """Every record after the whole stage (each party's block joined), in file order:
        ``(train part, test part)``. What the neighbouring-record tests compare."""
        return self.partition.join(None, self._train), self.partition.join(None, self._test)
