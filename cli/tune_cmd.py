"""``vfl tune``: choose hyper-parameters on public rows, or privately with the cost in epsilon."""

from __future__ import annotations

from pathlib import Path

import click

from vfl.experiments.tuning import tune as run_tune

from .shared import data_dir_option

__all__ = ["tune"]


@click.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TOML config to tune (partition.public rows score the candidates).",
)
@click.option(
    "--grid",
    "grid",
    multiple=True,
    required=True,
    metavar="KEY=V1,V2",
    help="Candidate values of a config key (repeatable; the points are all combinations).",
)
@click.option(
    "--public/--private",
    "public",
    default=True,
    help="Train on the public rows only (nothing spent) [default], or random search "
    "on the private rows, accounted in the run's epsilon (Papernot and Steinke 2022).",
)
@click.option(
    "--seeds", type=click.IntRange(min=1), default=3, show_default=True, help="--public: runs per point, averaged."
)
@click.option(
    "--trials",
    type=click.FloatRange(min=1, min_open=True),
    default=10.0,
    show_default=True,
    help="--private: the expected number of trials (it is random).",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="The chosen config [default: CONFIG's name with -tuned.toml, here].",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a key first.")
@data_dir_option
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
def tune(config_path, grid, public, seeds, trials, out, overrides, data_dir, overwrite):
    """Choose hyper-parameters and write the chosen config, which records the tuning.

    \b
    vfl tune --config own.toml --grid solver.lam1=0.01,0.1,1 --grid privacy.clip=1,2
    vfl run --config own-tuned.toml
    """
    out = Path(out) if out else Path(f"{Path(config_path).stem}-tuned.toml")
    mode = "public" if public else "private"
    result = run_tune(
        config_path,
        list(grid),
        mode=mode,
        out=out,
        overrides=overrides,
        seeds=seeds,
        trials=trials,
        data_dir=data_dir,
        overwrite=overwrite,
        on_trial=lambda row: click.echo(f"  {' '.join(row['point'])}: {row['score']:.4f}", err=True),
    )
    click.echo(result["summary"])
