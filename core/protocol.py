"""A unit protocol, declared once: typed messages, the calls that carry them, the unit's side.

Every solver family talks to its units (the parties of a vertical run, groups
of providers or agents) through one transport (:mod:`.units`), whatever runs
them: this process, Dask workers, or a party's own service. What crosses is
declared here, once per family, as data:

- a **message** is a frozen dataclass (:func:`message`) whose fields are
  typed: float64 / int64 / int8 / uint64 / bool arrays with a symbolic shape
  (``("N",)``, ``("n", "d")``), scalars, or named values (public options,
  statistics); :func:`validate` checks the type, dtype, shape (symbols bound
  across the message and to the receiver's known sizes) and finiteness of a
  message on receipt, in every transport;
- a :class:`Call` is one declared exchange: its name, request and reply types,
  its :class:`Kind` (the protocol's rounds, diagnostics for research, scoring
  test rows, bookkeeping) and whether its reply carries released noisy values
  (``releases``: once received, such a reply stands and is never drawn again);
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

Pure declarations and checks: no transport, no files.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

import numpy as np

from .errors import VFLError

__all__ = ["CONTROL", "DIAGNOSTIC", "Call", "Empty", "Env", "INFERENCE", "Kind",
           "NonFiniteError", "PROTOCOL", "Placement", "Protocol", "ProtocolError", "Recovery",
           "ReplayMismatch", "Side", "UnitData", "array", "handles", "message",
           "nbytes", "same", "scalar", "validate", "values"]


class ProtocolError(VFLError):
    """A message refused: a call the protocol does not declare, or a request or reply of
    the wrong type, dtype or shape, or with non-finite values. Nothing is handled."""


class NonFiniteError(ProtocolError):
    """A protocol message held NaN or infinity (a diverging run, or a hostile unit)."""


class ReplayMismatch(VFLError):
    """A unit rebuilt by replay released other values than the ones the coordinator
    received (its noise or its data changed)."""


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


PROTOCOL, DIAGNOSTIC, INFERENCE, CONTROL = (Kind.PROTOCOL, Kind.DIAGNOSTIC, Kind.INFERENCE,
                                            Kind.CONTROL)

# -------------------------------------------------------------------------- fields --
#: the dtypes an array field may declare (the codec's codes are their positions)
DTYPES = tuple(np.dtype(t) for t in ("<f8", "<i8", "<i1", "<u8", "?"))


@dataclass(frozen=True)
class Array:
    """An array field: its dtype and symbolic shape (ints are fixed sizes, strings symbols
    bound across the message and to the receiver's known sizes)."""

    dtype: np.dtype
    shape: tuple
    optional: bool = False
    finite: bool = True


@dataclass(frozen=True)
class Scalar:
    """A scalar field: float, int, bool or str (``choices``: the strings allowed)."""

    type: type
    optional: bool = False
    finite: bool = True
    choices: tuple | None = None


@dataclass(frozen=True)
class Values:
    """Named values (public options, per-unit statistics): each None, a bool, int, float,
    str, or an array of one of :data:`DTYPES`."""

    optional: bool = False
    finite: bool = True


def _field(spec, optional: bool):
    return dataclasses.field(default=None if optional else dataclasses.MISSING,
                             metadata={"vfl": spec})


def array(dtype, *shape, optional: bool = False, finite: bool = True):
    """A message field holding an array of ``dtype`` and symbolic ``shape``."""
    dtype = np.dtype(dtype)
    if dtype not in DTYPES:
        raise TypeError(f"an array field holds one of {[str(d) for d in DTYPES]}, not {dtype}")
    return _field(Array(dtype, tuple(shape), optional, finite), optional)


def scalar(type_: type, *, optional: bool = False, finite: bool = True, choices=None):
    """A message field holding one float, int, bool or str."""
    if type_ not in (float, int, bool, str):
        raise TypeError(f"a scalar field holds a float, int, bool or str, not {type_}")
    return _field(Scalar(type_, optional, finite, None if choices is None else tuple(choices)),
                  optional)


def values(*, optional: bool = False, finite: bool = True):
    """A message field holding named values (:class:`Values`)."""
    return _field(Values(optional, finite), optional)


def _finite(a: np.ndarray) -> bool:
    # one reduction: a NaN or an infinity makes it non-finite; a finite array whose reduction
    # overflows is told apart by the exact check
    return math.isfinite(a @ a if a.ndim == 1 else a.sum()) or bool(np.isfinite(a).all())


def message(cls):
    """Declare ``cls`` a message: a frozen, slotted, keyword-only dataclass whose fields are
    all :func:`array`, :func:`scalar` or :func:`values`."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for name, v in list(vars(cls).items()):  # ``x = array(...)`` needs no annotation
        if isinstance(v, dataclasses.Field) and "vfl" in v.metadata:
            annotations.setdefault(name, "object")
    cls.__annotations__ = annotations
    cls = dataclass(frozen=True, slots=True, kw_only=True)(cls)
    fields = []
    for f in dataclasses.fields(cls):
        if "vfl" not in f.metadata:
            raise TypeError(f"{cls.__name__}.{f.name} is not a typed field (array, scalar, "
                            "values)")
        fields.append((f.name, f.metadata["vfl"]))
    cls.FIELDS = tuple(fields)
    cls._accepts, cls._payload = _compiled(cls)
    return cls


def _compiled(cls):
    """Straight-line code for a message type (the cost of a round in this process is mostly
    Python's): ``accepts(msg, dims, finite)``, True when every field passes the common checks
    (anything else, including a refusal, goes through :func:`validate`'s detailed path), and
    ``payload(msg)``, :func:`nbytes`."""
    env = {"ndarray": np.ndarray, "_finite": _finite, "isfinite": math.isfinite,
           "FLOATS": (float, int, np.floating, np.integer)}
    symbols = sorted({d for _, spec in cls.FIELDS if type(spec) is Array for d in spec.shape
                      if isinstance(d, str)})
    ok = ["def accepts(msg, dims, finite):"]
    ok += [f"    s_{i} = dims.get({d!r})" for i, d in enumerate(symbols)]
    size = ["def payload(msg):", "    total = 0"]
    for j, (name, spec) in enumerate(cls.FIELDS):
        ok.append(f"    v = msg.{name}")
        none = "pass" if spec.optional else "return False"
        size.append(f"    v = msg.{name}")
        if type(spec) is Array:
            env[f"dtype_{j}"] = spec.dtype
            ok += [f"    if v is None: {none}",
                   "    else:",
                   f"        if v.__class__ is not ndarray or v.dtype != dtype_{j} "
                   f"or v.ndim != {len(spec.shape)}: return False"]
            for axis, dim in enumerate(spec.shape):
                if isinstance(dim, str):
                    i = symbols.index(dim)
                    ok += [f"        if s_{i} is None: s_{i} = v.shape[{axis}]",
                           f"        elif v.shape[{axis}] != s_{i}: return False"]
                else:
                    ok.append(f"        if v.shape[{axis}] != {int(dim)}: return False")
            if spec.finite and spec.dtype.kind == "f":
                ok.append("        if finite and not _finite(v): return False")
            size.append("    if v is not None: total += v.nbytes")
        elif type(spec) is Scalar and spec.choices is None and spec.type is not str:
            t = spec.type.__name__
            check = (f"v.__class__ is not {t} and (v.__class__ is bool or not isinstance(v, "
                     f"FLOATS))" if t == "float" else f"v.__class__ is not {t}")
            ok += [f"    if v is None: {none}",
                   f"    elif {check}: return False"]
            if t == "float" and spec.finite:
                ok.append("    elif finite and not isfinite(v): return False")
            size.append(f"    if v is not None: total += {1 if t == 'bool' else 8}")
        else:  # strings with choices, named values: the detailed path
            ok.append("    return False")
            return _exec(ok, env, "accepts"), None
    ok.append("    return True")
    size.append("    return total")
    return _exec(ok, env, "accepts"), _exec(size, env, "payload")


def _exec(lines: list, env: dict, name: str):
    code = "\n".join(lines)
    scope = dict(env)
    exec(compile(code, f"<vfl message {name}>", "exec"), scope)  # noqa: S102 (our own code)
    return staticmethod(scope[name])


@message
class Empty:
    """A message without fields (a call that needs no request, or returns nothing)."""


# ---------------------------------------------------------------------- validation --
def _refuse(what: str, finite: bool = False):
    raise (NonFiniteError if finite else ProtocolError)(what)


def _check_array(where: str, a, spec: Array, dims: dict, finite: bool) -> None:
    if type(a) is not np.ndarray:
        _refuse(f"{where} must be a numpy array of {spec.dtype}, got {type(a).__name__}")
    if a.dtype != spec.dtype:
        _refuse(f"{where} must have dtype {spec.dtype}, got {a.dtype}")
    if a.ndim != len(spec.shape):
        _refuse(f"{where} must have {len(spec.shape)} dimension(s) {spec.shape}, got shape "
                f"{a.shape}")
    for size, dim in zip(a.shape, spec.shape):
        want = dims.setdefault(dim, size) if isinstance(dim, str) else dim
        if size != want:
            _refuse(f"{where} must have shape {spec.shape} with {dim} = {want}, got {a.shape}")
    if finite and spec.finite and a.dtype.kind == "f" and not np.isfinite(a).all():
        _refuse(f"{where} holds non-finite values", True)


def _check_scalar(where: str, v, spec: Scalar, finite: bool) -> None:
    t = spec.type
    ok = (isinstance(v, (bool, np.bool_)) if t is bool else
          isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) if t is int
          else isinstance(v, (float, int, np.floating, np.integer))
          and not isinstance(v, (bool, np.bool_)) if t is float else isinstance(v, str))
    if not ok:
        _refuse(f"{where} must be a {t.__name__}, got {type(v).__name__}")
    if spec.choices is not None and v not in spec.choices:
        _refuse(f"{where} must be one of {list(spec.choices)}, got {v!r}")
    if finite and spec.finite and t is float and not np.isfinite(v):
        _refuse(f"{where} is not finite ({v})", True)


def _check_values(where: str, v, spec: Values, finite: bool) -> None:
    if type(v) is not dict:
        _refuse(f"{where} must be a dict of named values, got {type(v).__name__}")
    for name, item in v.items():
        if type(name) is not str:
            _refuse(f"{where} has a key of type {type(name).__name__}")
        at = f"{where}[{name!r}]"
        if item is None or isinstance(item, (bool, np.bool_, str)):
            continue
        if isinstance(item, (int, np.integer)):
            continue
        if isinstance(item, (float, np.floating)):
            if finite and spec.finite and not np.isfinite(item):
                _refuse(f"{at} is not finite ({item})", True)
            continue
        if type(item) is not np.ndarray or item.dtype not in DTYPES:
            _refuse(f"{at} must be None, a bool, int, float, str or an array of "
                    f"{[str(d) for d in DTYPES]}, got {type(item).__name__}")
        if finite and spec.finite and item.dtype.kind == "f" and not np.isfinite(item).all():
            _refuse(f"{at} holds non-finite values", True)


_FLOATS = (float, int, np.floating, np.integer)


def _w(where) -> str:
    return where if where.__class__ is str else "".join(where)


def validate(msg, expected: type, dims: dict | None = None, *, finite: bool = True,
             where: str = "") -> None:
    """Refuse ``msg`` unless it is an ``expected`` message whose fields have their declared
    types, dtypes and shapes (``dims``: sizes the receiver knows, e.g. ``{"N": 300}``;
    other symbols must agree across the message) and, with ``finite``, finite floats.

    Raises :class:`ProtocolError` (:class:`NonFiniteError` for NaN or infinity) naming
    the message and field; ``where`` prefixes the message (the call, the unit): a string, or parts joined only
    when a message is refused.
    """
    if type(msg) is not expected:
        raise ProtocolError(f"{_w(where)}expected a {expected.__name__} message, got "
                            f"{type(msg).__name__}")
    if expected._accepts(msg, dims or _NO_DIMS, finite):
        return
    bound = dict(dims) if dims else {}
    for name, spec in expected.FIELDS:
        v = getattr(msg, name)
        kind = type(spec)
        if v is None:
            if not spec.optional:
                raise ProtocolError(f"{_w(where)}{expected.__name__}.{name} is required")
        elif kind is Array:  # the common case checked inline; the detail only on a refusal
            if type(v) is not np.ndarray or v.dtype != spec.dtype or \
                    v.ndim != len(spec.shape) or \
                    (finite and spec.finite and spec.dtype.kind == "f" and not _finite(v)):
                _check_array(f"{_w(where)}{expected.__name__}.{name}", v, spec, bound, finite)
            for size, dim in zip(v.shape, spec.shape):
                if size != (bound.setdefault(dim, size) if dim.__class__ is str else dim):
                    _check_array(f"{_w(where)}{expected.__name__}.{name}", v, spec, bound, finite)
        elif kind is Scalar:
            t = spec.type
            if not (v.__class__ is t or (t is float and v.__class__ is not bool
                                         and isinstance(v, _FLOATS))) \
                    or spec.choices is not None or (finite and spec.finite and t is float
                                                    and not math.isfinite(v)):
                _check_scalar(f"{_w(where)}{expected.__name__}.{name}", v, spec, finite)
        else:
            _check_values(f"{_w(where)}{expected.__name__}.{name}", v, spec, finite)


_NO_DIMS: dict = {}


def nbytes(msg) -> int:
    """The payload of ``msg``: its values times their item sizes (arrays' bytes, 8 per number,
    1 per bool, a string's UTF-8 bytes); what the codec writes besides is framing."""
    if msg._payload is not None:
        return msg._payload(msg)
    total = 0
    for name, spec in msg.FIELDS:
        v = getattr(msg, name)
        if v is None:
            continue
        if v.__class__ is np.ndarray:
            total += v.nbytes
        elif type(spec) is Values:
            total += sum(_value_bytes(item) for item in v.values() if item is not None)
        else:
            total += _value_bytes(v)
    return total


def _value_bytes(v) -> int:
    if type(v) is np.ndarray:
        return v.nbytes
    if isinstance(v, (bool, np.bool_)):
        return 1
    if isinstance(v, str):
        return len(v.encode())
    return 8


def same(a, b) -> bool:
    """Whether two messages are the same to the bit (arrays: dtype, shape and bytes)."""
    if type(a) is not type(b):
        return False
    for name, _ in a.FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys() or not all(_same_value(x[k], y[k]) for k in x):
                return False
        elif not _same_value(x, y):
            return False
    return True


def _same_value(x, y) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                and x.shape == y.shape and np.ascontiguousarray(x).tobytes()
                == np.ascontiguousarray(y).tobytes())
    if isinstance(x, float) or isinstance(y, float):
        return np.float64(x).tobytes() == np.float64(y).tobytes()
    return x == y


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


def handles(name: str) -> Callable:
    """Bind a :class:`Side` method to the protocol's call ``name`` (``method(request) ->
    reply``)."""
    def mark(fn):
        fn.__vfl_call__ = name
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

    compact: Callable | None = None
    not_rebuilt: Any = None

    def reason(self, replayable: bool, entries=()) -> str | None:
        why = self.not_rebuilt
        return why(replayable, entries) if callable(why) else why


class Protocol:
    """A family's protocol, declared once (see the module docstring).

    ``iteration``: the call whose completed rounds count a unit's iterations (errors and
    recovery records); ``opened``: what a unit reports when it opens.
    """

    def __init__(self, name: str, version: int, *, spec: type, side: type, calls,
                 opened: type = Empty, placement: Placement = Placement(),
                 recovery: Recovery = Recovery(), iteration: str | None = None):
        self.name, self.version = str(name), int(version)
        self.spec, self.side, self.opened = spec, side, opened
        self.calls: tuple[Call, ...] = tuple(calls)
        self.placement, self.recovery, self.iteration = placement, recovery, iteration
        names = [c.name for c in self.calls]
        if len(set(names)) != len(names):
            raise TypeError(f"protocol {name}: a call is declared twice: {names}")
        self._index = {c.name: i for i, c in enumerate(self.calls)}
        # the closed table: call index -> the side's handler (found on the class, once)
        found: dict[str, Callable] = {}
        for klass in reversed(side.__mro__):
            for attr in vars(klass).values():
                bound = getattr(attr, "__vfl_call__", None)
                if bound is not None:
                    found[bound] = attr
        extra = set(found) - set(names)
        missing = [n for n in names if n not in found]
        if extra or missing:
            raise TypeError(f"protocol {name}: handlers without a call {sorted(extra)}, calls "
                            f"without a handler {missing}")
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
    blocks: tuple
    test: tuple | None = None

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

    def noise(self, *unit: int):
        raise NotImplementedError

    def stream(self, purpose: str, *sub: int) -> np.random.Generator:
        raise NotImplementedError

    def release(self, mean, *, units, scale, sensitivity, rng, mechanism: str = "gaussian",
                size=None, l2_sensitivity=None, rows: slice | None = None, total=None,
                **context):
        """``mean`` plus noise of ``scale`` (``rows`` of a ``total``-row release drawn whole
        from a seeded stream, as :func:`~vfl.core.solver.add_noise_to_rows`); ``context``:
        what the host may record beside it (FDML's batch rows)."""
        raise NotImplementedError


class Side:
    """A unit's side of one protocol (see the module docstring): subclass it, bind handlers
    with :func:`handles`, and declare it in the :class:`Protocol`."""

    #: the receiver's known sizes for validating requests (e.g. ``{"N": rows}``)
    dims: ClassVar[dict] = {}

    def __init__(self, data: UnitData, spec, env: Env):
        self.data, self.spec, self.env = data, spec, env

    def opened(self):
        """What the unit reports when it opens (the protocol's ``opened`` message)."""
        return Empty()

    def adopt(self, call: Call, request, reply, handle: Callable) -> None:
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

    def install(self, call: Call, request, reply) -> None:
        """Take the state after a round from its recorded reply (no noise drawn)."""
        raise ReplayMismatch(f"a {type(self).__name__} cannot take back a released "
                             f"{call.name} without drawing it again")
