"""``vfl run``: one experiment into its run directory (:mod:`vfl.experiments.run_directory`)."""

from __future__ import annotations

from pathlib import Path
from time import perf_counter

import click

from vfl.experiments.checkpoint import resume_run
from vfl.experiments.run_directory import check_run, run_into, units_for
from vfl.plots import draw_run

from .shared import Progress, data_dir_option

__all__ = ["run"]


@click.command()
@click.option(
    "--config",
    "config_path",
    default=None,
    type=click.Path(dir_okay=False),
    help="TOML experiment config (see configs/).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Run directory to create [default: results/runs/NAME-TIMESTAMP].",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Finish the killed run of this directory (its checkpoint's config).",
)
@click.option(
    "--epochs", type=click.IntRange(min=1), default=None, help="Override solver.epochs (the number of iterations)."
)
@click.option("--seed", type=click.IntRange(min=0), default=None, help="Override run.seed.")
@click.option("--repeats", type=click.IntRange(min=1), default=None, help="Override run.repeats.")
@click.option(
    "--eval-every",
    type=click.IntRange(min=1),
    default=None,
    help="Override run.eval_every: metrics every K iterations (and at the last).",
)
@data_dir_option
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override any config key, e.g. --set solver.rho=2 (repeatable).",
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option("--quiet", "-q", is_flag=True, help="No progress and no summary.")
@click.option("--no-cache", is_flag=True, help="Recompute the baselines instead of reading the cache.")
@click.option(
    "--baselines",
    type=click.Choice(["all", "central", "none"]),
    default=None,
    help="Override run.baselines: the references to compute (central: F* alone, "
    "one cached exact solve; none: no suboptimality).",
)
@click.option(
    "--stop-at-budget", is_flag=True, help="End the run before the iteration that would exceed privacy.budget_epsilon."
)
@click.option(
    "--release-only",
    is_flag=True,
    help="Write only released values (covered by the guarantee): no diagnostic "
    "columns, no references. For a run that claims a guarantee.",
)
@click.option(
    "--cluster",
    default=None,
    metavar="ADDRESS",
    help='With run.backend = "dask": the Dask scheduler whose workers hold the '
    "parties, e.g. tcp://HOST:8786 [default: a local cluster, one worker per "
    "party].",
)
@click.option(
    "--no-figure", is_flag=True, help="Write no loss.png (scripted runs; `vfl plot RUN_DIR --out F` draws one later)."
)
@click.option(
    "--record-received",
    is_flag=True,
    help="Write received.npz: what each passive party received (and party 1 from it), "
    "for `vfl attack RUN_DIR`. A vertical run.",
)
def run(
    config_path,
    out,
    resume_dir,
    epochs,
    seed,
    repeats,
    eval_every,
    data_dir,
    overrides,
    overwrite,
    quiet,
    no_cache,
    baselines,
    stop_at_budget,
    release_only,
    cluster,
    no_figure,
    record_received,
):
    """Run one experiment and write its run directory.

    Everything is checked (config, output directory, data, distribution,
    solver, privacy plan) before the first iteration or baseline.

    \b
    vfl run --config configs/a9a.toml --set solver.rho=0.3
    """
    t0 = perf_counter()
    if resume_dir is not None:  # (the other options are refused: the checkpoint's own)
        return resume_run(
            Path(resume_dir), cluster, data_dir, quiet, t0, units_for, _run, given=click.get_current_context().params
        )
    if config_path is None:  # (--resume needs none)
        raise click.UsageError("Missing option '--config' (or --resume RUN_DIR).")
    overrides = list(overrides)
    for key, value in (
        ("solver.epochs", epochs),
        ("run.seed", seed),
        ("run.repeats", repeats),
        ("run.eval_every", eval_every),
        ("run.baselines", baselines),
    ):
        if value is not None:
            overrides.append(f"{key}={value}")
    config, out = check_run(
        config_path,
        overrides,
        out,
        overwrite=overwrite,
        cluster=cluster,
        stop_at_budget=stop_at_budget,
        release_only=release_only,
        use_cache=not no_cache,
        record_received=record_received,
    )
    with units_for(config, cluster, data_dir) as backend:
        _run(
            config,
            out,
            data_dir,
            overwrite,
            quiet,
            no_cache,
            stop_at_budget,
            release_only,
            backend,
            t0,
            figure=not no_figure,
            record=record_received,
        )


def _run(config, out, data_dir, overwrite, quiet, *args, **kwargs):
    """One run into ``out`` with this command line's progress display and summary."""
    return run_into(
        config,
        out,
        data_dir,
        overwrite,
        quiet,
        *args,
        progress=lambda total, label, show: Progress(total, label, quiet, show),
        draw=draw_run,
        echo=click.echo,
        **kwargs,
    )
