"""``run.backend = "dask"`` for Huang et al.'s solvers: groups of providers on their own
Dask workers.

Huang et al. (2019), Algorithms 1-3: provider i holds its rows and labels; a
trainer holds no data. Each worker gets one actor (:class:`ProviderActor`)
holding a contiguous group of providers (:mod:`.groups`: ``N`` providers on
``G = min(N, workers)`` workers, groups of ``ceil(N / G)`` or
``floor(N / G)``). The actor reads the dataset file itself, runs the
config's preprocessing and the repeat's split, and keeps only its providers'
rows; the group's iteration is the solver's own
:class:`~vfl.admm.providers.ProviderGroup`, vectorized over its providers:
Algorithm 3's closed form (3a), or the exact local argmin of Algorithms 1-2
(line 4), each provider's solve stopping at its own tolerance, so a group
gets what the in-process batch of all N gets.

The trainer is the solver in the client process. Each iteration it sends
every group the global ``w^k`` (and the public step size and noise scale),
and receives each provider's release, ``d`` values per provider (and, from
the exact solves, each provider's step count and whether it converged): the
messages of the algorithms, nothing else, except the diagnostics a research
run asks for (training margins, losses and local objectives, the clean
local models, the exact solves' KKT residuals:
:class:`~vfl.admm.providers.Providers`). It records each iteration's
:class:`~vfl.core.solver.Release` event (public: Theorem 1's sigma and
Lemma 1's sensitivity; Algorithm 2's constant sigma and enforced bound), so
a run that claims a guarantee is accounted as in-process, while the noise is
drawn on the workers: from the run's replayable stream (each group draws the
whole ``(N, d)`` draw and keeps its rows, so the numbers are those of the
in-process backend to the bit; a replayable run's noise is public to whoever
holds the seed anyway), or, in a deployment run, by each group's own exact
sampler.

Faults (the mechanism of :class:`~.parties.DaskUnits`): the trainer's
checkpoint of a group is what it has from the protocol (the group's last
releases, the duals ``gamma_i`` it computes for its average, the noise
scales of the completed iterations and, for the exact solves, whose warm
start it never sees, every iteration's ``w^k`` and ``gamma_i^k``); a group
rebuilt on a new worker reads its rows again, takes that state (replaying
its exact solves), and replays its noise stream.
"""

from __future__ import annotations

import copy

import numpy as np

from vfl.admm.providers import Providers, ProviderSpec, check_provider_rows
from vfl.core.solver import HorizontalData, add_noise_to_rows

from .groups import DaskGroups, GroupActor, GroupLayout
from .parties import DaskBackend

__all__ = ["DaskProviders", "ProviderActor", "ProviderLayout"]


# ------------------------------------------------------------------ worker side --
class ProviderActor(GroupActor):
    """Providers ``start .. stop - 1`` on their worker: their rows, read here."""

    units = "providers"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.group = None
        self.rng = None
        self._before = None

    def start(self, spec: ProviderSpec, repeat: int, total: int) -> int:
        """The group for one repeat: its rows of the repeat's split, checked (``||a|| <= 1``
        enforced in a private run), zero state, the run's noise stream; returns the rows
        scaled onto the unit ball."""
        from .runner import _streams

        A, b = self.rows(repeat)
        A, b, clipped = check_provider_rows(A, b, name=spec.name, private=spec.private,
                                            row_bound=spec.row_bound)
        self.group = spec.group(A, b, start=self.start_, spec=spec)
        self.total = int(total)
        self.rng = _streams(self.config, repeat).noise()
        return clipped

    def _publish(self, noise):
        if noise is None:
            return lambda W: W
        mechanism, scale = noise
        return lambda W: add_noise_to_rows(mechanism, W, scale, self.rng, self.group.rows,
                                           self.total)

    def update(self, w, public, noise):
        """One iteration of the group's providers (:meth:`ProviderGroup.update`)."""
        self._before = (_rng_state(self.rng), self.group.snapshot())
        return self.group.update(w, public, self._publish(noise))

    def sync(self, rounds: int) -> int:
        """Roll back an iteration the trainer did not complete; returns the rounds done."""
        g = self.group
        if g.rounds == rounds + 1 and self._before is not None:
            state, snapshot = self._before
            g.rollback(snapshot)
            if state is not None:
                self.rng.bit_generator.state = state
        return g.rounds

    def resume(self, shared, gamma, rounds: int, noises, history) -> None:
        """Catch up with the trainer's checkpoint: replay the noise draws of the completed
        iterations, then take the state the trainer has from the protocol."""
        zero = np.zeros((self.stop - self.start_, self.group.A.shape[2]))
        for noise in noises:
            if noise is not None:
                self._publish(noise)(zero)
        self.group.restore(shared, gamma, rounds, history)

    def diagnose(self, w, W_bar):
        return self.group.diagnose(w, W_bar)

    def models(self):
        return self.group.W

    def residuals(self):
        return self.group.residuals()

    def ping(self) -> int:
        return self.group.rounds if self.group is not None else 0


def _rng_state(rng):
    """A seeded stream's position (None for an exact sampler: it is never replayed)."""
    if isinstance(rng, np.random.Generator):
        return copy.deepcopy(rng.bit_generator.state)
    return None


# ------------------------------------------------------------------ client side --
class ProviderLayout(GroupLayout):
    """Horizontal: contiguous groups of providers, one group per free worker."""

    units, word = "providers", "provider"
    actor = ProviderActor

    def data(self, backend, prepared, repeat):
        return HorizontalData(None, None, public=prepared.data.public,
                              providers=_Factory(backend, repeat, prepared.data.A.shape))


class _Factory:
    """``providers(spec, record)`` for Huang et al.'s solvers (:mod:`vfl.admm.consensus`):
    start the groups."""

    def __init__(self, backend: DaskBackend, repeat: int, shape):
        self.backend, self.repeat, self.shape = backend, repeat, tuple(int(v) for v in shape)

    def __call__(self, spec: ProviderSpec, record) -> "DaskProviders":
        return DaskProviders(self.backend, spec, record, self.repeat, self.shape)


class DaskProviders(DaskGroups, Providers):
    """The :class:`~vfl.admm.providers.Providers` seam over one actor per group of providers.

    ``record(units=, scale=, sensitivity=, size=)`` records an iteration's release event
    in the trainer (:meth:`~vfl.core.solver.Solver.record_release`) and returns it.
    """

    def __init__(self, backend: DaskBackend, spec: ProviderSpec, record, repeat: int, shape):
        DaskGroups.__init__(self, backend, repeat)
        self.spec, self.record = spec, record
        self.n_providers, self.m, self.d = shape
        clipped = [f.result() for f in
                   [s.actor.start(spec, repeat, self.n_providers) for s in self.slots]]
        self.rows_clipped = int(sum(clipped))
        # the checkpoint: what the trainer has from the protocol
        self.rounds = 0
        self.shared = np.zeros((self.n_providers, self.d))  # the last releases w~_i^k
        self.gamma = np.zeros((self.n_providers, self.d))  # the groups' duals gamma_i^k
        self.noises: list = []  # per completed iteration: None or (mechanism, scales (N,))
        self._inflight = None  # (w^k, noise) of the iteration in flight
        # per completed iteration, (w^k, gamma^k): the inputs of the exact solves, whose warm
        # start a rebuilt group replays (kept only for a group that needs them)
        self.history: list | None = [] if spec.group.replays else None

    def update(self, w, public, noise):
        if noise is not None:
            units, scale, sens = noise
            event = self.record(units=units, scale=scale, sensitivity=sens, size=self.d)
            noise = (event.mechanism, event.scale)
        # a release, once received, stands (a deployment run's noise cannot be drawn again):
        # after a fault only the groups without a reply run the iteration again
        self._inflight = (w, noise)
        replies = self._round("update", {
            k: (w, public, None if noise is None else (noise[0], noise[1][a:b]))
            for k, (a, b) in enumerate(self.ranges)}, final=True)
        parts = [replies[k] for k in range(len(self.slots))]
        shared = np.concatenate([p[0] for p in parts])
        stats = {key: np.concatenate([p[1][key] for p in parts]) for key in parts[0][1]}
        # the groups' dual step of this iteration, as they took it (the same values and ops)
        if self.rounds:
            self.gamma = self.gamma - self.spec.rho * (self.shared - w)
        self.shared, self.rounds = shared, self.rounds + 1
        self.noises.append(noise)
        if self.history is not None:
            self.history.append((w, self.gamma))
        return shared, stats

    def diagnose(self, w, W_bar):
        parts = self._ask("diagnose", each=lambda k: (
            w, None if W_bar is None else W_bar[self.ranges[k][0]:self.ranges[k][1]]))
        margins = np.concatenate([p[0] for p in parts])
        losses = np.concatenate([p[1] for p in parts])
        f = None if W_bar is None else np.concatenate([p[2] for p in parts])
        return margins, losses, f

    def models(self):
        return np.concatenate(self._ask("models"))

    def residuals(self):
        return np.concatenate(self._ask("residuals"))

    # -- faults ---------------------------------------------------------------------------
    def _done(self, k):
        return self.rounds

    def _rebuild(self, k: int, worker: str) -> None:
        a, b = self.ranges[k]
        actor = self.slots[k].actor
        actor.start(self.spec, self.repeat, self.n_providers).result()
        shared, gamma, rounds, noises = self.shared[a:b], self.gamma[a:b], self.rounds, self.noises
        history = None if self.history is None else [(w, g[a:b]) for w, g in self.history]
        if k in self.received:  # its release of the iteration in flight arrived: resume after it
            w, noise = self._inflight  # (update's bookkeeping, for this group's rows)
            if rounds:
                gamma = gamma - self.spec.rho * (shared - w)
            shared, rounds, noises = self.received[k][0], rounds + 1, [*noises, noise]
            history = None if history is None else [*history, (w, gamma)]
        actor.resume(shared, gamma, rounds,
                     [None if n is None else (n[0], n[1][a:b]) for n in noises],
                     history).result()

