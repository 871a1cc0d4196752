"""The party services' faults: a party killed before each kind of call and started again at
its address comes back to the same numbers; a deployment party restarted never draws a release
again (its ledger read back); a party that does not come back stops the run in one line.

The parties' servers are :class:`test_services.Parties` (this process, loopback, mutual TLS).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_services import _base, _numbers, _remote, certs, parties  # noqa: F401 (fixtures)

grpc = pytest.importorskip("grpc")

from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.transport.service_guard import Guard, PrivacyRefused  # noqa: E402


def _kill_before(p, kind: str, epoch: int, m: int = 2, restart: bool = True):
    """Stop party m's process before its first ``kind`` call after ``epoch`` updates (and
    start it again at its address a moment later, as its operator would)."""
    state = {"updates": 0, "done": False}

    def during(units):
        send = units._send

        def watched(session, call, requests, seqs):
            if call.name == "update":
                state["updates"] += 1
            due = state["updates"] >= epoch + (call.name == "update")
            if not state["done"] and call.name == kind and due:
                state["done"] = True
                p.stop(m)
                if restart:
                    threading.Timer(0.2, p.start, (m,)).start()
            return send(session, call, requests, seqs)

        units._send = watched

    return during


@pytest.mark.slow  # (the fault matrix runs in the slow tier)
@pytest.mark.parametrize("kind", ["update", "state", "rmatvec", "test_product"])
def test_a_party_killed_before_each_kind_of_call_comes_back_to_the_same_numbers(tmp_path, parties, kind):
    config = load_config(_base(tmp_path))
    p = parties(config)
    undisturbed = run_experiment(config, with_baselines=False)
    remote = _remote(p.coordinator(config, "run.party_wait=10"), during=_kill_before(p, kind, 2))
    assert _numbers(remote.metrics).equals(_numbers(undisturbed.metrics))
    assert [r["party"] for r in remote.manifest.dump()["backend"]["recoveries"]] == [2]


@pytest.mark.slow
def test_a_deployment_party_killed_and_restarted_never_draws_a_release_again(tmp_path, parties):
    config = load_config(_base(tmp_path, replayable=False))
    p = parties(config)
    remote = _remote(p.coordinator(config, "run.party_wait=10"), during=_kill_before(p, "update", 2))
    recs = p.records(2)
    # its second process drew epoch 3 alone, its record of the run read back: the third
    assert [r["release"] for r in recs] == [1, 2, 3]
    assert len({(r["run"], r["seq"]) for r in recs}) == 3
    assert recs[2]["epsilon_run"] == remote.metrics["epsilon_tight"].iloc[-1]
    assert np.isfinite(remote.metrics["test_logloss"].iloc[-1])


@pytest.mark.slow
def test_a_party_that_does_not_come_back_stops_the_run_in_one_line(tmp_path, parties):
    config = load_config(_base(tmp_path))
    p = parties(config)
    with pytest.raises(Exception) as err:
        _remote(p.coordinator(config, "run.party_wait=0.5"), during=_kill_before(p, "update", 1, restart=False))
    assert f"party 2 at {p.addresses()[1]} was lost at epoch 2" in str(err.value)
    assert "did not answer again within 0.5 s" in str(err.value)


def test_a_release_on_the_partys_ledger_is_never_drawn_again_by_a_restarted_party(tmp_path):
    kw = dict(floor=1.0, sensitivity=1.0, delta=1e-5, accountant="pld", budget=None, deployment=True)
    Guard(tmp_path, 2, **kw).admit(run="r", repeat=0, seq=3, scale=2.0, sensitivity=1.0, size=10, exact=True)
    again = Guard(tmp_path, 2, **kw)  # the party's process, restarted: its ledger read back
    with pytest.raises(PrivacyRefused, match="drawn already"):
        again.admit(run="r", repeat=0, seq=3, scale=2.0, sensitivity=1.0, size=10, exact=True)
    assert again.records == 1
