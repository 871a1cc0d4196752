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

from .base import EXCHANGE_PARAMS, NetworkSolver, PrivateNetworkSolver
from .graphs import closed_neighbourhoods, is_complete, metropolis_weights

__all__ = ["DGD", "NoisyConsensusGD", "LDPGD", "LDPGDMinMax"]

_XIAO = ("Xiao, Ye, Devadas, Local Differential Privacy in Decentralized Optimization "
         "(arXiv 1902.06101)")


def _step_params(growth: float, paper: str):
    return (
        Param("eta0", float, 1.0, "step size base: eta_k = eta0 * eta_growth^k", low=0.0,
              low_open=True),
        Param("eta_growth", float, growth, f"step size decay per iteration ({paper})", low=0.0,
              low_open=True),
    )


class _GDMixin:
    def _init_gd(self):
        self.W = metropolis_weights(self.adj)

    def eta(self, k: int) -> float:
        return self.settings["eta0"] * self.settings["eta_growth"] ** k

    def _finish(self, X_new):
        self.X = X_new
        self.iteration += 1
        self._exchanged()
        self.check_iterates()
        return {}

    def _average(self, X):
        """``sum_j W_ij x_j``; with secret sharing (complete graph, W = 1/N) the network mean."""
        if self._sharing is not None:
            return np.broadcast_to(self._sharing.secure_sum(X, self._share_rng) / self.N, X.shape)
        return self.W @ X


class DGD(_GDMixin, NetworkSolver):
    """Conventional decentralized GD with fixed (Metropolis) weights (Fig. D; [7], [8]).

    ``x_i^{k+1} = sum_j W_ij x_j^k - eta_{k+1} grad f_i(x_i^k)``, no noise.
    """

    name = "dgd"
    title = "DGD (fixed Metropolis weights, non-private)"
    reference = Reference(_XIAO, "conventional decentralized GD (Fig. D)", "(3) without noise",
                          "Nedic-Ozdaglar / Yuan-Ling-Yin form (the paper's [8], [7])")
    params = _step_params(0.95, "paper, Fig. D: 0.95") + EXCHANGE_PARAMS
    supports_sharing = True

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        self._init_gd()

    def step(self) -> dict:
        self.begin_releases()
        eta = self.eta(self.iteration + 1)
        return self._finish(self._average(self.X) - eta * self.grad(self.X))


class NoisyConsensusGD(_GDMixin, PrivateNetworkSolver):
    """[45] Huang, Mitra, Vaidya: noisy consensus GD (released-sequence form).

    ``z_i = sum_j W_ij x_j^k``; ``x_i^{k+1} = z_i - eta_{k+1} grad f_i(z_i) + Delta``,
    ``Delta ~ Lap(0, beta_{k+1})^d``. Fixed parameters: its privacy loss is the
    pure Laplace one (point mean; worst case ``d eta beta B_inf`` per iteration).
    """

    name = "noisy_consensus_gd"
    title = "[45] noisy consensus GD"
    reference = Reference("Huang, Mitra, Vaidya, Differentially Private Distributed "
                          "Optimization, ICDCN 2015 [45]", "Laplace-perturbed consensus GD",
                          note="our reading: Metropolis weights, no projection")
    params = _step_params(0.9, "paper, Fig. C: 0.9") + EXCHANGE_PARAMS
    supports_sharing = True
    loss_meaning = ("Theorem 2.2 with a point mean (pure Laplace): at most, and almost always "
                    "equal to, the worst case d eta_k beta_k B_inf per iteration")

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        self._init_gd()

    def step(self) -> dict:
        self.begin_releases()
        k = self.iteration
        eta, beta = self.eta(k + 1), self.beta(k + 1)
        Z = np.asarray(self._average(self.X))
        mean = Z - eta * self.grad(Z)
        if not self.noise:
            return self._finish(mean)
        X_new = self.publish(mean, scale=1.0 / beta, sensitivity=eta * self.sensitivity.B_1,
                             l2_sensitivity=eta * self.sensitivity.B_2)
        self.account_interval(X_new, mean, mean, beta, eta * self.B_inf)
        return self._finish(X_new)


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
    reference = Reference(_XIAO, "Algorithm 2", "(7), (10)",
                          "general graphs: Metropolis weights and the farthest pair in N~_i")
    params = _step_params(0.95, "paper, Fig. D: 0.95") + (
        Param("gradient_at", str, "own",
              "'own': grad f_i(x_i^k) (any graph); 'network_mean': grad f_i at "
              "the network average as printed in eq. (7) (complete graph only)",
              choices=("own", "network_mean")),
    )

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        self._init_gd()
        if self.settings.get("gradient_at") == "network_mean" and not is_complete(self.adj):
            raise ValueError("gradient_at = 'network_mean' (eq. (7)) needs a complete graph; "
                             "use 'own' on general graphs")
        self._nb = closed_neighbourhoods(self.adj)
        N, K = self._nb.shape
        valid = np.arange(K)[None, :] <= self.deg[:, None]
        W = self.W.tocsr()
        self._Wnb = np.where(valid, np.asarray(W[np.arange(N)[:, None], self._nb].todense()), 0.0)
        same = self._nb[:, :, None] == self._nb[:, None, :]
        self._pairs = valid[:, :, None] & valid[:, None, :] & ~same
        self._complete = is_complete(self.adj)

    def _gradient(self):
        if self.settings.get("gradient_at") == "network_mean":
            return self.grad(np.broadcast_to(self.X.mean(axis=0), self.X.shape).copy())
        return self.grad(self.X)

    def step(self) -> dict:
        self.begin_releases()
        k = self.iteration
        eta, beta = self.eta(k + 1), self.beta(k + 1)
        N, K = self._nb.shape
        Xn = self.X[self._nb]                                            # (N, K, d)
        if self._complete:
            # One neighbourhood for all (eq. (7): the same pair for every agent).
            dist = np.abs(self.X[:, None, :] - self.X[None, :, :]).sum(axis=-1)
            np.fill_diagonal(dist, -1.0)
            a, b = np.divmod(int(dist.argmax()), N)
            # row i of _nb is (i, neighbours ascending): the position of node j
            pos = lambda j: np.where(np.arange(N) == j, 0,  # noqa: E731
                                     j + (j < np.arange(N)).astype(int))
            pa, pb = pos(a), pos(b)
        else:
            dist = np.abs(Xn[:, :, None, :] - Xn[:, None, :, :]).sum(axis=-1)  # (N, K, K)
            dist = np.where(self._pairs, dist, -1.0)
            pa, pb = np.divmod(dist.reshape(N, -1).argmax(axis=1), K)
            # order each pair by node id, as the complete-graph search does
            swap = self._nb[np.arange(N), pa] > self._nb[np.arange(N), pb]
            pa, pb = np.where(swap, pb, pa), np.where(swap, pa, pb)
        r = np.arange(N)
        xa, xb = Xn[r, pa], Xn[r, pb]
        wa, wb = self._Wnb[r, pa][:, None], self._Wnb[r, pb][:, None]
        rest = np.einsum("nk,nkd->nd", self._Wnb, Xn) - wa * xa - wb * xb - eta * self._gradient()
        s = wa + wb
        w = self._random.uniform(size=self.X.shape)
        mean = rest + s * (w * xa + (1.0 - w) * xb)
        if not self.noise:
            return self._finish(mean)
        X_new = self.publish(mean, scale=1.0 / beta, sensitivity=eta * self.sensitivity.B_1,
                             l2_sensitivity=eta * self.sensitivity.B_2)
        self.account_interval(X_new, rest + s * np.minimum(xa, xb), rest + s * np.maximum(xa, xb),
                              beta, eta * self.B_inf)
        return self._finish(X_new)


class LDPGDMinMax(_GDMixin, PrivateNetworkSolver):
    """Algorithm 2*: per coordinate uniform between the min and max over ``N~_i`` (eq. (28)).

    ``x_i^{k+1}[l] = w alpha_min[l] + (1 - w) alpha_max[l] - eta_{k+1} grad f_i(x_i^k)[l]
    + Delta[l]``, ``w ~ U(0, 1)`` per agent, coordinate and iteration.
    """

    name = "ldp_gd_minmax"
    title = "Algorithm 2* (LDP GD, min-max aggregation)"
    reference = Reference(_XIAO, "Algorithm 2*", "(28), (10)", "App. E, Example (c)")
    params = _step_params(0.93, "paper, Fig. C: 0.93")

    def __init__(self, data, **kw):
        super().__init__(data, **kw)
        self._init_gd()
        self._nb = closed_neighbourhoods(self.adj)

    def step(self) -> dict:
        self.begin_releases()
        k = self.iteration
        eta, beta = self.eta(k + 1), self.beta(k + 1)
        Xn = self.X[self._nb]
        lo, hi = Xn.min(axis=1), Xn.max(axis=1)
        g = eta * self.grad(self.X)
        w = self._random.uniform(size=self.X.shape)
        mean = w * lo + (1.0 - w) * hi - g
        if not self.noise:
            return self._finish(mean)
        X_new = self.publish(mean, scale=1.0 / beta, sensitivity=eta * self.sensitivity.B_1,
                             l2_sensitivity=eta * self.sensitivity.B_2)
        self.account_interval(X_new, lo - g, hi - g, beta, eta * self.B_inf)
        return self._finish(X_new)
