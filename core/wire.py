"""Communication accounting: the messages and bytes a protocol sends, counted where it sends them.

Every solver holds a :class:`Wire` over its units (the parties of a
vertical run, the providers of a horizontal one, the agents of a network)
and calls it at each exchange of its protocol: :meth:`Wire.gather` (every
unit sends to the hub: the coordinator, trainer or active party that holds
the labels), :meth:`Wire.scatter` (the hub sends to every unit),
:meth:`Wire.neighbours` (each agent sends to each of its neighbours) and
:meth:`Wire.all_to_all` (each agent to every other, as in secret sharing).
The runner takes the counts after every iteration (:meth:`Wire.take`).

Counts are of payload values on a declared wire format (float64 unless the
solver says otherwise, e.g. ring elements of a secret-sharing scheme), one
message per value block sent from one endpoint to another; headers and
transport framing are not counted. Every count is an integer array over
units, so an exchange costs one array operation whatever the number of
units.

Scoring held-out rows is communication too: a solver declares, as an
:class:`Inference`, what its parties send to score test rows with the
deployable model (in a vertical run each party holds the columns of a test
row, so each sends its share ``B_m x_m``, Hu et al. 2019, eq. (1); a model
held by one endpoint, such as DP-ADMM's trainer, sends nothing). The runner
counts it once per repeat, for the whole test set, apart from training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .arrays import IntArray

__all__ = ["Inference", "Traffic", "Wire"]


@dataclass(frozen=True)
class Traffic:
    """What one iteration sent: per unit (arrays of length ``units``) and for the hub.

    ``messages`` and ``bytes`` are the totals, each message counted once
    (sent by a unit or by the hub).
    """

    sent_messages: IntArray
    sent_bytes: IntArray
    received_messages: IntArray
    received_bytes: IntArray
    hub_sent_messages: int
    hub_sent_bytes: int
    hub_received_messages: int
    hub_received_bytes: int

    @property
    def messages(self) -> int:
        return int(self.sent_messages.sum()) + self.hub_sent_messages

    @property
    def bytes(self) -> int:
        return int(self.sent_bytes.sum()) + self.hub_sent_bytes


class Wire:
    """Counters of one run's exchanges over ``units`` endpoints and a hub.

    Parameters
    ----------
    units : int
        Parties, providers or agents.
    dtype : numpy dtype
        The wire format of a value (float64: 8 bytes).
    """

    def __init__(self, units: int, dtype: npt.DTypeLike = np.float64):
        if units < 1:
            raise ValueError(f"a wire needs at least one unit, got {units}")
        self.units = int(units)
        self.dtype = np.dtype(dtype)
        self._clear()

    def _clear(self) -> None:
        self._counts = np.zeros((4, self.units), dtype=np.int64)  # sent m/b, received m/b
        self._hub = np.zeros(4, dtype=np.int64)

    def _itemsize(self, dtype: npt.DTypeLike | None) -> int:
        return self.dtype.itemsize if dtype is None else np.dtype(dtype).itemsize

    def _per_unit(self, values: npt.ArrayLike, units: npt.ArrayLike | None) -> IntArray:
        per = np.zeros(self.units, dtype=np.int64)
        idx: slice | IntArray = slice(None) if units is None else np.asarray(units, dtype=int)
        per[idx] = np.asarray(values, dtype=np.int64)
        return per

    def gather(
        self,
        values: npt.ArrayLike,
        *,
        units: npt.ArrayLike | None = None,
        messages: npt.ArrayLike = 1,
        dtype: npt.DTypeLike | None = None,
    ) -> None:
        """Each unit (or each of ``units``) sends ``values`` values (a scalar or one per unit)
        to the hub, in ``messages`` messages."""
        self._to_hub(self._per_unit(values, units), self._per_unit(messages, units), dtype, 0)

    def scatter(
        self,
        values: npt.ArrayLike,
        *,
        units: npt.ArrayLike | None = None,
        messages: npt.ArrayLike = 1,
        dtype: npt.DTypeLike | None = None,
    ) -> None:
        """The hub sends ``values`` values to each unit (or each of ``units``), in
        ``messages`` messages."""
        self._to_hub(self._per_unit(values, units), self._per_unit(messages, units), dtype, 2)

    def _to_hub(self, values: IntArray, messages: IntArray, dtype: npt.DTypeLike | None, row: int) -> None:
        size = values * self._itemsize(dtype)
        count = np.where(size > 0, messages, 0)
        self._counts[row] += count
        self._counts[row + 1] += size
        hub = 2 - row  # what a unit sends, the hub receives, and the other way round
        self._hub[hub] += count.sum()
        self._hub[hub + 1] += size.sum()

    def neighbours(self, degrees: npt.ArrayLike, values: int, *, dtype: npt.DTypeLike | None = None) -> None:
        """Each unit sends one message of ``values`` values to each of its ``degrees``
        neighbours, and (the graph being undirected) receives as many."""
        degrees = np.asarray(degrees, dtype=np.int64)
        size = degrees * int(values) * self._itemsize(dtype)
        self._counts[0] += degrees
        self._counts[1] += size
        self._counts[2] += degrees
        self._counts[3] += size

    def all_to_all(self, values: int, *, dtype: npt.DTypeLike | None = None) -> None:
        """Each unit sends one message of ``values`` values to every other unit."""
        self.neighbours(np.full(self.units, self.units - 1), values, dtype=dtype)

    def take(self) -> Traffic:
        """The counts since the last call, and start again from zero."""
        c, h = self._counts, self._hub
        traffic = Traffic(
            c[0].copy(), c[1].copy(), c[2].copy(), c[3].copy(), int(h[0]), int(h[1]), int(h[2]), int(h[3])
        )
        self._clear()
        return traffic

    def describe(self) -> dict[str, str]:
        return {
            "format": f"{self.dtype.name}, {self.dtype.itemsize} bytes per value unless stated per exchange",
            "counted": "payload values of every message; headers and transport framing are not counted",
        }


@dataclass(frozen=True)
class Inference:
    """What scoring test rows with the deployable model sends (a solver's declaration).

    Each sending unit sends ``values_per_row`` values per scored row to the
    hub, in one message. The senders are every unit, or every unit but the
    first when ``hub_holds_first`` (party 1 is the hub and scores its own
    columns itself, as in private stacking); ``values_per_row = 0`` declares
    a model held by one endpoint. ``note`` says who holds what, in words.
    """

    values_per_row: int
    note: str
    hub_holds_first: bool = False

    def traffic(self, units: int, rows: int, dtype: npt.DTypeLike = np.float64) -> Traffic:
        """The messages that score ``rows`` test rows once, over a wire of ``units``."""
        wire = Wire(units, dtype)
        if self.values_per_row:
            senders = np.arange(1 if self.hub_holds_first else 0, units)
            wire.gather(int(rows) * self.values_per_row, units=senders)
        return wire.take()
