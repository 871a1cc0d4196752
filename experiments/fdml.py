"""``run.backend = "dask"`` for FDML SGD: each party on its own Dask worker.

FDML (Hu, Niu, Yang and Zhou 2019), the SGD baseline of Hu et al. 2019,
Section 5: party m (a :class:`~.parties.PartyActor`) holds its columns and
its local model ``x_m``; the coordinator (the solver in the client process)
holds the labels. Per mini-batch each party sends its outputs ``D_m[batch]
x_m`` (plus its noise, FDML's DP variant, drawn from its own stream on its
worker) and receives the batch's loss derivatives ``l'(u_i; b_i) / B``: the
messages of the protocol, nothing else, except the diagnostics a research
run asks for (the models, the exact margins) and the scoring of the test
rows. The worker runs the in-process :class:`~vfl.baselines.sgd.SGDParty`
code on the same block, so the numbers are the in-process ones to the bit.

Public randomness needs no message: every party draws each epoch's sample
order from its own copy of the run's batch stream, as the coordinator does,
and its initial model from the run's init stream (the m-th of the parties'
draws, in party order, as in-process).

A batch's derivatives travel with the request for the next batch's outputs
(one round trip per batch; the epoch's last ones with the first diagnostic
or the next epoch's first request): that changes when a message is sent,
not what is sent, nor the protocol's count.

Faults: a party's model is the sum of every step it took, a function of all
the derivatives of the run rather than of the last message (as in ADMM
sharing, where the model is a function of the last pull); the coordinator
keeps no such history, so a lost worker stops the run with one line naming
the party, and nothing is written.
"""

from __future__ import annotations

from vfl.baselines.sgd import SGDParties, SGDParty, SGDSpec, initial_models, output_noise

from .parties import DaskBackend, DaskPartyUnits, PartyActor, Side

__all__ = ["DaskSGDParties", "SGDSide"]


# ------------------------------------------------------------------ worker side --
class SGDSide(Side):
    """Party m of FDML on its worker: its model, its noise and its copy of the sample order.

    :attr:`rounds` counts the epochs begun.
    """

    def __init__(self, actor: PartyActor, spec: SGDSpec, repeat: int):
        from .runner import _streams

        streams = _streams(actor.config, repeat)
        m = actor.m
        x0 = initial_models(streams.get("init"), spec.widths[:m + 1], spec.init_scale)[m]
        self.sigma, self.rng = spec.output_sigma, streams.noise(m)
        self.party = SGDParty(actor.D, x0, spec, self._publish)
        self.batch_rng = streams.get("batch")
        self.test = actor.test

    def _publish(self, rows, outputs):
        return output_noise(outputs, self.sigma, self.rng)

    def opened(self) -> int:
        return self.party.n_features

    def exchange(self, step, batch):
        """One round trip: the last batch's derivatives ``step = (g, eta)`` (or None), then the
        outputs for ``batch = (start, stop)`` (None: no further batch yet)."""
        if step is not None:
            self.party.step(*step)
        if batch is None:
            return None
        start, stop = batch
        if start == 0:  # a new epoch: its order, drawn as the coordinator draws it
            self.party.begin_epoch(self.batch_rng.permutation(self.party.block.D.shape[0]))
            self.rounds += 1
        return self.party.outputs(start, stop)

    def model(self):
        return self.party.x

    def margins(self):
        return self.party.margins()

    def test_product(self):
        return self.test @ self.party.x


# ------------------------------------------------------------------ client side --
class DaskSGDParties(DaskPartyUnits, SGDParties):
    """The :class:`~vfl.baselines.sgd.SGDParties` seam over one actor per party."""

    side = SGDSide
    not_rebuilt = "a party's model (the sum of every step it took) is not rebuilt elsewhere"

    def __init__(self, backend: DaskBackend, spec: SGDSpec, repeat: int):
        DaskPartyUnits.__init__(self, backend, spec, repeat)
        self.n_parties = len(self.slots)
        self.n_features = self.opened

    def _reset(self):
        self.epochs = 0  # epochs begun
        self._step = None  # the last batch's (g, eta), sent with the next request

    # -- the protocol: per batch, outputs up and derivatives down ---------------------
    def begin_epoch(self, perm):
        # each party draws the same order from its copy of the batch stream: no message
        self.epochs += 1

    def outputs(self, start, stop):
        replies = self._each("exchange", {k: (self._step, (start, stop))
                                          for k in range(self.n_parties)})
        self._step = None
        return [replies[k] for k in range(self.n_parties)]

    def step(self, g, eta):
        self._step = (g, eta)

    def _deliver(self) -> None:
        """Send the last batch's derivatives now (before a diagnostic reads the models)."""
        if self._step is not None:
            self._each("exchange", {k: (self._step, None) for k in range(self.n_parties)})
            self._step = None

    # -- diagnostics and scoring --------------------------------------------------------
    def models(self):
        self._deliver()
        return self._all("model")

    def margins(self):
        self._deliver()
        return self._all("margins")

    def test_products(self, test):
        self._deliver()
        return self._scored("test_product")

    # -- faults ---------------------------------------------------------------------------
    def _done(self, k):
        return max(self.epochs - 1, 0)
