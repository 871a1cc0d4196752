"""The party services' certificates: one CA per deployment, a certificate per party and one
for the coordinator, made with pyca/cryptography (``vfl party certs``).

A party's certificate names it (subject CN and DNS SAN ``party-<m>``); the coordinator's is
``coordinator``. Every connection is mutual TLS with client certificates checked against
the deployment's CA (:mod:`.service_party`, :mod:`.service_units`): the coordinator
connects to party m expecting the name ``party-<m>`` in the party's certificate (so party
2's certificate cannot act as party 1), and a party answers only a client whose
certificate names the coordinator.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vfl.core.errors import ConfigError

__all__ = ["COORDINATOR", "Credentials", "issue", "make_ca", "party_name", "write_deployment"]

#: the coordinator's name in its certificate
COORDINATOR = "coordinator"


def party_name(m: int) -> str:
    """The name party ``m`` (1-based) has in its certificate."""
    return f"party-{int(m)}"


#: a key and its certificate
KeyCert = tuple[ec.EllipticCurvePrivateKey, x509.Certificate]


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "vfl deployment"), x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    )


def make_ca(days: int = 365, name: str = "vfl deployment CA") -> KeyCert:
    """A fresh CA: ``(key, certificate)``."""
    key = _key()
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(name))
        .issuer_name(_name(name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def issue(ca: KeyCert, cn: str, *, days: int = 365, expired: bool = False) -> KeyCert:
    """A certificate for ``cn`` (CN and DNS SAN; also 127.0.0.1 and localhost) signed by
    ``ca`` = ``(key, certificate)``; ``expired``: one whose validity ended yesterday (tests)."""
    ca_key, ca_cert = ca
    key = _key()
    now = dt.datetime.now(dt.UTC)
    start, end = (
        (now - dt.timedelta(days=3), now - dt.timedelta(days=1))
        if expired
        else (now - dt.timedelta(minutes=5), now + dt.timedelta(days=days))
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(cn)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return key, cert


def _pem(key: ec.EllipticCurvePrivateKey | None = None, cert: x509.Certificate | None = None) -> bytes:
    if cert is not None:
        return cert.public_bytes(serialization.Encoding.PEM)
    assert key is not None, "a key or a certificate"
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if private else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_deployment(out: str | Path, parties: int, days: int = 365) -> list[str]:
    """``ca.pem`` (and ``ca.key``, to issue more), ``party-<m>.pem``/``.key`` for every party
    and ``coordinator.pem``/``.key`` in ``out``; the files written."""
    out = Path(out)
    if parties < 1:
        raise ConfigError(f"--parties must be at least 1, got {parties}")
    names = [party_name(m) for m in range(1, parties + 1)] + [COORDINATOR]
    clash = [n for n in ("ca", *names) if (out / f"{n}.pem").exists()]
    if clash:
        raise ConfigError(
            f"{out / (clash[0] + '.pem')} exists: certificates are never overwritten (choose another --out)"
        )
    out.mkdir(parents=True, exist_ok=True)
    ca = make_ca(days)
    made = {"ca": ca, **{n: issue(ca, n, days=days) for n in names}}
    written: list[str] = []
    for n, (key, cert) in made.items():
        _write(out / f"{n}.key", _pem(key=key), private=True)
        _write(out / f"{n}.pem", _pem(cert=cert))
        written += [f"{n}.pem", f"{n}.key"]
    return written


@dataclass(frozen=True)
class Credentials:
    """A process's certificate chain, key and the deployment's CA (PEM bytes)."""

    cert: bytes
    key: bytes
    ca: bytes

    @classmethod
    def read(cls, cert: str | Path | None, key: str | Path | None, ca: str | Path | None, who: str) -> Credentials:
        data: list[bytes] = []
        for what, path in (("certificate", cert), ("key", key), ("CA", ca)):
            if path is None:
                raise ConfigError(f"{who}: no {what} given (tls.{what.lower()}; or --insecure on loopback)")
            try:
                data.append(Path(path).read_bytes())
            except OSError as exc:
                raise ConfigError(f"{who}: cannot read its {what} {path}: {exc.strerror or exc}") from None
        cred = cls(*data)
        cred.check(who)
        return cred

    def check(self, who: str) -> None:
        """Refuse, before any connection, a certificate that has expired or that the CA did
        not sign (the handshake would refuse it too, with less to say)."""
        try:
            cert = x509.load_pem_x509_certificate(self.cert)
            ca = x509.load_pem_x509_certificate(self.ca)
        except ValueError:
            raise ConfigError(f"{who}: its certificate or CA is not a PEM certificate") from None
        now = dt.datetime.now(dt.UTC)
        if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
            raise ConfigError(
                f"{who}: its certificate expired on {cert.not_valid_after_utc:%Y-%m-%d}"
                if now > cert.not_valid_after_utc
                else f"{who}: its certificate is not valid yet"
            )
        try:
            cert.verify_directly_issued_by(ca)
        except Exception:  # noqa: BLE001 (signature, issuer name, key type)
            raise ConfigError(
                f"{who}: its certificate was not issued by the deployment's CA (a foreign certificate)"
            ) from None

    def name(self) -> str:
        cert = x509.load_pem_x509_certificate(self.cert)
        value = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
        return value if isinstance(value, str) else value.decode()


def loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (where ``--insecure`` is allowed)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
