"""The backends of the unit transport beyond this process (:mod:`vfl.core.units`).

Dask (``run.backend = "dask"``): :mod:`.dask_units` (the coordinator's backend: placement,
frames, faults), :mod:`.dask_cluster` (the client, the cluster, the ``--cluster`` option),
:mod:`.dask_actor` (the worker's actor that hosts any protocol's side).

The party services (``run.backend = "services"``): :mod:`.service_units` (the
coordinator's client), :mod:`.service_channels` (its channel to one party),
:mod:`.party_config` (a party's PARTY.toml), :mod:`.service_party` (one party's service), :mod:`.service_grpc` (its gRPC server, ``vfl party serve``),
:mod:`.service_guard` (the party's floor, budget and record), :mod:`.service_tls`
(certificates), :mod:`.tcp_bytes` (the kernel's TCP counters).

Both count per phase (:mod:`.phase_counts`); :mod:`.process` holds the process-wide
settings the entry points make.
"""
