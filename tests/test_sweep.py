"""Noise sweeps: resumable, aggregated, parallel (joblib) and on Dask."""

import json
import shutil

import numpy as np
import pandas as pd
import pytest
from cli_helpers import vfl

from vfl.core.errors import ConfigError
from vfl.experiments import run_data
from vfl.experiments.config import config_from_dict
from vfl.experiments.sweep import aggregate_sweep, plan_sweep, run_sweep

RAW = {
    "name": "sw",
    "data": {"dataset": "synthetic", "options": {"n_train": 200, "n_test": 80, "n_features": 10, "seed": 1}},
    "partition": {"columns": [4, 6]},
    "objective": {"lam": 0.01},
    "solver": {"epochs": 8},
}


@pytest.fixture
def config():
    return config_from_dict(RAW)


def mtimes(runs):
    return {r.label: (r.path / "metrics.csv").stat().st_mtime_ns for r in runs}


def test_interrupted_sweep_resumes_without_redoing_finished_runs(tmp_path, config):
    out = tmp_path / "sweep"
    runs, executed = run_sweep(config, [0.0, 0.5], [0, 1], out)
    assert len(executed) == 4
    before = mtimes(runs)

    # Simulate a Ctrl-C / kill: one run never finished (no directory, only a
    # temporary leftover), one finished, others untouched.
    broken = runs[3].path

    shutil.rmtree(broken)
    leftover = out / f".{broken.name}.abc.partial"
    leftover.mkdir()
    (leftover / "config.json").write_text("{")

    done = []
    runs2, executed2 = run_sweep(
        config, [0.0, 0.5], [0, 1], out, on_done=lambda r, skipped: done.append((r.label, skipped))
    )
    assert [r.label for r in executed2] == [runs[3].label]
    assert not leftover.exists()
    after = mtimes(runs2)
    for label in list(before)[:3]:
        assert after[label] == before[label]  # not rewritten
    assert sorted(done) == sorted([(r.label, r.label != runs[3].label) for r in runs])


def test_changed_config_reruns(tmp_path, config):
    out = tmp_path / "sweep"
    run_sweep(config, [0.1], [0], out)
    changed = config_from_dict({**RAW, "solver": {"epochs": 9}})
    _, executed = run_sweep(changed, [0.1], [0], out)
    assert len(executed) == 1


def test_aggregate_matches_the_run_files(tmp_path, config):
    out = tmp_path / "sweep"
    # (in this process: the CLI test below runs its sweep in two joblib worker processes,
    # each importing numpy, scipy, pandas and matplotlib again)
    runs, _ = run_sweep(config, [0.0, 0.3], [0, 1, 2], out)
    agg, final = aggregate_sweep(runs, out)
    on_disk = pd.read_csv(out / "sweep.csv")
    assert list(on_disk.columns[:3]) == ["sigma", "epoch", "n_seeds"]
    assert len(on_disk) == 2 * 9  # two sigmas x epochs 0..8
    for sigma in (0.0, 0.3):
        per_run = [pd.read_csv(r.path / "metrics.csv") for r in runs if r.level == sigma]
        stacked = np.stack([m["test_logloss"].to_numpy() for m in per_run])
        rows = on_disk[on_disk["sigma"] == sigma]
        np.testing.assert_allclose(rows["test_logloss_mean"], stacked.mean(axis=0), rtol=1e-9)
        np.testing.assert_allclose(rows["test_logloss_std"], stacked.std(axis=0, ddof=1), rtol=1e-7, atol=1e-12)
        assert (rows["n_seeds"] == 3).all()
    fin = pd.read_csv(out / "sweep_final.csv")
    assert fin["sigma"].tolist() == [0.0, 0.3]
    # sigma = 0 runs are identical whatever the seed (no randomness in ADMM itself)
    assert fin.loc[0, "test_logloss_std"] == pytest.approx(0.0, abs=1e-15)
    assert fin.loc[1, "test_logloss_std"] > 0
    baselines = json.loads((out / "baselines.json").read_text())
    assert "sklearn_all_features" in baselines


def test_each_run_records_its_sigma_and_seed(tmp_path, config):
    runs = plan_sweep(config, [0.0, 1.0], [3], tmp_path)
    assert [(r.config.privacy.sigma, r.config.run.seed) for r in runs] == [(0.0, 3), (1.0, 3)]
    assert [r.path.name for r in runs] == ["sigma=0,seed=3", "sigma=1,seed=3"]


def test_cli_sweep_writes_figures_and_resumes(tmp_path):
    path = tmp_path / "sw.toml"
    path.write_text(
        'name = "sw"\n[data]\ndataset = "synthetic"\n'
        "options = { n_train = 200, n_test = 80, n_features = 10, seed = 1 }\n"
        "[partition]\ncolumns = [4, 6]\n[solver]\nepochs = 5\n"
        "[sweep]\nsigmas = [0, 0.2]\nseeds = [0, 1]\n"
    )
    out = tmp_path / "out"
    cmd = ["sweep-noise", "--config", path, "--out", out, "--jobs", "2"]
    proc = vfl(*cmd)
    assert proc.returncode == 0, proc.stderr
    assert "4 runs executed, 0 kept" in proc.stdout
    for name in ("sweep.csv", "sweep_final.csv", "sweep_curves.png", "sweep_final.png", "baselines.json"):
        assert (out / name).is_file(), name
    proc = vfl(*cmd, "--sigmas", "0,0.2,1")
    assert proc.returncode == 0, proc.stderr
    assert "2 runs executed, 4 kept" in proc.stdout
    bad = vfl(*cmd, "--sigmas", "0,-1")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: --sigmas[1] must be >= 0, got -1"


@pytest.mark.slow
def test_dask_scheduler_runs_the_same_sweep(tmp_path, config):
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True
    ) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        runs, executed = run_sweep(config, [0.0, 0.4], [0], tmp_path / "dask", scheduler=cluster.scheduler_address)
    assert len(executed) == 2
    local, _ = run_sweep(config, [0.0, 0.4], [0], tmp_path / "local")
    timing = ["wall_time_s", "x_time_s", "z_time_s", "y_time_s"]
    for a, b in zip(runs, local):
        pd.testing.assert_frame_equal(
            pd.read_csv(a.path / "metrics.csv").drop(columns=timing),
            pd.read_csv(b.path / "metrics.csv").drop(columns=timing),
        )


def test_unreachable_scheduler_is_a_clear_error(tmp_path, config):
    pytest.importorskip("dask.distributed")
    with pytest.raises(ConfigError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        run_sweep(config, [0.0], [0], tmp_path / "x", scheduler="tcp://127.0.0.1:9")


def test_a_sweep_over_seeds_loads_the_dataset_once(config, monkeypatch, tmp_path):
    """run.seed is in the dataset cache's key only where the records depend on it: a user
    file split at random without its own split_seed."""

    loads = []
    real = run_data._load_config_dataset
    monkeypatch.setattr(
        run_data, "_load_config_dataset", lambda c, d=None, *a: loads.append(c.run.seed) or real(c, d, *a)
    )
    run_data._DATASETS.clear()
    for seed in (0, 1, 2):
        run_data.load_config_dataset(config.with_overrides([f"run.seed={seed}"]))
    assert loads == [0]
    (tmp_path / "tr.svm").write_text("".join(f"{(-1) ** i} 1:{i % 5} 2:{i % 3}\n" for i in range(40)))
    split = config.with_overrides(
        ['data.dataset="libsvm"', f'data.options={{path = "{tmp_path / "tr.svm"}", test_fraction = 0.25}}']
    )
    for seed in (0, 1):
        run_data.load_config_dataset(split.with_overrides([f"run.seed={seed}"]))
    assert loads == [0, 0, 1]
