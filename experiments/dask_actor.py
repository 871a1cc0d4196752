"""The worker side of ``run.backend = "dask"``: one generic actor that hosts any protocol's side.

A :class:`UnitActor` is pinned to one Dask worker. It reads the dataset file
itself, runs the config's preprocessing and the repeat's distribution, and
keeps only its units' data (:meth:`~vfl.core.solver.VerticalData.cut`: party
m's columns, training and held-out, or a group's rows; the labels of a
vertical run stay with the coordinator). Where the rows are dealt afresh per
repeat (providers, agents) and the run has several repeats, the pool stays
here to deal the later ones.

The coordinator sends it frames (:mod:`vfl.core.codec`): bytes in, bytes out.
The actor decodes them for its solver's protocol and no other
(:class:`~vfl.core.units.Host`: validation, the protocol's closed table of
handlers, at-most-once handling) and opens the protocol's side for a repeat
with the unit's own streams (:class:`~vfl.core.units.StreamEnv`: the run's
seeded streams, or exact samplers in a deployment run).
"""

from __future__ import annotations

from vfl.core.codec import serve
from vfl.core.host import Host, StreamEnv
from vfl.core.preprocessing import row_norms
from vfl.core.solver import VerticalData

from .config import Config
from .registry import get_solver
from .repeat_setup import _prepare, _streams
from .run_data import _load_config_dataset
from .settings import prepare

__all__ = ["UnitActor", "facts"]


class UnitActor:
    """Units ``first .. stop - 1`` on their worker: their data, read here, and the side they
    play of the solver's protocol (opened by the coordinator for each repeat)."""

    def __init__(
        self, config: Config, data_dir, first: int, stop: int, blas_threads: int | None, use_cache: bool = True
    ):
        if blas_threads is not None:
            from threadpoolctl import threadpool_limits  # (only where the config pins BLAS)

            threadpool_limits(blas_threads, user_api="blas")  # the whole process: its units
        cls = get_solver(config.solver.name)
        self.config, self.first, self.stop = config, int(first), int(stop)
        self.host, self.own, self.cls = Host(cls.protocol), None, cls
        if config.data.dataset == "parties":  # its own party file: the path travelled here
            from .party_sides import OwnParty
            from .run_data import _strict

            self.own = OwnParty(config, self.first + 1, strict=_strict(config))
            self.vertical, self.setting, self.fingerprint = True, None, None
            return
        # read here, never from a cache in memory (nor from the parsed-array one without use_cache)
        dataset, note = _load_config_dataset(config, data_dir, use_cache)
        setting = prepare(config, dataset, cls)
        prepared = _prepare(setting, config, 0)
        self.vertical = isinstance(prepared.data, VerticalData)
        self._data = {0: self._cut(prepared)}
        # rows dealt afresh per repeat: the pool stays here to deal the later ones
        self.setting = None if setting.same_units_every_repeat or config.run.repeats == 1 else setting
        self.fingerprint = {**facts(self._data[0], self.vertical), "sha256": dataset.checksums, "fallback": note}
        del dataset, prepared  # keep the units' data only (the labels stay behind)

    def align(self, frame: bytes) -> bytes:
        """One alignment frame of the label holder's (party files, :mod:`.party_sides`); once
        its rows are aligned the party holds its block."""
        reply = self.own.serve(frame, self.cls)
        if self.own.aligned and self.fingerprint is None:
            self._data = {0: self.own.data}
            self.fingerprint = {
                **facts(self.own.data, True),
                "sha256": None,
                "fallback": None,
                "id_type": self.own.table.id_type,
            }
        return reply

    def alignment_facts(self) -> dict:
        return {"who": self.own.who, **self.own.facts()}

    def _cut(self, prepared):
        return prepared.data.cut(self.first, self.stop, prepared.test if self.vertical else None)

    def describe(self) -> dict:
        return self.fingerprint

    def serve(self, frame: bytes) -> bytes:
        """One frame of the coordinator's, answered (:func:`vfl.core.codec.serve`)."""
        return serve(self.host, frame, self._open)

    def _open(self, repeat: int, spec):
        data = (
            self._data[0]
            if self.setting is None or repeat == 0
            else self._cut(_prepare(self.setting, self.config, repeat))
        )
        return self.host.open(data, spec, StreamEnv(_streams(self.config, repeat)))

    def ping(self) -> int:
        return 0


def facts(data, vertical: bool) -> dict:
    """What the coordinator checks a unit's data against: how many units, each block's shape
    and, for parties (``vertical``), each block's largest row norm (the unit rows a
    guarantee needs, measured where the block is)."""
    out = {"units": data.stop - data.first, "shapes": [[int(v) for v in B.shape] for B in data.blocks]}
    if vertical:
        out["max_row_norms"] = [float(row_norms(B).max(initial=0.0)) for B in data.blocks]
    return out
