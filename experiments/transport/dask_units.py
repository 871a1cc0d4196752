"""``run.backend = "dask"``: the run's units on Dask workers, behind the one unit transport.

:class:`DaskUnits` is the :class:`~vfl.core.units.Units` of a run whose units
are actors on Dask workers (:class:`~.dask_actor.UnitActor`, one generic
actor that hosts any protocol's side). Where they go follows the solver's
protocol (:class:`~vfl.core.protocol.Placement`): one unit per worker (the
parties of a vertical run; private stacking's party 1 stays with the
coordinator), or contiguous groups of units over the free workers (groups
whose sizes differ by at most one: Huang et al.'s providers, the LDP
agents). Each actor reads its data itself, and the coordinator checks what
it read (the files' checksums, the shapes) against its own read.

Every message is a frame of :mod:`vfl.core.codec` (bytes, no pickle of ours);
the coordinator is the solver in the client process, and it receives the
protocol's messages and nothing else, except the diagnostics a research run
asks for. Faults are :class:`~vfl.core.units.Session`'s: a lost worker's units
are rebuilt on another (``run.party_wait`` seconds for one to come) from their
data and their journal, or the run stops with one line naming them.

The transport's own count of the bytes is read from the TCP stack: the
``TCP_INFO`` counters of the coordinator's connections to the units' workers,
around every exchange, per phase (the protocol's rounds, the diagnostics,
the scoring of the test rows, the bookkeeping); beside it, the codec's
payload and framing.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vfl.core import codec
from vfl.core.codec import Frame
from vfl.core.errors import ConfigError, PartyLostError
from vfl.core.layouts import VerticalData
from vfl.core.protocol import CONTROL, Call, Kind, Protocol
from vfl.core.solver import Data, Solver
from vfl.core.units import Messages, Session, Units
from vfl.datasets import resolve_data_dir

from ..config import Config
from ..party_sides import label_holder_records, recording
from ..registry import get_solver, typed_params
from .dask_actor import UnitActor, facts
from .dask_cluster import cpus, dask_client, groups, local_cluster, security, too_few
from .phase_counts import PhaseCounts

if TYPE_CHECKING:  # (Dask's annotations are partial: Any to mypy, see pyproject)
    from dask.distributed import Client, Future, LocalCluster
    from distributed.actor import Actor

    from ..distribution import Prepared

__all__ = ["DaskUnits", "dask_backend"]

#: what the transport count is, for the manifest and the summary
TRANSPORT_SOURCE = (
    "the TCP stack's own counters (TCP_INFO bytes_acked + bytes_received) of "
    "the coordinator's connections to the units' workers, per phase: the "
    "protocol's rounds (bytes), the diagnostics, the last scoring of the test "
    "rows (inference_bytes) and the bookkeeping; Dask's message headers and "
    "framing included"
)
#: seconds a run waits for enough free workers to join before it names the shortfall
WORKER_WAIT = 2.0
#: offset of ``tcpi_bytes_acked`` (then ``tcpi_bytes_received``) in Linux's ``struct tcp_info``
_TCP_INFO_BYTES = 120


@dataclass
class _Slot:
    """One actor, its worker and the units it holds."""

    actor: Actor  # its methods return futures
    worker: str
    label: str
    first: int
    stop: int


class DaskUnits(PhaseCounts, Units):
    """A Dask client (and the local cluster it started, if any) with one actor per unit or
    group of units (see the module docstring)."""

    journals = True

    def __init__(
        self, client: Client | None, cluster: LocalCluster | None, config: Config, data_dir: str, address: str | None
    ) -> None:
        self.client, self.cluster, self.config = client, cluster, config
        self.data_dir, self.address = data_dir, address
        self.replayable = bool(config.privacy.replayable_noise)
        self.slots: list[_Slot] = []
        self.protocol: Protocol | None = None
        self.recoveries: list[dict[str, object]] = []  # units rebuilt after their worker was lost
        self.use_cache = True  # False: the actors leave nothing in their user cache (plan_run)
        self._init_counts()  # per phase: TCP bytes, the codec's payload and framing
        self.total = 0  # the data's units (parties, providers, agents)
        self._facts: list[dict[str, Any]] = []  # what each actor read (its fingerprint)
        self._agreed: dict[int, list[bytes]] = {}  # party files: per slot, the alignment frames past the PSI

    # -- the run's placement ---------------------------------------------------------
    def start(self, first: Prepared, checksums: object) -> None:
        """One actor per unit (or group) of the solver's protocol on its worker; each reads its
        data and is checked against ``first`` (repeat 0's distribution, read here) and
        ``checksums`` (the dataset's files)."""
        self.protocol = get_solver(self.config.solver.name).protocol
        place = self.protocol.placement
        self.vertical = isinstance(first.data, VerticalData)
        self.total = len(first.data.blocks if self.vertical else first.data.A)
        if self.slots:  # party files: placed and aligned already (align_parties)
            self._facts = []
            for s in self.slots:
                self._check(s.label, s.worker, s.actor, facts(first.data.cut(s.first, s.stop), False), None)
            return
        units = self.total - place.first
        wanted = units if place.own_worker else max(1, min(units, cpus()))
        if self.client is None:  # no --cluster: a local one, one worker per unit or group
            self.cluster, self.client = local_cluster(wanted)
            self.address = self.cluster.scheduler_address
        workers = self._free_workers(wanted, wait=WORKER_WAIT)
        what = f"{place.role} {place.plural}".strip()
        if not place.own_worker:
            if not workers:
                raise ConfigError(too_few(self.address, workers, units, what, f"the {what} need at least one worker"))
            ranges = [(a + place.first, b + place.first) for a, b in groups(units, len(workers))]
        else:
            if len(workers) < units:
                one = f"{place.role} {place.word}".strip()
                raise ConfigError(
                    too_few(
                        self.address,
                        workers,
                        units,
                        what,
                        f"each {one} needs its own worker" + (" (party 1 is the coordinator)" if place.first else ""),
                    )
                )
            ranges = [(m, m + 1) for m in range(place.first, self.total)]
        futures = [self._submit(place.label(a, b), a, b, w) for (a, b), w in zip(ranges, workers)]
        for (a, b), future, worker in zip(ranges, futures, workers):
            label = place.label(a, b)
            actor = self._actor(label, worker, future)
            self._check(label, worker, actor, facts(first.data.cut(a, b), False), checksums)
            self.slots.append(_Slot(actor, worker, label, a, b))

    def align_parties(self, config: Config, cls: type[Solver]) -> Any:  # (party_sides' records)
        """Party files: one actor per party on its worker, each reading its own file (the
        path travels, never the data), aligned with party 1's file, read here, by the PSI
        through the actors (:mod:`.party_sides`); returns the label holder's records."""
        self.protocol = cls.protocol
        place = self.protocol.placement
        M = len(config.data.options.get("party", []))
        units = M - place.first
        if self.client is None:
            self.cluster, self.client = local_cluster(units)
            self.address = self.cluster.scheduler_address
        workers = self._free_workers(units, wait=WORKER_WAIT)
        if len(workers) < units:
            raise ConfigError(too_few(self.address, workers, units, "parties", "each party needs its own worker"))
        ranges = [(m, m + 1) for m in range(place.first, M)]
        futures = [self._submit(place.label(a, b), a, b, w) for (a, b), w in zip(ranges, workers)]
        remote: list[tuple[str, str, list[str], Any]] = []
        own = None
        for (a, b), future, worker in zip(ranges, futures, workers):
            label = place.label(a, b)
            actor = self._actor(label, worker, future)
            self.slots.append(_Slot(actor, worker, label, a, b))

            def call(frame: bytes, slot: _Slot = self.slots[-1]) -> bytes:
                reply: bytes = slot.actor.align(frame).result()
                return reply

            call = recording(call, self._agreed.setdefault(len(self.slots) - 1, []))
            if a == 0:
                own = call
            else:
                got = actor.alignment_facts().result()
                remote.append((f"{label} on worker {worker}", got["id_type"], got["parts"], call))
        return label_holder_records(config, remote, own)

    def send_widths(self, own_width: int) -> list[int]:
        """Every party's column count (party 1's, ``own_width``, computed here when party 1
        is the coordinator); Dask's parties calibrate nothing of their own."""
        widths = [own_width] if self._placed().placement.first else []
        for s in self.slots:
            got = s.actor.describe().result()
            if got is None:
                raise ConfigError(f"{s.label} on worker {s.worker} did not align its rows")
            widths += [shape[1] for shape in got["shapes"]]
        return widths

    def _submit(self, label: str, first: int, stop: int, worker: str) -> Future:
        assert self.client is not None  # (connected or started before any actor)
        return self.client.submit(
            UnitActor,
            self.config,
            self.data_dir,
            first,
            stop,
            getattr(typed_params(self.config), "blas_threads", None),
            use_cache=self.use_cache,
            workers=[worker],
            allow_other_workers=False,
            actor=True,
            pure=False,
            key=f"{label.replace(' ', '-')}-{time.monotonic_ns()}",
        )

    def _actor(self, label: str, worker: str, future: Future) -> Actor:
        try:
            return future.result()  # reading a large dataset may take minutes: no timeout
        except Exception as exc:  # the worker's own error, e.g. its data path is missing
            raise ConfigError(
                f"{label} on worker {worker} cannot read its data: {' '.join(str(exc).split())}"
            ) from None

    def _check(self, label: str, worker: str, actor: Actor, expected: dict[str, Any], checksums: object) -> None:
        got = actor.describe().result()
        if (
            got["fallback"]
            or got["shapes"] != expected["shapes"]
            or got["units"] != expected["units"]
            or (checksums is not None and got["sha256"] != checksums)
        ):
            why = got["fallback"] or (
                f"blocks of shapes {got['shapes']}, expected {expected['shapes']}"
                if got["shapes"] != expected["shapes"]
                else "files with other checksums"
            )
            raise ConfigError(f"{label} on worker {worker} read other data than the coordinator: {why}")
        self._facts.append(got)

    def _free_workers(self, count: int, wait: float, exclude: Iterable[str] = ()) -> list[str]:
        """Workers holding no unit (nor in ``exclude``), sorted; waits up to ``wait`` s for
        ``count`` of them."""
        assert self.client is not None  # (connected or started before any actor)
        deadline = time.monotonic() + wait
        while True:
            used = {s.worker for s in self.slots} | set(exclude)
            try:
                info = self.client.scheduler_info(n_workers=-1)
            except (OSError, TimeoutError):
                info = {"workers": {}}
            free = sorted(w for w in info.get("workers", {}) if w not in used)
            if len(free) >= count or time.monotonic() >= deadline:
                return free
            time.sleep(0.25)

    def data(self, prepared: Prepared, repeat: int) -> Data:
        """The run's data for one repeat as the coordinator holds it, the units on the
        workers (their sessions open on this backend)."""
        data: Data = prepared.data.elsewhere(self.at(repeat), self._placed().placement.first)
        return data

    # -- what the units measured where they are ------------------------------------------
    @property
    def n_parties(self) -> int:
        """Every party of a vertical run, the coordinator's own included when it is one."""
        return self.total

    @property
    def widths(self) -> list[int]:
        """Each party's column count on a worker, as its worker read it."""
        return [shape[1] for f in self._facts for shape in f["shapes"]]

    @property
    def max_row_norms(self) -> list[float]:
        """Each party's largest row norm on a worker, measured there."""
        return [v for f in self._facts for v in f["max_row_norms"]]

    @property
    def shape(self) -> tuple[int, ...]:
        """``(N, m, d)``: the units and the shape of each one's rows (providers, agents)."""
        return (self.total, *self._facts[0]["shapes"][0][1:])

    # -- the transport (vfl.core.units.Units) ---------------------------------------------
    def _placed(self) -> Protocol:
        """The protocol whose units the workers hold (placed by :meth:`start`)."""
        assert self.protocol is not None, "the units are placed first"
        return self.protocol

    def hosts(self, protocol: Protocol) -> list[tuple[int, int]]:
        if protocol is not self.protocol:
            raise ConfigError(f"the workers were started for protocol {self._placed().name}, not {protocol.name}")
        return [(s.first, s.stop) for s in self.slots]

    def where(self, session: Session, k: int) -> str:
        return self.slots[k].worker

    def _open(self, session: Session, k: int) -> object:
        frame = codec.open_frame(session.protocol, session.repeat, session.spec)
        before = self.transport_bytes()
        reply = self.slots[k].actor.serve(frame).result()
        self._carried(CONTROL, before)
        opened = codec.read(session.protocol, reply, unit=session.labels[k])
        self._framed(CONTROL, frame, session.spec, reply, opened)
        return opened

    def _send(
        self, session: Session, call: Call, requests: Messages, seqs: dict[int, int] | None
    ) -> tuple[Messages, Exception | None]:
        assert seqs is not None  # (journals: every message numbered)
        index = session.protocol.index(call)
        frames: dict[int, bytes] = {}
        futures: dict[int, Future] = {}
        failure: Exception | None = None
        before = self.transport_bytes()
        try:
            for k, request in requests.items():
                frames[k] = codec.encode(Frame.REQUEST, index, seqs[k], request)
                futures[k] = self.slots[k].actor.serve(frames[k])  # every unit at once
        except Exception as exc:  # noqa: BLE001 (a lost worker shows as many types)
            failure = exc
        got: Messages = {}
        for k, future in futures.items():  # every reply that arrives is collected
            try:
                raw = future.result()
            except Exception as exc:  # noqa: BLE001
                failure = failure or exc
                continue
            got[k] = codec.read(session.protocol, raw, index, unit=session.labels[k])
            self._framed(call.kind, frames[k], requests[k], raw, got[k])
        self._carried(call.kind, before)
        return got, failure

    def _adopt(self, session: Session, k: int, call: Call, request: object, reply: object) -> None:
        frame = codec.encode(Frame.ADOPT, session.protocol.index(call), 0, request, reply)
        before = self.transport_bytes()
        codec.read(session.protocol, self.slots[k].actor.serve(frame).result(), unit=session.labels[k])
        self._carried(CONTROL, before)

    def _lost(self, session: Session, failure: Exception) -> list[int]:
        if not self._scheduler_alive():  # not a party's worker: say so, not after party_wait
            word = session.protocol.placement.iteration
            raise PartyLostError(
                f"the Dask scheduler {self.address} was lost at {word} "
                f"{max(session.done, default=0) + 1} (the parties' workers "
                "cannot be reached through it)"
            ) from None
        lost = [k for k, s in enumerate(self.slots) if not self._alive(s)]
        if not lost:
            raise failure  # not a lost worker: the unit's own error
        return lost

    def _scheduler_alive(self) -> bool:
        """Whether the scheduler answers (an external one; a local cluster's lives here)."""
        if self.client is None or self.address is None:
            return True
        try:  # a client reconnecting gets run.party_wait (at most 10 s) to find it again
            wait = min(10.0, max(1.0, self.config.run.party_wait))
            self.client.sync(self.client.scheduler.identity, callback_timeout=wait)
            return True
        except Exception:  # noqa: BLE001 (a closed comm shows as many types)
            return False

    def _alive(self, slot: _Slot) -> bool:
        try:
            slot.actor.ping().result(timeout=10)
            return True
        except Exception:  # noqa: BLE001
            return False

    def _replace(self, session: Session, k: int, lost_at: str) -> str:
        slot = self.slots[k]
        wait = self.config.run.party_wait
        old, slot.worker = slot.worker, ""
        # the scheduler may list the dead worker for a while: never place the unit there
        workers = self._free_workers(1, wait=wait, exclude={old})
        if not workers:
            its = "their" if slot.stop - slot.first > 1 else "its"
            raise PartyLostError(
                f"{slot.label}: {its} worker {old} was lost at {lost_at} and "
                f"no worker could take over {its} data within {wait:g} s"
            ) from None
        slot.actor = self._actor(slot.label, workers[0], self._submit(slot.label, slot.first, slot.stop, workers[0]))
        for frame in self._agreed.get(k, ()):  # party files: the agreed rows, told again
            slot.actor.align(frame).result()
        slot.worker = workers[0]
        return workers[0]

    def _recovered(self, session: Session, record: dict[str, object]) -> None:
        first = record.pop("first")
        if self._placed().placement.own_worker:
            assert isinstance(first, int)  # (the session's first unit)
            record = {"party": first + 1, **record}
        self.recoveries.append(record)

    # -- counting -------------------------------------------------------------------------
    def _carried(self, kind: Kind, before: dict[int, int]) -> None:
        self._count_carried(kind, self.carried(before))

    def transport_bytes(self) -> dict[int, int]:
        """Per open connection of the coordinator to a unit's worker: the bytes TCP carried
        both ways so far (see :data:`TRANSPORT_SOURCE`)."""
        assert self.client is not None  # (connected or started before any actor)
        pool = self.client.rpc
        workers = {s.worker for s in self.slots}
        out: dict[int, int] = {}
        for addr in workers:
            for comm in (*pool.available.get(addr, ()), *pool.occupied.get(addr, ())):
                sock = getattr(getattr(comm, "stream", None), "socket", None)
                if sock is None:
                    continue
                try:
                    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                except OSError:  # closed under us by a lost worker: its bytes stop counting here
                    continue
                out[id(comm)] = sum(struct.unpack_from("QQ", info, _TCP_INFO_BYTES))
        return out

    def carried(self, before: dict[int, int]) -> int:
        """What the connections carried since ``before`` (new ones from zero)."""
        after = self.transport_bytes()
        return sum(v - before.get(k, 0) for k, v in after.items())

    def describe(self) -> dict[str, object]:
        plural = self.protocol.placement.plural if self.protocol is not None else "parties"
        return {
            "backend": "dask",
            "scheduler": self.address,
            "local_cluster": self.cluster is not None,
            plural: {s.label: s.worker for s in self.slots},
            "recoveries": self.recoveries,
            "transport_source": TRANSPORT_SOURCE,
        }

    def close(self) -> None:
        if self.client is None:
            return
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()

    def __enter__(self) -> DaskUnits:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dask_backend(config: Config, cluster: str | None, data_dir: str | Path | None) -> DaskUnits:
    """Connect to the scheduler at ``cluster`` now (an unreachable one is refused at once), or
    prepare a local cluster, started with one worker per unit when the units are known."""
    try:
        import dask.distributed  # noqa: F401  # lazy: optional dependency (dask.distributed)
    except ImportError:
        raise ConfigError("run.backend = \"dask\" needs dask.distributed: pip install 'vfl[dask]'") from None
    if cluster is None:
        return DaskUnits(None, None, config, _data_dir(data_dir), None)
    # the coordinator talks to the units' workers directly, not through the scheduler
    extra = {"security": security()} if cluster.startswith("tls://") else {}
    client: Client = dask_client(cluster, option="--cluster", direct_to_workers=True, **extra)
    return DaskUnits(client, None, config, _data_dir(data_dir), cluster)


def _data_dir(data_dir: str | Path | None) -> str:
    """The data directory as the workers must see it (they read the files themselves)."""
    return str(resolve_data_dir(data_dir))
