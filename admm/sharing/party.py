"""Party m's side of ADMM sharing, its protocol, and the seam the iteration talks to.

In Algorithm 1 of Hu et al. (2019) party m receives one N-vector per epoch,
the value ``r`` it pulls for its x-update (6), and sends one back, its
(perturbed) share ``D_m x_m`` (updates (10) with noise). :class:`Party` is
that side: it holds the block ``D_m``, the local model ``x_m``, the feasible
set ``X_m`` and party m's noise stream, and answers :meth:`Party.update`.

`SHARING_PROTOCOL` declares the protocol once (:mod:`vfl.core.protocol`): its
messages, the calls (``update``: the round, a release; ``state``, ``rmatvec``:
the diagnostics; ``test_product``: scoring test rows; ``skip``: the noise
draws of rounds whose pulls a lost party's journal no longer keeps), the
party's :class:`SharingSide` and how a lost party comes back: its journal keeps
the last pull alone (the x-update (6) reads only ``r``, so the model after an
epoch is a function of that epoch's pull) and every round's noise scale.

:class:`Parties` is what the iteration (:class:`~.iteration.ADMMSharing`) talks
to, over a :class:`~vfl.core.units.Session` of that protocol wherever the
parties run (this process, Dask workers): one round of pulls in, shares out,
and the diagnostics a research run asks for (:meth:`Parties.models`,
:meth:`Parties.exact_shares`, :meth:`Parties.rmatvecs`), values no party
sends in Algorithm 1: a research run's objective and residuals, never the
release.
"""

from __future__ import annotations

import numpy as np

from vfl.core.protocol import (
    CONTROL,
    DIAGNOSTIC,
    INFERENCE,
    Call,
    Empty,
    Placement,
    Protocol,
    Recovery,
    Side,
    array,
    handles,
    message,
    scalar,
)
from vfl.core.units import Entry

from .block import BlockSolver
from .forms import BALL, Unconstrained
from .noise import NOISE, NOISE_FORMS

__all__ = ["Parties", "Party", "PartySpec", "SHARING_PROTOCOL", "SharingSide"]


# ----------------------------------------------------------------------- messages --
@message
class PartySpec:
    """What every party needs besides its block: public options of the run.

    ``rho`` is the x-update's penalty the block is factored for (``M rho``
    in the Boyd form); ``factor`` False when the penalty is adaptive (the
    block then keeps an eigendecomposition instead of a Cholesky factor).
    ``blas_threads``: where the parties run elsewhere, their processes pin the
    same count, so the numbers agree to the bit.
    """

    lam = scalar(float)
    rho = scalar(float)
    factor = scalar(bool)
    x_radius = scalar(float, optional=True)
    ball = scalar(str, choices=tuple(BALL))
    noise_form = scalar(str, choices=NOISE_FORMS)
    share_clip = scalar(float, optional=True)
    blas_threads = scalar(int, optional=True)


@message
class Pull:
    """What the central node sends party m: the value ``r`` of its x-update (6), the penalty,
    and its noise scale and (enforced) sensitivity this epoch."""

    r = array("f8", "N")
    rho = scalar(float)
    sigma = scalar(float)
    sensitivity = scalar(float, finite=False)


@message
class Share:
    """What party m sends back: its (perturbed) share, and whether ``X_m`` bound or moved its
    model (0 or 1, 2 if both)."""

    s = array("f8", "N")
    activity = scalar(int)


@message
class State:
    x = array("f8", "d")
    exact = array("f8", "N")


@message
class Residual:
    y = array("f8", "N")


@message
class Coefficients:
    v = array("f8", "d")


@message
class Scores:
    u = array("f8", "T")


@message
class Width:
    d = scalar(int)


@message
class Skip:
    """The noise scales of rounds whose pulls the journal no longer keeps."""

    sigmas = array("f8", "R")


# ------------------------------------------------------------------------- party --
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
        return self.noise.perturb(share, x, sigma=sigma, rng=self.rng, block=self.block, release=self.release)

    def restore(self, r: np.ndarray, rho: float) -> None:
        """Recompute ``x_m`` (and its exact share) from the last value pulled.

        The x-update (6) reads only ``r``, so the model after an epoch is a
        function of that epoch's pull: a party rebuilt from its data gets its
        model back to the bit without any party sending it.
        """
        x, _ = self.feasible.solve(self.block, r, rho)
        self.x, _ = self.feasible.project(x)
        self.exact = self.block.matvec(self.x)


class SharingSide(Side):
    """Party m of ADMM sharing (Hu et al. 2019, Algorithm 1) wherever it runs."""

    def __init__(self, data, spec: PartySpec, env):
        super().__init__(data, spec, env)
        (D,) = data.blocks
        self.m = data.first
        self.party = Party(D, spec, env.noise(self.m), self._release)
        self.dims = {"N": D.shape[0]}
        self._sensitivity = float("nan")

    def _release(self, mean, *, scale, rng):
        return self.env.release(mean, units=self.m, scale=scale, sensitivity=self._sensitivity, rng=rng)

    def opened(self) -> Width:
        return Width(d=self.party.n_features)

    @handles("update")
    def update(self, pull: Pull) -> Share:
        self._sensitivity = pull.sensitivity
        s, activity = self.party.update(pull.r, pull.rho, pull.sigma)
        return Share(s=s, activity=activity)

    @handles("state")
    def state(self, _: Empty) -> State:
        return State(x=self.party.x, exact=self.party.exact)

    @handles("rmatvec")
    def rmatvec(self, req: Residual) -> Coefficients:
        return Coefficients(v=self.party.block.rmatvec(req.y))

    @handles("test_product")
    def test_product(self, _: Empty) -> Scores:
        return Scores(u=np.asarray(self.data.test[0] @ self.party.x, dtype=float).ravel())

    @handles("skip")
    def skip(self, req: Skip) -> Empty:
        """Draw the noise of the rounds the journal kept only the scales of (a seeded stream
        moves on as it did; an exact sampler's noise is never drawn again)."""
        if self.env.replayable:
            zero = np.zeros(self.party.block.D.shape[0])
            for sigma in req.sigmas:
                self._sensitivity = float("nan")
                self.party.publish(self.party.x, zero, float(sigma))
        return Empty()

    def install(self, call, pull: Pull, share: Share) -> None:
        """A deployment's round, whose share the coordinator holds: the model from its pull."""
        self.party.restore(pull.r, pull.rho)


def _compact(entries: list) -> list:
    """The journal a lost party needs: every round's noise scale, the last round in full."""
    if len(entries) < 2 or (len(entries) == 2 and entries[0].call.name == "skip"):
        return entries
    sigmas = [s for e in entries[:-1] for s in (e.request.sigmas if e.call.name == "skip" else [e.request.sigma])]
    return [Entry(SHARING_PROTOCOL.call("skip"), Skip(sigmas=np.asarray(sigmas, dtype=float)), None), entries[-1]]


SHARING_PROTOCOL = Protocol(
    "admm_sharing",
    1,
    spec=PartySpec,
    side=SharingSide,
    opened=Width,
    iteration="update",
    calls=(
        Call("update", Pull, Share, releases=True, labels=("request", "reply")),
        Call("state", Empty, State, DIAGNOSTIC, labels=("reply",)),
        Call("rmatvec", Residual, Coefficients, DIAGNOSTIC, labels=("request", "reply")),
        Call("test_product", Empty, Scores, INFERENCE, labels=("reply",)),
        Call("skip", Skip, Empty, CONTROL),
    ),
    placement=Placement("party", "parties", iteration="epoch"),
    recovery=Recovery(compact=_compact),
)


# -------------------------------------------------------------------------- seam --
class Parties:
    """The M parties as the iteration sees them, over a session of :data:`SHARING_PROTOCOL`.

    ``sensitivities``: each party's enforced l2 sensitivity of its release (NaN where none
    is enforced), recorded with its release event.
    """

    def __init__(self, session, n: int, sensitivities):
        self.session = session
        self.n_parties = session.n
        #: each party's number of columns d_m
        self.n_features = [o.d for o in session.opened]
        #: whether each party's noisy release goes through the iteration's
        #: :meth:`~vfl.core.solver.Solver.release` (parties in this process); False where
        #: the parties draw their noise themselves: the iteration then records the events
        self.records_releases = session.records
        self.sensitivities = np.asarray(sensitivities, dtype=float)
        for k, d in enumerate(self.n_features):
            session.bind(k, N=n, d=d)
        self._state = None  # (models, exact shares) of the current round, once asked

    @property
    def parties(self) -> list[Party]:
        """The :class:`Party` objects, where they are in this process."""
        return [side.party for side in self.session.sides]

    @property
    def blocks(self) -> list[BlockSolver]:
        return [p.block for p in self.parties]

    # -- the protocol: one round of pulls and shares --------------------------------
    def update(self, m: int, r: np.ndarray, rho: float, sigma: float) -> tuple[np.ndarray, int]:
        """Party m's update for the pulled ``r`` (one message each way)."""
        return self._pulls({m: r}, rho, {m: sigma})[m]

    def update_all(self, pulls: list, rho: float, sigmas) -> list[tuple[np.ndarray, int]]:
        """Every party's update in one round (Jacobi order): the parties work in parallel."""
        out = self._pulls(dict(enumerate(pulls)), rho, dict(enumerate(sigmas)))
        return [out[m] for m in range(len(pulls))]

    def _pulls(self, pulls: dict, rho: float, sigmas: dict) -> dict:
        replies = self.session.round(
            "update",
            {
                m: Pull(r=r, rho=float(rho), sigma=float(sigmas[m]), sensitivity=float(self.sensitivities[m]))
                for m, r in pulls.items()
            },
        )
        self._state = None
        return {m: (reply.s, reply.activity) for m, reply in replies.items()}

    # -- diagnostics ----------------------------------------------------------------------
    def _states(self):
        if self._state is None:
            self._state = self.session.ask("state")
        return self._state

    def models(self) -> list[np.ndarray]:
        """The local models ``x_m`` (diagnostics: no party sends its model)."""
        return [s.x for s in self._states()]

    def exact_shares(self) -> list[np.ndarray]:
        """The unperturbed shares ``D_m x_m`` (diagnostics)."""
        return [s.exact for s in self._states()]

    def rmatvecs(self, y: np.ndarray) -> list[np.ndarray]:
        """``D_m^T y`` for every party (the dual residual, a diagnostic)."""
        return [c.v for c in self.session.ask("rmatvec", Residual(y=y))]

    def test_products(self, test) -> list[np.ndarray]:
        """``B_m x_m`` on each party's held-out columns ``B_m`` (``test``, where held here;
        elsewhere each party holds its own): the inference messages."""
        return [s.u for s in self.session.score("test_product", test=test)]


# -------------------------------------------------------------- what a party saw --
def pulled(exchanges, party: int, n: int, streams=None) -> np.ndarray | None:
    """What party ``party`` (0-based) pulled, ``(N, epochs)``: the values that carry the
    labels to it (the z- and dual updates read them); the attacks' view (simulation)."""
    cols = [e.request.r for e in exchanges if e.call == "update" and e.first <= party < e.stop]
    return np.column_stack(cols) if cols else None


def shared(exchanges, party: int, n: int, streams=None) -> np.ndarray | None:
    """What the central node (party 1) received from party ``party``: its shares per epoch."""
    cols = [e.reply.s for e in exchanges if e.call == "update" and e.first <= party < e.stop]
    return np.column_stack(cols) if cols else None
