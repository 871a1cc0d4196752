"""Reference methods every distributed run is compared with.

- :func:`central_optimum`: problem (1) solved centrally by an independent
  Newton-type solver (the optimum F* for suboptimality).
- :func:`fit_sklearn_baseline`: scikit-learn on all features or on the
  active party's features only, with the same regularization.
- :class:`FDMLSGD`: the SGD baseline of Hu et al.'s Figs 1-2 (FDML, Hu et
  al. 2019): mini-batch SGD over distributed features.
"""

from .central import CentralSolution, central_optimum
from .sgd import FDMLSGD, LR_SCHEDULES
from .sklearn_lr import fit_sklearn_baseline, sklearn_estimator

__all__ = [
    "CentralSolution",
    "FDMLSGD",
    "LR_SCHEDULES",
    "central_optimum",
    "fit_sklearn_baseline",
    "sklearn_estimator",
]
