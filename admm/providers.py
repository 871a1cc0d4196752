"""DP-ADMM's providers (Huang et al. 2019, Algorithm 3), and the seam to wherever they run.

Provider i holds its rows ``A_i`` ``(m, d)`` and labels ``b_i``. In
iteration k (Algorithm 3, lines 3-10) it receives the trainer's global
``w^k`` (d values), takes its own dual step (3d)
``gamma_i^k = gamma_i^{k-1} - rho (w~_i^k - w^k)`` (the trainer takes the
same one, on the same values, for its update (3c)), computes the closed
form (3a) of the approximate augmented Lagrangian (2) linearized at its own
last release ``w~_i^k``, and releases
``w~_i^{k+1} = w_i^{k+1} + N(0, sigma_{k+1}^2 I_d)`` (3b): d values back.

:class:`ProviderGroup` is that side for a contiguous group of providers,
vectorized over them (arrays ``(n, m, d)``: no loop over providers or
samples). :class:`LocalProviders` keeps all N providers in this process as
one group; the experiments layer's Dask backend puts one group on each of its
workers (:mod:`vfl.experiments.providers`). Every batched operation works
provider by provider, so the same rows give the same numbers to the bit
however the providers are grouped, and the iteration
(:class:`~vfl.admm.consensus.DPADMM`) has no branch on where they run.

Beyond the protocol, the runner's diagnostics ask the providers for values
no provider sends in Algorithm 3 (:meth:`Providers.diagnose`,
:meth:`Providers.models`): training margins and losses at ``w^k``, the
local objectives at the ergodic averages (Sec. VI's metrics), the clean
local models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LocalProviders", "ProviderGroup", "ProviderSpec", "Providers",
           "check_provider_rows"]


@dataclass(frozen=True)
class ProviderSpec:
    """What every provider group needs besides its rows: public options of the run."""

    rho: float
    lam_per_provider: float
    regularizer: str
    #: a private run enforces ``||a|| <= 1`` on the rows (``row_bound``: check or clip)
    private: bool
    row_bound: str | None
    #: the solver's name, for error messages
    name: str


def check_provider_rows(A, b, *, name: str, private: bool, row_bound: str | None):
    """The providers' rows ``A`` ``(n, m, d)`` and labels ``b`` ``(n, m)``, checked (and, in a
    private run, ``||a|| <= 1`` enforced): returns ``(A, b, rows scaled)``; ``ValueError``
    otherwise. Run where the rows are (the trainer in-process, each worker on Dask)."""
    from .consensus import enforce_row_bound

    try:
        A = np.asarray(A, dtype=float)
        b = np.asarray(b, dtype=float)
    except ValueError:  # ragged: providers with different m
        raise ValueError("providers must hold equal numbers of samples: A (N, m, d), "
                         "b (N, m)") from None
    if A.ndim != 3 or b.shape != A.shape[:2]:
        raise ValueError(f"providers' data must be A (N, m, d) and b (N, m) with equal m; got "
                         f"A {A.shape} and b {b.shape}")
    if min(A.shape) < 1:
        raise ValueError(f"need N, m, d >= 1, got A of shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError("provider rows must be finite")
    if not np.all(np.abs(b) == 1.0):
        raise ValueError("labels must be -1 or +1 (|b| = 1 is part of S1 = 1)")
    clipped = 0
    if private:
        A, clipped = enforce_row_bound(A, row_bound)
    return np.ascontiguousarray(A), b, clipped


class ProviderGroup:
    """Providers ``start .. start + n - 1`` of N: their rows, duals and last releases.

    ``publish(W)`` turns the group's clean closed forms ``(n, d)`` into what
    it releases (noise drawn where the rows are; the identity without noise).
    """

    def __init__(self, A, b, *, start: int, rho: float, lam_per_provider: float,
                 regularizer: str):
        self.A, self.b = A, b
        self.start = int(start)
        n, _, d = A.shape
        self.rows = slice(self.start, self.start + n)
        self.rho, self.lam_per_provider, self.regularizer = rho, lam_per_provider, regularizer
        self.gamma = np.zeros((n, d))  # gamma_i^k
        self.shared = np.zeros((n, d))  # the last release w~_i^k
        self.W = np.zeros((n, d))  # the clean w_i^k (never sent)
        self.rounds = 0

    def update(self, w: np.ndarray, eta: float, publish) -> np.ndarray:
        """One iteration for the group, given the trainer's ``w^k``: (3d), (3a), (3b)."""
        from .consensus import dp_admm_closed_form

        if self.rounds:  # (3d) of the last iteration, with the w it has just received
            self.gamma = self.gamma - self.rho * (self.shared - w)
        W = dp_admm_closed_form(self.A, self.b, self.shared, w, self.gamma, eta=eta,
                                rho=self.rho, lam_per_provider=self.lam_per_provider,
                                regularizer=self.regularizer)
        self.W = W
        self.shared = publish(W)
        self.rounds += 1
        return self.shared

    def diagnose(self, w: np.ndarray, W_bar: np.ndarray | None):
        """Training margins ``A_i w`` ``(n, m)``, losses ``(1/m) sum_j l`` ``(n,)`` and, after
        an iteration, the local objectives ``f_i(W_bar_i)`` ``(n,)`` (Sec. VI's metrics)."""
        from .consensus.batched import local_objectives
        from .local_solvers import _softplus

        margins = self.A @ w
        losses = _softplus(-self.b * margins).mean(axis=1)
        f = None if W_bar is None else local_objectives(
            self.A, self.b, W_bar, lam_per_provider=self.lam_per_provider,
            regularizer=self.regularizer)
        return margins, losses, f

    def restore(self, shared: np.ndarray, gamma: np.ndarray, rounds: int) -> None:
        """The state after ``rounds`` iterations, from the trainer's checkpoint: the releases
        the trainer received and the duals it computed (both the group's own, too)."""
        self.shared, self.gamma, self.rounds = shared.copy(), gamma.copy(), int(rounds)
        self.W = np.zeros_like(shared)  # the clean models are diagnostics: not checkpointed


class Providers:
    """The N providers as the trainer sees them (see the module docstring)."""

    n_providers: int
    #: samples per provider and features
    m: int
    d: int
    #: rows scaled onto the unit ball (a private run's ``row_bound``), over all providers
    rows_clipped: int = 0

    def update(self, w: np.ndarray, eta: float, noise) -> np.ndarray:
        """Every provider's iteration from ``w^k``; returns the releases ``(N, d)``.

        ``noise`` is None (no noise) or ``(units, scale, sensitivity)`` of the
        Gaussian release (3b): the iteration's :class:`~vfl.core.solver.Release`.
        """
        raise NotImplementedError

    def diagnose(self, w: np.ndarray, W_bar: np.ndarray | None):
        """:meth:`ProviderGroup.diagnose` over all providers (diagnostics: nothing is sent)."""
        raise NotImplementedError

    def models(self) -> np.ndarray:
        """The clean local models ``w_i^k`` ``(N, d)`` (diagnostics)."""
        raise NotImplementedError


class LocalProviders(Providers):
    """All N providers in this process, one group (the in-process backend).

    ``release(mean, units=, scale=, sensitivity=)`` is the solver's
    :meth:`~vfl.core.solver.Solver.release` with its noise stream: it records
    the event and draws (the audit watches it there).
    """

    def __init__(self, group: ProviderGroup, release):
        self.group, self.release = group, release
        self.n_providers, self.m, self.d = group.A.shape

    @property
    def A(self) -> np.ndarray:
        return self.group.A

    @property
    def b(self) -> np.ndarray:
        return self.group.b

    def update(self, w, eta, noise):
        if noise is None:
            return self.group.update(w, eta, lambda W: W)
        units, scale, sens = noise
        return self.group.update(w, eta, lambda W: self.release(W, units=units, scale=scale,
                                                                sensitivity=sens))

    def diagnose(self, w, W_bar):
        return self.group.diagnose(w, W_bar)

    def models(self):
        return self.group.W
