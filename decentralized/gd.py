"""Decentralized gradient descent: Algorithms 2 and 2* of Xiao et al., DGD and [45].

All use a diminishing step ``eta_k = eta0 * eta_growth^k`` (the update that
produces ``x^{k+1}`` uses ``eta_{k+1}``, as in eqs. (7) and (28)) and, on general
graphs, the Metropolis-Hastings weights ``W`` (Xiao et al. 2019 define the
algorithms on complete graphs only, Sec. 2). On a complete graph ``W`` is
uniform ``1/N``, and Algorithm 2's pair weight ``W_ia + W_ib = 2/N`` is the
paper's eq. (7).

| name | aggregation | gradient at | noise |
| --- | --- | --- | --- |
| ``dgd`` | ``sum_j W_ij x_j`` | ``x_i^k`` | none |
| ``noisy_consensus_gd`` [45] | ``z_i = sum_j W_ij x_j`` | ``z_i`` | Laplace |
| ``ldp_gd`` (Alg. 2) | farthest pair in ``N~_i`` split by ``w ~ U(0,1)^d`` | ``x_i^k`` (or ``x-bar``) | Laplace |
| ``ldp_gd_minmax`` (Alg. 2*) | ``w min + (1 - w) max`` over ``N~_i`` | ``x_i^k`` | Laplace |
"""

from __future__ import annotations

import numpy as np

from vfl.core.params import Param
from vfl.core.solver import Reference

from .agents import AgentGroup
from .graphs import closed_neighbourhoods, is_complete, metropolis_weights
from .network import EXCHANGE_PARAMS, NetworkSolver
from .private_network import PrivateNetworkSolver

__all__ = ["DGD", "NoisyConsensusGD", "LDPGD", "LDPGDMinMax"]

_XIAO = "Xiao, Ye, Devadas, Local Differential Privacy in Decentralized Optimization (arXiv 1902.06101)"


def _step_params(growth: float, paper: str):
    return (
        Param("eta0", float, 1.0, "step size base: eta_k = eta0 * eta_growth^k", low=0.0, low_open=True),
        Param("eta_growth", float, growth, f"step size decay per iteration ({paper})", low=0.0, low_open=True),
    )


class GDAgents(AgentGroup):
    """The agents' side of the GD solvers: Metropolis rows of the agents' neighbourhoods."""

    def __init__(self, A, b, x0, *, adjacency, **kw):
        super().__init__(A, b, x0, adjacency=adjacency, **kw)
        self.W = metropolis_weights(adjacency)[self.rows]

    def average(self) -> np.ndarray:
        """``sum_j W_ij x_j``; with secret sharing (complete graph, W = 1/N) the network mean."""
        if self.S is not None:
            return np.broadcast_to(self.S / self.N, self.X.shape)
        return self.W @ self.inbox

    def publish_interval(self, mean, lo, hi, public, publish):
        """Release ``mean`` and add Theorem 2.2's loss of the interval ``[lo, hi]``."""
        if publish is None:
            return mean
        X_new = publish(mean)
        self.account_interval(X_new, lo, hi, public["beta"], public["T"])
        return X_new


class DGDAgents(GDAgents):
    def update(self, public, publish):
        X_new = self.average() - public["eta"] * self.grad(self.X)
        self._done(X_new)
        return X_new, {}


class NoisyConsensusAgents(GDAgents):
    def update(self, public, publish):
        Z = np.asarray(self.average())
        mean = Z - public["eta"] * self.grad(Z)
        X_new = self.publish_interval(mean, mean, mean, public, publish)
        self._done(X_new)
        return X_new, {}


class PairAgents(GDAgents):
    """Algorithm 2: the farthest pair of each agent's closed neighbourhood ``N~_i``."""

    def __init__(self, A, b, x0, *, adjacency, **kw):
        super().__init__(A, b, x0, adjacency=adjacency, **kw)
        self.nb = closed_neighbourhoods(adjacency)[self.rows]  # (n, K): i, then neighbours
        n, K = self.nb.shape
        valid = np.arange(K)[None, :] <= self.deg[:, None]
        W = self.W.tocsr()
        self.Wnb = np.where(valid, np.asarray(W[np.arange(n)[:, None], self.nb].todense()), 0.0)
        same = self.nb[:, :, None] == self.nb[:, None, :]
        self.pairs = valid[:, :, None] & valid[:, None, :] & ~same
        self.complete = is_complete(adjacency)

    def _gradient(self):
        if self.settings.get("gradient_at") == "network_mean":  # complete graph: all received
            return self.grad(np.broadcast_to(self.inbox.mean(axis=0), self.X.shape).copy())
        return self.grad(self.X)

    def update(self, public, publish):
        eta = public["eta"]
        n, K = self.nb.shape
        Xn = self.inbox[self.nb]  # (n, K, d)
        if self.complete:
            # One neighbourhood for all (eq. (7): the same pair for every agent).
            X = self.inbox
            dist = np.abs(X[:, None, :] - X[None, :, :]).sum(axis=-1)
            np.fill_diagonal(dist, -1.0)
            a, b = np.divmod(int(dist.argmax()), self.N)
            # row i of nb is (i, neighbours ascending): the position of node j
            ids = np.arange(self.start, self.start + n)
            pos = lambda j: np.where(ids == j, 0, j + (j < ids).astype(int))  # noqa: E731
            pa, pb = pos(a), pos(b)
        else:
            dist = np.abs(Xn[:, :, None, :] - Xn[:, None, :, :]).sum(axis=-1)  # (n, K, K)
            dist = np.where(self.pairs, dist, -1.0)
            pa, pb = np.divmod(dist.reshape(n, -1).argmax(axis=1), K)
            # order each pair by node id, as the complete-graph search does
            swap = self.nb[np.arange(n), pa] > self.nb[np.arange(n), pb]
            pa, pb = np.where(swap, pb, pa), np.where(swap, pa, pb)
        r = np.arange(n)
        xa, xb = Xn[r, pa], Xn[r, pb]
        wa, wb = self.Wnb[r, pa][:, None], self.Wnb[r, pb][:, None]
        rest = np.einsum("nk,nkd->nd", self.Wnb, Xn) - wa * xa - wb * xb - eta * self._gradient()
        s = wa + wb
        w = self.uniform()
        mean = rest + s * (w * xa + (1.0 - w) * xb)
        X_new = self.publish_interval(
            mean, rest + s * np.minimum(xa, xb), rest + s * np.maximum(xa, xb), public, publish
        )
        self._done(X_new)
        return X_new, {}


class MinMaxAgents(GDAgents):
    """Algorithm 2*: per coordinate uniform between the min and max over ``N~_i``."""

    def __init__(self, A, b, x0, *, adjacency, **kw):
        super().__init__(A, b, x0, adjacency=adjacency, **kw)
        self.nb = closed_neighbourhoods(adjacency)[self.rows]

    def update(self, public, publish):
        Xn = self.inbox[self.nb]
        lo, hi = Xn.min(axis=1), Xn.max(axis=1)
        g = public["eta"] * self.grad(self.X)
        w = self.uniform()
        mean = w * lo + (1.0 - w) * hi - g
        X_new = self.publish_interval(mean, lo - g, hi - g, public, publish)
        self._done(X_new)
        return X_new, {}


class _GDMixin:
    """The GD solvers' network side: the step size, and one release per iteration."""

    def eta(self, k: int) -> float:
        return self.settings.eta0 * self.settings.eta_growth**k

    def step(self) -> dict:
        self.begin_releases()
        eta = self.eta(self.iteration + 1)
        public, noise = {"eta": eta}, None
        if self.noise:
            beta = self.beta(self.iteration + 1)
            public.update(beta=beta, T=eta * self.B_inf)
            noise = {
                "scale": 1.0 / beta,
                "sensitivity": eta * self.sensitivity.B_1,
                "l2_sensitivity": eta * self.sensitivity.B_2,
            }
        X_new, stats = self.agents.update(public, noise)
        return self._released(X_new, stats)


class DGD(_GDMixin, NetworkSolver):
    """Conventional decentralized GD with fixed (Metropolis) weights (Fig. D; [7], [8]).

    ``x_i^{k+1} = sum_j W_ij x_j^k - eta_{k+1} grad f_i(x_i^k)``, no noise.
    """

    name = "dgd"
    title = "DGD (fixed Metropolis weights, non-private)"
    reference = Reference(
        _XIAO,
        "conventional decentralized GD (Fig. D)",
        "(3) without noise",
        "Nedic-Ozdaglar / Yuan-Ling-Yin form (the paper's [8], [7])",
    )
    params = _step_params(0.95, "paper, Fig. D: 0.95") + EXCHANGE_PARAMS
    supports_sharing = True
    agent_group = DGDAgents


class NoisyConsensusGD(_GDMixin, PrivateNetworkSolver):
    """[45] Huang, Mitra, Vaidya: noisy consensus GD (released-sequence form).

    ``z_i = sum_j W_ij x_j^k``; ``x_i^{k+1} = z_i - eta_{k+1} grad f_i(z_i) + Delta``,
    ``Delta ~ Lap(0, beta_{k+1})^d``. Fixed parameters: its privacy loss is the
    pure Laplace one (point mean; worst case ``d eta beta B_inf`` per iteration).
    """

    name = "noisy_consensus_gd"
    title = "[45] noisy consensus GD"
    reference = Reference(
        "Huang, Mitra, Vaidya, Differentially Private Distributed Optimization, ICDCN 2015 [45]",
        "Laplace-perturbed consensus GD",
        note="our reading: Metropolis weights, no projection",
    )
    params = _step_params(0.9, "paper, Fig. C: 0.9") + EXCHANGE_PARAMS
    supports_sharing = True
    loss_meaning = (
        "Theorem 2.2 with a point mean (pure Laplace): at most, and almost always "
        "equal to, the worst case d eta_k beta_k B_inf per iteration"
    )
    agent_group = NoisyConsensusAgents


class LDPGD(_GDMixin, PrivateNetworkSolver):
    """Algorithm 2: the farthest pair of ``N~_i`` gets random complementary weights.

    General graph (eq. (7) is for complete graphs):
    ``(a, b) = argmax_{a, b in N~_i} ||x_a - x_b||_1``,
    ``s = W_ia + W_ib``, ``w ~ U(0,1)^d``::

        x_i^{k+1} = sum_{j in N~_i \\ {a,b}} W_ij x_j + s (w x_a + (1 - w) x_b)
                    - eta_{k+1} grad f_i(x_i^k) + Delta,

    the gradient at the network mean with ``gradient_at = "network_mean"``
    (eq. (7); complete graph only). The mean is uniform between
    ``s x_a`` and ``s x_b`` (plus the rest): Theorem 2.2 with ``alpha = eta``.
    """

    name = "ldp_gd"
    title = "Algorithm 2 (LDP GD, random pair weights)"
    reference = Reference(
        _XIAO, "Algorithm 2", "(7), (10)", "general graphs: Metropolis weights and the farthest pair in N~_i"
    )
    params = _step_params(0.95, "paper, Fig. D: 0.95") + (
        Param(
            "gradient_at",
            str,
            "own",
            "'own': grad f_i(x_i^k) (any graph); 'network_mean': grad f_i at "
            "the network average as printed in eq. (7) (complete graph only)",
            choices=("own", "network_mean"),
        ),
    )

    agent_group = PairAgents

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        if getattr(self.settings, "gradient_at", None) == "network_mean" and not is_complete(self.adj):
            raise ValueError(
                "gradient_at = 'network_mean' (eq. (7)) needs a complete graph; use 'own' on general graphs"
            )


class LDPGDMinMax(_GDMixin, PrivateNetworkSolver):
    """Algorithm 2*: per coordinate uniform between the min and max over ``N~_i`` (eq. (28)).

    ``x_i^{k+1}[l] = w alpha_min[l] + (1 - w) alpha_max[l] - eta_{k+1} grad f_i(x_i^k)[l]
    + Delta[l]``, ``w ~ U(0, 1)`` per agent, coordinate and iteration.
    """

    name = "ldp_gd_minmax"
    title = "Algorithm 2* (LDP GD, min-max aggregation)"
    reference = Reference(_XIAO, "Algorithm 2*", "(28), (10)", "App. E, Example (c)")
    params = _step_params(0.93, "paper, Fig. C: 0.93")
    agent_group = MinMaxAgents
