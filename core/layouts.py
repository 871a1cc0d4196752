"""How a run's data is laid out for its solver, per :class:`~vfl.core.solver.Setting`.

Vertical: parties hold columns of the same rows (:class:`VerticalData`); horizontal:
providers hold rows (:class:`HorizontalData`); network: agents hold rows on a graph
(:class:`NetworkData`). Each cuts the units a host holds (:class:`~vfl.core.protocol.UnitData`)
and says what the coordinator keeps when the units run elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .protocol import UnitData
from .wire import Inference

if TYPE_CHECKING:
    from .arrays import FloatArray

__all__ = ["HorizontalData", "NetworkData", "PartyBlocks", "VerticalData"]


@dataclass
class VerticalData:
    """Parties hold columns ``D_m`` of the same N rows; party 1 holds the labels.

    ``units``, when the parties run outside this process (another backend), is
    where they are (:class:`~vfl.core.units.Units`: the solver opens its
    protocol there); the solver then reads no block here (``blocks`` is None),
    except the hub's own when party 1 is the hub (private stacking's active
    party: ``blocks`` is ``[D_1]``).
    """

    blocks: list[Any] | None  # each party's D_m: dense, sparse or column blocks
    y: FloatArray
    #: the run's :class:`~vfl.core.units.Units` when the parties are elsewhere (None: here)
    units: Any = None

    def cut(self, first: int, stop: int, test: Sequence[Any] | None = None) -> UnitData:
        """Parties ``first .. stop - 1``: their blocks (and held-out blocks ``test[m]``)."""
        assert self.blocks is not None, "the parties' blocks are elsewhere"
        return UnitData(
            first,
            stop,
            len(self.blocks),
            tuple(self.blocks[first:stop]),
            None if test is None else tuple(test[first:stop]),
        )

    def elsewhere(self, units: Any, first: int = 0) -> VerticalData:
        """The data as the coordinator holds it with the parties ``first ..`` on ``units``:
        the labels, and the blocks of the parties before ``first`` (a hub that is a party)."""
        assert self.blocks is not None, "the parties' blocks are elsewhere"
        return VerticalData(self.blocks[:first] or None, self.y, units=units)


class _Scoring(Protocol):
    def test_products(self, test: Sequence[Any] | None) -> list[FloatArray]: ...


class PartyBlocks:
    """The runner's hooks for a vertical solver whose party m holds the block ``x[m]`` of the
    model and which counts ``epoch``s (ADMM sharing, FDML SGD): a margin is the sum over
    parties of ``D_m x_m`` (Hu et al. 2019, eq. (1)). The solver's ``parties`` (its seam to
    wherever the parties run) score the test rows: each sends ``B_m x_m``."""

    #: what the solver that mixes this in has: its epoch count, its seam to the parties
    #: (which scores test rows) and its training margins
    epoch: int
    parties: _Scoring
    if TYPE_CHECKING:  # declared for mypy only: the solver's own method must not be shadowed

        def margins(self) -> FloatArray: ...

    #: to score a test row, every party sends its share ``B_m x_m`` (one value)
    inference = Inference(
        1,
        "each party holds its columns of a test row and its block x_m of "
        "the model: it sends its share B_m x_m per row to the hub, which "
        "sums them (Hu et al. 2019, eq. (1))",
    )

    @property
    def iteration(self) -> int:
        return self.epoch

    def train_margins(self) -> np.ndarray:
        return self.margins()

    def decision_function(self, test: Sequence[Any] | None) -> np.ndarray:
        """Margins on held-out rows: the sum of the parties' ``B_m x_m`` (``test``: the
        held-out blocks, where this process holds them)."""
        margins: FloatArray = np.sum(self.parties.test_products(test), axis=0)
        return margins


@dataclass
class HorizontalData:
    """Providers hold rows: ``A[i]`` is provider i's ``(m, d)`` sample matrix, ``b[i]`` its labels.

    ``public`` is an optional held-out ``(A0, b0)`` treated as public (e.g.
    DP-ADMM's pre-training samples). ``units``, when the providers run
    outside this process (another backend), is where they are; ``A`` and ``b``
    are then None here.
    """

    A: np.ndarray | None
    b: np.ndarray | None
    public: tuple[np.ndarray, np.ndarray] | None = None
    #: the run's :class:`~vfl.core.units.Units` when the providers are elsewhere
    units: Any = None

    def cut(self, first: int, stop: int, test: Sequence[Any] | None = None) -> UnitData:
        """Providers ``first .. stop - 1``: their rows and labels."""
        assert self.A is not None and self.b is not None, "the providers' rows are elsewhere"
        return UnitData(first, stop, len(self.A), (self.A[first:stop], self.b[first:stop]))

    def elsewhere(self, units: Any, first: int = 0) -> HorizontalData:
        """The trainer's data with the providers on ``units``: the public rows alone."""
        return HorizontalData(None, None, public=self.public, units=units)


@dataclass
class NetworkData:
    """Agents hold rows on an undirected connected graph (no centre).

    ``adjacency`` is the symmetric 0/1 ``scipy.sparse`` CSR matrix of the
    graph; ``A[i]``/``b[i]`` agent i's samples; ``x0`` the common start
    ``(N, d)``; ``x_star`` the central optimum of the same objective.
    ``units``, when the agents run outside this process (another backend), is
    where they are; ``A`` and ``b`` are then None here.
    """

    adjacency: Any
    A: np.ndarray | None
    b: np.ndarray | None
    x0: np.ndarray
    x_star: np.ndarray | None = None
    #: the run's :class:`~vfl.core.units.Units` when the agents are elsewhere
    units: Any = None

    def cut(self, first: int, stop: int, test: Sequence[Any] | None = None) -> UnitData:
        """Agents ``first .. stop - 1``: their samples and labels."""
        assert self.A is not None and self.b is not None, "the agents' rows are elsewhere"
        return UnitData(first, stop, len(self.A), (self.A[first:stop], self.b[first:stop]))

    def elsewhere(self, units: Any, first: int = 0) -> NetworkData:
        """The solver's data with the agents on ``units``: the graph, ``x^0`` and ``x*``."""
        return NetworkData(self.adjacency, None, None, self.x0, self.x_star, units=units)
