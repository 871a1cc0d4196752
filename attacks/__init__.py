"""Attacks that measure what each party of a vertical run learns, and what DP lets it learn.

Pure numpy/scipy on arrays a party holds (no files, no solver): every random
draw from a passed Generator. Label inference by a passive party from what it
receives (:mod:`.label`: Li et al. 2021's norm and direction scoring, Fu et
al. 2022's model completion with a few known labels); feature inference by
party 1 from the shares it receives with a public auxiliary set
(:func:`.label.feature_reconstruction`); the statistics every attack reports
(:mod:`.stats`: AUC with DeLong's interval, the ceiling an (epsilon,
delta)-DP guarantee allows, an empirical epsilon lower bound).
"""

from .label import MIN_KNOWN, feature_reconstruction, label_direction, label_norm, model_completion
from .stats import Outcome, auc, ceiling_auc, delong_ci, epsilon_lower, outcome

#: the attacks by name: who attacks (``"passive"``: a passive party, on what it receives
#: that depends on the labels; ``"party 1"``: on what it receives from a passive party)
ATTACKS = {
    "label-norm": "passive",
    "label-direction": "passive",
    "model-completion": "passive",
    "feature-reconstruction": "party 1",
}

__all__ = [
    "ATTACKS",
    "MIN_KNOWN",
    "Outcome",
    "auc",
    "ceiling_auc",
    "delong_ci",
    "epsilon_lower",
    "feature_reconstruction",
    "label_direction",
    "label_norm",
    "model_completion",
    "outcome",
]
