"""The audit's runs: ``B`` teacher-forced transcripts of one pair and direction at once.

Every noisy value a solver publishes goes through
:meth:`~vfl.core.solver.Solver.release`, whose observer hook this module
sets. :class:`Recorder`, on the run on ``D``, draws ``B`` noise vectors for
each release at once and returns them with a leading axis of ``B``: the
solver's state takes that axis from there (its numeric kernels broadcast
over leading axes), so the ``B`` runs go through one code path together, as
matrices where one run has vectors. :class:`Follower`, on the run on ``D'``,
releases what ``D`` released (teacher forcing) and, release by release,
adds its term to each run's privacy loss ``L`` and realised ``mu^2``
(:mod:`vfl.privacy.audit.gdp`).

Noise: each run has its own numpy stream (the audit's, by run index, so the
numbers do not depend on how the runs are chunked), or, with ``exact``, the
deployed sampler (:class:`vfl.core.sampling.ExactSampler`: the mean rounded
to the grid of step ``scale / 2^k``, exact discrete noise, the release
``gamma (q + Z)``), whose loss is computed on the grid's means. The runs are
chunked by memory (:func:`chunks`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.sampling import randomized_response, rr_epsilon
from vfl.core.solver import PublicMemo
from vfl.core.streams import Streams

from ..distribution import Prepared
from ..repeat_setup import _build

#: copies of one run's largest iteration of releases the chunk may hold at once (the means,
#: the draws, the follower's means, the solvers' state): a conservative factor
_COPIES = 24
#: the default memory budget of one chunk of runs
DEFAULT_BUDGET = 1 << 30


@dataclass
class Totals:
    """Per run of a chunk: the transcript's privacy loss and its realised ``mu^2``
    (``sum ||m - m'||^2 / scale^2``; for Laplace releases the l2 analogue)."""

    loss: np.ndarray
    squares: np.ndarray
    laplace: bool = False  # some release was Laplace: no realised mu fixes its loss


@dataclass
class _Pending:
    event: object
    mean: np.ndarray  # (1 or B, units, size)
    released: np.ndarray  # (B, units, size)
    scale: np.ndarray  # (1, units, 1)


def _core(event, mean, B: int) -> np.ndarray:
    """``mean`` as ``(1, units, size)``, or ``(B, units, size)`` when it carries the batch."""
    m = np.asarray(mean, dtype=float)
    n = event.units.size * int(event.size)
    if m.size == n:
        return m.reshape(1, event.units.size, int(event.size))
    if B > 1 and m.size == B * n and m.shape[:1] == (B,):
        return m.reshape(B, event.units.size, int(event.size))
    raise RuntimeError(
        f"a release of {event.units.size} units x {event.size} values came with "
        f"a mean of shape {m.shape}: neither one run's nor {B} runs'"
    )


def _shape_back(mean, B: int, core: np.ndarray) -> tuple:
    """The shape ``B`` runs of ``mean`` take: a leading ``B`` before one run's shape."""
    m = np.asarray(mean)
    one = m.shape if core.shape[0] == 1 else m.shape[1:]
    return (B,) + tuple(one)


class Recorder:
    """Observer of the ``B`` runs on ``D``: draws their noise, keeps each release for the
    follower, returns the ``B`` released values. ``noise_scale`` multiplies every scale."""

    def __init__(self, B: int, rngs=None, noise_scale: float = 1.0, sampler=None, batched: bool = True):
        if batched and B < 2:
            raise ValueError("a batch holds at least 2 runs")
        if not batched and B != 1:
            raise ValueError("a solver that cannot carry the runs goes one run at a time")
        self.B, self.rngs, self.noise_scale, self.sampler = B, rngs, noise_scale, sampler
        self.batched = batched
        #: the runs returned ahead of each release (the solver's ``audit_runs``)
        self.runs = B if batched else None
        self.pending: list[_Pending] = []
        self.released = 0

    def _noise(self, mechanism, shape) -> np.ndarray:
        if mechanism == "gaussian":
            return np.stack([r.standard_normal(shape) for r in self.rngs])
        if mechanism == "laplace":
            return np.stack([r.laplace(0.0, 1.0, shape) for r in self.rngs])
        raise ValueError(f"unknown mechanism {mechanism!r}")

    def __call__(self, solver, event, mean, rng):
        m = _core(event, mean, self.B)
        s = (np.asarray(event.scale, dtype=float) * self.noise_scale).reshape(1, -1, 1)
        shape = (self.B,) + m.shape[1:]
        if event.mechanism == "randomized_response":  # labels +-1 kept w.p. e^eps / (1 + e^eps)
            eps, full = 1.0 / float(s.ravel()[0]), np.broadcast_to(m, shape)
            out = (
                randomized_response(full, eps, self.sampler)
                if self.sampler is not None
                else np.stack([randomized_response(full[b], eps, r) for b, r in enumerate(self.rngs)])
            )
        elif self.sampler is None:
            out = m + s * self._noise(event.mechanism, m.shape[1:])
        else:  # the deployed sampler: the mean on the grid, exact integer noise
            full = np.broadcast_to(s, shape)
            out = self.sampler.add(event.mechanism, np.broadcast_to(m, shape).ravel(), full.ravel()).reshape(shape)
        self.pending.append(_Pending(event, m, out, s))
        self.released += 1
        return out.reshape(_shape_back(mean, self.B, m) if self.batched else np.shape(mean))


class Follower:
    """Observer of the ``B`` runs on ``D'``: releases what ``D`` released, in order, and adds
    each release's term to every run's loss and realised ``mu^2`` (:class:`Totals`)."""

    def __init__(self, recorder: Recorder, grid_bits: int | None = None):
        self.recorder = recorder
        self.B = recorder.B
        self.runs = recorder.runs
        self.grid = None if grid_bits is None else float(1 << grid_bits)
        self.totals = Totals(np.zeros(self.B), np.zeros(self.B))
        self.consumed = 0

    def __call__(self, solver, event, mean, rng):
        if not self.recorder.pending:
            raise RuntimeError("the neighbouring run released more than the audited one")
        p = self.recorder.pending.pop(0)
        if p.event.mechanism != event.mechanism or p.event.units.tolist() != event.units.tolist():
            raise RuntimeError("the neighbouring run's releases do not line up with the audited run's")
        other = _core(event, mean, self.B)
        self._add(p, other)
        self.consumed += 1
        if not self.recorder.batched:
            return p.released.reshape(np.shape(mean))
        return p.released.reshape(_shape_back(mean, self.B, other))

    def _add(self, p: _Pending, other: np.ndarray) -> None:
        m, m2, o, s = p.mean, other, p.released, p.scale
        if p.event.mechanism == "randomized_response":  # pure: +-eps where the labels differ
            eps = rr_epsilon(1.0 / float(s.ravel()[0]))[1]
            term = np.where(m == m2, 0.0, np.where(o == m, eps, -eps))
            self.totals.loss += np.sum(term, axis=(1, 2))
            self.totals.squares += np.broadcast_to(np.sum(((m - m2) * eps) ** 2, axis=(1, 2)), (self.B,))
            # no realised mu fixes a pure loss either; labels equal on both sides add nothing
            self.totals.laplace |= bool(np.any(m != m2))
            return
        if self.grid is not None:  # the deployed release's means are on the grid
            g = s / self.grid
            m, m2 = g * np.rint(m / g), g * np.rint(m2 / g)
        d = m - m2
        sq = np.sum((d / s) ** 2, axis=(1, 2))
        if p.event.mechanism == "gaussian":
            term = np.sum(d * (2.0 * o - m - m2) / (2.0 * s * s), axis=(1, 2))
        else:
            term = np.sum((np.abs(o - m2) - np.abs(o - m)) / s, axis=(1, 2))
            self.totals.laplace = True
        self.totals.loss += term
        self.totals.squares += np.broadcast_to(sq, (self.B,))

    def settled(self) -> None:
        """Every release of the iteration consumed (checked after each iteration)."""
        if self.recorder.pending:
            raise RuntimeError("the neighbouring run released fewer values than the audited one")


class Probe:
    """Observer of a noiseless run on ``D``: releases the mean itself (one run)."""

    def __init__(self):
        self.pending: list[_Pending] = []
        self.sizes: list[int] = []  # values per release, for the memory estimate
        self.iterations: list[int] = []

    def __call__(self, solver, event, mean, rng):
        m = _core(event, mean, 1)
        s = np.asarray(event.scale, dtype=float).reshape(1, -1, 1)
        self.pending.append(_Pending(event, m, m, s))
        self.sizes.append(m.size)
        return mean


class ProbeFollower(Follower):
    """The neighbour of a :class:`Probe`: its losses are the noiseless shifts."""

    def __init__(self, probe: Probe):
        self.recorder, self.B, self.grid = probe, 1, None
        self.totals = Totals(np.zeros(1), np.zeros(1))
        self.consumed = 0

    def __call__(self, solver, event, mean, rng):
        if not self.recorder.pending:
            raise RuntimeError("the neighbouring run released more than the audited one")
        p = self.recorder.pending.pop(0)
        self._add(p, _core(event, mean, 1))
        self.consumed += 1
        return p.released.reshape(np.shape(mean))


@dataclass
class Direction:
    """What the audit builds a direction's solvers from."""

    cls: type
    config: object
    objective: object

    def build(self, data):

        streams = Streams(self.config.run.seed, replayable_noise=True)
        prepared = Prepared(data=data, test=None, y_test=None, y_train=None, distribution={}, objective=self.objective)
        return _build(self.cls, self.config, prepared, streams)


@dataclass
class ProbeResult:
    """A noiseless run and its teacher-forced neighbour: the shift (the loss at zero noise:
    ``sum ||d||^2 / 2 sigma^2``, or ``sum ||d||_1 / b``), its squares, and the most values
    one iteration releases (for the memory estimate)."""

    shift: float
    squares: float
    per_iteration: int
    solver: object = None


def probe(direction: Direction, own_data, other_data, iterations: int, ledger=None) -> ProbeResult:
    """The noiseless run on ``own_data`` with ``other_data`` teacher-forced (``ledger``
    records its releases: their charges do not depend on the noise)."""
    own, other = direction.build(own_data), direction.build(other_data)
    p = Probe()
    f = ProbeFollower(p)
    own.observer, other.observer = p, f
    most = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iterations):
            before = len(p.sizes)
            own.step()
            most = max(most, sum(p.sizes[before:]))
            if ledger is not None:
                ledger.add(own.releases())
            other.step()
            f.settled()
    return ProbeResult(float(f.totals.loss[0]), float(f.totals.squares[0]), most, own)


@dataclass
class DirectionRuns:
    """``K`` runs of one direction: losses, realised squares, the ledger of the releases."""

    loss: np.ndarray
    squares: np.ndarray
    laplace: bool
    ledger: object = None
    solver: object = None
    seconds: list = field(default_factory=list)


def run_direction(
    direction: Direction,
    own_data,
    other_data,
    iterations: int,
    rngs,
    sizes: list[int],
    *,
    noise_scale: float = 1.0,
    sampler=None,
    grid_bits: int | None = None,
    ledger=None,
    batched: bool | None = None,
) -> DirectionRuns:
    """The runs of one direction, in chunks of ``sizes`` runs (``rngs``: one stream per run,
    or None with ``sampler``). ``ledger`` (fresh) records the first chunk's releases.
    ``batched`` False runs chunks of one run without the leading axis (default: batched
    when the solver declares ``audit_batch``)."""
    batched = direction.cls.audit_batch if batched is None else batched
    loss, squares, laplace, solver = [], [], False, None
    start = 0
    for B in sizes:
        own, other = direction.build(own_data), direction.build(other_data)
        own.public_memo = other.public_memo = PublicMemo()  # the public values are equal
        rec = Recorder(B, None if rngs is None else rngs[start : start + B], noise_scale, sampler, batched=batched)
        fol = Follower(rec, grid_bits)
        own.observer, other.observer = rec, fol
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(iterations):
                own.step()
                if ledger is not None and start == 0:
                    ledger.add(own.releases())
                other.step()
                fol.settled()
        loss.append(fol.totals.loss)
        squares.append(fol.totals.squares)
        laplace |= fol.totals.laplace
        solver = solver or own
        start += B
    return DirectionRuns(np.concatenate(loss), np.concatenate(squares), laplace, ledger, solver)


def available_memory() -> int:
    """Bytes the system can give without swapping (MemAvailable), else 4 GB."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 4 << 30


def chunks(K: int, per_run: int, batch: int | None, what: str, batched: bool = True) -> list[int]:
    """Chunk sizes (each >= 2) for ``K`` runs of ``per_run`` bytes each (one run per chunk
    for a solver that cannot carry them: ``batched`` False).

    ``batch`` None: as many runs per chunk as :data:`DEFAULT_BUDGET` (or a quarter of the
    available memory, if less) holds. A ``batch`` given is refused in one line when it
    cannot fit in the available memory.
    """
    per_run = max(int(per_run), 1)
    if not batched:
        return [1] * K
    if batch is not None:
        free = available_memory()
        need = batch * per_run
        if need > free:
            fits = max(free // per_run, 0)
            raise ConfigError(
                f"--batch {batch} needs about {_size(need)} for {what} ({_size(per_run)} per "
                f"run), more than the {_size(free)} available: use --batch {fits} or less, "
                "or leave it out (the audit then chunks its runs)"
                if fits >= 2
                else f"--batch {batch} needs about {_size(need)} for {what} ({_size(per_run)} per "
                f"run), more than the {_size(free)} available, and not even 2 runs fit"
            )
        size = min(batch, K)
    else:
        budget = min(DEFAULT_BUDGET, available_memory() // 4)
        size = int(min(K, max(2, budget // per_run)))
    n = -(-K // size)
    base, extra = divmod(K, n)
    out = [base + 1] * extra + [base] * (n - extra)
    if out[-1] < 2:  # (K >= 10 always; a chunk of one run cannot be told from one run)
        out[-2] += out.pop()
    return out


def bytes_per_run(per_iteration: int) -> int:
    """The memory one run of a chunk takes, from its largest iteration's releases."""
    return 8 * _COPIES * max(int(per_iteration), 1)


def _size(n: int) -> str:
    for unit, div in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= div:
            return f"{n / div:.3g} {unit}"
    return f"{n} B"
