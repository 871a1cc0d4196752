"""Config -> data -> partition -> run -> records, in memory.

:func:`run_experiment` does the whole experiment and returns a
:class:`RunResult`; writing it to disk is :mod:`vfl.experiments.records`'
job, drawing it the presentation layer's.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from time import perf_counter
from typing import Callable

import numpy as np
import pandas as pd

from vfl.admm import ADMMSharing, Objective
from vfl.admm.metrics import accuracy, log_loss
from vfl.baselines import central_optimum, fit_sklearn_baseline
from vfl.datasets import Dataset, load_dataset, user_cache_dir

from .config import Config
from .errors import ConfigError, DivergedError
from .partition import Partition, make_partition
from .provenance import environment_info

__all__ = ["RunResult", "compute_baselines", "run_experiment", "METRIC_COLUMNS"]

METRIC_COLUMNS = [
    "epoch",
    "objective",
    "suboptimality",
    "train_logloss",
    "test_logloss",
    "train_accuracy",
    "test_accuracy",
    "primal_residual",
    "dual_residual",
    "wall_time_s",
    "x_time_s",
    "z_time_s",
    "y_time_s",
]

# Bump when the baselines' definition changes, so stale cache entries are ignored.
BASELINE_VERSION = 1


@dataclass
class RunResult:
    config: Config
    manifest: dict
    metrics: pd.DataFrame
    baselines: dict
    coef: list[np.ndarray] = field(default_factory=list)


def make_objective(config: Config) -> Objective:
    o = config.objective
    return Objective(loss=o.loss, lam=o.lam, reduction=o.reduction)


def _dataset_identity(dataset: Dataset) -> dict:
    # Checksums plus loader options (encoding, normalize_rows) identify file
    # datasets; generator parameters identify synthetic ones.
    prov = dataset.provenance
    if dataset.checksums:
        return {"name": dataset.name, "checksums": dataset.checksums,
                "options": prov.get("options"), "preprocessing": prov.get("preprocessing")}
    return {"name": dataset.name, "provenance": prov}


def compute_baselines(dataset: Dataset, partition: Partition, objective: Objective,
                      *, use_cache: bool = True) -> dict:
    """sklearn on all features and on party 1's, and the central optimum F*.

    Cached in ``<user cache>/baselines/`` under a hash of (dataset identity,
    objective, partition), since they depend on nothing else.
    """
    key_src = {
        "version": BASELINE_VERSION,
        "dataset": _dataset_identity(dataset),
        "objective": {"loss": objective.loss, "lam": objective.lam, "reduction": objective.reduction},
        "partition": partition.describe(),
    }
    key = hashlib.sha256(json.dumps(key_src, sort_keys=True, default=str).encode()).hexdigest()[:20]
    path = user_cache_dir() / "baselines" / f"{key}.json"
    if use_cache and path.is_file():
        try:
            cached = json.loads(path.read_text())
            if cached.get("key") == key_src:
                cached["cached"] = True
                return cached
        except (OSError, json.JSONDecodeError):
            pass  # a damaged cache entry is recomputed, not trusted

    D_train = partition.join(dataset.X_train)
    D_test = partition.join(dataset.X_test)
    central = central_optimum(D_train, dataset.y_train, objective)
    u_test = D_test @ central.x
    u_train = D_train @ central.x
    local = Partition(parties=partition.parties[:1], n_features=partition.n_features,
                      intercept=partition.intercept)
    result = {
        "key": key_src,
        "central": {
            "objective": central.value,
            "grad_norm": central.grad_norm,
            "n_iter": central.n_iter,
            "seconds": central.seconds,
            "method": central.method,
            "train_logloss": log_loss(u_train, dataset.y_train),
            "test_logloss": log_loss(u_test, dataset.y_test),
            "test_accuracy": accuracy(u_test, dataset.y_test),
        },
        "sklearn_all_features": fit_sklearn_baseline(
            D_train, dataset.y_train, D_test, dataset.y_test, objective),
        "sklearn_local_only": fit_sklearn_baseline(
            local.join(dataset.X_train), dataset.y_train,
            local.join(dataset.X_test), dataset.y_test, objective),
    }
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(result, indent=2))
        os.replace(tmp, path)
    result["cached"] = False
    return result


def _evaluate(solver: ADMMSharing, test_blocks, y_test) -> dict:
    u_train = solver.margins()
    u_test = np.sum([B @ xm for B, xm in zip(test_blocks, solver.x)], axis=0)
    return {
        "train_logloss": log_loss(u_train, solver.b),
        "test_logloss": log_loss(u_test, y_test),
        "train_accuracy": accuracy(u_train, solver.b),
        "test_accuracy": accuracy(u_test, y_test),
    }


def run_experiment(
    config: Config,
    *,
    data_dir=None,
    on_epoch: Callable[[dict], None] | None = None,
    use_cache: bool = True,
) -> RunResult:
    """Run ``config`` end to end and return its records (nothing is written)."""
    started = datetime.now(timezone.utc)
    dataset = load_dataset(config.data.dataset, data_dir, options=config.data.options)
    partition = make_partition(config.partition, dataset.n_features)
    objective = make_objective(config)
    baselines = compute_baselines(dataset, partition, objective, use_cache=use_cache)
    f_star = baselines["central"]["objective"]

    train_blocks = partition.split(dataset.X_train)
    test_blocks = partition.split(dataset.X_test)
    try:
        solver = ADMMSharing(train_blocks, dataset.y_train, objective,
                             rho=config.solver.rho, z_tol=config.solver.z_tol)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None

    rows = []

    def record(epoch, stats, elapsed):
        obj = solver.objective_value() if stats is None else stats.objective
        row = {
            "epoch": epoch,
            "objective": obj,
            "suboptimality": (obj - f_star) / abs(f_star),
            **_evaluate(solver, test_blocks, dataset.y_test),
            "primal_residual": solver.primal_residual() if stats is None else stats.primal_residual,
            "dual_residual": solver.dual_residual() if stats is None else stats.dual_residual,
            "wall_time_s": elapsed,
            "x_time_s": 0.0 if stats is None else stats.x_seconds,
            "z_time_s": 0.0 if stats is None else stats.z_seconds,
            "y_time_s": 0.0 if stats is None else stats.y_seconds,
        }
        rows.append(row)
        if on_epoch is not None:
            on_epoch(row)

    n = len(dataset.y_train)
    rho_min = objective.min_rho(n)
    record(0, None, 0.0)  # the common starting point x = y = z = 0
    elapsed = 0.0
    # Overflow in a diverging run is reported once, below, not as warnings.
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(config.solver.epochs):
            t0 = perf_counter()
            stats = solver.step()
            elapsed += perf_counter() - t0  # solver time only; evaluation is not charged
            if not np.isfinite(stats.objective):
                raise DivergedError(
                    f"ADMM diverged at epoch {solver.epoch} (objective {stats.objective}); "
                    f"rho = {config.solver.rho:g}, while Assumption 1.2(c) of Hu et al. "
                    f"asks for rho > sqrt(2) L = {rho_min:.4g}"
                )
            record(solver.epoch, stats, elapsed)

    finished = datetime.now(timezone.utc)
    metrics = pd.DataFrame(rows, columns=METRIC_COLUMNS)
    final = rows[-1]
    manifest = {
        "name": config.name,
        **environment_info(),
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": finished.isoformat(timespec="seconds"),
        "seed": config.run.seed,
        "dataset": {
            "name": dataset.name,
            "description": dataset.description,
            "stand_in": dataset.is_stand_in,
            "n_train": int(dataset.X_train.shape[0]),
            "n_test": int(dataset.X_test.shape[0]),
            "n_features": int(dataset.n_features),
            "sha256": dataset.checksums,
            "provenance": dataset.provenance,
        },
        "partition": partition.describe(),
        "objective": {
            "loss": objective.loss,
            "reduction": objective.reduction,
            "lam": objective.lam,
            "regularizer": "lam * sum_m ||x_m||^2 (intercept included)",
            "intercept": partition.intercept,
            "formula": objective.describe(),
        },
        "solver": {
            "name": config.solver.name,
            "algorithm": "ADMM sharing, Hu et al. Algorithm 1, updates (6)-(8), Jacobi",
            "rho": config.solver.rho,
            "epochs": config.solver.epochs,
            "z_tol": config.solver.z_tol,
            "x_update": "exact: Cholesky of 2*lam*I + rho*D_m^T D_m (push-through N x N form when d_m > N)",
            "z_update": "vectorized safeguarded Newton on (7)",
            "init": "x = y = z = 0",
            "assumption_1_2c": {
                "L": objective.smoothness(n),
                "rho_min": rho_min,
                "satisfied": config.solver.rho > rho_min,
            },
        },
        "result": {
            "final_objective": final["objective"],
            "central_objective": f_star,
            "relative_gap": final["suboptimality"],
            "final_test_logloss": final["test_logloss"],
            "final_test_accuracy": final["test_accuracy"],
            "solver_seconds": elapsed,
            "seconds_per_epoch": elapsed / config.solver.epochs,
        },
    }
    return RunResult(config=config, manifest=manifest, metrics=metrics,
                     baselines=baselines, coef=list(solver.x))
