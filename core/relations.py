"""Which records a neighbouring relation is stated on: the file, or the file after a cleaning.

A guarantee covers the raw file when every record maps to a row (a missing or
malformed field takes a public default, :mod:`vfl.datasets.record_parsers`). A paper
reproduction may instead remove records by a public per-record rule before the
mechanism, as the paper did (Huang et al. 2019 drop Adult's records with a
``?``). The mechanism then protects the records of the *cleaned* file, and the
relation has to say so: :meth:`Cleaning.state` turns a solver's relation into
the one the run actually has. Which records were removed depends on the file,
so their number is diagnostic; the rule itself is public.

A vertical run has two relations, each a :class:`Relation`: the *feature*
relation (one sample's row of one passive party's block replaced; its
guarantee is towards party 1, which receives the passive parties' releases)
and the *label* relation :data:`LABELS` (one sample's label flipped; its
guarantee is towards the passive parties, which receive what party 1 derives
from the labels). Which messages depend on the labels, and who receives them,
each protocol declares per call (:attr:`vfl.core.protocol.Call.labels`).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cleaning", "FEATURES", "LABELS", "Relation", "stated_on"]


@dataclass(frozen=True)
class Cleaning:
    """A public per-record rule that removed records before the mechanism.

    ``removed``: which records, in words; ``by``: whose cleaning this
    reproduces (e.g. ``"Huang et al."``), or empty.
    """

    removed: str = "records with a missing or malformed field"
    by: str = ""

    def state(self, relation: str) -> str:
        """``relation`` restated on the cleaned file."""
        who = f", as {self.by} did" if self.by else ""
        return f"{relation}; on the cleaned file ({self.removed} removed before the mechanism{who})"

    def describe(self) -> dict[str, str | None]:
        return {"removed": self.removed, "by": self.by or None}


def stated_on(relation: str, cleaning: Cleaning | None) -> str:
    """The relation a run has: ``relation`` itself, or restated on the cleaned file."""
    return relation if cleaning is None or not relation else cleaning.state(relation)


@dataclass(frozen=True)
class Relation:
    """A neighbouring relation as a typed object: its ``name`` (the ledger it is accounted
    in: ``"features"``, ``"labels"``), whose records it protects (``holder``), towards whom
    the guarantee is stated (``towards``: who receives the values it covers) and the
    relation in words (``statement``)."""

    name: str
    holder: str
    towards: str
    statement: str

    def __str__(self) -> str:
        return self.statement

    def describe(self) -> dict[str, str]:
        return {"relation": self.name, "protects": self.holder, "towards": self.towards, "neighbouring": self.statement}


#: the label relation of every vertical solver (Ghazi et al. 2021, label DP)
LABELS = Relation(
    "labels",
    "party 1's labels (the label holder)",
    "the passive parties (parties 2..M, together)",
    "datasets differing in one sample's label, flipped (y_i -> -y_i); every "
    "party's features and the other labels fixed",
)

#: the name of the feature relation's ledger (each solver states that relation in words)
FEATURES = "features"
