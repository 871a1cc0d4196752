"""Config -> data -> partition -> run -> records, in memory.

:func:`run_experiment` does the whole experiment and returns a
:class:`RunResult`; writing it to disk is :mod:`vfl.experiments.records`'
job, drawing it the presentation layer's.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from time import perf_counter
from typing import Callable

import numpy as np
import pandas as pd

from vfl.admm import ADMMSharing, Objective
from vfl.admm.metrics import accuracy, log_loss
from vfl.baselines import FDMLSGD, central_optimum, fit_sklearn_baseline
from vfl.datasets import REGISTRY, Dataset, dataset_status, load_dataset, resolve_data_dir, user_cache_dir

from .config import Config
from vfl.core.errors import ConfigError, DivergedError
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
    "epsilon_paper",
    "epsilon_tight",
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


def load_config_dataset(config: Config, data_dir=None) -> tuple[Dataset, str | None]:
    """Load ``config.data``; returns the dataset and, if the fallback was
    used, a sentence saying why."""
    d = config.data
    if d.fallback and d.dataset in REGISTRY:
        if not any(f["present"] for f in dataset_status(d.dataset, data_dir)):
            note = (f"no {d.dataset} file in {resolve_data_dir(data_dir)}; "
                    f"used data.fallback = {d.fallback!r}")
            return load_dataset(d.fallback), note
    return load_dataset(d.dataset, data_dir, options=d.options), None


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
    local = replace(partition, parties=partition.parties[:1])
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


def rng_streams(seed: int, n_parties: int) -> dict:
    """Independent random streams for one run, all derived from ``seed``.

    Each purpose (and each party's noise) has its own ``SeedSequence``
    child, so the noise a party draws does not depend on initialization,
    batching or the other parties, and a run replays bit for bit.
    """
    def stream(*key):
        return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))

    return {
        "noise": [stream(0, m) for m in range(n_parties)],
        "init": stream(1),
        "batch": stream(2),
    }


def build_solver(config: Config, blocks, y, objective: Objective, streams: dict, plan=None):
    """The configured solver, ready for its first epoch.

    With a privacy ``plan`` (accounting mode) the per-party sigmas are the
    plan's and local models are kept in the ball of Assumption 2.1.
    """
    s, pv = config.solver, config.privacy
    try:
        if s.name == "admm_sharing":
            sigma = pv.sigma if plan is None else plan.sigmas
            return ADMMSharing(blocks, y, objective, rho=s.rho, z_tol=s.z_tol,
                               sigma=sigma, noise_form=pv.form, noise_rngs=streams["noise"],
                               x_radius=None if plan is None else pv.b1)
        return FDMLSGD(blocks, y, objective, batch_size=s.batch_size, lr=s.lr,
                       lr_schedule=s.lr_schedule, lr_step_epochs=s.lr_step_epochs,
                       lr_gamma=s.lr_gamma, init_scale=s.init_scale, output_sigma=pv.sigma,
                       init_rng=streams["init"], batch_rng=streams["batch"],
                       noise_rngs=streams["noise"])
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def describe_solver(config: Config, objective: Objective, n: int) -> dict:
    """What the manifest says about the algorithm and its settings."""
    s, pv = config.solver, config.privacy
    privacy = {"sigma": pv.sigma, "form": pv.form if pv.private else None,
               "noise_streams": "SeedSequence(seed, spawn_key=(0, party))"}
    if s.name == "admm_sharing":
        rho_min = objective.min_rho(n)
        return {
            **s.params(),
            "algorithm": ("ADMM sharing, Hu et al. Algorithm 1, updates (6)-(8), Jacobi"
                          + ("; perturbed shares as in updates (10)" if pv.private else "")),
            "x_update": "exact: Cholesky of 2*lam*I + rho*D_m^T D_m (push-through N x N form when d_m > N)",
            "z_update": "vectorized safeguarded Newton on (7)",
            "init": "x = y = z = 0",
            "privacy": privacy,
            "assumption_1_2c": {"L": objective.smoothness(n), "rho_min": rho_min,
                                "satisfied": s.rho > rho_min},
        }
    return {
        **s.params(),
        "algorithm": ("FDML-style SGD: parties send local outputs per mini-batch, the active "
                      "party returns the loss derivative; step on grad F / (w N)"),
        "init": f"x_m ~ N(0, {s.init_scale:g}^2), SeedSequence(seed, spawn_key=(1,))",
        "batching": "reshuffled every epoch, SeedSequence(seed, spawn_key=(2,))",
        "privacy": privacy,
    }


def _evaluate(solver, test_blocks, y_test) -> dict:
    u_train = solver.margins()
    u_test = np.sum([B @ xm for B, xm in zip(test_blocks, solver.x)], axis=0)
    return {
        "train_logloss": log_loss(u_train, solver.b),
        "test_logloss": log_loss(u_test, y_test),
        "train_accuracy": accuracy(u_train, solver.b),
        "test_accuracy": accuracy(u_test, y_test),
    }


def _divergence_message(config: Config, info: dict, epoch: int, value) -> str:
    msg = f"{config.solver.name} diverged at epoch {epoch} (objective {value})"
    if "assumption_1_2c" in info:
        a = info["assumption_1_2c"]
        msg += (f"; rho = {config.solver.rho:g}, while Assumption 1.2(c) of Hu et al. asks "
                f"for rho > sqrt(2) L = {a['rho_min']:.4g}")
    elif config.solver.name == "fdml_sgd":
        msg += f"; lower solver.lr (now {config.solver.lr:g})"
    return msg


def _budget(config: Config, plan) -> dict | None:
    """The epsilon curve the budget is checked against, if a budget is set."""
    pv = config.privacy
    if plan is None or pv.budget_epsilon is None:
        return None
    paper = pv.accountant == "paper"
    if paper and np.isnan(plan.epsilon_paper).any():
        raise ConfigError("privacy.budget_epsilon with accountant = 'paper' needs Theorem 1 to apply "
                          "(per-iteration epsilon <= 1); raise privacy.sigma or use 'pld'")
    return {"limit": pv.budget_epsilon, "accountant": "paper (Corollary 1)" if paper else pv.accountant,
            "spent": plan.epsilon_paper if paper else plan.epsilon_tight}


def _privacy_columns(plan, solver, stats, epoch: int) -> dict:
    """Epsilon spent after ``epoch`` and, in accounting mode, what it rests on."""
    if plan is None:
        return {"epsilon_paper": float("nan"), "epsilon_tight": float("nan")}
    spent = plan.spent(epoch)
    return {
        "epsilon_paper": spent["epsilon_paper"] if spent["epsilon_paper"] is not None else float("nan"),
        "epsilon_tight": spent["epsilon_tight"],
        "delta_paper": spent["delta_paper"],
        "delta_tight": spent["delta_tight"],
        # Assumption 2.1 for y and z is checked here, not enforced
        "y_norm": float(np.linalg.norm(solver.y)),
        "z_norm": float(np.linalg.norm(solver.z)),
        "projected_parties": 0 if stats is None else stats.extra["projected_parties"],
        # the sigmas used in this epoch (they vary with the data-dependent sensitivity)
        **{f"sigma_party{m + 1}": 0.0 if epoch == 0 else float(sig)
           for m, sig in enumerate(solver.sigma)},
    }


def _data_dependent_sensitivities(solver, config: Config) -> np.ndarray:
    """The authors' prototype's C_m(t) (not a DP guarantee; see vfl.privacy.paper)."""
    from vfl.privacy import data_dependent_sensitivity

    pulled = solver.share_sum - solver.z  # what every party pulls (Algorithm 1, line 3)
    y_norm = float(np.linalg.norm(solver.y))
    return np.array([
        data_dependent_sensitivity(
            B.D.shape[1], config.solver.rho, config.objective.lam, solver.n_parties, y_norm,
            float(np.linalg.norm(pulled - B.matvec(xm))), float(np.linalg.norm(xm)))
        for B, xm in zip(solver.solvers, solver.x)])


def _first_over(budget) -> int | None:
    over = np.flatnonzero(budget["spent"] > budget["limit"])
    return int(over[0]) + 1 if over.size else None


def run_experiment(
    config: Config,
    *,
    data_dir=None,
    on_epoch: Callable[[dict], None] | None = None,
    use_cache: bool = True,
    with_baselines: bool = True,
    stop_at_budget: bool = False,
) -> RunResult:
    """Run ``config`` end to end and return its records (nothing is written).

    With ``stop_at_budget`` and ``privacy.budget_epsilon`` set, the run ends
    before the first epoch that would spend more than the budget; otherwise
    the manifest only records when the budget was exceeded.

    ``with_baselines=False`` skips the sklearn fits and the central optimum
    (``suboptimality`` is then NaN); the regression checks use it.
    """
    started = datetime.now(timezone.utc)
    dataset, fallback_note = load_config_dataset(config, data_dir)
    partition = make_partition(config.partition, dataset.n_features)
    if config.privacy.accounting:  # Assumption 2.3 of Hu et al., for Lemma 1
        partition = replace(partition, normalize_rows=True)
    objective = make_objective(config)
    if with_baselines:
        baselines = compute_baselines(dataset, partition, objective, use_cache=use_cache)
        f_star = baselines["central"]["objective"]
    else:
        baselines, f_star = {}, float("nan")

    train_blocks = partition.split(dataset.X_train)
    test_blocks = partition.split(dataset.X_test)
    streams = rng_streams(config.run.seed, partition.n_parties)
    plan = None
    if config.privacy.accounting:
        from .privacy_plan import plan_privacy  # imports dp-accounting: only when needed

        plan = plan_privacy(config, [B.shape[1] for B in train_blocks])
    solver = build_solver(config, train_blocks, dataset.y_train, objective, streams, plan)
    n = len(dataset.y_train)
    solver_info = describe_solver(config, objective, n)
    budget = _budget(config, plan)

    rows = []
    nan = float("nan")

    def record(epoch, stats, elapsed):
        obj = solver.objective_value() if stats is None else stats.objective
        # Residuals are ADMM's; SGD has none (NaN), and at epoch 0 they are 0.
        primal = (0.0 if hasattr(solver, "primal_residual") else nan) if stats is None \
            else stats.primal_residual
        dual = (0.0 if hasattr(solver, "dual_residual") else nan) if stats is None \
            else stats.dual_residual
        row = {
            "epoch": epoch,
            "objective": obj,
            "suboptimality": (obj - f_star) / abs(f_star),
            **_evaluate(solver, test_blocks, dataset.y_test),
            "primal_residual": primal,
            "dual_residual": dual,
            "wall_time_s": elapsed,
            "x_time_s": 0.0 if stats is None else stats.x_seconds,
            "z_time_s": 0.0 if stats is None else stats.z_seconds,
            "y_time_s": 0.0 if stats is None else stats.y_seconds,
            **_privacy_columns(plan, solver, stats, epoch),
        }
        rows.append(row)
        if on_epoch is not None:
            on_epoch(row)

    record(0, None, 0.0)  # the common starting point x = y = z = 0
    elapsed = 0.0
    # Overflow in a diverging run is reported once, below, not as warnings.
    stopped = None
    data_dependent = plan is not None and config.privacy.sensitivity == "data_dependent"
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(config.solver.epochs):
            if data_dependent:
                solver.sigma = plan.sigmas * _data_dependent_sensitivities(solver, config)
            if stop_at_budget and budget is not None and budget["spent"][solver.epoch] > budget["limit"]:
                # the next epoch would publish beyond the budget: stop before it
                stopped = {"after_epoch": solver.epoch, "budget_epsilon": budget["limit"],
                           "epsilon_spent": float(budget["spent"][solver.epoch - 1]) if solver.epoch else 0.0,
                           "epsilon_next_epoch": float(budget["spent"][solver.epoch]),
                           "accountant": budget["accountant"]}
                break
            t0 = perf_counter()
            stats = solver.step()
            elapsed += perf_counter() - t0  # solver time only; evaluation is not charged
            if not np.isfinite(stats.objective):
                raise DivergedError(_divergence_message(config, solver_info, solver.epoch,
                                                        stats.objective))
            record(solver.epoch, stats, elapsed)

    finished = datetime.now(timezone.utc)
    extra_cols = [c for c in rows[0] if c not in METRIC_COLUMNS]
    metrics = pd.DataFrame(rows, columns=METRIC_COLUMNS + extra_cols)
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
            "fallback": fallback_note,
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
        "solver": solver_info,
        **({"privacy": {**plan.describe(config), "spent": plan.spent(int(final["epoch"])),
                        "budget": budget and {
            "epsilon": budget["limit"], "accountant": budget["accountant"], "stopped": stopped,
            "first_epoch_over_budget": _first_over(budget)}}}
           if plan is not None else {}),
        "result": {
            "final_objective": final["objective"],
            "central_objective": f_star,
            "relative_gap": final["suboptimality"],
            "final_test_logloss": final["test_logloss"],
            "final_test_accuracy": final["test_accuracy"],
            "solver_seconds": elapsed,
            "epochs_run": int(final["epoch"]),
            "seconds_per_epoch": elapsed / max(1, int(final["epoch"])),
            **({"messages_per_party": solver.messages.tolist()} if hasattr(solver, "messages") else {}),
        },
    }
    return RunResult(config=config, manifest=manifest, metrics=metrics,
                     baselines=baselines, coef=list(solver.x))
