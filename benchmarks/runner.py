"""``python -m benchmarks [--quick] [--out DIR]``: run every case, write the results.

All cases run in this one process on the same data; timings are medians over
repeats and every target is a ratio of two timings measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import warnings
from pathlib import Path
from time import perf_counter

import numpy as np

from . import cases, report


def machine_info() -> dict:
    import scipy
    import sklearn

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
        from threadpoolctl import threadpool_info

        info["blas"] = [{k: v for k, v in d.items() if k in
                         ("user_api", "internal_api", "version", "num_threads", "threading_layer",
                          "architecture", "prefix")} for d in threadpool_info()]
    except Exception as exc:  # pragma: no cover - threadpoolctl ships with sklearn
        info["blas"] = f"unavailable: {exc}"
    return info


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (< 30 s), synthetic data only")
    p.add_argument("--out", default="results/benchmarks", help="output directory")
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module="scipy")

    t0 = perf_counter()
    cfg = cases.Settings.make(args.quick)
    bench: dict = {"quick": args.quick, "settings": cfg.as_dict(), "machine": machine_info()}
    data = cases.load_data(cfg)
    bench["data"] = data.describe()
    for name, fn in [("epoch_vs_floor", cases.epoch_vs_floor),
                     ("prototype", cases.prototype_speedup),
                     ("time_to_suboptimality", cases.time_to_suboptimality),
                     ("scaling", cases.scaling)]:
        ts = perf_counter()
        print(f"[benchmarks] {name} ...", flush=True)
        bench[name] = fn(cfg, data)
        bench[name]["case_seconds"] = perf_counter() - ts
        print(f"[benchmarks] {name} done in {bench[name]['case_seconds']:.1f} s", flush=True)
    bench["targets"] = report.targets(bench)
    bench["total_seconds"] = perf_counter() - t0
    report.write_figure(bench, out)
    report.write_atomic(out / "bench.json", json.dumps(report.jsonable(bench), indent=2))
    report.write_atomic(out / "bench.md", report.markdown(bench))
    print(report.summary(bench))
    print(f"[benchmarks] wrote {out}/bench.json, bench.md, scaling.png, scaling.pdf "
          f"in {bench['total_seconds']:.1f} s")
    return 0
