"""Algorithms of the ADMM family (pure numpy/scipy: no files, no printing).

- :class:`ADMMSharing`: Hu et al., Algorithm 1, updates (6)-(8).
- :class:`ConsensusADMM`, :class:`ConsensusADMMPerturbed`, :class:`DPADMM`:
  Huang et al.'s Algorithms 1, 2 and 3 over horizontally partitioned data
  (:mod:`.consensus`), with their batched local solvers (:mod:`.local_solvers`)
  and the centralized solves for D_w and the optimum (:mod:`.pretrain`).
- :class:`Objective` and the losses shared by every solver.
"""

from .consensus import DPADMM, ConsensusADMM, ConsensusADMMPerturbed, split_providers
from .losses import LOSSES, LogisticLoss, Loss, SquaredLoss, get_loss
from .objective import REDUCTIONS, Objective
from .pretrain import central_solve, consensus_optimum, pretrain_dw
from .sharing import NOISE_FORMS, ADMMSharing, BlockSolver, EpochStats

__all__ = [
    "ADMMSharing",
    "BlockSolver",
    "ConsensusADMM",
    "ConsensusADMMPerturbed",
    "DPADMM",
    "EpochStats",
    "LOSSES",
    "NOISE_FORMS",
    "LogisticLoss",
    "Loss",
    "Objective",
    "REDUCTIONS",
    "SquaredLoss",
    "central_solve",
    "consensus_optimum",
    "get_loss",
    "pretrain_dw",
    "split_providers",
]
