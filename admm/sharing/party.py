"""Party m's side of ADMM sharing, and the seam to wherever the parties run.

In Algorithm 1 of Hu et al. (2019) party m receives one N-vector per epoch,
the value ``r`` it pulls for its x-update (6), and sends one back, its
(perturbed) share ``D_m x_m`` (updates (10) with noise). :class:`Party` is
that side: it holds the block ``D_m``, the local model ``x_m``, the feasible
set ``X_m`` and party m's noise stream, and answers :meth:`Party.update`.

:class:`Parties` is what the iteration (:class:`~.solver.ADMMSharing`)
talks to: one round of pulls in, shares out. :class:`LocalParties` keeps
the M parties in this process. Other backends (the experiments layer's
Dask actors, one per party on its own worker) implement the same methods
with the same :class:`Party` code, so the iteration has no branch on where
the parties run and gives the same numbers to the bit.

Beyond the protocol, the runner's diagnostics ask the parties for values
no party sends in Algorithm 1 (:meth:`Parties.models`,
:meth:`Parties.exact_shares`, :meth:`Parties.rmatvecs`,
:meth:`Parties.test_products`): a research run's objective, residuals and
test metrics, never the release.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .block import BlockSolver
from .forms import BALL, Unconstrained
from .noise import NOISE

__all__ = ["LocalParties", "Parties", "Party", "PartySpec"]


@dataclass(frozen=True)
class PartySpec:
    """What every party needs besides its block: public options of the run.

    ``rho`` is the x-update's penalty the block is factored for (``M rho``
    in the Boyd form); ``factor`` False when the penalty is adaptive (the
    block then keeps an eigendecomposition instead of a Cholesky factor).
    """

    lam: float
    rho: float
    factor: bool
    x_radius: float | None = None
    ball: str = "project"
    noise_form: str = "variable"
    share_clip: float | None = None
    #: BLAS threads while the party works (None: untouched); where the parties run
    #: elsewhere, their processes pin the same count so the numbers agree to the bit
    blas_threads: int | None = None


class Party:
    """Party m: its block, its model ``x_m`` and its side of every epoch.

    ``release(mean, scale=, rng=)`` adds output noise and records it (the
    solver's :meth:`~vfl.core.solver.Solver.release` in this process).
    """

    def __init__(self, D, spec: PartySpec, rng, release):
        self.block = BlockSolver(D, spec.lam, spec.rho, factor=spec.factor)
        self.feasible = Unconstrained() if spec.x_radius is None else BALL[spec.ball](spec.x_radius)
        self.noise = NOISE[spec.noise_form]()
        self.share_clip = spec.share_clip
        self.rng = rng
        self.release = release
        n, d = self.block.D.shape
        self.x = np.zeros(d)
        self.exact = np.zeros(n)

    @property
    def n_features(self) -> int:
        return self.block.D.shape[1]

    def update(self, r: np.ndarray, rho: float, sigma: float) -> tuple[np.ndarray, int]:
        """The x-update (6) for the pulled ``r`` at penalty ``rho``, then the push.

        Returns the share party m sends (perturbed when ``sigma > 0``) and
        whether ``X_m`` bound or moved the model (0 or 1, 2 if both).
        """
        x, active = self.feasible.solve(self.block, r, rho)
        x, moved = self.feasible.project(x)
        e = self.block.matvec(x)
        s = self.publish(x, e, sigma)
        self.x, self.exact = x, e
        return s, int(np.any(active)) + int(np.any(moved))

    def publish(self, x: np.ndarray, share: np.ndarray, sigma: float) -> np.ndarray:
        """The value pushed to the central node (Hu et al. 2019, updates (10)).

        Algorithm 1 pushes the exact share ``D_m x_m``; with ``sigma > 0`` the
        perturbed one in the configured noise form, drawn from party m's own
        stream. The party keeps its unperturbed ``x_m``.
        """
        if self.share_clip is not None:
            share = np.clip(share, -self.share_clip, self.share_clip)
        if sigma == 0:
            return share  # no draw at all: sigma = 0 replays Algorithm 1 exactly
        return self.noise.perturb(share, x, sigma=sigma, rng=self.rng, block=self.block,
                                  release=self.release)

    def restore(self, r: np.ndarray, rho: float) -> None:
        """Recompute ``x_m`` (and its exact share) from the last value pulled.

        The x-update (6) reads only ``r``, so the model after an epoch is a
        function of that epoch's pull: a party rebuilt from its data gets its
        model back to the bit without any party sending it.
        """
        x, _ = self.feasible.solve(self.block, r, rho)
        self.x, _ = self.feasible.project(x)
        self.exact = self.block.matvec(self.x)


class Parties:
    """The M parties as the iteration sees them (see the module docstring)."""

    n_parties: int
    #: each party's number of columns d_m
    n_features: list[int]
    #: whether each party's noisy release goes through the iteration's
    #: :meth:`~vfl.core.solver.Solver.release` (parties in this process); False where the
    #: parties draw their noise themselves: the iteration then records the release events
    records_releases: bool = True

    def update(self, m: int, r: np.ndarray, rho: float, sigma: float) -> tuple[np.ndarray, int]:
        """Party m's update for the pulled ``r`` (one message each way)."""
        raise NotImplementedError

    def update_all(self, pulls: list, rho: float, sigmas) -> list[tuple[np.ndarray, int]]:
        """Every party's update in one round (Jacobi order): the parties work in parallel."""
        return [self.update(m, r, rho, sigmas[m]) for m, r in enumerate(pulls)]

    def models(self) -> list[np.ndarray]:
        """The local models ``x_m`` (diagnostics: no party sends its model)."""
        raise NotImplementedError

    def exact_shares(self) -> list[np.ndarray]:
        """The unperturbed shares ``D_m x_m`` (diagnostics)."""
        raise NotImplementedError

    def rmatvecs(self, y: np.ndarray) -> list[np.ndarray]:
        """``D_m^T y`` for every party (the dual residual, a diagnostic)."""
        raise NotImplementedError

    def test_products(self, test) -> list[np.ndarray]:
        """``B_m x_m`` on each party's held-out columns ``B_m`` (``test``, when held here)."""
        raise NotImplementedError


class LocalParties(Parties):
    """The M parties in this process, in order (the in-process backend)."""

    def __init__(self, parties: list[Party]):
        self.parties = parties
        self.n_parties = len(parties)
        self.n_features = [p.n_features for p in parties]

    @property
    def blocks(self) -> list[BlockSolver]:
        return [p.block for p in self.parties]

    def update(self, m, r, rho, sigma):
        return self.parties[m].update(r, rho, sigma)

    def models(self):
        return [p.x for p in self.parties]

    def exact_shares(self):
        return [p.exact for p in self.parties]

    def rmatvecs(self, y):
        return [p.block.rmatvec(y) for p in self.parties]

    def test_products(self, test):
        return [B @ p.x for B, p in zip(test, self.parties)]
