"""``run.backend = "dask"`` on worker processes: a9a's bytes, killed workers, a lost party.

The papers' configs and Xiao et al.'s agents are in test_parties_slow_papers.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import SMALL, assert_one_line_error, vfl
from test_agents_dask import LDP_TOML
from test_parties import STACKING, STACKING_PRIVATE, assert_same_numbers
from threadpoolctl import threadpool_limits

from vfl.core.errors import PartyLostError
from vfl.experiments.config import apply_overrides, config_from_dict, load_config
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport import dask_units
from vfl.experiments.transport.dask_units import dask_backend

distributed = pytest.importorskip("dask.distributed")
pytestmark = pytest.mark.slow

TIMING = ["wall_time_s", "x_time_s", "z_time_s", "y_time_s"]
REPO = Path(__file__).resolve().parents[1]
A9A = REPO / "configs" / "a9a.toml"


def _cluster(n_workers: int):
    return distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
    )


@pytest.mark.data
def test_a9a_on_two_workers_sends_the_protocols_bytes(tmp_path, data_dir):
    """Without --cluster: a local cluster started for the run, one worker per party."""
    args = ["--config", A9A, "--data-dir", data_dir, "--epochs", "4", "--set", "solver.blas_threads=1", "-q"]
    assert vfl("run", *args, "--out", tmp_path / "local").returncode == 0
    proc = vfl("run", *args, "--out", tmp_path / "dask", "--set", "run.backend=dask")
    assert proc.returncode == 0, proc.stderr
    local = pd.read_csv(tmp_path / "local" / "metrics.csv").drop(columns=TIMING)
    remote = pd.read_csv(tmp_path / "dask" / "metrics.csv").drop(columns=TIMING)
    pd.testing.assert_frame_equal(remote, local, check_exact=True)
    transport = json.loads((tmp_path / "dask" / "manifest.json").read_text())["communication"]["transport"]
    # Algorithm 1 on a9a (N = 32,561, 2 parties): 4 messages of N float64 per epoch
    assert transport["protocol_bytes_per_epoch"] == 4 * 32_561 * 8 == 1_041_952
    # what TCP carried: the same, plus Dask's headers (about 0.2%)
    assert 1_041_952 < transport["bytes_per_epoch"] < 1.01 * 1_041_952
    # inference: the 16,281 test rows scored once, each party sending its shares
    assert transport["protocol_inference_bytes"] == 2 * 16_281 * 8 == 260_496
    assert 260_496 < transport["inference_bytes"] < 1.01 * 260_496


def _small(tmp_path, epochs, *overrides):
    path = tmp_path / "small.toml"
    path.write_text(SMALL.format(epochs=epochs) + "blas_threads = 1\n")
    return load_config(path, list(overrides))


def _kill_party(backend, m: int) -> None:
    worker = backend.slots[m].worker
    pid = backend.client.run(os.getpid, workers=[worker])[worker]
    assert pid != os.getpid()  # a worker process, never this one
    os.kill(pid, signal.SIGKILL)


def _stopped(config, cluster) -> tuple[str, str]:
    """The worker of the second unit (a party, a group) of ``config`` run on ``cluster``, and
    the one line that stops the run when that worker is killed at iteration 3."""
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        worker = backend.slots[1].worker

        def kill_the_second(row):
            if row["epoch"] == 3:
                _kill_party(backend, 1)

        with pytest.raises(PartyLostError) as caught:
            run_experiment(config, plan=plan, with_baselines=False, on_epoch=kill_the_second)
    return worker, str(caught.value)


def test_a_killed_workers_party_resumes_from_the_checkpoint_to_the_same_numbers(tmp_path):
    """Party 1's worker is killed mid-run; its nanny starts a new worker, the party is rebuilt
    there (its model from the last pull, its noise stream replayed) and the run ends as an
    uninterrupted in-process run does, to the bit."""
    noisy = ("privacy.sigma=0.2", 'privacy.form="output"')
    config = _small(tmp_path, 12, *noisy, "run.backend=dask", "run.party_wait=60")
    with _cluster(2) as cluster, dask_backend(config, cluster.scheduler_address, None) as backend:
        plan = plan_run(config, None, backend)
        first = dict(backend.describe()["parties"])
        killed = []

        def kill_at_epoch_5(row):
            if row["epoch"] == 5 and not killed:
                killed.append(_kill_party(backend, 0))

        remote = run_experiment(config, plan=plan, with_baselines=False, on_epoch=kill_at_epoch_5)
        moved = backend.describe()["parties"]
    assert killed and moved["party 1"] != first["party 1"] and moved["party 2"] == first["party 2"]
    local = run_experiment(_small(tmp_path, 12, *noisy), with_baselines=False)
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=TIMING), local.metrics.drop(columns=TIMING), check_exact=True
    )
    np.testing.assert_array_equal(remote.coef, local.coef)


class External:
    """`dask scheduler` and `dask worker` processes on this machine, as README's recipe starts
    them; the scheduler can be killed and started again on its port."""

    def __init__(self, tmp_path, workers: int, nanny: bool):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.dask = os.path.join(os.path.dirname(sys.executable), "dask")
        self.n, self.nanny, self.procs = workers, nanny, []
        self.start()

    def _spawn(self, *args):
        self.procs.append(
            subprocess.Popen([self.dask, *args, "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )
        return self.procs[-1]

    def start(self) -> None:
        self.scheduler = self._spawn("scheduler", "--port", str(self.port))
        for _ in range(100):
            if _listening(self.port):
                break
            time.sleep(0.1)
        if self.nanny:
            self._spawn("worker", self.address, "--nworkers", str(self.n), "--nthreads", "1")
        else:
            for _ in range(self.n):
                self._spawn("worker", self.address, "--no-nanny", "--nthreads", "1")
        if self.n:
            with distributed.Client(self.address) as client:
                client.wait_for_workers(self.n, timeout=60)

    def restart_scheduler(self) -> None:
        """Kill the scheduler (its workers close with it), then start it and the workers again."""
        self.scheduler.kill()
        self.scheduler.wait()
        self.start()

    def close(self) -> None:
        for proc in reversed(self.procs):
            proc.kill()
            proc.wait()


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def external_cluster(tmp_path):
    """A scheduler and two `dask worker --no-nanny` processes (a killed one stays dead)."""
    cluster = External(tmp_path, 2, nanny=False)
    yield cluster.address
    cluster.close()


def test_a_scheduler_restart_is_survived_when_the_workers_return(tmp_path):
    noisy = ("privacy.sigma=0.2", 'privacy.form="output"')
    config = _small(tmp_path, 10, *noisy, "run.backend=dask")
    cluster = External(tmp_path, 2, nanny=True)
    try:
        with dask_backend(config, cluster.address, None) as backend:
            plan = plan_run(config, None, backend)

            def restart_at_epoch_4(row):
                if row["epoch"] == 4 and not backend.recoveries:
                    cluster.restart_scheduler()

            remote = run_experiment(config, plan=plan, with_baselines=False, on_epoch=restart_at_epoch_4)
            faults = backend.recoveries
    finally:
        cluster.close()
    assert [f["party"] for f in faults] == [1, 2] and {f["epoch"] for f in faults} == {5}
    local = run_experiment(_small(tmp_path, 10, *noisy), with_baselines=False)
    np.testing.assert_array_equal(remote.coef, local.coef)
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=TIMING), local.metrics.drop(columns=TIMING), check_exact=True
    )


def test_a_party_whose_worker_does_not_come_back_stops_the_run_naming_it(tmp_path, external_cluster):
    config = _small(tmp_path, 10, "run.backend=dask", "run.party_wait=1")
    worker, line = _stopped(config, external_cluster)
    assert line == (
        f"party 2: its worker {worker} was lost at epoch 4 and no worker could take over its data within 1 s"
    )


# ---------------------------------------------------------------- FDML SGD --
@pytest.mark.data
def test_fdml_on_a9a_on_two_worker_processes_gives_the_in_process_numbers(data_dir):
    """Hu et al.'s Fig. 1 SGD baseline (batch 100, lr 0.3 / sqrt(t)), 3 epochs: each party's
    block and model on its own worker process, 326 mini-batch round trips per epoch; every
    column but the timings, the model and communication.csv to the bit."""
    config = load_config(REPO / "papers" / "hu" / "configs" / "fig1-a9a-sgd.toml", ["solver.epochs=3"])
    local = run_experiment(config, data_dir=data_dir, with_baselines=False)
    config = load_config(
        REPO / "papers" / "hu" / "configs" / "fig1-a9a-sgd.toml", ["solver.epochs=3", "run.backend=dask"]
    )
    with _cluster(2) as cluster, dask_backend(config, cluster.scheduler_address, data_dir) as backend:
        plan = plan_run(config, data_dir, backend)
        remote = run_experiment(config, data_dir=data_dir, plan=plan, with_baselines=False)
    assert_same_numbers(remote, local)
    # per epoch each party sends N = 32,561 outputs and receives as many derivatives
    transport = remote.manifest.dump()["communication"]["transport"]
    assert transport["protocol_bytes_per_epoch"] == 2 * 2 * 32_561 * 8
    assert transport["protocol_bytes"] < transport["bytes"] < 2 * transport["protocol_bytes"]


def test_an_fdml_party_whose_worker_is_lost_stops_the_run_naming_it(tmp_path, external_cluster):
    path = tmp_path / "fdml.toml"
    path.write_text(SMALL.format(epochs=10) + 'name = "fdml_sgd"\nbatch_size = 50\n')
    config = load_config(path, ["run.backend=dask"])
    worker, line = _stopped(config, external_cluster)
    assert line == (
        f"party 2: its worker {worker} was lost at epoch 4; a party's model (the "
        "sum of every step it took) is not rebuilt elsewhere, so the run stops"
    )


# ---------------------------------------------------------------- private stacking --
PRIVATE_STACKING = REPO / "papers" / "private_utility" / "configs" / "private-stacking-a9a.toml"


@pytest.mark.data
def test_private_stacking_on_a9a_survives_lost_workers_with_the_in_process_numbers(data_dir):
    """The private-utility config (a9a, epsilon 1) with replayable noise and two repeats on two
    worker processes. Party 2's worker is killed before the first round (the round runs on a
    new worker, the noise replayed there) and after it (the second repeat opens on another
    worker): every column but the timings, the model and communication.csv to the bit."""

    over = ["privacy.replayable_noise=true", "run.repeats=2"]
    config = load_config(PRIVATE_STACKING, [*over, "run.backend=dask", "run.party_wait=60"])
    # one BLAS thread in both runs, as on the workers: the local fits and the fusion are dense
    with threadpool_limits(1, user_api="blas"):
        local = run_experiment(load_config(PRIVATE_STACKING, over), data_dir=data_dir, with_baselines=False)
        with _cluster(2) as cluster, dask_backend(config, cluster.scheduler_address, data_dir) as backend:
            plan = plan_run(config, data_dir, backend)

            def kill(row):
                if row["repeat"] == 0:  # before its round (row 0) and after it (row 1)
                    _kill_party(backend, 0)

            remote = run_experiment(config, data_dir=data_dir, plan=plan, with_baselines=False, on_epoch=kill)
            faults = backend.recoveries
    assert [(f["party"], f["repeat"], f["round"]) for f in faults] == [(2, 0, 1), (2, 1, 1)]
    assert_same_numbers(remote, local)
    # the round on a9a: 32,561 labels down (one byte each); the model (57 values), the shares
    # (32,561) and the moments (2) up
    assert remote.metrics["bytes"].iloc[-1] == 32_561 + (57 + 32_561 + 2) * 8


def test_a_passive_party_lost_after_the_round_takes_back_its_released_model(tmp_path):
    """The rebuilt party's later messages (its clipped shares under its released model, for
    the training metrics and to score the test rows) are those of the lost one."""
    path = tmp_path / "stacking.toml"
    path.write_text(STACKING)
    config = load_config(path, [*STACKING_PRIVATE, "run.backend=dask", "run.party_wait=60"])
    with _cluster(3) as cluster, dask_backend(config, cluster.scheduler_address, None) as backend:
        plan = plan_run(config, None, backend)
        run_experiment(config, plan=plan, with_baselines=False)
        solver = plan.solver
        before = solver.train_margins(), solver.decision_function(plan.first.test)
        _kill_party(backend, 1)
        after = solver.train_margins(), solver.decision_function(plan.first.test)
        assert [(f["party"], f["round"]) for f in backend.recoveries] == [(3, 2)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------- Huang et al.'s providers --
#: 5 providers of 30 rows (and 40 public ones of the test part), Theorem 1's noise, accounting on
PROVIDERS_TOML = """
[data]
dataset = "synthetic"
options = { n_train = 400, n_test = 60, n_features = 7, seed = 2 }
[preprocessing]
row_clip = 1.0
[partition]
agents = 5
samples_per_agent = 30
public = 40
held_out = "test_part"
[objective]
lam = 0.17
reduction = "unit_mean"
regularizer = "half_l2sq"
[solver]
name = "dp_admm"
epochs = 12
[privacy]
epsilon_per_iteration = 0.5
delta = 1e-3
replayable_noise = true
"""


def _providers(*overrides, epochs=12):
    raw = tomllib.loads(PROVIDERS_TOML)
    raw["solver"]["epochs"] = epochs
    return config_from_dict(apply_overrides(raw, list(overrides)))


@pytest.mark.parametrize(
    "solver",
    [
        [],  # DP-ADMM (Algorithm 3)
        # Algorithm 2: the rebuilt group also solves its completed iterations again (warm start)
        ['solver.name="consensus_admm_perturbed"'],
    ],
)
def test_a_killed_workers_providers_resume_from_the_checkpoint_to_the_same_numbers(solver):
    """Providers 1-3's worker is killed mid-run; its nanny starts a new worker, the group is
    rebuilt there (its rows read again, its releases and duals from the trainer's checkpoint,
    the noise stream replayed) and the run ends as an uninterrupted in-process one, to the
    bit, privacy accounting included."""
    remote = _first_group_killed_after_iteration_5(
        _providers(*solver, "run.backend=dask", "run.party_wait=60"), "providers"
    )
    local = _same_metrics(remote, _providers(*solver))
    np.testing.assert_array_equal(remote.coef, local.coef)


def _first_group_killed_after_iteration_5(config, units: str):
    """``config`` on two worker processes, the first group's worker killed after iteration 5
    (its nanny starts a new one); checks that this group alone moved, rebuilt once, at
    iteration 6. Returns the result."""
    with _cluster(2) as cluster, dask_backend(config, cluster.scheduler_address, None) as backend:
        plan = plan_run(config, None, backend)
        first = dict(backend.describe()[units])
        killed = []

        def kill_at_iteration_5(row):
            if row["epoch"] == 5 and not killed:
                killed.append(_kill_party(backend, 0))

        remote = run_experiment(config, plan=plan, with_baselines=False, on_epoch=kill_at_iteration_5)
        moved = backend.describe()[units]
        faults = backend.recoveries
    one, other = first
    assert killed and moved[one] != first[one] and moved[other] == first[other]
    assert [(f["unit"], f["iteration"]) for f in faults] == [(one, 6)]
    return remote


def _same_metrics(remote, config):
    """Checks ``remote``'s metrics against an in-process run of ``config``, to the bit (but
    the timings); returns that run."""
    local = run_experiment(config, with_baselines=False)
    timing = [c for c in local.metrics.columns if c.endswith("_time_s")]
    pd.testing.assert_frame_equal(
        remote.metrics.drop(columns=timing), local.metrics.drop(columns=timing), check_exact=True
    )
    return local


def test_providers_whose_worker_does_not_come_back_stop_the_run_naming_them(external_cluster):
    config = _providers("run.backend=dask", "run.party_wait=1", epochs=10)
    worker, line = _stopped(config, external_cluster)
    assert line == (
        f"providers 4-5: their worker {worker} was lost at iteration 4 and no "
        "worker could take over their data within 1 s"
    )


@pytest.mark.parametrize("units", ["providers", "agents"])
def test_a_cluster_without_workers_for_the_groups_is_a_one_line_error(tmp_path, units, monkeypatch):
    monkeypatch.setattr(dask_units, "WORKER_WAIT", 0.25)  # no worker will join: waiting 2 s only idles
    cluster = External(tmp_path, 0, nanny=False)
    path = tmp_path / "units.toml"
    path.write_text({"providers": PROVIDERS_TOML, "agents": LDP_TOML}[units] + '[run]\nbackend = "dask"\n')
    try:
        out = tmp_path / "run"
        assert_one_line_error(
            vfl("run", "--config", path, "--out", out, "--cluster", cluster.address),
            f"the Dask cluster at {cluster.address} has 0 workers for 5 {units}: the {units} need at least one worker",
        )
        assert not out.exists()
    finally:
        cluster.close()


@pytest.mark.data
def test_the_readme_recipe_runs_as_written(tmp_path, data_dir):
    """The manual's two lines (docs/dask.md, on a free port): a scheduler and two workers,
    then a9a on them."""

    readme = (REPO / "docs" / "dask.md").read_text()
    block = re.search(r"<!-- dask recipe -->\s*```bash\n(.*?)```", readme, re.S).group(1)
    start, run = block.strip().splitlines()
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        free = str(sock.getsockname()[1])
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    cluster = subprocess.Popen(
        ["bash", "-c", start.replace("8786", free) + " wait"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            if _listening(int(free)):
                break
            time.sleep(0.1)
        with distributed.Client(f"tcp://127.0.0.1:{free}") as client:
            client.wait_for_workers(2, timeout=60)
        shutil.copytree(REPO / "configs", tmp_path / "configs")
        proc = vfl(*shlex.split(run.replace("8786", free))[1:], cwd=tmp_path, env={"VFL_DATA_DIR": data_dir})
        assert proc.returncode == 0, proc.stderr
        line = re.search(
            r"transport \(dask\): ([\d,]+) bytes per epoch .* the protocol "
            r"counts 1,041,952 ",
            proc.stdout,
        )
        assert line, proc.stdout
        assert 1_041_952 < int(line.group(1).replace(",", "")) < 1.01 * 1_041_952
    finally:
        os.killpg(cluster.pid, signal.SIGKILL)
        cluster.wait()
