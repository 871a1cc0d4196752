"""The agents' protocol (Xiao et al. 2019), their side, and the solvers' seam.

:data:`AGENTS_PROTOCOL` declares, once (:mod:`vfl.core.protocol`), what
reaches a group of agents and what leaves it. Each iteration (``update``) a
group receives what reached its agents along their edges, the neighbours'
last releases ``x_j^k`` (only the rows of its agents' neighbours in other
groups; none when all agents are one group), or with Algorithm 3's secret
sharing every agent's partial sum, with the iteration's public values (step
size, noise rate and scale); it returns each agent's release ``x_i^{k+1}``,
its statistics and, with secret sharing, the shares its agents send agents of
other groups. Algorithm 3's second round (``partial_sums``) goes through the
coordinator, which only routes: each group gets the shares the other groups'
agents sent its agents and returns their partial sums, which reach every
group with the next update. The diagnostics: the agents' realized privacy
losses and the margins of a model on their samples.

:class:`AgentsSide` holds a group (:class:`~.agents.AgentGroup`): all N
agents in the solver's process, where every release goes through the
solver's own ``publish`` (the audit watches it), or a group per worker, each
drawing its rows of the whole network's draw from its copy of the run's
stream (or exact samplers in a deployment). :class:`Agents` is the solvers'
seam over a :class:`~vfl.core.units.Session`.

Faults: a group's state is a function of its samples, its streams and the
messages that reached it; a lost group is rebuilt by running its journal's
iterations again (each release checked equal to the one received, to the
bit). A deployment's noise cannot be drawn again: a group whose journal holds
a noisy iteration is not rebuilt, and the run stops naming its agents.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.core.objective import Objective
from vfl.core.protocol import (
    DIAGNOSTIC,
    Call,
    Empty,
    Placement,
    Protocol,
    ProtocolError,
    Recovery,
    Side,
    array,
    handles,
    message,
    scalar,
    values,
)

from .agents import AgentGroup, AgentOptions
from .problem import merge_domains
from .secret_sharing import AdditiveSecretSharing

__all__ = ["AGENTS_PROTOCOL", "AgentSpec", "Agents", "AgentsSide"]


@message
class AgentSpec:
    """What every group of agents needs besides its samples: the solver's update (its group
    by name in :attr:`~.agents.AgentGroup.KINDS`), the objective, the solver's validated
    ``[solver]`` keys, Algorithm 3's ring (no bits: plain messages), the public graph (CSR
    rows of its 0/1 adjacency) and the common start ``x^0``."""

    group = scalar(str)
    name = scalar(str)
    loss = scalar(str)
    lam = scalar(float)
    reduction = scalar(str)
    regularizer = scalar(str)
    unit_size = scalar(int, optional=True)
    settings = values()
    ss_bits = scalar(int, optional=True)
    ss_fractional_bits = scalar(int, optional=True)
    indptr = array("i8", "P")
    indices = array("i8", "E")
    x0 = array("f8", "N", "d")


@message
class Started:
    """What a group reports when it opens: what the sensitivity check reads of its samples,
    and (secret sharing) the shares of ``x^0`` its agents send the other groups' agents."""

    facts = values(finite=False)
    shares = array("u8", "n", "O", "d", optional=True)


@message
class Delivery:
    """Iteration k's message to a group: its agents' neighbours' releases in other groups
    (their indices and rows), or every agent's partial sum; the public values; the noise's
    mechanism and, per agent of the group, scale and enforced sensitivities (none: no
    noise)."""

    neighbours = array("i8", "k", optional=True)
    iterates = array("f8", "k", "d", optional=True)
    sums = array("u8", "N", "d", optional=True)
    public = values(finite=False)  # (Theorem 2.2's T is NaN where no bound is enforced)
    mechanism = scalar(str, optional=True)
    scale = array("f8", "n", optional=True)
    sensitivity = array("f8", "n", optional=True, finite=False)
    l2_sensitivity = array("f8", "n", optional=True, finite=False)


@message
class Releases:
    X = array("f8", "n", "d")
    stats = values()
    shares = array("u8", "n", "O", "d", optional=True)


@message
class Inbox:
    """Algorithm 3's second round: the shares the other groups' agents sent this group's."""

    received = array("u8", "O", "n", "d")


@message
class PartialSums:
    P = array("u8", "n", "d")


@message
class Losses:
    loss = array("f8", "n", finite=False)
    worst = array("f8", "n", finite=False)


@message
class Point:
    x = array("f8", "d", finite=False)


@message
class Margins:
    u = array("f8", "R", finite=False)


class _Streams:
    """The group's streams (``get``), from its host."""

    def __init__(self, env):
        self.get = env.stream


class AgentsSide(Side):
    """Agents ``first .. stop - 1`` wherever they run: their samples, their group."""

    def __init__(self, data, spec: AgentSpec, env):
        super().__init__(data, spec, env)
        kind = AgentGroup.KINDS.get(spec.group)
        if kind is None:
            raise ProtocolError(f"no agent group {spec.group!r}")
        N = len(spec.indptr) - 1
        sharing = (
            None
            if spec.ss_bits is None
            else AdditiveSecretSharing(N, bits=spec.ss_bits, fractional_bits=spec.ss_fractional_bits)
        )
        options = AgentOptions(
            kind,
            Objective(spec.loss, spec.lam, spec.reduction, spec.regularizer, spec.unit_size),
            dict(spec.settings),
            sharing,
            spec.name,
        )
        adjacency = sp.csr_matrix((np.ones(len(spec.indices)), spec.indices, spec.indptr), shape=(N, N))
        A, b = data.blocks
        self.group = kind(
            np.asarray(A, dtype=float),
            np.asarray(b, dtype=float),
            spec.x0[data.first : data.stop],
            start=data.first,
            adjacency=adjacency,
            spec=options,
            streams=_Streams(env),
        )
        self.rng = env.noise()  # the run's stream of the releases of all N at once
        # the agents outside the group: whom the shares sent off the host go to
        self.outside = np.r_[0 : data.first, data.stop : N]
        n, m, d = self.group.A.shape
        self.dims = {"N": N, "n": n, "d": d, "O": N - n}

    def opened(self) -> Started:
        return Started(facts=self.group.domain(), shares=self._outgoing())

    def _outgoing(self):
        """Algorithm 3, step 1 (secret sharing; else None): the shares of the agents' iterates;
        those to agents of the group stay here, the others' ``(n, N - n, d)`` are returned."""
        g = self.group
        if g.spec.sharing is None:
            return None
        shares = g.shares()
        self.kept = shares[:, g.rows]
        return np.ascontiguousarray(shares[:, self.outside])

    @handles("update")
    def update(self, req: Delivery) -> Releases:
        """An iteration of the group's agents from what reached them (:class:`AgentGroup`)."""
        g = self.group
        g.receive(req.sums if req.sums is not None else (req.neighbours, req.iterates))
        publish = None
        if req.scale is not None:

            def publish(mean):
                return self.env.release(
                    mean,
                    units=np.arange(self.data.first, self.data.stop),
                    scale=req.scale,
                    sensitivity=req.sensitivity,
                    rng=self.rng,
                    mechanism=req.mechanism,
                    l2_sensitivity=req.l2_sensitivity,
                    rows=self.data.rows,
                    total=self.data.total,
                )

        X_new, stats = g.update(dict(req.public), publish)
        return Releases(X=X_new, stats=stats, shares=self._outgoing())

    @handles("partial_sums")
    def partial_sums(self, req: Inbox) -> PartialSums:
        """Algorithm 3, step 2: the agents' partial sums from the shares sent to them."""
        g = self.group
        inbox = np.empty((g.N,) + self.kept.shape[1:], dtype=self.kept.dtype)
        inbox[self.outside] = req.received
        inbox[g.rows] = self.kept
        return PartialSums(P=g.partial_sums(inbox))

    @handles("losses")
    def losses(self, _: Empty) -> Losses:
        return Losses(loss=self.group.loss, worst=self.group.worst)

    @handles("margins")
    def margins(self, req: Point) -> Margins:
        return Margins(u=self.group.margins(req.x))


def _not_rebuilt(replayable: bool, entries) -> str | None:
    """A deployment's noise cannot be drawn again: a group whose journal holds a noisy
    iteration is not rebuilt."""
    if replayable or all(e.request.scale is None for e in entries if e.call.name == "update"):
        return None
    return (
        "{its} noise came from OS entropy (privacy.replayable_noise = false) and cannot "
        "be drawn again, so {its} state (duals, streams, realized privacy loss) is not "
        "rebuilt and the run stops"
    )


AGENTS_PROTOCOL = Protocol(
    "xiao_agents",
    1,
    spec=AgentSpec,
    side=AgentsSide,
    opened=Started,
    iteration="update",
    calls=(
        Call("update", Delivery, Releases, releases=True),
        Call("partial_sums", Inbox, PartialSums),
        Call("losses", Empty, Losses, DIAGNOSTIC),
        Call("margins", Point, Margins, DIAGNOSTIC),
    ),
    placement=Placement("agent", "agents", grouped=True, own_worker=False, iteration="iteration"),
    recovery=Recovery(not_rebuilt=_not_rebuilt),
)


class Agents:
    """The N agents as the solver sees them, over a session of :data:`AGENTS_PROTOCOL`: the
    network's routing (see the module docstring), what the agents release, and diagnostics.

    ``record(scale=, sensitivity=, mechanism=, l2_sensitivity=)`` records an iteration's
    release event in the solver and returns every agent's scale to draw with, where the
    agents draw their own noise (:meth:`~.private_network.PrivateNetworkSolver.record_noise`).
    """

    def __init__(self, session, adjacency, x0, shape, record):
        self.session, self.record = session, record
        self.n_agents, self.m, self.d = (int(v) for v in shape)
        self.ranges = [(a, b) for a, b in session.hosts]
        N = self.n_agents
        self.sharing = session.spec.ss_bits is not None
        # the rows each group needs: its agents' neighbours held by other groups
        self.need = [np.setdiff1d(adjacency[a:b].indices, np.arange(a, b)).astype(np.int64) for a, b in self.ranges]
        # secret sharing: the agents outside each group (who send it shares, and receive its)
        self.outside = [np.r_[0:a, b:N] for a, b in self.ranges]
        for k, (a, b) in enumerate(self.ranges):
            session.bind(k, N=N, n=b - a, d=self.d, O=N - (b - a))
        self.facts = merge_domains([o.facts for o in session.opened])
        self.X = np.array(x0, dtype=float)  # the last releases: delivered with the next update
        self.P = None  # secret sharing: the last partial sums, delivered with the next update
        self._sent([o.shares for o in session.opened])

    @property
    def group(self) -> AgentGroup:
        """All N agents' group, where it is in this process."""
        (side,) = self.session.sides
        return side.group

    def update(self, public: dict, noise: dict | None):
        """Every agent's iteration; returns the releases ``x^{k+1}`` ``(N, d)`` and statistics.

        ``noise`` is None or the release's public parameters, ``mechanism``, ``scale``,
        ``sensitivity`` and ``l2_sensitivity`` (scalars or one per agent): recorded as the
        iteration's :class:`~vfl.core.releases.Release` and drawn where the agents are.
        """
        N = self.n_agents
        fields = {"mechanism": None, "scale": None, "sensitivity": None, "l2_sensitivity": None}
        if noise is not None:
            fields["mechanism"] = noise.get("mechanism", "laplace")
            for key in ("scale", "sensitivity", "l2_sensitivity"):
                if noise.get(key) is not None:
                    fields[key] = np.broadcast_to(np.asarray(noise[key], dtype=float), (N,)).copy()
            if not self.session.records:  # they draw where they are: the event recorded here
                fields["scale"] = np.asarray(self.record(**noise), dtype=float)
        public = dict(public)
        replies = self.session.round(
            "update",
            {
                k: Delivery(
                    **self._message(k),
                    public=public,
                    mechanism=fields["mechanism"],
                    **{
                        key: None if fields[key] is None else fields[key][a:b]
                        for key in ("scale", "sensitivity", "l2_sensitivity")
                    },
                )
                for k, (a, b) in enumerate(self.ranges)
            },
        )
        replies = [replies[k] for k in range(len(self.ranges))]
        X_new = np.concatenate([r.X for r in replies])
        stats = {key: max(r.stats[key] for r in replies) for key in replies[0].stats}
        self._sent([r.shares for r in replies])
        self.X = X_new
        return X_new, stats

    def _message(self, k: int) -> dict:
        """What reaches group k's agents: their neighbours' rows of ``x^k`` held by other
        groups, or (secret sharing) every agent's partial sum."""
        if self.sharing:
            return {"sums": self.P}
        return {"neighbours": self.need[k], "iterates": self.X[self.need[k]]}

    def _sent(self, outgoing: list) -> None:
        """Keep the shares the groups' agents sent to other groups' agents for routing, as
        ``(N, N, d)``: row i's shares from agent i, column j's to agent j (the blocks within
        a group stay where it is: zero here)."""
        if not self.sharing:
            return
        N = self.n_agents
        self.shares = np.zeros((N, N) + outgoing[0].shape[2:], dtype=outgoing[0].dtype)
        for (a, b), out, shares in zip(self.ranges, self.outside, outgoing):
            self.shares[a:b, out] = shares

    def exchange(self) -> None:
        """Algorithm 3's rounds through the coordinator, which only routes: each group gets
        the shares the other groups' agents sent its agents, and returns their partial sums;
        all N reach every group with the next update."""
        replies = self.session.round(
            "partial_sums",
            {
                k: Inbox(received=np.ascontiguousarray(self.shares[out, a:b]))
                for k, ((a, b), out) in enumerate(zip(self.ranges, self.outside))
            },
        )
        self.P = np.concatenate([replies[k].P for k in range(len(self.ranges))])

    def losses(self) -> tuple[np.ndarray, np.ndarray]:
        """Every agent's realized and worst-case cumulative loss ``(N,)`` (diagnostics)."""
        parts = self.session.ask("losses")
        return (np.concatenate([p.loss for p in parts]), np.concatenate([p.worst for p in parts]))

    def margins(self, x) -> np.ndarray:
        """Margins of ``x`` on every agent's samples, agent-major ``(N m,)`` (diagnostics)."""
        return np.concatenate([p.u for p in self.session.ask("margins", Point(x=x))])
