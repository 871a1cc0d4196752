"""``vfl attack``: what a party learns from a run's messages, against what DP allows."""
import click


@click.command()
@click.argument("run_dir", required=False, type=click.Path())
@click.option("--config", "config_path", default=None, type=click.Path(dir_okay=False),
              help="TOML config of a vertical run (run here, its messages tapped).")
@click.option("--attack", "name", required=True, type=click.Choice(
    ("label-norm", "label-direction", "model-completion", "feature-reconstruction")))
@click.option("--known", type=int, default=40, help="Labels known (party 1's auxiliary rows).")
@click.option("--party", type=int, default=2, show_default=True, help="The passive party.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def attack(run_dir, config_path, name, known, party, data_dir, as_json):
    """Attack a run's messages: AUC (95 % CI), its ceiling under DP, an empirical epsilon.

    RUN_DIR: a finished run written with `vfl run --record-received` (its received.npz:
    what each passive party received, and party 1 from it). --config instead: the
    config is run here, every message tapped.

    \b
    vfl run --config C --out runs/c --record-received
    vfl attack runs/c --attack label-direction --json
    vfl attack --config C --attack label-direction --json
    """
    from vfl.core.errors import ConfigError

    if (run_dir is None) == (config_path is None):
        raise ConfigError("give a finished run's directory (vfl attack RUN_DIR) or --config "
                          "(run here)" + (", not both" if run_dir is not None else ""))
    if run_dir is not None:
        from vfl.experiments.attack import attack_run

        outcome = attack_run(run_dir, name, known=known, party=party, data_dir=data_dir)
    else:
        from vfl.experiments.attack import run_attack

        outcome = run_attack(config_path, name, known=known, party=party, data_dir=data_dir)
    click.echo(outcome.show(as_json))
