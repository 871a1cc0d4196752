"""``vfl privacy``: a Gaussian mechanism's epsilon under every analysis (or its sigma), or
the epsilon a run spent, drawn (:func:`vfl.plots.draw_run_privacy`)."""

from __future__ import annotations

from pathlib import Path

import click

from vfl.core.errors import ConfigError
from vfl.privacy.compare import report

__all__ = ["privacy"]


@click.command()
@click.option("--sigma", type=float, default=None, help="Noise standard deviation -> epsilon.")
@click.option("--epsilon", type=float, default=None, help="Total target epsilon -> sigma.")
@click.option("--sensitivity", type=float, default=None, help="l2 sensitivity C [default: 1].")
@click.option("--epochs", type=click.IntRange(min=1, max=10**6), default=None, help="Number of compositions T.")
@click.option("--delta", type=float, default=None, help="Total delta.")
@click.option(
    "--run",
    "run_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Plot epsilon vs iteration of a run that accounts its privacy instead.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --run: figure file [default: RUN_DIR/../NAME-privacy.png].",
)
@click.option("--overwrite", is_flag=True, help="With --run: replace --out if it exists.")
def privacy(sigma, epsilon, sensitivity, epochs, delta, run_dir, out, overwrite):
    """Epsilon of a Gaussian mechanism under every analysis, or sigma.

    \b
    vfl privacy --sigma 5 --sensitivity 1 --epochs 100 --delta 1e-5
    vfl privacy --epsilon 1 --delta 1e-5 --epochs 100
    vfl privacy --run results/runs/RUN
    """
    mechanism = {
        "--sigma": sigma,
        "--epsilon": epsilon,
        "--sensitivity": sensitivity,
        "--epochs": epochs,
        "--delta": delta,
    }
    if run_dir is not None:  # the run's own accounting: a mechanism option would be ignored
        for option in (k for k, v in mechanism.items() if v is not None):
            raise click.UsageError(f"{option} has no effect with --run (the run's accounting is drawn)")
        from vfl.plots import draw_run_privacy  # lazy: start-up (matplotlib, for --run alone)

        for p in draw_run_privacy(Path(run_dir), out, overwrite=overwrite):
            click.echo(f"wrote {p}")
        return
    if out or overwrite:
        raise click.UsageError("--out and --overwrite apply to --run (the figure of a run)")
    if (sigma is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --sigma and --epsilon (or --run)")
    if epochs is None or delta is None:
        raise click.UsageError("--epochs and --delta are required")
    try:
        lines = report(
            sigma=sigma,
            epsilon=epsilon,
            epochs=epochs,
            delta=delta,
            sensitivity=1.0 if sensitivity is None else sensitivity,
        )
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    click.echo("\n".join(lines))
