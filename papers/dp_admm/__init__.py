"""Huang, Hu, Chan-Tin, Gong 2019: DP-ADMM over sample-partitioned data.

"DP-ADMM: ADMM-based Distributed Learning with Differential Privacy"
(arXiv 1808.10101), Sec. VI: UCI Adult, 100 providers of 210 rows, T = 100,
10 runs per setting. Each figure is declared here as data: its panels (one
per delta, or per epsilon, of the runs its grid makes), the curves drawn
from each run's statistics over its 10 repeats, the CSVs beside it. The
grids each figure runs, the paper's accountant (epsilon_bar against the
tight epsilon), the accuracy panels and Table III's timing are in
:mod:`vfl.papers.dp_admm.figures`.
"""

from vfl.papers.spec import Curve, Figure, Layout, Legend, Panel, Paper, Reference, Table

_L1 = ("dp-admm-alg1", "dp-admm-l1")
_L2 = ("dp-admm-alg1", "dp-admm-l2")
_VS_ALG2 = ("dp-admm-alg1", "dp-admm-alg2", "dp-admm-l2")

NEIGHBOURS = "one record (a, b) of one provider's dataset replaced by another (m unchanged)"
EPS_NOTE = (
    "epsilon_bar: the paper's moments accountant (Theorem 2, Appendix A), a claim; "
    "epsilon_tight: exact composition of the same Gaussian releases with the "
    "sensitivities the code enforces (dp-accounting's PLD accountant approaches it "
    "from above; epsilon_pld is that accountant's own number)"
)
#: the figures' caption; ``{runs}``: how many runs each point averages
CAPTION = (
    "$\\bar\\epsilon$: the paper's moments accountant (a claim).  $\\epsilon_{{tight}}$: "
    "exact composition of the same Gaussian releases (dp-accounting, PLD).  "
    "Neighbours: one record of one provider replaced.  Mean of {runs} runs; "
)
D11_LABEL = "DP-ADMM iteration, no noise"
#: DP-ADMM at one (epsilon, delta): both of the epsilons it is shown with
EPS_LABEL = (
    "$\\epsilon$={epsilon_per_iteration:g}: $\\bar\\epsilon$={eps_bar:.4f}, $\\epsilon_{{tight}}$={eps_tight:.3g}"
)
_REG = {"l1": "$\\ell_1$", "half_l2sq": "$\\ell_2$"}


def _header(what: str) -> tuple[str, ...]:
    return (
        what,
        "Huang et al. 2019, DP-ADMM: UCI Adult, N = 100 providers x m = 210, "
        "162 public pre-training rows and 9000 test rows from adult.test (the paper "
        "draws them from adult.data), lambda = 0.17, rho = 1, T = 100; "
        "statistics over the 10 runs (repeats) of each setting",
        f"neighbouring datasets: {NEIGHBOURS}",
        EPS_NOTE,
    )


def _final_table(fig: str, reg: str) -> Table:
    """The last iteration of every curve of ``fig``, and the pooled optimum: README's numbers."""
    return Table(
        f"{fig}-final.csv",
        rows="final_table",
        header=_header(
            f"{fig}: the last iteration of every curve ({reg}): its metric and test accuracy over "
            "the runs; the pooled optimum F* of the same objective as the last row"
        ),
    )


def _stats(config: str, column: str, label: str, color, style="-", width=None, **where):
    """A curve of a run's statistics over its repeats (metrics_stats.csv), band min-max."""
    return Curve(config, column, label, color, style, band=0.13, aggregate="stats", where=where, width=width)


def _convergence(fig: str, shows: str, sweep: str, reg: str, noiseless: bool) -> Figure:
    """Figs. 1 and 3: expected augmented objective vs iteration, one panel per delta."""
    m = "augmented_objective"
    curves = (
        _stats("dp-admm-alg1", m, "Algorithm 1 (non-private)", "black", width=1.6),
        *((_stats(sweep, m, D11_LABEL, "0.45", "--", noise=False),) if noiseless else ()),
        _stats(sweep, m, EPS_LABEL, "viridis:epsilon_per_iteration", noise=True),
    )
    panel = Panel(
        "delta",
        curves,
        xlabel="iteration k",
        ylabel="expected augmented objective (diagnostic)",
        title="$\\delta = {delta_tex}$",
        yscale="log",
        positive_x=True,
        references=(
            Reference("dp-admm-alg1", "central", "objective", "optimum F* (pooled rows)", style="-.", width=0.8),
        ),
        legend=Legend("upper right", fontsize=5.6, framealpha=0.85),
    )
    number = fig.replace("fig", "Fig. ")
    return Figure(
        fig,
        shows,
        configs=(_L1 if sweep.endswith("l1") else _L2),
        layouts=(
            Layout(
                fig,
                (panel,),
                rows=2,
                columns=2,
                size=(7.2, 6.2),
                sharex=True,
                sharey=True,
                outer_labels=True,
                facet="delta",
                fields="fields",
                suptitle=f"{number}: DP-ADMM vs the non-private algorithm "
                f"({_REG[reg]}-regularized logistic regression, Adult)",
                caption=CAPTION + "band: min-max.",
                caption_width=0,
            ),
        ),
        tables=(
            Table(
                f"{fig}.csv",
                rows="long_table",
                header=_header(
                    f"{fig}: expected augmented objective sum_i f_i(w_bar_i^k) + ||w_bar_i^k - "
                    f"w_bar^k|| per iteration ({reg}); F* = {{central_objective:.10g}}"
                ),
            ),
            _final_table(fig, reg),
        ),
    )


def _accuracy(fig: str, shows: str, sweep: str, reg: str, alg2: bool) -> Figure:
    """Figs. 2 and 6: final test accuracy vs the paper's epsilon_bar and vs the tight epsilon
    (:func:`~vfl.papers.dp_admm.figures.accuracy_panel` draws a panel: the epsilons are
    recomputed per run); Fig. 6 adds a zoom onto DP-ADMM and Algorithm 1."""
    acc = "test_accuracy"
    dp = Curve(sweep, acc, "DP-ADMM", where={"noise": True})
    both = (dp, *((Curve("dp-admm-alg2", acc, "Alg. 2", style="--"),) if alg2 else ()))
    refs = (
        Reference(
            "dp-admm-alg1", "central", acc, "optimum of the same objective (pooled rows): {value:.4f}", style="-."
        ),
        Reference("dp-admm-alg1", "majority", acc, "majority class: {value:.4f}", "0.45", ":"),
    )
    ylabel = "test accuracy, mean of {runs} runs"
    bar = dict(
        x="epsilon_bar",
        xscale="log",
        draw="accuracy_panel",
        references=refs,
        xlabel="$\\bar\\epsilon$ after T iterations (paper's accountant, a claim)",
    )
    tight = dict(
        x="epsilon_tight",
        xscale="log",
        draw="accuracy_panel",
        references=refs,
        xlabel="$\\epsilon_{tight}$ after T iterations (dp-accounting, same $\\delta$)",
        title="vs the tight $\\epsilon$ of the same noise",
        legend=None,
    )
    panels = (
        Panel(
            "epsilon_bar",
            both,
            title="vs the paper's $\\bar\\epsilon$",
            ylabel=ylabel,
            legend=None if alg2 else Legend("lower right", 5.4, 0.85),
            **bar,
        ),
        *(
            (
                Panel(
                    "zoom",
                    (dp,),
                    title="vs the paper's $\\bar\\epsilon$: DP-ADMM, zoom",
                    ylabel=ylabel,
                    legend=None,
                    ylim="accuracy_zoom",
                    **bar,
                ),
            )
            if alg2
            else ()
        ),
        Panel(
            "epsilon_tight",
            (dp,) if alg2 else both,
            ylabel=ylabel if alg2 else "",
            ylim="accuracy_zoom" if alg2 else None,
            **tight,
        ),
    )
    who = (
        "DP-ADMM, the non-private and the existing private algorithm"
        if alg2
        else "DP-ADMM vs the non-private algorithm"
    )
    number = fig.replace("fig", "Fig. ")
    return Figure(
        fig,
        shows,
        configs=_VS_ALG2 if alg2 else _L1,
        layouts=(
            Layout(
                fig,
                panels,
                size=(3.6 * len(panels) + (1.9 if alg2 else 0.0), 3.4),
                sharey=not alg2,
                caption=CAPTION + "bars: +-1 std.",
                caption_width=0,
                suptitle=f"{number}: accuracy of {who} ({_REG[reg]}-regularized logistic regression)",
                legend=Legend("outside right center", 5.6, frame=False) if alg2 else None,
            ),
        ),
        tables=(
            Table(
                f"{fig}.csv",
                rows="accuracy_table",
                header=_header(
                    f"{fig}: final test accuracy (global w^T) per (algorithm, epsilon, delta), "
                    f"{reg}; the last rows are the reference lines (mean over "
                    "the same 10 splits)"
                ),
            ),
        ),
    )


def _versus_alg2(fig: str, shows: str, metric: str, ylabel: str) -> Figure:
    """Figs. 4 and 5: DP-ADMM (l2) against Algorithm 2, one panel per epsilon, log y."""
    curves = (
        _stats("dp-admm-alg2", metric, "Algorithm 2 (paper's $\\sigma$)", "C3"),
        _stats("dp-admm-l2", metric, "DP-ADMM (Algorithm 3)", "C0", noise=True),
        _stats("dp-admm-l2", metric, D11_LABEL, "C0", ":", noise=False),
        _stats("dp-admm-alg1", metric, "Algorithm 1 (non-private)", "black", width=1.0),
    )
    panel = Panel(
        "epsilon",
        curves,
        xlabel="iteration k",
        ylabel=ylabel,
        yscale="log",
        positive_x=True,
        title_size=7.5,
        title="$\\epsilon$ = {epsilon_per_iteration:g}, $\\delta = "
        "{curves[1][delta_tex]}$: $\\bar\\epsilon$={curves[1][eps_bar]:.4f}, "
        "$\\epsilon_{{tight}}$={curves[1][eps_tight]:.3g}",
        legend=Legend("lower right", 6, 0.85, anchor=(1.0, 0.1)),
    )
    number = fig.replace("fig", "Fig. ")
    return Figure(
        fig,
        shows,
        configs=_VS_ALG2,
        layouts=(
            Layout(
                fig,
                (panel,),
                size=(7.2, 3.0),
                sharey=True,
                outer_labels=True,
                facet="epsilon_per_iteration",
                fields="fields",
                suptitle=f"{number}: DP-ADMM vs the existing private algorithm "
                "($\\ell_2$-regularized logistic regression)",
                caption=CAPTION + "band: min-max.  Algorithm 2 has the same "
                "$\\bar\\epsilon$ (the paper's accounting); its tight $\\epsilon$ is ~0 "
                "(its sensitivity ignores $\\rho$, Sec. III-A).",
                caption_width=0,
            ),
        ),
        tables=(
            Table(f"{fig}.csv", rows="long_table", header=_header(f"{fig}: {ylabel} per iteration (l2)")),
            _final_table(fig, "half_l2sq"),
        ),
    )


PAPER = Paper(
    key="dp-admm",
    title="Huang, Hu, Chan-Tin, Gong 2019, DP-ADMM over sample-partitioned data",
    source="Huang et al. 2019, Sec. VI (UCI Adult, 100 providers)",
    module="vfl.papers.dp_admm.figures",
    figures=(
        _convergence(
            "fig1",
            "Fig. 1: l1, augmented objective vs iteration, DP-ADMM per (eps, delta) vs Algorithm 1",
            "dp-admm-l1",
            "l1",
            noiseless=True,
        ),
        _accuracy(
            "fig2",
            "Fig. 2: l1, test accuracy vs epsilon, one line per delta, Algorithm 1 as a line",
            "dp-admm-l1",
            "l1",
            alg2=False,
        ),
        _convergence("fig3", "Fig. 3: Fig. 1 for l2", "dp-admm-l2", "half_l2sq", noiseless=False),
        _versus_alg2(
            "fig4",
            "Fig. 4: l2, augmented objective vs iteration, DP-ADMM vs Algorithm 2",
            "augmented_objective",
            "expected augmented objective (diagnostic)",
        ),
        _versus_alg2(
            "fig5",
            "Fig. 5: l2, empirical loss vs iteration, DP-ADMM vs Algorithm 2",
            "empirical_loss",
            "expected empirical loss, training (diagnostic)",
        ),
        _accuracy(
            "fig6",
            "Fig. 6: l2, test accuracy vs epsilon: DP-ADMM, Algorithm 2, Algorithm 1",
            "dp-admm-l2",
            "half_l2sq",
            alg2=True,
        ),
        Figure(
            "table3",
            "Table III: time of the 100 iterations, as ratios to the non-private run",
            configs=_VS_ALG2,
            draw="table3",
        ),
    ),
)
