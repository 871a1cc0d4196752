"""The party services (issue 34): every party its own gRPC service over mutual TLS, the
coordinator their client through the one unit transport.

Each test starts the parties' servers in this process (threads of gRPC's own), on
loopback, with a deployment's certificates made by ``vfl party certs``' code; the
coordinator is ``run_experiment`` (or ``vfl run``) with ``run.backend = "services"``.
Bad input is in ``test_services_bad_input.py``, a party killed and restarted in
``test_services_restarts.py``, the other families in ``test_services_families.py``.
"""

from __future__ import annotations

import json
import logging
import pickle
import socket

import numpy as np
import pytest
from cli_helpers import assert_one_line_error, vfl

grpc = pytest.importorskip("grpc")

from vfl.admm.sharing.party import (  # noqa: E402  # noqa: E402
    SHARING_PROTOCOL,
    PartySpec,  # noqa: E402
    Pull,
    Residual,
)
from vfl.core import codec  # noqa: E402
from vfl.core.codec import Frame  # noqa: E402
from vfl.core.protocol import Empty  # noqa: E402
from vfl.datasets.parties.tomlw import dumps  # noqa: E402
from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.run_plan import plan_run  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.transport import dask_cluster  # noqa: E402
from vfl.experiments.transport.party_config import PartyConfig  # noqa: E402
from vfl.experiments.transport.service_grpc import serve  # noqa: E402
from vfl.experiments.transport.service_party import PartyService  # noqa: E402
from vfl.experiments.transport.service_tls import _pem, issue, make_ca  # noqa: E402
from vfl.experiments.transport.service_units import ServiceUnits  # noqa: E402

BASE = """
name = "small"
[data]
dataset = "synthetic"
options = {{ n_train = 300, n_test = 100, n_features = 12, seed = 3 }}
[preprocessing]
normalize_rows = true
[partition]
columns = [5, 7]
[objective]
lam = {lam}
[solver]
name = "admm_sharing"
rho = 0.4
epochs = {epochs}
blas_threads = 1
[privacy]
form = "output"
delta = 1e-5
epsilon = {epsilon}
calibration = "sound"
neighbours = "row"
b1 = 1.0
clip = 1.0
input_clip = 2.0
replayable_noise = {replayable}
"""


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


@pytest.fixture
def certs(deployment_certs):
    return deployment_certs


def _base(tmp_path, *, epochs=3, epsilon=8.0, replayable=True, lam=0.01):
    path = tmp_path / "base.toml"
    path.write_text(BASE.format(epochs=epochs, epsilon=epsilon, replayable=str(replayable).lower(), lam=lam))
    return path


def _tls(certs, name: str) -> dict:
    return {"certificate": str(certs / f"{name}.pem"), "key": str(certs / f"{name}.key"), "ca": str(certs / "ca.pem")}


class Parties:
    """Both parties' servers in this process; ``stop(m)``/``start(m)`` as an operator would."""

    def __init__(self, tmp_path, certs, config, limits=None, cert_of=None):
        self.tmp, self.certs, self.config = tmp_path, certs, config
        self.ports = _free_ports(2)
        self.limits = limits or {"max_epsilon": 8.0, "budget_epsilon": 100.0}
        self.cert_of = cert_of or {}
        self.servers = {}
        for m in (1, 2):
            self.start(m)

    def pc(self, m):
        return PartyConfig(
            index=m,
            listen=f"127.0.0.1:{self.ports[m - 1]}",
            directory=str(self.tmp / f"party{m}"),
            tls=_tls(self.certs, self.cert_of.get(m, f"party-{m}")),
            limits=self.limits,
        )

    def start(self, m, config=None):
        self.servers[m] = serve(PartyService(self.pc(m), config or self.config))

    def stop(self, m):
        self.servers.pop(m).stop(None).wait()

    def addresses(self):
        return [f"127.0.0.1:{p}" for p in self.ports]

    def coordinator(self, config, *extra):
        parties = ",".join(f"'{a}'" for a in self.addresses())
        tls = _tls(self.certs, "coordinator")
        return config.with_overrides(
            [
                "run.backend=services",
                f"run.parties=[{parties}]",
                "run.tls={" + ", ".join(f"{k}='{v}'" for k, v in tls.items()) + "}",
                *extra,
            ]
        )

    def records(self, m):
        path = self.tmp / f"party{m}" / "releases.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def close(self):
        for m in list(self.servers):
            self.stop(m)


@pytest.fixture
def parties(tmp_path, certs):
    made = []

    def start(config, **kw):
        p = Parties(tmp_path, certs, config, **kw)
        made.append(p)
        return p

    yield start
    for p in made:
        p.close()


def _remote(coord, during=None):
    with ServiceUnits(coord) as units:
        if during is not None:
            during(units)
        plan = plan_run(coord, None, units)
        return run_experiment(coord, plan=plan, with_baselines=False)


def _numbers(frame):
    return frame[[c for c in frame.columns if not c.endswith("_time_s") and c != "wall_time_s"]]


# ------------------------------------------------------------------ same numbers --
def test_the_services_give_the_in_process_numbers_to_the_bit_and_count_bytes_twice(tmp_path, parties):
    config = load_config(_base(tmp_path))
    p = parties(config)
    remote = _remote(p.coordinator(config))
    local = run_experiment(config, with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))
    transport = remote.manifest.dump()["communication"]["transport"]
    phases = transport["phases"]
    # the protocol's payload, and what TLS carried on the sockets (more: records, HTTP/2)
    assert phases["training"]["payload_bytes"] > 0
    assert phases["training"]["tcp_bytes"] > phases["training"]["payload_bytes"]
    assert phases["diagnostics"]["tcp_bytes"] > 0  # a simulation party answers diagnostics
    assert remote.manifest.dump()["backend"]["channel"].startswith("gRPC over mutual TLS")


def test_a_deployment_releases_exact_noise_only_and_each_partys_record_agrees(tmp_path, parties, caplog):
    config = load_config(_base(tmp_path, replayable=False))
    p = parties(config)
    remote = _remote(p.coordinator(config))
    m = remote.metrics
    assert "objective" not in m and "dual_residual" not in m and "train_logloss" not in m
    assert np.isnan(m["test_logloss"].iloc[:-1]).all() and np.isfinite(m["test_logloss"].iloc[-1])
    phases = remote.manifest.dump()["communication"]["transport"]["phases"]
    assert phases["diagnostics"] == {"tcp_bytes": 0, "payload_bytes": 0, "framing_bytes": 0}
    assert "objective" in remote.manifest.dump()["deployment"]["unavailable"]
    for party in (1, 2):
        recs = p.records(party)
        assert [r["release"] for r in recs] == [1, 2, 3] and all(r["exact"] for r in recs)
        # the party's own ledger and the coordinator's: the same epsilon after every epoch
        np.testing.assert_allclose([r["epsilon_run"] for r in recs], m["epsilon_tight"].iloc[1:], rtol=1e-12)


# ---------------------------------------------------------------------- attacks --
def _raw(address, certs, name="coordinator", target="party-1", creds=None):
    creds = creds or grpc.ssl_channel_credentials(
        (certs / "ca.pem").read_bytes(), (certs / f"{name}.key").read_bytes(), (certs / f"{name}.pem").read_bytes()
    )
    channel = grpc.secure_channel(address, creds, options=[("grpc.ssl_target_name_override", target)])
    return channel


def test_a_client_without_a_certificate_of_the_deployments_ca_is_refused(tmp_path, parties, certs):
    p = parties(load_config(_base(tmp_path)))
    ca = make_ca()
    key, cert = issue(ca, "coordinator")  # the right name, from another CA
    foreign = grpc.ssl_channel_credentials((certs / "ca.pem").read_bytes(), _pem(key=key), _pem(cert=cert))
    bare = grpc.ssl_channel_credentials((certs / "ca.pem").read_bytes())  # no client cert
    for creds in (foreign, bare):
        with _raw(p.addresses()[0], certs, creds=creds) as ch:
            with pytest.raises(grpc.RpcError) as err:
                ch.unary_unary("/vfl.Party/Health")(b"", timeout=5)
            assert err.value.code() is grpc.StatusCode.UNAVAILABLE
    # a certificate of the deployment that does not name the coordinator: refused too
    with _raw(p.addresses()[0], certs, name="party-2") as ch:
        with pytest.raises(grpc.RpcError) as err:
            ch.unary_unary("/vfl.Party/Health")(b"", timeout=5)
        assert err.value.code() is grpc.StatusCode.PERMISSION_DENIED


def test_party_2s_certificate_cannot_act_as_party_1(tmp_path, parties):
    config = load_config(_base(tmp_path))
    p = parties(config, cert_of={1: "party-2"})
    out = tmp_path / "run"
    coord = p.coordinator(config)
    path = tmp_path / "coord.toml"
    _write_config(coord, path)
    proc = vfl("run", "--config", path, "--out", out, "--quiet")
    assert_one_line_error(proc, f"party 1 at {p.addresses()[0]}", "TLS handshake failed")
    assert not out.exists()


def _write_config(config, path):
    def drop(d):
        return {k: drop(v) if isinstance(v, dict) else v for k, v in d.items() if v is not None}

    path.write_text(dumps(drop(config.to_dict())))


@pytest.mark.parametrize(
    "frame, says",
    [
        (
            codec.encode(Frame.REQUEST, 17, 1, Pull(r=np.zeros(300), rho=0.4, sigma=30.0, sensitivity=1.0)),
            "declares no call number 17",
        ),
        (pickle.dumps({"call": "__getattribute__", "args": ("party",)}), "bad magic"),
        (
            codec.encode(Frame.REQUEST, 0, 1, Pull(r=np.zeros(299), rho=0.4, sigma=30.0, sensitivity=1.0)),
            "must have shape",
        ),
        (
            codec.encode(
                Frame.REQUEST, 0, 1, Pull(r=np.zeros(300, dtype=np.int64), rho=0.4, sigma=30.0, sensitivity=1.0)
            ),
            "dtype",
        ),
        (
            codec.encode(Frame.REQUEST, 0, 1, Pull(r=np.full(300, np.nan), rho=0.4, sigma=30.0, sensitivity=1.0)),
            "non-finite",
        ),
    ],
)
def test_a_message_the_protocol_does_not_declare_is_refused(tmp_path, parties, certs, frame, says):
    p = parties(load_config(_base(tmp_path)))
    with _raw(p.addresses()[0], certs) as ch:
        spec = PartySpec(
            lam=0.01,
            rho=0.4,
            factor=True,
            x_radius=1.0,
            ball="project",
            noise_form="output",
            share_clip=1.0,
            blas_threads=1,
        )
        codec.read(
            SHARING_PROTOCOL, ch.unary_unary("/vfl.Party/Open")(codec.open_frame(SHARING_PROTOCOL, 0, spec), timeout=5)
        )
        with pytest.raises(codec.ERRORS) as err:
            codec.read(SHARING_PROTOCOL, ch.unary_unary("/vfl.Party/Call")(frame, timeout=5))
        assert says in str(err.value)
        with pytest.raises(grpc.RpcError) as err:  # a method the service does not declare
            ch.unary_unary("/vfl.Party/__getattribute__")(b"party", timeout=5)
        assert err.value.code() is grpc.StatusCode.UNIMPLEMENTED
    assert p.records(1) == []  # nothing released


@pytest.mark.parametrize("case, says", [("floor", "below the party's floor"), ("budget", "of its budget 5")])
def test_a_request_below_the_floor_or_beyond_the_budget_is_refused_and_nothing_released(
    tmp_path, parties, caplog, case, says
):
    party_config = load_config(_base(tmp_path))
    if case == "floor":  # the coordinator asks for epsilon 16, the parties accept 8 at most
        p = parties(party_config)
        coord = p.coordinator(load_config(_base(tmp_path, epsilon=16.0)))
    else:
        p = parties(party_config, limits={"max_epsilon": 8.0, "budget_epsilon": 5.0})
        coord = p.coordinator(party_config)
    path = tmp_path / "coord.toml"
    _write_config(coord, path)
    with caplog.at_level(logging.WARNING, logger="vfl.party"):
        proc = vfl("run", "--config", path, "--out", tmp_path / "run", "--quiet")
    assert_one_line_error(proc, "party 1", "refused", says, "nothing released")
    assert not (tmp_path / "run").exists()
    refusals = [r for r in caplog.records if "refused" in r.getMessage()]
    assert refusals and all(len(r.getMessage().splitlines()) == 1 for r in refusals)
    if case == "floor":
        assert p.records(1) == [] and p.records(2) == []
    else:  # the releases within the budget stand, on record; the one beyond it was not drawn
        recs = p.records(1)
        assert recs and all(r["epsilon_total"] <= 5.0 for r in recs)


def test_dask_takes_tls_only_when_configured(tmp_path, monkeypatch):
    dask = pytest.importorskip("dask")
    config = load_config(_base(tmp_path)).with_overrides(["run.backend=dask"])
    with pytest.raises(Exception, match="configure Dask's TLS first"):
        dask_cluster.check_cluster_option(config, "tls://10.0.0.1:8786")
    with dask.config.set(
        {
            "distributed.comm.tls.ca-file": "ca.pem",
            "distributed.comm.tls.client.cert": "c.pem",
            "distributed.comm.tls.client.key": "c.key",
        }
    ):
        dask_cluster.check_cluster_option(config, "tls://10.0.0.1:8786")
        assert dask_cluster.security().require_encryption


def test_a_deployment_party_refuses_every_diagnostic_call(tmp_path, parties, certs):
    p = parties(load_config(_base(tmp_path, replayable=False)))
    with _raw(p.addresses()[0], certs) as ch:
        spec = PartySpec(
            lam=0.01,
            rho=0.4,
            factor=True,
            x_radius=1.0,
            ball="project",
            noise_form="output",
            share_clip=1.0,
            blas_threads=1,
        )
        codec.read(
            SHARING_PROTOCOL, ch.unary_unary("/vfl.Party/Open")(codec.open_frame(SHARING_PROTOCOL, 0, spec), timeout=5)
        )
        for name, request in (("state", Empty()), ("rmatvec", Residual(y=np.zeros(300)))):
            frame = codec.encode(Frame.REQUEST, SHARING_PROTOCOL.index(name), 1, request)
            with pytest.raises(codec.ERRORS, match="answers no diagnostic"):
                codec.read(SHARING_PROTOCOL, ch.unary_unary("/vfl.Party/Call")(frame, timeout=5))
