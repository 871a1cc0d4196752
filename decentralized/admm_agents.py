"""The agents' side of decentralized consensus ADMM (:mod:`.admm`): each agent's primal step,
linearized (Algorithm 1's closed form (6)/(13)) or exact (12), with its penalty weights, and
its dual step, vectorized over a group of agents.
"""

from __future__ import annotations

import numpy as np

from .agents import AgentGroup


class ADMMAgents(AgentGroup):
    """The agents' side of the ADMM solvers: their duals and their penalty weights.

    Each agent takes the dual step of iteration k (Xiao et al. 2019, Algorithm 1,
    sign corrected) once its neighbours' ``x_j^{k+1}`` have reached it, i.e. at the
    start of its next iteration, with the same neighbour sum that iteration uses.
    """

    #: ``w ~ U(0, 1)^d`` per agent and iteration (else ``w = 1/2``: fixed penalties)
    random_weights = True

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.lam = np.zeros_like(self.X)

    def received(self) -> np.ndarray:
        """The neighbour sum of ``x^k``, after the dual step it completes:
        ``lambda_i^k = lambda_i^{k-1} - zeta sum_{j in N_i} (x_i^k - x_j^k)`` ((L x^k)_i)."""
        nsum = self.neighbour_sum()
        if self.rounds:
            sign = 1.0 if self.settings.get("dual_sign", "corrected") == "corrected" else -1.0
            lap = self.deg[:, None] * self.X - nsum  # (L x)_i
            self.lam = self.lam - sign * self.settings["zeta"] * lap
        return nsum

    def weights(self) -> np.ndarray:
        if self.random_weights:
            return self.uniform()
        return np.full((self.n, self.d), 0.5)


class _FixedADMMAgents(ADMMAgents):
    random_weights = False


class LinearizedAgents(ADMMAgents):
    """Algorithm 1's step (6) with output noise, and Theorem 2.2's realized loss."""

    def update(self, public, publish):
        D = self.settings["D"]
        nsum = self.received()
        avg = nsum / self.deg[:, None]
        w = self.weights()
        c = (self.lam - self.grad(self.X)) / D
        mean = w * self.X + (1.0 - w) * avg + c
        X_new = mean if publish is None else publish(mean)
        if publish is not None:
            if public["laplace"]:
                lo = np.minimum(self.X, avg) + c
                hi = np.maximum(self.X, avg) + c
                if not self.random_weights:
                    lo = hi = mean  # fixed parameters: a point mean (pure Laplace)
                self.account_interval(X_new, lo, hi, public["beta"], public["T"])
            else:
                self.unaccounted()
        self._done(X_new)
        return X_new, {}


class _FixedLinearizedAgents(LinearizedAgents):
    random_weights = False


class ExactAgents(ADMMAgents):
    """The exact primal step (12) by per-agent Newton; the linear term perturbed by the
    private baselines ([42], [43]: ``publish`` of ``lambda_i``)."""

    def quadratic(self, nsum, public):
        """``(v - lambda, q)``: the penalty part of the linear term and the total weight."""
        D = self.settings["D"]
        avg = nsum / self.deg[:, None]
        w = self.weights()
        return D * (w * self.X + (1.0 - w) * avg), np.full(self.n, D)

    def update(self, public, publish):
        nsum = self.received()
        pen, q = self.quadratic(nsum, public)
        term = self.lam if publish is None else publish(self.lam)
        if "loss" in public:  # the reconstructed curve's per-iteration loss (public values)
            self.loss += public["loss"][self.rows]
            self.worst += public["loss"][self.rows]
        X_new, its = self.newton(term + pen, q, self.X)
        self._done(X_new)
        return X_new, {"newton_iterations": its}


class _FixedExactAgents(ExactAgents):
    random_weights = False


class PenaltyAgents(ExactAgents):
    """[43]'s increasing penalties: ``rho = eta_{k+1}``, ``Gamma = eta_{k+1} |N_i|``."""

    def quadratic(self, nsum, public):
        eta = public["eta"]
        return eta * (self.deg[:, None] * self.X + nsum), 2.0 * eta * self.deg
