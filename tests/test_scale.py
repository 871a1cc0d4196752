"""Scale (issue 23's parts that a test can hold): a9a-shaped rows at any size, the references
a run computes (`run.baselines`), the party-scaled rho rule, and the scale benchmark's interface."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from cli_helpers import SMALL, vfl

from vfl.admm.sharing.admm_sharing import ADMMSharingSolver, blas_threads_for, scaled_rho
from vfl.admm.sharing.block import BlockSolver
from vfl.baselines.central import ColumnBlocks, central_optimum
from vfl.core.errors import ConfigError, DataError
from vfl.core.objective import Objective
from vfl.core.preprocessing import RowSteps
from vfl.datasets import load_dataset
from vfl.datasets.a9a_like import A9A_GROUPS, make_a9a_like
from vfl.datasets.synthetic import synthetic_from_options
from vfl.experiments import run_data
from vfl.experiments.config import config_from_dict
from vfl.experiments.distribution import SplitRecords
from vfl.experiments.partition import Partition
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `benchmarks`: a plain folder at the repo root, not installed
from benchmarks import runner as bench_runner  # noqa: E402


# ------------------------------------------------------------ a9a-shaped rows --
def test_a9a_shaped_rows_are_one_hot_in_a9as_groups():
    data = make_a9a_like(5000, 1000, seed=3)
    X = data.X_train
    assert X.shape == (5000, 123) and sp.isspmatrix_csr(X)
    assert set(np.unique(X.data)) == {1.0}
    edges = np.cumsum((0, *A9A_GROUPS))
    per_group = np.column_stack([np.asarray(X[:, a:b].sum(axis=1)).ravel() for a, b in zip(edges[:-1], edges[1:])])
    assert per_group.max() == 1  # at most one value per attribute
    assert 0.95 < per_group.mean() < 1.0  # missing with probability 0.02
    assert 0.20 < np.mean(data.y_train > 0) < 0.28  # a9a: 0.24
    assert "NOT the real a9a" in data.description and not data.is_stand_in


def test_a9a_shaped_training_rows_do_not_depend_on_the_test_size():
    a, b = make_a9a_like(2000, 100, seed=1), make_a9a_like(2000, 700, seed=1)
    assert (a.X_train != b.X_train).nnz == 0 and np.array_equal(a.y_train, b.y_train)
    c = make_a9a_like(2000, 100, seed=2)
    assert (a.X_train != c.X_train).nnz > 0


def test_a9a_shaped_preset_takes_row_counts_and_nothing_else():
    data = synthetic_from_options({"preset": "a9a-shaped", "n_train": 3000, "n_test": 500})
    assert data.name == "synthetic:a9a-shaped" and data.X_train.shape == (3000, 123)
    with pytest.raises(DataError, match="a9a-shaped' fixes n_features; only seed, n_train, n_test"):
        synthetic_from_options({"preset": "a9a-shaped", "n_features": 10})
    with pytest.raises(DataError, match="fixes n_train; only seed"):
        synthetic_from_options({"preset": "gisette-shaped", "n_train": 10})


# --------------------------------------------------------------- run.baselines --
def _small(**run):
    raw = {
        "name": "small",
        "data": {"dataset": "synthetic", "options": {"n_train": 300, "n_test": 100, "n_features": 12, "seed": 3}},
        "partition": {"columns": [5, 7]},
        "objective": {"lam": 0.01},
        "solver": {"epochs": 3},
        "run": run,
    }
    return config_from_dict(raw)


def test_central_baselines_are_the_one_exact_solve_and_the_base_rate():
    everything = run_experiment(_small(), use_cache=False)
    central = run_experiment(_small(baselines="central"), use_cache=False)
    none = run_experiment(_small(baselines="none"), use_cache=False)
    assert set(everything.baselines) >= {"central", "sklearn_all_features", "sklearn_local_only"}
    assert set(central.baselines) == {"central", "majority", "cached"}
    timeless = [
        {k: v for k, v in b["central"].items() if k != "seconds"} for b in (central.baselines, everything.baselines)
    ]
    assert timeless[0] == timeless[1]
    pd.testing.assert_series_equal(central.metrics["suboptimality"], everything.metrics["suboptimality"])
    assert none.baselines == {} and none.metrics["suboptimality"].isna().all()
    assert central.manifest.dump()["diagnostic"]["timing"]["baselines"] == "central"
    assert none.manifest.dump()["diagnostic"]["timing"]["baselines_seconds"] < 0.01  # nothing solved


def test_the_central_solve_is_cached_once_for_every_run_on_the_same_design(tmp_path, monkeypatch):
    monkeypatch.setenv("VFL_CACHE_DIR", str(tmp_path))
    first = run_experiment(_small(baselines="all"))
    again = run_experiment(_small(baselines="central"))  # F* from the "all" run's solve
    assert not first.baselines["cached"] and again.baselines["cached"]
    assert again.baselines["central"] == first.baselines["central"]


def test_bad_baselines_value_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match="run.baselines"):
        _small(baselines="some")
    config = tmp_path / "small.toml"
    config.write_text(SMALL.format(epochs=2))
    proc = vfl("run", "--config", config, "--baselines", "central", "--out", tmp_path / "run")
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "run" / "config.json").read_text())["run"]["baselines"] == "central"
    assert "baselines computed" in proc.stdout or "baselines from cache" in proc.stdout
    proc = vfl("run", "--config", config, "--baselines", "few", "--out", tmp_path / "bad")
    assert proc.returncode == 2 and not (tmp_path / "bad").exists()


# ------------------------------------------------------------ rho_parties rule --
def test_scaled_rho_is_the_given_rho_for_two_parties():
    assert scaled_rho(0.02, 2, "scaled") == 0.02  # bit-identical two-party runs
    assert scaled_rho(0.02, 16, "scaled") == pytest.approx(0.02 * 8**-0.6)
    assert scaled_rho(0.02, 16, "fixed") == 0.02


def test_scaled_rho_needs_the_boyd_form():
    params = {p.name: p.default for p in ADMMSharingSolver.params}
    privacy = {p.name: p.default for p in ADMMSharingSolver.privacy_params}
    with pytest.raises(ValueError, match="rho_parties = 'scaled' needs form = 'boyd'"):
        ADMMSharingSolver.check_config({**params, "rho_parties": "scaled"}, privacy, 10)
    ADMMSharingSolver.check_config({**params, "rho_parties": "scaled", "form": "boyd"}, privacy, 10)


def test_the_transposed_block_is_a_view_not_a_copy():
    D = sp.random(200, 30, density=0.2, format="csr", random_state=0)
    block = BlockSolver(D, lam=0.1, rho=1.0)
    assert np.shares_memory(block.DT.data, block.D.data)
    r = np.random.default_rng(0).standard_normal(200)
    assert np.array_equal(block.DT @ r, D.T.tocsr() @ r)  # the same sums, in the same order


# ------------------------------------------------------------ the benchmark --
def test_scale_benchmark_prints_one_json_object(capsys, monkeypatch):
    assert (
        bench_runner.main(
            ["scale", "--rows", "3000", "--parties", "4", "--epochs", "3", "--data", "synthetic", "--json"]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    for key in (
        "rows",
        "parties",
        "epochs_to_1e-4",
        "admm_over_lbfgs",
        "baseline_share_of_wall",
        "peak_rss_over_data",
        "ns_per_row_epoch",
    ):
        assert key in out, key
    assert (out["rows"], out["parties"]) == (3000, 4)
    assert 0 < out["baseline_share_of_wall"] < 1 and out["peak_rss_over_data"] > 1


# ------------------------------------------------------ a9a at k times its rows --
@pytest.mark.data
def test_a9a_tile_repeats_the_training_records(data_dir):
    one = load_dataset("a9a", data_dir=data_dir)
    three = load_dataset("a9a", data_dir=data_dir, options={"tile": 3})
    n = one.X_train.shape[0]
    assert three.X_train.shape == (3 * n, 123) and three.X_test.shape == one.X_test.shape
    assert (three.X_train[2 * n :] != one.X_train).nnz == 0
    assert np.array_equal(three.y_train[n : 2 * n], one.y_train)
    assert "repeated 3 times" in three.description
    with pytest.raises(DataError, match="tile must be an integer >= 1"):
        load_dataset("a9a", data_dir=data_dir, options={"tile": 0})


@pytest.mark.parametrize("lam,warm_rows,path", [(5.0, 5000, "chord Newton steps"), (0.5, 2000, "trust-exact")])
def test_the_central_solve_from_a_subsample_reaches_the_same_optimum(lam, warm_rows, path):
    """Chord steps with a subsample's Hessian when they contract; the trust-region method from
    where they stop when they do not (rare columns, a weak regularizer): the same F* either way."""

    data = make_a9a_like(20000, 100, seed=4)
    D = sp.hstack([data.X_train, np.ones((20000, 1))], format="csr")
    objective = Objective(loss="logistic", reduction="sum", lam=lam)
    cold = central_optimum(D, data.y_train, objective)
    warm = central_optimum(D, data.y_train, objective, warm_above=1000, warm_rows=warm_rows)
    assert warm.method.startswith(("chord", "scipy")) and path in warm.method
    assert "every" in warm.method and "every" not in cold.method
    assert warm.value == pytest.approx(cold.value, rel=1e-14)
    _, g0 = objective.value_and_grad(np.zeros(D.shape[1]), D, data.y_train)
    assert warm.grad_norm <= 1e-10 * np.linalg.norm(g0)


def test_blas_threads_follow_the_blocks_storage():
    """Unset, ``solver.blas_threads`` is 1 for sparse blocks (no BLAS in their products) and
    untouched for dense ones (BLAS products); a value given in the config always wins."""

    dense, sparse = np.ones((4, 3)), sp.csr_matrix(np.eye(4, 3))
    assert blas_threads_for([sparse, sparse], None) == 1
    assert blas_threads_for([sparse, dense], None) is None
    assert blas_threads_for([sparse, sparse], 2) == 2 and blas_threads_for([dense], 1) == 1
    assert blas_threads_for(None, None) is None  # blocks on Dask workers: their process decides


# ------------------------------------------------- memory: the records, once split --
def test_a_run_that_lets_the_records_go_keeps_only_the_blocks():
    config = _small(baselines="central")
    kept = plan_run(config)
    assert kept.dataset is not None and run_data._DATASETS  # figure runs share the records
    plan = plan_run(config, keep_records=False)
    assert plan.dataset is None and not run_data._DATASETS  # nothing beside the blocks
    records = plan.setting.dataset
    assert isinstance(records, SplitRecords) and not hasattr(records, "X_train")
    assert (records.n_train, records.n_test, records.n_features) == (300, 100, 12)
    X = kept.dataset.train.numeric
    assert records.train_bytes == X.nbytes  # dense records: their values
    a = run_experiment(config, plan=kept, use_cache=False)
    b = run_experiment(config, plan=plan, use_cache=False)
    assert a.manifest.dump()["dataset"] == b.manifest.dump()["dataset"]
    pd.testing.assert_frame_equal(
        a.metrics.drop(columns=[c for c in a.metrics if "time" in c]),
        b.metrics.drop(columns=[c for c in b.metrics if "time" in c]),
    )


def test_records_the_column_steps_leave_alone_are_split_without_a_copy_first():
    X = sp.random(500, 20, density=0.3, format="csr", random_state=1)
    whole = Partition(parties=(np.arange(20),), n_features=20, rows=RowSteps())
    block = whole.block(X, 0)  # one party, every column: still the party's own matrix
    assert not np.may_share_memory(block.data, X.data) and (block != X).nnz == 0
    dense = X.toarray()
    assert not np.may_share_memory(whole.block(dense, 0), dense)


def test_the_central_solve_on_the_blocks_is_the_joined_solve_to_the_bit():
    rng = np.random.default_rng(0)
    X = sp.random(4000, 30, density=0.2, format="csr", random_state=2)
    ones = sp.csr_matrix(np.ones((4000, 1)))
    blocks = [sp.hstack([X[:, :11], ones], format="csr"), X[:, 11:20].tocsr(), X[:, 20:].tocsr()]
    joined = sp.hstack(blocks, format="csr")
    D, b = ColumnBlocks(blocks), np.where(rng.random(4000) < 0.3, 1.0, -1.0)
    x, objective = rng.standard_normal(31), Objective(lam=0.05)
    assert np.array_equal(D @ x, joined @ x) and np.array_equal(D.T @ b, joined.T @ b)
    assert np.array_equal(objective.hess(x, D, b), objective.hess(x, joined, b))
    assert (D[np.arange(0, 4000, 9)] != joined[::9]).nnz == 0
    for warm in ({}, {"warm_above": 1000, "warm_rows": 500}):  # trust-exact; chord steps
        on_blocks, on_joined = (
            central_optimum(blocks, b, objective, **warm),
            central_optimum(joined, b, objective, **warm),
        )
        assert on_blocks.value == on_joined.value and np.array_equal(on_blocks.x, on_joined.x)
        assert on_blocks.method == on_joined.method
