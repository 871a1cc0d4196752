"""``vfl party serve``: one party as its own service, behind mutual TLS.

The party runs on its own machine from its own PARTY.toml: the run's public config (data,
partition, preprocessing, objective, solver, privacy: what the coordinator's config says
too) and a ``[party]`` table of its own (its number, its address, its directory, its
certificate, key and CA, its privacy limits; :func:`read_party_config`). It reads its data
itself and keeps its own block (and its held-out columns) only, calibrates its noise
floor from its own config (:mod:`.service_guard`), and serves one protocol, its solver's,
on a gRPC server with four methods of bytes (no codegen, no pickle):

- ``Health``: the party's public facts (JSON of numbers and names: its number, protocol and
  version, rows, columns, the digest of each public config section) that the coordinator
  checks before anything is opened;
- ``Open`` and ``Call``: frames of :mod:`vfl.core.codec` for its protocol and no other,
  answered by its :class:`~vfl.core.host.Host` (validation, the protocol's closed table of
  handlers by call number, at-most-once handling); a deployment party's host refuses
  every diagnostic;
- ``Close``: the coordinator is done.

Every method first checks that the client's certificate names the coordinator (the TLS
layer has checked it against the deployment's CA); plaintext only with ``insecure`` on a
loopback address. Nothing binds 0.0.0.0 unless the config says so.
"""

from __future__ import annotations

import hashlib
import json
import logging
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vfl.core import codec
from vfl.core.codec import Frame
from vfl.core.errors import ConfigError, DataError
from vfl.core.host import Host, StreamEnv
from vfl.core.preprocessing import row_norms
from vfl.core.protocol import CONTROL
from vfl.core.sampling import ExactSampler
from vfl.core.solver import VerticalData

from .config import Config, config_from_dict, read_toml
from .party_sides import OwnParty
from .registry import get_solver
from .repeat_setup import _prepare, _streams
from .run_data import _load_config_dataset
from .service_guard import Guard, PrivacyRefused
from .service_tls import COORDINATOR, Credentials, loopback
from .settings import prepare

__all__ = ["PartyConfig", "PartyService", "SERVICE", "public_digest", "read_party_config", "run_party", "serve"]

#: the gRPC service's name; its methods are ``/vfl.Party/<Method>``
SERVICE = "vfl.Party"
METHODS = ("Health", "Align", "Open", "Call", "Close")
#: the public config sections a party and the coordinator must agree on
PUBLIC = ("data", "preprocessing", "partition", "objective", "solver", "privacy")
_PARTY_KEYS = ("index", "listen", "directory", "tls", "insecure", "limits")
#: the [privacy] keys the coordinator chooses (the party's limits bound them)
_COORDINATORS = ("epsilon", "sigma", "budget_epsilon")
_LIMIT_KEYS = ("neighbours", "min_sigma", "max_epsilon", "budget_epsilon")
#: a party file table's keys that name where its files lie on its own machine
_LOCAL = ("path", "test_path", "schema")
log = logging.getLogger("vfl.party")


@dataclass(frozen=True)
class PartyConfig:
    """The ``[party]`` table of a PARTY.toml."""

    index: int
    listen: str = "127.0.0.1:50051"
    directory: str = "."
    tls: dict | None = None
    insecure: bool = False
    limits: dict = field(default_factory=dict)

    @property
    def host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")


def read_party_config(path, overrides=()) -> tuple[PartyConfig, Config]:
    """A PARTY.toml: its ``[party]`` table, and the run's public config (checked)."""
    from .config import apply_overrides

    raw = apply_overrides(read_toml(path), list(overrides))
    party = raw.pop("party", None)
    if not isinstance(party, dict):
        raise ConfigError(f"{path}: a party's config needs a [party] table (index, listen, directory, tls, limits)")
    unknown = sorted(set(party) - set(_PARTY_KEYS))
    if unknown:
        raise ConfigError(f"party.{unknown[0]} is not a key of [party] (keys: {', '.join(_PARTY_KEYS)})")
    index = party.get("index")
    if type(index) is not int or index < 1:
        raise ConfigError(f"party.index must be the party's number (1, 2, ...), got {index!r}")
    limits = dict(party.get("limits", {}))
    unknown = sorted(set(limits) - set(_LIMIT_KEYS))
    if unknown:
        raise ConfigError(f"party.limits.{unknown[0]} is not a limit (limits: {', '.join(_LIMIT_KEYS)})")
    for key in ("min_sigma", "max_epsilon", "budget_epsilon"):
        v = limits.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
            raise ConfigError(f"party.limits.{key} must be a positive number, got {v!r}")
    run = raw.setdefault("run", {})
    for key in ("backend", "parties", "tls", "insecure"):  # the coordinator's, not the party's
        run.pop(key, None)
    config = config_from_dict(raw, default_name=Path(path).stem)
    pc = PartyConfig(
        index=index,
        listen=str(party.get("listen", "127.0.0.1:50051")),
        directory=str(party.get("directory", ".")),
        tls=party.get("tls"),
        insecure=bool(party.get("insecure", False)),
        limits=limits,
    )
    if pc.insecure and not loopback(pc.host):
        raise ConfigError(
            f"party {index}: party.insecure (plaintext) is allowed on a loopback address only, not {pc.listen}"
        )
    if pc.tls is None and not pc.insecure:
        raise ConfigError(
            f"party {index}: [party.tls] (certificate, key, ca) is required, or party.insecure = true on loopback"
        )
    return pc, config


def public_digest(config: Config) -> dict:
    """Per public section, a digest of its resolved values (what both ends must share)."""
    d = config.to_dict()
    # the noise the coordinator asks for is its own choice, which the party's floor and
    # budget bound; everything else of [privacy] (the relation, the clips) it must share
    d["privacy"] = {k: v for k, v in d["privacy"].items() if k not in _COORDINATORS}
    if d["data"].get("dataset") == "parties":  # where each party's files lie is its own
        options = dict(d["data"].get("options", {}))
        options["party"] = [{k: v for k, v in t.items() if k not in _LOCAL} for t in options.get("party", [])]
        d["data"] = {**d["data"], "options": options}
    return {
        k: hashlib.sha256(json.dumps(d.get(k), sort_keys=True, default=str).encode()).hexdigest()[:16] for k in PUBLIC
    }


class _PartyEnv(StreamEnv):
    """The party's own streams, every release admitted by its guard first."""

    def __init__(self, streams, service: PartyService):
        super().__init__(streams)
        self.service = service

    def noise(self, *unit):
        if self.streams.exact_noise and not self.streams.replayable_noise:
            # the next release's noise is drawn while the party waits for its request
            return ExactSampler(pool=True)
        return super().noise(*unit)

    def release(
        self,
        mean,
        *,
        units,
        scale,
        sensitivity,
        rng,
        mechanism="gaussian",
        size=None,
        l2_sensitivity=None,
        rows=None,
        total=None,
        **context,
    ):
        guard = self.service.guard
        if self.service.replaying:  # a seeded stream drawn again: the values already released
            if not self.replayable:
                raise PrivacyRefused(
                    "refused: a release drawn again in a replay; a deployment release is never drawn again"
                )
        elif guard is not None and not (scale == 0 if _scalar(scale) else False):
            run, repeat, seq, request = self.service.current
            part, self.service.part = self.service.part, self.service.part + 1
            guard.admit(
                run=run,
                repeat=repeat,
                seq=seq,
                part=part,
                scale=_one(scale),
                sensitivity=_one(sensitivity),
                size=int(np.size(mean)),
                exact=isinstance(rng, ExactSampler),
                mechanism=mechanism,
                request=request,
            )
            self.service.admitted = True
        return super().release(
            mean,
            units=units,
            scale=scale,
            sensitivity=sensitivity,
            rng=rng,
            mechanism=mechanism,
            size=size,
            l2_sensitivity=l2_sensitivity,
            rows=rows,
            total=total,
            **context,
        )


def _scalar(v) -> bool:
    return np.ndim(v) == 0


def _one(v) -> float:
    """The party's one value of a per-unit array (it is one unit), or the scalar."""
    v = np.ravel(np.asarray(v, dtype=float))
    if v.size != 1:
        raise PrivacyRefused(f"refused: a release for {v.size} units; this party is one")
    return float(v[0])


class PartyService:
    """Party ``pc.index``: its data, its limits and its host (see the module docstring)."""

    def __init__(self, pc: PartyConfig, config: Config, data_dir=None):
        self.pc, self.config, self.m = pc, config, pc.index
        cls = get_solver(config.solver.name)
        protocol = cls.protocol
        if protocol is None or "services" not in cls.backends:
            raise ConfigError(f"party {self.m}: {cls.name} does not run as party services")
        self.cls, self.protocol = cls, protocol
        p = config.privacy
        self.deployment = bool(p.claims_guarantee and not p.replayable_noise)
        self.guard, self.own, self.data, self.setting = None, None, None, None
        self.rows = self.width = self.test_rows = None
        self.max_row_norm = None
        if config.data.dataset == "parties":  # its own file; its block once aligned (Align)
            if self.m == 1 and protocol.placement.first:
                raise ConfigError(f"party 1 is {cls.name}'s coordinator, not a party service")
            self.own = OwnParty(config, self.m, strict=not p.claims_guarantee)
        else:
            self._hold_registry(cls, data_dir)
        self.host = Host(protocol, simulation=not self.deployment)
        #: (run, repeat, seq, the request's digest) of the request in hand
        self.current: tuple = ("", 0, None, "")
        self.part = 0  # which release of that request is next
        self.replaying = False
        self.admitted = False  # a release was admitted while handling the request in hand
        self.repeat = 0
        self.digest = public_digest(config)

    def _hold_registry(self, cls, data_dir) -> None:
        """A dataset of one file (every party reads it and keeps its own columns)."""
        protocol, config = self.protocol, self.config
        dataset, _ = _load_config_dataset(config, data_dir, True)
        setting = prepare(config, dataset, cls)
        prepared = _prepare(setting, config, 0)
        vertical = isinstance(prepared.data, VerticalData)
        place = protocol.placement
        units = prepared.data.blocks if vertical else prepared.data.A
        if not place.first < self.m <= len(units):
            raise ConfigError(
                f"{place.word} {self.m}: the partition has {len(units)} {place.plural}"
                if self.m > len(units)
                else f"party {self.m} is {cls.name}'s coordinator, not a party service"
            )
        k = self.m - 1
        # rows dealt afresh per repeat (providers): the setting stays to deal the later ones
        self.setting = None if setting.same_units_every_repeat else setting
        self._hold(prepared.data.cut(k, self.m, prepared.test if vertical else None))
        if config.privacy.claims_guarantee:
            self.guard = self._guard(*self._calibrated(prepared))

    def _hold(self, data, repeat: int = 0) -> None:
        self.data, self.held = data, repeat
        B = data.blocks[0]
        if B.ndim == 3:  # a provider's rows (1, m, d)
            B = B[0]
        self.rows, self.width = int(B.shape[0]), int(B.shape[1])
        self.test_rows = int(data.test[0].shape[0]) if data.test is not None else 0
        self.max_row_norm = float(row_norms(B).max(initial=0.0))

    def align(self, frame: bytes) -> bytes:
        """One alignment frame of the label holder's (party files): the PSI, the agreed
        order (then its block), every party's widths (then its own calibration)."""
        if self.own is None:
            raise ConfigError(f"party {self.m} reads no party file: nothing to align")
        try:
            reply = self.own.serve(frame, self.cls)
        except DataError as exc:
            raise ConfigError(str(exc)) from None
        if self.own.aligned and self.data is None:
            self._hold(self.own.data)
        widths = getattr(self.own, "widths", None)
        if widths is not None and self.guard is None and self.config.privacy.claims_guarantee:
            self.guard = self._guard(*self._calibration(self.cls, widths, self.rows, self.own.objective))
        return reply

    def _calibrated(self, prepared):
        """``(floor, sensitivity)`` of its releases on this repeat's data, from its own config
        (a provider pre-trains its own D_w on the public rows, as the trainer does)."""
        cls, data = self.cls, prepared.data
        vertical = isinstance(data, VerticalData)
        units = data.blocks if vertical else data.A
        params = dict(self.config.solver.values)
        if not vertical and hasattr(cls, "d_w"):
            try:
                params["D_w"] = cls.d_w(data.public, prepared.objective, params, len(units))[0]
            except ValueError as exc:
                raise ConfigError(f"party {self.m}: {exc}") from None
        return self._calibration(cls, [int(B.shape[-1]) for B in units], self.rows, prepared.objective, params)

    def _calibration(self, cls, widths, N, objective, params=None):
        """The floor and sensitivity from the party's own config and limits."""
        limits, values = self.pc.limits, dict(self.config.privacy.values)
        accepted = limits.get("neighbours")
        if accepted is not None:
            accepted = [accepted] if isinstance(accepted, str) else list(accepted)
            if values.get("neighbours") not in accepted:
                raise ConfigError(
                    f"party {self.m}: the run's relation privacy.neighbours = "
                    f"{values.get('neighbours')!r} is not one it accepts "
                    f"({', '.join(accepted)})"
                )
        if limits.get("max_epsilon") is None and limits.get("min_sigma") is None:
            raise ConfigError(
                f"party {self.m}: give party.limits.max_epsilon or party.limits.min_sigma (the least noise it accepts)"
            )
        T, k = self.config.solver.epochs, self.m - 1
        params = dict(self.config.solver.values) if params is None else params
        try:  # (per unit: one value, or one per kind of release the unit makes)
            _, sens = cls.unit_noise(widths, N, objective, params, values, T)
            sens = np.atleast_1d(np.asarray(sens[k], dtype=float))
            floors = []
            if limits.get("max_epsilon") is not None:  # its own calibration at its own epsilon
                sigmas, _ = cls.unit_noise(
                    widths,
                    N,
                    objective,
                    params,
                    {
                        **values,
                        "epsilon": float(limits["max_epsilon"]),
                        **({"sigma": 0.0} if "sigma" in values else {}),
                        **({"epsilon_per_iteration": None} if "epsilon_per_iteration" in values else {}),
                    },
                    T,
                )
                floors.append(np.atleast_1d(np.asarray(sigmas[k], dtype=float)) / sens)
        except (NotImplementedError, ValueError) as exc:
            raise ConfigError(f"party {self.m}: {exc}") from None
        if limits.get("min_sigma") is not None:
            floors.append(float(limits["min_sigma"]) / sens)
        return np.max(floors, axis=0), sens

    def _guard(self, floor, sens) -> Guard:
        values, budget = self.config.privacy.values, self.pc.limits.get("budget_epsilon")
        return Guard(
            Path(self.pc.directory),
            self.m,
            floor=floor,
            sensitivity=sens,
            delta=float(values["delta"]),
            accountant=values.get("accountant", "pld"),
            budget=None if budget is None else float(budget),
            deployment=self.deployment,
        )

    # -- the methods -------------------------------------------------------------------
    def close(self, request: bytes, run: str) -> bytes:
        """The coordinator is done; ``finished``: the run is written, so its kept replies
        are let go (a killed coordinator sends nothing: they stay for its resume)."""
        if request == b"finished" and self.guard is not None and run:
            self.guard.forget(run)
        return b""

    def health(self, run: str = "") -> bytes:
        """The party's public facts; ``run``: what its record says of that run too."""
        own = {} if self.own is None else self.own.facts()
        return json.dumps(
            {
                **own,
                "party": self.m,
                "protocol": self.protocol.name,
                "version": self.protocol.version,
                "rows": self.rows,
                "width": self.width,
                "test_rows": self.test_rows,
                "max_row_norm": self.max_row_norm,
                "deployment": self.deployment,
                "digest": self.digest,
                "floor": None if self.guard is None else self.guard.floors.tolist(),
                "limits": self.pc.limits,
                "record": None if self.guard is None else self.guard.summary(run),
            }
        ).encode()

    def open(self, frame: bytes, run: str) -> bytes:
        self.current = (run, 0, None, "")
        return codec.serve(self.host, frame, self._open)

    def _open(self, repeat: int, spec):
        if self.data is None:
            raise ConfigError(f"party {self.m}: its rows are not aligned yet")
        if self.config.privacy.claims_guarantee and self.guard is None:
            raise ConfigError(f"party {self.m}: it has not calibrated its noise (no widths)")
        if self.setting is not None and repeat != self.held:  # its rows of this repeat
            prepared = _prepare(self.setting, self.config, repeat)
            self._hold(prepared.data.cut(self.m - 1, self.m), repeat)
            if self.guard is not None:  # this repeat's schedule (its own public rows' D_w)
                self.guard.recalibrate(*self._calibrated(prepared))
        self.current = (self.current[0], repeat, None, "")
        return self.host.open(self.data, spec, _PartyEnv(_streams(self.config, repeat), self))

    def call(self, frame: bytes, run: str, replay: bool = False) -> bytes:
        """One frame of ``run``; ``replay``: the coordinator resumes the run and says this
        request's release is on the party's record (it is then sent from there, never
        drawn; a request that is not there is refused)."""
        seq, self.replaying, self.admitted, request = None, False, False, ""
        if len(frame) >= codec.HEADER.size:
            _, kind, number, seq = codec.HEADER.unpack_from(frame)
            calls = self.protocol.calls
            # an adopted round, or the journal's bookkeeping: the coordinator's replay
            self.replaying = kind == Frame.ADOPT or (number < len(calls) and calls[number].kind is CONTROL)
            if kind == Frame.REQUEST and number < len(calls) and calls[number].releases:
                request = hashlib.sha256(frame[codec.HEADER.size :]).hexdigest()[:32]
        self.current, self.part = (run, self.current[1], seq, request), 0
        try:
            if (
                request
                and self.guard is not None
                and self.host.side is not None
                and (self.host._last is None or self.host._last[0] != seq)
            ):
                kept = self.guard.recorded(run, self.current[1], request)
                if kept is not None:
                    return self._resend(frame, kept, number, seq)
                if replay:
                    self.guard._refuse(
                        f"the resumed coordinator's request {seq} of run {run} "
                        "is none of the releases on the party's record (its "
                        "replay differs from the run)"
                    )
            reply = codec.serve(self.host, frame, self._open)
            if self.admitted and request and reply[4] == Frame.REPLY:
                self.guard.keep(run, self.current[1], request, reply)
            return reply
        except codec.ERRORS as exc:  # (refused before the host: one ERROR frame back)
            return codec.error_frame(exc)
        finally:
            self.replaying = self.admitted = False

    def _resend(self, frame: bytes, kept: bytes, number: int, seq: int) -> bytes:
        """A released reply sent again from the record: the side takes the round from it
        (:meth:`~vfl.core.protocol.Side.adopt`: a deployment's model from the request, a
        simulation's round handled again and checked to the bit), nothing drawn or charged."""
        _, _, _, reader = codec.decode(frame)
        request = reader.message(self.protocol.calls[number].request)
        reply = codec.read(self.protocol, kept, number)
        self.replaying = True
        self.host.adopt(number, request, reply)
        self.host._last = (seq, reply)  # (sent again with this number: the same reply)
        return codec.HEADER.pack(codec.MAGIC, int(Frame.REPLY), number, seq) + kept[codec.HEADER.size :]


# ------------------------------------------------------------------------ gRPC --
def _peer_ok(context, insecure: bool) -> bool:
    if insecure:
        return True
    names = context.auth_context().get("x509_common_name", [])
    return [n.decode() if isinstance(n, bytes) else n for n in names] == [COORDINATOR]


def _rpc(service: PartyService, method: str, insecure: bool):
    import grpc

    def handle(request: bytes, context):
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

    return grpc.unary_unary_rpc_method_handler(handle)


def serve(service: PartyService, *, ready=None):
    """Start the party's gRPC server on ``service.pc.listen``; returns the server (started)."""
    import grpc

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
        cred = Credentials.read(pc.tls.get("certificate"), pc.tls.get("key"), pc.tls.get("ca"), f"party {service.m}")
        port = server.add_secure_port(
            pc.listen,
            grpc.ssl_server_credentials([(cred.key, cred.cert)], root_certificates=cred.ca, require_client_auth=True),
        )
    if not port:
        raise ConfigError(f"party {service.m}: cannot listen on {pc.listen} (in use?)")
    server.start()
    return server


def run_party(config_path, data_dir, overrides, echo) -> None:
    """``vfl party serve``: the party's service until SIGINT or SIGTERM; its refusals go to
    ``party.log`` in its directory (and to stderr)."""
    import signal
    import threading

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
