"""Huang et al.'s providers (2019, Algorithms 1-3), and the seam to wherever they run.

Provider i holds its rows ``A_i`` ``(m, d)`` and labels ``b_i``. In
iteration k it receives the trainer's global ``w^k`` (d values), takes its
own dual step ``gamma_i^k = gamma_i^{k-1} - rho (s_i^k - w^k)`` on its last
release ``s_i^k`` (Algorithms 1-2, line 8; Algorithm 3, (3d): the trainer
takes the same one, on the same values, for its average), computes its
local step and releases ``d`` values back (the only message it sends):

- Algorithms 1 and 2 (line 4): the exact argmin of
  ``f_i(w) - <gamma_i, w - w^k> + rho/2 ||w - w^k||^2``, released as it is
  (Algorithm 1) or as ``w_i + N(0, sigma^2 I)`` (Algorithm 2, line 5);
- Algorithm 3: the closed form (3a) of the approximate augmented Lagrangian
  (2) linearized at its own last release ``w~_i^k``, released as
  ``w~_i^{k+1} = w_i^{k+1} + N(0, sigma_{k+1}^2 I_d)`` (3b).

:class:`ProviderGroup` is that side for a contiguous group of providers,
vectorized over them (arrays ``(n, m, d)``: no loop over providers or
samples); each solver subclasses it with its local step
(:mod:`.consensus.exact`, :mod:`.consensus.dp_admm`). :class:`LocalProviders`
keeps all N providers in this process as one group; the experiments layer's
Dask backend puts one group on each of its workers
(:mod:`vfl.experiments.providers`). Every batched operation works provider
by provider (batched products, eigenvalues and solves; the exact local solves
freeze each provider once it has converged, :mod:`.local_solvers`), so the
same rows give the same numbers to the bit however the providers are
grouped, and the iterations (:mod:`.consensus`) have no branch on where they
run.

Beyond the protocol, the runner's diagnostics ask the providers for values
no provider sends (:meth:`Providers.diagnose`, :meth:`Providers.models`,
:meth:`Providers.residuals`): training margins and losses at ``w^k``, the
local objectives at the ergodic averages (Sec. VI's metrics), the clean
local models, the exact local solves' KKT residuals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["LocalProviders", "ProviderGroup", "ProviderSpec", "Providers",
           "check_provider_rows"]


@dataclass(frozen=True)
class ProviderSpec:
    """What every provider group needs besides its rows: public options of the run."""

    #: the solver's :class:`ProviderGroup` subclass (its local step)
    group: type
    rho: float
    lam_per_provider: float
    regularizer: str
    #: a private run enforces ``||a|| <= 1`` on the rows (``row_bound``: check or clip)
    private: bool
    row_bound: str | None
    #: the solver's name, for error messages
    name: str
    #: the local step's own public options (the exact solves' method and tolerance)
    settings: dict = field(default_factory=dict)


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
    """Providers ``start .. start + n - 1`` of N: their rows, duals, releases and models.

    ``update(w, public, publish)`` is one iteration of the group's providers:
    the dual step with the ``w^k`` just received, the local step (a subclass
    per solver, :meth:`local_step`, with the iteration's ``public`` values),
    then ``publish(W)``, which turns the clean local models ``(n, d)`` into what
    they release (noise drawn where the rows are; the identity without noise).
    """

    #: whether a group rebuilt elsewhere must replay its local steps to take the state
    #: the trainer's checkpoint lacks (a warm start): then :meth:`restore` gets the
    #: history of every iteration's ``(w^k, gamma_i^k)``
    replays = False

    def __init__(self, A, b, *, start: int, spec: ProviderSpec):
        self.A, self.b = A, b
        self.start = int(start)
        n, _, d = A.shape
        self.rows = slice(self.start, self.start + n)
        self.spec = spec
        self.rho, self.lam_per_provider, self.regularizer = (spec.rho, spec.lam_per_provider,
                                                             spec.regularizer)
        self.gamma = np.zeros((n, d))  # gamma_i^k
        self.shared = np.zeros((n, d))  # the last release
        self.W = np.zeros((n, d))  # the clean w_i^k (never sent)
        self.rounds = 0

    def local_step(self, w: np.ndarray, public: dict) -> tuple[np.ndarray, dict]:
        """The providers' clean ``w_i^{k+1}`` ``(n, d)`` from ``w^k`` and their state, and
        the step's statistics (per-provider arrays ``(n,)``)."""
        raise NotImplementedError

    def update(self, w: np.ndarray, public: dict, publish) -> tuple[np.ndarray, dict]:
        """One iteration for the group, given the trainer's ``w^k``: the dual step, the local
        step, the release; returns the releases ``(n, d)`` and the step's statistics."""
        if self.rounds:  # the dual step of the last iteration, with the w it has just received
            self.gamma = self.gamma - self.rho * (self.shared - w[..., None, :])
        W, stats = self.local_step(w, public)
        self.W = W
        self.shared = publish(W)
        self.rounds += 1
        return self.shared, stats

    def snapshot(self) -> dict:
        """The group's state, to roll an iteration back: an iteration assigns new arrays to
        the group's attributes and never writes into them, so a shallow copy is enough."""
        return dict(vars(self))

    def rollback(self, state: dict) -> None:
        vars(self).update(state)

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

    def residuals(self) -> np.ndarray:
        """The KKT residuals of the last exact local solves ``(n,)`` (Algorithms 1-2)."""
        raise NotImplementedError

    def restore(self, shared: np.ndarray, gamma: np.ndarray, rounds: int, history) -> None:
        """The state after ``rounds`` iterations, from the trainer's checkpoint: the releases
        the trainer received and the duals it computed (both the group's own, too), and,
        for a group that :attr:`replays`, every iteration's ``(w^k, gamma_i^k)``."""
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

    def update(self, w: np.ndarray, public: dict, noise) -> tuple[np.ndarray, dict]:
        """Every provider's iteration from ``w^k`` (:meth:`ProviderGroup.update`); returns
        the releases ``(N, d)`` and the local steps' statistics, per-provider arrays ``(N,)``.

        ``public`` holds the iteration's public values of the local step (Algorithm 3's
        ``eta``); ``noise`` is None (no noise) or ``(units, scale, sensitivity)`` of the
        Gaussian release: the iteration's :class:`~vfl.core.solver.Release`.
        """
        raise NotImplementedError

    def diagnose(self, w: np.ndarray, W_bar: np.ndarray | None):
        """:meth:`ProviderGroup.diagnose` over all providers (diagnostics: nothing is sent)."""
        raise NotImplementedError

    def models(self) -> np.ndarray:
        """The clean local models ``w_i^k`` ``(N, d)`` (diagnostics)."""
        raise NotImplementedError

    def residuals(self) -> np.ndarray:
        """:meth:`ProviderGroup.residuals` over all providers (Algorithms 1-2's diagnostic)."""
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

    def update(self, w, public, noise):
        if noise is None:
            return self.group.update(w, public, lambda W: W)
        units, scale, sens = noise
        return self.group.update(w, public, lambda W: self.release(W, units=units, scale=scale,
                                                                   sensitivity=sens))

    def diagnose(self, w, W_bar):
        return self.group.diagnose(w, W_bar)

    def models(self):
        return self.group.W

    def residuals(self):
        return self.group.residuals()
