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

Algorithm 3's secret sharing (complete graph) goes through the coordinator,
which only routes: each group's agents send their shares with their
iteration's reply (those to agents of the same group stay on its worker);
the coordinator delivers to each group the shares the other groups' agents
sent its agents, receives its agents' partial sums, and delivers all N of
them to every group with the next iteration's public values, from which
each agent decodes the network sum. The agents' iterates still reach the
coordinator, as the research run's diagnostics (the error, the divergence
check). In a deployment the shares would be encrypted end to end between
the agents (the coordinator relays ciphertexts).

Faults (the mechanism of :class:`~.parties.DaskUnits`): a group's state is a
function of its samples, its streams (seeded by the run's seed) and the
messages that reached it, every one of which the coordinator delivered. The
coordinator keeps them (with the releases it received) while a group can be
rebuilt from them: a group rebuilt on a new worker reads its samples again
and runs the completed iterations again from those messages, drawing its
random weights, shares and noise again from its streams, and each replayed
release must equal the one the coordinator received, to the bit. A
deployment run's noise (``privacy.replayable_noise = false``) cannot be
drawn again: there a lost worker stops the run with one line naming its
agents.
"""

from __future__ import annotations

import numpy as np

from vfl.core.errors import PartyLostError
from vfl.core.solver import NetworkData
from vfl.decentralized.agents import Agents, AgentSpec, draw_rows
from vfl.decentralized.problem import merge_domains

from .groups import DaskGroups, GroupActor, GroupLayout, label
from .parties import DaskBackend

__all__ = ["AgentActor", "AgentLayout", "DaskAgents"]


# ------------------------------------------------------------------ worker side --
class AgentActor(GroupActor):
    """Agents ``start .. stop - 1`` on their worker: their samples, read here."""

    units = "agents"

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.group = None

    def start(self, spec: AgentSpec, repeat: int, adjacency, x0):
        """The group for one repeat: its samples of the repeat's split, ``x^0``, the run's
        streams; returns what the sensitivity check reads of its samples and, with secret
        sharing, the shares of ``x^0`` its agents send to the other groups' agents."""
        from .runner import _streams

        A, b = self.rows(repeat)
        streams = _streams(self.config, repeat)
        self.group = spec.group(np.asarray(A, dtype=float), np.asarray(b, dtype=float), x0,
                                start=self.start_, adjacency=adjacency, spec=spec,
                                streams=streams)
        self.rng = streams.noise()
        # the agents outside the group: whom the shares sent off the worker go to
        self.outside = np.r_[0:self.start_, self.stop:self.group.N]
        self.reply = None
        return self.group.domain(), self._outgoing()

    def update(self, rounds: int, message, public: dict, noise):
        """Iteration ``rounds + 1`` of the group's agents, from what reached them
        (:class:`AgentGroup`); returns their releases, the statistics and, with secret
        sharing, the shares they send. Asked again for an iteration it has done (the round
        run again after another group's worker was lost), it returns the same reply."""
        g = self.group
        if g.rounds == rounds + 1:
            return self.reply
        if g.rounds != rounds:
            raise RuntimeError(f"{label('agent', self.start_, self.stop)}: asked for "
                               f"iteration {rounds + 1} after iteration {g.rounds}")
        g.receive(message)
        publish = None if noise is None else (
            lambda mean: draw_rows(noise[0], mean, noise[1], self.rng, g.rows, g.N))
        X_new, stats = g.update(public, publish)
        self.reply = (X_new, stats, self._outgoing())
        return self.reply

    def _outgoing(self):
        """Algorithm 3, step 1 (secret sharing; else None): the shares of the agents' iterates;
        those to agents of the group stay here, the others' ``(n, N - n, d)`` are returned."""
        g = self.group
        if g.spec.sharing is None:
            return None
        shares = g.shares()
        self.kept = shares[:, g.rows]
        return shares[:, self.outside]

    def partial_sums(self, received) -> np.ndarray:
        """Algorithm 3, step 2: the agents' partial sums ``(n, d)``, from the shares the other
        groups' agents sent them (``received``, ``(N - n, n, d)``) and those kept here."""
        g = self.group
        inbox = np.empty((g.N,) + self.kept.shape[1:], dtype=self.kept.dtype)
        inbox[self.outside] = received
        inbox[g.rows] = self.kept
        return g.partial_sums(inbox)

    def replay(self, rounds: list):
        """Catch up with the coordinator's checkpoint: the completed iterations again, each
        from what reached the group in it, with the random weights, shares and noise drawn
        again from the group's streams. Returns the first iteration whose release differs
        from the coordinator's (``released``) by a bit, or None."""
        for k, (message, public, noise, released) in enumerate(rounds):
            X_new = self.update(k, message, public, noise)[0]
            if X_new.tobytes() != np.ascontiguousarray(released).tobytes():
                return k + 1
        return None

    def sync(self, rounds: int) -> int:
        """Nothing to roll back: an iteration in flight that this group has done is answered
        again from its reply (:meth:`update`)."""
        return self.group.rounds

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
        self.adjacency, self.x0 = adjacency, np.array(x0, dtype=float)
        N = self.n_agents
        self.sharing = spec.sharing is not None
        # the rows each group needs: its agents' neighbours held by other groups
        self.need = [np.setdiff1d(adjacency[a:b].indices, np.arange(a, b))
                     for a, b in self.ranges]
        # secret sharing: the agents outside each group (who send it shares, and receive its)
        self.outside = [np.r_[0:a, b:N] for a, b in self.ranges]
        started = [f.result() for f in [
            s.actor.start(spec, repeat, adjacency, self.x0[a:b])
            for s, (a, b) in zip(self.slots, self.ranges)]]
        self.facts = merge_domains([facts for facts, _ in started])
        self.X = self.x0.copy()  # the last releases: delivered with the next update
        self.P = None  # secret sharing: the last partial sums, delivered with the next update
        self._sent([shares for _, shares in started])
        self.rounds = 0
        # the checkpoint, per completed iteration: what reached the agents (the releases
        # x^k, or the partial sums), the public values, the noise, what they released;
        # None once a noisy iteration that cannot be replayed has run
        self.replayable = backend.config.privacy.replayable_noise
        self.log: list | None = []

    def update(self, public, noise):
        if noise is not None:
            mechanism = noise.get("mechanism", "laplace")
            noise = (mechanism, self.record(**noise))
        inbound, public = (self.P if self.sharing else self.X), dict(public)
        replies = self._round("update", {
            k: (self.rounds, self._message(k, inbound), public, noise)
            for k in range(len(self.slots))})
        replies = [replies[k] for k in range(len(self.slots))]
        X_new = np.concatenate([r[0] for r in replies])
        stats = {key: max(r[1][key] for r in replies) for key in replies[0][1]}
        self._sent([r[2] for r in replies])
        if self.log is not None and (noise is None or self.replayable):
            self.log.append((inbound, public, noise, X_new))
        else:
            self.log = None
        self.X, self.rounds = X_new, self.rounds + 1
        return X_new, stats

    def _message(self, k: int, inbound):
        """What reaches group k's agents: their neighbours' rows of ``x^k`` held by other
        groups, or (secret sharing) every agent's partial sum."""
        return inbound if self.sharing else (self.need[k], inbound[self.need[k]])

    def _sent(self, outgoing: list) -> None:
        """Keep the shares the groups' agents sent to other groups' agents for routing, as
        ``(N, N, d)``: row i's shares from agent i, column j's to agent j (the blocks within
        a group stay on its worker: zero here)."""
        if not self.sharing:
            return
        N = self.n_agents
        self.shares = np.zeros((N, N) + outgoing[0].shape[2:], dtype=outgoing[0].dtype)
        for (a, b), out, shares in zip(self.ranges, self.outside, outgoing):
            self.shares[a:b, out] = shares

    def exchange(self):
        """Algorithm 3's rounds through the coordinator, which only routes: each group gets
        the shares the other groups' agents sent its agents, and returns their partial sums;
        all N reach every group with the next update."""
        replies = self._round("partial_sums", {
            k: (self.shares[out, a:b],)
            for k, ((a, b), out) in enumerate(zip(self.ranges, self.outside))})
        self.P = np.concatenate([replies[k] for k in range(len(self.slots))])

    def losses(self):
        parts = self._ask("losses")
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))

    def margins(self, x):
        return np.concatenate(self._ask("margins", x))

    # -- faults ---------------------------------------------------------------------------
    def _done(self, k):
        return self.rounds

    def _recover(self, exc: Exception) -> None:
        """A lost group is rebuilt from the checkpoint while there is one; otherwise (its
        noise cannot be drawn again) the run stops, naming its agents."""
        if self.log is not None:
            return super()._recover(exc)
        lost = [k for k, s in enumerate(self.slots) if not self._alive(s)]
        if not lost:
            raise exc  # not a lost worker: the agents' own error
        slot = self.slots[lost[0]]
        its = "their" if self._plural(lost[0]) else "its"
        raise PartyLostError(f"{slot.label}: {its} worker {slot.worker} was lost at iteration "
                             f"{self.rounds + 1}; {its} noise came from OS entropy "
                             "(privacy.replayable_noise = false) and cannot be drawn again, so "
                             f"{its} state (duals, streams, realized privacy loss) is not "
                             "rebuilt and the run stops") from None

    def _rebuild(self, k: int, worker: str) -> None:
        a, b = self.ranges[k]
        slot = self.slots[k]
        slot.actor.start(self.spec, self.repeat, self.adjacency, self.x0[a:b]).result()
        differs = slot.actor.replay([(self._message(k, inbound), public, noise, X_new[a:b])
                                     for inbound, public, noise, X_new in self.log]).result()
        if differs is not None:
            its = "their" if self._plural(k) else "its"
            raise PartyLostError(f"{slot.label}: rebuilt on worker {worker}, {its} release of "
                                 f"iteration {differs} differs from the one received, so the "
                                 "run stops") from None
