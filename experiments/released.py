"""Which numbers of a private run are covered by its epsilon: a check by replay.

A value is *released* when it is a function of what the mechanism releases
plus data the relation does not protect (the test rows, party 1's block in
vertical FL); every other value a private run writes is marked *diagnostic*
(the manifest's ``released`` map, :func:`file_kind`, :func:`column_kind`,
:func:`field_kind`). The replay tests exactly that: a run on the data,
recording every release, and a run on *other* data (by default the same data
with every protected value replaced, ``Solver.protected_replaced``), forced
to release the recorded values. Every released value must come out identical.

- :func:`check_released`: the final metrics of one config, in memory.
- :func:`record_replay` and :func:`compare_runs`: whole run directories,
  written by any run path (``vfl run`` in-process), file by file, column by
  column and JSON field by JSON field.
"""

from __future__ import annotations

import contextlib
import csv
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from vfl.core.column_kinds import DIAGNOSTIC, RELEASED, column_kinds
from vfl.core.releases import add_noise
from vfl.core.streams import Streams
from vfl.decentralized.agents import draw_rows

from . import repeat_setup
from .manifest import Manifest
from .records import read_manifest
from .repeat_setup import _build
from .run_plan import plan_run
from .runner import _evaluate

__all__ = [
    "Difference",
    "UNDECLARED",
    "check_released",
    "column_kind",
    "compare_runs",
    "field_kind",
    "file_kind",
    "protected",
    "record_replay",
]

#: the kind of a file, column or field a run's manifest does not declare (always an error)
UNDECLARED = "undeclared"


def _draw(event, mean, rng):
    """What the solver would release for ``mean``, with noise from the numpy ``rng``."""
    if event.mechanism == "l2_laplace":  # the network solvers' native mechanism
        mean = np.asarray(mean, dtype=float)
        return draw_rows("l2_laplace", mean, event.scale, rng, slice(None), len(event.scale))
    return add_noise(event.mechanism, mean, event.scale[0] if np.ndim(mean) == 1 else event.scale, rng)


class _Record:
    """Observer of the first run: fresh noise from a seeded stream, every release kept."""

    def __init__(self, rng):
        self.rng, self.log = rng, []

    def __call__(self, solver, event, mean, rng):
        out = _draw(event, mean, self.rng)
        self.log.append((event, out))
        return out


class _Replay:
    """Observer of the other run: releases what the first run released, in order."""

    def __init__(self, log):
        self.log, self.i = log, 0

    def __call__(self, solver, event, mean, rng):
        if self.i >= len(self.log):
            raise RuntimeError("the replayed run released more than the recorded one")
        recorded, out = self.log[self.i]
        if (recorded.mechanism, recorded.units.tolist()) != (event.mechanism, event.units.tolist()):
            raise RuntimeError(f"release {self.i} of the replayed run does not line up with the recorded one")
        self.i += 1
        return out


def protected(cls, data, privacy: dict, rng: np.random.Generator):
    """The default other dataset: every value the relation protects replaced."""
    return cls.protected_replaced(data, cls.typed_privacy(privacy), rng)


@dataclass
class _Tap:
    """What a repeat's solver construction (:mod:`vfl.experiments.repeat_setup`) calls while a
    record or replay is on."""

    observer: Any
    other: Callable | None = None
    rng: np.random.Generator | None = None

    def prepared(self, cls, prepared, privacy: dict):
        if self.other is None:
            return prepared
        return replace(prepared, data=self.other(cls, prepared.data, privacy, self.rng))


@contextlib.contextmanager
def _tapped(tap: _Tap):

    previous, repeat_setup._TAP = repeat_setup._TAP, tap
    try:
        yield tap
    finally:
        repeat_setup._TAP = previous


def record_replay(
    run_original: Callable[[], Any],
    run_other: Callable[[], Any],
    *more_others: Callable[[], Any],
    other: Callable | None = protected,
    seed: int = 0,
) -> int:
    """Run ``run_original()`` recording every release, then ``run_other()`` (and each of
    ``more_others``) forced to release the recorded values; returns how many releases there
    were.

    Each callable runs the experiment in this process by any path that builds its solvers
    in :mod:`vfl.experiments.runner` (``vfl run`` in-process, ``run_experiment``) and writes
    whatever it writes (a run directory: compare two with :func:`compare_runs`). The other
    run reads its data as configured; ``other(cls, data, privacy, rng)`` then gives each
    repeat's distributed data (default :func:`protected`: every protected value replaced;
    None: the data as read, e.g. a file with one hostile record given to ``run_other``).
    The first run's noise is drawn from ``default_rng(seed + 1)``, not the config's noise
    source: both runs go through the same observer path.
    """
    record = _Record(np.random.default_rng(seed + 1))
    with _tapped(_Tap(record)):
        run_original()
    for run in (run_other, *more_others):
        replay = _Replay(record.log)
        with _tapped(_Tap(replay, other, np.random.default_rng(seed))):
            run()
        if replay.i != len(record.log):
            raise RuntimeError(f"the replayed run released {replay.i} values, the recorded one {len(record.log)}")
    return len(record.log)


# ------------------------------------------------------------------ the kinds --
def _private(manifest: Manifest) -> bool:
    return manifest.released.private


def file_kind(manifest: Manifest, name: str) -> str:
    """``released``, ``diagnostic``, ``per column`` or ``per field`` (the manifest's
    ``released.files``); :data:`UNDECLARED` for a file it does not name."""
    declared = manifest.released.file(name)
    if declared is None:
        return UNDECLARED
    if not _private(manifest) and declared in (RELEASED, DIAGNOSTIC):
        return RELEASED
    return declared.split(":")[0].split(" (")[0]


_STATS = ("_mean", "_std", "_min", "_max")


def column_kind(manifest: Manifest, file: str, column: str) -> str:
    """The kind of ``column`` of CSV ``file``: metrics.csv's own (``released.columns``), in
    metrics_repeats.csv and, per statistic, metrics_stats.csv too; communication.csv released."""
    kind = file_kind(manifest, file)
    if kind != "per column":
        return kind
    if column in ("repeat", "n_repeats"):
        return RELEASED  # public: the config's repeats
    kinds = manifest.released.columns
    if file == "metrics_stats.csv" and column not in kinds:
        column = next((column[: -len(s)] for s in _STATS if column.endswith(s)), column)
    found = manifest.released.column(column, UNDECLARED)
    return RELEASED if not _private(manifest) and found != UNDECLARED else found


def field_kind(manifest: Manifest, file: str, path: tuple) -> str:
    """The kind of the JSON field at ``path`` (a tuple of keys and list indices) of ``file``.

    In manifest.json a field has the kind of its longest prefix in ``released.fields`` (the
    ``diagnostic`` section, the ``result`` fields, ...), and is released when none is
    listed. Other JSON files have one kind (:func:`file_kind`)."""
    kind = file_kind(manifest, file)
    if kind != "per field":
        return kind
    for n in range(len(path), 0, -1):
        found = manifest.released.field(".".join(map(str, path[:n])))
        if found is not None:
            return found if _private(manifest) else RELEASED
    return RELEASED


# ----------------------------------------------------------------- comparison --
@dataclass(frozen=True)
class Difference:
    """One value that differs between two run directories (or is in one only)."""

    file: str
    where: str  # "" (the whole file), a CSV column, or a JSON path such as result.bytes
    kind: str
    original: Any
    other: Any


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _leaves(v, (*path, i))
    else:
        yield path, obj


def _absent():
    return "(absent)"


def _csv_columns(path: Path) -> dict[str, list[str]]:
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    return {c: [r[j] if j < len(r) else _absent() for r in body] for j, c in enumerate(header)}


def compare_runs(original, other) -> tuple[list[Difference], dict[str, int]]:
    """Every difference between run directories ``original`` and ``other``, each with its
    kind as ``original``'s manifest declares it; and how many values of each kind were
    compared (files, CSV columns, JSON fields), undeclared ones included.

    CSV cells and JSON values are compared as written (bit for bit: the text), other
    files byte for byte."""
    a, b = Path(original), Path(other)
    manifest = read_manifest(a / "manifest.json", json.loads((a / "manifest.json").read_text()))
    diffs: list[Difference] = []
    counts: dict[str, int] = {}

    def seen(kind):
        counts[kind] = counts.get(kind, 0) + 1

    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    for name in names:
        pa, pb = a / name, b / name
        if not (pa.is_file() and pb.is_file()):
            kind = file_kind(manifest, name)
            seen(kind)
            diffs.append(Difference(name, "", kind, pa.is_file() or _absent(), pb.is_file() or _absent()))
            continue
        if name.endswith(".csv"):
            ca, cb = _csv_columns(pa), _csv_columns(pb)
            for col in sorted(set(ca) | set(cb)):
                kind = column_kind(manifest, name, col)
                seen(kind)
                va, vb = ca.get(col, _absent()), cb.get(col, _absent())
                if va != vb:
                    diffs.append(Difference(name, col, kind, va, vb))
        elif name.endswith(".json"):
            ja, jb = (dict(_leaves(json.loads(p.read_text()))) for p in (pa, pb))
            for path in sorted(set(ja) | set(jb), key=lambda p: tuple(map(str, p))):
                kind = field_kind(manifest, name, path)
                seen(kind)
                va, vb = ja.get(path, _absent()), jb.get(path, _absent())
                if json.dumps(va) != json.dumps(vb):
                    diffs.append(Difference(name, ".".join(map(str, path)), kind, va, vb))
        else:
            kind = file_kind(manifest, name)
            seen(kind)
            if pa.read_bytes() != pb.read_bytes():
                diffs.append(Difference(name, "", kind, pa.stat().st_size, pb.stat().st_size))
    return diffs, counts


# -------------------------------------------------------- final metrics only --
def check_released(config, data_dir=None, seed: int = 0) -> dict:
    """Final metrics of ``config`` on its data and on its data with every protected value
    replaced, both releasing the same values. Returns ``{column: (kind, original,
    replaced)}`` for the base and solver columns."""

    plan = plan_run(config, data_dir)
    cls, prepared = plan.solver_cls, plan.first
    rng = np.random.default_rng(seed)
    other = replace(prepared, data=protected(cls, prepared.data, dict(config.privacy.values), rng))
    runs = []
    record = _Record(np.random.default_rng(seed + 1))
    for prep, observer in ((prepared, record), (other, None)):
        solver = _build(cls, config, prep, _streams(config))
        solver.observer = observer if observer is not None else _Replay(record.log)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for _ in range(config.solver.epochs):
                solver.step()
            runs.append({**_evaluate(solver, prep), **{k: v for k, v in solver.evaluate().items() if np.isscalar(v)}})
    kinds = column_kinds(cls, runs[0], config.privacy.claims_guarantee, test_rows_private=bool(prepared.test_private))
    return {c: (kinds[c], runs[0][c], runs[1].get(c)) for c in runs[0]}


def _streams(config):

    return Streams(config.run.seed, replayable_noise=True)
