"""The references a run is measured against: the central optimum of the same objective, a
vertical run's comparison lines (the parties' own models, sklearn's fit), the majority class,
each scored on the same rows and kept in the user cache, keyed by the data and the config."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace

import numpy as np

from vfl.baselines import fit_sklearn_baseline
from vfl.baselines.central import central_optimum, column_design
from vfl.core.metrics import accuracy, log_loss
from vfl.core.objective import Objective
from vfl.datasets import Dataset, user_cache_dir
from vfl.datasets.dataset import RawDataset
from vfl.datasets.stage import Stage

from .distribution import SplitRecords
from .partition import Partition

# Bump when the baselines' definition changes, so stale cache entries are ignored.
BASELINE_VERSION = 5


def _score(u_train, y_train, u_test, y_test) -> dict:
    return {
        "train_logloss": log_loss(u_train, y_train),
        "test_logloss": log_loss(u_test, y_test),
        "train_accuracy": accuracy(u_train, y_train),
        "test_accuracy": accuracy(u_test, y_test),
    }


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
