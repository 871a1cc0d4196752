"""The agents of Xiao et al.'s network: a group of them, vectorized.

Agent i holds its samples ``A_i`` ``(m, d)`` and labels ``b_i``, its iterate
``x_i``, its dual ``lambda_i`` (the ADMM solvers) and its private randomness
(the random weights ``w`` of Algorithms 1, 2 and 2*, its noise). In iteration
k it takes what reached it along its edges (its neighbours' released
iterates ``x_j^k``, or, with Algorithm 3's secret sharing, every agent's
partial sum, from which the network sum), computes its update and releases
``x_i^{k+1}`` (Xiao et al. 2019, Sec. 2): nothing else leaves it.

:class:`AgentGroup` is that side for a contiguous group of agents,
vectorized over them (arrays ``(n, m, d)``, ``(n, d)``: no loop over agents
or edges); each solver subclasses it with its update (:mod:`.admm`,
:mod:`.gd`). Its protocol and the solvers' seam are :mod:`.agent_side`: all
N agents in the solver's process as one group, or a group per worker
elsewhere. Every batched operation works agent by agent (batched products
and solves, row slices of the graph's sparse rows, whole-network draws of
which a group keeps its rows), so the same samples give the same numbers to
the bit however the agents are grouped, and the solvers' iteration has no
branch on where the agents run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vfl.core.errors import DivergedError
from vfl.core.objective import Objective
from vfl.core.releases import add_noise_to_rows
from vfl.privacy.ldp import realized_loss

from .graphs import check_adjacency, degrees
from .problem import domain, loss_derivatives
from .secret_sharing import AdditiveSecretSharing

__all__ = ["AgentGroup", "AgentOptions", "draw_rows"]


@dataclass(frozen=True)
class AgentOptions:
    """What every group of agents needs besides its samples: the public options of the run,
    resolved where the agents are (from :class:`~.agent_side.AgentSpec`)."""

    #: the solver's :class:`AgentGroup` subclass (its update)
    group: type
    objective: Objective
    #: the solver's validated ``[solver]`` keys
    settings: dict
    #: the sharing scheme of Algorithm 3 (None: plain messages)
    sharing: AdditiveSecretSharing | None
    #: the solver's name, for error messages
    name: str


def draw_rows(mechanism: str, mean: np.ndarray, scale: np.ndarray, rng, rows: slice, total: int) -> np.ndarray:
    """Rows ``rows`` of a ``(total, d)`` release whose rows ``rows`` have mean ``mean``.

    ``scale`` holds every unit's scale ``(total,)``. Laplace and Gaussian noise as
    :func:`~vfl.core.releases.add_noise_to_rows`; ``"l2_laplace"`` (density
    ``~ exp(-||y||_2 / scale)``, the native mechanism of [42], [43]) is a
    Gamma(d, scale) radius times a uniform direction. A seeded stream draws the
    whole network's noise and keeps these rows (the numbers of the whole draw to
    the bit).
    """
    scale = np.asarray(scale, dtype=float)
    return add_noise_to_rows(mechanism, mean, scale[rows], rng, rows, total)


class AgentGroup:
    """Agents ``start .. start + n - 1`` of N: their samples, iterates and private streams.

    ``update(public, publish)`` is one iteration of the group's agents (a
    subclass per solver): ``public`` holds the iteration's public values (step
    sizes, noise rates, sensitivities), ``publish(mean)`` turns their noiseless
    means ``(n, d)`` into what they release (None: no noise). It returns the
    releases ``(n, d)`` and the iteration's statistics.
    """

    #: every subclass by name: the spec names the group its side builds (a closed table)
    KINDS: dict[str, type] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        AgentGroup.KINDS[cls.kind()] = cls

    @classmethod
    def kind(cls) -> str:
        """This group's name in :attr:`KINDS` (what the spec sends)."""
        return f"{cls.__module__}.{cls.__qualname__}"

    def __init__(self, A, b, x0, *, start: int, adjacency, spec: AgentOptions, streams):
        self.A, self.b = A, b
        n, m, d = A.shape
        adj = check_adjacency(adjacency)
        self.N, self.n, self.m, self.d = adj.shape[0], n, m, d
        self.start = int(start)
        self.rows = slice(self.start, self.start + n)
        self.adj = adj[self.rows]  # the group's agents' edges (the graph is public)
        self.deg = degrees(adj)[self.rows]
        self.spec, self.settings = spec, spec.settings
        self.objective = spec.objective
        self._w = spec.objective.weight(self.N * m)
        self._c = spec.objective.reg_curvature / self.N  # each agent holds 1/N of it
        self.X = np.array(x0, dtype=float)  # x_i^k: also what each agent last released
        # what reached the group's agents along their edges: x_j^k of their neighbours
        # (only those rows are ever read), their own rows kept current
        self.inbox = np.zeros((self.N, d))
        self.inbox[self.rows] = self.X
        self.S = None  # the network sum of Algorithm 3, when secret sharing
        self._random = streams.get("random")  # the random weights (private to each agent)
        self._share_rng = streams.get("random", 1)
        self.loss = np.zeros(n)  # Theorem 2.2's realized cumulative loss per agent
        self.worst = np.zeros(n)  # its worst case sum_k d alpha beta B_inf
        self.rounds = 0

    # -- messages ---------------------------------------------------------------------
    def receive(self, message) -> None:
        """Plain: ``(agents, iterates)`` of neighbours; secret sharing: every agent's partial
        sum ``(N, d)`` (Algorithm 3, step 3: each agent decodes the network sum, eq. (15))."""
        if self.spec.sharing is not None:
            self.S = self.spec.sharing.reconstruct(message)
        else:
            idx, values = message
            self.inbox[idx] = values

    def shares(self) -> np.ndarray:
        """Algorithm 3, step 1: the shares ``(n, N, d)`` the group's agents send (row i to each
        agent j) of their iterates."""
        return self.spec.sharing.share_rows(self.X, self._share_rng, self.rows)

    def partial_sums(self, inbox_shares) -> np.ndarray:
        """Algorithm 3, step 2: from the shares ``(N, n, d)`` sent to the group's agents, the
        partial sums ``(n, d)`` each broadcasts."""
        return self.spec.sharing.partial_sums(inbox_shares)

    def neighbour_sum(self) -> np.ndarray:
        """``sum_{j in N_i} x_j^k`` per agent: from the messages, or ``S - x_i`` (Algorithm 3:
        only the network sum is revealed, on a complete graph)."""
        if self.S is not None:
            return self.S - self.X
        return self.adj @ self.inbox

    def uniform(self) -> np.ndarray:
        """The group's rows of the iteration's random weights ``w ~ U(0, 1)^{N x d}``."""
        return self._random.uniform(size=(self.N, self.d))[self.rows]

    def _done(self, X_new) -> None:
        self.X = X_new
        self.inbox[self.rows] = X_new
        self.rounds += 1

    # -- local oracles ----------------------------------------------------------------
    def _margins(self, X):
        return np.matmul(self.A, X[:, :, None])[:, :, 0]  # (n, m): u_ij = z_ij^T x_i

    def grad(self, X) -> np.ndarray:
        """``grad f_i(x_i)`` for every agent of the group, ``(n, d)``."""
        g = self.objective.loss_fn.grad(self._margins(X), self.b)
        return self._w * np.matmul(g[:, None, :], self.A)[:, 0, :] + self._c * X

    def newton(self, v, q, X0, tol=1e-12, max_iter=50):
        """Solve ``grad f_i(x) - v_i + q_i x = 0`` for every agent (the paper names no solver).

        The minimizer of ``f_i(x) - v_i^T x + (q_i/2)||x||^2``, strongly convex
        for ``q_i > 0``: batched Newton from ``X0``, each agent until its own step
        is below ``tol`` (about three steps when warm-started from the last
        iterate). An agent that has converged is frozen while the others go on:
        agent i's solve is its own (Xiao et al. 2019, eq. (12) is a local
        argmin), so its result does not depend on which agents share its batch.
        Returns the solutions and the largest number of steps any agent took.
        """
        X = X0.copy()
        qd = (q + self._c)[:, None, None] * np.eye(self.d)
        active = np.ones(len(X), dtype=bool)
        for it in range(1, max_iter + 1):
            U = self._margins(X)
            g, h = loss_derivatives(self.objective, U, self.b)
            grad = self._w * np.matmul(g[:, None, :], self.A)[:, 0, :] + self._c * X
            r = grad - v + q[:, None] * X
            H = self._w * np.matmul(self.A.transpose(0, 2, 1), self.A * h[:, :, None]) + qd
            step = np.linalg.solve(H, r[:, :, None])[:, :, 0]
            X -= np.where(active[:, None], step, 0.0)
            active &= ~(np.max(np.abs(step), axis=1) < tol)
            if not active.any():
                return X, it
        if not np.all(np.isfinite(X)):
            raise DivergedError(f"{self.spec.name}: the local Newton solve produced non-finite values")
        return X, max_iter

    # -- privacy (Theorem 2.2, per agent) ----------------------------------------------
    def account_interval(self, x_new, lo, hi, beta, T) -> None:
        """Add Theorem 2.2's realized loss of this iteration (intervals per agent, coordinate)."""
        self.loss += realized_loss(x_new, lo, hi, beta, T).sum(axis=1)
        self.worst += self.d * beta * T

    def unaccounted(self) -> None:
        """A release Theorem 2.2 does not cover (not Laplace): no realized loss."""
        self.loss[:] = self.worst[:] = np.nan

    # -- diagnostics --------------------------------------------------------------------
    def margins(self, x) -> np.ndarray:
        """Margins ``z^T x`` of one model on the group's samples, agent-major ``(n m,)``."""
        return np.matmul(self.A, x).reshape(-1)

    def domain(self) -> dict:
        """What the sensitivity check reads of the group's samples (:func:`.problem.domain`)."""
        return domain(self.A, self.b)

    def update(self, public: dict, publish):
        raise NotImplementedError
