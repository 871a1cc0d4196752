"""``python -m benchmarks scale --rows N --parties M [--json]``: one `vfl run` at scale, measured.

The run is `configs/a9a-fast.toml` (Boyd's form, relaxation 1.8) on a9a's
training records repeated k = round(N / 32,561) times (``data.options.tile``;
the rows are k x 32,561) with lam times k: a9a's own problem, and optimum, at
k times its rows. ``--data synthetic`` uses ``synthetic:a9a-shaped`` instead
(a9a's 123 one-hot columns in its 14 groups, any N, no files needed; its
rare categories make it slower to 1e-4 than a9a). The 123 columns are split
into M contiguous ranges (two parties: a9a-fast's 66 + 57; rho by
``solver.rho_parties``), ``run.baselines = "central"`` (the
one exact solve that ``suboptimality`` needs) with a cold cache. Measured in
this one process, every target a ratio of two numbers from the same run:

- ``epochs_to_1e-4``: the first epoch at relative suboptimality <= 1e-4;
- ``admm_over_lbfgs``: ADMM's solver time to that epoch over scikit-learn's
  lbfgs time to 1e-4 on the same objective (the loosest ``tol`` that gets
  there), both on all columns joined for lbfgs and on the parties' blocks
  for ADMM;
- ``baseline_share_of_wall``: the baselines' seconds over the wall of the
  whole run (data generation, preprocessing, distribution, baselines,
  epochs, metrics);
- ``peak_rss_over_data``: the process's peak resident memory during the run
  over the bytes of the training rows in CSR (values, indices, row pointers);
- ``ns_per_row_epoch``: the median solver seconds of an epoch per row.

Run each size in its own process (peak RSS is the process's).
"""

from __future__ import annotations

import argparse
import json
import resource
import warnings
from pathlib import Path
from statistics import median
from time import perf_counter

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from vfl.baselines.sklearn_lr import sklearn_estimator
from vfl.experiments.config import config_from_dict, read_toml
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.process import keep_freed_memory

REPO = Path(__file__).resolve().parents[1]
TARGET = 1e-4
#: sklearn tolerances tried, loosest first, until the fit reaches TARGET
TOLS = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9)


A9A_ROWS = 32561


def config(
    rows: int,
    parties: int,
    *,
    epochs: int,
    n_test: int,
    rho: float | None = None,
    baselines: str = "central",
    data: str = "a9a",
):
    """`configs/a9a-fast.toml` on about ``rows`` a9a rows (or a9a-shaped synthetic ones) over
    ``parties`` column ranges."""

    raw = read_toml(REPO / "configs" / "a9a-fast.toml")
    raw["name"] = f"scale-{rows}-{parties}"
    if data == "a9a":
        tile = max(1, round(rows / A9A_ROWS))
        rows = tile * A9A_ROWS
        raw["data"] = {"dataset": "a9a", "options": {"tile": tile}}
    else:
        raw["data"] = {"dataset": "synthetic:a9a-shaped", "options": {"n_train": rows, "n_test": n_test, "seed": 0}}
    if parties != 2:  # two parties: a9a-fast's own split (66 + 57 columns)
        raw["partition"] = {"columns": [len(c) for c in np.array_split(np.arange(123), parties)]}
    # lam grows with the rows (a9a's 1e-3 at its 32,561): the regularization per row, and so
    # the problem's conditioning and the epochs it needs, stay those of a9a at every size
    raw["objective"]["lam"] = 1e-3 * rows / A9A_ROWS
    raw["solver"]["epochs"] = epochs
    if rho is not None:
        raw["solver"]["rho"] = rho
    raw.setdefault("run", {})["baselines"] = baselines
    return config_from_dict(raw)


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def lbfgs_to_target(D, y, objective, f_star: float) -> dict:
    """scikit-learn's lbfgs on the same objective: the loosest tol whose fit reaches TARGET."""
    tried = []
    for tol in TOLS:
        # the same objective (C from lam and the reduction, no separate intercept), by lbfgs
        est = sklearn_estimator(objective, D.shape[0], D.shape[1], tol=tol)
        est.set_params(solver="lbfgs", max_iter=100_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t = perf_counter()
            est.fit(D, y)
            seconds = perf_counter() - t
        sub = (objective.value(est.coef_.ravel(), D, y) - f_star) / abs(f_star)
        tried.append({"tol": tol, "seconds": seconds, "suboptimality": float(sub)})
        if sub <= TARGET:
            return {"reached": True, **tried[-1], "tried": tried}
    return {"reached": False, **tried[-1], "tried": tried}


def measure(
    rows: int,
    parties: int,
    *,
    epochs: int = 60,
    n_test: int | None = None,
    rho: float | None = None,
    with_lbfgs: bool = True,
    data: str = "a9a",
    data_dir=None,
) -> dict:
    """One run at about ``rows`` x ``parties``, measured (see the module docstring)."""

    n_test = n_test or min(100_000, max(1000, rows // 4))
    cfg = config(rows, parties, epochs=epochs, n_test=n_test, rho=rho, data=data)
    t0 = perf_counter()
    # one run: the records as read are let go once split (as `vfl run` does)
    plan = plan_run(cfg, data_dir, keep_records=False)
    result = run_experiment(cfg, plan=plan, use_cache=False)
    wall = perf_counter() - t0
    peak = _peak_rss_bytes()
    setting = plan.setting
    data_bytes = setting.dataset.train_bytes  # the training rows in CSR, as read
    rows = setting.dataset.n_train
    m = result.metrics
    reached = np.flatnonzero(m["suboptimality"].to_numpy() <= TARGET)
    epoch = int(m["epoch"].iloc[reached[0]]) if reached.size else None
    per_epoch = np.diff(m["wall_time_s"].to_numpy())
    out = {
        "rows": rows,
        "parties": parties,
        "data": data,
        "n_test": int(setting.dataset.n_test),
        "rho": float(plan.solver.rho),
        "epochs_run": int(m["epoch"].iloc[-1]),
        "epochs_to_1e-4": epoch,
        "admm_seconds_to_1e-4": None if epoch is None else float(m["wall_time_s"].iloc[reached[0]]),
        "ns_per_row_epoch": median(per_epoch) / rows * 1e9,
        "wall_seconds": wall,
        "baseline_seconds": result.manifest.diagnostic.timing.baselines_seconds,
        "peak_rss_bytes": peak,
        "data_csr_bytes": data_bytes,
    }
    out["baseline_share_of_wall"] = out["baseline_seconds"] / wall
    out["peak_rss_over_data"] = peak / data_bytes
    if with_lbfgs:
        f_star = result.baselines["central"]["objective"]
        D = setting.partition.join(None, plan.first.data.blocks)
        lbfgs = lbfgs_to_target(D, setting.dataset.y_train, setting.objective, f_star)
        out["lbfgs"] = lbfgs
        out["admm_over_lbfgs"] = (
            out["admm_seconds_to_1e-4"] / lbfgs["seconds"] if epoch is not None and lbfgs["reached"] else None
        )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks scale", description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, required=True, help="training rows (a9a-shaped)")
    p.add_argument("--parties", type=int, default=2, help="parties M (columns split in ranges)")
    p.add_argument("--epochs", type=int, default=60, help="epochs run (the cap)")
    p.add_argument("--rho", type=float, default=None, help="override solver.rho")
    p.add_argument(
        "--data",
        choices=("a9a", "synthetic"),
        default="a9a",
        help="a9a repeated (needs the a9a files) or a9a-shaped synthetic rows",
    )
    p.add_argument("--data-dir", default=None, help="where a9a is [default: $VFL_DATA_DIR]")
    p.add_argument("--no-lbfgs", action="store_true", help="skip the lbfgs comparison")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    if args.rows < 100 or not 1 <= args.parties <= 123:
        p.error("--rows must be >= 100 and --parties in 1..123")

    keep_freed_memory()  # as `vfl run` has it
    out = measure(
        args.rows,
        args.parties,
        epochs=args.epochs,
        rho=args.rho,
        with_lbfgs=not args.no_lbfgs,
        data=args.data,
        data_dir=args.data_dir,
    )
    if args.json:
        print(json.dumps(out))
    else:
        for key, value in out.items():
            if key != "lbfgs":
                print(f"{key:24} {value}")
    return 0
