"""``vfl audit``: a white-box Monte-Carlo audit of the mechanism a run uses.

For each neighbouring pair ``(D, D')`` the solver states
(:meth:`~vfl.core.solver.Solver.neighbours`), the mechanism runs ``K`` times
on ``D`` with fresh noise; alongside, a solver on ``D'`` is teacher-forced
to consume the same released transcript (every release goes through
:meth:`~vfl.core.solver.Solver.release`, whose observer hook
:mod:`.transcripts` sets). Both see the same public history, so for every
release the exact mean under ``D`` and under ``D'`` is known, and

    L = sum over releases of log p_D(o) - log p_D'(o)

is one exact sample of the transcript's privacy loss under ``D``; so is each
run's realised GDP mu, ``sqrt(sum ||m - m'||^2 / sigma^2)``, for Gaussian
releases. The same with the roles swapped gives samples under ``D'``. The
``K`` runs go through the mechanism together, with a leading axis of runs
(chunked by memory).

From them (:mod:`vfl.privacy.audit`): for Gaussian releases the GDP estimator
(:mod:`vfl.privacy.audit.gdp`, under its stated and tested assumption), else
one-sided bounds on ``delta(eps)`` at each claimed epsilon. REFUTED when a
lower bound exceeds the claimed delta, PASS (not refuted; not a proof)
otherwise, with the confidence holding over the whole family of pairs,
directions and claims (:func:`audit_config`).

Claims audited: the run's guarantee (``epsilon_tight``, from the enforced
sensitivities) and its profile, and, where the paper has one, the paper's own
claim (``epsilon_paper``) and the solver's other claims.
"""

from __future__ import annotations

from .driver import BOUNDS, MAX_AUDIT_RUNS, SAMPLERS, audit_config
from .report import AuditReport, PairAudit, audit_lines, write_audit
from .table import audit_markdown, audit_table, refuted_by_profile, table_lines
from .transcripts import Probe, Recorder

__all__ = [
    "AuditReport",
    "BOUNDS",
    "MAX_AUDIT_RUNS",
    "PairAudit",
    "Probe",
    "Recorder",
    "SAMPLERS",
    "audit_config",
    "audit_lines",
    "audit_markdown",
    "audit_table",
    "refuted_by_profile",
    "table_lines",
    "write_audit",
]
