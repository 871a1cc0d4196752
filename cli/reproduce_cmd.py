"""``vfl reproduce`` (a paper's figures redrawn, :mod:`vfl.papers`) and ``vfl references``
(short runs against the committed reference curves, :mod:`vfl.experiments.reference_check`)."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import click

from vfl.experiments.records import check_output_dir
from vfl.experiments.reference_check import reference_results
from vfl.papers import check_configs, figure_listing, resolve
from vfl.papers import reproduce as run_reproduce
from vfl.papers.preflight import check_data

from .shared import data_dir_option

__all__ = ["references", "reproduce"]


class _ReproduceCommand(click.Command):
    """``vfl reproduce --help`` ends with what each paper can draw (read from its module)."""

    def format_epilog(self, ctx, formatter):
        with formatter.section("Figures and tables"):
            formatter.write_dl(figure_listing())


@click.command(cls=_ReproduceCommand)
@click.argument("paper", required=False)
@click.argument("figure", required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="results/figures",
    show_default=True,
    help="Where figures, their CSVs, and the runs behind them go (one folder per paper).",
)
@click.option(
    "--configs",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory of edited copies of the figures' configs [default: each paper's own, papers/PAPER/configs/].",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=256),
    default=2,
    show_default=True,
    help="Parallel processes for the sweeps.",
)
@data_dir_option
def reproduce(paper, figure, out, configs, jobs, data_dir):
    """Redraw a paper's figures: vfl reproduce [PAPER [FIGURE]].

    PAPER: hu (ADMM sharing), dp-admm (Huang et al.), ldp (Xiao et al.), private-utility
    (private stacking vs the rest), attacks (what each party learns), or all (default).
    FIGURE: one of the paper's figures (listed below) or all. Finished
    runs are kept, so a second call only redraws.

    \b
    vfl reproduce hu fig1
    """
    chosen = resolve(paper, figure)  # a bad name is refused before anything runs
    configs = Path(configs) if configs is not None else None
    check_configs(chosen, configs)
    check_output_dir(out, exists_ok=True, what="figure directory")
    check_data(chosen, configs, data_dir)
    t0 = perf_counter()
    written = run_reproduce(
        paper, figure, Path(out), configs, data_dir=data_dir, jobs=jobs, echo=lambda msg: click.echo(msg, err=True)
    )
    for p in written:
        click.echo(f"wrote {p}")
    click.echo(f"CSVs beside them in {out}/; {perf_counter() - t0:.0f} s")


@click.command()
@click.argument("cases", nargs=-1)
@click.option("--update", is_flag=True, help="Regenerate the reference CSVs (on purpose only).")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Reference CSVs [default: results/reference of the repository].",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False),
    default=None,
    help="The clone whose configs the cases read [default: the clone that holds --root].",
)
@data_dir_option
def references(cases, update, root, repo, data_dir):
    """Check short runs against the committed reference curves.

    \b
    vfl references a9a-admm
    """
    for line in reference_results(cases, update, root, repo, data_dir):
        click.echo(line)
