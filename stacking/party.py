"""Each passive party's side of private stacking, and the seam to wherever the parties run.

In the one round of :mod:`.solver`, passive party m receives the labels
from party 1 (its local fit, eq. L, uses them) and sends up to three
releases: its perturbed local model (eq. O), its clipped share on the
training rows, noisy in a private run (eq. S), and the share's two noisy
moments (eq. Q). :class:`Passive` is that side: it holds the block ``D_m``
and computes what the releases perturb. :class:`Passives` is what party 1
(the solver) talks to: the round, then the clipped shares under the
released models that its diagnostics and the scoring of test rows need.

:class:`LocalPassives` keeps the passive parties in this process and puts
every release through the solver's ``release`` (where the audit watches
it). Another backend (the experiments layer's Dask actors, one per passive
party on its own worker) runs the same :class:`Passive` code there and
draws the noise there, at the scales of the release events the solver
records, so the solver has no branch on where the parties run.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from vfl.core.preprocessing import row_norms

from . import mechanism as mech

__all__ = ["LocalPassives", "Noise", "Passive", "Passives", "PassiveSpec", "Round",
           "share_moments"]

@dataclass(frozen=True)
class PassiveSpec:
    """What every passive party needs besides its block: public options of the round.

    ``n_passive`` is K, the number of passive parties: a replayable run
    draws the shares' and the moments' noise for all K at once from the
    run's stream (``Streams.noise()``), and each party keeps its row.
    """

    clip: float
    n_passive: int


@dataclass(frozen=True)
class Noise:
    """One kind of release's Gaussian noise, per passive party: the standard deviation
    ``scale`` and the enforced l2 ``sensitivity`` (:mod:`.mechanism`)."""

    scale: np.ndarray
    sensitivity: np.ndarray


@dataclass
class Round:
    """What party 1 receives in the round, per passive party (rows in party order).

    ``models``: the released models ``x~_m``; ``shares``: ``(K, N)`` clipped
    shares on the training rows, noisy in a private run, None when none is
    released; ``moments``: ``(K, 2)`` noisy moments, or None.
    """

    models: list[np.ndarray]
    shares: np.ndarray | None
    moments: np.ndarray | None


def share_moments(S: np.ndarray) -> np.ndarray:
    """``(mean s, mean s^2)`` of each row of the clipped shares ``S`` (eq. Q's mean), ``(k, 2)``
    (leading axes of ``S``, the audit's runs, are kept)."""
    return np.stack([S.mean(axis=-1), (S * S).mean(axis=-1)], axis=-1)


class Passive:
    """Passive party m: its block ``D_m`` and, after the round, its released model ``x~_m``."""

    def __init__(self, D, spec: PassiveSpec):
        self.D = D.tocsr() if sp.issparse(D) else np.ascontiguousarray(D, dtype=float)
        self.clip = spec.clip
        self.x: np.ndarray | None = None

    @property
    def width(self) -> int:
        return self.D.shape[1]

    def max_row_norm(self) -> float:
        """The largest l2 norm of a row of ``D_m`` (every sensitivity needs it at most 1)."""
        return float(row_norms(self.D).max(initial=0.0))

    def fit(self, labels, lam: float) -> np.ndarray:
        """Eq. L: the local logistic model on ``D_m`` with party 1's labels (offset: their
        base-rate logit ``m0``), stopped at ``||grad|| <= GTOL`` (checked)."""
        y = np.asarray(labels, dtype=float)
        x, _ = mech.fit_logistic(self.D, y, lam, offset=mech.base_rate_logit(y))
        return x

    def keep(self, x) -> np.ndarray:
        """Keep the released model ``x~_m`` (the exact one is not kept)."""
        self.x = np.asarray(x, dtype=float)
        return self.x

    def share(self, B=None) -> np.ndarray:
        """``clip(B x~_m, [-c, c])`` on the rows of ``B`` (default: the training block): eq.
        S's mean, and what party m sends to score a test row (eq. F). Models with leading
        axes (the audit's runs, ``(R, d)``) give shares ``(R, N)``: one product, the runs as
        columns."""
        B = self.D if B is None else B
        share = np.asarray(B @ self.x.T).T.reshape(self.x.shape[:-1] + (B.shape[0],))
        return np.clip(share, -self.clip, self.clip)


class Passives:
    """The passive parties as party 1 sees them (see the module docstring)."""

    #: K, and each passive party's column count d_m and largest row norm
    n_passive: int
    widths: list[int]
    max_row_norms: list[float]

    def round(self, labels: np.ndarray, lam: np.ndarray, sent: dict) -> Round:
        """The round: every passive party fits its model with ``labels`` at its l2 weight
        ``lam[j]`` and sends the releases ``sent`` names (``kind -> Noise``, or None where a
        non-private run sends the exact value; a kind absent is not sent)."""
        raise NotImplementedError

    def shares(self) -> list[np.ndarray]:
        """Each passive party's exact clipped share on the training rows (diagnostics: in a
        private run only the noisy one is released)."""
        raise NotImplementedError

    def test_shares(self, test) -> list[np.ndarray]:
        """Each passive party's clipped share of the test rows (``test``: the held-out
        blocks of every party, where this process holds them)."""
        raise NotImplementedError


class LocalPassives(Passives):
    """The passive parties 2..M in this process; their releases go through ``release`` (the
    solver's :meth:`~vfl.core.solver.Solver.release`) with party m's own stream ``rngs[j]``
    (the model) or the run's stream ``shared`` (the shares and moments of all at once)."""

    def __init__(self, blocks, spec: PassiveSpec, release, rngs, shared):
        self.passives = [Passive(D, spec) for D in blocks]
        self.n_passive = len(self.passives)
        self.widths = [p.width for p in self.passives]
        self.max_row_norms = [p.max_row_norm() for p in self.passives]
        self.units = np.arange(1, self.n_passive + 1)  # parties 2..M, 0-based
        self.release, self.rngs, self.shared = release, rngs, shared

    def _released(self, noise: Noise | None, mean, units, rng, j=slice(None)):
        if noise is None:
            return mean
        return self.release(mean, units=units, scale=noise.scale[j],
                            sensitivity=noise.sensitivity[j], rng=rng)

    def round(self, labels, lam, sent):
        models = [p.keep(self._released(sent["model"], p.fit(labels, lam[j]), int(self.units[j]),
                                        self.rngs[j], j))
                  for j, p in enumerate(self.passives)]
        # (K, N); with the audit's runs ahead of the parties, (R, K, N)
        S = np.stack([p.share() for p in self.passives], axis=-2)
        shares = moments = None
        if "shares" in sent:
            shares = np.asarray(self._released(sent["shares"], S, self.units, self.shared))
        if "moments" in sent:
            moments = np.asarray(self._released(sent["moments"], share_moments(S), self.units,
                                                self.shared))
        return Round(models, shares, moments)

    def shares(self):
        return [p.share() for p in self.passives]

    def test_shares(self, test):
        return [p.share(B) for B, p in zip(test[1:], self.passives)]
