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
workers, around every protocol round (:meth:`DaskBackend.transport_bytes`).
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
from vfl.core.solver import VerticalData, add_noise

from .config import Config

__all__ = ["DaskBackend", "DaskParties", "PartyActor", "check_cluster_option",
           "dask_backend"]

#: what the transport count is, for the manifest and the summary
TRANSPORT_SOURCE = ("the TCP stack's own counters (TCP_INFO bytes_acked + bytes_received) of "
                    "the coordinator's connections to the parties' workers, over the protocol's "
                    "rounds only (the diagnostics' requests are not in it); Dask's message "
                    "headers and framing included")
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
        # what the coordinator checks it against: the same file, no fallback, the same block
        self.fingerprint = {"rows": int(self.D.shape[0]), "columns": int(self.D.shape[1]),
                            "sha256": dataset.checksums, "fallback": note}
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
    """One party's actor, its worker and the coordinator's checkpoint of it."""

    actor: object
    worker: str
    pull: np.ndarray | None = None  # the last pull of a completed round
    sigmas: list | None = None  # the noise scale of every completed round


class DaskBackend:
    """A Dask client (and the local cluster it started, if any) with one actor per party."""

    def __init__(self, client, cluster, config: Config, data_dir, address: str):
        self.client, self.cluster, self.config = client, cluster, config
        self.data_dir, self.address = data_dir, address
        self.slots: list[_Slot] = []
        self.transport = 0  # bytes over all protocol rounds of the run
        self.recoveries: list[dict] = []  # parties rebuilt after their worker was lost

    # -- setup ------------------------------------------------------------------------
    def start_parties(self, expected: list[tuple[int, int]], checksums) -> None:
        """One actor per party on its own worker; each reads its data and is checked
        against ``expected`` (the blocks' shapes) and ``checksums`` (the dataset's files)."""
        M = len(expected)
        if self.client is None:  # no --cluster: a local one, one worker per party
            self.cluster, self.client = _local_cluster(M)
            self.address = self.cluster.scheduler_address
        workers = self._free_workers(M, wait=2.0)  # workers still registering
        if len(workers) < M:
            raise ConfigError(f"the Dask cluster at {self.address} has {len(workers)} "
                              f"worker{'s' if len(workers) != 1 else ''} for {M} parties: each "
                              "party needs its own worker")
        futures = [self._submit(m, w) for m, w in enumerate(workers[:M])]
        for m, (future, worker) in enumerate(zip(futures, workers)):
            actor = self._actor(m, worker, future)
            self._check(m, worker, actor, expected[m], checksums)
            self.slots.append(_Slot(actor, worker))

    def _submit(self, m: int, worker: str):
        return self.client.submit(PartyActor, self.config, self.data_dir, m,
                                  self.config.solver.values.get("blas_threads"),
                                  workers=[worker], allow_other_workers=False, actor=True,
                                  pure=False, key=f"party-{m + 1}-{time.monotonic_ns()}")

    def _actor(self, m: int, worker: str, future):
        try:
            return future.result()  # reading a large dataset may take minutes: no timeout
        except Exception as exc:  # the worker's own error, e.g. its data path is missing
            raise ConfigError(f"party {m + 1} on worker {worker} cannot read its data: "
                              f"{' '.join(str(exc).split())}") from None

    def _check(self, m, worker, actor, expected, checksums) -> None:
        got = actor.describe().result()
        rows, cols = expected
        if got["fallback"] or (got["rows"], got["columns"]) != (rows, cols) \
                or got["sha256"] != checksums:
            why = got["fallback"] or (f"{got['rows']} rows x {got['columns']} columns, expected "
                                      f"{rows} x {cols}" if (got["rows"], got["columns"]) !=
                                      (rows, cols) else "files with other checksums")
            raise ConfigError(f"party {m + 1} on worker {worker} read other data than the "
                              f"coordinator: {why}")

    def _free_workers(self, count: int, wait: float, exclude=()) -> list[str]:
        """Workers holding no party (nor in ``exclude``), sorted; waits up to ``wait`` s for
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

    def data(self, prepared, repeat: int) -> VerticalData:
        """The run's vertical data for one repeat: the labels here, the blocks on the workers."""
        return VerticalData(None, prepared.data.y, parties=_Factory(self, repeat))

    # -- the run ----------------------------------------------------------------------
    def transport_bytes(self) -> dict:
        """Per open connection of the coordinator to a party's worker: the bytes TCP carried
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

    def count_transport(self, before: dict) -> None:
        """Add what the connections carried since ``before`` (new ones from zero)."""
        after = self.transport_bytes()
        self.transport += sum(v - before.get(k, 0) for k, v in after.items())

    def describe(self) -> dict:
        out = {"backend": "dask", "scheduler": self.address,
               "local_cluster": self.cluster is not None,
               "parties": {f"party {m + 1}": s.worker for m, s in enumerate(self.slots)},
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


class _Factory:
    """``parties(spec)`` for :class:`~vfl.admm.sharing.solver.ADMMSharing`: start the actors."""

    def __init__(self, backend: DaskBackend, repeat: int):
        self.backend, self.repeat = backend, repeat
        self.n_parties = len(backend.slots)

    def __call__(self, spec: PartySpec) -> "DaskParties":
        return DaskParties(self.backend, spec, self.repeat)


class DaskParties(Parties):
    """The :class:`~vfl.admm.sharing.party.Parties` seam over one actor per party."""

    def __init__(self, backend: DaskBackend, spec: PartySpec, repeat: int):
        self.backend, self.spec, self.repeat = backend, spec, repeat
        self.slots = backend.slots
        self.n_parties = len(self.slots)
        self.n_features = [f.result() for f in
                           [s.actor.start(spec, repeat) for s in self.slots]]
        for s in self.slots:
            s.pull, s.sigmas = None, []
        self._rho = None
        self._state = None  # (models, exact shares) of the current round, once asked

    # -- the protocol: one round of pulls and shares --------------------------------
    def update(self, m, r, rho, sigma):
        return self._round({m: r}, rho, {m: sigma})[m]

    def update_all(self, pulls, rho, sigmas):
        out = self._round(dict(enumerate(pulls)), rho, dict(enumerate(sigmas)))
        return [out[m] for m in range(len(pulls))]

    def _round(self, pulls: dict, rho: float, sigmas: dict) -> dict:
        while True:
            before = self.backend.transport_bytes()
            try:
                futures = {m: self.slots[m].actor.update(r, rho, float(sigmas[m]))
                           for m, r in pulls.items()}
                replies = {m: f.result() for m, f in futures.items()}
            except Exception as exc:  # noqa: BLE001 (a lost worker shows as many types)
                self._recover(exc)
                continue
            self.backend.count_transport(before)
            break
        for m, r in pulls.items():
            self.slots[m].pull = np.array(r, copy=True)  # the checkpoint's own (r may be reused)
            self.slots[m].sigmas.append(float(sigmas[m]))
        self._rho = rho
        self._state = None
        return replies

    # -- diagnostics --------------------------------------------------------------------
    def _ask(self, method: str, *args) -> list:
        while True:
            try:
                futures = [getattr(s.actor, method)(*args) for s in self.slots]
                return [f.result() for f in futures]
            except Exception as exc:  # noqa: BLE001
                self._recover(exc)

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
        return self._ask("test_product")  # each party's held-out columns are on its worker

    # -- faults ---------------------------------------------------------------------------
    def _alive(self, slot: _Slot) -> bool:
        try:
            slot.actor.ping().result(timeout=10)
            return True
        except Exception:  # noqa: BLE001
            return False

    def _recover(self, exc: Exception) -> None:
        """Rebuild lost parties from the checkpoint and roll the others back (or stop)."""
        lost = [m for m, s in enumerate(self.slots) if not self._alive(s)]
        if not lost:
            raise exc  # not a lost worker: the party's own error
        wait = self.backend.config.run.party_wait
        gone = {self.slots[m].worker for m in lost}
        for m in lost:
            slot = self.slots[m]
            old, slot.worker = slot.worker, ""
            # the scheduler may list the dead worker for a while: never place the party there
            workers = self.backend._free_workers(1, wait=wait, exclude=gone)
            if not workers:
                raise PartyLostError(
                    f"party {m + 1}: its worker {old} was lost at epoch "
                    f"{len(slot.sigmas) + 1} and no worker could take over its data within "
                    f"{wait:g} s") from None
            self._rebuild(m, workers[0])
            self.backend.recoveries.append({"party": m + 1, "repeat": self.repeat,
                                            "epoch": len(slot.sigmas) + 1, "lost": old,
                                            "resumed_on": workers[0]})
        for m, s in enumerate(self.slots):
            if m not in lost:
                s.actor.sync(len(s.sigmas)).result()

    def _rebuild(self, m: int, worker: str) -> None:
        backend, slot = self.backend, self.slots[m]
        actor = backend._actor(m, worker, backend._submit(m, worker))
        actor.start(self.spec, self.repeat).result()
        actor.resume(slot.sigmas, slot.pull, self._rho).result()
        slot.actor, slot.worker = actor, worker


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
