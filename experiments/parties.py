"""``run.backend = "dask"``: each party of a vertical run on its own Dask worker.

Party m is a Dask actor (:class:`PartyActor`) pinned to one worker. The
actor reads the dataset file itself, runs the config's preprocessing and
partition, and keeps only party m's columns (training and held-out); the
labels stay with the coordinator. The coordinator is the solver in the
client process: it sends each party the N-vector it pulls and receives the
N-vector share the protocol sends back (Hu et al. 2019, Algorithm 1), and
nothing else, except the diagnostics a research run asks for (the models,
exact margins and residual terms, :class:`vfl.admm.sharing.party.Parties`).

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
party, and nothing is written.

The transport's own count of the bytes is read from the TCP stack: the
``TCP_INFO`` counters of the coordinator's connections to the parties'
workers, around every protocol round (:meth:`DaskBackend.transport_bytes`),
and around the scoring of the test rows (the inference messages).

The machinery is shared with Huang et al.'s providers on Dask
(:mod:`.providers`): :class:`DaskBackend` (the client, the local cluster,
the workers, the transport counters) places the units of the run's setting
by a :class:`Layout` (one actor per party here; contiguous groups of
providers there), and :class:`DaskUnits` runs a protocol round on all the
actors, counts its bytes, and on a lost worker rolls the round back on the
others and rebuilds the lost unit from the coordinator's checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from vfl.admm.sharing.party import Parties, Party, PartySpec
from vfl.core.errors import ConfigError, PartyLostError
from vfl.core.solver import VerticalData, add_noise

from .config import Config

__all__ = ["DaskBackend", "DaskParties", "DaskUnits", "Layout", "PartyActor",
           "check_cluster_option", "dask_backend"]

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
    """Party m on its worker: its columns, read here, and its :class:`Party`."""

    def __init__(self, config: Config, data_dir, m: int, blas_threads: int | None):
        from .runner import _load_config_dataset, _prepare
        from .settings import prepare
        from .registry import get_solver

        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(blas_threads, user_api="blas")  # the whole process: one party
        dataset, note = _load_config_dataset(config, data_dir)  # read here, never from a cache
        setting = prepare(config, dataset, get_solver(config.solver.name))
        prepared = _prepare(setting, config, 0)  # a vertical split is the same every repeat
        self.m = m
        self.D, self.test = prepared.data.blocks[m], prepared.test[m]
        # what the coordinator checks it against: the same file, no fallback, the same block;
        # and the largest row norm, which accounting mode needs at most 1 (unit rows)
        D = self.D
        squares = np.asarray(D.multiply(D).sum(axis=1) if sp.issparse(D) else (D * D).sum(axis=1))
        self.fingerprint = {"rows": int(D.shape[0]), "columns": int(D.shape[1]),
                            "sha256": dataset.checksums, "fallback": note,
                            "max_row_norm": float(np.sqrt(np.max(squares, initial=0.0)))}
        del dataset, setting, prepared  # keep party m's columns only
        self.config = config
        self.party = None
        self.rounds = 0
        self._before = None  # the noise stream's position before the last round

    def describe(self) -> dict:
        return self.fingerprint

    def start(self, spec: PartySpec, repeat: int) -> int:
        """A fresh party for one repeat (x = 0, the repeat's noise stream); returns d_m."""
        from .runner import _streams

        rng = _streams(self.config, repeat).noise(self.m)
        self.party = Party(self.D, spec, rng, _release)
        self.rounds = 0
        return self.party.n_features

    def update(self, r, rho, sigma):
        self._before = copy.deepcopy(self.party.rng.bit_generator.state)
        reply = self.party.update(r, rho, sigma)
        self.rounds += 1
        return reply

    def sync(self, rounds: int) -> int:
        """Roll back a round the coordinator did not complete; returns the rounds done."""
        if self.rounds == rounds + 1 and self._before is not None:
            self.party.rng.bit_generator.state = self._before
            self.rounds = rounds
        return self.rounds

    def resume(self, sigmas, r, rho) -> None:
        """Catch up with the checkpoint: replay the noise draws of the completed rounds, then
        recompute the model from the last pull (it depends on nothing else)."""
        zero = np.zeros(self.D.shape[0])
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

    def ping(self) -> int:
        return self.rounds


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
    """Vertical: one actor per party, each on its own worker (Hu et al. 2019, Algorithm 1)."""

    units = "parties"
    actor = None  # PartyActor, set below

    def local_workers(self, first) -> int:
        return len(first.data.blocks)

    def place(self, first, workers, address):
        M = len(first.data.blocks)
        if len(workers) < M:
            raise ConfigError(too_few(address, workers, M, "parties",
                                      "each party needs its own worker"))
        return [(f"party {m + 1}", (m,)) for m in range(M)]

    def expected(self, first, k):
        rows, cols = first.data.blocks[k].shape
        return {"rows": int(rows), "columns": int(cols)}

    def data(self, backend, prepared, repeat):
        return VerticalData(None, prepared.data.y, parties=_Factory(backend, repeat))


def too_few(address: str, workers, units: int, what: str, why: str) -> str:
    """The one line that refuses a cluster with too few free workers for the units."""
    return (f"the Dask cluster at {address} has {len(workers)} "
            f"worker{'s' if len(workers) != 1 else ''} for {units} {what}: {why}")


def _layout(setting):
    """The :class:`Layout` of a solver's setting (the settings a backend can place)."""
    from vfl.core.solver import Setting

    from .agents import AgentLayout
    from .providers import ProviderLayout

    return {Setting.VERTICAL: _PartyLayout, Setting.HORIZONTAL: ProviderLayout,
            Setting.NETWORK: AgentLayout}[setting]()


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

    # -- setup ------------------------------------------------------------------------
    def start(self, first, checksums) -> None:
        """One actor per unit of the run's setting on its worker; each reads its data and is
        checked against ``first`` (repeat 0's distribution, read here) and ``checksums``
        (the dataset's files)."""
        from .registry import get_solver

        self.layout = _layout(get_solver(self.config.solver.name).setting)
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
    what the run's iterations are called (:attr:`iteration_word`).
    """

    iteration_word = "iteration"

    def __init__(self, backend: DaskBackend, repeat: int):
        self.backend, self.repeat = backend, repeat
        self.slots = backend.slots

    def _round(self, method: str, args: dict) -> dict:
        """``method(*args[k])`` on every unit k of ``args`` at once: one protocol round, its
        bytes counted; a lost worker's unit is rebuilt and the round run again."""
        while True:
            before = self.backend.transport_bytes()
            try:
                futures = {k: getattr(self.slots[k].actor, method)(*a) for k, a in args.items()}
                replies = {k: f.result() for k, f in futures.items()}
            except Exception as exc:  # noqa: BLE001 (a lost worker shows as many types)
                self._recover(exc)
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
            if k not in lost:
                s.actor.sync(self._done(k)).result()

    def _args(self, k: int) -> tuple:
        """The actor's arguments of unit k (as :meth:`Layout.place` gave them)."""
        raise NotImplementedError


class _Factory:
    """``parties(spec)`` for :class:`~vfl.admm.sharing.solver.ADMMSharing`: start the actors."""

    def __init__(self, backend: DaskBackend, repeat: int):
        self.backend, self.repeat = backend, repeat
        self.n_parties = len(backend.slots)

    @property
    def widths(self) -> list[int]:
        """Each party's column count d_m, as its worker read it."""
        return [f["columns"] for f in self._fingerprints()]

    @property
    def max_row_norms(self) -> list[float]:
        """Each party's largest row norm, measured on its worker (accounting mode's check)."""
        return [f["max_row_norm"] for f in self._fingerprints()]

    def _fingerprints(self) -> list[dict]:
        return [f.result() for f in [s.actor.describe() for s in self.backend.slots]]

    def __call__(self, spec: PartySpec) -> "DaskParties":
        return DaskParties(self.backend, spec, self.repeat)


class DaskParties(DaskUnits, Parties):
    """The :class:`~vfl.admm.sharing.party.Parties` seam over one actor per party."""

    iteration_word = "epoch"
    records_releases = False  # each party draws its noise on its worker

    def __init__(self, backend: DaskBackend, spec: PartySpec, repeat: int):
        DaskUnits.__init__(self, backend, repeat)
        self.spec = spec
        self.n_parties = len(self.slots)
        self.n_features = [f.result() for f in
                           [s.actor.start(spec, repeat) for s in self.slots]]
        for s in self.slots:
            s.pull, s.sigmas = None, []
        self._rho = None
        self._state = None  # (models, exact shares) of the current round, once asked

    # -- the protocol: one round of pulls and shares --------------------------------
    def update(self, m, r, rho, sigma):
        return self._pulls({m: r}, rho, {m: sigma})[m]

    def update_all(self, pulls, rho, sigmas):
        out = self._pulls(dict(enumerate(pulls)), rho, dict(enumerate(sigmas)))
        return [out[m] for m in range(len(pulls))]

    def _pulls(self, pulls: dict, rho: float, sigmas: dict) -> dict:
        replies = self._round("update", {m: (r, rho, float(sigmas[m]))
                                         for m, r in pulls.items()})
        for m, r in pulls.items():
            self.slots[m].pull = np.array(r, copy=True)  # the checkpoint's own (r may be reused)
            self.slots[m].sigmas.append(float(sigmas[m]))
        self._rho = rho
        self._state = None
        return replies

    # -- diagnostics --------------------------------------------------------------------
    def models(self):
        if self._state is None:
            self._state = self._ask("state")
        return [x for x, _ in self._state]

    def exact_shares(self):
        if self._state is None:
            self._state = self._ask("state")
        return [e for _, e in self._state]

    def rmatvecs(self, y):
        return self._ask("rmatvec", y)

    def test_products(self, test):
        """Each party's share of the test rows (its held-out columns are on its worker): the
        inference messages, whose transport bytes are kept (the last scoring's)."""
        before = self.backend.transport_bytes()
        shares = self._ask("test_product")
        self.backend.inference_transport = self.backend.carried(before)
        return shares

    # -- faults ---------------------------------------------------------------------------
    def _done(self, m):
        return len(self.slots[m].sigmas)

    def _args(self, m):
        return (m,)

    def _fault(self, m):
        return {"party": m + 1, **super()._fault(m)}

    def _rebuild(self, m: int, worker: str) -> None:
        slot = self.slots[m]
        slot.actor.start(self.spec, self.repeat).result()
        slot.actor.resume(slot.sigmas, slot.pull, self._rho).result()


def dask_backend(config: Config, cluster: str | None, data_dir) -> DaskBackend:
    """Connect to the scheduler at ``cluster`` now (an unreachable one is refused at once), or
    prepare a local cluster, started with one worker per party when the parties are known."""
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
