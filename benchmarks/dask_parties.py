"""Time per epoch of ADMM sharing with its parties on Dask workers, against in-process.

``python -m benchmarks --only dask_parties``. For each dataset and number of
parties, the same config runs twice in this process: in-process, then with
``run.backend = "dask"`` on a local cluster of one single-threaded worker
per party (started before the clock, as ``vfl run`` starts it). Both use
``solver.blas_threads = 1``, so their numbers are the same to the bit
(checked here too); the ratio is Dask's seconds per epoch over in-process's,
both measured in this run. The datasets:

- a9a (N = 32,561, 123 columns + intercept);
- a9a x 100: 3.2M rows drawn with replacement from a9a's training rows (a
  libsvm file written once in the cache; the workers parse it themselves),
  tested on a9a's test file.

The transport's own bytes per epoch (TCP's counters) are reported beside the
protocol's count (2 M N float64 per epoch), and, on a9a x 100 with 2 parties,
the epoch on a cluster that keeps the ``MALLOC_TRIM_THRESHOLD_`` Dask's nanny
sets by default. ``quick`` runs a9a only, fewer epochs.
"""

from __future__ import annotations

import bz2
import logging
import os
from pathlib import Path

import numpy as np
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from vfl.datasets import resolve_data_dir
from vfl.experiments.config import config_from_dict
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.dask_units import dask_backend

#: columns of a9a per party (123 in all; party 1 also gets the intercept)
PARTITIONS = {2: [66, 57], 8: [16, 16, 16, 15, 15, 15, 15, 15]}
BIG_ROWS = 3_200_000


def _config(dataset: dict, columns: list[int], epochs: int, extra=()):

    raw = {
        "name": "bench-dask",
        "data": dataset,
        "partition": {"columns": columns},
        "objective": {"loss": "logistic", "reduction": "sum", "lam": 0.001},
        "solver": {"name": "admm_sharing", "rho": 1.0, "epochs": epochs, "blas_threads": 1, "z_update": "newton"},
        "run": {"seed": 0, "eval_every": epochs},
    }
    for key, value in extra:
        raw["run"][key] = value
    return config_from_dict(raw)


def big_a9a(data_dir, rows: int = BIG_ROWS) -> dict:
    """``data`` of the a9a-shaped set: ``rows`` rows of a9a (with replacement), written once."""

    cache = Path(os.environ.get("VFL_CACHE_DIR") or Path.home() / ".cache" / "vfl") / "bench"
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"a9a-x{rows}.svm"
    src = Path(resolve_data_dir(data_dir))
    test = next(p for p in (src / "a9a.t", src / "a9a.t.bz2") if p.exists())
    if not path.exists():
        train = next(p for p in (src / "a9a", src / "a9a.bz2") if p.exists())
        with bz2.open(train) if train.suffix == ".bz2" else open(train, "rb") as f:
            X, y = load_svmlight_file(f, n_features=123)
        rng = np.random.default_rng(0)
        pick = rng.integers(0, X.shape[0], size=rows)
        tmp = path.with_suffix(".partial")
        dump_svmlight_file(X[pick], y[pick], str(tmp), zero_based=False)
        tmp.replace(path)
    return {"dataset": "libsvm", "options": {"path": str(path), "test_path": str(test), "n_features": 123}}


def _epoch_seconds(config, dask: bool, data_dir, cluster=None):
    """Seconds per epoch, the final model, and the transport record (Dask only)."""

    if not dask:
        result = run_experiment(config, data_dir=data_dir, with_baselines=False)
        return result.manifest.result.seconds_per_epoch, result.coef, None
    with dask_backend(config, cluster, data_dir) as backend:
        plan = plan_run(config, data_dir, backend)
        result = run_experiment(config, data_dir=data_dir, plan=plan, with_baselines=False)
    return (result.manifest.result.seconds_per_epoch, result.coef, result.manifest.communication.transport.dump())


def _case(name: str, dataset: dict, parties: int, epochs: int, data_dir) -> dict:
    columns = PARTITIONS[parties]
    local_s, local_coef, _ = _epoch_seconds(_config(dataset, columns, epochs), False, data_dir)
    dask_config = _config(dataset, columns, epochs, [("backend", "dask")])
    dask_s, dask_coef, transport = _epoch_seconds(dask_config, True, data_dir)
    return {
        "dataset": name,
        "parties": parties,
        "epochs": epochs,
        "inprocess_seconds_per_epoch": local_s,
        "dask_seconds_per_epoch": dask_s,
        "ratio": dask_s / local_s,
        "same_numbers": bool(np.array_equal(local_coef, dask_coef)),
        "transport_bytes_per_epoch": transport["bytes_per_epoch"],
        "protocol_bytes_per_epoch": transport["protocol_bytes_per_epoch"],
    }


def _nanny_default(dataset: dict, epochs: int, data_dir) -> dict:
    """2 parties on a local cluster that keeps the nanny's MALLOC_TRIM_THRESHOLD_ (Dask's
    default), against the cluster ``vfl run`` starts (which drops it)."""

    from dask.distributed import LocalCluster  # lazy: optional dependency (dask)

    config = _config(dataset, PARTITIONS[2], epochs, [("backend", "dask")])
    ours, _, _ = _epoch_seconds(config, True, data_dir)
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.CRITICAL
    ) as cluster:
        default, _, _ = _epoch_seconds(config, True, data_dir, cluster.scheduler_address)
    return {"dropped_seconds_per_epoch": ours, "nanny_default_seconds_per_epoch": default, "ratio": default / ours}


def dask_benchmark(quick: bool = False, data_dir=None) -> dict:
    a9a = {"dataset": "a9a"}
    plan = [("a9a", a9a, m, 20 if quick else 100) for m in (2, 8)]
    if not quick:
        big = big_a9a(data_dir)
        plan += [("a9a x100 (3.2M rows)", big, m, 5) for m in (2, 8)]
    rows, errors = [], []
    for name, data, m, epochs in plan:
        try:
            rows.append(_case(name, data, m, epochs, data_dir))
        except Exception as exc:  # one failed case must not lose the others
            errors.append(f"{name}, {m} parties: {type(exc).__name__}: {exc}")
    lines = [
        "| dataset | parties | in-process s/epoch | Dask s/epoch | Dask / in-process | "
        "same numbers | transport bytes/epoch | protocol bytes/epoch |",
        "|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['dataset']} | {r['parties']} | {r['inprocess_seconds_per_epoch']:.4f} "
            f"| {r['dask_seconds_per_epoch']:.4f} | {r['ratio']:.2f} | "
            f"{'yes' if r['same_numbers'] else 'NO'} | "
            f"{r['transport_bytes_per_epoch']:,.0f} | "
            f"{r['protocol_bytes_per_epoch']:,.0f} |"
        )
    trim = None
    if not quick:
        try:
            trim = _nanny_default(big, 5, data_dir)
            lines.append(
                f"\nMALLOC_TRIM_THRESHOLD_ of Dask's nanny kept (a9a x100, 2 parties): "
                f"{trim['nanny_default_seconds_per_epoch']:.3f} s per epoch, against "
                f"{trim['dropped_seconds_per_epoch']:.3f} s without it "
                f"({trim['ratio']:.2f}x)"
            )
        except Exception as exc:  # noqa: BLE001
            errors.append(f"nanny default: {type(exc).__name__}: {exc}")
    same = all(r["same_numbers"] for r in rows)
    targets = {
        "dask_same_numbers": {
            "description": "Dask backend: the in-process numbers to the bit (every case)",
            "ratio": float(same),
            "threshold": 1.0,
            "pass": same,
            "comparison": ">=",
            "why": "",
        }
    }
    lines += [f"\nfailed: {e}" for e in errors]
    return {"cases": rows, "nanny_trim": trim, "errors": errors, "targets": targets, "markdown": "\n".join(lines)}
