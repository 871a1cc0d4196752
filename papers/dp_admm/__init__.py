"""Huang, Hu, Chan-Tin, Gong 2019: DP-ADMM over sample-partitioned data.

"DP-ADMM: ADMM-based Distributed Learning with Differential Privacy"
(arXiv 1808.10101), Sec. VI: UCI Adult, 100 providers of 210 rows, T = 100,
10 runs per setting. The grids each figure runs, and the drawing, are in
:mod:`vfl.papers.dp_admm.figures`.
"""

from vfl.papers.spec import Figure, Paper

_L1 = ("dp-admm-alg1", "dp-admm-l1")
_L2 = ("dp-admm-alg1", "dp-admm-l2")
_VS_ALG2 = ("dp-admm-alg1", "dp-admm-alg2", "dp-admm-l2")

PAPER = Paper(
    key="dp-admm",
    title="Huang, Hu, Chan-Tin, Gong 2019, DP-ADMM over sample-partitioned data",
    source="Huang et al. 2019, Sec. VI (UCI Adult, 100 providers)",
    module="vfl.papers.dp_admm.figures",
    figures=(
        Figure("fig1", "Fig. 1: l1, augmented objective vs iteration, DP-ADMM per (eps, delta) "
               "vs Algorithm 1", configs=_L1),
        Figure("fig2", "Fig. 2: l1, test accuracy vs epsilon, one line per delta, Algorithm 1 as "
               "a line", configs=_L1),
        Figure("fig3", "Fig. 3: Fig. 1 for l2", configs=_L2),
        Figure("fig4", "Fig. 4: l2, augmented objective vs iteration, DP-ADMM vs Algorithm 2",
               configs=_VS_ALG2),
        Figure("fig5", "Fig. 5: l2, empirical loss vs iteration, DP-ADMM vs Algorithm 2",
               configs=_VS_ALG2),
        Figure("fig6", "Fig. 6: l2, test accuracy vs epsilon: DP-ADMM, Algorithm 2, Algorithm 1",
               configs=_VS_ALG2),
        Figure("table3", "Table III: time of the 100 iterations, as ratios to the non-private run",
               configs=_VS_ALG2),
    ),
)
