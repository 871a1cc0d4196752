"""``run.backend = "dask"`` for the LDP solvers: groups of agents on their own Dask workers.

Xiao et al. (2019): agent i holds its samples; there is no centre. Each
worker gets one actor (:class:`AgentActor`) holding a contiguous group of
agents (:mod:`.groups`: ``N`` agents on ``G = min(N, workers)`` workers).
The actor reads the dataset file itself, runs the config's preprocessing
and the repeat's split, and keeps only its agents' samples; the group's
iteration is the solver's own :class:`~vfl.decentralized.agents.AgentGroup`,
vectorized over its agents, with its agents' private state (their duals,
random weights and noise) and their realized privacy losses.

The coordinator is the solver in the client process, playing the network:
each iteration it delivers to every group what reached its agents along
their edges, the neighbours' last releases ``x_j^k`` (only the rows of the
group's agents' neighbours in other groups), with the iteration's public
values (step size, noise rate and scale), and receives each agent's release
``x_i^{k+1}`` (and the group's Newton step count, a diagnostic): the
messages of the protocol, nothing else, except the diagnostics a research
run asks for (the margins of the agents' average model on their samples,
each agent's realized privacy loss). It records each iteration's
:class:`~vfl.core.solver.Release` (public: the noise rate and the enforced
sensitivity), so a run that claims a guarantee is accounted as in-process,
while the noise is drawn on the workers: from the run's replayable stream
(each group draws the whole network's draw and keeps its rows, as it does
for the random weights, so the numbers are those of the in-process backend
to the bit), or, in a deployment run, by each group's own exact sampler.
x* of the error metric is the runner's reference, computed from the data the
coordinator read, as the baselines are.

With Algorithm 3's secret sharing each iteration would be three rounds
through the coordinator (shares, partial sums, their broadcast); that
exchange runs in-process only here. A lost worker stops the run with one
line naming its agents: an agent's state is its own (its dual, its streams'
positions, its realized loss), and is not rebuilt from what the coordinator
saw.
"""

from __future__ import annotations

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.solver import NetworkData
from vfl.decentralized.agents import Agents, AgentSpec, draw_rows
from vfl.decentralized.problem import merge_domains

from .groups import DaskGroups, GroupActor, GroupLayout
from .parties import DaskBackend

__all__ = ["AgentActor", "AgentLayout", "DaskAgents"]


# ------------------------------------------------------------------ worker side --
class AgentActor(GroupActor):
    """Agents ``start .. stop - 1`` on their worker: their samples, read here."""

    units = "agents"

    def __init__(self, *args):
        super().__init__(*args)
        self.group = None

    def start(self, spec: AgentSpec, repeat: int, adjacency, x0) -> dict:
        """The group for one repeat: its samples of the repeat's split, ``x^0``, the run's
        streams; returns what the sensitivity check reads of its samples."""
        from .runner import _streams

        A, b = self.rows(repeat)
        streams = _streams(self.config, repeat)
        self.group = spec.group(np.asarray(A, dtype=float), np.asarray(b, dtype=float), x0,
                                start=self.start_, adjacency=adjacency, spec=spec,
                                streams=streams)
        self.rng = streams.noise()
        return self.group.domain()

    def update(self, message, public: dict, noise):
        """One iteration of the group's agents, from what reached them (:class:`AgentGroup`)."""
        g = self.group
        g.receive(message)
        publish = None if noise is None else (
            lambda mean: draw_rows(noise[0], mean, noise[1], self.rng, g.rows, g.N))
        return g.update(public, publish)

    def losses(self):
        return self.group.loss, self.group.worst

    def margins(self, x):
        return self.group.margins(x)

    def ping(self) -> int:
        return self.group.rounds if self.group is not None else 0


# ------------------------------------------------------------------ client side --
class AgentLayout(GroupLayout):
    """Network: contiguous groups of agents, one group per free worker."""

    units, word = "agents", "agent"
    actor = AgentActor

    def data(self, backend, prepared, repeat):
        d = prepared.data
        return NetworkData(d.adjacency, None, None, d.x0, d.x_star,
                           agents=_Factory(backend, repeat, d.A.shape))


class _Factory:
    """``agents(spec, adjacency, x0, record)`` for the network solvers: start the groups."""

    def __init__(self, backend: DaskBackend, repeat: int, shape):
        self.backend, self.repeat = backend, repeat
        self.shape = tuple(int(v) for v in shape)

    def __call__(self, spec: AgentSpec, adjacency, x0, record) -> "DaskAgents":
        if spec.sharing is not None:
            raise ConfigError(f"{spec.name}: exchange = 'secret_sharing' runs in-process only "
                              "(run.backend = 'dask' sends plain messages)")
        return DaskAgents(self.backend, spec, adjacency, x0, record, self.repeat, self.shape)


class DaskAgents(DaskGroups, Agents):
    """The :class:`~vfl.decentralized.agents.Agents` seam over one actor per group of agents.

    ``record(scale=, sensitivity=, mechanism=)`` records an iteration's release event in
    the solver (:meth:`~vfl.decentralized.base.PrivateNetworkSolver.record_noise`) and
    returns every agent's scale to draw with.
    """

    def __init__(self, backend: DaskBackend, spec: AgentSpec, adjacency, x0, record,
                 repeat: int, shape):
        DaskGroups.__init__(self, backend, repeat)
        self.spec, self.record = spec, record
        self.shape = shape
        self.n_agents, self.m, _ = shape
        # the rows each group needs: its agents' neighbours held by other groups
        self.need = [np.setdiff1d(adjacency[a:b].indices, np.arange(a, b))
                     for a, b in self.ranges]
        self.facts = merge_domains([f.result() for f in [
            s.actor.start(spec, repeat, adjacency, x0[a:b])
            for s, (a, b) in zip(self.slots, self.ranges)]])
        self.X = np.array(x0, dtype=float)  # the last releases: delivered with the next update
        self.rounds = 0

    def update(self, public, noise):
        if noise is not None:
            mechanism = noise.get("mechanism", "laplace")
            noise = (mechanism, self.record(**noise))
        replies = self._round("update", {
            k: ((idx, self.X[idx]), public, noise) for k, idx in enumerate(self.need)})
        X_new = np.concatenate([replies[k][0] for k in range(len(self.slots))])
        stats = {key: max(replies[k][1][key] for k in replies) for key in replies[0][1]}
        self.X, self.rounds = X_new, self.rounds + 1
        return X_new, stats

    def exchange(self):  # pragma: no cover (secret sharing is refused above)
        raise NotImplementedError

    def losses(self):
        parts = self._ask("losses")
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def margins(self, x):
        return np.concatenate(self._ask("margins", x))

    # -- faults ---------------------------------------------------------------------------
    not_rebuilt = ("an agent's state (its dual, its streams, its realized privacy loss) is not "
                   "rebuilt elsewhere")

    def _done(self, k):
        return self.rounds
