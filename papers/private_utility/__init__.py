"""Private vertical FL, vfl's own study: one-release private stacking against ADMM sharing.

Not a paper's figure: test loss and accuracy against the end-to-end
epsilon for the private methods ``vfl`` offers on vertically partitioned
data, with hyper-parameters tuned on rows declared public. The tuning, the
runs and the drawing are in :mod:`vfl.papers.private_utility.figures`.
"""

from vfl.papers.spec import Figure, Paper

#: dataset -> (private stacking config, ADMM sharing config); the non-private
#: stacking reference is the stacking config without privacy.delta
DATASETS = {
    "a9a": ("private-stacking-a9a", "private-utility-admm-a9a"),
    "adult": ("private-utility-stacking-adult", "private-utility-admm-adult"),
}

PAPER = Paper(
    key="private-utility",
    title="Private vertical FL: one-release stacking vs ADMM sharing, test loss vs epsilon",
    source="vfl's own comparison (README, \"Privacy: what vfl guarantees\")",
    module="vfl.papers.private_utility.figures",
    figures=(
        Figure("utility", "test log loss and accuracy vs epsilon: private stacking, ADMM sharing "
               "(row-level accounting), non-private stacking, party 1 alone, all features",
               configs=tuple(name for pair in DATASETS.values() for name in pair)),
    ),
)
