"""``vfl attack``: what a party learns from a run's messages, against what DP allows."""

import click

from vfl.experiments.attack import attack_either

from .shared import data_dir_option


@click.command()
@click.argument("run_dir", required=False, type=click.Path())
@click.option(
    "--config",
    "config_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML config of a vertical run (run here, its messages tapped).",
)
@click.option(
    "--attack",
    "name",
    required=True,
    type=click.Choice(("label-norm", "label-direction", "model-completion", "feature-reconstruction")),
)
@click.option("--known", type=int, default=40, help="Labels known (party 1's auxiliary rows).")
@click.option("--party", type=int, default=2, show_default=True, help="The passive party.")
@data_dir_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def attack(run_dir, config_path, name, known, party, data_dir, as_json):
    """Attack a run's messages: AUC (95 % CI), its ceiling under DP, an empirical epsilon.

    RUN_DIR: a finished run written with `vfl run --record-received`; or --config: run here.

    \b
    vfl attack runs/c --attack label-direction --json
    """
    click.echo(attack_either(run_dir, config_path, name, known=known, party=party, data_dir=data_dir).show(as_json))
