"""``vfl attack``: what a party learns from a run's messages, against what DP allows."""
import click


@click.command()
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="TOML config of a vertical run (run here, its messages tapped).")
@click.option("--attack", "name", required=True, type=click.Choice(
    ("label-norm", "label-direction", "model-completion", "feature-reconstruction")))
@click.option("--known", type=int, default=40, show_default=True,
              help="Labels the passive party knows (rows of party 1's auxiliary set).")
@click.option("--party", type=int, default=2, show_default=True, help="The passive party.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def attack(config_path, name, known, party, as_json):
    """Attack a run's messages: AUC and its 95 % CI, the ceiling under the run's guarantee,
    the epsilon the attack shows (a simulation, scored with the truth)."""
    from vfl.experiments.attack import run_attack
    click.echo(run_attack(config_path, name, known=known, party=party).show(as_json))
