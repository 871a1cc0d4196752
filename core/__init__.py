"""The core every layer and every solver family imports.

- the problem: :mod:`.objective` (Objective), :mod:`.losses`, :mod:`.metrics`;
- preprocessing of raw records (:mod:`.preprocessing`) and exact noise
  (:mod:`.sampling`);
- the solver contract (:mod:`.solver`), typed parameters (:mod:`.params`),
  user-facing errors (:mod:`.errors`) and the privacy ledger (:mod:`.ledger`);
- which records a neighbouring relation is stated on (:mod:`.relations`).

Nothing here imports from another ``vfl`` part except :mod:`vfl.privacy`'s
accountant, which the ledger calls, so algorithms, datasets, experiments and
the CLI can all depend on it without cycles. Solver families (``admm``,
``decentralized``, ``stacking``, ``baselines``) import the core and never
each other.
"""

from .errors import ConfigError, DataError, DivergedError, PartitionError, VFLError

__all__ = ["ConfigError", "DataError", "DivergedError", "PartitionError", "VFLError"]
