"""The settings whose units hold rows: horizontal (the training rows dealt to providers) and
network (agents on a graph, each with its own samples), each repeat drawn from the run's streams."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vfl.admm.consensus import split_providers
from vfl.admm.pretrain import consensus_optimum
from vfl.core.errors import ConfigError
from vfl.core.solver import Setting
from vfl.core.streams import Streams
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import Stage
from vfl.decentralized.graphs import make_graph
from vfl.decentralized.problem import build_network_data, encode_labels

from .config import Config
from .distribution import Prepared, make_objective
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
from .setting_baselines import BASELINE_VERSION, _cached, _majority, _raw_identity, _score


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
