"""``run.backend = "dask"`` refusing what it cannot do, one line each: a bad cluster, a worker
that cannot read its data; and a unit lost before a diagnostic, rebuilt to the in-process numbers.

The in-process (threaded, TCP) cluster of test_parties.py; its numbers-to-the-bit tests are there.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, vfl
from sklearn.datasets import dump_svmlight_file
from test_parties import (
    HORIZONTAL,
    STACKING,
    STACKING_PRIVATE,
    _config,
    _stacking,
    assert_same_numbers,
    cluster,  # noqa: F401 (the fixture)
)

from vfl.core.protocol import DIAGNOSTIC
from vfl.experiments.config import config_from_dict, load_config
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport import dask_units
from vfl.experiments.transport.dask_units import DaskUnits

distributed = pytest.importorskip("dask.distributed")


@pytest.mark.slow
def test_bad_clusters_are_one_line_errors_and_nothing_is_written(tmp_path, cluster, monkeypatch):
    # the cluster's two workers are up: the run's wait for a third (2 s) only idles the test
    monkeypatch.setattr(dask_units, "WORKER_WAIT", 0.25)
    path = _config(tmp_path)
    out = tmp_path / "run"
    dask = ["--set", "run.backend=dask"]
    assert_one_line_error(
        vfl("run", "--config", path, "--out", out, *dask, "--cluster", "tcp://127.0.0.1:9"),
        "cannot reach the Dask scheduler at tcp://127.0.0.1:9",
    )
    assert_one_line_error(
        vfl("run", "--config", path, "--out", out, "--cluster", cluster), '--cluster needs run.backend = "dask"'
    )
    # three parties, two workers (ADMM sharing, FDML)
    for solver in ([], ["--set", 'solver={name="fdml_sgd", epochs=2}']):
        assert_one_line_error(
            vfl(
                "run",
                "--config",
                path,
                "--out",
                out,
                *dask,
                "--cluster",
                cluster,
                "--set",
                "partition.columns=[4,4,4]",
                *solver,
            ),
            "has 2 workers for 3 parties: each party needs its own worker",
        )
    # private stacking: three passive parties, two workers (party 1 is the coordinator)
    stacking = tmp_path / "stacking.toml"
    stacking.write_text(STACKING)
    assert_one_line_error(
        vfl(
            "run",
            "--config",
            stacking,
            "--out",
            out,
            *dask,
            "--cluster",
            cluster,
            "--set",
            "partition.columns=[3,3,3,3]",
        ),
        "has 2 workers for 3 passive parties: each passive party needs its own worker (party 1 is the coordinator)",
    )
    assert not out.exists()
    # a sweep runs in-process: it refuses the backend instead of ignoring it
    assert_one_line_error(
        vfl("sweep", "--config", path, "--out", out, "--grid", "solver.rho=1,2", *dask),
        "run.backend = 'dask' runs through `vfl run`",
    )
    assert not out.exists()


#: the units of each setting (their config after [data]), and the first one's label
OWN_DATA = {
    "parties": (
        """[partition]
columns = [3, 3]
[solver]
epochs = 2
""",
        "party 1",
    ),
    # DP-ADMM: 2 providers of 15 rows (and 10 public ones) on the two workers
    "providers": (
        """[preprocessing]
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
""",
        "provider 1",
    ),
    # private stacking: party 1 is the coordinator, party 2 the first on a worker
    "passive parties": (
        """[preprocessing]
normalize_rows = true
[partition]
columns = [3, 3]
[solver]
name = "private_stacking"
epochs = 1
""",
        "party 2",
    ),
}


@pytest.mark.parametrize("units", sorted(OWN_DATA))
def test_a_worker_that_cannot_read_the_data_is_a_one_line_error(tmp_path, cluster, monkeypatch, units):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 6)), rng.choice([-1, 1], size=60)
    dump_svmlight_file(X, y, str(tmp_path / "tr.svm"))
    config = tmp_path / "own.toml"
    table, first = OWN_DATA[units]
    config.write_text(f"""
[data]
dataset = "libsvm"
options = {{ path = "{tmp_path / "tr.svm"}", test_fraction = 0.25 }}
{table}
[run]
backend = "dask"
""")
    start = DaskUnits.start

    def hide_the_file(self, *args):  # the coordinator has read it; the workers cannot
        (tmp_path / "tr.svm").rename(tmp_path / "elsewhere.svm")
        return start(self, *args)

    monkeypatch.setattr(DaskUnits, "start", hide_the_file)
    out = tmp_path / "run"
    proc = vfl("run", "--config", config, "--out", out, "--cluster", cluster)
    assert_one_line_error(proc, f"{first} on worker tcp://127.0.0.1:", "cannot read its data", "tr.svm")
    assert not out.exists()


#: a family's config, noise on and eval_every = 1 (issue 39's reproducer), and the row after
#: which its first unit is lost, before the next diagnostic
LOST_IN_A_DIAGNOSTIC = {
    # ADMM sharing: its journal keeps every round's sigma and the last pull alone
    "sharing": (
        lambda tmp_path: load_config(
            _config(tmp_path, epochs=6),
            ["privacy.sigma=0.3", 'privacy.form="output"', "run.eval_every=1", "run.repeats=2"],
        ),
        1,
    ),
    # DP-ADMM: its groups solve their journal's iterations again
    "providers": (
        lambda tmp_path: config_from_dict(
            {
                **HORIZONTAL,
                "privacy": {"epsilon_per_iteration": 0.5, "delta": 1e-3, "replayable_noise": True},
                "run": {"eval_every": 1},
            }
        ),
        1,
    ),
    # private stacking: a passive party takes back its released model (its training shares,
    # a diagnostic, are asked for once the round is done)
    "stacking": (lambda tmp_path: _stacking(tmp_path, STACKING_PRIVATE), 0),
}


def _killed(cluster) -> bool:
    return any(w.status.name in ("closed", "closing", "closing_gracefully") for w in cluster.workers.values())


@pytest.mark.parametrize("family", sorted(LOST_IN_A_DIAGNOSTIC))
def test_a_unit_lost_before_a_diagnostic_is_rebuilt_to_the_in_process_numbers(tmp_path, family):
    """Issue 39: a worker lost during the diagnostics used to replay a completed round from
    overwritten buffers and draw one noise vector too many; now its unit is rebuilt from its
    journal, and every number is the in-process one, to the bit."""
    from test_transport import _kill_during, _on_dask  # lazy: optional dependency (grpc, via test_services)

    make, after = LOST_IN_A_DIAGNOSTIC[family]
    config = make(tmp_path)
    local = run_experiment(config, with_baselines=False)
    dask = replace(config, run=replace(config.run, backend="dask", party_wait=30.0))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as cluster:
        on_epoch, kill = _kill_during(cluster, DIAGNOSTIC, after)

        def during(backend, kind):  # the worker that takes over comes after the loss
            kill(backend, kind)
            if _killed(cluster) and len(cluster.worker_spec) == 2:
                cluster.scale(3)

        remote, backend = _on_dask(dask, cluster, on_epoch=on_epoch, during=during)
    assert_same_numbers(remote, local)
    assert len(backend.recoveries) == 1
