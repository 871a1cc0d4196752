"""Benchmarks of the decentralized LDP solvers (Xiao et al.) and of ``vfl reproduce ldp all``.

:func:`ldp_benchmark` returns one JSON-ready dict (nothing is written):

- ``iteration``: for every method, one 100-iteration run with 100 agents on a
  connected G(100, 200) graph, 100 samples of d = 14 each (Adult-shaped:
  nonnegative unit rows, {0, 1} labels, the paper's constants): the median over
  repeats of the time spent in ``step()`` only (no evaluation; wall and CPU
  seconds, the machine may be shared), BLAS held to
  one thread as in the reproduction (tiny matrices; threads only contend).
  The issue's target: well under a second for the first-order methods;
- ``reproduce_all``: wall and CPU seconds of ``vfl reproduce ldp all`` from an
  empty output directory and cache, ``--jobs 2`` (a subprocess; CPU includes
  its worker processes), with the load average before and after (on a shared
  machine the wall time says little without it). Target: under 5 minutes on
  2 cores. Skipped in quick mode and when the Adult files are absent.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median
from time import perf_counter, process_time

import numpy as np
from threadpoolctl import threadpool_limits

from vfl.core.layouts import NetworkData
from vfl.core.streams import Streams
from vfl.datasets import dataset_status
from vfl.decentralized import make_graph, paper_objective
from vfl.experiments.registry import get_solver

__all__ = ["FIRST_ORDER", "EXACT_STEP", "ldp_benchmark", "iteration_timing", "reproduce_timing"]

#: one local gradient per iteration (Algorithms 1, 2, 2*, [48], [45], DGD)
FIRST_ORDER = ("ldp_admm", "op_admm", "ldp_gd", "ldp_gd_minmax", "noisy_consensus_gd", "dgd")
#: a batched Newton solve per iteration (exact ADMM step: Fig. D, [42], [43])
EXACT_STEP = ("random_penalty_admm", "fixed_admm", "dvp_admm", "pp_admm")
REPO = Path(__file__).resolve().parents[1]


def _problem(agents: int, edges: int, per_agent: int, d: int, seed: int):

    rng = np.random.default_rng(seed)
    adj = make_graph("gnm", nodes=agents, edges=edges, rng=rng)
    A = rng.random((agents, per_agent, d))
    A /= np.linalg.norm(A, axis=2, keepdims=True)
    b = (rng.random((agents, per_agent)) < 0.75).astype(float)  # Adult: 75% "<50K" -> 1
    return NetworkData(adj, A, b, rng.standard_normal((agents, d))), paper_objective(agents, per_agent)


def iteration_timing(
    methods=FIRST_ORDER + EXACT_STEP,
    *,
    agents: int = 100,
    edges: int = 200,
    per_agent: int = 100,
    d: int = 14,
    iterations: int = 100,
    repeats: int = 3,
    seed: int = 0,
) -> dict:
    """Median seconds of ``iterations`` calls to ``step()`` per method (a fresh solver each)."""

    data, objective = _problem(agents, edges, per_agent, d, seed)
    out = {}
    with threadpool_limits(limits=1):
        for name in methods:
            times, cpu = [], []
            for r in range(repeats):
                solver = get_solver(name)(
                    data,
                    objective=objective,
                    params={},
                    privacy={},
                    streams=Streams(seed, repeat=r),
                    iterations=iterations,
                )
                t0, c0 = perf_counter(), process_time()
                for _ in range(iterations):
                    solver.step()
                times.append(perf_counter() - t0)
                cpu.append(process_time() - c0)
            out[name] = {
                "seconds": median(times),
                "cpu_seconds": median(cpu),
                "per_iteration_ms": 1e3 * median(times) / iterations,
                "first_order": name in FIRST_ORDER,
            }
    return {
        "agents": agents,
        "edges": edges,
        "samples_per_agent": per_agent,
        "d": d,
        "iterations": iterations,
        "repeats": repeats,
        "blas_threads": 1,
        "target": "first-order methods well under 1 s per 100-iteration run",
        "max_first_order_seconds": max((v["seconds"] for k, v in out.items() if k in FIRST_ORDER), default=None),
        "methods": out,
    }


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def reproduce_timing(data_dir=None, *, jobs: int = 2, configs=None, timeout: float = 3600) -> dict:
    """Wall and CPU seconds of ``vfl reproduce ldp all`` from an empty output dir and cache."""

    if not all(f["present"] for f in dataset_status("adult", data_dir)):
        return {"skipped": "the Adult files are not in the data directory"}
    configs = Path(configs) if configs is not None else REPO / "papers" / "ldp" / "configs"
    with tempfile.TemporaryDirectory(prefix="vfl-ldp-bench-") as tmp:
        env = {**os.environ, "MPLBACKEND": "Agg", "VFL_CACHE_DIR": str(Path(tmp) / "cache")}
        if data_dir is not None:
            env["VFL_DATA_DIR"] = str(data_dir)
        cmd = [
            sys.executable,
            "-m",
            "vfl.cli.main",
            "reproduce",
            "ldp",
            "all",
            "--out",
            str(Path(tmp) / "out"),
            "--configs",
            str(configs),
            "--jobs",
            str(jobs),
        ]
        load_before = os.getloadavg()
        cpu0, t0 = _children_cpu(), perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        wall, cpu = perf_counter() - t0, _children_cpu() - cpu0
        if proc.returncode != 0:
            return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:], "returncode": proc.returncode}
        files = sorted(p.name for p in (Path(tmp) / "out" / "ldp").glob("*.png"))
    return {
        "wall_seconds": wall,
        "cpu_seconds": cpu,
        "jobs": jobs,
        "figures": files,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "target": "under 300 s wall on 2 cores from an empty cache",
    }


def ldp_benchmark(quick: bool = False, data_dir=None) -> dict:
    """Both measurements (quick: one repeat of the iteration timing, no reproduction)."""
    t0 = perf_counter()
    result = {
        "iteration": iteration_timing(repeats=1 if quick else 3),
        "reproduce_all": ({"skipped": "quick mode"} if quick else reproduce_timing(data_dir)),
    }
    result["total_seconds"] = perf_counter() - t0
    return result


if __name__ == "__main__":  # python -m benchmarks.ldp [--quick]
    import json

    print(json.dumps(ldp_benchmark(quick="--quick" in sys.argv[1:]), indent=2))
