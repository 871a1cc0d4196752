"""The passive parties' side of private stacking, its protocol, and the seam party 1 uses.

In the one round of :mod:`.solver`, passive party m receives the labels
from party 1 (its local fit, eq. L, uses them) and sends up to three
releases: its perturbed local model (eq. O), its clipped share on the
training rows, noisy in a private run (eq. S), and the share's two noisy
moments (eq. Q). :class:`Passive` is that side's computation: it holds the
block ``D_m`` and computes what the releases perturb.

:data:`PASSIVES_PROTOCOL` declares the round once (:mod:`vfl.core.protocol`):
``release`` (the round), ``shares`` (the exact clipped shares under the
released models, a diagnostic for the training metrics) and ``test_shares``
(the scoring of test rows). Its side, :class:`PassivesSide`, holds a
contiguous group of passive parties: all K of them in party 1's process (the
shares' and the moments' noise is then one draw for all K from the run's
stream, as the solver's ``release`` makes it, where the audit watches it), or
each passive party alone on its own worker, where it draws its row of that
same whole draw from its copy of the stream (a replayable run's noise is
public to whoever holds the seed anyway), or exact discrete Gaussians in a
deployment run. :class:`Passives` is what party 1 (the solver) talks to.

A lost passive party is rebuilt by its journal: before its reply, the round
runs there (an exact draw is then a fresh one of a release that never reached
party 1); after it, it takes back its released model (a replayable one is
drawn again and checked equal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from vfl.core.preprocessing import row_norms
from vfl.core.protocol import (
    DIAGNOSTIC,
    INFERENCE,
    Call,
    Empty,
    Placement,
    Protocol,
    Side,
    array,
    handles,
    message,
    scalar,
)

from . import mechanism as mech
from . import randomized_response as lab

__all__ = ["Noise", "PASSIVES_PROTOCOL", "Passive", "Passives", "PassiveSpec", "PassivesSide", "Round", "share_moments"]


@message
class PassiveSpec:
    """What every passive party needs besides its block: public options of the round.

    ``n_passive`` is K, the number of passive parties: a replayable run draws the
    shares' and the moments' noise for all K at once from the run's stream
    (``Streams.noise()``), and each party keeps its row.
    """

    clip = scalar(float)
    n_passive = scalar(int)
    #: the labels' randomized-response flip rate q (None: the labels as they are); each
    #: passive party then fits with the debiased loss (:mod:`.labels`)
    label_flip = scalar(float, optional=True)


@message
class Labels:
    """The round's request to a group of n passive parties: party 1's labels (+-1, one byte
    each), each party's l2 weight and, per release, its noise scale and enforced sensitivity
    (no scale: the exact value of a non-private run); the shares and their moments are sent
    only when the run uses them."""

    labels = array("i1", "N")
    lam = array("f8", "n")
    model_scale = array("f8", "n", optional=True)
    model_sensitivity = array("f8", "n", optional=True, finite=False)
    shares = scalar(bool)
    shares_scale = array("f8", "n", optional=True)
    shares_sensitivity = array("f8", "n", optional=True, finite=False)
    moments = scalar(bool)
    moments_scale = array("f8", "n", optional=True)
    moments_sensitivity = array("f8", "n", optional=True, finite=False)


@message
class Released:
    """The group's releases: its released models one after the other, its ``(n, N)`` shares
    and ``(n, 2)`` moments when sent."""

    models = array("f8", "D")
    shares = array("f8", "n", "N", optional=True)
    moments = array("f8", "n", 2, optional=True)


@message
class Shares:
    s = array("f8", "n", "R")


@message
class Blocks:
    """What each passive party of the group reports when it opens: its column count and its
    largest row norm (every sensitivity needs unit rows), measured where the block is."""

    widths = array("i8", "n")
    max_row_norms = array("f8", "n", finite=False)


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
        self.q = spec.label_flip or 0.0
        self.x: np.ndarray | None = None

    @property
    def width(self) -> int:
        return self.D.shape[1]

    def max_row_norm(self) -> float:
        """The largest l2 norm of a row of ``D_m`` (every sensitivity needs it at most 1)."""
        return float(row_norms(self.D).max(initial=0.0))

    def fit(self, labels, lam: float) -> np.ndarray:
        """Eq. L: the local logistic model on ``D_m`` with party 1's labels (offset: their
        base-rate logit ``m0``), stopped at ``||grad|| <= GTOL`` (checked); with
        randomized-response labels, the debiased loss of :mod:`.labels`."""
        y = np.asarray(labels, dtype=float)
        if self.q:  # randomized-response labels: Natarajan et al.'s debiased loss
            x, _ = mech.fit_logistic(
                self.D, y, lam, offset=lab.base_rate_logit(y, self.q), tilt=lab.tilt(self.D, y, self.q)
            )
            return x
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


class PassivesSide(Side):
    """Passive parties ``first .. stop - 1`` of private stacking, wherever they run (their
    rows ``first - 1 .. stop - 2`` among the K passive parties)."""

    def __init__(self, data, spec: PassiveSpec, env):
        super().__init__(data, spec, env)
        self.passives = [Passive(D, spec) for D in data.blocks]
        self.rows = slice(data.first - 1, data.stop - 1)
        self.shared = env.noise()  # the run's stream of the releases of all K at once
        self.dims = {"N": data.blocks[0].shape[0], "n": len(self.passives)}

    def opened(self) -> Blocks:
        return Blocks(
            widths=np.array([p.width for p in self.passives], dtype=np.int64),
            max_row_norms=np.array([p.max_row_norm() for p in self.passives]),
        )

    def _kind(self, mean, scale, sensitivity, units):
        """One kind of release of the group's rows (no scale: the exact value)."""
        if scale is None:
            return mean
        out = np.asarray(
            self.env.release(
                mean,
                units=units,
                scale=scale,
                rng=self.shared,
                rows=self.rows,
                sensitivity=sensitivity if sensitivity is not None else np.full(len(scale), np.nan),
                total=self.spec.n_passive,
            )
        )
        # (the audit's runs, in this process only, come back ahead of the parties)
        return out if out.ndim > mean.ndim else out.reshape(mean.shape)

    @handles("release")
    def release(self, req: Labels) -> Released:
        """The round: each fits (eq. L) with the labels and releases its model (eq. O), then the
        group's shares (eq. S) and their moments (eq. Q), as the run uses them."""
        models, first = [], self.data.first
        for i, p in enumerate(self.passives):
            x = p.fit(req.labels, float(req.lam[i]))
            if req.model_scale is not None:
                sens = np.nan if req.model_sensitivity is None else req.model_sensitivity[i]
                x = self.env.release(
                    x,
                    units=first + i,
                    scale=float(req.model_scale[i]),
                    sensitivity=float(sens),
                    rng=self.env.noise(first + i),
                )
            models.append(p.keep(x))
        units = np.arange(first, self.data.stop)
        # (n, N); with the audit's runs ahead of the parties, (R, n, N)
        S = np.stack([p.share() for p in self.passives], axis=-2)
        shares = moments = None
        if req.shares:
            shares = self._kind(S, req.shares_scale, req.shares_sensitivity, units)
            if req.moments:  # (the moments are released only with the shares)
                moments = self._kind(share_moments(S), req.moments_scale, req.moments_sensitivity, units)
        return Released(models=np.concatenate(models, axis=-1), shares=shares, moments=moments)

    def install(self, call, req: Labels, reply: Released) -> None:
        """A deployment's round, whose releases party 1 holds: take back the released models,
        the only state the later messages need."""
        at = np.cumsum([0] + [p.width for p in self.passives])
        for p, a, b in zip(self.passives, at[:-1], at[1:]):
            p.keep(reply.models[a:b])

    @handles("shares")
    def shares(self, _: Empty) -> Shares:
        return Shares(s=np.vstack([p.share() for p in self.passives]))

    @handles("test_shares")
    def test_shares(self, _: Empty) -> Shares:
        return Shares(s=np.vstack([p.share(B) for p, B in zip(self.passives, self.data.test)]))


PASSIVES_PROTOCOL = Protocol(
    "private_stacking",
    1,
    spec=PassiveSpec,
    side=PassivesSide,
    opened=Blocks,
    iteration="release",
    calls=(
        Call("release", Labels, Released, releases=True, labels=("request", "reply")),
        Call("shares", Empty, Shares, DIAGNOSTIC, labels=("reply",)),
        Call("test_shares", Empty, Shares, INFERENCE, labels=("reply",)),
    ),
    placement=Placement("party", "parties", role="passive", grouped=True, first=1, iteration="round"),
)


class Passives:
    """The passive parties as party 1 sees them, over a session of
    :data:`PASSIVES_PROTOCOL` (see the module docstring).

    ``record(units=, scale=, sensitivity=, rng=, size=)`` records a release event in the
    solver (:meth:`~vfl.core.solver.Solver.record_release`) and returns it, where the
    passive parties draw their own noise; ``rngs[j]`` and ``shared`` are the solver's
    streams of the releases (exact samplers in deployment: their events' scales are grown
    for the grid).
    """

    def __init__(self, session, n: int, record, rngs, shared):
        self.session = session
        opened = session.opened
        #: K, and each passive party's column count d_m and largest row norm
        self.widths = [int(d) for o in opened for d in o.widths]
        self.max_row_norms = [float(v) for o in opened for v in o.max_row_norms]
        self.n_passive = len(self.widths)
        first = session.protocol.placement.first
        self.units = np.arange(first, first + self.n_passive)  # parties 2..M, 0-based
        #: each host's rows among the K passive parties
        self.rows = [slice(a - first, b - first) for a, b in session.hosts]
        for k, rows in enumerate(self.rows):
            session.bind(k, N=n, n=rows.stop - rows.start, D=sum(self.widths[rows]))
        self.record, self.rngs, self.shared = record, rngs, shared

    def round(self, labels: np.ndarray, lam: np.ndarray, sent: dict) -> Round:
        """The round: every passive party fits its model with ``labels`` at its l2 weight
        ``lam[j]`` and sends the releases ``sent`` names (``kind -> Noise``, or None where a
        non-private run sends the exact value; a kind absent is not sent)."""
        scales = {kind: None if noise is None else noise.scale for kind, noise in sent.items()}
        if not self.session.records:  # they draw where they are: the events recorded here
            scales = self._record(sent, len(labels))
        requests = {}
        for k, rows in enumerate(self.rows):
            part = {}
            for kind in ("model", "shares", "moments"):
                noise = sent.get(kind)
                part[f"{kind}_scale"] = (
                    None if scales.get(kind) is None else np.asarray(scales[kind], dtype=float)[rows]
                )
                part[f"{kind}_sensitivity"] = (
                    None if noise is None else np.asarray(noise.sensitivity, dtype=float)[rows]
                )
            requests[k] = Labels(
                labels=labels,
                lam=np.asarray(lam, dtype=float)[rows],
                shares="shares" in sent,
                moments="moments" in sent,
                **part,
            )
        replies = self.session.round("release", requests)
        got = [replies[k] for k in range(self.session.n)]
        models = []
        for reply, rows in zip(got, self.rows):
            at = np.cumsum([0] + self.widths[rows])
            models += [reply.models[..., a:b] for a, b in zip(at[:-1], at[1:])]
        stack = {
            kind: np.concatenate([getattr(r, kind) for r in got], axis=-2) if kind in sent else None
            for kind in ("shares", "moments")
        }
        return Round(models, stack["shares"], stack["moments"])

    def _record(self, sent: dict, n: int) -> dict:
        """Record the round's release events in the order the passive parties in party 1's
        process make them (each party's model, then the shares of all, then their moments);
        returns each kind's scales to draw with (None: the exact value)."""
        if sent["model"] is None:  # a non-private round: exact values, nothing recorded
            return dict.fromkeys(sent)
        scales, model = {}, sent["model"]
        scales["model"] = np.concatenate(
            [
                self.record(
                    units=int(m),
                    scale=model.scale[j],
                    sensitivity=model.sensitivity[j],
                    rng=self.rngs[j],
                    size=self.widths[j],
                ).scale
                for j, m in enumerate(self.units)
            ]
        )
        for kind, size in (("shares", n), ("moments", 2)):
            if kind in sent:
                scales[kind] = self.record(
                    units=self.units,
                    scale=sent[kind].scale,
                    sensitivity=sent[kind].sensitivity,
                    rng=self.shared,
                    size=size,
                ).scale
        return scales

    def shares(self) -> list[np.ndarray]:
        """Each passive party's exact clipped share on the training rows (diagnostics: in a
        private run only the noisy one is released)."""
        return [row for r in self.session.ask("shares") for row in r.s]

    def test_shares(self, test) -> list[np.ndarray]:
        """Each passive party's clipped share of the test rows (``test``: the held-out
        blocks of every party, where this process holds them)."""
        return [row for r in self.session.score("test_shares", test=test) for row in r.s]


# -------------------------------------------------------------- what a party saw --
def labels_sent(exchanges, party: int, n: int, streams=None) -> np.ndarray | None:
    """The labels passive party ``party`` (0-based) received, ``(N, 1)``: as they are, or
    after randomized response; the attacks' view (simulation)."""
    got = [e.request.labels for e in exchanges if e.call == "release" and e.first <= party < e.stop]
    return np.asarray(got[0], dtype=float)[:, None] if got else None


def shares_sent(exchanges, party: int, n: int, streams=None) -> np.ndarray | None:
    """The share party 1 received from passive party ``party`` on the training rows, ``(N, 1)``
    (None when the run releases no shares)."""
    for e in exchanges:
        if e.call == "release" and e.first <= party < e.stop and e.reply.shares is not None:
            return np.asarray(e.reply.shares[party - e.first], dtype=float)[:, None]
    return None
