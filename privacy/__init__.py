"""Privacy accounting for private learning over distributed features.

- :mod:`.paper`: Hu et al.'s Lemma 1, Theorem 1 and Corollary 1 as stated;
- :mod:`.moments`: the DP-ADMM moments accountant (Huang et al., Theorem 2);
- :mod:`.accountant`: tight PLD / RDP accounting via Google's dp-accounting;
- :mod:`.compare`: one Gaussian mechanism under every analysis (``vfl privacy``).

Every epsilon refers to the neighbouring relation :data:`NEIGHBOURING`.
"""

from .accountant import (
    ACCOUNTANTS,
    calibrate_sigma,
    composed_gaussian_epsilon,
    delta_of,
    epsilon_curve,
    epsilon_of,
    gaussian_events,
    laplace_event,
)
from .compare import ANALYSES, epsilons_for_sigma, sigmas_for_epsilon, split_delta
from .moments import dp_admm_epsilon
from .paper import (
    NEIGHBOURING,
    corollary1,
    data_dependent_sensitivity,
    lemma1_sensitivity,
    theorem1_epsilon,
    theorem1_sigma,
)

__all__ = [
    "ACCOUNTANTS",
    "ANALYSES",
    "epsilons_for_sigma",
    "sigmas_for_epsilon",
    "split_delta",
    "NEIGHBOURING",
    "calibrate_sigma",
    "composed_gaussian_epsilon",
    "corollary1",
    "data_dependent_sensitivity",
    "delta_of",
    "dp_admm_epsilon",
    "epsilon_curve",
    "epsilon_of",
    "gaussian_events",
    "laplace_event",
    "lemma1_sensitivity",
    "theorem1_epsilon",
    "theorem1_sigma",
]
