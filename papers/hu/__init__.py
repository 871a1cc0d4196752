"""Hu, Liu, Kong, Niu 2019: ADMM sharing over features held by different parties.

"Learning Privacy-Preserving Models over Distributed Features" (the
NeurIPS workshop and the ICDCS 2019 versions), Sec. 5: ADMM sharing against
FDML SGD on a9a and gisette, and the cost of its Gaussian noise. Each
figure is declared here as data (panels, curves, reference lines, CSVs);
:mod:`vfl.papers.hu.figures` runs the configs and sweeps and holds what is
the paper's own computation: the settling epoch, the bytes to a target loss,
and the sweep panels (drawn by the shared sweep plots of :mod:`vfl.plots`).
"""

from vfl.papers.spec import Curve, Figure, Layout, Panel, Paper, Reference, Table

DATASETS = ("a9a", "gisette")
_FIG1 = tuple(f"fig1-{d}-{m}" for d in DATASETS for m in ("admm", "sgd"))
_FIG2 = tuple(f"fig2-{d}" for d in DATASETS)
_PRIVACY = ("privacy-a9a", "privacy-a9a-column", "privacy-a9a-row")
_LOSS = "test log loss (nats per sample)"
#: the two methods of Figs. 1a/2a: config suffix -> (legend, colour)
METHODS = {"admm": ("ADMM sharing", "C0"), "sgd": ("FDML SGD", "C3")}


def _sklearn(config: str) -> tuple[Reference, ...]:
    """The sklearn references of Fig. 3: all features, and party 1's features only."""
    return (
        Reference(config, "sklearn_all_features", "test_logloss", "sklearn, all features"),
        Reference(config, "sklearn_local_only", "test_logloss", "sklearn, party 1 only", "0.45", ":"),
    )


def _methods(dataset: str, column: str, **style) -> tuple[Curve, ...]:
    return tuple(Curve(f"fig1-{dataset}-{m}", column, label, color, **style) for m, (label, color) in METHODS.items())


def _fig1_panels(dataset: str) -> tuple[Panel, ...]:
    """Fig. 1a (2a): the objective gap (log) and the test loss against the epoch."""
    return (
        Panel(
            f"objective-{dataset}",
            _methods(dataset, "suboptimality", floor=1e-16),
            xlabel="epoch",
            ylabel="(F(x) - F*) / F*",
            yscale="log",
            title="{dataset}: objective gap",
        ),
        Panel(
            f"loss-{dataset}",
            _methods(dataset, "test_logloss"),
            xlabel="epoch",
            ylabel=_LOSS,
            title="{dataset}: test log loss",
            references=_sklearn(f"fig1-{dataset}-admm"),
            ylim="loss_zoom",
        ),
    )


def _sweep_panels(which: str, draw: str, title: str) -> tuple[Panel, ...]:
    """One panel per dataset of a noise sweep, drawn by the shared sweep plot ``draw``."""
    level = "levels" if which == "fig2" else "final"
    return tuple(
        Panel(
            name,
            (Curve(name, "test_logloss", "", aggregate=level),),
            draw=draw,
            title="{dataset}: " + title,
            legend=None,
        )
        for name in _FIG2
    )


def _sweep_tables(which: str) -> tuple[Table, ...]:
    rows = "levels_table" if which == "fig2" else "final_table"
    return (
        *(Table(f"{which}-{name.removeprefix('fig2-')}.csv", rows=rows, configs=(name,)) for name in _FIG2),
        Table(f"{which}-references.csv", rows="references", configs=_FIG2),
    )


PAPER = Paper(
    key="hu",
    title="Hu, Liu, Kong, Niu 2019, ADMM sharing over distributed features",
    source="Hu et al. 2019, Sec. 5 (a9a and gisette, 2 parties)",
    module="vfl.papers.hu.figures",
    figures=(
        Figure(
            "fig1",
            "Figs. 1a/2a: ADMM sharing vs FDML SGD, objective and test loss vs epoch",
            configs=_FIG1,
            layouts=(Layout("fig1", tuple(p for d in DATASETS for p in _fig1_panels(d)), rows=2, size=(7.0, 5.4)),),
            tables=(
                *(Table(f"{name}.csv", rows="metrics", configs=(name,)) for name in _FIG1),
                Table("fig1-references.csv", rows="references", configs=tuple(f"fig1-{d}-admm" for d in DATASETS)),
                Table("fig1-summary.csv", rows="settling_table"),
            ),
        ),
        Figure(
            "bytes",
            "Figs. 1a/2a against the bytes sent: test loss vs payload, ADMM sharing "
            "vs FDML SGD, and the bytes each needs for the same test loss (not in the paper)",
            configs=_FIG1,
            layouts=(
                Layout(
                    "bytes",
                    tuple(
                        Panel(
                            d,
                            _methods(d, "test_logloss"),
                            x="bytes",
                            xscale="log",
                            draw="bytes_panel",
                            xlabel="payload sent, all parties (MB, float64)",
                            ylabel=_LOSS,
                            title="{dataset}: test loss vs bytes",
                        )
                        for d in DATASETS
                    ),
                ),
            ),
            tables=(Table("bytes.csv", rows="bytes_table"),),
        ),
        Figure(
            "fig2",
            "Figs. 1b/2b: test loss vs epoch at each noise level",
            configs=_FIG2,
            layouts=(Layout("fig2", _sweep_panels("fig2", "sweep_curves", "test loss under noise"), size=(7.0, 2.9)),),
            tables=_sweep_tables("fig2"),
        ),
        # the final points of fig2's sweeps
        Figure(
            "fig3",
            "Fig. 3: final test loss vs noise level",
            configs=_FIG2,
            layouts=(Layout("fig3", _sweep_panels("fig3", "sweep_final", "final test loss"), size=(7.0, 2.9)),),
            tables=_sweep_tables("fig3"),
        ),
        Figure(
            "forms",
            "final test loss under each reading of the noise (not in the paper)",
            configs=_FIG2,
            layouts=(
                Layout(
                    "forms",
                    tuple(
                        Panel(
                            name,
                            (Curve(name, "test_logloss", "", aggregate="final"),),
                            draw="noise_forms",
                            title="{dataset}: noise forms",
                            legend=None,
                        )
                        for name in _FIG2
                    ),
                    size=(7.0, 3.1),
                ),
            ),
            tables=(Table("forms.csv", rows="forms_table"),),
        ),
        Figure(
            "privacy",
            "test loss vs target epsilon: the paper's accounting vs sound ones (not in the paper)",
            configs=_PRIVACY,
            layouts=(
                Layout(
                    "privacy",
                    (
                        Panel(
                            "privacy",
                            tuple(Curve(name, "test_logloss", "", aggregate="final") for name in _PRIVACY),
                            draw="privacy_costs",
                            title="{dataset}: test loss vs epsilon",
                            legend=None,
                        ),
                    ),
                    size=(4.2, 4.0),
                ),
            ),
            tables=(
                Table("privacy.csv", rows="privacy_table"),
                Table("privacy-references.csv", rows="references", configs=("privacy-a9a",)),
            ),
        ),
    ),
)
