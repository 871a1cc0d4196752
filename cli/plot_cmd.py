"""``vfl plot``: runs overlaid in one figure (:func:`vfl.plots.draw_runs`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import click

from vfl.plots import draw_runs

__all__ = ["plot"]


@click.command()
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Figure file; a .png also gets a .pdf beside it [default: results/figures/plot-TIMESTAMP.png].",
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="TEXT",
    help="Legend label of each run, in order (repeat once per RUN_DIR).",
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--suboptimality", is_flag=True, help="Plot (F - F*) / |F*| on a log scale instead of the objective.")
@click.option(
    "--metrics",
    default=None,
    metavar="LEFT,RIGHT",
    help="The two metrics.csv columns to draw, e.g. log10_error,privacy_loss.",
)
@click.option(
    "--x",
    "x_axis",
    type=click.Choice(["epoch", "wall"]),
    default="epoch",
    show_default=True,
    help="Horizontal axis: iterations or cumulative solver seconds.",
)
@click.option("--log", "log_scale", is_flag=True, help="Log scale for the objective.")
def plot(run_dirs, out, labels, overwrite, suboptimality, metrics, x_axis, log_scale):
    """Overlay runs: objective and test loss vs iteration or time.

    Reference lines (central optimum, comparison baselines) come from each
    run; runs with repeats are drawn as their mean with a min-max band.

    \b
    vfl plot results/runs/a9a-* --label "rho 1" --label "rho 0.3" --out cmp.png
    """
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    written = draw_runs(
        run_dirs,
        Path(out) if out else Path("results") / "figures" / f"plot-{stamp}.png",
        labels=labels,
        overwrite=overwrite,
        suboptimality=suboptimality,
        metrics=metrics,
        x=x_axis,
        log=log_scale,
    )
    for p in written:
        click.echo(f"wrote {p}")
