"""Which metric columns a run releases and which are diagnostic (exact private values)."""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Protocol

__all__ = ["ALWAYS_RELEASED", "DIAGNOSTIC", "RELEASED", "TEST_COLUMNS", "column_kinds"]

RELEASED, DIAGNOSTIC = "released", "diagnostic"
#: columns that depend only on public quantities (the iteration, the noise scales and
#: enforced sensitivities that the accounting composes)
#: columns computed from public quantities only: the iteration, the accountant's numbers, and
#: the communication (a function of the protocol and the public sizes N, M, d and the graph)
ALWAYS_RELEASED = (
    "epoch",
    "epsilon_tight",
    "delta_tight",
    "epsilon_paper",
    "delta_paper",
    "delta_labels",
    "messages",
    "bytes",
)
#: columns scored on the test rows (``fnmatch`` patterns)
TEST_COLUMNS = ("test_*",)


class _Declares(Protocol):
    """What a solver class declares about its columns (:class:`~vfl.core.solver.Solver`)."""

    released_columns: tuple[str, ...]
    diagnostic_columns: tuple[str, ...]


def column_kinds(
    cls: _Declares, columns: Iterable[str], private: bool, *, test_rows_private: bool = False
) -> dict[str, str]:
    """``released`` or ``diagnostic`` for each of ``columns`` of a run of ``cls``.

    In a run without privacy everything is exact and nothing is protected:
    every column is ``released``. In a private run a column is released only
    when it is computed from public quantities (:data:`ALWAYS_RELEASED`,
    further claimed epsilons) or the solver declares it in
    ``released_columns``, and not in its ``diagnostic_columns``; training
    losses, objectives, residuals, timings and the rest use exact private
    values and are ``diagnostic``. A column scored on the test rows
    (:data:`TEST_COLUMNS`) is released only when those rows are not records
    the relation protects (``test_rows_private`` False: the published test
    file, a separate test file).
    """
    if not private:
        return {c: RELEASED for c in columns}
    patterns = (*ALWAYS_RELEASED, "epsilon_*", *cls.released_columns)

    def released(c: str) -> bool:
        return (
            any(fnmatchcase(c, p) for p in patterns)
            and not any(fnmatchcase(c, p) for p in cls.diagnostic_columns)
            and not (test_rows_private and any(fnmatchcase(c, p) for p in TEST_COLUMNS))
        )

    return {c: RELEASED if released(c) else DIAGNOSTIC for c in columns}
