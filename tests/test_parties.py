"""``run.backend = "dask"``: the parties of ADMM sharing and FDML SGD, private stacking's
passive parties and DP-ADMM's providers as actors on their own Dask workers.

One small in-process (threaded, TCP) cluster serves every test here; its refusals (a bad
cluster, unreadable data) and a unit lost before a diagnostic are in ``test_parties_errors.py``; the
process clusters, a9a and the killed workers in ``test_parties_slow.py``; what needs no
cluster (the config's refusals, the declared inference) in ``test_parties_config.py``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from cli_helpers import SMALL

from vfl.core.errors import ConfigError
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.dask_units import dask_backend

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as c:
        yield c.scheduler_address


def _config(tmp_path, epochs=8, extra=""):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.format(epochs=epochs) + "blas_threads = 1\n" + extra)
    return path


def _run(config, cluster=None):
    """The run's records, and its plan when it ran on the Dask ``cluster``."""
    if cluster is None:
        return run_experiment(config, with_baselines=False), None
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        return run_experiment(config, plan=plan, with_baselines=False), plan


def assert_same_numbers(remote, local) -> None:
    """Every metrics column but the timings (each repeat's too), the model and
    communication.csv, to the bit."""
    timing = [c for c in local.metrics.columns if c.endswith("time_s")]
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=timing), local.metrics.drop(columns=timing), check_exact=True
    )
    if local.repeats is not None:
        pd.testing.assert_frame_equal(
            remote.repeats.drop(columns=timing), local.repeats.drop(columns=timing), check_exact=True
        )
    np.testing.assert_array_equal(remote.coef, local.coef)
    assert_same_communication(remote.communication, local.communication)


def assert_same_communication(remote: pd.DataFrame, local: pd.DataFrame) -> None:
    """communication.csv to the bit, but for the diagnostics' messages, which depend on the
    placement (a group answers in one message, a request goes to each host): of those, the
    bytes the units returned."""

    def replies(c):
        return c.query("phase == 'diagnostics' and unit == 0").groupby("repeat")["received_bytes"].sum().tolist()

    assert replies(remote) == replies(local)
    remote, local = (c[c["phase"] != "diagnostics"].reset_index(drop=True) for c in (remote, local))
    pd.testing.assert_frame_equal(remote, local)


#: ADMM sharing's accounting mode (row relation, sigma calibrated for epsilon 4)
ACCOUNTED = [
    "preprocessing.normalize_rows=true",
    "privacy.delta=1e-5",
    "privacy.epsilon=4.0",
    'privacy.form="output"',
    'privacy.neighbours="row"',
    "privacy.b1=1.0",
    "privacy.clip=1.0",
    "privacy.input_clip=2.0",
    "privacy.replayable_noise=true",
]


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # Algorithm 1
        # noise drawn on the workers from each party's stream, parties in turn, a ball
        ["privacy.sigma=0.3", 'privacy.form="output"', 'solver.order="gauss_seidel"', "run.repeats=2"],
        [
            'solver.form="boyd"',
            "privacy.sigma=0.1",
            'privacy.form="variable_whitened"',
            'solver.rho_schedule="spectral"',
        ],
        # accounting mode: the workers check their rows, the coordinator records the releases
        ACCOUNTED,
    ],
)
def test_the_dask_backend_gives_the_in_process_numbers_to_the_bit(tmp_path, cluster, overrides):
    path = _config(tmp_path)
    local, _ = _run(load_config(path, overrides))
    remote, _ = _run(load_config(path, [*overrides, "run.backend=dask"]), cluster)
    assert_same_numbers(remote, local)
    # the parties were on two workers; the transport carried the protocol's bytes plus headers
    assert len(set(remote.manifest.dump()["backend"]["parties"].values())) == 2
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes"] == remote.metrics["bytes"].iloc[-1] * remote.config.run.repeats
    assert t["protocol_bytes"] <= t["bytes"] <= t["protocol_bytes"] * 1.5
    # scoring the 100 test rows: each party sends its 100 shares B_m x_m, apart from training
    scored = remote.communication.query("phase == 'inference'")
    assert scored.query("unit > 0")["sent_bytes"].tolist() == [100 * 8, 100 * 8] * remote.config.run.repeats
    assert remote.manifest.dump()["result"]["inference_bytes"] == t["protocol_inference_bytes"] == 1600
    assert 1600 <= t["inference_bytes"] <= 1600 + 2 * 1200  # plus Dask's headers
    # issue 39: communication.csv has the diagnostics too (the exact values asked for and
    # every scoring but the last, for metrics.csv); with the inference rows they are what
    # the transport's diagnostics and inference phases carried (payload)
    hub = remote.communication.query("unit == 0")
    carried = lambda phase: int(
        (
            hub.query(f"phase == '{phase}'")[  # noqa: E731
                ["sent_bytes", "received_bytes"]
            ]
        )
        .to_numpy()
        .sum()
    )
    phases = t["phases"]
    assert carried("diagnostics") > 0
    assert (
        carried("diagnostics") + carried("inference")
        == phases["diagnostics"]["payload_bytes"] + phases["inference"]["payload_bytes"]
    )


#: FDML SGD (Hu et al.'s baseline, Section 5): 300 rows in 6 mini-batches of 50 per epoch
FDML = 'name = "fdml_sgd"\nbatch_size = 50\n'


def _fdml(tmp_path, overrides=(), epochs=5):
    path = tmp_path / "fdml.toml"
    path.write_text(SMALL.format(epochs=epochs) + FDML)
    return load_config(path, list(overrides))


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # FDML on 2 parties, lr / sqrt(t)
        # FDML's DP variant: each party's output noise drawn on its worker; step decay; the last
        # batch's derivatives delivered with a diagnostic every 2 epochs, or with the next epoch
        [
            "privacy.sigma=0.2",
            'solver.lr_schedule="step"',
            "solver.lr_step_epochs=2",
            "run.eval_every=2",
            "run.repeats=2",
            "solver.init_scale=0.3",
        ],
        # a batch that does not divide N (300 = 4 x 70 + 20), no initial draw, constant lr
        ["solver.batch_size=70", "solver.init_scale=0.0", 'solver.lr_schedule="constant"'],
    ],
)
def test_fdml_on_dask_gives_the_in_process_numbers_to_the_bit(tmp_path, cluster, overrides):
    """Each party's block, model and noise on its worker, the labels with the coordinator:
    per mini-batch B outputs up and B derivatives down, as in-process, to the bit."""
    local, _ = _run(_fdml(tmp_path, overrides))
    remote, plan = _run(_fdml(tmp_path, [*overrides, "run.backend=dask"]), cluster)
    assert type(plan.solver.parties.session.units).__name__ == "DaskUnits"
    assert_same_numbers(remote, local)
    assert len(set(remote.manifest.dump()["backend"]["parties"].values())) == 2
    # per epoch each party sends N = 300 outputs and receives 300 derivatives (float64)
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes_per_epoch"] == 2 * 2 * 300 * 8
    # TCP carries them and, per message, Dask's headers (a mini-batch is only 400 bytes)
    assert t["protocol_bytes"] < t["bytes"] < 4 * t["protocol_bytes"]
    assert remote.manifest.dump()["result"]["inference_bytes"] == t["protocol_inference_bytes"] == 2 * 100 * 8


#: private stacking on 3 parties: party 1 (4 columns and the labels) is the coordinator,
#: parties 2 and 3 go to the two workers
STACKING = """name = "stacking"
[data]
dataset = "synthetic"
options = { n_train = 300, n_test = 100, n_features = 12, seed = 3 }
[preprocessing]
normalize_rows = true
[partition]
columns = [4, 4, 4]
[solver]
name = "private_stacking"
epochs = 1
"""
#: its private mechanism, replayable (a simulation: the numbers can be compared)
STACKING_PRIVATE = ["privacy.delta=1e-5", "privacy.epsilon=2.0", "privacy.replayable_noise=true"]


def _stacking(tmp_path, overrides=()):
    path = tmp_path / "stacking.toml"
    path.write_text(STACKING)
    return load_config(path, list(overrides))


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # non-private stacking: the exact shares
        # the model, the shares and the moments released; two repeats
        [*STACKING_PRIVATE, "run.repeats=2"],
        # the model alone (the product of experts), its noise from the l2 weight's rule
        [*STACKING_PRIVATE, "privacy.split=[1.0, 0.0, 0.0]", "privacy.model_noise=0.3"],
        # two parties: one passive party on one of the two workers
        [*STACKING_PRIVATE, "partition.columns=[5, 7]", "privacy.split=[0.3, 0.6, 0.1]"],
    ],
)
def test_private_stacking_on_dask_gives_the_in_process_numbers_to_the_bit(tmp_path, cluster, overrides):
    """Each passive party's local fit and releases on its worker, its noise drawn there from
    the streams the in-process run draws it from; party 1 (the coordinator: the labels and
    its own block) records the release events and fits the fusion: to the bit."""
    local, _ = _run(_stacking(tmp_path, overrides))
    remote, plan = _run(_stacking(tmp_path, [*overrides, "run.backend=dask"]), cluster)
    assert type(plan.solver.passives.session.units).__name__ == "DaskUnits"
    M = len(plan.config.partition.columns)
    assert plan.solver.D1.shape == plan.first.data.blocks[0].shape  # party 1's block only
    assert_same_numbers(remote, local)
    assert list(remote.manifest.dump()["backend"]["parties"]) == [f"party {m}" for m in range(2, M + 1)]
    assert len(set(remote.manifest.dump()["backend"]["parties"].values())) == M - 1
    # the round: N = 300 labels down (one byte each), the model and the releases up
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes"] == remote.metrics["bytes"].iloc[-1] * remote.config.run.repeats
    passive = remote.communication.query("phase == 'training' and epoch == 1 and unit > 1")
    assert passive["received_bytes"].tolist() == [300] * (M - 1) * remote.config.run.repeats
    assert t["protocol_bytes"] < t["bytes"] < t["protocol_bytes"] + 8000 * (M - 1)
    # scoring: each passive party sends its 100 clipped shares of the test rows
    assert remote.manifest.dump()["result"]["inference_bytes"] == t["protocol_inference_bytes"] == (M - 1) * 100 * 8


def test_private_stacking_on_dask_draws_exact_noise_on_the_workers(tmp_path, cluster):
    """A deployment run (no replayable noise): the coordinator records every release, each
    passive party draws exact discrete Gaussians on its worker at the event's scale (grown
    for the grid); epsilon is the in-process one to the bit."""
    deploy = ["privacy.delta=1e-5", "privacy.epsilon=2.0"]
    local, _ = _run(_stacking(tmp_path, deploy))
    remote, plan = _run(_stacking(tmp_path, [*deploy, "run.backend=dask"]), cluster)
    assert "exact discrete" in remote.manifest.dump()["privacy"]["noise"]
    events = plan.solver.releases()
    assert [e.units.tolist() for e in events] == [[1], [2], [1, 2], [1, 2]]  # models, S, Q
    assert all(e.exact for e in events)
    # the shares on the grid of step scale / 2^20 of their event
    for share, scale in zip(plan.solver._shares.T, events[2].scale):
        steps = share / (scale / 2**20)
        np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)
    accounted = ["epsilon_tight", "delta_tight", "sigma_model_party2", "sigma_share_party3"]
    pd.testing.assert_frame_equal(remote.metrics[accounted], local.metrics[accounted], check_exact=True)
    assert 1.99 < remote.metrics["epsilon_tight"].iloc[-1] <= 2.0  # the target


#: DP-ADMM (Huang et al. 2019, Algorithm 3) on 5 providers: on the two workers, groups 1-3 and 4-5
HORIZONTAL = {
    "data": {"dataset": "synthetic", "options": {"n_train": 400, "n_test": 60, "n_features": 7, "seed": 2}},
    "preprocessing": {"row_clip": 1.0},
    "partition": {"agents": 5, "samples_per_agent": 30, "public": 40, "held_out": "test_part"},
    "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "solver": {"name": "dp_admm", "epochs": 8},
}
#: Huang et al.'s Algorithm 2 at its paper's sigma: its releases are accounted
ALGORITHM2 = {
    "solver": {"name": "consensus_admm_perturbed", "epochs": 6},
    "privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3},
}


def _providers_both(raw, cluster):
    """``raw`` run in-process and with its providers on the two workers."""
    local = run_experiment(config_from_dict(raw), with_baselines=False)
    config = config_from_dict({**raw, "run": {**raw.get("run", {}), "backend": "dask"}})
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        assert type(plan.solver.providers.session.units).__name__ == "DaskUnits"
        with pytest.raises(AttributeError):
            plan.solver.A  # noqa: B018 (the trainer holds no provider's rows)
        remote = run_experiment(config, plan=plan, with_baselines=False)
    return local, remote, plan


@pytest.mark.parametrize(
    "extra",
    [
        # Theorem 1's noise, drawn on the workers, accounted by the trainer; two repeats (splits)
        {"privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3, "replayable_noise": True}, "run": {"repeats": 2}},
        # Theorem 3's l1 schedule without noise
        {
            "privacy": {"noise": False, "epsilon_per_iteration": 0.5},
            "objective": {**HORIZONTAL["objective"], "regularizer": "l1"},
        },
        # Algorithm 1, l1: FISTA (the paper configs' local solver), each provider stopping at
        # its own tolerance in its group
        {
            "solver": {"name": "consensus_admm", "epochs": 6, "local_solver": "fista", "inner_tol": 1e-8},
            "objective": {**HORIZONTAL["objective"], "regularizer": "l1"},
        },
        # Algorithm 2, l2 (Newton): its noise drawn on the workers, accounted by the trainer
        {**ALGORITHM2, "privacy": {**ALGORITHM2["privacy"], "replayable_noise": True}},
    ],
)
def test_huang_providers_on_dask_give_the_in_process_numbers_to_the_bit(cluster, extra):
    local, remote, _ = _providers_both({**HORIZONTAL, **extra}, cluster)
    assert_same_numbers(remote, local)
    assert list(remote.manifest.dump()["backend"]["providers"]) == ["providers 1-3", "providers 4-5"]
    # each provider sends d = 7 values and receives w (7 values) per iteration
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes_per_epoch"] == 2 * 5 * 7 * 8 == 560
    assert t["bytes"] > 0  # (w reaches a group in one message: TCP may carry less payload)
    assert remote.manifest.dump()["result"]["inference_bytes"] == 0  # the trainer holds the model


def test_algorithm2_deployment_noise_is_drawn_by_each_groups_exact_sampler(cluster):
    """Without replayable noise, Algorithm 2's providers draw exact discrete Gaussian noise
    on their workers, at the (grid-grown) scale of the trainer's release events: the same
    scales and sensitivities as in-process, so the same epsilon to the bit."""
    local, remote, plan = _providers_both({**HORIZONTAL, **ALGORITHM2}, cluster)
    assert "exact discrete" in remote.manifest.dump()["privacy"]["noise"]
    (event,) = plan.solver.releases()  # the last iteration's, recorded by the trainer
    assert event.exact and event.units.tolist() == list(range(5))
    steps = plan.solver.W_shared / (event.scale[:, None] / 2**20)  # on each provider's grid
    np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)
    accounted = ["epsilon_tight", "delta_tight", "epsilon_paper", "sigma"]
    pd.testing.assert_frame_equal(remote.metrics[accounted], local.metrics[accounted], check_exact=True)
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
        norms = backend.data(plan.first, 0).units.max_row_norms
        assert len(norms) == 2 and all(0.99 < n <= 1 + 1e-12 for n in norms)
    assert "exact discrete" in remote.manifest.dump()["privacy"]["noise"]
    assert event.exact and event.units.tolist() == [0, 1]
    for share, scale in zip(plan.solver.shares, event.scale):  # on the grid of step scale/2^20
        steps = share / (scale / 2**20)
        np.testing.assert_allclose(steps, np.rint(steps), rtol=0, atol=1e-6)
    # the same scales and charges as in-process: the same epsilon, to the bit
    accounted = ["epsilon_tight", "delta_tight", "epsilon_paper", "sigma_party1", "sigma_party2"]
    pd.testing.assert_frame_equal(remote.metrics[accounted], local.metrics[accounted], check_exact=True)
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
        assert type(solver.parties.session.units).__name__ == "DaskUnits"
        with pytest.raises(AttributeError):
            solver.solvers  # noqa: B018 (no BlockSolver in the coordinator)
        assert solver.parties.n_features == [6, 7]  # party 1 holds the intercept
