"""How data is distributed in each setting, and the references a run is measured against.

One class per :class:`~vfl.core.solver.Setting`. Each turns a loaded
dataset and the config into the solver's input (:class:`VerticalData`,
:class:`HorizontalData` or :class:`NetworkData`) plus the held-out data in
the layout the solver's ``decision_function`` expects, describes the
distribution for the manifest, and computes the baselines (the central
optimum of the same objective and the setting's comparison lines).

Random choices (which rows go to which provider, the graph, ``x^0``) come
from the run's own :class:`~vfl.core.streams.Streams`, so each repeat of a run
draws a fresh split while every solver in the same repeat sees the same one.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfl.core.errors import ConfigError, DataError
from vfl.core.layouts import VerticalData
from vfl.core.metrics import accuracy, log_loss
from vfl.core.objective import Objective
from vfl.core.solver import Setting
from vfl.core.streams import Streams
from vfl.datasets import Dataset, user_cache_dir
from vfl.datasets.base import RawDataset
from vfl.datasets.stage import Stage, fit_stage

from .config import Config
from .heldout import (
    FROM_POOL,
    HELD_OUT_FILE,
    held_out_rows,
    refuse_private_public,
    rows_needed,
    test_part,
    test_part_private,
    test_source,
)
from .partition import Partition, PartitionError, make_partition

__all__ = ["Prepared", "SplitRecords", "prepare", "fit_config_stage", "make_objective", "BASELINE_VERSION"]

# Bump when the baselines' definition changes, so stale cache entries are ignored.
BASELINE_VERSION = 5


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


def _score(u_train, y_train, u_test, y_test) -> dict:
    return {
        "train_logloss": log_loss(u_train, y_train),
        "test_logloss": log_loss(u_test, y_test),
        "train_accuracy": accuracy(u_train, y_train),
        "test_accuracy": accuracy(u_test, y_test),
    }


# ----------------------------------------------------------------- vertical --
def _dataset_identity(dataset: Dataset | SplitRecords) -> dict:
    # Checksums plus loader options and the preprocessing stage identify file
    # datasets; generator parameters identify synthetic ones.
    prov = dataset.provenance
    if dataset.checksums:
        return {
            "name": dataset.name,
            "checksums": dataset.checksums,
            "options": prov.get("options"),
            "preprocessing": prov.get("preprocessing"),
        }
    return {"name": dataset.name, "provenance": prov}


def _raw_identity(raw: RawDataset, stage: Stage) -> dict:
    prov = raw.provenance
    who = {"checksums": raw.checksums, "options": prov.get("options")} if raw.checksums else {"provenance": prov}
    return {"name": raw.name, **who, "preprocessing": stage.describe("row")}


def _cached(key_src: dict, compute, use_cache: bool) -> dict:
    """``compute()`` cached in ``<user cache>/baselines/`` under a hash of ``key_src``.

    A damaged or mismatched entry is recomputed, never trusted.
    """
    key = hashlib.sha256(json.dumps(key_src, sort_keys=True, default=str).encode()).hexdigest()[:20]
    path = user_cache_dir() / "baselines" / f"{key}.json"
    if use_cache and path.is_file():
        try:
            cached = json.loads(path.read_text())
            if cached.get("key") == json.loads(json.dumps(key_src, default=str)):
                cached["cached"] = True
                return cached
        except (OSError, json.JSONDecodeError):
            pass
    result = {"key": key_src, **compute()}
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result, indent=2, default=str))
        os.replace(tmp, path)
    result["cached"] = False
    return result


def central_solution(
    dataset: SplitRecords, partition: Partition, objective: Objective, *, use_cache: bool = True, blocks
) -> tuple[dict, bool]:
    """The exact central optimum of problem (1) on every party's columns, scored, and whether
    it came from the cache. ``blocks``: the parties' (train, test) blocks; the solve works on
    them as they are (:func:`vfl.baselines.central.column_design`: sparse blocks are never
    joined, and give the joined design's numbers to the bit).

    One solve per dataset, objective and design (:meth:`Partition.design_key`),
    cached in ``<user cache>/baselines/`` under a hash of them: every run on
    the same design shares it (a sweep over noise, seeds, rho or epochs, and
    the ``all`` and ``central`` sets of references).
    """
    from vfl.baselines.central import central_optimum, column_design

    key_src = {
        "version": BASELINE_VERSION,
        "what": "central",
        "dataset": _dataset_identity(dataset),
        "objective": {
            "loss": objective.loss,
            "lam": objective.lam,
            "reduction": objective.reduction,
            "regularizer": objective.regularizer,
        },
        "design": partition.design_key(),
    }

    def compute():
        train, test = blocks
        D_train = column_design(train)
        central = central_optimum(D_train, dataset.y_train, objective)
        return {
            "label": "central optimum F*",
            "objective": central.value,
            "grad_norm": central.grad_norm,
            "n_iter": central.n_iter,
            "seconds": central.seconds,
            "method": central.method,
            **_score(D_train @ central.x, dataset.y_train, column_design(test) @ central.x, dataset.y_test),
        }

    found = _cached(key_src, compute, use_cache)
    return {k: v for k, v in found.items() if k not in ("key", "cached")}, found["cached"]


def vertical_baselines(
    dataset: SplitRecords,
    partition: Partition,
    objective: Objective,
    *,
    use_cache: bool = True,
    which: str = "all",
    blocks,
) -> dict:
    """The references of ``which`` (``run.baselines``): the central optimum F* and the base
    rate, and with ``all`` sklearn on all features and on party 1's. ``blocks``: the parties'
    (train, test) blocks (sklearn gets them joined: it needs one matrix).

    Cached in ``<user cache>/baselines/`` under a hash of (dataset identity,
    objective, partition), since they depend on nothing else; the central
    solve is cached on its own (:func:`central_solution`).
    """
    from vfl.baselines import fit_sklearn_baseline

    if which == "none":
        return {}
    central, cached = central_solution(dataset, partition, objective, use_cache=use_cache, blocks=blocks)
    if which == "central":
        return {"central": central, "majority": _majority(dataset.y_train, dataset.y_test), "cached": cached}
    key_src = {
        "version": BASELINE_VERSION,
        "dataset": _dataset_identity(dataset),
        "objective": {
            "loss": objective.loss,
            "lam": objective.lam,
            "reduction": objective.reduction,
            "regularizer": objective.regularizer,
        },
        "partition": partition.describe(),
    }

    train, test = blocks

    def compute():
        D_train = partition.join(None, train)
        D_test = partition.join(None, test)
        local = replace(partition, parties=partition.parties[:1])
        local_blocks = (train[:1], test[:1])
        return {
            "central": central,
            "sklearn_all_features": {
                "label": "sklearn, all features",
                "line": "--",
                "role": "all",
                **fit_sklearn_baseline(D_train, dataset.y_train, D_test, dataset.y_test, objective),
            },
            "sklearn_local_only": {
                "label": "sklearn, party 1 only",
                "line": ":",
                "role": "local",
                **fit_sklearn_baseline(
                    local.join(None, local_blocks[0]),
                    dataset.y_train,
                    local.join(None, local_blocks[1]),
                    dataset.y_test,
                    objective,
                ),
            },
            "majority": _majority(dataset.y_train, dataset.y_test),
        }

    return _cached(key_src, compute, use_cache)


def _party_columns(config: Config, raw: RawDataset, stage: Stage):
    """``[partition]``, or with party files each party's own columns after encoding."""
    if raw.parties is None:
        return config.partition
    widths = [sum(stage.encoder._width(n) for n in names) for names in raw.parties]
    return replace(config.partition, columns=widths)


def _listed_widths(raw: RawDataset, stage: Stage) -> str:
    """Where a width mismatch may come from: the categorical columns whose values a list the
    user wrote sets (a value of the file left out of it adds no column)."""
    from vfl.datasets.stage import _user_listed

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


SETTINGS = {Setting.VERTICAL: VerticalSetting}


def prepare(config: Config, raw: RawDataset, cls):
    """The setting object for ``config`` (fits the preprocessing stage and validates the
    distribution against the data)."""
    stage = fit_config_stage(config, raw, cls)
    try:
        return SETTINGS[config.setting](config, raw, stage)
    except ValueError as exc:
        raise DataError(str(exc)) from None


# --------------------------------------------------------------- horizontal --
def _dense(X) -> np.ndarray:
    return np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=float)


def _pool(config: Config, raw: RawDataset, stage: Stage) -> tuple[np.ndarray, np.ndarray]:
    """The encoded records the rows are drawn from (scaled too, unless the scaling is
    fitted on each split's public rows)."""
    table, y = raw.train, raw.y_train
    if config.partition.pool == "train+test":
        table, y = table.stack(raw.test), np.concatenate([y, raw.y_test])
    X = stage.encode(table) if stage.needs_public_rows else stage.columns(table)
    return _dense(X), np.asarray(y, dtype=float)


def _majority(y_train, y_test) -> dict:
    """Predict the training majority class with the training base rate (a reference line)."""
    rate = float(np.mean(y_train > 0))
    logit = np.log(rate / (1 - rate)) if 0 < rate < 1 else 0.0
    u_tr, u_te = np.full(y_train.shape, logit), np.full(y_test.shape, logit)
    return {
        "label": "majority class (base rate)",
        "line": ":",
        "test_accuracy": float(np.mean((y_test > 0) == (rate > 0.5))),
        "test_logloss": log_loss(u_te, y_test),
        "train_logloss": log_loss(u_tr, y_train),
        "train_accuracy": float(np.mean((y_train > 0) == (rate > 0.5))),
    }


class HorizontalSetting:
    """Providers hold rows: ``[partition] agents``, ``samples_per_agent``, ``public``, ``test``,
    ``held_out``.

    Each repeat permutes the pool with the repeat's ``split`` stream. With
    ``held_out = "pool"``, the first ``public`` rows are public (e.g. DP-ADMM's
    pre-training rows), the next ``agents x samples_per_agent`` go to the
    providers in contiguous blocks, and ``test`` rows after them are the test
    set (``test = 0``: the dataset's own test part, or with ``pool =
    "train+test"`` every row no provider holds). With ``held_out =
    "test_part"`` the providers' rows are the permuted pool's first ones, and
    the public and test rows come from the dataset's test part, permuted by
    the repeat's second ``split`` stream: ``public`` rows, then ``test`` (all
    the rest when 0).

    In a run that claims a guarantee the public rows must be rows the relation
    does not protect (refused otherwise), and test rows drawn from the pool
    make the metrics scored on them diagnostic (:attr:`Prepared.test_private`).
    """

    partition = None  # rows, not columns, are distributed: no column partition

    repeats_share_baselines = False
    #: rows are dealt afresh per repeat: a record may sit at any unit of each
    same_units_every_repeat = False

    def __init__(self, config: Config, raw: RawDataset, stage: Stage):
        self.config, self.raw, self.stage = config, raw, stage
        p = config.partition
        self.from_test_part = p.held_out == "test_part"
        # the test rows: from the test part (private only if held out of the training file),
        # else drawn from the pool, whose records the guarantee protects
        own_test = self.from_test_part or (p.test == 0 and p.pool == "train")
        self.test_private = (
            test_part_private(raw)
            if own_test
            else (
                f"scored on rows drawn by the seed from the pool ({p.pool}) that the providers' rows "
                'come from, records the guarantee protects: set partition.held_out = "test_part" '
                "to score the dataset's test file"
            )
        )
        refuse_private_public(
            config, FROM_POOL if not self.from_test_part else HELD_OUT_FILE if test_part_private(raw) else None
        )
        self.X, self.y = _pool(config, raw, stage)
        if not stage.needs_public_rows:  # per-record steps now; else after each split's fit
            self.X = stage.rows.apply(self.X)
        elif p.public == 0:
            raise ConfigError("preprocessing: source 'public' needs rows declared public: set partition.public > 0")
        self.n_features = int(self.X.shape[1])
        self.identity = _raw_identity(raw, stage)
        self.objective = make_objective(config)
        rows_needed(config, p.agents, len(self.y), raw.test.n_rows)
        # the test part as the pool's rows are before a split (the public and test rows come
        # from it with held_out = "test_part", the test rows with test = 0 and the train pool)
        self.held = (test_part(raw, stage), np.asarray(raw.y_test, dtype=float)) if own_test else None

    def prepare(self, streams: Streams) -> Prepared:
        from vfl.admm.consensus import split_providers

        p = self.config.partition
        own_test = p.test == 0 and p.pool == "train"
        split = {"seed": streams.seed, "repeat": streams.repeat}
        stage, scaler = self.stage, self.stage.scaler
        if self.from_test_part:
            data, _ = split_providers(
                self.X,
                self.y,
                providers=p.agents,
                samples_per_provider=p.samples_per_agent,
                test=0,
                rng=streams.get("split"),
            )
            (X_pub, y_pub), (X_test, y_test) = held_out_rows(*self.held, p.public, p.test, streams.get("split", 1))
            if p.public:
                data = replace(data, public=(X_pub, y_pub))
        else:
            data, (X_test, y_test) = split_providers(
                self.X,
                self.y,
                providers=p.agents,
                samples_per_provider=p.samples_per_agent,
                public=p.public,
                test=None if p.test == 0 else p.test,
                rng=streams.get("split"),
            )
            if own_test:
                X_test, y_test = self.held
        if stage.needs_public_rows:
            # the scaling is fitted on this split's public rows, then every part gets it
            scaler = stage.fit_public(data.public[0])

            def done(X):
                return stage.rows.apply(_dense(scaler.transform(X)))

            n, m, d = data.A.shape
            A = done(data.A.reshape(n * m, d))
            data = replace(data, A=A.reshape(n, m, A.shape[1]), public=(done(data.public[0]), data.public[1]))
            X_test = done(X_test)
        return Prepared(
            data=data,
            test=X_test,
            y_test=y_test,
            y_train=data.b.reshape(-1),
            distribution={
                "setting": "horizontal",
                "providers": p.agents,
                "samples_per_provider": p.samples_per_agent,
                "public": p.public,
                "test": int(len(y_test)),
                **test_source(
                    "drawn from the dataset's test part"
                    if self.from_test_part
                    else "the dataset's test part"
                    if own_test
                    else f"held out from the pool ({p.pool})",
                    self.test_private,
                ),
                "held_out": p.held_out,
                "pool": p.pool,
                "split": "one permutation per repeat, "
                "SeedSequence(seed, spawn_key=(3, ...))"
                + ("; the test part's by spawn_key=(3, 1, ...)" if self.from_test_part else ""),
            },
            objective=self.objective,
            split=split,
            preprocessing=stage.describe("row", scaler),
            test_private=self.test_private,
        )

    def records(self):
        """The pool after the whole stage, in record order, and the dataset's own test part
        (encoded only, before a scaling fitted on each split's public rows)."""
        return self.X, test_part(self.raw, self.stage)

    def baselines(self, prepared: Prepared, *, use_cache: bool, which: str = "all") -> dict:
        """The pooled optimum of the same objective on this repeat's split and the base rate,
        and with ``which = "all"`` provider 1 alone.

        Cached per (data, distribution, objective, seed, repeat): every config
        of a figure shares the split of its repeat, so it is solved once.
        """
        from vfl.admm.pretrain import consensus_optimum

        if which == "none":
            return {}

        def compute():
            data = prepared.data
            w, f_star = consensus_optimum(
                data.A, data.b, lam=self.objective.lam, regularizer=self.objective.regularizer
            )
            u_tr = data.A.reshape(-1, data.A.shape[-1]) @ w
            # provider 1 on its own rows, with the pooled problem's weight per sample
            found = {
                "central": {
                    "label": "central optimum (pooled data)",
                    "objective": f_star,
                    "norm": float(np.linalg.norm(w)),
                    "role": "all",
                    **_score(u_tr, prepared.y_train, prepared.test @ w, prepared.y_test),
                }
            }
            if which == "all":
                w1, _ = consensus_optimum(
                    data.A[:1], data.b[:1], lam=self.objective.lam / len(data.A), regularizer=self.objective.regularizer
                )
                found["local_only"] = {
                    "label": "provider 1 alone",
                    "line": ":",
                    "role": "local",
                    **_score(data.A[0] @ w1, data.b[0], prepared.test @ w1, prepared.y_test),
                }
            return {**found, "majority": _majority(prepared.y_train, prepared.y_test)}

        key = {
            "version": BASELINE_VERSION,
            "setting": "horizontal",
            "dataset": self.identity,
            "partition": self.config.partition.to_dict(Setting.HORIZONTAL),
            "preprocessing": prepared.preprocessing,
            "objective": {
                "loss": self.objective.loss,
                "lam": self.objective.lam,
                "reduction": self.objective.reduction,
                "regularizer": self.objective.regularizer,
                "unit_size": self.objective.unit_size,
            },
            **prepared.split,
            **({} if which == "all" else {"which": which}),
        }
        return _cached(key, compute, use_cache)


# ------------------------------------------------------------------ network --
class NetworkSetting:
    """Agents on a graph (``[network]``), ``[partition] samples_per_agent`` rows each.

    Per repeat: the graph from the repeat's ``graph`` stream (redrawn until
    connected), the samples (disjoint, without replacement) from ``split``,
    ``x^0 ~ N(0, I)`` from ``x0``: the same for every solver in the repeat
    (common random numbers). ``x*`` is the central optimum of the same
    objective on the union of the agents' samples. The test set is
    ``partition.test`` rows not held by any agent (all of them when 0): records of
    the pool, which the guarantee protects, so a private run's metrics scored on
    them are diagnostic; with ``partition.held_out = "test_part"`` it is
    ``partition.test`` rows (all when 0) of the dataset's test part instead.
    """

    partition = None  # rows, not columns, are distributed: no column partition

    repeats_share_baselines = False
    #: rows are dealt afresh per repeat: a record may sit at any unit of each
    same_units_every_repeat = False

    def __init__(self, config: Config, raw: RawDataset, stage: Stage):
        from vfl.decentralized.problem import encode_labels

        if stage.needs_public_rows:
            raise ConfigError(
                "preprocessing: source 'public' needs rows declared public; the "
                "network setting has none (give constants instead)"
            )
        self.config, self.stage = config, stage
        p = config.partition
        self.from_test_part = p.held_out == "test_part"
        self.test_private = (
            test_part_private(raw)
            if self.from_test_part
            else (
                f"scored on rows of the pool ({p.pool}) that no agent holds in this repeat, records "
                'the guarantee protects: set partition.held_out = "test_part" to score the '
                "dataset's test file"
            )
        )
        refuse_private_public(
            config, FROM_POOL if not self.from_test_part else HELD_OUT_FILE if test_part_private(raw) else None
        )
        self.X, self.y = _pool(config, raw, stage)
        self.X = stage.rows.apply(self.X)
        self.n_features = int(self.X.shape[1])
        labels = config.network.labels

        def coded(y):
            # margins are scored against the labels as the loss reads them: with the literal
            # {0, 1} reading a positive margin predicts coded label 1 (Adult's "<=50K"); that
            # accuracy says little (label-0 samples carry no loss), and README says so
            return 2.0 * encode_labels(y, labels) - 1.0 if labels == "paper01" else y

        self.y_coded = encode_labels(self.y, labels)
        self.y_eval = coded(self.y)
        self.held = (test_part(raw, stage), coded(np.asarray(raw.y_test, dtype=float))) if self.from_test_part else None
        self.objective = make_objective(config)
        rows_needed(config, config.network.nodes, len(self.y), raw.test.n_rows)

    def prepare(self, streams: Streams) -> Prepared:
        from vfl.decentralized.graphs import make_graph
        from vfl.decentralized.problem import build_network_data

        net, p = self.config.network, self.config.partition
        adjacency = make_graph(
            net.graph, nodes=net.nodes, edges=net.edges, p=net.p, path=net.path, rng=streams.get("graph")
        )
        data, idx = build_network_data(
            self.X,
            self.y_coded,
            adjacency,
            per_agent=p.samples_per_agent,
            objective=self.objective,
            split_rng=streams.get("split"),
            x0_rng=streams.get("x0"),
        )
        if self.from_test_part:
            _, (X_test, y_test) = held_out_rows(*self.held, 0, p.test, streams.get("split", 1))
        else:
            rest = np.setdiff1d(np.arange(len(self.y)), idx.ravel())
            if p.test:
                rest = rest[streams.get("split", 1).permutation(rest.size)[: p.test]]
            X_test, y_test = self.X[rest], self.y_eval[rest]
        edges = int(adjacency.nnz // 2)
        return Prepared(
            data=data,
            test=X_test,
            y_test=y_test,
            y_train=self.y_eval[idx].reshape(-1),
            distribution={
                "setting": "network",
                "graph": net.graph,
                "nodes": net.nodes,
                "edges": edges,
                "exchange": net.exchange,
                "labels": net.labels,
                "samples_per_agent": p.samples_per_agent,
                "test": int(len(y_test)),
                "pool": p.pool,
                **test_source(
                    "drawn from the dataset's test part" if self.from_test_part else "the pool's rows no agent holds",
                    self.test_private,
                ),
                "degrees": {"min": int(np.diff(adjacency.indptr).min()), "max": int(np.diff(adjacency.indptr).max())},
            },
            objective=self.objective,
            preprocessing=self.stage.describe("row"),
            test_private=self.test_private,
        )

    def records(self):
        """The pool after the whole stage, in record order, and the test part when the test rows
        come from it (else none: they come from the pool)."""
        return self.X, self.held[0] if self.held is not None else self.X[:0]

    def baselines(self, prepared: Prepared, *, use_cache: bool, which: str = "all") -> dict:
        """x* (which the iteration's error is measured against, computed with the data) scored,
        and the base rate; ``central`` and ``all`` are the same here."""
        if which == "none":
            return {}
        data = prepared.data
        x = data.x_star
        u_tr = data.A.reshape(-1, data.A.shape[-1]) @ x
        return {
            "central": {
                "label": "central optimum x*",
                "norm": float(np.linalg.norm(x)),
                **_score(u_tr, prepared.y_train, prepared.test @ x, prepared.y_test),
            },
            "majority": _majority(prepared.y_train, prepared.y_test),
        }


SETTINGS[Setting.HORIZONTAL] = HorizontalSetting
SETTINGS[Setting.NETWORK] = NetworkSetting
