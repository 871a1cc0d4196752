"""Issue 39's fault matrix: a unit lost before any call never changes a number.

For every solver family on the Dask backend (ADMM sharing, FDML SGD, private stacking,
DP-ADMM's providers, the LDP agents), without noise and with replayable noise, the
worker of the family's first unit is killed just before one of its protocol's calls (the
protocol's rounds, each diagnostic and each inference call: ``Protocol.calls``, so a new
call or a new family joins the matrix by being declared). Every case ends with results
bit-identical to the undisturbed in-process run, or with one line naming the unit (the
CLI's exit 2): a silent difference is never an outcome.

Deployment noise (exact, never replayed) cannot be compared to another run: a lost unit's
released rounds are installed from their recorded replies, never drawn again
(``test_transport.py``'s hand-made journals, ``replayable=False``).

The matrix is a table (:data:`MATRIX`: backend, family, noise, call, outcome): another
Units backend (a party's own service) joins it by adding its rows and its ``kill``.
One small threaded cluster serves the whole module; each kill is followed by a new
worker, so the next case finds two again.
"""

from __future__ import annotations

import importlib
from dataclasses import replace

import pytest
from test_parties import assert_same_numbers

from vfl.core.errors import PartyLostError, VFLError
from vfl.core.inprocess import InProcessUnits
from vfl.core.protocol import CONTROL
from vfl.experiments.config import config_from_dict
from vfl.experiments.run_plan import plan_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.transport.dask_units import dask_backend

distributed = pytest.importorskip("dask.distributed")

pytestmark = pytest.mark.slow

SMALL = {
    "data": {"dataset": "synthetic", "options": {"n_train": 120, "n_test": 40, "n_features": 8, "seed": 1}},
    "preprocessing": {"normalize_rows": True},
    "partition": {"columns": [4, 4]},
    "run": {"eval_every": 1},
}
HORIZONTAL = {
    "data": {"dataset": "synthetic", "options": {"n_train": 200, "n_test": 40, "n_features": 5, "seed": 2}},
    "preprocessing": {"row_clip": 1.0},
    "partition": {"agents": 4, "samples_per_agent": 20, "public": 20, "held_out": "test_part"},
    "objective": {"lam": 0.17, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "run": {"eval_every": 1},
}
NETWORK = {
    "data": {"dataset": "synthetic", "options": {"n_train": 120, "n_test": 30, "n_features": 4, "seed": 3}},
    "preprocessing": {"normalize_rows": True},
    "partition": {"samples_per_agent": 10, "pool": "train+test", "test": 20},
    # Algorithm 3's secret sharing: its second round (partial_sums) is in the matrix
    "network": {"graph": "complete", "nodes": 4, "exchange": "secret_sharing"},
    "objective": {"lam": 5.0, "reduction": "unit_mean", "regularizer": "half_l2sq"},
    "run": {"eval_every": 1},
}


def _with(base, **sections):
    return {**base, **{k: {**base.get(k, {}), **v} for k, v in sections.items()}}


#: family -> (its protocol, {noise: raw config}); every noise replayable (a simulation)
FAMILIES = {
    "sharing": (
        "vfl.admm.sharing.party:SHARING_PROTOCOL",
        {
            "none": _with(SMALL, solver={"name": "admm_sharing", "epochs": 3}),
            "noise": _with(
                SMALL, solver={"name": "admm_sharing", "epochs": 3}, privacy={"sigma": 0.3, "form": "output"}
            ),
        },
    ),
    "fdml": (
        "vfl.baselines.fdml_party:FDML_PROTOCOL",
        {
            "none": _with(SMALL, solver={"name": "fdml_sgd", "epochs": 2, "batch_size": 40}),
            "noise": _with(SMALL, solver={"name": "fdml_sgd", "epochs": 2, "batch_size": 40}, privacy={"sigma": 0.2}),
        },
    ),
    "stacking": (
        "vfl.stacking.party:PASSIVES_PROTOCOL",
        {
            "none": _with(SMALL, solver={"name": "private_stacking", "epochs": 1}, partition={"columns": [3, 3, 2]}),
            "noise": _with(
                SMALL,
                solver={"name": "private_stacking", "epochs": 1},
                partition={"columns": [3, 3, 2]},
                privacy={"delta": 1e-5, "epsilon": 2.0, "replayable_noise": True},
            ),
        },
    ),
    "providers": (
        "vfl.admm.consensus.providers:PROVIDERS_PROTOCOL",
        {
            "none": _with(HORIZONTAL, solver={"name": "consensus_admm", "epochs": 3}),
            "noise": _with(
                HORIZONTAL,
                solver={"name": "dp_admm", "epochs": 3},
                privacy={"epsilon_per_iteration": 0.5, "delta": 1e-3, "replayable_noise": True},
            ),
        },
    ),
    "agents": (
        "vfl.decentralized.agent_side:AGENTS_PROTOCOL",
        {
            "none": _with(NETWORK, solver={"name": "random_penalty_admm", "epochs": 3}),
            "noise": _with(
                NETWORK, solver={"name": "ldp_admm", "epochs": 3}, privacy={"delta": 1e-5, "replayable_noise": True}
            ),
        },
    ),
}

#: (family, noise, call) -> why the config never sends that call (so no fault lands there)
NOT_SENT = {
    ("providers", "noise", "residuals"): "DP-ADMM's linearized step has no KKT residual (the exact step's diagnostic)",
    ("providers", "none", "models"): "no run asks for the providers' clean w_i (the tests do)",
    ("providers", "noise", "models"): "no run asks for the providers' clean w_i (the tests do)",
    ("agents", "none", "losses"): "without noise there is no privacy loss to evaluate",
}


def _protocol(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _cases():
    for family, (protocol, configs) in FAMILIES.items():
        for call in _protocol(protocol).calls:
            if call.kind is CONTROL:
                continue
            for noise in configs:
                yield pytest.param("dask", family, noise, call.name, id=f"{family}-{noise}-{call.name}")


#: the matrix: one row per backend, family, noise and call (a backend joins with its rows)
MATRIX = list(_cases())


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://", host="127.0.0.1", dashboard_address=None
    ) as c:
        yield c


_LOCAL: dict = {}
#: each case's outcome, for the report (printed by -s)
OUTCOMES: dict = {}


def _undisturbed(family, noise):
    """The in-process run (once per family and noise) and how often it sent each call."""

    key = (family, noise)
    if key not in _LOCAL:
        sent: dict = {}
        send = InProcessUnits._send

        def counting(self, session, call, requests, seqs):
            sent[call.name] = sent.get(call.name, 0) + 1
            return send(self, session, call, requests, seqs)

        InProcessUnits._send = counting
        try:
            local = run_experiment(config_from_dict(FAMILIES[family][1][noise]), with_baselines=False)
        finally:
            InProcessUnits._send = send
        _LOCAL[key] = local, sent
    return _LOCAL[key]


def _alive(cluster) -> list:
    return [w for w in cluster.workers.values() if w.status.name not in ("closed", "closing", "closing_gracefully")]


def _kill_before(cluster, backend, name: str, nth: int) -> dict:
    """Kill the worker of the first unit just before the ``nth`` send of call ``name``, then
    start a worker to take over (the backend re-opens the unit there)."""
    state = {"seen": 0, "killed": False}
    send = backend._send

    def watched(session, call, requests, seqs):
        if call.name == name and session.protocol.call(name) is call and not state["killed"]:
            state["seen"] += 1
            if state["seen"] == nth:
                state["killed"] = True
                (worker,) = [w for w in cluster.workers.values() if w.address == backend.slots[0].worker]
                cluster.sync(worker.close)
                cluster.scale(len(cluster.worker_spec) + 1)
        return send(session, call, requests, seqs)

    backend._send = watched
    return state


@pytest.mark.parametrize("backend_name, family, noise, call", MATRIX)
def test_a_unit_lost_before_any_call_changes_no_number(cluster, backend_name, family, noise, call):
    local, sent = _undisturbed(family, noise)
    if (family, noise, call) in NOT_SENT:
        assert call not in sent, f"{call} is sent: take it out of NOT_SENT"
        pytest.skip(NOT_SENT[family, noise, call])
    assert call in sent, f"{family} ({noise}) never sends {call}: say why in NOT_SENT"
    if len(_alive(cluster)) < 2:  # a case that failed part-way
        cluster.scale(len(cluster.worker_spec) + 2 - len(_alive(cluster)))
    raw = FAMILIES[family][1][noise]
    config = config_from_dict(_with(raw, run={"backend": "dask", "party_wait": 30.0}))
    with dask_backend(config, cluster.scheduler_address, None) as backend:
        # the middle send: a journal with completed rounds behind it
        state = _kill_before(cluster, backend, call, max(1, (sent[call] + 1) // 2))
        plan = plan_run(config, None, backend)
        try:
            remote = run_experiment(config, plan=plan, with_baselines=False)
        except PartyLostError as exc:  # the other outcome: one line naming the unit
            message = str(exc)
            assert "\n" not in message and isinstance(exc, VFLError)
            assert message.startswith(backend.slots[0].label), message
            OUTCOMES[family, noise, call] = "stopped: " + message
            return
    assert state["killed"], f"no {call} was sent on dask"
    assert_same_numbers(remote, replace(local))
    assert len(backend.recoveries) == 1
    OUTCOMES[family, noise, call] = "rebuilt"
