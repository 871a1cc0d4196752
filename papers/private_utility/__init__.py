"""Private vertical FL, vfl's own study: one-release private stacking against ADMM sharing.

Not a paper's figure: test loss and accuracy against the end-to-end
epsilon for the private methods ``vfl`` offers on vertically partitioned
data, with hyper-parameters tuned on rows declared public. The tuning, the
runs and the drawing are in :mod:`vfl.papers.private_utility.figures`.
"""

from vfl.papers.spec import Figure, Layout, Legend, Panel, Paper, Table

#: dataset -> (private stacking config, ADMM sharing config); the non-private
#: stacking reference is the stacking config without privacy.delta
DATASETS = {
    "a9a": ("private-stacking-a9a", "private-utility-admm-a9a"),
    "adult": ("private-utility-stacking-adult", "private-utility-admm-adult"),
}

#: one row per dataset: (metrics column, axis label, title); ``{draws}``: the noise draws
_PANELS = (
    ("test_logloss", "test log loss (nats per sample)", "test log loss{draws}"),
    ("test_accuracy", "test accuracy", "test accuracy"),
)
_NEIGHBOURS = (
    "Neighbours: one row of a passive party's block replaced. Hyper-parameters tuned "
    "on rows declared public (part of the test file, not scored), so the axis is the "
    "whole epsilon."
)

PAPER = Paper(
    key="private-utility",
    title="Private vertical FL: one-release stacking vs ADMM sharing, test loss vs epsilon",
    source="vfl's own comparison (docs/privacy.md)",
    module="vfl.papers.private_utility.figures",
    figures=(
        Figure(
            "utility",
            "test log loss and accuracy vs epsilon: private stacking, ADMM sharing "
            "(row-level accounting), non-private stacking, party 1 alone, all features",
            configs=tuple(name for pair in DATASETS.values() for name in pair),
            layouts=(
                Layout(
                    "utility",
                    tuple(
                        Panel(
                            metric,
                            x="epsilon",
                            xscale="log",
                            draw="utility_panel",
                            xlabel="end-to-end epsilon (delta = 1e-5)",
                            ylabel=ylabel,
                            title="{dataset}: " + title,
                            legend=None,
                        )
                        for metric, ylabel, title in _PANELS
                    ),
                    rows=None,
                    facet="data",
                    size=(7.0, 0.5),
                    row_height=2.7,
                    fields="noise_draws",
                    suptitle=_NEIGHBOURS,
                    suptitle_size=7,
                    legend=Legend("outside lower center", fontsize=7, ncol=3, frame=False),
                ),
            ),
            tables=tuple(
                Table(f"utility{part}-{dataset}.csv", rows=rows, configs=pair)
                for dataset, pair in DATASETS.items()
                for part, rows in (("", "utility_table"), ("-tuning", "tuning_table"))
            ),
        ),
    ),
)
