"""Contiguous groups of units on their own Dask workers: what Huang et al.'s providers
(:mod:`.providers`) and the LDP agents (:mod:`.agents`) share.

``N`` units go to ``G = min(N, workers)`` free workers, in contiguous groups
whose sizes differ by at most one (the larger ones first): a cluster with
fewer workers than units puts several on a worker, one with at least ``N``
gives each unit its own. Each worker gets one actor (:class:`GroupActor`)
that reads the dataset file itself, runs the config's preprocessing and the
repeat's split, and keeps only its group's rows ``A[start:stop]``,
``b[start:stop]`` (with several repeats, the pool stays there to draw the
later splits); the coordinator checks what each actor read against its own
read (:class:`GroupLayout`).
"""

from __future__ import annotations

import os

import numpy as np

from vfl.core.errors import ConfigError

from .config import Config
from .parties import DaskUnits, Layout, too_few

__all__ = ["DaskGroups", "GroupActor", "GroupLayout", "groups", "label"]


def groups(N: int, workers: int) -> list[tuple[int, int]]:
    """Contiguous unit ranges ``[start, stop)``: ``N`` units over ``min(N, workers)`` groups
    whose sizes differ by at most one (the larger ones first)."""
    G = min(N, workers)
    size, extra = divmod(N, G)
    cuts = np.cumsum([0] + [size + (g < extra) for g in range(G)])
    return [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]


def label(word: str, start: int, stop: int) -> str:
    """``"provider 3"``, ``"agents 1-5"``: how errors and the manifest name a group."""
    return f"{word} {start + 1}" if stop == start + 1 else f"{word}s {start + 1}-{stop}"


# ------------------------------------------------------------------ worker side --
class GroupActor:
    """Units ``start .. stop - 1`` on their worker: their rows, read here."""

    #: what the units are called (the fingerprint's key)
    units = ""

    def __init__(self, config: Config, data_dir, start: int, stop: int,
                 blas_threads: int | None, use_cache: bool = True):
        from .registry import get_solver
        from .runner import _load_config_dataset, _prepare
        from .settings import prepare

        if blas_threads is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(blas_threads, user_api="blas")
        # read here, never from a cache in memory (nor from the parsed-array one without use_cache)
        dataset, note = _load_config_dataset(config, data_dir, use_cache)
        # the units' rows are drawn from the pool by each repeat's split: with several
        # repeats the pool stays here to draw the later ones; with one, only this group's
        # rows are kept
        setting = prepare(config, dataset, get_solver(config.solver.name))
        self.config, self.start_, self.stop = config, int(start), int(stop)
        data = _prepare(setting, config, 0).data
        _, m, d = data.A.shape
        self.fingerprint = {self.units: self.stop - self.start_, "samples": int(m),
                            "columns": int(d), "sha256": dataset.checksums, "fallback": note}
        rows = slice(self.start_, self.stop)
        self.first = (data.A[rows].copy(), data.b[rows].copy())  # repeat 0's rows
        self.setting = setting if config.run.repeats > 1 else None
        del dataset, setting, data

    def describe(self) -> dict:
        return self.fingerprint

    def rows(self, repeat: int):
        """The group's rows ``(A, b)`` of one repeat's split."""
        from .runner import _prepare

        if repeat == 0:
            return self.first
        data = _prepare(self.setting, self.config, repeat).data
        return data.A[self.start_:self.stop], data.b[self.start_:self.stop]


# ------------------------------------------------------------------ client side --
class GroupLayout(Layout):
    """Contiguous groups of units, one group per free worker."""

    #: one unit, in messages ("provider", "agent")
    word = ""

    def local_workers(self, first) -> int:
        return max(1, min(len(first.data.A), os.cpu_count() or 1))

    def place(self, first, workers, address):
        N = len(first.data.A)
        if not workers:
            raise ConfigError(too_few(address, workers, N, self.units,
                                      f"the {self.units} need at least one worker"))
        self.ranges = groups(N, len(workers))
        return [(label(self.word, a, b), (a, b)) for a, b in self.ranges]

    def expected(self, first, k):
        a, b = self.ranges[k]
        _, m, d = first.data.A.shape
        return {self.units: b - a, "samples": int(m), "columns": int(d)}


class DaskGroups(DaskUnits):
    """:class:`~.parties.DaskUnits` over groups of units (``ranges``: each group's units)."""

    def __init__(self, backend, repeat: int):
        DaskUnits.__init__(self, backend, repeat)
        self.ranges = [(int(a), int(b)) for a, b in backend.layout.ranges]

    def _args(self, k):
        return self.ranges[k]

    def _plural(self, k):
        return self.ranges[k][1] - self.ranges[k][0] > 1
