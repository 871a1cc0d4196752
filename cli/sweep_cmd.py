"""``vfl sweep`` and ``vfl sweep-noise``: a grid of runs over seeds, checked first
(:mod:`vfl.experiments.sweep_setup`), run, aggregated and drawn."""

from __future__ import annotations

import click

from vfl.experiments.sweep import aggregate_sweep, parse_grid, plan_grid, plan_sweep, run_grid
from vfl.experiments.sweep_setup import final_table, noise_levels, prepare_sweep
from vfl.plots import draw_grid_sweep, draw_noise_sweep

from .shared import Progress, data_dir_option, value_list

__all__ = ["sweep", "sweep_noise"]

_sweep_options = [
    click.option(
        "--seeds", default=None, metavar="LIST", help="Seeds, e.g. 0,1,2 [default: the config's sweep.seeds]."
    ),
    click.option(
        "--jobs",
        type=click.IntRange(min=1, max=256),
        default=1,
        show_default=True,
        help="Parallel worker processes (joblib).",
    ),
    click.option(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Send the runs to this Dask scheduler instead, e.g. tcp://HOST:8786 (needs vfl[dask]).",
    ),
    click.option(
        "--out",
        type=click.Path(file_okay=False),
        default=None,
        help="Sweep directory [default: results/sweeps/NAME]; rerunning resumes it.",
    ),
    click.option("--epochs", type=click.IntRange(min=1), default=None, help="Override solver.epochs."),
    data_dir_option,
    click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any config key (repeatable)."
    ),
    click.option("--quiet", "-q", is_flag=True, help="No progress and no table."),
]


def _with_sweep_options(f):
    for option in reversed(_sweep_options):
        f = option(f)
    return f


def _with_sweep_options(f):
    for option in reversed(_sweep_options):
        f = option(f)
    return f


def _run_and_report(runner, total: int, label: str, quiet: bool):
    done = {"n": 0}
    progress = Progress(total, label, quiet)

    def on_done(run, skipped):
        done["n"] += 1
        progress.step()
        progress.done(f"[{done['n']}/{total}] {run.label}: " + ("kept (already complete)" if skipped else "done"))

    try:
        return runner(on_done)
    finally:
        progress.close()


@click.command("sweep-noise")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TOML experiment config; its [sweep] table gives the default levels and seeds.",
)
@click.option("--sigmas", default=None, metavar="LIST", help="Noise levels, e.g. 0,0.03,0.1,0.3,1,3.")
@click.option(
    "--epsilons",
    default=None,
    metavar="LIST",
    help="Target epsilons instead (accounting mode, privacy.delta set), e.g. 0.5,1,2,4,8.",
)
@_with_sweep_options
def sweep_noise(config_path, sigmas, epsilons, seeds, jobs, scheduler, out, epochs, data_dir, overrides, quiet):
    """Sweep noise levels (or target epsilons) and seeds; aggregate, plot.

    The shorthand of `vfl sweep` for privacy.sigma (or privacy.epsilon).

    \b
    vfl sweep-noise --config papers/hu/configs/fig2-a9a.toml --sigmas 0,0.3,3 --jobs 2
    """
    config, seed_list, out, overrides = prepare_sweep(config_path, overrides, epochs, seeds, out, scheduler, value_list)
    if sigmas and epsilons:
        raise click.UsageError("give --sigmas or --epsilons, not both")
    param, levels = noise_levels(config, sigmas, epsilons, value_list)
    runs = plan_sweep(config, levels, seed_list, out, param, overrides)
    runs, executed = _run_and_report(
        lambda on_done: run_grid(
            config, {}, seed_list, out, data_dir=data_dir, jobs=jobs, scheduler=scheduler, on_done=on_done, runs=runs
        ),
        len(runs),
        config.name,
        quiet,
    )
    agg, final = aggregate_sweep(runs, out)
    written = draw_noise_sweep(runs[0].path, out, agg, final, param)
    if not quiet:
        click.echo(final_table(final, [param], ("test_logloss_mean", "test_logloss_std", "test_accuracy_mean")))
        click.echo(
            f"{len(executed)} runs executed, {len(runs) - len(executed)} kept; wrote "
            f"{out}/sweep.csv, " + ", ".join(p.name for p in written)
        )


@click.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="TOML experiment config: the fixed part of every run.",
)
@click.option(
    "--grid",
    "grid",
    multiple=True,
    metavar="KEY=V1,V2,...",
    help="A config key and its values (repeatable: the sweep is the cartesian product).",
)
@_with_sweep_options
def sweep(config_path, grid, seeds, jobs, scheduler, out, epochs, data_dir, overrides, quiet):
    """Sweep any config keys (cartesian grid) and seeds; aggregate, plot.

    Every grid point is validated before anything runs; a rerun resumes.

    \b
    vfl sweep --config papers/dp_admm/configs/dp-admm-l2.toml --grid privacy.epsilon=0.05,0.1 \\
              --grid privacy.delta=1e-3,1e-4 --seeds 0,1 --jobs 2
    """
    config, seed_list, out, overrides = prepare_sweep(config_path, overrides, epochs, seeds, out, scheduler, value_list)
    table = parse_grid(grid)
    runs = plan_grid(config, table, seed_list, out, overrides)
    runs, executed = _run_and_report(
        lambda on_done: run_grid(
            config, table, seed_list, out, data_dir=data_dir, jobs=jobs, scheduler=scheduler, on_done=on_done, runs=runs
        ),
        len(runs),
        config.name,
        quiet,
    )
    agg, final = aggregate_sweep(runs, out)
    names, written = draw_grid_sweep(runs, final, out, config.name)
    if not quiet:
        click.echo(final_table(final, names, ("test_logloss_mean", "test_accuracy_mean", "epsilon_tight_mean")))
        click.echo(
            f"{len(executed)} runs executed, {len(runs) - len(executed)} kept; wrote "
            f"{out}/sweep.csv, sweep_final.csv, " + ", ".join(p.name for p in written)
        )
