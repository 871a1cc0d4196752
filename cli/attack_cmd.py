"""``vfl attack``: what a party learns from the messages of a run, against what DP allows."""

from __future__ import annotations

import json

import click

__all__ = ["attack"]

_NAMES = ("label-norm", "label-direction", "model-completion", "feature-reconstruction")


@click.command()
@click.option("--config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="TOML config of a vertical run (run in this process, its messages tapped).")
@click.option("--attack", "name", required=True, type=click.Choice(_NAMES),
              help="Label inference by a passive party (label-norm, label-direction: Li et al. "
                   "2021; model-completion: Fu et al. 2022) or feature inference by party 1.")
@click.option("--known", type=int, default=40, show_default=True,
              help="Labels the passive party knows (feature-reconstruction: rows of party 1's "
                   "public auxiliary set).")
@click.option("--party", type=int, default=2, show_default=True,
              help="The passive party that attacks the labels, or whose features are attacked.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override a key.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None,
              help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].")
def attack(config_path, name, known, party, as_json, overrides, data_dir):
    """Attack a run's messages: AUC with its 95 % interval, the ceiling under the run's
    guarantee, and the epsilon the attack shows (a simulation: scored with the truth).

    \b
    vfl attack --config papers/attacks/configs/fdml-a9a.toml --attack label-direction --json
    """
    from vfl.experiments.attack import check_attack, run_attack
    from vfl.experiments.config import load_config

    config = load_config(config_path, list(overrides))
    check_attack(config, name, known, party)
    out = run_attack(config, name, known=known, party=party, data_dir=data_dir)
    if as_json:
        click.echo(json.dumps(out.as_json()))
        return
    ceiling = "none (no guarantee covers it)" if out.ceiling is None else f"{out.ceiling:.4f}"
    click.echo(f"{name} on {config.solver.name}: AUC {out.auc:.4f} "
               f"(95 % CI {out.auc_ci[0]:.4f}-{out.auc_ci[1]:.4f}); ceiling {ceiling}; "
               f"empirical epsilon >= {out.epsilon_lower:.3g}")
