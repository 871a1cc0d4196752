"""Benchmarks of Huang et al.'s DP-ADMM (2019) and of ``vfl reproduce dp-admm all``.

:func:`dp_admm_benchmark` returns one JSON-ready dict (nothing is written but
a temporary directory, removed afterwards):

- ``iteration``: one T = 100 run with N = 100 providers x m = 210 rows,
  d = 14 (the Adult split of ``papers/dp_admm/configs/dp-admm-l2.toml`` when the files are
  present, else an Adult-shaped synthetic problem with unit rows) for
  DP-ADMM (l1 and l2) and, for scale, Algorithms 1 and 2: the median over
  repeats of the seconds spent in ``step()`` only (wall and CPU; BLAS held to
  one thread as in Table III). Target (issue 10): DP-ADMM well under a second;
- ``reproduce_all``: wall and CPU seconds of ``vfl reproduce dp-admm all``
  from an empty output directory and cache with ``jobs = 2``, in this process
  (CPU is this process plus its joblib workers, which are shut down and
  reaped at the end so that their CPU time is counted), with the load average
  before and after: the machine may be shared, and then the wall time says
  little without it. Target: under 5 minutes on 2 cores. Skipped in quick
  mode and when the Adult files are absent.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
from pathlib import Path
from statistics import median
from time import perf_counter, process_time

import numpy as np
from joblib.externals.loky import get_reusable_executor
from threadpoolctl import threadpool_limits

from vfl.admm.consensus import split_providers
from vfl.core.streams import Streams
from vfl.datasets import dataset_status
from vfl.experiments.config import load_config
from vfl.experiments.distribution import make_objective
from vfl.experiments.registry import get_solver
from vfl.experiments.run_data import load_config_dataset
from vfl.experiments.settings import prepare
from vfl.papers.dp_admm.figures import reproduce

__all__ = ["dp_admm_benchmark", "iteration_timing", "reproduce_timing"]

REPO = Path(__file__).resolve().parents[1]
#: (label, config, overrides) of the timed runs
CASES = (
    ("dp_admm l2 (eps 0.05, delta 1e-3)", "dp-admm-l2", ()),
    ("dp_admm l1 (eps 0.05, delta 1e-3)", "dp-admm-l1", ()),
    ("consensus_admm l2 (Algorithm 1)", "dp-admm-alg1", ()),
    ("consensus_admm_perturbed l2 (Algorithm 2, eps 0.05)", "dp-admm-alg2", ()),
)


def _synthetic(seed: int):
    """An Adult-shaped problem: 162 public + 100 x 210 unit rows of d = 14, +-1 labels."""

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((162 + 21000 + 9000, 14))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    w = rng.standard_normal(14) * 3
    y = np.where(rng.random(len(X)) < 1 / (1 + np.exp(-X @ w)), 1.0, -1.0)
    data, _ = split_providers(X, y, providers=100, samples_per_provider=210, public=162, test=9000, rng=rng)
    return data


def iteration_timing(data_dir=None, *, repeats: int = 5, configs=None) -> dict:
    """Median seconds of the 100 ``step()`` calls of each case (a fresh solver each repeat)."""

    configs = Path(configs) if configs is not None else REPO / "papers" / "dp_admm" / "configs"
    real = all(f["present"] for f in dataset_status("adult", data_dir))
    dataset = synthetic = None
    out = {}
    with threadpool_limits(limits=1):
        for label, name, overrides in CASES:
            config = load_config(configs / f"{name}.toml", ["run.repeats=1", *overrides])
            cls = get_solver(config.solver.name)
            if real:
                if dataset is None:
                    dataset, _ = load_config_dataset(config, data_dir)
                setting = prepare(config, dataset, cls)
                data = setting.prepare(Streams(config.run.seed)).data
            else:
                synthetic = synthetic if synthetic is not None else _synthetic(config.run.seed)
                data = synthetic
            times, cpu = [], []
            for r in range(repeats):
                solver = cls.build(
                    data,
                    objective=make_objective(config),
                    params=dict(config.solver.values),
                    privacy=dict(config.privacy.values),
                    streams=Streams(config.run.seed, repeat=r),
                    iterations=config.solver.epochs,
                )
                t0, c0 = perf_counter(), process_time()
                for _ in range(config.solver.epochs):
                    solver.step()
                times.append(perf_counter() - t0)
                cpu.append(process_time() - c0)
            out[label] = {
                "seconds": median(times),
                "cpu_seconds": median(cpu),
                "per_iteration_ms": 1e3 * median(times) / config.solver.epochs,
            }
    return {
        "data": "adult (papers/dp_admm/configs/dp-admm-*.toml split, repeat 0)"
        if real
        else "synthetic Adult-shaped (unit rows, d = 14)",
        "providers": 100,
        "samples_per_provider": 210,
        "d": 14,
        "iterations": 100,
        "repeats": repeats,
        "blas_threads": 1,
        "target": "one DP-ADMM run (T = 100, 100 providers) well under 1 s",
        "cases": out,
    }


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def reproduce_timing(data_dir=None, *, jobs: int = 2, configs=None) -> dict:
    """Wall and CPU seconds of ``vfl reproduce dp-admm all`` from an empty output dir and cache."""

    if not all(f["present"] for f in dataset_status("adult", data_dir)):
        return {"skipped": "the Adult files are not in the data directory"}
    configs = Path(configs) if configs is not None else REPO / "papers" / "dp_admm" / "configs"
    old_cache = os.environ.get("VFL_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="vfl-dp-admm-bench-") as tmp:
        os.environ["VFL_CACHE_DIR"] = str(Path(tmp) / "cache")
        try:
            # Workers spawned before would keep the old environment: start afresh.
            get_reusable_executor().shutdown(wait=True)
            load_before = os.getloadavg()
            cpu0, t0 = _cpu(), perf_counter()
            written = reproduce("all", Path(tmp) / "out", configs, data_dir=data_dir, jobs=jobs, echo=lambda msg: None)
            wall = perf_counter() - t0
            get_reusable_executor().shutdown(wait=True)  # reap the workers: count their CPU
            cpu = _cpu() - cpu0
        finally:
            if old_cache is None:
                os.environ.pop("VFL_CACHE_DIR", None)
            else:
                os.environ["VFL_CACHE_DIR"] = old_cache
        files = sorted(p.name for p in written if p.suffix in (".png", ".md"))
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "jobs": jobs,
        "outputs": files,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "target": "under 300 s wall on 2 cores from an empty cache",
    }


def dp_admm_benchmark(quick: bool = False, data_dir=None) -> dict:
    """Both measurements (quick: one repeat of the iteration timing, no reproduction)."""
    t0 = perf_counter()
    result = {
        "iteration": iteration_timing(data_dir, repeats=1 if quick else 5),
        "reproduce_all": ({"skipped": "quick mode"} if quick else reproduce_timing(data_dir)),
    }
    result["total_seconds"] = perf_counter() - t0
    return result


if __name__ == "__main__":  # python -m benchmarks.dp_admm [--quick]
    import json

    print(json.dumps(dp_admm_benchmark(quick="--quick" in sys.argv[1:]), indent=2))
