"""A unit's end of the transport: its host, and the environments its side draws in.

:class:`Host` holds a unit's open :class:`~.protocol.Side` for one protocol:
it validates every request (:func:`~.messages.validate`), dispatches it
through the protocol's closed table of handlers by the call's number, answers
a request sent again (the same sequence number) with the reply it already
made, and lets the side adopt a recorded round (a lost unit's journal). It is
what the solver's process holds for each unit in-process, what a Dask actor
holds on its worker, and what a party's own service would hold.

:class:`StreamEnv` is a unit's own streams (it draws; the coordinator records
the release events); :class:`LocalEnv` is the solver's process (the solver's
``release`` records and draws, where the audit watches; an audit that drives R
runs at once gets them back ahead of each value, :attr:`LocalEnv.runs`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .protocol import DIAGNOSTIC, PROTOCOL, Call, Env, Protocol, ProtocolError, UnitData, validate
from .releases import add_noise, add_noise_to_rows
from .sampling import ExactSampler
from .streams import Streams

if TYPE_CHECKING:
    from .arrays import FloatArray
    from .protocol import Side

#: a unit's noise stream: a seeded Generator, or an exact sampler standing in for one
Noise = np.random.Generator | ExactSampler

__all__ = ["Host", "LocalEnv", "StreamEnv"]


class Host:
    """A unit's end of a session: its open side, the validation of every request, the
    dispatch through the protocol's closed table, and at-most-once handling (a request
    sent again with the same sequence number gets the reply already made).

    ``simulation`` False: a deployment's unit, which answers no diagnostic (exact values
    never leave it).
    """

    def __init__(self, protocol: Protocol, *, simulation: bool = True):
        self.protocol, self.simulation = protocol, simulation
        self.side: Side | None = None
        self._last: tuple[int, object] | None = None

    def open(self, data: UnitData, spec: object, env: Env) -> object:
        validate(spec, self.protocol.spec, finite=False, where="open: ")
        self.side = side = self.protocol.side(data, spec, env)
        self._last = None
        opened = side.opened()
        validate(opened, self.protocol.opened, finite=False, where="opened: ")
        return opened

    def _call(self, index: int | Call) -> tuple[int, Call]:
        calls = self.protocol.calls
        if isinstance(index, Call):
            i = self.protocol.index(index)
            if calls[i] is not index:
                raise ProtocolError(f"{index.name!r} is not protocol {self.protocol.name}'s call")
            index = i
        if type(index) is not int or not 0 <= index < len(calls):
            raise ProtocolError(f"protocol {self.protocol.name} declares no call number {index!r}")
        if self.side is None:
            raise ProtocolError(f"protocol {self.protocol.name}: a call before open")
        return index, calls[index]

    def handle(
        self, index: int | Call, request: object, seq: int | None = None, checked: Mapping[str, int] | None = None
    ) -> object:
        """The side's reply to ``request`` of the call ``index`` (its number, or the Call).

        ``checked``: the sizes this very request was validated against (a request sent to
        several units in this process is validated once for the units whose sizes agree).
        """
        calls = self.protocol.calls
        if isinstance(index, int) and index.__class__ is int and 0 <= index < len(calls) and self.side is not None:
            i, call = index, calls[index]  # (the common case, in this process, first)
        else:
            i, call = self._call(index)
        if seq is not None and self._last is not None and self._last[0] == seq:
            return self._last[1]  # sent again after a fault: handled once
        reply = self._handle(i, call, request, checked)
        if seq is not None:
            self._last = (seq, reply)
        return reply

    def _handle(self, i: int, call: Call, request: object, checked: Mapping[str, int] | None = None) -> object:
        if call.kind is DIAGNOSTIC and not self.simulation:
            raise ProtocolError(f"{call.name}: a deployment's unit answers no diagnostic (exact values never leave it)")
        side = self._open_side()
        if checked is None or checked != side.dims:
            validate(request, call.request, side.dims, finite=call.kind is PROTOCOL, where=(call.name, ": "))
        return self.protocol.handlers[i](side, request)

    def _open_side(self) -> Side:
        if self.side is None:  # _call refuses a call before open
            raise ProtocolError(f"protocol {self.protocol.name}: a call before open")
        return self.side

    def adopt(self, index: int | Call, request: object, reply: object) -> None:
        """Catch up with a completed round whose reply the coordinator recorded."""
        i, call = self._call(index)
        validate(reply, call.reply, finite=False, where=f"{call.name} (adopted): ")
        self._open_side().adopt(call, request, reply, lambda c, r: self._handle(self.protocol.index(c), c, r))


# ----------------------------------------------------------------------- envs --
class StreamEnv(Env):
    """A unit's own streams (:class:`~vfl.core.streams.Streams` of the run's seed and repeat,
    exact samplers in a deployment): it draws, the coordinator records."""

    def __init__(self, streams: Streams):
        self.streams = streams
        self.replayable = bool(streams.replayable_noise)

    def noise(self, *unit: int) -> Noise:
        return self.streams.noise(*unit)

    def stream(self, purpose: str, *sub: int) -> np.random.Generator:
        return self.streams.get(purpose, *sub)

    def release(
        self,
        mean: FloatArray,
        *,
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: float,
        rng: Noise,
        mechanism: str = "gaussian",
        size: int | None = None,
        l2_sensitivity: float | None = None,
        rows: slice | None = None,
        total: int | None = None,
        **context: object,
    ) -> FloatArray:
        if np.ndim(scale) == 0 and scale == 0:
            return mean  # no noise, no draw
        noisy: FloatArray
        if rows is None:
            noisy = add_noise(mechanism, mean, scale, rng)
        else:
            assert total is not None  # rows of a release are drawn with its total
            noisy = add_noise_to_rows(
                mechanism,
                mean,
                scale,
                rng,
                rows,
                total,
            )
        return noisy


class LocalEnv(Env):
    """The units in the solver's process: ``release`` is the solver's (it records the event
    and draws, or lets the audit's observer release), ``noise(*unit)`` the solver's noise
    generators, and a public stream either ``stream(purpose, *sub)`` (a fresh seeded one)
    or a copy of the solver's generator ``streams[purpose]`` (as each unit elsewhere draws
    from its own copy)."""

    records = True

    def __init__(
        self,
        release: Callable[..., FloatArray] | None = None,
        noise: Callable[..., Noise] | None = None,
        streams: Mapping[str, np.random.Generator] | None = None,
        stream: Callable[..., np.random.Generator] | None = None,
        runs: Callable[[], int | None] | None = None,
    ):
        self._release, self._noise, self._streams = release, noise, dict(streams or {})
        self._stream, self._runs = stream, runs

    @property
    def runs(self) -> int | None:
        """The audit's runs that ``release`` returns ahead of each value (``runs()``: the
        solver's :meth:`~vfl.core.solver.Solver.audit_runs`), or None: one run."""
        return None if self._runs is None else self._runs()

    def noise(self, *unit: int) -> Noise | None:
        return None if self._noise is None else self._noise(*unit)

    def stream(self, purpose: str, *sub: int) -> np.random.Generator:
        if self._stream is not None:
            return self._stream(purpose, *sub)
        return copy.deepcopy(self._streams[purpose])

    def release(
        self,
        mean: FloatArray,
        *,
        units: int | npt.ArrayLike,
        scale: npt.ArrayLike,
        sensitivity: float,
        rng: Noise,
        mechanism: str = "gaussian",
        size: int | None = None,
        l2_sensitivity: float | None = None,
        rows: slice | None = None,
        total: int | None = None,
        **context: object,
    ) -> FloatArray:
        if self._release is None:
            raise TypeError("this LocalEnv was given no release")
        return self._release(
            mean,
            units=units,
            scale=scale,
            sensitivity=sensitivity,
            rng=rng,
            mechanism=mechanism,
            size=size,
            l2_sensitivity=l2_sensitivity,
            **context,
        )
