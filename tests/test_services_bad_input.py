"""The party services' bad input (issue 34): each problem one line naming the party (or the
coordinator), nothing written; nothing binds every interface unless configured to.

The parties' servers and certificates are tests/test_services.py's fixtures.
"""

from __future__ import annotations

import pytest
from cli_helpers import assert_one_line_error, vfl

grpc = pytest.importorskip("grpc")

from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import serialization  # noqa: E402
from test_services import _base, _write_config, certs, parties  # noqa: E402, F401 (fixtures)

from vfl.experiments.config import load_config  # noqa: E402
from vfl.experiments.transport.party_config import PartyConfig  # noqa: E402
from vfl.experiments.transport.service_tls import _pem, issue, make_ca  # noqa: E402


def test_nothing_binds_every_interface_unless_configured_to(tmp_path):
    assert PartyConfig(index=1).host == "127.0.0.1"
    base = _base(tmp_path)
    party = tmp_path / "party.toml"
    party.write_text(base.read_text() + '[party]\nindex = 1\nlisten = "0.0.0.0:50051"\ninsecure = true\n')
    proc = vfl("party", "serve", "--config", party)
    assert_one_line_error(proc, "party 1", "loopback address only")


# -------------------------------------------------------------------- bad input --
@pytest.mark.parametrize(
    "case, says",
    [
        ("unreachable", "is unreachable"),
        ("expired", "its certificate expired"),
        ("foreign", "not issued by the deployment's CA"),
        ("schema", "another schema: its [objective] differs"),
        ("rows", "holds 250 rows, the coordinator 300"),
    ],
)
def test_bad_input_gives_one_line_naming_the_party_and_writes_nothing(tmp_path, parties, certs, case, says):
    config = load_config(_base(tmp_path))
    p = parties(config)
    coord = p.coordinator(config)
    if case == "unreachable":
        p.stop(2)
    elif case in ("expired", "foreign"):
        ca = make_ca() if case == "foreign" else None
        if ca is None:
            ca = (
                serialization.load_pem_private_key((certs / "ca.key").read_bytes(), None),
                x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes()),
            )
        key, cert = issue(ca, "coordinator", expired=case == "expired")
        (tmp_path / "c.key").write_bytes(_pem(key=key))
        (tmp_path / "c.pem").write_bytes(_pem(cert=cert))
        coord = coord.with_overrides(
            [f"run.tls.certificate='{tmp_path / 'c.pem'}'", f"run.tls.key='{tmp_path / 'c.key'}'"]
        )
    elif case == "schema":
        p.stop(2)
        p.start(2, load_config(_base(tmp_path, lam=0.1)))
    elif case == "rows":
        p.stop(2)
        p.start(2, config.with_overrides(["data.options.n_train=250"]))
    path = tmp_path / "coord.toml"
    _write_config(coord, path)
    proc = vfl("run", "--config", path, "--out", tmp_path / "run", "--quiet")
    who = "the coordinator" if case in ("expired", "foreign") else f"party 2 at {p.addresses()[1]}"
    assert_one_line_error(proc, who, says)
    assert not (tmp_path / "run").exists()


def test_certs_writes_a_ca_and_a_certificate_per_party_and_never_overwrites(tmp_path):
    proc = vfl("party", "certs", "--out", tmp_path / "c", "--parties", "2")
    assert proc.returncode == 0, proc.stderr
    names = sorted(f.name for f in (tmp_path / "c").iterdir())
    assert names == sorted(f"{n}.{e}" for n in ("ca", "party-1", "party-2", "coordinator") for e in ("pem", "key"))
    proc = vfl("party", "certs", "--out", tmp_path / "c", "--parties", "2")
    assert_one_line_error(proc, "exists", "never overwritten")
