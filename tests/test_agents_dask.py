"""``run.backend = "dask"`` for the LDP solvers (Xiao et al.): groups of agents on Dask workers.

One small in-process (threaded, TCP) cluster of two workers serves every test here, on
a synthetic network of 5 agents (groups 1-3 and 4-5); the paper configs on worker
processes and a killed worker are in ``test_parties_slow.py``.
"""

from __future__ import annotations

import dataclasses
import tomllib

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, vfl
from test_parties import (
    assert_same_numbers,
    cluster,  # noqa: F401 (the same small threaded cluster, per module)
)

from vfl.core.errors import PartyLostError
from vfl.experiments.config import config_from_dict
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.dask_units import dask_backend

distributed = pytest.importorskip("dask.distributed")

#: 5 agents on a G(5, 6) graph, 10 samples each (unit rows, {0,1} labels: B_inf enforced)
LDP_TOML = """
[data]
dataset = "synthetic"
options = { n_train = 150, n_test = 40, n_features = 5, seed = 3 }
[preprocessing]
normalize_rows = true
[partition]
samples_per_agent = 10
pool = "train+test"
test = 20
[network]
graph = "gnm"
nodes = 5
edges = 6
[objective]
lam = 5.0
reduction = "unit_mean"
regularizer = "half_l2sq"
[solver]
name = "ldp_admm"
epochs = 6
"""


NETWORK = {k: v for k, v in tomllib.loads(LDP_TOML).items() if k != "solver"}


def _raw(name, epochs=6, privacy=None, run=None, **solver):
    return {
        **NETWORK,
        "solver": {"name": name, "epochs": epochs, **solver},
        **({"privacy": privacy} if privacy else {}),
        "run": {**(run or {})},
    }


def _both(raw, cluster):
    local = run_experiment(config_from_dict(raw), with_baselines=False)
    config = config_from_dict({**raw, "run": {**raw["run"], "backend": "dask"}})
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        assert type(plan.solver.agents.session.units).__name__ == "DaskUnits"
        with pytest.raises(AttributeError):  # the solver holds no agent's samples
            plan.solver.agents.group  # noqa: B018
        remote = run_experiment(config, plan=plan, with_baselines=False)
    return local, remote


@pytest.mark.parametrize(
    "raw",
    [
        # Algorithm 1: random weights and Laplace noise drawn on the workers, the releases
        # accounted by the solver (privacy.delta); two repeats (graphs, splits)
        _raw("ldp_admm", privacy={"delta": 1e-5, "replayable_noise": True}, run={"repeats": 2}),
        # the exact step (12): per-agent Newton on each worker
        _raw("random_penalty_admm"),
        # Algorithm 2 (farthest pairs across the groups' boundary) and [43]'s l2 perturbation
        _raw("ldp_gd", privacy={"replayable_noise": True}),
        _raw("pp_admm", privacy={"mechanism": "native", "replayable_noise": True}),
    ],
    ids=["ldp_admm", "random_penalty_admm", "ldp_gd", "pp_admm"],
)
def test_ldp_agents_on_dask_give_the_in_process_numbers_to_the_bit(cluster, raw):
    local, remote = _both(raw, cluster)
    assert_same_numbers(remote, local)
    assert list(remote.manifest.dump()["backend"]["agents"]) == ["agents 1-3", "agents 4-5"]
    # every agent sends x_i (5 values) to each neighbour: 2 |E| = 12 messages per exchange,
    # x^0's and the 6 iterations'; the transport carried the groups' share of them and more
    assert remote.metrics["bytes"].iloc[-1] == 7 * 12 * 5 * 8
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes"] == 7 * 480 * remote.config.run.repeats
    assert t["bytes"] > 0
    assert remote.manifest.dump()["result"]["inference_bytes"] == 0  # each agent scores alone


#: Algorithm 3's exchange: the same 5 agents on a complete graph, the sums secret-shared
SHARING = {**NETWORK, "network": {"graph": "complete", "nodes": 5, "exchange": "secret_sharing"}}


@pytest.mark.parametrize(
    "raw",
    [
        # Algorithm 1 with Laplace noise, accounted; two repeats
        {
            **_raw("ldp_admm", privacy={"delta": 1e-5, "replayable_noise": True}, run={"repeats": 2}),
            "network": SHARING["network"],
        },
        # DGD, and [43]'s exact step with the l2 perturbation, in a 32-bit ring
        {**_raw("dgd"), "network": SHARING["network"]},
        {
            **_raw(
                "pp_admm", privacy={"mechanism": "native", "replayable_noise": True}, ss_bits=32, ss_fractional_bits=20
            ),
            "network": SHARING["network"],
        },
    ],
    ids=["ldp_admm", "dgd", "pp_admm"],
)
def test_secret_sharing_through_the_coordinator_gives_the_in_process_numbers(cluster, raw):
    """Algorithm 3's rounds routed by the coordinator between the groups (agents 1-3, 4-5):
    the metrics and every count of communication.csv to the bit."""
    local, remote = _both(raw, cluster)
    assert_same_numbers(remote, local)
    repeats = remote.config.run.repeats
    # each exchange: every agent sends a share (5 ring elements of 8 bytes) to each of the
    # 4 others, then its partial sum to each of them: 2 * 20 messages of 40 bytes; x^0's
    # and the 6 iterations' exchanges
    assert remote.metrics["messages"].iloc[-1] == 7 * 2 * 20
    assert remote.metrics["bytes"].iloc[-1] == 7 * 2 * 20 * 5 * 8
    t = remote.manifest.dump()["communication"]["transport"]
    assert t["protocol_bytes"] == 7 * 1600 * repeats
    # what crossed TCP: the shares between the groups (2 * 3 * 2 of 5 values each way), the
    # partial sums, the releases and the headers
    assert t["bytes"] > 7 * 2 * 12 * 40 * repeats


def test_bad_inputs_are_one_line_errors_and_nothing_is_written(tmp_path, cluster):
    path = tmp_path / "ldp.toml"
    path.write_text(LDP_TOML)
    out = tmp_path / "run"
    dask = ["--set", "run.backend=dask"]
    assert_one_line_error(
        vfl("run", "--config", path, "--out", out, *dask, "--cluster", "tcp://127.0.0.1:9"),
        "cannot reach the Dask scheduler at tcp://127.0.0.1:9",
    )
    assert not out.exists()


@pytest.mark.parametrize("network", [NETWORK["network"], SHARING["network"]], ids=["plain", "secret_sharing"])
def test_a_group_rebuilt_mid_run_by_replay_gives_the_same_numbers(cluster, network):
    """Agents 1-3 are rebuilt on a new actor after iteration 3, as after a lost worker (a
    killed worker process is in test_parties_slow.py): its journal's iterations run again
    from what the coordinator delivered, and the run ends with the in-process numbers. A
    replay whose release differs from the one received by a bit stops the run."""

    raw = {**_raw("ldp_admm", privacy={"delta": 1e-5, "replayable_noise": True}), "network": network}
    local = run_experiment(config_from_dict(raw), with_baselines=False)
    config = config_from_dict({**raw, "run": {"backend": "dask"}})
    with dask_backend(config, cluster, None) as backend:
        plan = plan_run(config, None, backend)
        session, slot = plan.solver.agents.session, backend.slots[0]
        first = slot.actor

        def rebuild(row):
            if row["epoch"] == 3:  # a new actor where the old one was, then its journal
                slot.actor = backend._actor(
                    slot.label, slot.worker, backend._submit(slot.label, slot.first, slot.stop, slot.worker)
                )
                session.opened[0] = backend._open(session, 0)
                session._replay(0, slot.worker)

        remote = run_experiment(config, plan=plan, with_baselines=False, on_epoch=rebuild)
        assert slot.actor is not first and session.done == [6, 6]
        assert_same_numbers(remote, local)
        journal = session.journal[0]
        at = [i for i, e in enumerate(journal) if e.call.name == "update"][1]
        X = journal[at].reply.X.copy()
        X[0, 0] = np.nextafter(X[0, 0], np.inf)  # one bit of one release
        journal[at] = journal[at]._replace(reply=dataclasses.replace(journal[at].reply, X=X))
        slot.actor = backend._actor(
            slot.label, slot.worker, backend._submit(slot.label, slot.first, slot.stop, slot.worker)
        )
        session.opened[0] = backend._open(session, 0)
        with pytest.raises(
            PartyLostError, match="agents 1-3: rebuilt on worker .*, their release of iteration 2 differs"
        ):
            session._replay(0, slot.worker)
