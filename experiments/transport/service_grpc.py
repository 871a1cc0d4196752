"""``vfl party serve``: a party's service on a gRPC server of four methods of bytes (no
codegen, no pickle), each first checking that the client's certificate names the
coordinator (:mod:`.service_party` answers them; plaintext only with ``insecure`` on a
loopback address)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from pathlib import Path
from typing import TYPE_CHECKING

from vfl.core.errors import ConfigError

from .party_config import METHODS, SERVICE, read_party_config
from .service_party import PartyService
from .service_tls import COORDINATOR, Credentials

__all__ = ["run_party", "serve"]

if TYPE_CHECKING:  # (grpc ships no type information: these are Any to mypy)
    import grpc

log = logging.getLogger("vfl.party")  # (the service's own logger: its refusals, party.log)


def _peer_ok(context: grpc.ServicerContext, insecure: bool) -> bool:
    if insecure:
        return True
    names = context.auth_context().get("x509_common_name", [])
    return [n.decode() if isinstance(n, bytes) else n for n in names] == [COORDINATOR]


def _rpc(service: PartyService, method: str, insecure: bool) -> grpc.RpcMethodHandler:
    import grpc  # lazy: optional dependency (grpc)

    def handle(request: bytes, context: grpc.ServicerContext) -> bytes | None:  # (None: aborted)
        if not _peer_ok(context, insecure):
            log.warning("party %d: refused a client whose certificate does not name the coordinator", service.m)
            context.abort(grpc.StatusCode.PERMISSION_DENIED, f"party {service.m} answers the coordinator only")
        metadata = dict(context.invocation_metadata())
        run = metadata.get("vfl-run", "")
        try:
            if method == "Health":
                return service.health(run)
            if method == "Align":
                return service.align(request)
            if method == "Open":
                return service.open(request, run)
            if method == "Call":
                return service.call(request, run, replay=metadata.get("vfl-replay") == "1")
            return service.close(request, run)
        except ConfigError as exc:
            log.warning("%s", exc)
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except Exception as exc:  # noqa: BLE001 (the party's own failure: one line back)
            log.exception("party %d: %s failed", service.m, method)
            context.abort(grpc.StatusCode.INTERNAL, f"party {service.m}: {type(exc).__name__}: {exc}")
        return None  # (not reached: abort raises)

    return grpc.unary_unary_rpc_method_handler(handle)


def serve(service: PartyService, *, ready: object = None) -> grpc.Server:
    """Start the party's gRPC server on ``service.pc.listen``; returns the server (started)."""
    import grpc  # lazy: optional dependency (grpc)

    pc = service.pc
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=1),
        options=[
            ("grpc.max_receive_message_length", -1),
            ("grpc.max_send_message_length", -1),
            ("grpc.so_reuseport", 0),
        ],
    )
    server.add_generic_rpc_handlers(
        [grpc.method_handlers_generic_handler(SERVICE, {m: _rpc(service, m, pc.insecure) for m in METHODS})]
    )
    if pc.insecure:
        port = server.add_insecure_port(pc.listen)
    else:
        assert pc.tls is not None, "read_party_config requires [party.tls] unless insecure"
        cred = Credentials.read(pc.tls.get("certificate"), pc.tls.get("key"), pc.tls.get("ca"), f"party {service.m}")
        port = server.add_secure_port(
            pc.listen,
            grpc.ssl_server_credentials([(cred.key, cred.cert)], root_certificates=cred.ca, require_client_auth=True),
        )
    if not port:
        raise ConfigError(f"party {service.m}: cannot listen on {pc.listen} (in use?)")
    server.start()
    return server


def run_party(
    config_path: str | Path, data_dir: str | Path | None, overrides: Sequence[str], echo: Callable[[str], object]
) -> None:
    """``vfl party serve``: the party's service until SIGINT or SIGTERM; its refusals go to
    ``party.log`` in its directory (and to stderr)."""
    pc, config = read_party_config(config_path, overrides)
    service = PartyService(pc, config, data_dir)
    Path(pc.directory).mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(Path(pc.directory) / "party.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
    log.addHandler(handler)
    log.addHandler(logging.StreamHandler())
    log.setLevel(logging.INFO)
    server = serve(service)
    floor = "" if service.guard is None else f", noise floor {service.guard.floor:.6g} x sensitivity"
    held = (
        f"{service.rows} rows, {service.width} columns"
        if service.own is None
        else f"{service.own.who}: {service.own.table.train.n_rows} rows before the alignment"
    )
    echo(
        f"party {pc.index} serving {service.protocol.name} on {pc.listen} "
        f"({'plaintext' if pc.insecure else 'mutual TLS'}; {held}{floor}); its record: "
        f"{Path(pc.directory) / 'releases.jsonl'}"
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(0.5):  # (a timed wait: the handler runs between waits)
        pass
    server.stop(grace=1.0).wait()
