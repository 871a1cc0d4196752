"""Typed messages to bytes and back: what crosses a process or a network between the
coordinator and a unit (the Dask backend now, a party's own service next).

A frame is a 15-byte header, ``<4sBHQ``: the magic ``b"VFL1"``, the frame's kind
(:class:`Frame`), the call's number in the protocol's table and a sequence
number, then the message's fields in their declared order. Each field is a
presence byte, then: an array's dtype code (its position in
:data:`~.messages.DTYPES`), its number of dimensions, each dimension (uint64)
and its raw little-endian bytes; a float or an int as 8 bytes; a bool as 1; a
string as its length (uint32) and UTF-8 bytes; named values as their count,
then per value its name (length byte, UTF-8), a tag and the value. Nothing is
pickled, nothing names code: the receiver decodes into the message type its
protocol declares for that call number and validates it
(:func:`~.messages.validate`).

The payload of a frame is its messages' values times their item sizes
(:func:`~.messages.nbytes`, the protocol's count); the rest is framing.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .messages import (
    DTYPES,
    Array,
    NonFiniteError,
    ProtocolError,
    ReplayMismatch,
    Scalar,
    declared,
)
from .protocol import Protocol

if TYPE_CHECKING:  # (the host's module imports this one)
    from .host import Host

#: the pieces a frame is joined from
_Out = list[bytes | memoryview]

__all__ = ["Frame", "HEADER", "decode", "encode", "error_frame", "read", "serve"]

MAGIC = b"VFL1"
HEADER = struct.Struct("<4sBHQ")
_OPEN_CALL = 0xFFFF


class Frame(enum.IntEnum):
    REQUEST = 0
    REPLY = 1
    OPEN = 2
    OPENED = 3
    ADOPT = 4
    ADOPTED = 5
    ERROR = 6


#: the errors a unit sends back as typed data (anything else is the unit's own failure)
ERRORS = (ProtocolError, NonFiniteError, ReplayMismatch)
_TAGS = {type(None): 0, bool: 1, int: 2, float: 3, str: 4}


# ----------------------------------------------------------------------- encoding --
def _put_array(out: _Out, a: np.ndarray) -> None:
    code = DTYPES.index(a.dtype)
    out.append(struct.pack(f"<BB{a.ndim}Q", code, a.ndim, *a.shape))
    out.append(np.ascontiguousarray(a).data if a.size else b"")


def _put_scalar(out: _Out, v: object) -> None:
    if isinstance(v, (bool, np.bool_)):
        out.append(struct.pack("<?", bool(v)))
    elif isinstance(v, (int, np.integer)):
        out.append(struct.pack("<q", int(v)))
    elif isinstance(v, (float, np.floating)):
        out.append(struct.pack("<d", float(v)))
    else:
        raw = str(v).encode()
        out.append(struct.pack("<I", len(raw)))
        out.append(raw)


def _put_values(out: _Out, d: dict[str, Any]) -> None:
    out.append(struct.pack("<I", len(d)))
    for name, v in d.items():
        raw = name.encode()
        out.append(struct.pack("<B", len(raw)))
        out.append(raw)
        if isinstance(v, np.ndarray):
            out.append(b"\x05")
            _put_array(out, v)
            continue
        kind = (
            bool
            if isinstance(v, (bool, np.bool_))
            else int
            if isinstance(v, (int, np.integer))
            else float
            if isinstance(v, (float, np.floating))
            else type(v)
        )
        out.append(struct.pack("<B", _TAGS[kind]))
        if v is not None:
            _put_scalar(out, v)


def _put(out: _Out, msg: object) -> None:
    for name, spec in declared(type(msg)).FIELDS:
        v = getattr(msg, name)
        out.append(b"\x00" if v is None else b"\x01")
        if v is None:
            continue
        if type(spec) is Array:
            _put_array(out, v)
        elif type(spec) is Scalar:
            _put_scalar(out, v)
        else:
            _put_values(out, v)


def encode(kind: Frame, call: int, seq: int, *messages: object, extra: bytes = b"") -> bytes:
    """One frame: the header, ``extra`` (an open frame's protocol and repeat), the messages."""
    out: _Out = [HEADER.pack(MAGIC, int(kind), call, seq), extra]
    for msg in messages:
        _put(out, msg)
    return b"".join(out)


# ----------------------------------------------------------------------- decoding --
class _Reader:
    def __init__(self, buf: bytes | bytearray | memoryview):
        self.buf, self.at = memoryview(buf), 0

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.at + size > len(self.buf):
            raise ProtocolError("a truncated frame")
        out = struct.unpack_from(fmt, self.buf, self.at)
        self.at += size
        return out

    def raw(self, size: int) -> memoryview:
        if size < 0 or self.at + size > len(self.buf):
            raise ProtocolError("a truncated frame")
        out = self.buf[self.at : self.at + size]
        self.at += size
        return out

    def array(self) -> np.ndarray:
        code, ndim = self.take("<BB")
        if code >= len(DTYPES):
            raise ProtocolError(f"an array of unknown dtype code {code}")
        shape = self.take(f"<{ndim}Q")
        dtype = DTYPES[code]
        count = int(np.prod(shape, dtype=object)) if ndim else 1
        if count * dtype.itemsize > len(self.buf) - self.at:
            raise ProtocolError("a truncated frame")
        out: np.ndarray = np.frombuffer(self.raw(count * dtype.itemsize), dtype=dtype)
        return out.reshape(shape)

    def scalar(self, t: type) -> bool | int | float | str:
        if t is bool:
            return bool(self.take("<?")[0])
        if t is int:
            return int(self.take("<q")[0])
        if t is float:
            return float(self.take("<d")[0])
        (size,) = self.take("<I")
        try:
            return bytes(self.raw(size)).decode()
        except UnicodeDecodeError:
            raise ProtocolError("a string that is not UTF-8") from None

    def values(self) -> dict[str, Any]:
        (count,) = self.take("<I")
        out: dict[str, Any] = {}
        for _ in range(count):
            (size,) = self.take("<B")
            name = self.scalar_name(size)
            (tag,) = self.take("<B")
            if tag == 5:
                out[name] = self.array()
            elif tag == 0:
                out[name] = None
            elif tag in (1, 2, 3, 4):
                out[name] = self.scalar((bool, int, float, str)[tag - 1])
            else:
                raise ProtocolError(f"a named value of unknown tag {tag}")
        return out

    def scalar_name(self, size: int) -> str:
        try:
            return bytes(self.raw(size)).decode()
        except UnicodeDecodeError:
            raise ProtocolError("a name that is not UTF-8") from None

    def message(self, cls: type) -> Any:  # (an instance of the declared message class cls)
        fields: dict[str, Any] = {}
        for name, spec in declared(cls).FIELDS:
            (present,) = self.take("<B")
            if present not in (0, 1):
                raise ProtocolError(f"{cls.__name__}.{name}: a bad presence byte")
            if not present:
                fields[name] = None
            elif type(spec) is Array:
                fields[name] = self.array()
            elif type(spec) is Scalar:
                fields[name] = self.scalar(spec.type)
            else:
                fields[name] = self.values()
        return cls(**fields)

    def end(self) -> None:
        if self.at != len(self.buf):
            raise ProtocolError(f"{len(self.buf) - self.at} bytes after the message")


def decode(frame: bytes) -> tuple[Frame, int, int, _Reader]:
    """The header of ``frame`` (kind, call number, sequence number) and a reader of the rest;
    a frame that is not one (another magic, an unknown kind) is refused."""
    if not isinstance(frame, (bytes, bytearray, memoryview)):
        raise ProtocolError(f"a frame is bytes, not {type(frame).__name__}")
    reader = _Reader(frame)
    magic, kind, call, seq = reader.take(HEADER.format)
    if magic != MAGIC:
        raise ProtocolError("not a vfl frame (bad magic)")
    try:
        kind = Frame(kind)
    except ValueError:
        raise ProtocolError(f"a frame of unknown kind {kind}") from None
    return kind, call, seq, reader


def read(protocol: Protocol, frame: bytes, call: int | None = None, *, unit: str | None = None) -> Any:
    """The message(s) of a reply-side frame: a REPLY's reply (of call number ``call``), an
    OPENED's opened message, nothing for ADOPTED; an ERROR frame raises its typed error,
    and every refusal names ``unit`` (the sender's label) when given."""
    if unit is not None:
        try:
            return read(protocol, frame, call)
        except ERRORS as exc:
            raise type(exc)(f"{unit}: {exc}") from None
    kind, number, _, reader = decode(frame)
    if kind is Frame.ERROR:
        (code,) = reader.take("<B")
        text = reader.scalar(str)
        raise ERRORS[code if code < len(ERRORS) else 0](text)
    if kind is Frame.OPENED:
        msg = reader.message(protocol.opened)
    elif kind is Frame.REPLY:
        if call is not None and number != call:
            raise ProtocolError(f"a reply to call {number}, expected {call}")
        msg = reader.message(protocol.calls[number].reply)
    elif kind is Frame.ADOPTED:
        msg = None
    else:
        raise ProtocolError(f"a {kind.name} frame where a reply was expected")
    reader.end()
    return msg


def open_frame(protocol: Protocol, repeat: int, spec: object) -> bytes:
    name = protocol.name.encode()
    extra = struct.pack(f"<B{len(name)}sIQ", len(name), name, protocol.version, repeat)
    return encode(Frame.OPEN, _OPEN_CALL, 0, spec, extra=extra)


# ------------------------------------------------------------------------ serving --
def serve(host: Host, frame: bytes, opener: Callable[[int, Any], object]) -> bytes:
    """A unit's answer to one frame: decoded for ``host``'s protocol (and no other), handled
    by ``host`` (:class:`~.units.Host`), encoded. ``opener(repeat, spec)`` opens the side for
    a repeat (the unit's data and environment are its host's). A refused message comes
    back as an ERROR frame (nothing handled); the unit's own failure is raised."""
    protocol = host.protocol
    try:
        kind, call, seq, reader = decode(frame)
        if kind is Frame.OPEN:
            (size,) = reader.take("<B")
            name = reader.scalar_name(size)
            version, repeat = reader.take("<IQ")
            if (name, version) != (protocol.name, protocol.version):
                raise ProtocolError(
                    f"this unit serves protocol {protocol.name} version "
                    f"{protocol.version}, not {name} version {version}"
                )
            spec = reader.message(protocol.spec)
            reader.end()
            return encode(Frame.OPENED, _OPEN_CALL, 0, opener(int(repeat), spec))
        if kind not in (Frame.REQUEST, Frame.ADOPT) or call >= len(protocol.calls):
            raise ProtocolError(f"protocol {protocol.name} declares no call number {call} (a {kind.name} frame)")
        declared = protocol.calls[call]
        request = reader.message(declared.request)
        if kind is Frame.ADOPT:
            reply = reader.message(declared.reply)
            reader.end()
            host.adopt(call, request, reply)
            return encode(Frame.ADOPTED, call, seq)
        reader.end()
        return encode(Frame.REPLY, call, seq, host.handle(call, request, seq))
    except ERRORS as exc:
        return error_frame(exc)


def error_frame(exc: Exception) -> bytes:
    """An ERROR frame carrying ``exc`` (one of :data:`ERRORS`) back to the client."""
    code = next(i for i, cls in enumerate(ERRORS) if type(exc) is cls) if type(exc) in ERRORS else 0
    raw = str(exc).encode()
    return HEADER.pack(MAGIC, int(Frame.ERROR), 0, 0) + struct.pack(f"<BI{len(raw)}s", code, len(raw), raw)
