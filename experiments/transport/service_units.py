"""``run.backend = "services"``: every party its own service, the coordinator their client.

:class:`ServiceUnits` is the third :class:`~vfl.core.units.Units` (after the in-process one
and Dask's), with no code per solver family: each party runs ``vfl party serve`` on its
own machine (:mod:`.service_party`) and the coordinator, ``vfl run`` with the label
holder's config, connects to the addresses of ``run.parties`` over mutual TLS (its own
certificate, the deployment's CA, and for party m the name ``party-<m>`` in the party's
certificate: :mod:`.service_tls`). Before anything is opened it checks each party's
public facts (protocol, rows, columns, the digest of every public config section): a
party started for another protocol or schema, or holding another row count, is refused
in one line naming it. Frames are :mod:`vfl.core.codec`'s, the calls gRPC unary calls of
bytes.

Faults: a party that stops answering is waited for at its address (``run.party_wait``
seconds; its operator restarts it) and rebuilt by :class:`~vfl.core.units.Session` from
its data and its journal (a replayable run replays to the bit; a deployment adopts the
released rounds, never drawing them again), or the run stops with one line naming it.

Bytes are counted twice: the protocol's payload (and the codec's framing) per phase, and
what TCP carried on the coordinator's connections to the parties, from the kernel's
counters (:mod:`.tcp_bytes`): TLS, HTTP/2 and gRPC included.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vfl.core import codec
from vfl.core.codec import Frame
from vfl.core.errors import ConfigError, PartyLostError
from vfl.core.layouts import VerticalData
from vfl.core.protocol import CONTROL, Call, Kind, Protocol
from vfl.core.solver import Data, Solver
from vfl.core.units import Messages, Session, Units

from ..config import Config
from ..party_sides import label_holder_records, recording, send_widths
from ..registry import get_solver
from . import tcp_bytes
from .party_config import public_digest
from .phase_counts import PhaseCounts
from .service_channels import connect, why
from .service_tls import Credentials, loopback

if TYPE_CHECKING:  # (grpc ships no type information: these are Any to mypy)
    import grpc

    from ..distribution import Prepared

__all__ = ["ServiceUnits"]

#: a party's public facts (its Health reply: JSON of numbers and names)
Facts = dict[str, Any]
#: a gRPC call's metadata
Metadata = tuple[tuple[str, str], ...]

TRANSPORT_SOURCE = (
    "the kernel's TCP counters (tcp_info bytes_acked + bytes_received, read "
    "over netlink sock_diag) of the coordinator's connections to the party "
    "services, per phase: TLS records, HTTP/2 frames and gRPC headers included"
)


class ServiceUnits(PhaseCounts, Units):
    """The coordinator's connections to the party services (see the module docstring)."""

    journals = True
    host_word = "service"  # a lost party's line: "party 2: its service 10.0.0.2:50051 was lost"

    def __init__(self, config: Config, resume: dict[str, Any] | None = None) -> None:
        """``resume``: a killed run's ``services`` record (its checkpoint's): the run id the
        parties' records know it by, and each party's facts then (:meth:`record`)."""
        run = config.run
        self.config = config
        self.addresses: list[str] = list(run.parties)
        self.insecure = run.insecure
        for k, address in enumerate(self.addresses):
            if self.insecure and not loopback(address.rpartition(":")[0].strip("[]")):
                raise ConfigError(
                    f"party {k + 1} at {address}: run.insecure (plaintext) is allowed on loopback addresses only"
                )
        self.cred: Credentials | None = None
        if not self.insecure:
            tls = run.tls
            assert tls is not None  # (the config requires [run.tls] unless run.insecure)
            self.cred = Credentials.read(tls["certificate"], tls["key"], tls["ca"], "the coordinator")
        self.replayable = bool(config.privacy.replayable_noise)
        self.deployment = bool(config.privacy.claims_guarantee and not self.replayable)
        self.resume = resume or None
        self.run_id: str = resume["run"] if resume else uuid.uuid4().hex
        #: per party: its releases of this run on its record (a resumed run asks for them
        #: again, to be sent from the record), and its last sequence number there
        self.owed: list[int] = []
        self.seq_base: list[int] = []
        self.finished = False
        self.use_cache = True
        self.protocol: Protocol | None = None
        self.first_unit = 0
        self.channels: list[grpc.Channel] = []
        self.calls: list[dict[str, grpc.UnaryUnaryMultiCallable]] = []  # per host: {method: callable}
        self.facts: list[Facts] = []
        self.recoveries: list[dict[str, object]] = []
        self._init_counts()  # per phase: TCP bytes, the codec's payload and framing
        self.ports = {int(a.rpartition(":")[2]) for a in self.addresses}
        self._failed = 0  # the host whose call failed first in the last exchange
        self.alignment_tcp = 0  # bytes TCP carried for the PSI (party files)
        self._agreed: dict[int, list[bytes]] = {}  # party files: per party, the alignment frames past the PSI
        self.total = 0

    # -- connecting ----------------------------------------------------------------------
    def start(self, first: Prepared, checksums: object) -> None:
        cls = get_solver(self.config.solver.name)
        self.protocol = protocol = cls.protocol
        place = protocol.placement
        self.vertical = isinstance(first.data, VerticalData)
        self.total = len(first.data.blocks if self.vertical else first.data.A)
        self.first_unit = place.first
        served = self.total - place.first
        if len(self.addresses) != served:
            coordinator = f" (party {place.first} is the coordinator)" if place.first else ""
            raise ConfigError(
                f"run.parties lists {len(self.addresses)} address(es) for "
                f"{served} {place.role + ' ' if place.role else ''}parties"
                f"{coordinator}"
            )
        digest = public_digest(self.config)
        self.facts = []
        for m in range(place.first, self.total):
            if m - place.first >= len(self.calls):
                self._connect(m)
            facts = self._health(m - place.first, wait=5.0)
            self._check(m, facts, first, digest)
            if self.resume is not None:
                self._same_party(m, facts, self.resume["parties"][m - place.first])
            record = facts.get("record") or {}
            self.owed.append(int(record.get("releases", 0)) if self.resume else 0)
            self.seq_base.append(int(record.get("last_seq", 0)))
            self.facts.append(facts)

    def _same_party(self, m: int, facts: Facts, then: Facts) -> None:
        """A resumed run's party must be the one the run started with: its limits and its
        noise floor (its public config is checked with the coordinator's already)."""
        for key in ("floor", "limits", "deployment"):
            if facts.get(key) != then.get(key):
                now: Any = facts.get(key)  # (JSON values: a limits table is a dict)
                was: Any = then.get(key)
                if key == "limits":  # name the limit that changed
                    key = next(f"limits.{k}" for k in sorted({*now, *was}) if now.get(k) != was.get(k))
                    now, was = now.get(key[7:]), was.get(key[7:])
                raise ConfigError(
                    f"{self._label(m - self.first_unit)} was restarted with "
                    f"another config: its party.{key} is {now!r}, the run's "
                    f"checkpoint says {was!r}; restart it with the run's config "
                    "to resume"
                )

    def record(self) -> dict[str, Any]:
        """What a checkpoint keeps to resume this run: its id and each party's facts."""
        keep = ("party", "floor", "limits", "deployment", "digest")
        return {"run": self.run_id, "parties": [{k: f.get(k) for k in keep} for f in self.facts]}

    # -- party files: the PSI over the party channel -----------------------------------------
    def align_parties(self, config: Config, cls: type[Solver]) -> Any:  # (party_sides' records)
        """Connect to every party, align party 1's file (read here, the coordinator's only
        file) with each party's own by the PSI over its channel, and return the label
        holder's records in the agreed order (:mod:`.party_sides`)."""
        self.protocol = protocol = cls.protocol
        place = protocol.placement
        if not place.own_worker:
            raise ConfigError(
                f"run.backend = 'services': {cls.name}'s {place.plural} are not parties of a vertical run"
            )
        M = len(config.data.options.get("party", []))
        self.total, self.first_unit = M, place.first
        if len(self.addresses) != M - place.first:
            coordinator = f" (party {place.first} is the coordinator)" if place.first else ""
            raise ConfigError(
                f"run.parties lists {len(self.addresses)} address(es) for {M - place.first} parties{coordinator}"
            )
        digest = public_digest(config)
        remote: list[tuple[str, str, list[str], Callable[[bytes], bytes]]] = []
        own = None
        for m in range(place.first, M):
            self._connect(m)
            k = m - place.first
            facts = self._health(k, wait=5.0)
            label = self._label(k)
            if facts.get("party") != m + 1:
                raise ConfigError(f"{label} is party {facts.get('party')}, not party {m + 1}")
            if "id_type" not in facts:
                raise ConfigError(f"{label} reads no party file (its [data] is not dataset = 'parties')")
            differ = [s for s in digest if facts.get("digest", {}).get(s) != digest[s]]
            if differ:
                raise ConfigError(
                    f"{label} was started for another schema: its [{differ[0]}] differs from the coordinator's"
                )
            call = recording(self._aligner(k), self._agreed.setdefault(k, []))
            if m == 0:
                own = call
            else:
                remote.append((f"party {m + 1} at {self.addresses[k]}", facts["id_type"], facts["parts"], call))
        return label_holder_records(config, remote, own)

    def _aligner(self, k: int) -> Callable[[bytes], bytes]:
        import grpc  # lazy: optional dependency (grpc)

        def call(frame: bytes) -> bytes:
            before = tcp_bytes.carried(self.ports)
            try:
                reply: bytes = self.calls[k]["Align"](frame, metadata=self._md())
                return reply
            except grpc.RpcError as exc:
                raise ConfigError(self._why(k, exc)) from None
            finally:
                after = tcp_bytes.carried(self.ports)
                self.alignment_tcp += sum(v - before.get(s, 0) for s, v in after.items())

        return call

    def send_widths(self, own_width: int) -> list[int]:
        """Every party's column count (party 1's, ``own_width``, computed here when party 1
        is the coordinator), sent to every party for its own calibration."""
        widths = [own_width] if self.first_unit else []
        for k in range(len(self.calls)):
            facts = self._health(k, wait=5.0)
            if not facts.get("aligned"):
                raise ConfigError(f"{self._label(k)} did not align its rows")
            widths.append(int(facts["width"]))
        for k in range(len(self.calls)):
            send_widths(widths, recording(self._aligner(k), self._agreed[k]))
        return widths

    def _connect(self, m: int) -> None:
        k = m - self.first_unit
        channel, calls = connect(self.addresses[k], m + 1, self.cred)
        if k < len(self.channels):
            self.channels[k].close()
            self.channels[k], self.calls[k] = channel, calls
        else:
            self.channels.append(channel)
            self.calls.append(calls)

    def _label(self, k: int) -> str:
        word = self.protocol.placement.word if self.protocol is not None else "party"
        return f"{word} {k + self.first_unit + 1} at {self.addresses[k]}"

    def _health(self, k: int, wait: float) -> Facts:
        import grpc  # lazy: optional dependency (grpc)

        try:
            raw = self.calls[k]["Health"](b"", timeout=wait, metadata=self._md())
        except grpc.RpcError as exc:
            raise ConfigError(self._why(k, exc)) from None
        facts: Facts = json.loads(raw)
        return facts

    def _why(self, k: int, exc: grpc.RpcError) -> str:
        """One line for a failed call: who, and what went wrong."""
        return why(self._label(k), k + self.first_unit + 1, exc)

    def _check(self, m: int, facts: Facts, first: Prepared, digest: dict[str, str]) -> None:
        label, proto = self._label(m - self.first_unit), self._placed()
        if facts.get("party") != m + 1:
            raise ConfigError(f"{label} is party {facts.get('party')}, not party {m + 1}")
        if (facts.get("protocol"), facts.get("version")) != (proto.name, proto.version):
            raise ConfigError(
                f"{label} was started for protocol {facts.get('protocol')} version "
                f"{facts.get('version')}, not {proto.name} version {proto.version}"
            )
        if self.vertical:
            N, d = len(first.data.y), first.data.blocks[m].shape[1]
        else:  # a provider: its rows and their width
            N, d = first.data.A.shape[1], first.data.A.shape[2]
        if facts.get("rows") != N:
            raise ConfigError(f"{label} holds {facts.get('rows')} rows, the coordinator {N}")
        if facts.get("width") != d:
            raise ConfigError(f"{label} holds {facts.get('width')} columns, the partition gives it {d}")
        theirs = facts.get("digest", {})
        differ = [s for s in digest if theirs.get(s) != digest[s]]
        if differ:
            raise ConfigError(
                f"{label} was started for another schema: its [{differ[0]}] differs from the coordinator's"
            )
        if bool(facts.get("deployment")) != self.deployment:
            raise ConfigError(
                f"{label} is a {'deployment' if facts.get('deployment') else 'simulation'}"
                " party; the coordinator's run is not"
            )

    def _md(self) -> Metadata:
        return (("vfl-run", self.run_id),)

    # -- what the runner reads -----------------------------------------------------------
    def data(self, prepared: Prepared, repeat: int) -> Data:
        data: Data = prepared.data.elsewhere(self.at(repeat), self.first_unit)
        return data

    @property
    def n_parties(self) -> int:
        return self.total

    @property
    def widths(self) -> list[int]:
        return [int(f["width"]) for f in self.facts]

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(N, m, d)``: the providers, each one's rows and their width (horizontal)."""
        return (self.total, self.facts[0]["rows"], self.facts[0]["width"])

    @property
    def max_row_norms(self) -> list[float]:
        return [float(f["max_row_norm"]) for f in self.facts]

    # -- the transport ---------------------------------------------------------------------
    def _placed(self) -> Protocol:
        """The protocol the parties serve (known once they are connected)."""
        assert self.protocol is not None, "the parties are connected first"
        return self.protocol

    def hosts(self, protocol: Protocol) -> list[tuple[int, int]]:
        if protocol is not self.protocol:
            raise ConfigError(f"the parties serve protocol {self._placed().name}, not {protocol.name}")
        return [(m, m + 1) for m in range(self.first_unit, self.total)]

    def where(self, session: Session, k: int) -> str:
        return self.addresses[k]

    def first_seq(self, session: Session, k: int) -> int:
        return self.seq_base[k] if k < len(self.seq_base) else 0

    def _invoke(self, k: int, method: str, frame: bytes, kind: Kind) -> bytes:
        before = tcp_bytes.carried(self.ports)
        try:
            reply: bytes = self.calls[k][method](frame, metadata=self._md())
            return reply
        finally:
            self._carried(kind, before)

    def _open(self, session: Session, k: int) -> object:
        frame = codec.open_frame(session.protocol, session.repeat, session.spec)
        reply = self._invoke(k, "Open", frame, CONTROL)
        opened = codec.read(session.protocol, reply, unit=session.labels[k])
        self._framed(CONTROL, frame, session.spec, reply, opened)
        return opened

    def _send(
        self, session: Session, call: Call, requests: Messages, seqs: dict[int, int] | None
    ) -> tuple[Messages, Exception | None]:
        assert seqs is not None  # (journals: every message numbered)
        index = session.numbers[call]
        frames: dict[int, bytes] = {}
        futures: dict[int, grpc.Future] = {}
        failure: Exception | None = None
        got: Messages = {}
        before = tcp_bytes.carried(self.ports)
        for k, request in requests.items():
            frames[k] = codec.encode(Frame.REQUEST, index, seqs[k], request)
            md = self._md()
            if call.releases and self.owed and self.owed[k] > 0:  # on the party's record
                self.owed[k] -= 1
                md += (("vfl-replay", "1"),)
            futures[k] = self.calls[k]["Call"].future(frames[k], metadata=md)
        for k, future in futures.items():  # every reply that arrives is collected
            try:
                raw = future.result()
            except Exception as exc:  # noqa: BLE001 (grpc.RpcError: a lost party)
                if failure is None:
                    failure, self._failed = exc, k
                continue
            got[k] = codec.read(session.protocol, raw, index, unit=session.labels[k])
            self._framed(call.kind, frames[k], requests[k], raw, got[k])
        self._carried(call.kind, before)
        return got, failure

    def _adopt(self, session: Session, k: int, call: Call, request: object, reply: object) -> None:
        frame = codec.encode(Frame.ADOPT, session.numbers[call], 0, request, reply)
        codec.read(session.protocol, self._invoke(k, "Call", frame, CONTROL), unit=session.labels[k])

    def _lost(self, session: Session, failure: Exception) -> list[int]:
        import grpc  # lazy: optional dependency (grpc)

        if isinstance(failure, grpc.RpcError) and failure.code() not in (
            grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.CANCELLED,
        ):
            raise PartyLostError(self._why(self._failed, failure)) from None
        lost = [k for k in range(len(self.calls)) if not self._alive(k)]
        if not lost:
            raise failure
        return lost

    def _alive(self, k: int) -> bool:
        try:
            self.calls[k]["Health"](b"", timeout=2.0, metadata=self._md())
            return True
        except Exception:  # noqa: BLE001
            return False

    def _replace(self, session: Session, k: int, lost_at: str) -> str:
        """Wait for the party to answer again at its address (its operator restarts it)."""
        wait, m = self.config.run.party_wait, k + self.first_unit
        deadline = time.monotonic() + wait
        while True:
            self._connect(m)
            try:
                facts = self._health(k, wait=min(2.0, max(0.1, deadline - time.monotonic())))
            except ConfigError:
                if time.monotonic() >= deadline:
                    raise PartyLostError(
                        f"{self._label(k)} was lost at {lost_at} and did not answer again within {wait:g} s"
                    ) from None
                continue
            if facts.get("aligned") is False and self._agreed.get(k):  # a party file
                for frame in self._agreed[k]:  # its agreed rows and the widths, told again
                    self._aligner(k)(frame)
                facts = self._health(k, wait=2.0)
            if facts.get("width") != self.facts[k]["width"] or facts.get("rows") != self.facts[k]["rows"]:
                raise PartyLostError(f"{self._label(k)} came back with other data")
            return self.addresses[k]

    def _recovered(self, session: Session, record: dict[str, object]) -> None:
        first = record.pop("first")
        assert isinstance(first, int)  # (the session's first unit)
        self.recoveries.append({"party": first + 1, **record})

    # -- counting --------------------------------------------------------------------------
    def _carried(self, kind: Kind, before: dict[int, int]) -> None:
        after = tcp_bytes.carried(self.ports)
        self._count_carried(kind, sum(v - before.get(s, 0) for s, v in after.items()))

    def describe(self) -> dict[str, object]:
        return {
            "backend": "services",
            "channel": "plaintext on loopback (run.insecure)"
            if self.insecure
            else "gRPC over mutual TLS (client certificates from the deployment's CA)",
            "parties": {f"party {k + self.first_unit + 1}": a for k, a in enumerate(self.addresses)},
            "deployment": self.deployment,
            "recoveries": self.recoveries,
            "run": self.run_id,
            **(
                {"resumed": {f"party {f['party']}": (f.get("record") or {}).get("releases", 0) for f in self.facts}}
                if self.resume
                else {}
            ),
            "transport_source": TRANSPORT_SOURCE,
        }

    def finish(self) -> None:
        """The run is written: closing lets the parties drop its kept replies."""
        self.finished = True

    def phases(self) -> dict[str, dict[str, int]]:
        out = super().phases()
        if self.alignment_tcp:  # party files: the PSI and the agreement over the channels
            out["alignment"] = {"tcp_bytes": self.alignment_tcp}
        return out

    def close(self) -> None:
        for k, calls in enumerate(self.calls):
            try:
                calls["Close"](b"finished" if self.finished else b"", timeout=2.0, metadata=self._md())
            except Exception:  # noqa: BLE001 (a party already gone)
                pass
            self.channels[k].close()
        self.calls, self.channels = [], []

    def __enter__(self) -> ServiceUnits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
