"""Privacy accounting for private learning over distributed features.

- :mod:`.paper`: Hu et al.'s Lemma 1, Theorem 1 and Corollary 1 as stated;
- :mod:`.moments`: the DP-ADMM moments accountant (Huang et al., Theorem 2);
- :mod:`.accountant`: tight PLD / RDP accounting via Google's dp-accounting;
- :mod:`.compare`: one Gaussian mechanism under every analysis (``vfl privacy``);
- :mod:`.audit`: the white-box Monte-Carlo audit's statistics (``vfl audit``);
- :mod:`.ldp`: Xiao et al.'s local DP of decentralized optimization (Theorems 2.2, 2.3).

Every epsilon refers to the neighbouring relation :data:`NEIGHBOURING`.

The names below are loaded from their submodule when first used (PEP 562), so
that a party's process, which imports :mod:`.ldp` or :mod:`.random_search`,
does not import :mod:`.accountant`'s dp-accounting and scipy.stats (0.7 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .accountant import (
        ACCOUNTANTS,
        calibrate_sigma,
        composed_gaussian_epsilon,
        delta_of,
        epsilon_curve,
        epsilon_of,
        gaussian_events,
        laplace_composition_epsilon,
        laplace_event,
    )
    from .audit import (
        AUDIT_METHODS,
        AuditResult,
        DeltaEstimate,
        LossSummary,
        audit_verdict,
        epsilon_lower_bound,
        estimate_delta,
        gaussian_delta,
        gaussian_log_ratio,
        gaussian_loss_moments,
        hockey_stick_samples,
        laplace_log_ratio,
        one_run_epsilon,
        one_run_p_value,
        release_log_ratio,
        summarize_losses,
        uniform_laplace_log_ratio,
        uniform_laplace_logpdf,
    )
    from .compare import ANALYSES, epsilons_for_sigma, sigmas_for_epsilon

    # Xiao et al.'s local DP of decentralized optimization (Theorems 2.2, 2.3, footnote 1).
    from .ldp import (
        advanced_composition,
        gamma_bound,
        gamma_bound_corrected,
        gamma_exact,
        geometric_schedule,
        interval_log_mass,
        realized_loss,
        worst_case_cumulative,
    )
    from .moments import dp_admm_epsilon
    from .paper import (
        NEIGHBOURING,
        corollary1,
        data_dependent_sensitivity,
        lemma1_sensitivity,
        split_delta,
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
    "laplace_composition_epsilon",
    "epsilon_of",
    "gaussian_events",
    "laplace_event",
    "lemma1_sensitivity",
    "theorem1_epsilon",
    "theorem1_sigma",
    # the white-box audit (vfl.privacy.audit)
    "AUDIT_METHODS",
    "AuditResult",
    "DeltaEstimate",
    "LossSummary",
    "audit_verdict",
    "epsilon_lower_bound",
    "estimate_delta",
    "gaussian_delta",
    "gaussian_log_ratio",
    "gaussian_loss_moments",
    "hockey_stick_samples",
    "laplace_log_ratio",
    "one_run_epsilon",
    "one_run_p_value",
    "release_log_ratio",
    "summarize_losses",
    "uniform_laplace_log_ratio",
    "uniform_laplace_logpdf",
    # Xiao et al.'s local DP of decentralized optimization (vfl.privacy.ldp)
    "advanced_composition",
    "gamma_bound",
    "gamma_bound_corrected",
    "gamma_exact",
    "geometric_schedule",
    "interval_log_mass",
    "realized_loss",
    "worst_case_cumulative",
]

#: the submodules that define the names above, the cheapest to import first: a name loads
#: its own submodule and the cheaper ones before it (dp-accounting only with its users)
_HOMES = ("paper", "moments", "ldp", "audit", "compare", "accountant")


def __getattr__(name: str) -> Any:
    """A public name, imported from its submodule when first asked for (PEP 562)."""
    if name in __all__:
        for home in _HOMES:
            module = importlib.import_module(f".{home}", __name__)
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value  # the next lookup is a plain global
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
