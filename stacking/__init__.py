"""Private stacking over vertically partitioned features (one release per passive party).

- :mod:`.mechanism`: local fits, enforced sensitivities, calibration of the
  noise to a target (epsilon, delta), and party 1's fusion of the noisy shares;
- :mod:`.party`: each passive party's side of the round (:class:`Passive`)
  behind the :class:`Passives` seam (in this process, or where the blocks are);
- :mod:`.solver`: the registered solver ``private_stacking``
  (:class:`PrivateStacking`, party 1), its neighbouring relation and its audit pairs.

Pure computation (numpy/scipy): no files, no printing, no global state.
"""

from .mechanism import (
    GTOL,
    FusionModel,
    base_rate_logit,
    fit_logistic,
    fuse,
    gdp_mu,
    model_sensitivity,
    moments_sensitivity,
    noise_scales,
    share_sensitivity,
    sure_ridge,
)
from .party import PASSIVES_PROTOCOL, Passive, Passives, PassiveSpec
from .private_stacking import PrivateStacking
from .statement import NEIGHBOURS

__all__ = [
    "GTOL",
    "NEIGHBOURS",
    "FusionModel",
    "PASSIVES_PROTOCOL",
    "Passive",
    "PassiveSpec",
    "Passives",
    "PrivateStacking",
    "base_rate_logit",
    "fit_logistic",
    "fuse",
    "gdp_mu",
    "model_sensitivity",
    "moments_sensitivity",
    "noise_scales",
    "share_sensitivity",
    "sure_ridge",
]
