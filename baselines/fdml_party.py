"""Party m's side of FDML SGD, its protocol, and the seam the iteration talks to.

For every mini-batch each party m sends its local outputs ``D_m[batch] x_m``
(one value per sample, plus its output noise in FDML's DP variant, drawn from
its own stream) and receives the batch's loss derivatives ``l'(u_i; b_i) /
B``; it steps on its own weights. :class:`SGDParty` is that side: its block,
its model and its noise. :data:`FDML_PROTOCOL` declares the exchange once
(:mod:`vfl.core.protocol`); :class:`SGDParties` is what the iteration
(:class:`~.sgd.FDMLSGD`) talks to, over a :class:`~vfl.core.units.Session`
wherever the parties run.

Public randomness needs no message: every party draws each epoch's sample
order from its own copy of the run's batch stream, as the coordinator does,
and its initial model from the run's init stream (the m-th of the parties'
draws, in party order). A batch's derivatives travel with the request for the
next batch's outputs (one round trip per batch; the epoch's last ones with the
first diagnostic or the next epoch's first request): that changes when a
message is sent, not what is sent, nor the protocol's count.

Faults: a party's model is the sum of every step it took, a function of all
the derivatives of the run rather than of the last message, and the
coordinator keeps no such history: a lost party stops the run with one line
naming it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from vfl.core.protocol import (
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

__all__ = ["FDML_PROTOCOL", "SGDParties", "SGDParty", "SGDSide", "SGDSpec", "initial_models", "output_noise"]


class _SparseBlock:
    """One party's CSR block, row-permuted once per epoch for contiguous batches.

    Batch products run on the raw CSR arrays with ``np.bincount``: a batch of
    ~100 rows of a9a is a few hundred non-zeros, where the fixed cost of
    building a scipy matrix per batch would dominate the epoch.
    """

    def __init__(self, D):
        self.D = D.tocsr().astype(float, copy=False)
        self.n_features = self.D.shape[1]

    def begin_epoch(self, perm: np.ndarray) -> None:
        P = self.D[perm]  # scipy's C row gather, once per epoch
        self._indptr, self._indices, self._data = P.indptr, P.indices, P.data
        self._rowid = np.repeat(np.arange(len(perm)), np.diff(P.indptr))

    def batch(self, start: int, stop: int):
        lo, hi = self._indptr[start], self._indptr[stop]
        return (self._rowid[lo:hi] - start, self._indices[lo:hi], self._data[lo:hi], stop - start)

    def matvec(self, batch, x: np.ndarray) -> np.ndarray:
        rows, cols, vals, k = batch
        return np.bincount(rows, weights=vals * x[cols], minlength=k)

    def rmatvec(self, batch, g: np.ndarray) -> np.ndarray:
        rows, cols, vals, _ = batch
        return np.bincount(cols, weights=vals * g[rows], minlength=self.n_features)

    def full_matvec(self, x: np.ndarray) -> np.ndarray:
        return self.D @ x


class _DenseBlock:
    """One party's dense block; each batch's rows are gathered into a reused buffer.

    Gathering per batch (rather than permuting the whole block each epoch)
    keeps the copy small enough to stay in cache for the two products that
    follow, and allocates nothing per epoch.
    """

    def __init__(self, D, batch_size: int):
        self.D = np.ascontiguousarray(D, dtype=float)
        self.n_features = self.D.shape[1]
        self._buf = np.empty((min(batch_size, self.D.shape[0]), self.n_features))

    def begin_epoch(self, perm: np.ndarray) -> None:
        self._perm = perm

    def batch(self, start: int, stop: int):
        out = self._buf[: stop - start]
        # (a permutation's indices are in range: mode "clip" gathers straight into the
        # buffer, where "raise" gathers into a temporary and copies it over)
        np.take(self.D, self._perm[start:stop], axis=0, out=out, mode="clip")
        return out

    def matvec(self, batch, x: np.ndarray) -> np.ndarray:
        return batch @ x

    def rmatvec(self, batch, g: np.ndarray) -> np.ndarray:
        return g @ batch

    def full_matvec(self, x: np.ndarray) -> np.ndarray:
        return self.D @ x


# ----------------------------------------------------------------------- messages --
@message
class SGDSpec:
    """What every party needs besides its block: public options of the run.

    ``reg`` is the coefficient ``2 lam / (w N)`` of the l2 term of ``g_m``
    (see :class:`~.sgd.FDMLSGD`); ``widths`` every party's ``d_m``, because party
    m's initial model is the m-th draw of the run's init stream.
    """

    batch_size = scalar(int)
    reg = scalar(float)
    init_scale = scalar(float)
    output_sigma = scalar(float)
    widths = array("i8", "M")


@message
class Exchange:
    """One round trip: the last batch's derivatives ``g`` (already divided by B) and step
    size, if not yet delivered, then the batch ``perm[start:stop]`` whose outputs are asked
    (none: no further batch yet)."""

    g = array("f8", "B", optional=True)
    eta = scalar(float, optional=True)
    start = scalar(int, optional=True)
    stop = scalar(int, optional=True)


@message
class Outputs:
    u = array("f8", "B", optional=True)


@message
class Model:
    x = array("f8", "d")


@message
class Margins:
    u = array("f8", "N")


@message
class Scores:
    u = array("f8", "T")


@message
class Width:
    d = scalar(int)


def initial_models(rng: np.random.Generator, widths, scale: float) -> list[np.ndarray]:
    """The parties' initial models, in party order: ``N(0, scale^2)`` draws from ``rng`` (the
    run's init stream), or zeros without drawing when ``scale = 0``."""
    if scale > 0:
        return [rng.normal(0.0, scale, size=int(d)) for d in widths]
    return [np.zeros(int(d)) for d in widths]


def output_noise(outputs: np.ndarray, sigma: float, rng) -> np.ndarray:
    """FDML's DP variant: ``N(0, sigma^2)`` on every output a party sends, from its own
    Generator (``sigma = 0``: the outputs, and no draw)."""
    if sigma > 0:
        return outputs + rng.normal(0.0, sigma, size=outputs.shape)
    return outputs


class SGDParty:
    """Party m: its block ``D_m``, its local model ``x_m`` and its side of every mini-batch.

    ``publish(rows, outputs)`` returns what party m sends for the samples
    ``rows`` given its exact outputs (its output noise; in the iteration's
    process, :meth:`~.sgd.FDMLSGD.publish`).
    """

    def __init__(self, D, x0: np.ndarray, spec: SGDSpec, publish):
        self.block = _SparseBlock(D) if sp.issparse(D) else _DenseBlock(D, spec.batch_size)
        self.x = x0
        self.reg = spec.reg
        self.publish = publish
        self._batch = None

    @property
    def n_features(self) -> int:
        return self.block.n_features

    def begin_epoch(self, perm: np.ndarray) -> None:
        """The epoch's sample order (public: every party draws the same one)."""
        self.perm = perm
        self.block.begin_epoch(perm)

    def outputs(self, start: int, stop: int) -> np.ndarray:
        """What party m sends for the batch ``perm[start:stop]``: ``D_m[batch] x_m`` (+ noise)."""
        self._batch = self.block.batch(start, stop)
        return self.publish(self.perm[start:stop], self.block.matvec(self._batch, self.x))

    def step(self, g: np.ndarray, eta: float) -> None:
        """``x_m <- x_m - eta g_m`` for the batch's derivatives ``g`` (already divided by B)
        that the active party returned; a new array, so no model a caller kept is changed."""
        self.x = self.x - eta * (self.block.rmatvec(self._batch, g) + self.reg * self.x)

    def margins(self) -> np.ndarray:
        """``D_m x_m`` on every training row (a diagnostic: no party sends it)."""
        return self.block.full_matvec(self.x)


class SGDSide(Side):
    """Party m of FDML wherever it runs: its model, its noise and its copy of the order."""

    def __init__(self, data, spec: SGDSpec, env):
        super().__init__(data, spec, env)
        (D,) = data.blocks
        self.m = m = data.first
        x0 = initial_models(env.stream("init"), spec.widths[: m + 1], spec.init_scale)[m]
        self.rng = env.noise(m)
        self.party = SGDParty(D, x0, spec, self._publish)
        self.batch_rng = env.stream("batch")
        self.dims = {"N": D.shape[0]}

    def _publish(self, rows, outputs):
        return self.env.release(
            outputs, units=self.m, scale=self.spec.output_sigma, sensitivity=float("nan"), rng=self.rng, batch=rows
        )

    def opened(self) -> Width:
        return Width(d=self.party.n_features)

    @handles("exchange")
    def exchange(self, req: Exchange) -> Outputs:
        if req.g is not None:
            self.party.step(req.g, req.eta)
        if req.start is None:
            return Outputs()
        if req.start == 0:  # a new epoch: its order, drawn as the coordinator draws it
            self.party.begin_epoch(self.batch_rng.permutation(self.dims["N"]))
        return Outputs(u=self.party.outputs(req.start, req.stop))

    @handles("model")
    def model(self, _: Empty) -> Model:
        return Model(x=self.party.x)

    @handles("margins")
    def margins(self, _: Empty) -> Margins:
        return Margins(u=np.asarray(self.party.margins(), dtype=float))

    @handles("test_product")
    def test_product(self, _: Empty) -> Scores:
        return Scores(u=np.asarray(self.data.test[0] @ self.party.x, dtype=float).ravel())


FDML_PROTOCOL = Protocol(
    "fdml_sgd",
    1,
    spec=SGDSpec,
    side=SGDSide,
    opened=Width,
    calls=(
        Call("exchange", Exchange, Outputs, releases=True, labels=("request", "reply")),
        Call("model", Empty, Model, DIAGNOSTIC, labels=("reply",)),
        Call("margins", Empty, Margins, DIAGNOSTIC, labels=("reply",)),
        Call("test_product", Empty, Scores, INFERENCE, labels=("reply",)),
    ),
    placement=Placement("party", "parties", iteration="epoch"),
    recovery=Recovery(
        not_rebuilt="a party's model (the sum of every step it took) is not rebuilt elsewhere, so the run stops"
    ),
)


class SGDParties:
    """The M parties as the iteration sees them, one mini-batch at a time, over a session of
    :data:`FDML_PROTOCOL`.

    Per batch every party sends its outputs (:meth:`outputs`, one message
    each) and receives the derivatives (:meth:`step`, one message each);
    the rest is diagnostics and scoring, which no party does in training.
    """

    def __init__(self, session, n: int):
        self.session = session
        self.n_parties = session.n
        #: each party's number of columns d_m
        self.n_features = [o.d for o in session.opened]
        for k, d in enumerate(self.n_features):
            session.bind(k, N=n, d=d)
        self.epochs = 0  # epochs begun
        self._step = None  # the last batch's (g, eta), sent with the next request

    @property
    def parties(self) -> list[SGDParty]:
        """The :class:`SGDParty` objects, where they are in this process."""
        return [side.party for side in self.session.sides]

    def begin_epoch(self, perm: np.ndarray) -> None:
        """Start an epoch with the sample order ``perm`` (public randomness: each party draws
        the same order from its copy of the batch stream, so no message)."""
        if self.epochs:
            self.session.tick()  # the epochs completed, as a fault names them
        self.epochs += 1

    def outputs(self, start: int, stop: int) -> list[np.ndarray]:
        """Every party's message for the batch ``perm[start:stop]``, in party order."""
        return [r.u for r in self._exchange(start, stop)]

    def step(self, g: np.ndarray, eta: float) -> None:
        """Every party steps on the derivatives ``g`` of the last batch (sent with the next
        request)."""
        self._step = (g, eta)

    def _exchange(self, start=None, stop=None) -> list:
        (g, eta), self._step = self._step or (None, None), None
        request = Exchange(g=g, eta=None if eta is None else float(eta), start=start, stop=stop)
        replies = self.session.round("exchange", {k: request for k in range(self.n_parties)})
        return [replies[k] for k in range(self.n_parties)]

    def _deliver(self) -> None:
        """Send the last batch's derivatives now (before a diagnostic reads the models)."""
        if self._step is not None:
            self._exchange()

    def models(self) -> list[np.ndarray]:
        """The local models ``x_m`` (diagnostics: no party sends its model)."""
        self._deliver()
        return [r.x for r in self.session.ask("model")]

    def margins(self) -> list[np.ndarray]:
        """``D_m x_m`` on every training row, per party (diagnostics)."""
        self._deliver()
        return [r.u for r in self.session.ask("margins")]

    def test_products(self, test) -> list[np.ndarray]:
        """``B_m x_m`` on each party's held-out columns (``test``, where held here)."""
        self._deliver()
        return [r.u for r in self.session.score("test_product", test=test)]


# -------------------------------------------------------------- what a party saw --
def _per_batch(exchanges, party: int, n: int, streams, field: str) -> np.ndarray | None:
    """Each epoch's values per sample, ``(N, epochs)``: the derivatives ``g`` party ``party``
    received (``field = "g"``) or the outputs it sent (``"u"``), placed by the epochs'
    sample orders (public: each party draws them from the batch stream)."""
    batch, perm, epoch, last, cols = streams.get("batch"), None, -1, None, []
    for e in exchanges:
        if e.call != "exchange" or not e.first <= party < e.stop:
            continue
        req = e.request
        if field == "g" and req.g is not None and last is not None:
            cols[last[1]][last[0]] = req.g
        if req.start is None:
            continue
        if req.start == 0:
            perm, epoch = batch.permutation(n), epoch + 1
            cols.append(np.full(n, np.nan))
        rows = perm[req.start : req.stop]
        if field == "u":
            cols[epoch][rows] = e.reply.u
        last = (rows, epoch)
    full = [c for c in cols if np.all(np.isfinite(c))]
    return np.column_stack(full) if full else None


def derivatives(exchanges, party: int, n: int, streams) -> np.ndarray | None:
    """The loss derivatives party ``party`` received per sample and epoch (they carry the
    labels); the attacks' view (simulation)."""
    return _per_batch(exchanges, party, n, streams, "g")


def outputs(exchanges, party: int, n: int, streams) -> np.ndarray | None:
    """The outputs party 1 received from party ``party`` per sample and epoch."""
    return _per_batch(exchanges, party, n, streams, "u")
