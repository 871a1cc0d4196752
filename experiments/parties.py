"""``run.backend = "dask"``: each party of a vertical run on its own Dask worker.

Party m is a Dask actor (:class:`PartyActor`) pinned to one worker. The
actor reads the dataset file itself, runs the config's preprocessing and
partition, and keeps only party m's columns (training and held-out); the
labels stay with the coordinator. For each repeat the solver's seam opens
on every actor the party's side of its protocol (a :class:`Side`, holding
the algorithm layer's party object): ADMM sharing's here
(:class:`SharingSide`: each epoch the coordinator sends each party the
N-vector it pulls and receives the N-vector share the protocol sends back,
Hu et al. 2019, Algorithm 1), FDML's (:mod:`.fdml`) and private stacking's
passive parties' (:mod:`.passives`). The coordinator is the solver in the
client process, and it receives the messages of the protocol and nothing
else, except the diagnostics a research run asks for (the models, exact
margins and residual terms, :class:`vfl.admm.sharing.party.Parties`).
Where party 1 is the hub itself (private stacking's active party), its
block stays with the coordinator and parties 2..M go to the workers.

The actor runs the very :class:`~vfl.admm.sharing.party.Party` code of the
in-process backend on the same arrays, with the same per-party noise
stream (:class:`~vfl.core.solver.Streams`), so a run gives the same numbers
to the bit when both use the same BLAS thread count (``solver.blas_threads
= 1``: Dask's nanny starts its workers with one BLAS thread).

Faults: the coordinator checkpoints every completed round in memory (the
pulls it sent, the noise scales, the epoch count; each party keeps its
noise stream's position before the round). When a party's worker dies (or
the scheduler restarts and the actor is gone), the round is rolled back on
the surviving parties, a worker that can read the party's data is waited
for (``run.party_wait`` seconds), the party is rebuilt there from its data
and the checkpoint (its model is a function of the last pull, its noise
stream is replayed), and the round is run again; the numbers are those of
an uninterrupted run. Otherwise the run stops with one line naming the
party, and nothing is written. A seam whose parties' state is not a
function of the checkpoint (FDML's models) stops at once
(:attr:`DaskUnits.not_rebuilt`).

The transport's own count of the bytes is read from the TCP stack: the
``TCP_INFO`` counters of the coordinator's connections to the parties'
workers, around every protocol round (:meth:`DaskBackend.transport_bytes`),
and around the scoring of the test rows (the inference messages).

The machinery is shared with Huang et al.'s providers and the LDP agents on Dask
(:mod:`.providers`, :mod:`.agents`): :class:`DaskBackend` (the client, the
local cluster, the workers, the transport counters) places the units of the
run's setting by a :class:`Layout` (one actor per party here; contiguous
groups of providers or agents there), and :class:`DaskUnits` runs a
protocol round on all the actors, counts its bytes, and on a lost worker
rolls the round back on the others and rebuilds the lost unit from the
coordinator's checkpoint (:class:`DaskPartyUnits`: its base for the
vertical seams).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from dataclasses import dataclass

import numpy as np

from vfl.admm.sharing.party import Parties, Party, PartySpec
from vfl.core.errors import ConfigError, PartyLostError
from vfl.core.preprocessing import row_norms
from vfl.core.solver import VerticalData, add_noise

from .config import Config

__all__ = ["DaskBackend", "DaskParties", "DaskPartyUnits", "DaskUnits", "Layout", "PartyActor",
           "SharingSide", "Side", "check_cluster_option", "dask_backend"]

#: what the transport count is, for the manifest and the summary
TRANSPORT_SOURCE = ("the TCP stack's own counters (TCP_INFO bytes_acked + bytes_received) of "
                    "the coordinator's connections to the units' workers, over the protocol's "
                    "rounds only (the diagnostics' requests are not in it) and, for inference, "
                    "the last scoring of the test rows; Dask's message headers and framing "
                    "included")
#: offset of ``tcpi_bytes_acked`` (then ``tcpi_bytes_received``) in Linux's ``struct tcp_info``
_TCP_INFO_BYTES = 120


def check_cluster_option(config: Config, cluster: str | None) -> None:
    """Refuse, before any work, ``--cluster`` without the dask backend or a bad address."""
    if cluster is None:
        return
    if config.run.backend != "dask":
        raise ConfigError("--cluster needs run.backend = \"dask\" (--set run.backend=dask)")
    if not cluster.startswith("tcp://") or ":" not in cluster[len("tcp://"):]:
        raise ConfigError(f"--cluster {cluster!r} is not a Dask scheduler address such as "
                          "tcp://HOST:8786")


# ------------------------------------------------------------------ worker side --
class PartyActor:
    """Party m on its worker: its columns, read here, and the side it plays of the run's
    protocol (a :class:`Side`, opened by the coordinator's seam for each repeat)."""

    def __init__(self, config: Config, data_dir, m: int, blas_threads: int | None,
                 use_cache: bool = True):
        from .runner import _load_config_dataset, _prepare
        from .settings import prepare
        from .registry import get_solver

        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(blas_threads, user_api="blas")  # the whole process: one party
        # read here, never from a cache in memory (nor from the parsed-array one without use_cache)
        dataset, note = _load_config_dataset(config, data_dir, use_cache)
        setting = prepare(config, dataset, get_solver(config.solver.name))
        prepared = _prepare(setting, config, 0)  # a vertical split is the same every repeat
        self.m = m
        self.D, self.test = prepared.data.blocks[m], prepared.test[m]
        # what the coordinator checks it against: the same file, no fallback, the same block;
        # and the largest row norm, which accounting mode needs at most 1 (unit rows)
        rows, columns = self.D.shape
        self.fingerprint = {"rows": int(rows), "columns": int(columns),
                            "sha256": dataset.checksums, "fallback": note,
                            "max_row_norm": float(row_norms(self.D).max(initial=0.0))}
        del dataset, setting, prepared  # keep party m's columns only (the labels stay behind)
        self.config = config
        self.side: Side | None = None

    def describe(self) -> dict:
        return self.fingerprint

    def open(self, side: type, *args):
        """Party m's side of the solver's protocol for one repeat; returns what it reports."""
        self.side = side(self, *args)
        return self.side.opened()

    def call(self, method: str, *args):
        """A message of the protocol (or a diagnostic) to the open side."""
        return getattr(self.side, method)(*args)

    def sync(self, rounds: int) -> int:
        return 0 if self.side is None else self.side.sync(rounds)

    def ping(self) -> int:
        return 0 if self.side is None else self.side.rounds


class Side:
    """Party m's side of one protocol on its worker, for one repeat (:meth:`PartyActor.open`).

    A subclass holds the algorithm layer's party object (ADMM sharing's
    :class:`~vfl.admm.sharing.party.Party`, FDML's, a passive party's) on the actor's
    block, with party m's streams; its methods are the messages the coordinator sends.
    """

    #: protocol rounds completed (the coordinator's checkpoint counts the same)
    rounds = 0

    def opened(self):
        """What the coordinator learns when the side opens (default: nothing)."""
        return None

    def sync(self, rounds: int) -> int:
        """Roll back a round the coordinator did not complete; returns the rounds done."""
        return self.rounds


class SharingSide(Side):
    """Party m of ADMM sharing (Hu et al. 2019, Algorithm 1) on its worker."""

    def __init__(self, actor: PartyActor, spec: PartySpec, repeat: int):
        from .runner import _streams

        rng = _streams(actor.config, repeat).noise(actor.m)
        self.party = Party(actor.D, spec, rng, _release)
        self.test = actor.test
        self._before = None  # the noise stream's position before the last round

    def opened(self) -> int:
        return self.party.n_features

    def update(self, r, rho, sigma):
        self._before = copy.deepcopy(self.party.rng.bit_generator.state)
        reply = self.party.update(r, rho, sigma)
        self.rounds += 1
        return reply

    def sync(self, rounds: int) -> int:
        if self.rounds == rounds + 1 and self._before is not None:
            self.party.rng.bit_generator.state = self._before
            self.rounds = rounds
        return self.rounds

    def resume(self, sigmas, r, rho) -> None:
        """Catch up with the checkpoint: replay the noise draws of the completed rounds, then
        recompute the model from the last pull (it depends on nothing else)."""
        zero = np.zeros(self.party.block.D.shape[0])
        for sigma in sigmas:
            self.party.publish(self.party.x, zero, sigma)
        if r is not None:
            self.party.restore(r, rho)
        self.rounds = len(sigmas)

    def state(self):
        return self.party.x, self.party.exact

    def rmatvec(self, y):
        return self.party.block.rmatvec(y)

    def test_product(self):
        return self.test @ self.party.x


def _release(mean, *, scale, rng):
    """Output noise on the worker: the draw of :meth:`vfl.core.solver.Solver.release`."""
    return add_noise("gaussian", mean, scale, rng)


# ------------------------------------------------------------------ client side --
@dataclass
class _Slot:
    """One unit's actor (a party, or a group of providers), its worker and the coordinator's
    checkpoint of it."""

    actor: object
    worker: str
    label: str  # "party 2", "providers 1-50": how errors and the manifest name it
    pull: np.ndarray | None = None  # (a party) the last pull of a completed round
    sigmas: list | None = None  # (a party) the noise scale of every completed round


class Layout:
    """Where the units of one setting go: how many workers, which actor on each, what the
    coordinator expects each to have read, and the solver's data with the units elsewhere."""

    #: what the units are called in the manifest ("parties", "providers")
    units = ""

    def local_workers(self, first) -> int:
        """Workers of a local cluster started for the run."""
        raise NotImplementedError

    def place(self, first, workers: list[str], address: str) -> list[tuple[str, tuple]]:
        """``(label, actor arguments)`` per unit for these free workers of the cluster at
        ``address`` (or ConfigError)."""
        raise NotImplementedError

    actor: type

    def expected(self, first, k: int) -> dict:
        """What unit k's actor must report (:meth:`PartyActor.describe`) besides the files."""
        raise NotImplementedError

    def data(self, backend, prepared, repeat: int):
        raise NotImplementedError


class _PartyLayout(Layout):
    """Vertical: one actor per party, each on its own worker (Hu et al. 2019, Algorithm 1).

    Where party 1 is the hub itself (private stacking's active party, which holds the labels
    and scores its own columns: the solver's :class:`~vfl.core.wire.Inference` says so), its
    block stays with the coordinator and parties 2..M go to the workers.
    """

    units = "parties"
    actor = None  # PartyActor, set below

    def __init__(self, hub_party: bool = False):
        self.first = int(hub_party)  # the first party placed on a worker (0-based)

    def local_workers(self, first) -> int:
        return len(first.data.blocks) - self.first

    def place(self, first, workers, address):
        M = len(first.data.blocks)
        self.parties = list(range(self.first, M))
        if len(workers) < len(self.parties):
            raise ConfigError(too_few(address, workers, len(self.parties), *(
                ("passive parties", "each passive party needs its own worker (party 1 is the "
                                    "coordinator)") if self.first else
                ("parties", "each party needs its own worker"))))
        return [(f"party {m + 1}", (m,)) for m in self.parties]

    def expected(self, first, k):
        rows, cols = first.data.blocks[self.parties[k]].shape
        return {"rows": int(rows), "columns": int(cols)}

    def data(self, backend, prepared, repeat):
        held = prepared.data.blocks[:self.first] or None  # the hub's own block, if it is a party
        return VerticalData(held, prepared.data.y, parties=_Factory(backend, repeat))


def too_few(address: str, workers, units: int, what: str, why: str) -> str:
    """The one line that refuses a cluster with too few free workers for the units."""
    return (f"the Dask cluster at {address} has {len(workers)} "
            f"worker{'s' if len(workers) != 1 else ''} for {units} {what}: {why}")


def _layout(solver) -> Layout:
    """The :class:`Layout` of a solver's setting (the settings a backend can place)."""
    from vfl.core.solver import Setting

    from .agents import AgentLayout

    if solver.setting is Setting.VERTICAL:
        return _PartyLayout(hub_party=solver.inference.hub_holds_first)
    return {Setting.NETWORK: AgentLayout}[solver.setting]()


class DaskBackend:
    """A Dask client (and the local cluster it started, if any) with one actor per unit: a
    party, or a group of providers (:class:`Layout`)."""

    def __init__(self, client, cluster, config: Config, data_dir, address: str):
        self.client, self.cluster, self.config = client, cluster, config
        self.data_dir, self.address = data_dir, address
        self.slots: list[_Slot] = []
        self.layout: Layout | None = None
        self.transport = 0  # bytes over all protocol rounds of the run
        self.inference_transport = None  # bytes of the last scoring of the test rows
        self.recoveries: list[dict] = []  # units rebuilt after their worker was lost
        self.use_cache = True  # False: the actors leave nothing in their user cache (plan_run)

    # -- setup ------------------------------------------------------------------------
    def start(self, first, checksums) -> None:
        """One actor per unit of the run's setting on its worker; each reads its data and is
        checked against ``first`` (repeat 0's distribution, read here) and ``checksums``
        (the dataset's files)."""
        from .registry import get_solver

        self.layout = _layout(get_solver(self.config.solver.name))
        if self.client is None:  # no --cluster: a local one, one worker per unit
            self.cluster, self.client = _local_cluster(self.layout.local_workers(first))
            self.address = self.cluster.scheduler_address
        workers = self._free_workers(self.layout.local_workers(first), wait=2.0)
        placed = self.layout.place(first, workers, self.address)
        futures = [self._submit(label, args, w) for (label, args), w in zip(placed, workers)]
        for k, ((label, _), future, worker) in enumerate(zip(placed, futures, workers)):
            actor = self._actor(label, worker, future)
            self._check(label, worker, actor, self.layout.expected(first, k), checksums)
            self.slots.append(_Slot(actor, worker, label))

    def _submit(self, label: str, args: tuple, worker: str):
        return self.client.submit(self.layout.actor, self.config, self.data_dir, *args,
                                  self.config.solver.values.get("blas_threads"),
                                  use_cache=self.use_cache,
                                  workers=[worker], allow_other_workers=False, actor=True,
                                  pure=False, key=f"{label.replace(' ', '-')}-"
                                                  f"{time.monotonic_ns()}")

    def _actor(self, label: str, worker: str, future):
        try:
            return future.result()  # reading a large dataset may take minutes: no timeout
        except Exception as exc:  # the worker's own error, e.g. its data path is missing
            raise ConfigError(f"{label} on worker {worker} cannot read its data: "
                              f"{' '.join(str(exc).split())}") from None

    def _check(self, label, worker, actor, expected: dict, checksums) -> None:
        got = actor.describe().result()
        shape = {k: got[k] for k in expected}
        if got["fallback"] or shape != expected or got["sha256"] != checksums:
            why = got["fallback"] or (
                f"{' x '.join(f'{v} {k}' for k, v in shape.items())}, expected "
                f"{' x '.join(str(v) for v in expected.values())}" if shape != expected
                else "files with other checksums")
            raise ConfigError(f"{label} on worker {worker} read other data than the "
                              f"coordinator: {why}")

    def _free_workers(self, count: int, wait: float, exclude=()) -> list[str]:
        """Workers holding no unit (nor in ``exclude``), sorted; waits up to ``wait`` s for
        ``count`` of them."""
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

    def data(self, prepared, repeat: int):
        """The run's data for one repeat: the labels (vertical) or the public rows
        (horizontal) here, the units' data on the workers."""
        return self.layout.data(self, prepared, repeat)

    # -- the run ----------------------------------------------------------------------
    def transport_bytes(self) -> dict:
        """Per open connection of the coordinator to a unit's worker: the bytes TCP carried
        both ways so far (see :data:`TRANSPORT_SOURCE`)."""
        import socket
        import struct

        pool = self.client.rpc
        workers = {s.worker for s in self.slots}
        out = {}
        for addr in workers:
            for comm in (*pool.available.get(addr, ()), *pool.occupied.get(addr, ())):
                sock = getattr(getattr(comm, "stream", None), "socket", None)
                if sock is None:
                    continue
                info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
                out[id(comm)] = sum(struct.unpack_from("QQ", info, _TCP_INFO_BYTES))
        return out

    def carried(self, before: dict) -> int:
        """What the connections carried since ``before`` (new ones from zero)."""
        after = self.transport_bytes()
        return sum(v - before.get(k, 0) for k, v in after.items())

    def count_transport(self, before: dict) -> None:
        """Add what the connections carried since ``before`` to the run's protocol bytes."""
        self.transport += self.carried(before)

    def describe(self) -> dict:
        units = self.layout.units if self.layout is not None else "parties"
        out = {"backend": "dask", "scheduler": self.address,
               "local_cluster": self.cluster is not None,
               units: {s.label: s.worker for s in self.slots},
               "recoveries": self.recoveries,
               "transport_source": TRANSPORT_SOURCE}
        return out

    def close(self) -> None:
        if self.client is None:
            return
        with contextlib.suppress(Exception):
            self.client.close()
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class DaskUnits:
    """A protocol's rounds over the backend's actors, with the transport counted and lost
    workers recovered (the base of :class:`DaskParties` and the providers' seam).

    A subclass says how many rounds a unit has completed (:meth:`_done`), how to rebuild a
    lost unit on a new worker from the coordinator's checkpoint (:meth:`_rebuild`), and
    what the run's iterations are called (:attr:`iteration_word`); or, where a unit's state
    is its own and the checkpoint cannot rebuild it, why (:attr:`not_rebuilt`): a lost
    worker then stops the run with one line naming its units.
    """

    iteration_word = "iteration"
    #: why a lost unit is not rebuilt from the checkpoint (None: it is)
    not_rebuilt: str | None = None

    def __init__(self, backend: DaskBackend, repeat: int):
        self.backend, self.repeat = backend, repeat
        self.slots = backend.slots
        self.received: dict = {}  # the final replies of the round in flight

    def _round(self, method: str, args: dict, *, final: bool = False) -> dict:
        """``method(*args[k])`` on every unit k of ``args`` at once: one protocol round, its
        bytes counted; a lost worker's unit is rebuilt and the round run again.

        ``final``: a reply stands once received (a release, drawn once): the round runs again
        only on the units without one, and :attr:`received` holds them meanwhile.
        """
        self.received = {}
        while True:
            before = self.backend.transport_bytes()
            replies, failure = dict(self.received), None
            try:
                futures = {k: getattr(self.slots[k].actor, method)(*a) for k, a in args.items()
                           if k not in self.received}
            except Exception as exc:  # noqa: BLE001 (a lost worker shows as many types)
                futures, failure = {}, exc
            for k, f in futures.items():  # every reply that arrives is collected
                try:
                    replies[k] = f.result()
                except Exception as exc:  # noqa: BLE001
                    failure = failure or exc
                    continue
                if final:
                    self.received[k] = replies[k]
            if failure is not None:
                self._recover(failure)
                continue
            self.backend.count_transport(before)
            return replies

    def _ask(self, method: str, *args, each=None) -> list:
        """A diagnostic (not counted): ``method(*args)`` on every unit, or ``method(*each(k))``."""
        while True:
            try:
                futures = [getattr(s.actor, method)(*(args if each is None else each(k)))
                           for k, s in enumerate(self.slots)]
                return [f.result() for f in futures]
            except Exception as exc:  # noqa: BLE001
                self._recover(exc)

    def _alive(self, slot: _Slot) -> bool:
        try:
            slot.actor.ping().result(timeout=10)
            return True
        except Exception:  # noqa: BLE001
            return False

    def _done(self, k: int) -> int:
        """Rounds unit k completed, as the coordinator's checkpoint has them."""
        raise NotImplementedError

    def _rebuild(self, k: int, worker: str) -> None:
        """A new actor for unit k on ``worker``, caught up with the checkpoint."""
        raise NotImplementedError

    def _plural(self, k: int) -> bool:
        """Whether unit k is several (a group of providers): "their" data in errors."""
        return False

    def _lost(self, slot: _Slot, old: str, wait: float) -> str:
        k = self.slots.index(slot)
        its = "their" if self._plural(k) else "its"
        return (f"{slot.label}: {its} worker {old} was lost at {self.iteration_word} "
                f"{self._done(k) + 1} and no worker could take over {its} data within "
                f"{wait:g} s")

    def _fault(self, k: int) -> dict:
        return {"unit": self.slots[k].label}

    def _recover(self, exc: Exception) -> None:
        """Rebuild lost units from the checkpoint and roll the others back (or stop)."""
        lost = [k for k, s in enumerate(self.slots) if not self._alive(s)]
        if not lost:
            raise exc  # not a lost worker: the unit's own error
        if self.not_rebuilt is not None:
            k = lost[0]
            its = "their" if self._plural(k) else "its"
            raise PartyLostError(f"{self.slots[k].label}: {its} worker {self.slots[k].worker} "
                                 f"was lost at {self.iteration_word} {self._done(k) + 1}; "
                                 f"{self.not_rebuilt}, so the run stops") from None
        wait = self.backend.config.run.party_wait
        gone = {self.slots[k].worker for k in lost}
        for k in lost:
            slot = self.slots[k]
            old, slot.worker = slot.worker, ""
            # the scheduler may list the dead worker for a while: never place the unit there
            workers = self.backend._free_workers(1, wait=wait, exclude=gone)
            if not workers:
                raise PartyLostError(self._lost(slot, old, wait)) from None
            actor = self.backend._actor(slot.label, workers[0],
                                        self.backend._submit(slot.label, self._args(k),
                                                             workers[0]))
            slot.actor, slot.worker = actor, workers[0]
            self._rebuild(k, workers[0])
            self.backend.recoveries.append({**self._fault(k), "repeat": self.repeat,
                                            self.iteration_word: self._done(k) + 1,
                                            "lost": old, "resumed_on": workers[0]})
        for k, s in enumerate(self.slots):
            if k not in lost:  # (a unit whose final reply arrived has done the round in flight)
                s.actor.sync(self._done(k) + (k in self.received)).result()

    def _args(self, k: int) -> tuple:
        """The actor's arguments of unit k (as :meth:`Layout.place` gave them)."""
        raise NotImplementedError


class _Factory:
    """``parties(spec)`` for a vertical solver: open the protocol's side on every party's
    actor. The spec says which protocol (ADMM sharing's :class:`PartySpec`, FDML's, a
    passive party's of private stacking), hence which seam the solver gets."""

    def __init__(self, backend: DaskBackend, repeat: int):
        self.backend, self.repeat = backend, repeat
        #: every party of the run, the hub's own included when it is one (private stacking)
        self.n_parties = backend.layout.first + len(backend.slots)

    @property
    def widths(self) -> list[int]:
        """The column count d_m of each party on a worker, as its worker read it."""
        return [f["columns"] for f in self._fingerprints()]

    @property
    def max_row_norms(self) -> list[float]:
        """The largest row norm of each party on a worker, measured there (the unit rows a
        guarantee needs)."""
        return [f["max_row_norm"] for f in self._fingerprints()]

    def _fingerprints(self) -> list[dict]:
        return [f.result() for f in [s.actor.describe() for s in self.backend.slots]]

    def __call__(self, spec, *args) -> "DaskPartyUnits":
        return _seams()[type(spec)](self.backend, spec, self.repeat, *args)


def _seams() -> dict:
    """Each vertical protocol's seam over the parties' actors, by its spec's type."""
    return {}


class DaskPartyUnits(DaskUnits):
    """:class:`DaskUnits` over one actor per party, each playing the protocol's :attr:`side`
    (opened with the solver's spec for the repeat): the base of every vertical seam.

    ``opened`` is what each side reported when it opened (a lost worker is recovered from
    there on: a subclass's :meth:`_reset` is its empty checkpoint).
    """

    iteration_word = "epoch"
    #: the worker side of the protocol (a :class:`Side`)
    side: type

    def __init__(self, backend: DaskBackend, spec, repeat: int):
        DaskUnits.__init__(self, backend, repeat)
        self.spec = spec
        self.party_index = list(backend.layout.parties)  # slot k holds party party_index[k]
        self._reset()
        self.opened = self._ask("open", self.side, spec, repeat)

    def _reset(self) -> None:
        """The coordinator's checkpoint before the repeat's first round."""

    def _open(self, slot: _Slot):
        return slot.actor.open(self.side, self.spec, self.repeat)

    def _each(self, method: str, args: dict, *, final: bool = False) -> dict:
        """One protocol round: ``method(*args[k])`` on the side of every party k of ``args``
        (``final``: see :meth:`DaskUnits._round`)."""
        return self._round("call", {k: (method, *a) for k, a in args.items()}, final=final)

    def _all(self, method: str, *args, each=None) -> list:
        """A diagnostic (not counted) on every party's side."""
        return self._ask("call", method, *args) if each is None else \
            self._ask("call", each=lambda k: (method, *each(k)))

    def _args(self, k):
        return (self.party_index[k],)

    def _scored(self, method: str, *args) -> list:
        """The parties' messages that score the test rows (``method`` on every side), their
        transport bytes kept as the last scoring's."""
        before = self.backend.transport_bytes()
        shares = self._all(method, *args)
        self.backend.inference_transport = self.backend.carried(before)
        return shares

    def _fault(self, k):
        return {"party": self.party_index[k] + 1, **super()._fault(k)}


class DaskParties(DaskPartyUnits, Parties):
    """The :class:`~vfl.admm.sharing.party.Parties` seam over one actor per party."""

    side = SharingSide
    records_releases = False  # each party draws its noise on its worker

    def __init__(self, backend: DaskBackend, spec: PartySpec, repeat: int):
        DaskPartyUnits.__init__(self, backend, spec, repeat)
        self.n_parties = len(self.slots)
        self.n_features = self.opened

    def _reset(self):
        for s in self.slots:
            s.pull, s.sigmas = None, []
        self._rho = None
        self._inflight = None  # (pulls, rho, sigmas) of the round in flight
        self._state = None  # (models, exact shares) of the current round, once asked

    # -- the protocol: one round of pulls and shares --------------------------------
    def update(self, m, r, rho, sigma):
        return self._pulls({m: r}, rho, {m: sigma})[m]

    def update_all(self, pulls, rho, sigmas):
        out = self._pulls(dict(enumerate(pulls)), rho, dict(enumerate(sigmas)))
        return [out[m] for m in range(len(pulls))]

    def _pulls(self, pulls: dict, rho: float, sigmas: dict) -> dict:
        # a share, once received, stands: a deployment run's noise cannot be drawn again,
        # so a party that answered is neither asked again nor rolled back after a fault
        self._inflight = (pulls, rho, sigmas)
        replies = self._each("update", {m: (r, rho, float(sigmas[m])) for m, r in pulls.items()},
                             final=True)
        for m, r in pulls.items():
            self.slots[m].pull = np.array(r, copy=True)  # the checkpoint's own (r may be reused)
            self.slots[m].sigmas.append(float(sigmas[m]))
        self._rho = rho
        self._state = None
        return replies

    # -- diagnostics --------------------------------------------------------------------
    def models(self):
        if self._state is None:
            self._state = self._all("state")
        return [x for x, _ in self._state]

    def exact_shares(self):
        if self._state is None:
            self._state = self._all("state")
        return [e for _, e in self._state]

    def rmatvecs(self, y):
        return self._all("rmatvec", y)

    def test_products(self, test):
        """Each party's share of the test rows (its held-out columns are on its worker): the
        inference messages, whose transport bytes are kept (the last scoring's)."""
        return self._scored("test_product")

    # -- faults ---------------------------------------------------------------------------
    def _done(self, m):
        return len(self.slots[m].sigmas)

    def _rebuild(self, m: int, worker: str) -> None:
        slot = self.slots[m]
        self._open(slot).result()
        sigmas, pull, rho = slot.sigmas, slot.pull, self._rho
        if m in self.received:  # its share of the round in flight arrived: resume after it
            pulls, rho, now = self._inflight
            sigmas, pull = [*sigmas, float(now[m])], pulls[m]
        slot.actor.call("resume", sigmas, pull, rho).result()


def dask_backend(config: Config, cluster: str | None, data_dir) -> DaskBackend:
    """Connect to the scheduler at ``cluster`` now (an unreachable one is refused at once), or
    prepare a local cluster, started with one worker per party when the parties are known."""
    from .registry import get_solver

    if get_solver(config.solver.name).protocol is not None:  # the one unit transport
        from .dask_units import dask_backend as units_backend

        return units_backend(config, cluster, data_dir)
    try:
        from dask.distributed import Client
    except ImportError:
        raise ConfigError("run.backend = \"dask\" needs dask.distributed: "
                          "pip install 'vfl[dask]'") from None
    if cluster is None:
        return DaskBackend(None, None, config, _data_dir(data_dir), None)
    from .sweep import _dask_client

    # the coordinator talks to the parties' workers directly, not through the scheduler
    client: Client = _dask_client(cluster, option="--cluster", direct_to_workers=True)
    return DaskBackend(client, None, config, _data_dir(data_dir), cluster)


def _local_cluster(n_workers: int):
    """A local cluster of ``n_workers`` single-threaded worker processes, and its client."""
    import dask
    from dask.distributed import Client, LocalCluster

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which pins glibc's mmap threshold: every
    # N-vector of an epoch is then mapped and unmapped, and the solver runs 5x slower
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        local = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                             dashboard_address=None, silence_logs=logging.CRITICAL)
    return local, Client(local, direct_to_workers=True)


def _data_dir(data_dir) -> str:
    """The data directory as the workers must see it (they read the files themselves)."""
    from vfl.datasets import resolve_data_dir

    return str(resolve_data_dir(data_dir))


_PartyLayout.actor = PartyActor
