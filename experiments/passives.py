"""``run.backend = "dask"`` for private stacking: each passive party on its own Dask worker.

Party 1, the active party, is the coordinator: the solver in the client
process, which holds the labels and its own block ``D_1`` and fits the
fusion model (eqs. R1-R3, F of :mod:`vfl.stacking.mechanism`) from what the
passive parties release. Passive party m = 2..M (a
:class:`~.parties.PartyActor`) holds its columns on its worker. In the one
round the coordinator sends it the labels (N values, one byte each: its
local fit, eq. L, uses them) and the scales of its releases; it fits its
local model there and sends back its released model (eq. O), its noisy
clipped share on the training rows (eq. S) and the share's noisy moments
(eq. Q): the messages of the protocol, nothing else, except the
diagnostics a research run asks for (its exact clipped share on the
training rows, for the training metrics) and its clipped shares of the test
rows (the inference messages). The worker runs the in-process
:class:`~vfl.stacking.party.Passive` code on the same block.

Privacy: the coordinator records every release event, as the in-process
``release`` does, and sends each party the scale to draw with (grown for the
exact sampler's grid); the noise is drawn on the worker. A replayable run
draws it from the streams the in-process run draws it from: the model's
from party m's own stream, the shares' and the moments' from the run's
stream, drawn whole for the K passive parties with party m keeping its row
(a replayable run's noise is public to whoever holds the seed anyway); so
the numbers are the in-process ones to the bit. A deployment run's parties
draw exact discrete Gaussians from their own OS entropy.

Faults: a passive party's round is answered once (a round run again after
another party's worker was lost returns the same releases, so no release is
drawn twice). A lost passive party is rebuilt on another worker from its
data and the coordinator's checkpoint: before its reply, it runs the round
there (a replayable run's noise is replayed; an exact draw is a fresh one
of a release that never reached the coordinator); after it, it takes back
its released model, the only state its later messages need.
"""

from __future__ import annotations

import numpy as np

from vfl.core.solver import add_noise, add_noise_to_rows
from vfl.stacking.party import Passive, Passives, PassiveSpec, Round, share_moments

from .parties import DaskBackend, DaskPartyUnits, PartyActor, Side

__all__ = ["DaskPassives", "PassiveSide"]


# ------------------------------------------------------------------ worker side --
class PassiveSide(Side):
    """Passive party m of private stacking on its worker: its block and its streams.

    :attr:`rounds` is 1 once it has released.
    """

    def __init__(self, actor: PartyActor, spec: PassiveSpec, repeat: int):
        from .runner import _streams

        streams = _streams(actor.config, repeat)
        self.passive = Passive(actor.D, spec)
        self.j, self.K = actor.m - 1, spec.n_passive  # its row among the passive parties
        self.rng, self.shared = streams.noise(actor.m), streams.noise()
        self.test = actor.test
        self.reply = None

    def release(self, labels, lam, sent: dict):
        """The round: fit (eq. L) with the labels, then the releases ``sent`` names (``kind
        -> scale``, None: the exact value), drawn as the in-process run draws them."""
        if self.reply is not None:  # the round run again for another party: no new draw
            return self.reply
        p = self.passive
        x = p.fit(labels, lam)
        if sent["model"] is not None:
            x = add_noise("gaussian", x, sent["model"], self.rng)
        reply = {"model": p.keep(x)}
        if "shares" in sent:  # (the moments are released only with the shares)
            s = p.share()[None]  # its row of the (K, N) clipped shares
            reply["shares"] = self._row(s, sent["shares"])
            if "moments" in sent:
                reply["moments"] = self._row(share_moments(s), sent["moments"])
        self.reply, self.rounds = reply, 1
        return reply

    def _row(self, mean, scale):
        """Its row of a release of all K passive parties at once (``mean``: its row): the
        run's replayable draw for all K, its row kept, or its exact sampler's draw for it
        alone (None: the exact value, unperturbed)."""
        if scale is None:
            return mean[0]
        return add_noise_to_rows("gaussian", mean, np.array([scale]), self.shared,
                                 slice(self.j, self.j + 1), self.K)[0]

    def restore(self, x) -> None:
        """Take back the released model from the checkpoint (a party rebuilt after the round)."""
        self.passive.keep(x)
        self.rounds = 1

    def share(self):
        return self.passive.share()

    def test_share(self):
        return self.passive.share(self.test)


# ------------------------------------------------------------------ client side --
class DaskPassives(DaskPartyUnits, Passives):
    """The :class:`~vfl.stacking.party.Passives` seam over one actor per passive party.

    ``record(units=, scale=, sensitivity=, rng=, size=)`` records a release event in the
    solver (:meth:`~vfl.core.solver.Solver.record_release`) and returns it; ``rngs[j]`` and
    ``shared`` are the solver's streams of the releases (exact samplers in deployment:
    their events' scales are grown for the grid).
    """

    side = PassiveSide
    iteration_word = "round"

    def __init__(self, backend: DaskBackend, spec: PassiveSpec, repeat: int, record, rngs,
                 shared):
        DaskPartyUnits.__init__(self, backend, spec, repeat)
        self.n_passive = len(self.slots)
        read = self._ask("describe")  # each actor's block: its width and largest row norm
        self.widths = [f["columns"] for f in read]
        self.max_row_norms = [f["max_row_norm"] for f in read]
        self.units = np.asarray(self.party_index)
        self.record, self.rngs, self.shared = record, rngs, shared

    def _reset(self):
        self.models = None  # the checkpoint: the released models, once received

    def round(self, labels, lam, sent):
        scales = self._record(sent, len(labels))
        replies = self._each("release", {j: (labels, float(lam[j]), {
            kind: None if s is None else float(s[j]) for kind, s in scales.items()})
            for j in range(self.n_passive)}, final=True)
        got = [replies[j] for j in range(self.n_passive)]
        self.models = [r["model"] for r in got]
        rows = {kind: np.vstack([r[kind] for r in got]) if kind in sent else None
                for kind in ("shares", "moments")}
        return Round(self.models, rows["shares"], rows["moments"])

    def _record(self, sent: dict, n: int) -> dict:
        """Record the round's release events in the order the in-process round makes them
        (each party's model, then the shares of all, then their moments); returns each
        kind's scales to draw with (None: the exact value)."""
        if sent["model"] is None:  # a non-private round: exact values, nothing recorded
            return dict.fromkeys(sent)
        scales, model = {}, sent["model"]
        scales["model"] = np.concatenate([self.record(
            units=int(m), scale=model.scale[j], sensitivity=model.sensitivity[j],
            rng=self.rngs[j], size=self.widths[j]).scale for j, m in enumerate(self.units)])
        for kind, size in (("shares", n), ("moments", 2)):
            if kind in sent:
                scales[kind] = self.record(units=self.units, scale=sent[kind].scale,
                                           sensitivity=sent[kind].sensitivity, rng=self.shared,
                                           size=size).scale
        return scales

    # -- diagnostics and scoring --------------------------------------------------------
    def shares(self):
        return self._all("share")

    def test_shares(self, test):
        return self._scored("test_share")

    # -- faults ---------------------------------------------------------------------------
    def _done(self, k):
        return int(self.models is not None)

    def _rebuild(self, k: int, worker: str) -> None:
        slot = self.slots[k]
        self._open(slot).result()
        # its release, if it reached the coordinator (in the round or after it), stands
        released = self.models[k] if self.models is not None else \
            self.received.get(k, {}).get("model")
        if released is not None:
            slot.actor.call("restore", released).result()
