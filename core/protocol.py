"""A unit protocol, declared once: the calls that carry typed messages, the unit's side.

Every solver family talks to its units (the parties of a vertical run, groups
of providers or agents) through one transport (:mod:`.units`), whatever runs
them: this process, Dask workers, or a party's own service. What crosses is
declared once per family, as data:

- its **messages** (:mod:`.messages`: frozen dataclasses of typed fields,
  validated on receipt in every transport);
- a :class:`Call` is one declared exchange: its name, request and reply types,
  its :class:`Kind` (the protocol's rounds, diagnostics for research, scoring
  test rows, bookkeeping) and whether its reply carries released noisy values
  (``releases``: once received, such a reply stands and is never drawn again)
  and which of its payloads depend on the labels (``labels``: who receives them);
- a :class:`Protocol` binds a name and version, the spec (public options
  sent when a unit opens), the unit's :class:`Side`, its calls, where its units
  may run (:class:`Placement`) and how a lost unit is brought back
  (:class:`Recovery`).

A :class:`Side` is the unit's code for one protocol. Its handlers are bound
to calls by :func:`handles`; dispatch goes through the protocol's closed table
by the call's index, never by a name looked up on the side. A Side gets from
its host its data (:class:`UnitData`), the spec and an :class:`Env`: its
noise streams and its ``release``, where the host decides how noise is drawn
(the solver's :meth:`~vfl.core.solver.Solver.release` with the audit's
observer in this process, the unit's own replayable stream or exact sampler
elsewhere).

Pure declarations: no transport, no files.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

from .messages import (
    RUNS,
    Empty,
    NonFiniteError,
    ProtocolError,
    ReplayMismatch,
    array,
    message,
    nbytes,
    same,
    scalar,
    validate,
    values,
)

if TYPE_CHECKING:
    from .arrays import FloatArray
    from .sampling import ExactSampler
    from .units import Entry

#: a handler: a :class:`Side` method ``(self, request) -> reply``
_Handler = TypeVar("_Handler", bound=Callable[..., object])

__all__ = [
    "CONTROL",
    "DIAGNOSTIC",
    "Call",
    "Empty",
    "Env",
    "INFERENCE",
    "Kind",
    "NonFiniteError",
    "PROTOCOL",
    "RUNS",
    "Placement",
    "Protocol",
    "ProtocolError",
    "Recovery",
    "ReplayMismatch",
    "Side",
    "UnitData",
    "array",
    "handles",
    "message",
    "nbytes",
    "same",
    "scalar",
    "validate",
    "values",
]


class Kind(str, enum.Enum):
    """What a call is, and the phase its bytes are counted in."""

    #: the protocol's rounds: counted training traffic
    PROTOCOL = "training"
    #: exact values for research (simulation only; a deployment party refuses them)
    DIAGNOSTIC = "diagnostics"
    #: scoring test rows with the deployable model (its own phase)
    INFERENCE = "inference"
    #: open, resume and replay bookkeeping
    CONTROL = "control"


PROTOCOL, DIAGNOSTIC, INFERENCE, CONTROL = (Kind.PROTOCOL, Kind.DIAGNOSTIC, Kind.INFERENCE, Kind.CONTROL)


# ------------------------------------------------------------------ declarations --
@dataclass(frozen=True)
class Call:
    """One declared exchange between the coordinator and a unit."""

    name: str
    request: type
    reply: type
    kind: Kind = PROTOCOL
    #: the reply carries released noisy values: once received it stands (never drawn again)
    releases: bool = False
    #: which payloads depend on party 1's labels (:data:`~vfl.core.relations.LABELS`):
    #: ``"request"`` (received by the unit), ``"reply"`` (received by the coordinator, which
    #: holds the labels); checked by perturbing one label in tests/test_labels.py
    labels: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        bad = set(self.labels) - {"request", "reply"}
        if bad:
            raise TypeError(f"call {self.name}: labels names payloads 'request' or 'reply', not {sorted(bad)}")

    @property
    def labels_to_unit(self) -> bool:
        """The unit (a passive party) receives a value that depends on the labels."""
        return "request" in self.labels


def handles(name: str) -> Callable[[_Handler], _Handler]:
    """Bind a :class:`Side` method to the protocol's call ``name`` (``method(request) ->
    reply``)."""

    def mark(fn: _Handler) -> _Handler:
        fn.__vfl_call__ = name  # type: ignore[attr-defined]  # a mark Protocol reads
        return fn

    return mark


@dataclass(frozen=True)
class Placement:
    """Where a protocol's units run and what they are called.

    ``grouped``: one side holds a contiguous range of units (vectorized over them): in
    this process one side holds them all; otherwise each unit has its own side.
    ``own_worker``: on a cluster each unit has its own worker (the parties of a vertical
    run); otherwise contiguous groups share the free workers. ``first``: units before it
    stay with the coordinator (private stacking's party 1, which holds the labels).
    """

    word: str = "party"
    plural: str = "parties"
    #: what the units are to the coordinator, in errors ("passive": private stacking's)
    role: str = ""
    grouped: bool = False
    own_worker: bool = True
    first: int = 0
    #: what a unit's protocol rounds are counted as, in errors ("epoch", "iteration")
    iteration: str = "epoch"

    def label(self, first: int, stop: int) -> str:
        """``"party 2"``, ``"providers 1-3"``: how errors and the manifest name a host."""
        if stop == first + 1:
            return f"{self.word} {first + 1}"
        return f"{self.word}s {first + 1}-{stop}"


@dataclass(frozen=True)
class Recovery:
    """How a lost unit is brought back: re-opened where its data is, then its journal of
    completed rounds replayed (each request handled again; a ``releases`` call's recorded
    reply adopted, :meth:`Side.adopt`).

    ``compact(entries)`` bounds the journal: it returns the entries a replay needs (e.g.
    ADMM sharing: the noise draws of every round, the last pull alone). ``not_rebuilt``:
    why a unit cannot be rebuilt, or a function of whether the run's noise is replayable
    and of the unit's journal giving that reason or None (a ``{its}`` in it reads "its"
    or "their").
    """

    compact: Callable[[list[Entry]], list[Entry]] | None = None
    not_rebuilt: str | Callable[[bool, Sequence[Entry]], str | None] | None = None

    def reason(self, replayable: bool, entries: Sequence[Entry] = ()) -> str | None:
        why = self.not_rebuilt
        return why(replayable, entries) if callable(why) else why


class Protocol:
    """A family's protocol, declared once (see the module docstring).

    ``iteration``: the call whose completed rounds count a unit's iterations (errors and
    recovery records); ``opened``: what a unit reports when it opens.
    """

    def __init__(
        self,
        name: str,
        version: int,
        *,
        spec: type,
        side: type[Side],
        calls: Iterable[Call],
        opened: type = Empty,
        placement: Placement = Placement(),
        recovery: Recovery = Recovery(),
        iteration: str | None = None,
    ):
        self.name, self.version = str(name), int(version)
        self.spec, self.side, self.opened = spec, side, opened
        self.calls: tuple[Call, ...] = tuple(calls)
        self.placement, self.recovery, self.iteration = placement, recovery, iteration
        names = [c.name for c in self.calls]
        if len(set(names)) != len(names):
            raise TypeError(f"protocol {name}: a call is declared twice: {names}")
        self._index = {c.name: i for i, c in enumerate(self.calls)}
        # the closed table: call index -> the side's handler (found on the class, once)
        found: dict[str, Callable[..., object]] = {}
        for klass in reversed(side.__mro__):
            for attr in vars(klass).values():
                bound = getattr(attr, "__vfl_call__", None)
                if bound is not None:
                    found[bound] = attr
        extra = set(found) - set(names)
        missing = [n for n in names if n not in found]
        if extra or missing:
            raise TypeError(
                f"protocol {name}: handlers without a call {sorted(extra)}, calls without a handler {missing}"
            )
        self.handlers = tuple(found[n] for n in names)
        if iteration is not None and iteration not in self._index:
            raise TypeError(f"protocol {name}: its iteration call {iteration!r} is not declared")

    def call(self, name: str | Call) -> Call:
        """The declared call ``name`` (or ProtocolError)."""
        if isinstance(name, Call):
            name = name.name
        try:
            return self.calls[self._index[name]]
        except (KeyError, TypeError):
            raise ProtocolError(f"protocol {self.name} declares no call {name!r}") from None

    def index(self, call: str | Call) -> int:
        return self._index[self.call(call).name]

    def __repr__(self) -> str:
        return f"Protocol({self.name!r}, version {self.version})"


# ---------------------------------------------------------------------- the side --
@dataclass
class UnitData:
    """What a host gives a side: the units ``first .. stop - 1`` of ``total`` it holds (in
    the data's numbering: party m, provider i) and their data.

    ``blocks``: the training data, ``(D_m, ...)`` per party of a vertical run, or ``(A,
    b)`` of a group of providers or agents; ``test``: each party's held-out columns,
    where the unit holds them.
    """

    first: int
    stop: int
    total: int
    blocks: tuple[Any, ...]  # the family's data: matrices, label vectors (see above)
    test: tuple[Any, ...] | None = None

    @property
    def rows(self) -> slice:
        return slice(self.first, self.stop)


class Env:
    """What a side draws and releases with: its host decides how (see the module
    docstring). ``records``: ``release`` records the release event where the ledger is
    (this process); otherwise the coordinator recorded it before the round and the
    request's scale is the one to draw with. ``replayable``: the noise is seeded, so a
    release handled again gives the same values."""

    records: bool = False
    replayable: bool = True

    def noise(self, *unit: int) -> np.random.Generator | ExactSampler | None:
        """The noise stream of ``unit`` (of all units: ``noise()``); None where the host
        keeps no noise streams (a :class:`~.host.LocalEnv` given none)."""
        raise NotImplementedError

    def stream(self, purpose: str, *sub: int) -> np.random.Generator:
        raise NotImplementedError

    def release(
        self,
        mean: FloatArray,
        *,
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: float,
        rng: np.random.Generator | ExactSampler,
        mechanism: str = "gaussian",
        size: int | None = None,
        l2_sensitivity: float | None = None,
        rows: slice | None = None,
        total: int | None = None,
        **context: object,
    ) -> FloatArray:
        """``mean`` plus noise of ``scale`` (``rows`` of a ``total``-row release drawn whole
        from a seeded stream, as :func:`~vfl.core.releases.add_noise_to_rows`); ``context``:
        what the host may record beside it (FDML's batch rows)."""
        raise NotImplementedError


class Side:
    """A unit's side of one protocol (see the module docstring): subclass it, bind handlers
    with :func:`handles`, and declare it in the :class:`Protocol`."""

    #: the receiver's known sizes for validating requests (e.g. ``{"N": rows}``)
    dims: ClassVar[dict[str, int]] = {}

    #: ``spec``: the family's spec (the protocol's ``spec`` type), Any here because each
    #: family's side reads its own spec's fields
    def __init__(self, data: UnitData, spec: Any, env: Env):
        self.data, self.spec, self.env = data, spec, env

    def opened(self) -> object:
        """What the unit reports when it opens (the protocol's ``opened`` message)."""
        return Empty()

    def adopt(self, call: Call, request: object, reply: object, handle: Callable[[Call, object], object]) -> None:
        """Catch up with a completed ``releases`` round whose reply the coordinator holds.

        Replayable noise: the request is handled again (``handle``) and its reply must be
        the recorded one, to the bit (:class:`ReplayMismatch` otherwise). Otherwise the
        release cannot be drawn again: :meth:`install` takes the recorded reply.
        """
        if self.env.replayable:
            if not same(handle(call, request), reply):
                raise ReplayMismatch(f"the replayed {call.name} released other values")
            return
        self.install(call, request, reply)

    def install(self, call: Call, request: object, reply: object) -> None:
        """Take the state after a round from its recorded reply (no noise drawn)."""
        raise ReplayMismatch(
            f"a {type(self).__name__} cannot take back a released {call.name} without drawing it again"
        )
