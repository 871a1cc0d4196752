"""Algorithms of the ADMM family (pure numpy/scipy: no files, no printing).

- :class:`ADMMSharing`: Hu et al., Algorithm 1, updates (6)-(8).
- :class:`Objective` and the losses shared by every solver.
"""

from .losses import LOSSES, LogisticLoss, Loss, SquaredLoss, get_loss
from .objective import REDUCTIONS, Objective
from .sharing import NOISE_FORMS, ADMMSharing, BlockSolver, EpochStats

__all__ = [
    "ADMMSharing",
    "BlockSolver",
    "EpochStats",
    "LOSSES",
    "NOISE_FORMS",
    "LogisticLoss",
    "Loss",
    "Objective",
    "REDUCTIONS",
    "SquaredLoss",
    "get_loss",
]
