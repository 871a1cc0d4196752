"""Which records a neighbouring relation is stated on: the file, or the file after a cleaning.

A guarantee covers the raw file when every record maps to a row (a missing or
malformed field takes a public default, :mod:`vfl.datasets.records`). A paper
reproduction may instead remove records by a public per-record rule before the
mechanism, as the paper did (Huang et al. 2019 drop Adult's records with a
``?``). The mechanism then protects the records of the *cleaned* file, and the
relation has to say so: :meth:`Cleaning.state` turns a solver's relation into
the one the run actually has. Which records were removed depends on the file,
so their number is diagnostic; the rule itself is public.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cleaning", "stated_on"]


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
        return (f"{relation}; on the cleaned file ({self.removed} removed before the "
                f"mechanism{who})")

    def describe(self) -> dict:
        return {"removed": self.removed, "by": self.by or None}


def stated_on(relation: str, cleaning: Cleaning | None) -> str:
    """The relation a run has: ``relation`` itself, or restated on the cleaned file."""
    return relation if cleaning is None or not relation else cleaning.state(relation)
