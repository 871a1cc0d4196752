"""The coordinator's gRPC channel to one party service: its connection (mutual TLS, or
plaintext on loopback) and the one line that says why a call failed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .party_config import SERVICE
from .service_tls import Credentials, party_name

if TYPE_CHECKING:  # (grpc ships no type information: these are Any to mypy)
    import grpc

__all__ = ["connect", "why"]

_OPTIONS = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1), ("grpc.enable_retries", 0)]


def connect(
    address: str, party: int, cred: Credentials | None
) -> tuple[grpc.Channel, dict[str, grpc.UnaryUnaryMultiCallable]]:
    """A channel to party ``party`` (1-based) at ``address`` and a callable per method of the
    service; ``cred`` None: plaintext (``run.insecure``, on loopback)."""
    import grpc  # lazy: optional dependency (grpc)

    if cred is None:
        channel = grpc.insecure_channel(address, options=_OPTIONS)
    else:
        creds = grpc.ssl_channel_credentials(
            root_certificates=cred.ca, private_key=cred.key, certificate_chain=cred.cert
        )
        channel = grpc.secure_channel(
            address, creds, options=_OPTIONS + [("grpc.ssl_target_name_override", party_name(party))]
        )
    return channel, {
        name: channel.unary_unary(f"/{SERVICE}/{name}") for name in ("Health", "Align", "Open", "Call", "Close")
    }


def why(label: str, party: int, exc: grpc.RpcError) -> str:
    """One line for a failed call to party ``party`` (``label``: who it is, where)."""
    import grpc  # lazy: optional dependency (grpc)

    code, details = exc.code(), " ".join(str(exc.details() or "").split())
    low = details.lower()
    if code is grpc.StatusCode.PERMISSION_DENIED:
        return f"{label} refused the coordinator's certificate: {details}"
    if any(w in low for w in ("ssl", "handshake", "certificate", "peer name", "tls", "verification")):
        return (
            f"{label}: the TLS handshake failed (a certificate that is not "
            f"{party_name(party)}'s, expired, or not from the "
            f"deployment's CA, on either side): {details[:200]}"
        )
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return f"{label} is unreachable ({details[:160] or code.name})"
    return f"{label}: {details or code.name}"
