"""Reaching a Dask scheduler: its TCP address checked at once, then a client of it (the
sweeps' ``--scheduler`` and ``vfl run --cluster``)."""

from __future__ import annotations

import socket

from vfl.core.errors import ConfigError

__all__ = ["check_listening", "dask_client"]


def dask_client(scheduler: str, option: str = "--scheduler", **kwargs):
    """A client of the Dask scheduler at ``scheduler`` (``option``: the flag that named it, for
    the error when dask.distributed is missing); one line when nothing answers there."""
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
