"""Issue 39's fault matrix on the party services: a party service killed before any call
and restarted (its PARTY config, its directory) never changes a number.

For every family that runs as party services (ADMM sharing, FDML SGD, private stacking's
passive parties, DP-ADMM's providers), with noise off and with replayable noise, the first
party service is stopped just before the middle send of one of its protocol's calls (the
round, each diagnostic and inference call it actually sends: ``Protocol.calls``, the
families, configs and ``NOT_SENT`` reasons of ``test_faults.py``) and started again at its
address. The run ends bit-identical to the undisturbed in-process run, or in one line
naming the party: a silent difference is never an outcome.

Per family, one deployment case (exact noise, never replayed): the party killed before a
round and restarted never draws a release again (its ``releases.jsonl`` holds each once).
One set of services per family and noise serves every case of the module.
"""

from __future__ import annotations

import threading

import pytest
from test_faults import FAMILIES, NOT_SENT, _protocol, _undisturbed, _with
from test_parties import assert_same_numbers
from test_services import Parties, _free_ports, _remote

grpc = pytest.importorskip("grpc")


from vfl.core.errors import ConfigError, PartyLostError, VFLError  # noqa: E402
from vfl.core.protocol import CONTROL  # noqa: E402
from vfl.experiments.config import config_from_dict  # noqa: E402
from vfl.experiments.registry import get_solver  # noqa: E402
from vfl.experiments.transport.service_tls import write_deployment  # noqa: E402

pytestmark = pytest.mark.slow

#: what each party accepts (its noise floor): DP-ADMM's providers calibrate per iteration
LIMITS = {"max_epsilon": 8.0}
PROVIDER_LIMITS = {"min_sigma": 1e-3}
#: (family, noise) -> why it has no party services (its cases are listed, not run)
NO_SERVICES = {
    ("providers", "none"): "consensus_admm (the providers without noise) runs "
    "in-process and on Dask only; dp_admm runs as services"
}
#: family -> its deployment config (exact noise with a guarantee)
DEPLOYMENT = {
    "sharing": _with(
        FAMILIES["sharing"][1]["none"],
        privacy={
            "form": "output",
            "delta": 1e-5,
            "epsilon": 8.0,
            "calibration": "sound",
            "neighbours": "row",
            "b1": 1.0,
            "clip": 1.0,
            "input_clip": 2.0,
        },
    ),
    "fdml": _with(
        FAMILIES["fdml"][1]["noise"], privacy={"label_epsilon": 1.0, "label_delta": 1e-5, "replayable_noise": False}
    ),
    "stacking": _with(FAMILIES["stacking"][1]["noise"], privacy={"replayable_noise": False}),
    "providers": _with(FAMILIES["providers"][1]["noise"], privacy={"replayable_noise": False}),
}

#: family -> the one line its party service refuses a deployment with: FDML's guarantee is
#: label DP, drawn by the coordinator (the label holder); its parties release nothing under it
NO_DEPLOYMENT = {"fdml": "party 1: fdml_sgd declares no calibration a party can check"}


def _cases():
    for family, (protocol, configs) in FAMILIES.items():
        if family == "agents":  # the LDP agents do not run as party services yet
            continue
        for call in _protocol(protocol).calls:
            if call.kind is not CONTROL:
                for noise in configs:
                    yield pytest.param(family, noise, call.name, id=f"{family}-{noise}-{call.name}")


class Services(Parties):
    """``test_services.Parties`` for any family: the parties that are services."""

    def __init__(self, tmp, certs, config):
        first = get_solver(config.solver.name).protocol.placement.first
        n = len(config.partition.columns or []) or config.partition.agents
        self.members = list(range(first + 1, n + 1))
        self.tmp, self.certs, self.config, self.cert_of = tmp, certs, config, {}
        self.limits = PROVIDER_LIMITS if config.partition.agents else LIMITS
        self.ports = dict(zip((m - 1 for m in self.members), _free_ports(len(self.members))))
        self.servers = {}
        for m in self.members:
            self.start(m)

    def addresses(self):
        return [f"127.0.0.1:{self.ports[m - 1]}" for m in self.members]

    def named(self, message: str) -> bool:
        """The line names the first of them (``party 2``, ``provider 1``) and its address."""
        word = get_solver(self.config.solver.name).protocol.placement.word
        who, where = f"{word} {self.members[0]}", self.addresses()[0]
        return "\n" not in message and message.startswith(
            (f"{who}: its service {where} was lost at ", f"{who} at {where} ")
        )


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Four parties' certificates (DP-ADMM's four providers)."""

    out = tmp_path_factory.mktemp("certs4")
    write_deployment(out, 4)
    return out


@pytest.fixture(scope="module")
def services(tmp_path_factory, certs):
    """One set of services per family and noise, started when first asked for."""
    made: dict = {}

    def get(family, noise, raw=None):
        if (family, noise) not in made:
            config = config_from_dict(raw or FAMILIES[family][1][noise])
            made[family, noise] = Services(tmp_path_factory.mktemp(f"{family}-{noise}"), certs, config)
        return made[family, noise]

    yield get
    for p in made.values():
        p.close()


def _kill_before(p, name: str, nth: int, state: dict):
    """Stop the first party service just before the ``nth`` send of call ``name`` and start
    it again 0.2 s later, as its operator would."""
    m = p.members[0]

    def during(units):
        send = units._send

        def watched(session, call, requests, seqs):
            if call.name == name and session.protocol.call(name) is call and not state["killed"]:
                state["seen"] += 1
                if state["seen"] == nth:
                    state["killed"] = True
                    p.stop(m)
                    threading.Timer(0.2, p.start, (m,)).start()
            return send(session, call, requests, seqs)

        units._send = watched

    return during


def _run_killed(p, name, nth):
    state = {"seen": 0, "killed": False}
    coord = p.coordinator(p.config, "run.party_wait=10")
    try:
        return _remote(coord, during=_kill_before(p, name, nth, state)), state, None
    except PartyLostError as exc:  # the other outcome: one line naming the party
        return None, state, exc
    finally:
        if p.members[0] not in p.servers:  # (its restart is under way)
            threading.Event().wait(0.5)


@pytest.mark.parametrize("family, noise, call", list(_cases()))
def test_a_party_service_killed_before_any_call_changes_no_number(services, family, noise, call):
    local, sent = _undisturbed(family, noise)
    if (family, noise) in NO_SERVICES:
        pytest.skip(NO_SERVICES[family, noise])
    if (family, noise, call) in NOT_SENT:
        assert call not in sent, f"{call} is sent: take it out of NOT_SENT"
        pytest.skip(NOT_SENT[family, noise, call])
    assert call in sent, f"{family} ({noise}) never sends {call}: say why in NOT_SENT"
    p = services(family, noise)
    remote, state, lost = _run_killed(p, call, max(1, (sent[call] + 1) // 2))
    assert state["killed"], f"no {call} was sent to the services"
    if lost is not None:
        message = str(lost)
        assert isinstance(lost, VFLError) and p.named(message), message
        print(f"\n{family}-{noise}-{call}: stopped: {message}")
        return
    assert_same_numbers(remote, local)
    print(f"\n{family}-{noise}-{call}: rebuilt")
    assert [r["party"] for r in remote.manifest.dump()["backend"]["recoveries"]] == [p.members[0]]


@pytest.mark.parametrize("family", list(DEPLOYMENT))
def test_a_deployment_party_service_killed_and_restarted_never_draws_a_release_again(services, family):
    if family in NO_DEPLOYMENT:  # its party refuses to start, in one line
        with pytest.raises(ConfigError) as err:
            services(family, "deployment", DEPLOYMENT[family])
        assert str(err.value) == NO_DEPLOYMENT[family]
        return
    p = services(family, "deployment", DEPLOYMENT[family])
    protocol = get_solver(p.config.solver.name).protocol
    (round_,) = [c.name for c in protocol.calls if c.releases][:1]
    remote, state, lost = _run_killed(p, round_, 2 if p.config.solver.epochs > 1 else 1)
    assert state["killed"]
    if lost is not None:
        assert p.named(str(lost)), str(lost)
        print(f"\n{family} deployment: stopped: {lost}")
    else:
        assert [r["party"] for r in remote.manifest.dump()["backend"]["recoveries"]] == [p.members[0]]
        print(f"\n{family} deployment: rebuilt; releases {[len(p.records(m)) for m in p.members]}")
    for m in p.members:
        recs = p.records(m)
        assert recs and all(r["exact"] for r in recs)
        assert [r["release"] for r in recs] == list(range(1, len(recs) + 1))
        assert len({(r["run"], r["repeat"], r["seq"], r.get("part")) for r in recs}) == len(recs)
