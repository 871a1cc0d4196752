"""``run.backend = "dask"`` on worker processes: the papers' configs on three workers, and
Xiao et al.'s agents on a killed or lost worker (tests/test_parties_slow.py's clusters).
"""

from __future__ import annotations

import json
import tomllib

import pandas as pd
import pytest
from cli_helpers import vfl
from test_agents_dask import LDP_TOML
from test_parties import assert_same_communication
from test_parties_slow import (
    REPO,
    _cluster,
    _first_group_killed_after_iteration_5,
    _same_metrics,
    _stopped,
    external_cluster,  # noqa: F401 (the fixture)
)

from vfl.experiments.config import apply_overrides, config_from_dict

distributed = pytest.importorskip("dask.distributed")
pytestmark = pytest.mark.slow


# ------------------------------------------------- paper configs on worker processes --
#: config, overrides and the groups on three workers
PAPER_CONFIGS = {
    # Xiao et al.'s Fig. 2 / D-1 (LDP agents, 10 runs each)
    "ldp-admm-n10": ("ldp", [], ["agents 1-4", "agents 5-7", "agents 8-10"]),
    "ldp-gd-n10": ("ldp", [], ["agents 1-4", "agents 5-7", "agents 8-10"]),
    "ldp-admm-n10 secret sharing": ("ldp", [], ["agents 1-4", "agents 5-7", "agents 8-10"]),
    # Huang et al.'s Algorithms 1 (l1: FISTA, as Figs. 1-2 run it) and 2 (accounted), 10 runs
    "dp-admm-alg1": (
        "dp_admm",
        ["objective.regularizer=l1"],
        ["providers 1-34", "providers 35-67", "providers 68-100"],
    ),
    "dp-admm-alg2": ("dp_admm", [], ["providers 1-34", "providers 35-67", "providers 68-100"]),
}


@pytest.fixture(scope="module")
def three_workers():
    with _cluster(3) as cluster:
        yield cluster.scheduler_address


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(PAPER_CONFIGS))
def test_a_paper_config_on_three_worker_processes_gives_the_in_process_numbers(tmp_path, data_dir, three_workers, name):
    """A paper's config on worker processes (2 of its runs, 20 iterations: the transport
    does the same at every iteration): every CSV column (privacy columns included) to the
    bit, the units in three contiguous groups; Xiao et al.'s Algorithm 1 also on a complete
    graph with Algorithm 3's secret sharing routed by the coordinator."""
    paper, overrides, groups = PAPER_CONFIGS[name]
    config = REPO / "papers" / paper / "configs" / f"{name.split()[0]}.toml"
    if name.endswith("secret sharing"):
        text = (
            config.read_text()
            .replace('graph = "gnm"', 'graph = "complete"\nexchange = "secret_sharing"  #')
            .replace("edges = 20", "")
        )
        config = tmp_path / "secret-sharing.toml"
        config.write_text(text)
    args = [
        "--config",
        config,
        "--data-dir",
        data_dir,
        "-q",
        "--epochs",
        "20",
        *[a for o in [*overrides, "run.repeats=2"] for a in ("--set", o)],
    ]
    assert vfl("run", *args, "--out", tmp_path / "local").returncode == 0
    proc = vfl("run", *args, "--out", tmp_path / "dask", "--set", "run.backend=dask", "--cluster", three_workers)
    assert proc.returncode == 0, proc.stderr
    for csv in ("metrics.csv", "metrics_repeats.csv", "communication.csv"):
        local = pd.read_csv(tmp_path / "local" / csv)
        remote = pd.read_csv(tmp_path / "dask" / csv)
        if csv == "communication.csv":
            assert_same_communication(remote, local)
            continue
        timing = [c for c in local.columns if "time_s" in c]
        pd.testing.assert_frame_equal(remote.drop(columns=timing), local.drop(columns=timing), check_exact=True)
    backend = json.loads((tmp_path / "dask" / "manifest.json").read_text())["backend"]
    assert list(backend["agents" if paper == "ldp" else "providers"]) == groups


def _ldp(*overrides, network=None):
    raw = tomllib.loads(LDP_TOML)
    raw["solver"]["epochs"] = 10
    raw["privacy"] = {"delta": 1e-5, "replayable_noise": True}
    if network is not None:
        raw["network"] = network
    return config_from_dict(apply_overrides(raw, list(overrides)))


@pytest.mark.parametrize("exchange", ["plain", "secret_sharing"])
def test_a_killed_workers_agents_are_rebuilt_by_replay_to_the_same_numbers(exchange):
    """Agents 1-3's worker is killed mid-run; its nanny starts a new worker, the group is
    rebuilt there (its samples read again, the completed iterations run again from what the
    coordinator delivered, each release checked against the one received) and the run ends
    as an uninterrupted in-process one, to the bit: the errors, the realized privacy losses,
    the accounted epsilon and communication.csv."""
    network = None if exchange == "plain" else {"graph": "complete", "nodes": 5, "exchange": "secret_sharing"}
    remote = _first_group_killed_after_iteration_5(
        _ldp("run.backend=dask", "run.party_wait=60", network=network), "agents"
    )
    assert list(remote.manifest.dump()["backend"]["agents"]) == ["agents 1-3", "agents 4-5"]
    local = _same_metrics(remote, _ldp(network=network))
    assert {"privacy_loss_max", "epsilon_tight"} <= set(local.metrics.columns)
    assert_same_communication(remote.communication, local.communication)


@pytest.mark.parametrize("noise", ["deployment", "replayable"])
def test_agents_whose_worker_is_lost_stop_the_run_naming_them(external_cluster, noise):
    """A deployment run's noise cannot be drawn again: its agents are not rebuilt. A
    replayable run's are, if a worker comes back within run.party_wait."""
    config = _ldp(
        "run.backend=dask", "run.party_wait=1", f"privacy.replayable_noise={str(noise == 'replayable').lower()}"
    )
    worker, line = _stopped(config, external_cluster)
    assert (
        line
        == {
            "deployment": f"agents 4-5: their worker {worker} was lost at iteration 4; their noise "
            "came from OS entropy (privacy.replayable_noise = false) and cannot be "
            "drawn again, so their state (duals, streams, realized privacy loss) is "
            "not rebuilt and the run stops",
            "replayable": f"agents 4-5: their worker {worker} was lost at iteration 4 and no "
            "worker could take over their data within 1 s",
        }[noise]
    )
