"""Hu, Liu, Kong, Niu 2019: ADMM sharing over features held by different parties.

"Learning Privacy-Preserving Models over Distributed Features" (the
NeurIPS workshop and the ICDCS 2019 versions), Sec. 5: ADMM sharing against
FDML SGD on a9a and gisette, and the cost of its Gaussian noise. The figure
code is in :mod:`vfl.papers.hu.figures`.
"""

from vfl.papers.spec import Figure, Paper

DATASETS = ("a9a", "gisette")
_FIG2 = tuple(f"fig2-{d}" for d in DATASETS)

PAPER = Paper(
    key="hu",
    title="Hu, Liu, Kong, Niu 2019, ADMM sharing over distributed features",
    source="Hu et al. 2019, Sec. 5 (a9a and gisette, 2 parties)",
    module="vfl.papers.hu.figures",
    figures=(
        Figure("fig1", "Figs. 1a/2a: ADMM sharing vs FDML SGD, objective and test loss vs epoch",
               configs=tuple(f"fig1-{d}-{m}" for d in DATASETS for m in ("admm", "sgd"))),
        Figure("bytes", "Figs. 1a/2a against the bytes sent: test loss vs payload, ADMM sharing "
               "vs FDML SGD, and the bytes each needs for the same test loss (not in the paper)",
               configs=tuple(f"fig1-{d}-{m}" for d in DATASETS for m in ("admm", "sgd"))),
        Figure("fig2", "Figs. 1b/2b: test loss vs epoch at each noise level", configs=_FIG2),
        # the final points of fig2's sweeps
        Figure("fig3", "Fig. 3: final test loss vs noise level", configs=_FIG2),
        Figure("forms", "final test loss under each reading of the noise (not in the paper)",
               configs=_FIG2),
        Figure("privacy", "test loss vs target epsilon: the paper's accounting vs sound ones "
               "(not in the paper)",
               configs=("privacy-a9a", "privacy-a9a-column", "privacy-a9a-row")),
    ),
)
