"""``run.backend = "dask"``: ADMM sharing's parties as actors on their own Dask workers.

One small in-process (threaded, TCP) cluster serves every test here; the
process clusters, a9a and the killed workers are in ``test_parties_slow.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cli_helpers import SMALL, assert_one_line_error, vfl
from vfl.core.errors import ConfigError
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.parties import DaskBackend, dask_backend
from vfl.experiments.runner import plan_run, run_experiment

distributed = pytest.importorskip("dask.distributed")

TIMING = ["wall_time_s", "x_time_s", "z_time_s", "y_time_s"]


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  protocol="tcp://", host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c.scheduler_address


def _config(tmp_path, epochs=8, extra=""):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.format(epochs=epochs) + "blas_threads = 1\n" + extra)
    return path


def _run(config, cluster=None):
    if cluster is None:
        return run_experiment(config, with_baselines=False), None
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        return run_experiment(config, plan=plan, with_baselines=False), backend


#: ADMM sharing's accounting mode (row relation, sigma calibrated for epsilon 4)
ACCOUNTED = ["preprocessing.normalize_rows=true", "privacy.delta=1e-5", "privacy.epsilon=4.0",
             'privacy.form="output"', 'privacy.neighbours="row"', "privacy.b1=1.0",
             "privacy.clip=1.0", "privacy.input_clip=2.0", "privacy.replayable_noise=true"]


@pytest.mark.parametrize("overrides", [
    [],  # Algorithm 1
    # noise drawn on the workers from each party's stream, parties in turn, a ball
    ["privacy.sigma=0.3", 'privacy.form="output"', 'solver.order="gauss_seidel"',
     "run.repeats=2"],
    ['solver.form="boyd"', "privacy.sigma=0.1", 'privacy.form="variable_whitened"',
     'solver.rho_schedule="spectral"'],
    # accounting mode: the workers check their rows, the coordinator records the releases
    ACCOUNTED,
])
def test_the_dask_backend_gives_the_in_process_numbers_to_the_bit(tmp_path, cluster, overrides):
    path = _config(tmp_path)
    local, _ = _run(load_config(path, overrides))
    remote, backend = _run(load_config(path, [*overrides, "run.backend=dask"]), cluster)
    pd.testing.assert_frame_equal(remote.metrics.drop(columns=TIMING),
                                  local.metrics.drop(columns=TIMING), check_exact=True)
    np.testing.assert_array_equal(remote.coef, local.coef)
    pd.testing.assert_frame_equal(remote.communication, local.communication)
    # the parties were on two workers; the transport carried the protocol's bytes plus headers
    assert len(set(remote.manifest["backend"]["parties"].values())) == 2
    t = remote.manifest["communication"]["transport"]
    assert t["protocol_bytes"] == remote.metrics["bytes"].iloc[-1] * remote.config.run.repeats
    assert t["protocol_bytes"] <= t["bytes"] <= t["protocol_bytes"] * 1.5
    # scoring the 100 test rows: each party sends its 100 shares B_m x_m, apart from training
    scored = remote.communication.query("phase == 'inference'")
    assert scored.query("unit > 0")["sent_bytes"].tolist() == [100 * 8, 100 * 8] * \
        remote.config.run.repeats
    assert remote.manifest["result"]["inference_bytes"] == t["protocol_inference_bytes"] == 1600
    assert 1600 <= t["inference_bytes"] <= 1600 + 2 * 1200  # plus Dask's headers


def test_inference_is_counted_from_the_declaration():
    """a9a's 16,281 test rows scored once: 2 parties x 16,281 shares of 8 bytes (Hu et al.'s
    eq. (1)); a trainer's or an agent's own model sends nothing; private stacking's party 1
    scores its own columns."""
    from vfl.experiments.registry import get_solver

    sharing = get_solver("admm_sharing").inference.traffic(2, 16_281)
    assert (sharing.messages, sharing.bytes) == (2, 260_496)
    assert sharing.sent_bytes.tolist() == [130_248, 130_248] == [16_281 * 8] * 2
    assert sharing.hub_received_bytes == 260_496
    stacking = get_solver("private_stacking").inference.traffic(3, 1000)
    assert stacking.sent_messages.tolist() == [0, 1, 1] and stacking.bytes == 16_000
    for name in ("dp_admm", "ldp_admm"):
        assert get_solver(name).inference.traffic(5, 16_281).messages == 0


#: DP-ADMM (Huang et al. 2019, Algorithm 3) on 5 providers: on the two workers, groups 1-3 and 4-5
HORIZONTAL = {
    "data": {"dataset": "synthetic",
             "options": {"n_train": 400, "n_test": 60, "n_features": 7, "seed": 2}},
    "preprocessing": {"row_clip": 1.0},
    "partition": {"agents": 5, "samples_per_agent": 30, "public": 40},
    "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "solver": {"name": "dp_admm", "epochs": 8},
}
#: Huang et al.'s Algorithm 2 at its paper's sigma: its releases are accounted
ALGORITHM2 = {"solver": {"name": "consensus_admm_perturbed", "epochs": 6},
              "privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3}}


def _providers_both(raw, cluster):
    """``raw`` run in-process and with its providers on the two workers."""
    from vfl.experiments.providers import DaskProviders

    local = run_experiment(config_from_dict(raw), with_baselines=False)
    config = config_from_dict({**raw, "run": {**raw.get("run", {}), "backend": "dask"}})
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        assert isinstance(plan.solver.providers, DaskProviders)
        with pytest.raises(AttributeError):
            plan.solver.A  # noqa: B018 (the trainer holds no provider's rows)
        remote = run_experiment(config, plan=plan, with_baselines=False)
    return local, remote, plan


@pytest.mark.parametrize("extra", [
    # Theorem 1's noise, drawn on the workers, accounted by the trainer; two repeats (splits)
    {"privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3, "replayable_noise": True},
     "run": {"repeats": 2}},
    # Theorem 3's l1 schedule without noise
    {"privacy": {"noise": False, "epsilon_per_iteration": 0.5},
     "objective": {**HORIZONTAL["objective"], "regularizer": "l1"}},
    # Algorithm 1, l1: FISTA (the paper configs' local solver), each provider stopping at
    # its own tolerance in its group
    {"solver": {"name": "consensus_admm", "epochs": 6, "local_solver": "fista",
                "inner_tol": 1e-8},
     "objective": {**HORIZONTAL["objective"], "regularizer": "l1"}},
    # Algorithm 2, l2 (Newton): its noise drawn on the workers, accounted by the trainer
    {**ALGORITHM2, "privacy": {**ALGORITHM2["privacy"], "replayable_noise": True}},
])
def test_huang_providers_on_dask_give_the_in_process_numbers_to_the_bit(cluster, extra):
    local, remote, _ = _providers_both({**HORIZONTAL, **extra}, cluster)
    timing = [c for c in local.metrics.columns if c.endswith("_time_s")]
    pd.testing.assert_frame_equal(remote.metrics.drop(columns=timing),
                                  local.metrics.drop(columns=timing), check_exact=True)
    np.testing.assert_array_equal(remote.coef, local.coef)
    pd.testing.assert_frame_equal(remote.communication, local.communication)
    assert list(remote.manifest["backend"]["providers"]) == ["providers 1-3", "providers 4-5"]
    # each provider sends d = 7 values and receives w (7 values) per iteration
    t = remote.manifest["communication"]["transport"]
    assert t["protocol_bytes_per_epoch"] == 2 * 5 * 7 * 8 == 560
    assert t["bytes"] > 0  # (w reaches a group in one message: TCP may carry less payload)
    assert remote.manifest["result"]["inference_bytes"] == 0  # the trainer holds the model


def test_algorithm2_deployment_noise_is_drawn_by_each_groups_exact_sampler(cluster):
    """Without replayable noise, Algorithm 2's providers draw exact discrete Gaussian noise
    on their workers, at the (grid-grown) scale of the trainer's release events: the same
    scales and sensitivities as in-process, so the same epsilon to the bit."""
    local, remote, plan = _providers_both({**HORIZONTAL, **ALGORITHM2}, cluster)
    assert "exact discrete" in remote.manifest["privacy"]["noise"]
    (event,) = plan.solver.releases()  # the last iteration's, recorded by the trainer
    assert event.exact and event.units.tolist() == list(range(5))
    steps = plan.solver.W_shared / (event.scale[:, None] / 2**20)  # on each provider's grid
    np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)
    accounted = ["epsilon_tight", "delta_tight", "epsilon_paper", "sigma"]
    pd.testing.assert_frame_equal(remote.metrics[accounted], local.metrics[accounted],
                                  check_exact=True)
    assert np.isfinite(remote.metrics["epsilon_tight"].iloc[-1])


def test_accounting_on_dask_sees_the_parties_rows_and_draws_exact_noise_there(tmp_path, cluster):
    """Deployment noise (exact discrete Gaussian from OS entropy) is drawn on the workers at
    the scale the coordinator's release events account for; the unit rows are checked from
    what each worker measured; the data-dependent calibration (which reads every block each
    epoch) stays in-process."""
    deploy = [c for c in ACCOUNTED if "replayable" not in c]
    local = run_experiment(load_config(_config(tmp_path, epochs=3), deploy), with_baselines=False)
    config = load_config(_config(tmp_path, epochs=3), [*deploy, "run.backend=dask"])
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        remote = run_experiment(config, plan=plan, with_baselines=False)
        (event,) = plan.solver.releases()  # the last epoch's, recorded by the coordinator
        # the unit rows accounting needs, measured by each party on its worker
        norms = backend.data(plan.first, 0).parties.max_row_norms
        assert len(norms) == 2 and all(0.99 < n <= 1 + 1e-12 for n in norms)
    assert "exact discrete" in remote.manifest["privacy"]["noise"]
    assert event.exact and event.units.tolist() == [0, 1]
    for share, scale in zip(plan.solver.shares, event.scale):  # on the grid of step scale/2^20
        steps = share / (scale / 2**20)
        np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)
    # the same scales and charges as in-process: the same epsilon, to the bit
    accounted = ["epsilon_tight", "delta_tight", "epsilon_paper", "sigma_party1", "sigma_party2"]
    pd.testing.assert_frame_equal(remote.metrics[accounted], local.metrics[accounted],
                                  check_exact=True)
    assert 0 < remote.metrics["epsilon_tight"].iloc[-1] <= 4.0
    prototype = [*ACCOUNTED, 'privacy.calibration="data_dependent"', "run.backend=dask"]
    with dask_backend(load_config(_config(tmp_path), prototype), cluster, None) as backend:
        with pytest.raises(ConfigError, match="run it in-process"):
            plan_run(backend.config, None, backend)


def test_the_coordinator_holds_no_block(tmp_path, cluster):
    config = load_config(_config(tmp_path, epochs=1), ["run.backend=dask"])
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        solver = plan.solver
        assert type(solver.parties).__name__ == "DaskParties"
        with pytest.raises(AttributeError):
            solver.solvers  # noqa: B018 (no BlockSolver in the coordinator)
        assert solver.parties.n_features == [6, 7]  # party 1 holds the intercept


def test_bad_clusters_are_one_line_errors_and_nothing_is_written(tmp_path, cluster):
    path = _config(tmp_path)
    out = tmp_path / "run"
    dask = ["--set", "run.backend=dask"]
    assert_one_line_error(vfl("run", "--config", path, "--out", out, *dask,
                              "--cluster", "tcp://127.0.0.1:9"),
                          "cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert_one_line_error(vfl("run", "--config", path, "--out", out, "--cluster", cluster),
                          '--cluster needs run.backend = "dask"')
    # three parties, two workers
    assert_one_line_error(vfl("run", "--config", path, "--out", out, *dask, "--cluster", cluster,
                              "--set", "partition.columns=[4,4,4]"),
                          "has 2 workers for 3 parties")
    assert not out.exists()
    # a sweep runs in-process: it refuses the backend instead of ignoring it
    assert_one_line_error(vfl("sweep", "--config", path, "--out", out, "--grid",
                              "solver.rho=1,2", *dask),
                          "run.backend = 'dask' runs through `vfl run`")
    assert not out.exists()


#: the units of each setting (their config after [data]), and the first one's label
OWN_DATA = {
    "parties": ("""[partition]
columns = [3, 3]
[solver]
epochs = 2
""", "party 1"),
    # DP-ADMM: 2 providers of 15 rows (and 10 public ones) on the two workers
    "providers": ("""[preprocessing]
row_clip = 1.0
[partition]
agents = 2
samples_per_agent = 15
public = 10
[objective]
lam = 0.17
reduction = "unit_mean"
regularizer = "half_l2sq"
[solver]
name = "dp_admm"
epochs = 2
[privacy]
epsilon_per_iteration = 0.5
noise = false
""", "provider 1"),
}


@pytest.mark.parametrize("units", sorted(OWN_DATA))
def test_a_worker_that_cannot_read_the_data_is_a_one_line_error(tmp_path, cluster, monkeypatch,
                                                               units):
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 6)), rng.choice([-1, 1], size=60)
    dump_svmlight_file(X, y, str(tmp_path / "tr.svm"))
    config = tmp_path / "own.toml"
    table, first = OWN_DATA[units]
    config.write_text(f"""
[data]
dataset = "libsvm"
options = {{ path = "{tmp_path / 'tr.svm'}", test_fraction = 0.25 }}
{table}
[run]
backend = "dask"
""")
    start = DaskBackend.start

    def hide_the_file(self, *args):  # the coordinator has read it; the workers cannot
        (tmp_path / "tr.svm").rename(tmp_path / "elsewhere.svm")
        return start(self, *args)

    monkeypatch.setattr(DaskBackend, "start", hide_the_file)
    out = tmp_path / "run"
    proc = vfl("run", "--config", config, "--out", out, "--cluster", cluster)
    assert_one_line_error(proc, f"{first} on worker tcp://127.0.0.1:", "cannot read its data",
                          "tr.svm")
    assert not out.exists()


@pytest.mark.parametrize("overrides, message", [
    (['solver.name="fdml_sgd"'], "fdml_sgd runs in-process only (the dask backend runs "
                                  "admm_sharing, consensus_admm, consensus_admm_perturbed, dgd"),
    (['run.backend="ray"'], "run.backend"),
])
def test_the_backend_is_validated_with_the_config(overrides, message):
    raw = {"data": {"dataset": "synthetic"}, "partition": {"columns": [5, 7]},
           "solver": {"name": "admm_sharing"}, "run": {"backend": "dask"}}
    from vfl.experiments.config import apply_overrides

    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        config_from_dict(apply_overrides(raw, overrides))
