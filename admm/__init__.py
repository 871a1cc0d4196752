"""Algorithms of the ADMM family (pure numpy/scipy: no files, no printing).

- :class:`ADMMSharing`: Hu et al., Algorithm 1, updates (6)-(8) (:mod:`.sharing`).
- :class:`ConsensusADMM`, :class:`ConsensusADMMPerturbed`, :class:`DPADMM`:
  Huang et al.'s Algorithms 1, 2 and 3 over horizontally partitioned data
  (:mod:`.consensus`), with their batched local solvers (:mod:`.local_solvers`)
  and the centralized solves for D_w and the optimum (:mod:`.pretrain`).

The objective, losses and metrics every family shares are in :mod:`vfl.core`.
Names load on first use (PEP 562), so importing one solver does not import
the others.
"""

from importlib import import_module

_WHERE = {
    "ADMMSharing": "sharing",
    "BlockSolver": "sharing",
    "NOISE_FORMS": "sharing",
    "ConsensusADMM": "consensus",
    "ConsensusADMMPerturbed": "consensus",
    "DPADMM": "consensus",
    "split_providers": "consensus",
    "central_solve": "pretrain",
    "consensus_optimum": "pretrain",
    "pretrain_dw": "pretrain",
}

__all__ = sorted(_WHERE)


def __getattr__(name):
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
