"""Privacy sweeps: one run directory per (level, seed), resumable, aggregated.

The swept level is the noise ``sigma`` (``privacy.sigma``) or a target
``epsilon`` (``privacy.epsilon``, accounting mode). Layout::

    OUT/
      sigma=0.3,seed=0/      an ordinary run directory (see records)
      ...
      sweep.csv              per (level, epoch): mean and std across seeds
      sweep_final.csv        per level: the last epoch's mean and std
      baselines.json         the sklearn / central references (shared)

A run whose directory is complete and whose ``config.json`` is the one
planned is skipped; temporary directories left by an interrupted run are
removed and that run is redone. Runs execute in parallel processes with
joblib, or on an existing Dask cluster (``scheduler``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import pandas as pd

from .config import Config, RunConfig
from vfl.core.errors import ConfigError
from .records import dump_json, run_is_current, write_run
from .runner import compute_baselines, load_config_dataset, make_objective, run_experiment
from .partition import make_partition

__all__ = ["SweepRun", "aggregate_sweep", "plan_sweep", "run_sweep", "AGGREGATED", "PARAMS"]

PARAMS = ("sigma", "epsilon")

# Metrics averaged across seeds in sweep.csv.
AGGREGATED = ("objective", "suboptimality", "train_logloss", "test_logloss", "test_accuracy")


@dataclass(frozen=True)
class SweepRun:
    param: str  # "sigma" or "epsilon"
    level: float
    seed: int
    config: Config
    path: Path

    @property
    def label(self) -> str:
        return f"{self.param}={self.level:g},seed={self.seed}"


def plan_sweep(config: Config, levels, seeds, out_dir, param: str = "sigma") -> list[SweepRun]:
    """One run per (level, seed): ``config`` with ``privacy.<param>`` and ``run.seed`` set."""
    if param not in PARAMS:
        raise ValueError(f"param must be one of {PARAMS}, got {param!r}")
    if param == "epsilon" and not config.privacy.accounting:
        raise ConfigError("an epsilon sweep needs accounting mode: set privacy.delta in the config")
    out = Path(out_dir)
    runs = []
    for level in levels:
        for seed in seeds:
            privacy = replace(config.privacy, **{param: float(level)})
            c = replace(config, privacy=privacy, run=RunConfig(seed=int(seed)))
            runs.append(SweepRun(param, float(level), int(seed), c,
                                 out / f"{param}={level:g},seed={seed}"))
    return runs


def _execute(run: SweepRun, data_dir) -> str:
    """Run one (sigma, seed) and write its directory; used in worker processes."""
    result = run_experiment(run.config, data_dir=data_dir)
    write_run(result, run.path, overwrite=True)
    return str(run.path)


def run_sweep(
    config: Config,
    levels,
    seeds,
    out_dir,
    *,
    param: str = "sigma",
    data_dir=None,
    jobs: int = 1,
    scheduler: str | None = None,
    on_done: Callable[[SweepRun, bool], None] | None = None,
) -> tuple[list[SweepRun], list[SweepRun]]:
    """Run every missing (level, seed); returns (all runs, runs executed now).

    ``on_done(run, skipped)`` is called as runs finish (in completion order
    for Dask, in submission order for joblib).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # Leftovers of runs killed mid-write (write_run's temporary directories).
    for leftover in out.glob(".*.partial"):
        shutil.rmtree(leftover, ignore_errors=True)
    runs = plan_sweep(config, levels, seeds, out, param)
    todo = []
    for run in runs:
        if run_is_current(run.path, run.config):
            if on_done:
                on_done(run, True)
        else:
            todo.append(run)

    # Baselines and data errors surface once, here, before any worker starts;
    # the workers then read the baselines from the cache.
    dataset, _ = load_config_dataset(config, data_dir)
    partition = make_partition(config.partition, dataset.n_features)
    baselines = compute_baselines(dataset, partition, make_objective(config))
    dump_json(baselines, out / "baselines.json")
    del dataset

    if scheduler:
        _run_dask(todo, data_dir, scheduler, on_done)
    elif todo:
        _run_joblib(todo, data_dir, jobs, on_done)
    return runs, todo


def _run_joblib(todo, data_dir, jobs, on_done):
    from joblib import Parallel, delayed

    if jobs == 1:
        for run in todo:
            _execute(run, data_dir)
            if on_done:
                on_done(run, False)
        return
    parallel = Parallel(n_jobs=jobs, return_as="generator")
    for run, _ in zip(todo, parallel(delayed(_execute)(run, data_dir) for run in todo)):
        if on_done:
            on_done(run, False)


def _run_dask(todo, data_dir, scheduler, on_done):
    try:
        from dask.distributed import Client, as_completed
    except ImportError:
        raise ConfigError("--scheduler needs dask.distributed: pip install 'vfl[dask]'") from None
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    with client:
        futures = {client.submit(_execute, run, data_dir, pure=False): run for run in todo}
        for future in as_completed(futures):
            future.result()  # re-raises a worker's exception here
            if on_done:
                on_done(futures[future], False)


def aggregate_sweep(runs: list[SweepRun], out_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``sweep.csv`` and ``sweep_final.csv`` (atomically) from the run files.

    The level column is named after the swept parameter (``sigma`` or
    ``epsilon``); ``sweep_final.csv`` keeps each level's last epoch.
    """
    param = runs[0].param
    frames = []
    for run in runs:
        m = pd.read_csv(run.path / "metrics.csv")
        m.insert(0, "seed", run.seed)
        m.insert(0, param, run.level)
        frames.append(m)
    allm = pd.concat(frames, ignore_index=True)
    # epochs run differ when a budget stopped some runs: aggregate what exists
    grouped = allm.groupby([param, "epoch"], sort=True)
    agg = grouped[list(AGGREGATED)].agg(["mean", "std"])
    agg.columns = [f"{metric}_{stat}" for metric, stat in agg.columns]
    agg.insert(0, "n_seeds", grouped.size())
    agg = agg.reset_index()
    # The final point of each level is its last epoch (runs may stop early).
    final = agg.loc[agg.groupby(param)["epoch"].idxmax()].reset_index(drop=True)
    out = Path(out_dir)
    for frame, name in ((agg, "sweep.csv"), (final, "sweep_final.csv")):
        tmp = out / f".{name}.partial"
        frame.to_csv(tmp, index=False, float_format="%.10g")
        tmp.replace(out / name)
    return agg, final
