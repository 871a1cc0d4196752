"""The benchmark runner (``python -m benchmarks``): smoke run and the prototype's fidelity.

No timing assertions: only that the files are written, the ratios are finite
positive numbers, and the prototype strategy follows ADMMSharing's iterates.
"""

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from vfl.admm import ADMMSharing
from vfl.core.objective import Objective
from vfl.datasets import make_synthetic
from vfl.experiments.partition import Partition

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `benchmarks` is a plain folder at the repo root, not installed
from benchmarks import bench_markdown, report, runner  # noqa: E402
from benchmarks.prototype import PrototypeADMM  # noqa: E402


def _finite_positive(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


@pytest.mark.slow  # every case of the runner, end to end in a new process: about 25 s
def test_quick_run_writes_results(tmp_path):
    out = tmp_path / "bench"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("bench.json", "bench.md", "scaling.png", "scaling.pdf", "variants.png", "epsilon_to_target.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert not list(out.glob("*.tmp*")), "temporary files left behind"
    bench = json.loads((out / "bench.json").read_text())
    assert bench["quick"] is True
    for key in (
        "machine",
        "data",
        "epoch_vs_floor",
        "prototype",
        "time_to_suboptimality",
        "variants_a9a",
        "z_update",
        "variants_gisette",
        "under_noise",
        "epsilon_to_target",
        "scaling",
        "targets",
        "total_seconds",
    ):
        assert key in bench, key
    m = bench["machine"]
    assert m["cpu_count"] >= 1 and m["numpy"] and m["scipy"] and "blas" in m
    assert len(m["load_before"]) == 3 and len(m["load_after"]) == 3
    assert set(bench["targets"]) == {
        "epoch_vs_two_pass_floor",
        "speedup_vs_prototype",
        "time_to_1e-4_vs_sklearn",
        "a9a_fast_epochs_to_1e-4",
        "a9a_fast_time_vs_lbfgs",
        "gisette_time_to_1e-4_vs_lbfgs",
    }
    for t in bench["targets"].values():
        assert _finite_positive(t["ratio"]), t
        assert isinstance(t["pass"], bool)
    assert bench["epoch_vs_floor"]["bandwidth"]["gb_per_s"] > 0
    for data in ("a9a", "gisette"):
        c = bench["epoch_vs_floor"][data]
        for k in (
            "epoch_seconds",
            "x_seconds",
            "z_seconds",
            "floor_seconds_all_parties",
            "floor_seconds_warm_sum",
            "bandwidth_floor_seconds",
            "bytes_per_epoch",
            "epoch_seconds_one_blas_thread",
            "epoch_seconds_one_thread_newton_z",
            "diagnostics_seconds",
            "ratio_epoch_to_floor",
            "peak_mib",
        ):
            assert _finite_positive(c[k]), (data, k)
        assert all(_finite_positive(p["ratio_to_floor"]) for p in c["parties"])
    v = bench["variants_a9a"]
    keys = [r["key"] for r in v["variants"]]
    assert keys[0] == "paper" and "a9a_fast" in keys
    for r in v["variants"]:
        assert r["epochs_run"] >= 1 and len(r["trace"]) == r["epochs_run"]
        if r["epochs_to_0.0001"] is not None:
            assert _finite_positive(r["seconds_to_0.0001"])
    assert set(v["sklearn"]) == {"lbfgs", "lbfgs, 1 BLAS thread", "newton-cholesky", "newton-cholesky, 1 BLAS thread"}
    for row in bench["z_update"]["rows"]:
        assert row["max_abs_diff"] <= 1e-9 and _finite_positive(row["speedup"])
    assert [r["key"] for r in bench["under_noise"]["rows"]][0] == "paper"
    for r in bench["under_noise"]["rows"]:
        for sigma in bench["under_noise"]["sigmas"]:
            assert math.isfinite(r[f"sigma_{sigma:g}"]["mean"])
    e = bench["epsilon_to_target"]
    assert {r["algorithm"] for r in e["rows"]} == {"Algorithm 1 (rho 1)", "a9a-fast variant", "Boyd, rho 0.1"}
    for r in e["rows"]:
        assert _finite_positive(r["sensitivity"])
        assert r["reached"] == (r["epsilon"] is not None)
    p = bench["prototype"]
    for k in ("speedup_epoch", "speedup_x", "speedup_z", "prototype_epoch_seconds", "admm_epoch_seconds"):
        assert _finite_positive(p[k]), k
    t = bench["time_to_suboptimality"]
    assert _finite_positive(t["sklearn"]["seconds"]) and _finite_positive(t["admm_rho1"]["seconds"])
    assert [g["rho"] for g in t["admm_rho_grid"]] == [0.1, 0.3, 1.0, 3.0]
    s = bench["scaling"]
    assert s["vs_features"] and s["vs_samples"]
    for row in s["vs_features"] + s["vs_samples"]:
        for method in ("admm", "sgd"):
            assert _finite_positive(row[method]["seconds"]) and row[method]["epochs"] >= 1
    md = (out / "bench.md").read_text()
    assert "PASS" in md or "MISS" in md
    assert "NOT a9a" in md  # quick mode says its data are a stand-in
    assert "## Variants of ADMM sharing" in md and "## Under noise" in md


def test_only_runs_the_named_cases_and_the_hook_is_optional(tmp_path, monkeypatch, capsys):
    """``python -m benchmarks ...`` is ``runner.main(argv)``, called here in this process."""

    out = tmp_path / "bench"
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():  # main sets a filter of its own
        assert runner.main(["--quick", "--only", "z_update", "--out", str(out)]) == 0
    bench = json.loads((out / "bench.json").read_text())
    assert "z_update" in bench and "variants_a9a" not in bench and bench["targets"] == {}
    capsys.readouterr()
    with pytest.raises(SystemExit) as bad:
        runner.main(["--only", "nope"])
    assert bad.value.code == 2 and "unknown case" in capsys.readouterr().err


def test_external_benchmarks_plug_in(monkeypatch):
    assert runner.EXTERNAL == {
        "dp_admm": "dp_admm_benchmark",
        "ldp": "ldp_benchmark",
        "sampler": "sampler_benchmark",
        "startup": "startup_benchmark",
        "dask_parties": "dask_benchmark",
        "party_services": "services_benchmark",
    }
    monkeypatch.setitem(runner.EXTERNAL, "does_not_exist", "bench")
    assert runner._external("does_not_exist", "bench", None) is None
    md = bench_markdown.markdown(
        {
            "quick": True,
            "total_seconds": 1.0,
            "targets": {},
            "machine": {"blas": [], "cpu_count": 2, "numpy": "", "scipy": "", "sklearn": ""},
            "data": {k: {"name": k, "note": ""} for k in ("a9a", "gisette")},
            "ldp": {"iteration": {"dgd": 0.1}},
        }
    )
    assert "## ldp (external benchmark)" in md and '"dgd": 0.1' in md
    bench = {
        "dp_admm": {
            "markdown": "hello",
            "targets": {"t": {"description": "x (<= 1)", "ratio": 0.5, "threshold": 1.0, "pass": True, "why": "-"}},
        }
    }
    assert report.targets(bench) == {"dp_admm:t": bench["dp_admm"]["targets"]["t"]}


def test_prototype_follows_admm_sharing():
    ds = make_synthetic(300, 10, 12, seed=3)
    part = Partition(parties=(np.arange(7), np.arange(7, 12)), n_features=12)
    blocks = part.split(ds.X_train)
    obj = Objective("logistic", 1e-3, "sum")
    ref = ADMMSharing(blocks, ds.y_train, obj, rho=1.0)
    proto = PrototypeADMM(blocks, ds.y_train, obj, rho=1.0, lbfgs_options={"gtol": 1e-10, "ftol": 1e-14})
    for _ in range(3):
        ref.step()
        timings = proto.step()  # every sample by minimize_scalar
        assert timings["z_samples_timed"] == 300
        scale = max(1.0, float(np.max(np.abs(ref.coef()))))
        np.testing.assert_allclose(np.concatenate(proto.x), ref.coef(), rtol=0, atol=1e-5 * scale)
        np.testing.assert_allclose(proto.z, ref.z, rtol=0, atol=1e-5)
        np.testing.assert_allclose(proto.y, ref.y, rtol=0, atol=1e-5)
    assert proto.epoch == 3 and any(it > 0 for it in proto.lbfgs_iterations[-1])


def test_prototype_subset_extrapolates_and_keeps_exact_iterates():
    ds = make_synthetic(200, 10, 6, sparse=True, density=0.5, seed=1)
    obj = Objective("logistic", 1e-3, "sum")
    blocks = [ds.X_train[:, :3], ds.X_train[:, 3:]]
    ref = ADMMSharing(blocks, ds.y_train, obj, rho=1.0)
    proto = PrototypeADMM(blocks, ds.y_train, obj, rho=1.0)
    subset = np.arange(0, 200, 10)
    for _ in range(2):
        ref.step()
        t = proto.step(z_samples=subset)
        assert t["z_samples_timed"] == 20
        assert t["z_seconds"] == pytest.approx(t["z_seconds_measured"] * 10)
        np.testing.assert_allclose(proto.z, ref.z, atol=1e-4)
