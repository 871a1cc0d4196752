"""Sweeps: one run directory per grid point and seed, resumable, aggregated.

A sweep is the cartesian product of values of any config keys
(``--grid privacy.epsilon=0.01,0.02 --grid privacy.delta=1e-3,1e-4``) times a
list of seeds; ``vfl sweep-noise`` is the shorthand for one key,
``privacy.sigma`` (or ``privacy.epsilon``). Layout::

    OUT/
      epsilon=0.01,delta=0.001,seed=0/   an ordinary run directory (see records)
      ...
      sweep.csv          per (grid point, iteration): mean and std across seeds
      sweep_final.csv    per grid point: the last iteration's mean and std
      baselines.json     the references of the first grid point (plots use it)

Every grid point's config is validated before anything is created or run.
A run whose directory is complete and whose ``config.json`` is the one
planned is skipped; temporary directories left by an interrupted run are
removed and that run is redone. Runs execute in parallel processes with
joblib, or on an existing Dask cluster (``scheduler``).
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from joblib import Parallel, delayed

from vfl.core.errors import ConfigError

from .config import Config, parse_override
from .manifest import Released
from .records import _pid_alive, check_output_dir, clean_stale_partials, dump_json, run_is_current, write_run
from .run_plan import compute_baselines, plan_run
from .runner import run_experiment
from .transport.dask_cluster import dask_client

__all__ = [
    "SweepRun",
    "aggregate_sweep",
    "check_scheduler",
    "check_sweep_dir",
    "parse_grid",
    "plan_grid",
    "plan_sweep",
    "run_grid",
    "run_sweep",
    "AGGREGATED",
    "PARAMS",
]

PARAMS = ("sigma", "epsilon")

# Metrics averaged across seeds in sweep.csv, when the runs report them.
AGGREGATED = (
    "objective",
    "suboptimality",
    "train_logloss",
    "test_logloss",
    "test_accuracy",
    "epsilon_tight",
    "epsilon_paper",
    "log10_error",
    "privacy_loss",
)


@dataclass(frozen=True)
class SweepRun:
    values: tuple  # ((short name, value), ...) of the grid point
    seed: int
    config: Config
    path: Path

    @property
    def label(self) -> str:
        return _label(self.values, self.seed)

    @property
    def param(self) -> str:
        """The first swept key's short name (``sigma`` for a noise sweep)."""
        return self.values[0][0]

    @property
    def level(self):
        return self.values[0][1]


def _label(values, seed: int) -> str:
    return ",".join([*(f"{k}={_fmt(v)}" for k, v in values), f"seed={seed}"])


def _fmt(value) -> str:
    return format(value, "g") if isinstance(value, float) else str(value)


def _short_names(keys: list[str]) -> list[str]:
    """The last component of each dotted key, or the whole key where that is ambiguous."""
    last = [k.rsplit(".", 1)[-1] for k in keys]
    return [s if last.count(s) == 1 else k for s, k in zip(last, keys)]


#: more runs than this in one sweep is a typo (each is validated, then run, before any result)
MAX_SWEEP_RUNS = 10_000


def plan_grid(config: Config, grid: dict[str, list], seeds, out_dir, fixed: list[str] = ()) -> list[SweepRun]:
    """One validated config per (grid point, seed); raises before anything runs.

    ``fixed`` are the user's own ``key=value`` overrides (``--set``, ``--epochs``):
    a key swept as well would be silently replaced by the grid's values."""
    if not grid:
        raise ConfigError("a sweep needs at least one --grid key=v1,v2,...")
    keys = list(grid)
    for key in keys:
        if not re.fullmatch(r"[a-z_]+(\.[a-z_0-9]+)+", key):
            raise ConfigError(f"--grid key {key!r} is not a dotted config key such as privacy.epsilon")
        if key == "run.seed":
            raise ConfigError("sweep seeds with --seeds, not --grid run.seed")
        if not grid[key]:
            raise ConfigError(f"--grid {key} has no values")
    for text in fixed:
        key = ".".join(parse_override(text)[0])
        if key in keys:
            raise ConfigError(
                f"--grid {key} also has a fixed value ({text!r}, by --set or an option "
                "such as --epochs) that the grid would replace; give one of them"
            )
    n_runs = len(seeds) * math.prod(len(v) for v in grid.values())
    if n_runs > MAX_SWEEP_RUNS:
        raise ConfigError(f"the sweep has {n_runs} runs (grid points x seeds); at most {MAX_SWEEP_RUNS} in one sweep")
    names = _short_names(keys)
    out = Path(out_dir)
    runs = []
    for point in itertools.product(*(grid[k] for k in keys)):
        for seed in seeds:
            overrides = [f"{k}={_toml(v)}" for k, v in zip(keys, point)] + [f"run.seed={int(seed)}"]
            try:
                c = config.with_overrides(overrides)
            except ConfigError as exc:
                raise ConfigError(f"grid point {dict(zip(names, point))}: {exc}") from None
            values = tuple(zip(names, point))
            runs.append(SweepRun(values, int(seed), c, out / _label(values, int(seed))))
    return runs


def check_sweep_dir(out) -> Path:
    """``--out`` of a sweep: an existing sweep directory is resumed; any other non-empty
    directory is not ours to write into (a sweep writes baselines.json before its runs)."""
    out = check_output_dir(out, exists_ok=True, what="sweep directory")
    if out.is_dir() and any(out.iterdir()) and not (out / "baselines.json").is_file():
        raise ConfigError(
            f"sweep directory {out} is not empty and holds no sweep (no baselines.json); choose another --out"
        )
    return out


def parse_grid(items) -> dict[str, list]:
    """``--grid KEY=V1,V2,...`` options -> ``{key: [values]}``; each value is read as TOML
    (numbers, booleans) or taken as a bare word. A key given twice, or a value
    listed twice, is refused: the last would silently win, or a point would run twice."""

    table: dict[str, list] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--grid expects KEY=V1,V2,..., got {item!r}")
        key = key.strip()
        if key in table:
            raise ConfigError(f"--grid {key} is given twice; list all its values in one --grid")
        values = []
        for value in (v.strip() for v in text.split(",")):
            if not value:
                continue
            try:
                values.append(tomllib.loads(f"v = {value}")["v"])
            except tomllib.TOMLDecodeError:
                values.append(value)
        if not values:
            raise ConfigError(f"--grid {key} has no values")
        seen = [json.dumps(v, sort_keys=True) for v in values]
        twice = sorted({v for v in seen if seen.count(v) > 1})
        if twice:
            raise ConfigError(f"--grid {key} lists {twice[0]} twice (each point would run twice)")
        table[key] = values
    return table


def _toml(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def plan_sweep(config: Config, levels, seeds, out_dir, param: str = "sigma", fixed: list[str] = ()) -> list[SweepRun]:
    """The noise sweep: ``privacy.<param>`` over ``levels``, times ``seeds``."""
    if param not in PARAMS:
        raise ValueError(f"param must be one of {PARAMS}, got {param!r}")
    if param == "epsilon" and not config.privacy.claims_guarantee:
        raise ConfigError("an epsilon sweep needs accounting mode: set privacy.delta in the config")
    return plan_grid(config, {f"privacy.{param}": [float(v) for v in levels]}, seeds, out_dir, fixed)


def check_scheduler(address: str) -> None:
    """Refuse a Dask scheduler address that cannot be one, before any work."""
    if not re.fullmatch(r"(tcp|tls|inproc|ucx)://[^\s:/]+(:\d{1,5})?", address or ""):
        raise ConfigError(f"--scheduler {address!r} is not a Dask scheduler address such as tcp://HOST:8786")


class ParentGone(SystemExit):
    """The sweep's main process died: a worker stops instead of writing on."""


def _execute(run: SweepRun, data_dir, parent: int | None = None) -> str:
    """Run one grid point and write its directory; used in worker processes.

    With ``parent`` (the sweep's pid), the worker checks every iteration that
    it is still alive: a ``kill -9`` of the sweep must not leave orphaned
    workers writing runs for minutes.
    """

    def check(_row):
        if parent is not None and not _pid_alive(parent):
            raise ParentGone(f"sweep process {parent} is gone")

    result = run_experiment(run.config, data_dir=data_dir, on_epoch=check)
    check(None)
    write_run(result, run.path, overwrite=True)
    return str(run.path)


def run_grid(
    config: Config,
    grid: dict[str, list],
    seeds,
    out_dir,
    *,
    data_dir=None,
    jobs: int = 1,
    scheduler: str | None = None,
    on_done: Callable[[SweepRun, bool], None] | None = None,
    runs: list[SweepRun] | None = None,
) -> tuple[list[SweepRun], list[SweepRun]]:
    """Run every missing (grid point, seed); returns (all runs, runs executed now).

    ``on_done(run, skipped)`` is called as runs finish (in completion order
    for Dask, in submission order for joblib).
    """

    runs = runs if runs is not None else plan_grid(config, grid, seeds, out_dir)
    if scheduler:
        check_scheduler(scheduler)
        if jobs != 1:
            raise ConfigError(f"--jobs {jobs} has no effect with --scheduler: the cluster's workers run the sweep")
    # Data, distribution and solver errors surface once, here, before any
    # directory is created or any worker starts.
    plan = plan_run(runs[0].config, data_dir)
    client = dask_client(scheduler) if scheduler else None  # unreachable: fail before mkdir
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    # Leftovers of runs killed mid-write (write_run's temporary directories).
    clean_stale_partials(out)
    todo = []
    for run in runs:
        if run_is_current(run.path, run.config):
            if on_done:
                on_done(run, True)
        else:
            todo.append(run)
    # The references of the first grid point, for the figures; workers read
    # theirs from the cache.
    dump_json(compute_baselines(plan), out / "baselines.json")
    del plan

    if client is not None:
        _run_dask(todo, data_dir, client, on_done)
    elif todo:
        _run_joblib(todo, data_dir, jobs, on_done)
    return runs, todo


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
):
    """The noise sweep (``vfl sweep-noise``) on the generic machinery."""
    runs = plan_sweep(config, levels, seeds, out_dir, param)
    return run_grid(
        config, {}, seeds, out_dir, data_dir=data_dir, jobs=jobs, scheduler=scheduler, on_done=on_done, runs=runs
    )


def _run_joblib(todo, data_dir, jobs, on_done):

    if jobs == 1:
        for run in todo:
            _execute(run, data_dir)
            if on_done:
                on_done(run, False)
        return
    parallel = Parallel(n_jobs=jobs, return_as="generator")
    parent = os.getpid()
    for run, _ in zip(todo, parallel(delayed(_execute)(run, data_dir, parent) for run in todo)):
        if on_done:
            on_done(run, False)


def _run_dask(todo, data_dir, client, on_done):
    from dask.distributed import as_completed  # lazy: optional dependency (dask.distributed)

    with client:
        futures = {client.submit(_execute, run, data_dir, pure=False): run for run in todo}
        for future in as_completed(futures):
            future.result()  # re-raises a worker's exception here
            if on_done:
                on_done(futures[future], False)


def _column_kinds(path) -> dict:
    """``released`` / ``diagnostic`` per column of a private run (empty for other runs)."""

    try:
        released = Released.model_validate(json.loads((Path(path) / "manifest.json").read_text())["released"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return dict(released.columns) if released.private else {}


def aggregate_sweep(runs: list[SweepRun], out_dir) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write ``sweep.csv`` and ``sweep_final.csv`` (atomically) from the run files.

    One column per swept key (its short name, e.g. ``sigma``); for each
    aggregated metric a ``_mean`` and ``_std`` across seeds (``n_seeds``
    runs); ``sweep_final.csv`` keeps each grid point's last iteration. For
    runs that claim a guarantee, a ``diagnostic`` column names the metrics
    computed from exact private values (not covered by epsilon).
    """
    names = [k for k, _ in runs[0].values]
    frames = []
    for run in runs:
        m = pd.read_csv(run.path / "metrics.csv")
        m.insert(0, "seed", run.seed)
        for k, v in reversed(run.values):
            m.insert(0, k, v)
        frames.append(m)
    allm = pd.concat(frames, ignore_index=True)
    metrics = [c for c in AGGREGATED if c in allm.columns]
    # iterations run differ when a budget stopped some runs: aggregate what exists
    grouped = allm.groupby([*names, "epoch"], sort=True)
    agg = grouped[metrics].agg(["mean", "std"])
    agg.columns = [f"{metric}_{stat}" for metric, stat in agg.columns]
    agg.insert(0, "n_seeds", grouped.size())
    agg = agg.reset_index()
    # a private run's diagnostic metrics (exact private values, not covered) are named
    kinds = _column_kinds(runs[0].path)
    if kinds:
        agg["diagnostic"] = ";".join(m for m in metrics if kinds.get(m) == "diagnostic")
    # The final point of each grid point is its last iteration (runs may stop early).
    final = agg.loc[agg.groupby(names)["epoch"].idxmax()].reset_index(drop=True)
    out = Path(out_dir)
    for frame, name in ((agg, "sweep.csv"), (final, "sweep_final.csv")):
        tmp = out / f".{name}.partial"
        frame.to_csv(tmp, index=False, float_format="%.10g")
        tmp.replace(out / name)
    return agg, final
