"""Xiao, Ye, Devadas 2019: local differential privacy in decentralized optimization.

"Local Differential Privacy in Decentralized Optimization" (arXiv
1902.06101), App. E: UCI Adult over random G(N, |E|) graphs, 10 runs per
method, 100 iterations. Each figure is declared here as data (App. E's panels, curve
by curve: which config, which metrics.csv column, label and style; the mean
over the runs with its min-max band; the CSVs beside it), drawn by
:mod:`vfl.papers.engine`; :mod:`vfl.papers.ldp.figures` runs the configs and
holds Fig. 1 (eq. (11)'s surface) and the claims' summary.
"""

from vfl.papers.spec import Curve, Figure, Layout, Legend, Panel, Paper, Table


def _accuracy(graph: str) -> list[Curve]:
    return [
        Curve(f"ldp-admm-{graph}", "log10_error", "Algorithm 1 (random penalties)", "C0"),
        Curve(f"ldp-dvp-admm-{graph}", "log10_error", "[42] dual perturbation", "C1"),
        Curve(f"ldp-pp-admm-{graph}", "log10_error", "[43] increasing penalty", "C2"),
        Curve(f"ldp-op-admm-{graph}", "log10_error", "[48] output perturbation", "C3"),
    ]


def _privacy(graph: str) -> list[Curve]:
    return [
        Curve(f"ldp-admm-{graph}", "privacy_loss", "Algorithm 1, realized (Thm 2.2, ex post)", "C0"),
        Curve(f"ldp-admm-{graph}", "privacy_loss_worst", "worst case sum d alpha beta B_inf", "black", "--", band=0),
        Curve(f"ldp-pp-admm-{graph}", "privacy_loss", "[43] (reconstruction)", "C2"),
        Curve(f"ldp-dvp-admm-{graph}", "privacy_loss", "[42] (reconstruction)", "C1"),
    ]


def _nonprivate(graph: str) -> list[Curve]:
    return [
        Curve(f"ldp-random-admm-{graph}", "log10_error", "ADMM, random penalties (Alg. 1 exact step)", "C0"),
        Curve(f"ldp-fixed-admm-{graph}", "log10_error", "ADMM, fixed penalties", "C1", "--"),
        Curve(f"ldp-gd-{graph}", "log10_error", "Algorithm 2 (random weights)", "C2"),
        Curve(f"ldp-dgd-{graph}", "log10_error", "DGD, fixed weights", "C3", "--"),
    ]


#: output figure -> panel -> curves (App. E's figures, curve by curve)
PANELS = {
    "fig2": {"accuracy": _accuracy("n10"), "privacy": _privacy("n10")},
    "figB": {"accuracy": _accuracy("n100"), "privacy": _privacy("n100")},
    "figC": {
        "accuracy": [
            Curve("ldp-noisy-gd-n10e40", "log10_error", "[45] noisy consensus GD (eta = 0.9^k)", "C4"),
            Curve("ldp-gd-minmax-n10e40", "log10_error", "Algorithm 2* (eta = 0.93^k)", "C5"),
            Curve("ldp-admm-n10e40", "log10_error", "Algorithm 1 (D = 10)", "C0"),
        ],
        "privacy": [
            Curve("ldp-noisy-gd-n10e40", "privacy_loss_worst", "[45] (pure Laplace: its worst case)", "C4"),
            Curve("ldp-gd-minmax-n10e40", "privacy_loss", "Algorithm 2*, realized (ex post)", "C5"),
            Curve("ldp-gd-minmax-n10e40", "privacy_loss_worst", "Algorithm 2*, worst case", "C5", ":", band=0),
            Curve("ldp-admm-n10e40", "privacy_loss", "Algorithm 1, realized (ex post)", "C0"),
            Curve("ldp-admm-n10e40", "privacy_loss_worst", "Algorithm 1, worst case", "C0", ":", band=0),
        ],
    },
    "figD-1": {"accuracy": _nonprivate("n10")},
    "figD-2": {"accuracy": _nonprivate("n100")},
}
#: figure -> the output figures it draws
OUTPUTS = {"fig1": [], "fig2": ["fig2"], "figB": ["figB"], "figC": ["figC"], "figD": ["figD-1", "figD-2"]}
_GRAPH = {
    "fig2": "N = 10, |E| = 20",
    "figB": "N = 100, |E| = 200",
    "figC": "N = 10, |E| = 40",
    "figD-1": "N = 10, |E| = 20",
    "figD-2": "N = 100, |E| = 200",
}
_TITLES = {"fig2": "Fig. 2", "figB": "Fig. B", "figC": "Fig. C", "figD-1": "Fig. D-1", "figD-2": "Fig. D-2"}

ACCURACY_NOTE = (
    "Accuracy: log10 of (1/N) sum_i ||x_i^k - x*||_2 / d, mean over the runs with "
    "the min-max band; labels {0,1} as printed (label-0 samples carry no loss), so "
    "test accuracy is not a meaningful metric and is not shown."
)
REALIZED_NOTE = (
    "Privacy: Theorem 2.2's realized loss is ex post and data dependent (evaluated "
    "with the true f_i's interval on this transcript, mean over agents), NOT a "
    "worst-case guarantee; the worst case sum_k d alpha_k beta_k B_inf is a pure-LDP "
    "bound (B_inf = 1/b_i enforced by the data checks)."
)
RECONSTRUCTION_NOTE = (
    "[42]/[43]: reconstructions (d beta_k B_inf / D_i^k + 2 ln(1 + J) "
    "per iteration, J = 2.8/(D b_i)), not the cited papers' theorems; [48] "
    "omitted as in the paper."
)
CAPTIONS = {
    "fig2": f"{ACCURACY_NOTE} {REALIZED_NOTE} {RECONSTRUCTION_NOTE}",
    "figB": f"{ACCURACY_NOTE} {REALIZED_NOTE} {RECONSTRUCTION_NOTE}",
    "figC": (
        f"{ACCURACY_NOTE} {REALIZED_NOTE} [45]: Laplace noise around a point mean, whose "
        "loss is its worst case d eta_k beta_k B_inf."
    ),
    "figD-1": f"Non-private (no noise). {ACCURACY_NOTE}",
    "figD-2": f"Non-private (no noise). {ACCURACY_NOTE}",
}
_YLABEL = {
    "accuracy": "log10 mean distance to x* (diagnostic)",
    "privacy": "cumulative privacy loss, mean over agents (diagnostic)",
}
_WHAT = {"accuracy": "accuracy", "privacy": "privacy loss"}


def _layout(output: str) -> Layout:
    """One output figure: accuracy (and privacy loss) against the iteration, one panel each."""
    panels = tuple(
        Panel(
            name,
            tuple(curves),
            xlabel="iteration k",
            ylabel=_YLABEL[name],
            title=f"{_TITLES[output]} ({_GRAPH[output]}): {_WHAT[name]}",
            legend=Legend("best", fontsize=6.5, framealpha=0.85),
        )
        for name, curves in PANELS[output].items()
    )
    return Layout(output, panels, size=(7.0 if len(panels) == 2 else 4.2, 3.0), caption=CAPTIONS[output])


def _tables(output: str) -> tuple[Table, ...]:
    """The curves' points (mean, min, max over the runs) and, with the paper's claims, the
    last iteration's summary (:func:`vfl.papers.ldp.figures.summary`)."""
    return (
        Table(
            f"{output}.csv",
            layout=output,
            columns=("panel", "curve", "config", "column", "epoch", "mean", "min", "max", "runs"),
            wrap=120,
            header=(
                f"Xiao et al. {_TITLES[output]}, {_GRAPH[output]}: per iteration, the "
                "mean, min and max over the runs of every curve. "
                f"{CAPTIONS[output]}",
            ),
        ),
        Table(
            f"{output}-summary.csv",
            rows="summary",
            wrap=120,
            layout=output,
            header=(
                f"Xiao et al. {_TITLES[output]}: every curve at the last iteration "
                "(mean, min, max over runs) and the paper's claims as measured ratios "
                "(mean = ratio of the means; min/max over runs). Realized losses are "
                "ex post and data dependent, not worst-case guarantees.",
            ),
        ),
    )


def _configs(figure: str) -> tuple[str, ...]:
    return tuple(sorted({c.config for output in OUTPUTS[figure] for curves in PANELS[output].values() for c in curves}))


_SHOWS = {
    "fig1": "Fig. 1: amplification constant gamma(omega, beta), eq. (11) with the exact value",
    "fig2": "Fig. 2 (a)/(b): N = 10, |E| = 20, Algorithm 1 vs [42], [43], [48]: accuracy, privacy",
    "figB": "Fig. B: the same at N = 100, |E| = 200",
    "figC": "Fig. C: N = 10, |E| = 40, Algorithm 2* vs [45] and Algorithm 1: accuracy, privacy",
    "figD": "Figs. D-1/D-2: non-private, random vs fixed parameters (ADMM, GD), N = 10 and 100",
}

PAPER = Paper(
    key="ldp",
    title="Xiao, Ye, Devadas 2019, local DP in decentralized optimization",
    source="Xiao et al. 2019, App. E (UCI Adult, random graphs, 10 runs per method)",
    module="vfl.papers.ldp.figures",
    figures=(
        Figure("fig1", _SHOWS["fig1"], draw="gamma_figure"),
        *(
            Figure(
                name,
                shows,
                configs=_configs(name),
                layouts=tuple(_layout(o) for o in OUTPUTS[name]),
                tables=tuple(t for o in OUTPUTS[name] for t in _tables(o)),
            )
            for name, shows in _SHOWS.items()
            if name != "fig1"
        ),
    ),
)
