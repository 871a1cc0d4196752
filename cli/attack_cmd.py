"""``vfl attack``: what a party learns from a run's messages, against what DP allows."""
import click


@click.command()
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="TOML config of a vertical run (run here, its messages tapped).")
@click.option("--attack", "name", required=True, type=click.Choice(
    ("label-norm", "label-direction", "model-completion", "feature-reconstruction")))
@click.option("--known", type=int, default=40, help="Labels known (party 1's auxiliary rows).")
@click.option("--party", type=int, default=2, show_default=True, help="The passive party.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def attack(config_path, name, known, party, as_json):
    """Attack a run's messages: AUC (95 % CI), its ceiling under DP, an empirical epsilon."""
    from vfl.experiments.attack import run_attack
    click.echo(run_attack(config_path, name, known=known, party=party).show(as_json))
