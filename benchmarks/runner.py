"""``python -m benchmarks [--quick] [--out DIR]``: run every case, write the results.

All cases run in this one process on the same data; timings are medians over
repeats and every target is a ratio of two timings measured in this run.
``--only a,b`` runs a subset of the cases (and leaves the others out of the
results); the load average before and after each case is recorded, since the
machine may be shared while it measures.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys
import warnings
from pathlib import Path
from time import perf_counter

import numpy as np
import scipy
import sklearn

from . import bench_markdown, cases, problems, report, scale, variant_figures, variants


def machine_info() -> dict:

    info = {
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "processor": platform.processor(),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "sklearn": sklearn.__version__,
    }
    try:
        from threadpoolctl import threadpool_info  # lazy: optional dependency (threadpoolctl, reported when present)

        info["blas"] = [
            {
                k: v
                for k, v in d.items()
                if k
                in ("user_api", "internal_api", "version", "num_threads", "threading_layer", "architecture", "prefix")
            }
            for d in threadpool_info()
        ]
    except Exception as exc:  # pragma: no cover - threadpoolctl ships with sklearn
        info["blas"] = f"unavailable: {exc}"
    return info


#: The cases, in order: name -> function(cfg, data) -> JSON-ready dict.
CASES = {
    "epoch_vs_floor": cases.epoch_vs_floor,
    "prototype": cases.prototype_speedup,
    "time_to_suboptimality": cases.time_to_suboptimality,
    "variants_a9a": variants.variants_a9a,
    "z_update": variants.z_update,
    "variants_gisette": variants.variants_gisette,
    "under_noise": variants.under_noise,
    "epsilon_to_target": variants.epsilon_to_target,
    "scaling": cases.scaling,
}

#: Hook for the benchmarks of the other algorithms: module -> function name.
#: Each module (benchmarks/dp_admm.py, benchmarks/ldp.py) exposes
#: ``fn(quick: bool = False, data_dir=None) -> dict`` (JSON-ready). They run
#: only on request (``--external``, or by name in ``--only``): their full
#: mode reproduces every figure of their paper. The dict goes into bench.json
#: under the module's name; an optional ``"markdown"`` string in it becomes its
#: section of bench.md (else a JSON excerpt), and an optional ``"targets"``
#: dict (name -> {"description", "ratio", "threshold", "pass", "why"}) joins
#: the targets table. A missing module is skipped; an error in one is
#: recorded, not fatal.
EXTERNAL = {
    "dp_admm": "dp_admm_benchmark",
    "ldp": "ldp_benchmark",
    "sampler": "sampler_benchmark",
    "startup": "startup_benchmark",
    "dask_parties": "dask_benchmark",
    "party_services": "services_benchmark",
}


def _external(name: str, fn_name: str, cfg) -> dict | None:

    if importlib.util.find_spec(f"benchmarks.{name}") is None:
        return None
    try:
        fn = getattr(importlib.import_module(f"benchmarks.{name}"), fn_name)
        return fn(quick=cfg.quick, data_dir=cfg.data_dir)
    except Exception as exc:  # one broken external benchmark must not lose the others
        return {"error": f"{type(exc).__name__}: {exc}"}


def load_average() -> list | None:
    """The 1/5/15-minute load averages: the machine may be shared while we measure."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover - not on every platform
        return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["scale"]:  # one measured run at scale: its own interface
        return scale.main(argv[1:])
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (< 60 s), synthetic data only")
    p.add_argument("--out", default="results/benchmarks", help="output directory")
    p.add_argument(
        "--only", default=None, help="comma-separated cases to run (default: all): " + ", ".join([*CASES, *EXTERNAL])
    )
    p.add_argument(
        "--external",
        action="store_true",
        help="also run the other algorithms' benchmarks ("
        + ", ".join(EXTERNAL)
        + "; minutes each: they reproduce their papers' figures)",
    )
    args = p.parse_args(argv)
    only = None if args.only is None else [c.strip() for c in args.only.split(",") if c.strip()]
    if only is not None:
        unknown = sorted(set(only) - set(CASES) - set(EXTERNAL))
        if unknown:
            p.error(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

    t0 = perf_counter()
    cfg = problems.Settings.make(args.quick)
    bench: dict = {"quick": args.quick, "settings": cfg.as_dict(), "machine": machine_info()}
    bench["machine"]["load_before"] = load_average()
    data = problems.load_data(cfg)
    bench["data"] = data.describe()
    for name, fn in CASES.items():
        if only is not None and name not in only:
            continue
        ts = perf_counter()
        print(f"[benchmarks] {name} ...", flush=True)
        bench[name] = fn(cfg, data)
        bench[name]["case_seconds"] = perf_counter() - ts
        bench[name]["load_after"] = load_average()
        print(f"[benchmarks] {name} done in {bench[name]['case_seconds']:.1f} s", flush=True)
    for name, fn_name in EXTERNAL.items():
        if not (args.external or (only is not None and name in only)):
            continue
        if only is not None and name not in only:
            continue
        print(f"[benchmarks] {name} (external) ...", flush=True)
        result = _external(name, fn_name, cfg)
        if result is not None:
            bench[name] = result
    bench["machine"]["load_after"] = load_average()
    bench["targets"] = report.targets(bench)
    bench["total_seconds"] = perf_counter() - t0
    written = ["bench.json", "bench.md"]
    if "scaling" in bench:
        report.write_figure(bench, out)
        written += ["scaling.png", "scaling.pdf"]
    if "variants_a9a" in bench:
        variant_figures.write_convergence_figure(bench["variants_a9a"], out)
        written += ["variants.png", "variants.pdf"]
    if "epsilon_to_target" in bench:
        variant_figures.write_epsilon_figure(bench["epsilon_to_target"], out)
        written += ["epsilon_to_target.png", "epsilon_to_target.pdf"]
    report.write_atomic(out / "bench.json", json.dumps(report.jsonable(bench), indent=2))
    report.write_atomic(out / "bench.md", bench_markdown.markdown(bench))
    print(bench_markdown.summary(bench))
    print(f"[benchmarks] wrote {', '.join(f'{out}/{w}' for w in written)} in {bench['total_seconds']:.1f} s")
    return 0
