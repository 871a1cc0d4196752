"""The unit transport: one interface every solver family's seam uses, whatever runs the units.

A family's client code opens a :class:`Session` of its protocol
(:mod:`.protocol`) on the run's :class:`Units` and exchanges typed messages:

- :meth:`Session.round`: one round of the protocol (PROTOCOL calls): a request
  to some of the units, their replies;
- :meth:`Session.ask`: a diagnostic (exact values for research, simulation
  only) to every unit;
- :meth:`Session.score`: the scoring of test rows (INFERENCE).

Each phase's payload (:func:`~.protocol.nbytes` of every request and reply) is
counted per unit (``Session.payload``). Every message is validated where it
is received: requests by the unit's :class:`Host`, replies by the session.

Faults, generically (the backends that can lose a unit keep the journals): a
session keeps, per unit, a **journal** of the completed rounds (the requests,
and a ``releases`` call's reply). A round in flight is a transaction: its
replies stand once received (a unit that answered is never asked again) and
are forgotten when the round completes. A lost unit is re-opened where its
data is and brought back by replaying its journal (each request handled
again, a release's recorded reply adopted, :meth:`~.protocol.Side.adopt`) and
then, if its reply of the round in flight had arrived, by adopting that one
too; a diagnostic or a scoring that meets a lost unit recovers it the same way
and asks again. The protocol may compact the journal
(:class:`~.protocol.Recovery`) or say why its units cannot be rebuilt: the run
then stops with one line naming the unit.

:class:`~.inprocess.InProcessUnits` keeps the sides in this process (the default and the
fast path: no copies, no encoding; their releases through the solver's, a
:class:`~.host.LocalEnv`); the experiments layer's Dask backend runs each on
a worker behind a :class:`~.host.Host`, and a party's own service is the
same interface.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

import numpy as np

from .errors import PartyLostError
from .host import Host
from .messages import declared
from .protocol import (
    CONTROL,
    DIAGNOSTIC,
    INFERENCE,
    PROTOCOL,
    RUNS,
    Call,
    Empty,
    Kind,
    Protocol,
    ProtocolError,
    ReplayMismatch,
    Side,
    nbytes,
    validate,
)

__all__ = ["Entry", "Listener", "Messages", "Session", "Units", "tapped"]

#: one message per host k of a session (requests sent or replies received)
Messages = dict[int, object]
#: :func:`tapped`'s listener: ``listener(session, call, requests, replies)``
Listener = Callable[["Session", Call, Messages, Messages], object]

#: who listens to every exchange of every session (:func:`tapped`), or None
_TAP: ContextVar[Listener | None] = ContextVar("vfl_units_tap", default=None)


@contextmanager
def tapped(listener: Listener) -> Iterator[Listener]:
    """Within the block, every completed exchange of every session is reported as
    ``listener(session, call, requests, replies)`` (``{host k: message}``): what a party
    receives, for the label attacks and the label-dependence test (simulation only)."""
    token = _TAP.set(listener)
    try:
        yield listener
    finally:
        _TAP.reset(token)


class Entry(NamedTuple):
    """One completed round in a unit's journal (``reply`` kept for a ``releases`` call)."""

    call: Call
    request: object
    reply: object | None


# ---------------------------------------------------------------- client side --
class Units:
    """Where a run's units are: a session's transport (see the module docstring).

    A backend implements the primitives below; :class:`Session` does the rest.
    """

    #: the units' releases go through the solver here (the ledger records them as drawn);
    #: False where the units draw their own noise: the client records each event first
    records = False
    #: whether a unit can be lost (then sessions keep journals)
    journals = False
    #: what a host is called in a lost unit's line (``its worker 10.0.0.2:40123``)
    host_word = "worker"
    #: whether the run's noise is seeded (a lost unit's releases can be drawn again)
    replayable = True

    #: the audit's runs every message may carry ahead of its declared shape
    #: (:data:`~.messages.RUNS`): only units in the solver's process, where the audit drives
    #: the mechanism, ever have them; a deployment's backend keeps None
    runs: int | None = None

    def open(self, protocol: Protocol, spec: object, repeat: int = 0) -> Session:
        """Open ``protocol`` with the public options ``spec`` on every unit, for one repeat."""
        return Session(self, protocol, spec, repeat)

    def at(self, repeat: int) -> _AtRepeat:
        """These units, their sessions opened for ``repeat`` (what a solver of that repeat is
        given: it opens its protocol without knowing the repeat)."""
        return _AtRepeat(self, repeat)

    # -- primitives ------------------------------------------------------------------
    def hosts(self, protocol: Protocol) -> list[tuple[int, int]]:
        """The units ``[first, stop)`` each host of ``protocol`` holds."""
        raise NotImplementedError

    def sides(self, session: Session) -> list[Side]:
        """The sides of ``session``, where they are in this process."""
        raise AttributeError(f"{type(self).__name__} holds no side in this process")

    def _open(self, session: Session, k: int) -> object:
        """Open host k's side; what it reports (the protocol's ``opened`` message)."""
        raise NotImplementedError

    def _send(
        self, session: Session, call: Call, requests: Messages, seqs: dict[int, int] | None
    ) -> tuple[Messages, Exception | None]:
        """Send ``requests[k]`` to every host k at once; returns ``(replies, failure)``: the
        replies that arrived and the first exception, if any."""
        raise NotImplementedError

    def _adopt(self, session: Session, k: int, call: Call, request: object, reply: object) -> None:
        raise NotImplementedError

    def _lost(self, session: Session, failure: Exception) -> list[int]:
        """The hosts lost (``failure`` re-raised when none is: the unit's own error)."""
        raise failure

    def _replace(self, session: Session, k: int, lost_at: str) -> str:
        """A new host for k where its data can be read (or PartyLostError); its place."""
        raise NotImplementedError

    def where(self, session: Session, k: int) -> str:
        """Where host k runs (its worker), for errors."""
        return "this process"

    def first_seq(self, session: Session, k: int) -> int:
        """Where host k's sequence numbers start (after those its record holds already: a
        resumed run's requests are new messages, whatever the killed run sent)."""
        return 0

    def _provide_test(self, session: Session, test: Any) -> None:  # (the setting's held-out layout)
        """Give the hosts their held-out blocks, where this process holds them."""

    def _recovered(self, session: Session, record: dict[str, object]) -> None:
        """Note a host rebuilt (the backend's record of faults)."""


class _AtRepeat:
    """:meth:`Units.at`: every attribute the units', ``open`` for the repeat."""

    def __init__(self, units: Units, repeat: int):
        self._units, self._repeat = units, int(repeat)

    def open(self, protocol: Protocol, spec: object, repeat: int | None = None) -> Session:
        return self._units.open(protocol, spec, self._repeat if repeat is None else repeat)

    def __getattr__(self, name: str) -> Any:  # (every other attribute is the units')
        return getattr(self._units, name)


class Session:
    """One protocol open on the run's units for one repeat (see the module docstring)."""

    def __init__(self, units: Units, protocol: Protocol, spec: object, repeat: int):
        self.units, self.protocol, self.spec, self.repeat = units, protocol, spec, int(repeat)
        self.hosts = list(units.hosts(protocol))
        n = self.n = len(self.hosts)
        self.labels = [protocol.placement.label(a, b) for a, b in self.hosts]
        #: per host, the sizes its replies are checked against (the seam binds them)
        self.dims: list[dict[str, int]] = [{} for _ in range(n)]
        #: payload bytes per phase and host (requests and replies)
        self.payload = {kind: [0] * n for kind in Kind}
        #: per host: requests, their bytes, replies, their bytes of the diagnostics and of
        #: every scoring of the test rows but the last (metrics.csv's test columns; the last
        #: is the run's inference): communication.csv's "diagnostics" rows
        self.diagnostics = np.zeros((n, 4), dtype=np.int64)
        self._last_scoring = np.zeros((n, 4), dtype=np.int64)
        #: per host: completed rounds of the protocol's iteration call (or the client's own
        #: count, :meth:`tick`)
        self.done = [0] * n
        self.journal: list[list[Entry]] | None = [[] for _ in range(n)] if units.journals else None
        self._seq = [units.first_seq(self, k) for k in range(n)]
        self._calls: dict[tuple[str | Call, tuple[Kind, ...]], Call] = {}  # its declared Call, once checked
        #: each declared call's number in the protocol's table
        self.numbers = {c: i for i, c in enumerate(protocol.calls)}
        #: the in-process backend's hosts of this session (None until opened, and elsewhere)
        self.transport: list[Host] | None = None
        self._flight: tuple[Call, Messages, Messages] | None = None  # the round in flight
        #: what each host reported when it opened (None while it is being opened)
        self.opened: list[object] = [None] * n
        for k in range(n):
            self._open(k)

    @property
    def records(self) -> bool:
        return self.units.records

    @property
    def sides(self) -> list[Side]:
        """The sides, where they are in this process (AttributeError elsewhere)."""
        return self.units.sides(self)

    def bind(self, k: int, **dims: int) -> None:
        """Sizes host k's replies must have (e.g. ``N=rows, d=width``)."""
        self.dims[k].update(dims)

    def tick(self) -> None:
        """One more iteration completed, by the client's own count (a protocol without an
        iteration call)."""
        self.done = [d + 1 for d in self.done]

    # -- the exchanges -------------------------------------------------------------------
    def round(self, call: str | Call, requests: Messages) -> Messages:
        """One round of the protocol: ``requests[k]`` to host k; returns ``{k: reply}``."""
        call = self._declared(call, (PROTOCOL,))
        replies = self._exchange(call, requests)
        payload, done = self.payload[PROTOCOL], self.done
        counts = call.name == self.protocol.iteration
        sizes: dict[int, int] = {}  # a request sent to several units is measured once
        for k, request in requests.items():
            size = sizes.get(id(request))
            if size is None:
                size = sizes[id(request)] = nbytes(request)
            payload[k] += size + nbytes(replies[k])
            if counts:
                done[k] += 1
            if self.journal is not None:
                self._keep(self.journal, k, Entry(call, _frozen(request), replies[k] if call.releases else None))
        return replies

    def ask(
        self, call: str | Call, request: object = None, *, each: Callable[[int], object] | None = None
    ) -> list[object]:
        """A diagnostic to every host (``request``, or ``each(k)``); their replies in order."""
        return self._everyone(self._declared(call, (DIAGNOSTIC,)), request, each)

    def score(
        self,
        call: str | Call,
        request: object = None,
        *,
        each: Callable[[int], object] | None = None,
        test: Any = None,
    ) -> list[object]:
        """Scoring the test rows on every host (``test``: the held-out blocks, where this
        process holds them; units elsewhere hold their own)."""
        self.units._provide_test(self, test)
        return self._everyone(self._declared(call, (INFERENCE,)), request, each)

    def _everyone(self, call: Call, request: object, each: Callable[[int], object] | None) -> list[object]:
        requests = {
            k: (each(k) if each is not None else request if request is not None else Empty()) for k in range(self.n)
        }
        replies = self._exchange(call, requests)
        for k in range(self.n):
            up, down = nbytes(requests[k]), nbytes(replies[k])
            self.payload[call.kind][k] += up + down
            if call.kind is DIAGNOSTIC:
                self.diagnostics[k] += (1, up, 1, down)
        if call.kind is INFERENCE:  # the scoring before this one was a diagnostic
            self.diagnostics += self._last_scoring
            self._last_scoring = np.array(
                [(1, nbytes(requests[k]), 1, nbytes(replies[k])) for k in range(self.n)], dtype=np.int64
            )
        return [replies[k] for k in range(self.n)]

    def _declared(self, call: str | Call, kinds: tuple[Kind, ...]) -> Call:
        declared = self._calls.get((call, kinds))
        if declared is None:
            declared = self.protocol.call(call)
            if declared.kind not in kinds:
                raise ProtocolError(f"protocol {self.protocol.name}: {declared.name} is a {declared.kind.name} call")
            self._calls[call, kinds] = declared
        return declared

    def _exchange(self, call: Call, requests: Messages) -> Messages:
        seqs: dict[int, int] | None = None
        if self.units.journals:  # numbered, so that a unit handles a message sent again once
            seqs = {}
            for k in requests:
                self._seq[k] += 1
                seqs[k] = self._seq[k]
        replies: Messages = {}
        pending = dict(requests)
        outer, self._flight = self._flight, (call, requests, replies)
        try:
            while pending:
                got, failure = self.units._send(self, call, pending, seqs)
                for k, reply in got.items():
                    self._check(k, call, reply)
                    replies[k] = reply
                    del pending[k]
                if failure is not None:
                    self._recover(failure)
        finally:  # a round's replies stand for that round only (a diagnostic asked within
            self._flight = outer  # a round in this process is a round of its own)
        tap = _TAP.get()
        if tap is not None:
            tap(self, call, requests, replies)
        return replies

    def _check(self, k: int, call: Call, reply: object) -> None:
        runs = self.units.runs
        validate(
            reply,
            call.reply,
            self.dims[k] if runs is None else {**self.dims[k], RUNS: runs},
            finite=call.kind is PROTOCOL,
            where=(self.labels[k], ": ", call.name, " reply: "),
        )

    def _keep(self, journals: list[list[Entry]], k: int, entry: Entry) -> None:
        journal = journals[k]
        journal.append(entry)
        compact = self.protocol.recovery.compact
        if compact is not None:
            journals[k] = compact(journal)

    # -- faults ---------------------------------------------------------------------------
    def _open(self, k: int) -> None:
        while True:
            try:
                self.opened[k] = self.units._open(self, k)
                return
            except (ProtocolError, PartyLostError):
                raise
            except Exception as exc:  # noqa: BLE001 (a lost worker shows as many types)
                self._recover(exc, opening=k)
                if self.opened[k] is not None:
                    return

    def _its(self, k: int) -> str:
        a, b = self.hosts[k]
        return "their" if b - a > 1 else "its"

    def _recover(self, failure: Exception, opening: int | None = None) -> None:
        """Rebuild the lost hosts (see the module docstring), or stop naming one."""
        lost = self.units._lost(self, failure)
        word = self.protocol.placement.iteration
        for k in lost:
            its, at = self._its(k), f"{word} {self.done[k] + 1}"
            why = self.protocol.recovery.reason(self.units.replayable, self._entries(k))
            if why is not None:
                raise PartyLostError(
                    f"{self.labels[k]}: {its} {self.units.host_word} "
                    f"{self.units.where(self, k)} was lost at {at}; "
                    f"{why.format(its=its)}"
                ) from None
            old = self.units.where(self, k)
            new = self.units._replace(self, k, at)
            self.opened[k] = None
            self.opened[k] = self.units._open(self, k)
            self._replay(k, new)
            self.units._recovered(
                self,
                {
                    "unit": self.labels[k],
                    "repeat": self.repeat,
                    word: self.done[k] + 1,
                    "lost": old,
                    "resumed_on": new,
                    "first": self.hosts[k][0],
                },
            )

    def _entries(self, k: int) -> list[Entry]:
        """Host k's journal, and its round in flight if its reply arrived."""
        entries = list(self.journal[k]) if self.journal is not None else []
        if self._flight is not None and k in self._flight[2]:
            call, requests, replies = self._flight
            entries.append(Entry(call, requests[k], replies[k] if call.releases else None))
        return entries

    def _replay(self, k: int, worker: str) -> None:
        """Bring a re-opened host k back: its journal, then its reply of the round in flight."""
        entries = self._entries(k)
        count = 0
        for entry in entries:
            count += entry.call.name == self.protocol.iteration
            try:
                if entry.reply is not None:
                    self.units._adopt(self, k, entry.call, entry.request, entry.reply)
                    continue
                self._seq[k] += 1
                _, failure = self.units._send(self, entry.call, {k: entry.request}, {k: self._seq[k]})
                if failure is not None:
                    raise failure
            except ReplayMismatch:
                word = self.protocol.placement.iteration
                raise PartyLostError(
                    f"{self.labels[k]}: rebuilt on worker {worker}, "
                    f"{self._its(k)} release of {word} {max(count, 1)} differs "
                    "from the one received, so the run stops"
                ) from None
            self.payload[CONTROL][k] += nbytes(entry.request) + (0 if entry.reply is None else nbytes(entry.reply))


def _frozen(request: object) -> object:
    """A copy of a request whose arrays the client may reuse (the journal keeps it)."""
    fields = {name: getattr(request, name) for name, _ in declared(type(request)).FIELDS}
    if not any(isinstance(v, (np.ndarray, dict)) for v in fields.values()):
        return request
    return type(request)(
        **{
            name: np.array(v, copy=True)
            if isinstance(v, np.ndarray)
            else {key: np.array(x, copy=True) if isinstance(x, np.ndarray) else x for key, x in v.items()}
            if isinstance(v, dict)
            else v
            for name, v in fields.items()
        }
    )
