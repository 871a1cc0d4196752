"""The cost of exact noise: the deployment sampler against numpy's, per vector and per epoch.

``python -m benchmarks --only sampler``. Both timings come from this run:
a 32,561-value Gaussian vector (a9a's rows: one ADMM-sharing share) drawn by
numpy and by :class:`vfl.core.sampling.ExactSampler`, and the solver seconds
per epoch of a run that claims a guarantee, once as a replayable simulation
(numpy) and once as a deployment (exact noise).
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

N = 32_561


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = perf_counter()
        fn()
        times.append(perf_counter() - t0)
    return float(np.median(times))


def _epoch_seconds(config_path: str, overrides: list[str], data_dir) -> float:
    from vfl.experiments.config import load_config
    from vfl.experiments.runner import run_experiment

    config = load_config(config_path, overrides)
    result = run_experiment(config, data_dir=data_dir, with_baselines=False)
    return float(result.manifest["result"]["seconds_per_epoch"])


def sampler_benchmark(quick: bool = False, data_dir=None) -> dict:
    from vfl.core.sampling import ExactSampler

    n = 2_000 if quick else N
    rng, exact = np.random.default_rng(0), ExactSampler()
    repeats = 3 if quick else 7
    t_numpy = _median_seconds(lambda: rng.standard_normal(n), repeats)
    t_exact = _median_seconds(lambda: exact.add("gaussian", np.zeros(n), 1.0), repeats)
    out = {"values": n, "numpy_seconds": t_numpy, "exact_seconds": t_exact,
           "exact_over_numpy": t_exact / t_numpy}
    if not quick:
        per_epoch = {}
        for mode, extra in (("simulation (numpy)", ["privacy.replayable_noise=true"]),
                            ("deployment (exact)", [])):
            per_epoch[mode] = _epoch_seconds("papers/hu/configs/privacy-a9a-row.toml", extra, data_dir)
        out["admm_sharing_row_a9a_seconds_per_epoch"] = per_epoch
        out["epoch_ratio"] = per_epoch["deployment (exact)"] / per_epoch["simulation (numpy)"]
    lines = ["| sampler | seconds per vector of %d values | ratio |" % n, "|---|---:|---:|",
             f"| numpy (floating point) | {t_numpy:.5f} | 1 |",
             f"| exact discrete Gaussian | {t_exact:.4f} | {t_exact / t_numpy:.0f} |"]
    if "epoch_ratio" in out:
        sim, dep = (out["admm_sharing_row_a9a_seconds_per_epoch"][k]
                    for k in ("simulation (numpy)", "deployment (exact)"))
        lines.append("")
        lines.append(f"ADMM sharing, row-level guarantee, a9a (`papers/hu/configs/privacy-a9a-row.toml`): "
                     f"{1e3 * sim:.1f} ms per epoch with numpy's sampler, {1e3 * dep:.1f} ms with "
                     f"the exact one ({out['epoch_ratio']:.2f}x).")
    out["markdown"] = "\n".join(lines)
    return out
