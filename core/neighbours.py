"""Neighbouring datasets for the audit: a pair under a relation, one unit's data changed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .layouts import VerticalData

__all__ = ["Neighbour", "label_neighbours"]


@dataclass(frozen=True)
class Neighbour:
    """A neighbouring pair for the audit: ``base`` (D) and ``data`` (D'), one unit's data changed.

    ``base`` None means the run's own dataset. A crafted ``base`` (a canary
    record or column written into the run's data) is as much a dataset of the
    relation as the run's own: a guarantee holds for every pair, and the
    worst pairs are what give an audit its power.
    """

    name: str
    kind: str  # "natural" | "candidate" | "adversarial"
    unit: int
    data: Any
    change: str  # what was changed, in words
    base: Any = None
    #: the relation the pair is a neighbour under, whose ledger's claim it audits
    #: (``"features"``: the solver's own; ``"labels"``: one label flipped)
    relation: str = "features"


def label_neighbours(data: VerticalData, rng: np.random.Generator, candidates: int = 4) -> list[Neighbour]:
    """Neighbours under :data:`~vfl.core.relations.LABELS`: a random sample's label flipped
    (natural), and ``candidates`` more of which the audit keeps the one whose releases move
    most (adversarial). Unit 0: the label holder."""
    y = np.asarray(data.y, dtype=float)
    picks = rng.choice(y.size, size=min(y.size, candidates + 1), replace=False)
    out: list[Neighbour] = []
    for n, i in enumerate(picks):
        flipped = y.copy()
        flipped[i] = -flipped[i]
        kind = "natural" if n == 0 else "candidate"
        out.append(
            Neighbour(
                f"label {i} flipped ({kind})",
                kind,
                0,
                VerticalData(data.blocks, flipped),
                f"sample {i}'s label flipped",
                relation="labels",
            )
        )
    return out
