"""The worker side of ``run.backend = "dask"``: one generic actor that hosts any protocol's side.

A :class:`UnitActor` is pinned to one Dask worker. It reads the dataset file
itself, runs the config's preprocessing and the repeat's distribution, and
keeps only its units' data (:meth:`~vfl.core.layouts.VerticalData.cut`: party
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

from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from vfl.core.codec import serve
from vfl.core.host import Host, StreamEnv
from vfl.core.layouts import VerticalData
from vfl.core.preprocessing import row_norms
from vfl.core.protocol import UnitData

from ..config import Config
from ..distribution import Prepared
from ..party_sides import OwnParty
from ..registry import get_solver
from ..repeat_setup import _prepare, _streams
from ..run_data import _load_config_dataset, _strict
from ..settings import prepare

__all__ = ["UnitActor", "facts"]


class UnitActor:
    """Units ``first .. stop - 1`` on their worker: their data, read here, and the side they
    play of the solver's protocol (opened by the coordinator for each repeat)."""

    def __init__(
        self,
        config: Config,
        data_dir: str | Path | None,
        first: int,
        stop: int,
        blas_threads: int | None,
        use_cache: bool = True,
    ) -> None:
        if blas_threads is not None:
            threadpool_limits(blas_threads, user_api="blas")  # the whole process: its units
        cls = get_solver(config.solver.name)
        self.config, self.first, self.stop = config, int(first), int(stop)
        self.host, self.cls = Host(cls.protocol), cls
        self.own: OwnParty | None = None
        self.fingerprint: dict[str, Any] | None
        if config.data.dataset == "parties":  # its own party file: the path travelled here
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
        own = self._own()
        reply = own.serve(frame, self.cls)
        if own.data is not None and self.fingerprint is None:  # (aligned)
            self._data = {0: own.data}
            self.fingerprint = {
                **facts(own.data, True),
                "sha256": None,
                "fallback": None,
                "id_type": own.table.id_type,
            }
        return reply

    def _own(self) -> OwnParty:
        assert self.own is not None, "party files only"
        return self.own

    def alignment_facts(self) -> dict[str, Any]:
        own = self._own()
        return {"who": own.who, **own.facts()}

    def _cut(self, prepared: Prepared) -> UnitData:
        cut: UnitData = prepared.data.cut(self.first, self.stop, prepared.test if self.vertical else None)
        return cut

    def describe(self) -> dict[str, Any] | None:
        """What its data is (:func:`facts`, the files' checksums); None before a party file is
        aligned."""
        return self.fingerprint

    def serve(self, frame: bytes) -> bytes:
        """One frame of the coordinator's, answered (:func:`vfl.core.codec.serve`)."""
        return serve(self.host, frame, self._open)

    def _open(self, repeat: int, spec: object) -> object:
        data = (
            self._data[0]
            if self.setting is None or repeat == 0
            else self._cut(_prepare(self.setting, self.config, repeat))
        )
        return self.host.open(data, spec, StreamEnv(_streams(self.config, repeat)))

    def ping(self) -> int:
        return 0


def facts(data: UnitData, vertical: bool) -> dict[str, Any]:
    """What the coordinator checks a unit's data against: how many units, each block's shape
    and, for parties (``vertical``), each block's largest row norm (the unit rows a
    guarantee needs, measured where the block is)."""
    out: dict[str, Any] = {"units": data.stop - data.first, "shapes": [[int(v) for v in B.shape] for B in data.blocks]}
    if vertical:
        out["max_row_norms"] = [float(row_norms(B).max(initial=0.0)) for B in data.blocks]
    return out
