"""FDML SGD and private stacking as party services, to the in-process numbers; what does not
run as party services yet is refused in one line.

The parties' servers run in this process (loopback, mutual TLS, ``test_services``' certificates).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import assert_one_line_error, vfl
from test_services import _free_ports, _numbers, _remote, _tls, certs  # noqa: F401 (fixture)

grpc = pytest.importorskip("grpc")

from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.registry import get_solver  # noqa: E402
from vfl.experiments.runner import run_experiment  # noqa: E402
from vfl.experiments.transport.party_config import PartyConfig  # noqa: E402
from vfl.experiments.transport.service_grpc import serve  # noqa: E402
from vfl.experiments.transport.service_party import PartyService  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

PLAIN = """
name = "plain"
[data]
dataset = "synthetic"
options = {{ n_train = 300, n_test = 100, n_features = 12, seed = 3 }}
[partition]
columns = [6, 6]
[objective]
lam = 0.01
[solver]
name = "{solver}"
epochs = {epochs}
"""


@pytest.mark.parametrize("solver", ["fdml_sgd", "private_stacking"])
def test_fdml_sgd_and_private_stacking_run_as_party_services_to_the_same_numbers(tmp_path, certs, solver):
    path = tmp_path / "plain.toml"
    path.write_text(
        PLAIN.format(solver=solver, epochs=1 if solver == "private_stacking" else 2)
        + ("batch_size = 100\n" if solver == "fdml_sgd" else "")
    )
    config = load_config(path)
    first = get_solver(solver).protocol.placement.first  # stacking: party 1 is the coordinator
    ports = _free_ports(2 - first)
    servers = [
        serve(
            PartyService(
                PartyConfig(
                    index=m,
                    listen=f"127.0.0.1:{port}",
                    directory=str(tmp_path / f"p{m}"),
                    tls=_tls(certs, f"party-{m}"),
                ),
                config,
            )
        )
        for m, port in zip(range(first + 1, 3), ports)
    ]
    try:
        tls = _tls(certs, "coordinator")
        coord = config.with_overrides(
            [
                "run.backend=services",
                "run.parties=[" + ",".join(f"'127.0.0.1:{p}'" for p in ports) + "]",
                "run.tls={" + ", ".join(f"{k}='{v}'" for k, v in tls.items()) + "}",
            ]
        )
        remote = _remote(coord)
    finally:
        for s in servers:
            s.stop(None).wait()
    local = run_experiment(config, with_baselines=False)
    assert _numbers(remote.metrics).equals(_numbers(local.metrics))


@pytest.mark.parametrize(
    "config, sets, says",
    [
        (
            "papers/ldp/configs/ldp-dvp-admm-n10.toml",
            [],
            "run.backend = 'services': dvp_admm does not run as party services yet (these do: "
            "admm_sharing, dp_admm, fdml_sgd, private_stacking)",
        ),
    ],
)
def test_what_does_not_run_as_party_services_is_refused_in_one_line(tmp_path, config, sets, says):
    proc = vfl(
        "run",
        "--config",
        REPO / config,
        "--set",
        "run.backend=services",
        "--set",
        "run.parties=['127.0.0.1:1']",
        "--set",
        "run.insecure=true",
        "--out",
        tmp_path / "run",
    )
    assert_one_line_error(proc, says)
