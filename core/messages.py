"""Typed messages: what a unit protocol's calls carry (:mod:`.protocol`).

A message is a frozen, slotted, keyword-only dataclass (:func:`message`) whose
fields are all typed: arrays of one of :data:`DTYPES` with a symbolic shape
(:func:`array`: ``("N",)``, ``("n", "d")``), scalars (:func:`scalar`: float,
int, bool, str with its choices) or named values (:func:`values`: public
options, per-unit statistics). :func:`validate` checks a message on receipt:
its type, each field's dtype and shape (symbols bound across the message and
to the sizes the receiver knows) and, for a protocol's round, finiteness; a
refusal is a :class:`ProtocolError` naming the field. :func:`nbytes` is its
payload (values times item sizes), :func:`same` compares two to the bit.

Each message type gets straight-line code for the common case (a round in the
solver's process costs mostly Python): the detailed checks run only when that
code does not accept a message, to accept it after all or to say why not.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, Protocol, TypeVar, cast

import numpy as np
import numpy.typing as npt

from .errors import VFLError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "DTYPES",
    "RUNS",
    "Array",
    "Empty",
    "NonFiniteError",
    "ProtocolError",
    "ReplayMismatch",
    "Scalar",
    "Values",
    "array",
    "message",
    "nbytes",
    "same",
    "scalar",
    "validate",
    "values",
]


class ProtocolError(VFLError):
    """A message refused: a call the protocol does not declare, or a request or reply of
    the wrong type, dtype or shape, or with non-finite values. Nothing is handled."""


class NonFiniteError(ProtocolError):
    """A protocol message held NaN or infinity (a diverging run, or a hostile unit)."""


class ReplayMismatch(VFLError):
    """A unit rebuilt by replay released other values than the ones the coordinator
    received (its noise or its data changed)."""


# -------------------------------------------------------------------------- fields --
#: the key of ``validate``'s ``dims`` under which the audit, driving a mechanism in the
#: solver's own process, declares its ``R`` runs: an array field may then carry a leading
#: axis of ``R`` before its declared shape. Only in-process units set it
#: (:class:`~.inprocess.InProcessUnits`); a deployment's messages never have it.
RUNS = "(runs)"

#: the dtypes an array field may declare (the codec's codes are their positions)
DTYPES = tuple(np.dtype(t) for t in ("<f8", "<i8", "<i1", "<u8", "?"))


@dataclass(frozen=True)
class Array:
    """An array field: its dtype and symbolic shape (ints are fixed sizes, strings symbols
    bound across the message and to the receiver's known sizes)."""

    dtype: np.dtype[Any]
    shape: tuple[int | str, ...]
    optional: bool = False
    finite: bool = True


@dataclass(frozen=True)
class Scalar:
    """A scalar field: float, int, bool or str (``choices``: the strings allowed)."""

    type: type
    optional: bool = False
    finite: bool = True
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Values:
    """Named values (public options, per-unit statistics): each None, a bool, int, float,
    str, or an array of one of :data:`DTYPES`."""

    optional: bool = False
    finite: bool = True


#: what a message field declares
Spec = Array | Scalar | Values
#: sizes bound to shape symbols (``{"N": 300}``)
Dims = dict[str, int]


class Declared(Protocol):
    """A message class as :func:`message` makes it: its fields' specs and the compiled
    checks (:func:`_compiled`)."""

    FIELDS: tuple[tuple[str, Spec], ...]
    _accepts: Callable[[object, Mapping[str, int], bool], bool]
    _payload: Callable[[object], int] | None


def declared(cls: type) -> Declared:
    """``cls``, a message class, seen with what :func:`message` set on it (set at run
    time, so not visible to a type checker from the class statement)."""
    return cast(Declared, cls)


_M = TypeVar("_M")


def _field(spec: Spec, optional: bool) -> Any:
    # a dataclass field whose value is declared by ``spec`` (checked by validate, not here)
    return dataclasses.field(default=None if optional else dataclasses.MISSING, metadata={"vfl": spec})


def array(dtype: npt.DTypeLike, *shape: int | str, optional: bool = False, finite: bool = True) -> Any:
    """A message field holding an array of ``dtype`` and symbolic ``shape``."""
    dtype = np.dtype(dtype)
    if dtype not in DTYPES:
        raise TypeError(f"an array field holds one of {[str(d) for d in DTYPES]}, not {dtype}")
    return _field(Array(dtype, tuple(shape), optional, finite), optional)


def scalar(type_: type, *, optional: bool = False, finite: bool = True, choices: Iterable[str] | None = None) -> Any:
    """A message field holding one float, int, bool or str."""
    if type_ not in (float, int, bool, str):
        raise TypeError(f"a scalar field holds a float, int, bool or str, not {type_}")
    return _field(Scalar(type_, optional, finite, None if choices is None else tuple(choices)), optional)


def values(*, optional: bool = False, finite: bool = True) -> Any:
    """A message field holding named values (:class:`Values`)."""
    return _field(Values(optional, finite), optional)


def _finite(a: np.ndarray) -> bool:
    # one reduction: a NaN or an infinity makes it non-finite; a finite array whose reduction
    # overflows is told apart by the exact check
    # (a sum, not a dot product: BLAS may start threads for it)
    return math.isfinite(_add(a, axis=None)) or bool(np.isfinite(a).all())


_add = np.add.reduce


def message(cls: type[_M]) -> type[_M]:
    """Declare ``cls`` a message: a frozen, slotted, keyword-only dataclass whose fields are
    all :func:`array`, :func:`scalar` or :func:`values`."""
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    for name, v in list(vars(cls).items()):  # ``x = array(...)`` needs no annotation
        if isinstance(v, dataclasses.Field) and "vfl" in v.metadata:
            annotations.setdefault(name, "object")
    cls.__annotations__ = annotations
    cls = dataclass(frozen=True, slots=True, kw_only=True)(cls)
    fields: list[tuple[str, Spec]] = []
    for f in dataclasses.fields(cast("type[DataclassInstance]", cls)):
        if "vfl" not in f.metadata:
            raise TypeError(f"{cls.__name__}.{f.name} is not a typed field (array, scalar, values)")
        fields.append((f.name, f.metadata["vfl"]))
    made = declared(cls)
    made.FIELDS = tuple(fields)
    made._accepts, made._payload = _compiled(made)
    return cls


def _compiled(cls: Declared) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    """Straight-line code for a message type (the cost of a round in this process is mostly
    Python's): ``accepts(msg, dims, finite)``, True when every field passes the common checks
    (anything else, including a refusal, goes through :func:`validate`'s detailed path), and
    ``payload(msg)``, :func:`nbytes`."""
    env: dict[str, object] = {
        "ndarray": np.ndarray,
        "_finite": _finite,
        "isfinite": math.isfinite,
        "FLOATS": (float, int, np.floating, np.integer),
    }
    symbols = sorted({d for _, spec in cls.FIELDS if type(spec) is Array for d in spec.shape if isinstance(d, str)})
    ok = ["def accepts(msg, dims, finite):"]
    ok += [f"    s_{i} = dims.get({d!r})" for i, d in enumerate(symbols)]
    size = ["def payload(msg):", "    total = 0"]
    for j, (name, spec) in enumerate(cls.FIELDS):
        ok.append(f"    v = msg.{name}")
        none = "pass" if spec.optional else "return False"
        size.append(f"    v = msg.{name}")
        if type(spec) is Array:
            env[f"dtype_{j}"] = spec.dtype
            ok += [
                f"    if v is None: {none}",
                "    else:",
                f"        if v.__class__ is not ndarray or v.dtype != dtype_{j} "
                f"or v.ndim != {len(spec.shape)}: return False",
            ]
            for axis, dim in enumerate(spec.shape):
                if isinstance(dim, str):
                    i = symbols.index(dim)
                    ok += [
                        f"        if s_{i} is None: s_{i} = v.shape[{axis}]",
                        f"        elif v.shape[{axis}] != s_{i}: return False",
                    ]
                else:
                    ok.append(f"        if v.shape[{axis}] != {int(dim)}: return False")
            if spec.finite and spec.dtype.kind == "f":
                ok.append("        if finite and not _finite(v): return False")
            size.append("    if v is not None: total += v.nbytes")
        elif type(spec) is Scalar and spec.choices is None and spec.type is not str:
            t = spec.type.__name__
            check = (
                f"v.__class__ is not {t} and (v.__class__ is bool or not isinstance(v, FLOATS))"
                if t == "float"
                else f"v.__class__ is not {t}"
            )
            ok += [f"    if v is None: {none}", f"    elif {check}: return False"]
            if t == "float" and spec.finite:
                ok.append("    elif finite and not isfinite(v): return False")
            size.append(f"    if v is not None: total += {1 if t == 'bool' else 8}")
        else:  # strings with choices, named values: the detailed path
            ok.append("    return False")
            return _exec(ok, env, "accepts"), None
    ok.append("    return True")
    size.append("    return total")
    return _exec(ok, env, "accepts"), _exec(size, env, "payload")


def _exec(lines: list[str], env: dict[str, object], name: str) -> Callable[..., Any]:
    # code compiled at run time: its signature is the generated ``def``'s
    code = "\n".join(lines)
    scope = dict(env)
    exec(compile(code, f"<vfl message {name}>", "exec"), scope)  # noqa: S102 (our own code)
    return staticmethod(cast("Callable[..., Any]", scope[name]))


@message
class Empty:
    """A message without fields (a call that needs no request, or returns nothing)."""


# ---------------------------------------------------------------------- validation --
def _refuse(what: str, finite: bool = False) -> NoReturn:
    raise (NonFiniteError if finite else ProtocolError)(what)


def _check_array(where: str, a: object, spec: Array, dims: Dims, finite: bool) -> None:
    if type(a) is not np.ndarray:
        _refuse(f"{where} must be a numpy array of {spec.dtype}, got {type(a).__name__}")
    if a.dtype != spec.dtype:
        _refuse(f"{where} must have dtype {spec.dtype}, got {a.dtype}")
    if a.ndim != len(spec.shape):
        _refuse(f"{where} must have {len(spec.shape)} dimension(s) {spec.shape}, got shape {a.shape}")
    for size, dim in zip(a.shape, spec.shape):
        want = dims.setdefault(dim, size) if isinstance(dim, str) else dim
        if size != want:
            _refuse(f"{where} must have shape {spec.shape} with {dim} = {want}, got {a.shape}")
    if finite and spec.finite and a.dtype.kind == "f" and not np.isfinite(a).all():
        _refuse(f"{where} holds non-finite values", True)


def _check_scalar(where: str, v: object, spec: Scalar, finite: bool) -> None:
    t = spec.type
    ok = (
        isinstance(v, (bool, np.bool_))
        if t is bool
        else isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
        if t is int
        else isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, (bool, np.bool_))
        if t is float
        else isinstance(v, str)
    )
    if not ok:
        _refuse(f"{where} must be a {t.__name__}, got {type(v).__name__}")
    if spec.choices is not None and v not in spec.choices:
        _refuse(f"{where} must be one of {list(spec.choices)}, got {v!r}")
    if finite and spec.finite and t is float and not np.isfinite(cast(float, v)):  # a number
        _refuse(f"{where} is not finite ({v})", True)


def _check_values(where: str, v: object, spec: Values, finite: bool) -> None:
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
            _refuse(
                f"{at} must be None, a bool, int, float, str or an array of "
                f"{[str(d) for d in DTYPES]}, got {type(item).__name__}"
            )
        if finite and spec.finite and item.dtype.kind == "f" and not np.isfinite(item).all():
            _refuse(f"{at} holds non-finite values", True)


_FLOATS = (float, int, np.floating, np.integer)


def _w(where: str | tuple[str, ...]) -> str:
    return where if isinstance(where, str) else "".join(where)


def validate(
    msg: object,
    expected: type,
    dims: Mapping[str, int] | None = None,
    *,
    finite: bool = True,
    where: str | tuple[str, ...] = "",
) -> None:
    """Refuse ``msg`` unless it is an ``expected`` message whose fields have their declared
    types, dtypes and shapes (``dims``: sizes the receiver knows, e.g. ``{"N": 300}``;
    other symbols must agree across the message) and, with ``finite``, finite floats.
    ``dims[RUNS]``: the audit's runs (:data:`RUNS`), which an array may carry ahead of
    its declared shape.

    Raises :class:`ProtocolError` (:class:`NonFiniteError` for NaN or infinity) naming
    the message and field; ``where`` prefixes the message (the call, the unit): a string,
    or parts joined only when a message is refused.
    """
    if type(msg) is not expected:
        raise ProtocolError(f"{_w(where)}expected a {expected.__name__} message, got {type(msg).__name__}")
    spec_of = declared(expected)
    if spec_of._accepts(msg, dims or _NO_DIMS, finite):
        return
    bound = dict(dims) if dims else {}
    runs = bound.pop(RUNS, None)
    for name, spec in spec_of.FIELDS:
        v = getattr(msg, name)
        if v is None:
            if not spec.optional:
                raise ProtocolError(f"{_w(where)}{expected.__name__}.{name} is required")
        elif (
            isinstance(spec, Array)
            and runs is not None
            and type(v) is np.ndarray
            and v.ndim == len(spec.shape) + 1
            and v.shape[0] == runs
        ):  # the audit's runs
            at = f"{_w(where)}{expected.__name__}.{name}"
            _check_array(at, v[0], spec, bound, False)
            if finite and spec.finite and spec.dtype.kind == "f" and not _finite(v):
                _refuse(f"{at} holds non-finite values", True)
        elif isinstance(spec, Array):  # the common case checked inline; the detail only on a refusal
            if (
                type(v) is not np.ndarray
                or v.dtype != spec.dtype
                or v.ndim != len(spec.shape)
                or (finite and spec.finite and spec.dtype.kind == "f" and not _finite(v))
            ):
                _check_array(f"{_w(where)}{expected.__name__}.{name}", v, spec, bound, finite)
            for size, dim in zip(v.shape, spec.shape):
                if size != (bound.setdefault(dim, size) if dim.__class__ is str else dim):
                    _check_array(f"{_w(where)}{expected.__name__}.{name}", v, spec, bound, finite)
        elif isinstance(spec, Scalar):
            t = spec.type
            if (
                not (v.__class__ is t or (t is float and v.__class__ is not bool and isinstance(v, _FLOATS)))
                or spec.choices is not None
                or (finite and spec.finite and t is float and not math.isfinite(cast(float, v)))
            ):
                _check_scalar(f"{_w(where)}{expected.__name__}.{name}", v, spec, finite)
        else:
            _check_values(f"{_w(where)}{expected.__name__}.{name}", v, spec, finite)


_NO_DIMS: Dims = {}


def nbytes(msg: object) -> int:
    """The payload of ``msg``: its values times their item sizes (arrays' bytes, 8 per number,
    1 per bool, a string's UTF-8 bytes); what the codec writes besides is framing."""
    spec_of = declared(type(msg))
    if spec_of._payload is not None:
        return spec_of._payload(msg)
    total = 0
    for name, spec in spec_of.FIELDS:
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


def _value_bytes(v: object) -> int:
    if type(v) is np.ndarray:
        return v.nbytes
    if isinstance(v, (bool, np.bool_)):
        return 1
    if isinstance(v, str):
        return len(v.encode())
    return 8


def same(a: object, b: object) -> bool:
    """Whether two messages are the same to the bit (arrays: dtype, shape and bytes)."""
    if type(a) is not type(b):
        return False
    for name, _ in declared(type(a)).FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, dict) and isinstance(y, dict):
            if x.keys() != y.keys() or not all(_same_value(x[k], y[k]) for k in x):
                return False
        elif not _same_value(x, y):
            return False
    return True


def _same_value(x: object, y: object) -> bool:
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return (
            isinstance(x, np.ndarray)
            and isinstance(y, np.ndarray)
            and x.dtype == y.dtype
            and x.shape == y.shape
            and np.ascontiguousarray(x).tobytes() == np.ascontiguousarray(y).tobytes()
        )
    if isinstance(x, float) or isinstance(y, float):
        # numbers (a float field may hold an int)
        return np.float64(cast(float, x)).tobytes() == np.float64(cast(float, y)).tobytes()
    return x == y
