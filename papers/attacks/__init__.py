"""Attacks against each party of vertical FL, with and without label and feature DP.

vfl's own study, not a paper's figure: for each vertical method
(ADMM sharing, FDML SGD, private stacking) on a9a, what a passive party learns
of the labels from the messages it receives (Li et al. 2021's norm and
direction scoring, Fu et al. 2022's model completion) against the label
epsilon, and what party 1 learns of a passive party's features from its
shares (feature reconstruction with a public auxiliary set) against the
feature epsilon; each beside the ceiling its guarantee allows, the
undefended point and the task's test log loss. The runs, the attacks and the
drawing are in :mod:`vfl.papers.attacks.figures`.
"""

from vfl.papers.spec import Figure, Paper

#: method -> its config (undefended as written; the figure sets the privacy of each point)
METHODS = {"admm_sharing": "admm-a9a", "fdml_sgd": "fdml-a9a", "private_stacking": "stacking-a9a"}

PAPER = Paper(
    key="attacks",
    title="Attacks on vertical FL: label inference and feature reconstruction vs epsilon",
    source="vfl's own study: Li et al. 2021, Fu et al. 2022 attacks; the ceiling of (epsilon, delta)-DP",
    module="vfl.papers.attacks.figures",
    figures=(
        Figure(
            "attacks",
            "attack AUC vs epsilon per vertical method, both directions (labels "
            "towards the passive parties, features towards party 1), with the ceiling, the "
            "undefended point and the test log loss",
            configs=tuple(METHODS.values()),
            draw="draw",
        ),
    ),
)
