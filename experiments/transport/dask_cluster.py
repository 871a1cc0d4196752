"""The Dask side of ``run.backend = "dask"`` outside the units: the ``--cluster`` option, the
client of a scheduler (plain or TLS), and the local cluster started when none is named."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sized
from typing import TYPE_CHECKING, Any

import numpy as np

from vfl.core.errors import ConfigError

from ..config import Config

if TYPE_CHECKING:  # (Dask's annotations are partial: Any to mypy, see pyproject)
    from dask.distributed import Client, LocalCluster
    from distributed.security import Security

__all__ = ["check_cluster_option", "cpus", "dask_client", "groups", "local_cluster", "security", "too_few"]


def check_cluster_option(config: Config, cluster: str | None) -> None:
    """Refuse, before any work, ``--cluster`` without the dask backend or a bad address."""
    if cluster is None:
        return
    if config.run.backend != "dask":
        raise ConfigError('--cluster needs run.backend = "dask" (--set run.backend=dask)')
    if cluster.startswith("tls://"):
        security()  # refused now when Dask's TLS is not configured
        return
    if not cluster.startswith("tcp://") or ":" not in cluster[len("tcp://") :]:
        raise ConfigError(f"--cluster {cluster!r} is not a Dask scheduler address such as tcp://HOST:8786")


def security() -> Security:
    """The ``distributed.security.Security`` of a ``tls://`` scheduler, from Dask's own config
    (``distributed.comm.tls.ca-file`` and ``.client.cert``/``.key``, or the environment's
    ``DASK_DISTRIBUTED__COMM__TLS__...``), or refused when none is configured. TLS protects
    the wire; the cluster is still one trusted domain (any client may run code on the
    workers): a simulation, not a boundary between parties (the party services are)."""
    from distributed.security import Security  # lazy: optional dependency (dask.distributed)

    found = Security()
    if not (found.tls_ca_file and found.tls_client_cert):
        raise ConfigError(
            "--cluster tls://...: configure Dask's TLS first "
            "(distributed.comm.tls.ca-file, .client.cert and .client.key in the "
            "Dask config, or DASK_DISTRIBUTED__COMM__TLS__CA_FILE and "
            "__CLIENT__CERT / __CLIENT__KEY)"
        )
    return Security(
        require_encryption=True,
        tls_ca_file=found.tls_ca_file,
        tls_client_cert=found.tls_client_cert,
        tls_client_key=found.tls_client_key,
    )


def groups(N: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous unit ranges ``[start, stop)``: ``N`` units over ``min(N, workers)`` groups
    whose sizes differ by at most one (the larger ones first)."""
    G = min(N, workers)
    size, extra = divmod(N, G)
    cuts = np.cumsum([0] + [size + (g < extra) for g in range(G)])
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def too_few(address: str | None, workers: Sized, units: int, what: str, why: str) -> str:
    """The one line that refuses a cluster with too few free workers for the units."""
    return (
        f"the Dask cluster at {address} has {len(workers)} "
        f"worker{'s' if len(workers) != 1 else ''} for {units} {what}: {why}"
    )


def cpus() -> int:
    return os.cpu_count() or 1


def local_cluster(n_workers: int) -> tuple[LocalCluster, Client]:
    """A local cluster of ``n_workers`` single-threaded worker processes, and its client."""
    import dask  # lazy: optional dependency (dask)
    from dask.distributed import Client, LocalCluster  # lazy: optional dependency (dask.distributed)

    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    # Dask's nanny sets MALLOC_TRIM_THRESHOLD_, which pins glibc's mmap threshold: every
    # N-vector of an epoch is then mapped and unmapped, and the solver runs 5x slower
    environ.pop("MALLOC_TRIM_THRESHOLD_", None)
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
        # loopback only: nothing of the local cluster listens on another interface
        local = LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
        )
    return local, Client(local, direct_to_workers=True)


def dask_client(scheduler: str, option: str = "--scheduler", **kwargs: Any) -> Client:
    """A client of the scheduler at ``scheduler``, or one line naming ``option`` and why not."""
    try:
        from dask.distributed import Client  # lazy: optional dependency (dask.distributed)
    except ImportError:
        raise ConfigError(f"{option} needs dask.distributed: pip install 'vfl[dask]'") from None
    check_listening(scheduler)
    try:
        return Client(scheduler, timeout="5s", **kwargs)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {' '.join(str(exc).split())}") from None


def check_listening(scheduler: str) -> None:
    """Refuse at once a TCP scheduler address where nothing listens (Dask itself would
    retry until its timeout before saying so)."""
    if not scheduler.startswith("tcp://"):
        return
    host, _, port = scheduler[len("tcp://") :].partition(":")
    try:
        socket.create_connection((host, int(port or 8786)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(f"cannot reach the Dask scheduler at {scheduler}: {exc.strerror or exc}") from None
