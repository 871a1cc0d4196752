"""The ``vfl`` command line (presentation layer).

Exit status: 0 on success; 2 with one ``error: ...`` line on stderr for bad
usage, config, partition, data or output location, always before any
computation where it can be checked (``vfl --debug ...`` adds the
traceback); 130 on Ctrl-C; 1 for an internal error (a bug: the traceback is
always shown). Library warnings are shown only for commands that succeed.
"""

from __future__ import annotations

import sys
import traceback
import warnings
from datetime import datetime
from pathlib import Path

import click

from vfl.core.errors import ConfigError, VFLError

from .attack_cmd import attack
from .datasets_cmd import datasets
from .party_cmd import party
from .tune_cmd import tune

__all__ = ["cli", "main"]

#: `vfl --help` lists the commands in these groups, in this order
SECTIONS = [
    ("Run one experiment and look at it", ["run", "plot", "audit", "attack", "privacy"]),
    ("Sweeps and tuning", ["sweep", "sweep-noise", "tune"]),
    ("Reproduce the papers (Hu et al.; Huang et al.; Xiao et al.; private stacking)", ["reproduce", "references"]),
    ("Data and algorithms", ["datasets", "solvers"]),
    ("Deployment: each party its own service", ["party"]),
]


def _print_version(ctx, _param, value) -> None:
    """``--version``, looked up only when asked for (``vfl --help`` stays fast)."""
    if not value or ctx.resilient_parsing:
        return
    from vfl.experiments.provenance import vfl_version

    click.echo(f"vfl, version {vfl_version()}")
    ctx.exit()


class _Sections(click.Group):
    """A group whose help lists its commands by purpose (:data:`SECTIONS`)."""

    def list_commands(self, ctx):
        return [c for _, names in SECTIONS for c in names if c in self.commands]

    def format_commands(self, ctx, formatter):
        for title, names in SECTIONS:
            rows = [(n, self.commands[n].get_short_help_str(limit=70)) for n in names if n in self.commands]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


@click.group(cls=_Sections, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for user errors too.")
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx, debug):
    """Private learning over distributed data: run, audit, sweep and reproduce.

    Parties holding different columns of the same rows (vertical), providers
    holding different rows around a trainer (horizontal), or agents on a
    graph (network) train one model together, with or without differential
    privacy. Start with

    \b
        vfl run --config configs/a9a.toml
        vfl solvers
    """
    ctx.obj = {"debug": debug}


for _command in (datasets, tune, party, attack):
    cli.add_command(_command)


def _stamp() -> str:
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def _default_out(name: str) -> Path:
    stamp = _stamp()
    out = Path("results") / "runs" / f"{name}-{stamp}"
    n = 1
    while out.exists():  # two runs in the same second
        n += 1
        out = Path("results") / "runs" / f"{name}-{stamp}-{n}"
    return out


class _Progress:
    """Progress on stderr: a bar on a terminal, one line per finished unit elsewhere."""

    def __init__(self, total: int, label: str, quiet: bool, show=None):
        self.quiet, self.show = quiet, show
        self.tty = sys.stderr.isatty()
        self.bar = None
        if not quiet and self.tty and total > 1:
            self.bar = click.progressbar(
                length=total,
                label=label,
                file=sys.stderr,
                item_show_func=lambda item: "" if item is None else (show(item) if show else str(item)),
            )
            self.bar.__enter__()

    def step(self, item=None) -> None:
        if self.bar is not None:
            self.bar.update(1, item)

    def done(self, line: str) -> None:
        """A finished unit: one line (above the bar on a terminal)."""
        if self.quiet:
            return
        if self.bar is not None:
            self.bar.update(0)
            click.echo("", err=True)
        click.echo(line, err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None


def _value_list(text: str, option: str, kind=float) -> list:
    """``"0,0.1,1"`` -> ``[0.0, 0.1, 1.0]`` (``kind=int`` for seeds); finite numbers only."""
    try:
        values = [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        what = "integers" if kind is int else "numbers"
        raise click.BadParameter(f"expects comma-separated {what}, got {text!r}", param_hint=option) from None
    if not values:
        raise click.BadParameter("expects at least one value", param_hint=option)
    return values


@cli.command()
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
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].",
)
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
    from time import perf_counter

    from vfl.experiments.config import load_config
    from vfl.experiments.records import check_output_dir

    t0 = perf_counter()
    if resume_dir is not None:  # (the other options are refused: the checkpoint's own)
        from vfl.experiments.checkpoint import resume_run

        return resume_run(
            Path(resume_dir), cluster, data_dir, quiet, t0, _backend, _run, given=click.get_current_context().params
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
    config = load_config(config_path, overrides)
    from vfl.experiments.dask_units import check_cluster_option
    from vfl.experiments.runner import check_run_options

    check_cluster_option(config, cluster)
    out = check_output_dir(Path(out) if out else _default_out(config.name), overwrite=overwrite, what="run directory")
    check_run_options(
        config,
        stop_at_budget=stop_at_budget,
        release_only=release_only,
        use_cache=not no_cache,
        record_received=record_received,
    )

    with _backend(config, cluster, data_dir) as backend:
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


def _backend(config, cluster, data_dir, resume=None):
    """Where the parties run: this process, Dask workers or the party services (connected
    before any work); ``resume``: a killed services run's record (its checkpoint's)."""
    import contextlib

    if config.run.backend == "services":
        from vfl.experiments.service_units import ServiceUnits

        return ServiceUnits(config, resume=resume)
    if config.run.backend != "dask":
        return contextlib.nullcontext()
    from vfl.experiments.dask_units import dask_backend

    return dask_backend(config, cluster, data_dir)


def _run(
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
    figure=True,
    resume=None,
    record=False,
):
    from time import perf_counter

    from vfl.core.solver import column_kinds
    from vfl.experiments.checkpoint import checkpoints, finished, keep_or_drop
    from vfl.experiments.received import recording
    from vfl.experiments.records import write_run
    from vfl.experiments.run_plan import plan_run
    from vfl.experiments.runner import run_experiment

    # one run: the records are let go once distributed; release-only: nothing cached outside
    plan = plan_run(config, data_dir, backend, keep_records=False, use_cache=not release_only)
    per_repeat = -(-config.solver.epochs // config.run.eval_every)
    star = (
        "*"
        if column_kinds(
            plan.solver_cls,
            ["test_logloss"],
            config.privacy.claims_guarantee,
            test_rows_private=bool(plan.first.test_private),
        )["test_logloss"]
        != "released"
        else ""
    )  # diagnostic: starred
    progress = _Progress(
        per_repeat * config.run.repeats,
        config.name,
        quiet,
        show=lambda row: (
            f"repeat {row['repeat'] + 1}, {row['epoch']}"
            + ("" if release_only and star else f": test loss {row.get('test_logloss', float('nan')):.4f}{star}")
        ),
    )
    save, existed = (
        checkpoints(
            out,
            config,
            resume,
            {  # every run.checkpoint_every iterations
                "no_cache": no_cache,
                "stop_at_budget": stop_at_budget,
                "release_only": release_only,
                "figure": figure,
                "record_received": record,
            },
            units=backend,
        ),
        out.exists(),
    )
    try:
        with recording(config, record) as tap:  # (--record-received: every message tapped)
            result = run_experiment(
                config,
                data_dir=data_dir,
                plan=plan,
                use_cache=not no_cache,
                stop_at_budget=stop_at_budget,
                release_only=release_only,
                on_epoch=lambda row: progress.step(row) if row["epoch"] > 0 else None,
                resume=resume,
                checkpoint=save,
            )
    except VFLError as exc:  # a lost unit or scheduler: the run directory says how to resume
        raise type(exc)(f"{exc}{keep_or_drop(out, exc, fresh=not existed)}") from None
    finally:
        progress.close()
    overwrite = finished(result, out, resume) or overwrite  # (replaces the checkpoint)

    def draw(tmp: Path):
        from vfl.plots import draw_run

        draw_run(result, tmp / "loss.png", release_only=release_only)

    path = write_run(
        result,
        out,
        overwrite=overwrite,
        extra=([draw] if figure else []) + ([] if tap is None else [tap.keep(result, plan.first.data)]),
    )
    if hasattr(backend, "finish"):  # the party services may let its kept replies go
        backend.finish()
    if not quiet:
        from vfl.experiments.summary import run_summary

        click.echo(run_summary(result, path, perf_counter() - t0))


def _figure_formats() -> list[str]:
    import matplotlib.figure

    from vfl.plots import plt  # noqa: F401  (the Agg backend)

    return sorted(matplotlib.figure.Figure().canvas.get_supported_filetypes())


@cli.command()
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
    from vfl.experiments.records import check_output_file, load_run

    out = Path(out) if out else Path("results") / "figures" / f"plot-{_stamp()}.png"
    out = check_output_file(out, _figure_formats(), what="figure", overwrite=overwrite)
    if labels and len(labels) != len(run_dirs):
        raise ConfigError(f"--label was given {len(labels)} times for {len(run_dirs)} runs; give one per run, in order")
    pair = None
    if metrics:
        pair = tuple(m.strip() for m in metrics.split(","))
        if len(pair) != 2 or not all(pair):
            raise ConfigError(f"--metrics expects two column names LEFT,RIGHT, got {metrics!r}")
    runs = [load_run(p) for p in run_dirs]
    names = [r.label for r in runs]
    if len(set(names)) < len(names):  # same config run twice: name runs by directory
        for r in runs:
            r.manifest = r.manifest.replace(name=r.path.name)

    from vfl.plots import plot_runs, save_figure

    fig = plot_runs(
        runs, suboptimality=suboptimality, x=x_axis, log=log_scale, labels=list(labels) or None, metrics=pair
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    for p in save_figure(fig, out):
        click.echo(f"wrote {p}")


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
    click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].",
    ),
    click.option(
        "--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any config key (repeatable)."
    ),
    click.option("--quiet", "-q", is_flag=True, help="No progress and no table."),
]


def _with_sweep_options(f):
    for option in reversed(_sweep_options):
        f = option(f)
    return f


def _sweep_prelude(config_path, overrides, epochs, seeds, out, scheduler, default_dir):
    """Config, seeds and output checked before any work; returns them and the overrides."""
    from vfl.experiments.config import check_seeds, load_config
    from vfl.experiments.sweep import check_scheduler, check_sweep_dir

    overrides = list(overrides) + ([f"solver.epochs={epochs}"] if epochs else [])
    config = load_config(config_path, overrides)
    seed_list = check_seeds(_value_list(seeds, "--seeds", int)) if seeds else config.sweep.seeds
    out = check_sweep_dir(Path(out) if out else Path("results") / default_dir / config.name)
    if scheduler:
        check_scheduler(scheduler)
    return config, seed_list, out, overrides


def _run_and_report(runner, total: int, label: str, quiet: bool):
    done = {"n": 0}
    progress = _Progress(total, label, quiet)

    def on_done(run, skipped):
        done["n"] += 1
        progress.step()
        progress.done(f"[{done['n']}/{total}] {run.label}: " + ("kept (already complete)" if skipped else "done"))

    try:
        return runner(on_done)
    finally:
        progress.close()


@cli.command("sweep-noise")
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
    from vfl.experiments.config import check_epsilons, check_sigmas
    from vfl.experiments.sweep import aggregate_sweep, plan_sweep, run_grid

    config, seed_list, out, overrides = _sweep_prelude(config_path, overrides, epochs, seeds, out, scheduler, "sweeps")
    if sigmas and epsilons:
        raise click.UsageError("give --sigmas or --epsilons, not both")
    if epsilons or (not sigmas and config.sweep.epsilons):
        param = "epsilon"
        levels = check_epsilons(_value_list(epsilons, "--epsilons")) if epsilons else config.sweep.epsilons
    else:
        param = "sigma"
        levels = check_sigmas(_value_list(sigmas, "--sigmas")) if sigmas else config.sweep.sigmas
        if not any(level > 0 for level in levels):
            raise ConfigError(
                f"nothing to sweep: the noise levels are {levels} (give --sigmas "
                "0,0.1,1 or a [sweep] sigmas list in the config)"
            )
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

    from vfl.plots import draw_noise_sweep

    written = draw_noise_sweep(runs[0].path, out, agg, final, param)
    if not quiet:
        click.echo(
            final[[param, "epoch", "n_seeds", "test_logloss_mean", "test_logloss_std", "test_accuracy_mean"]].to_string(
                index=False, float_format="%.4f"
            )
        )
        click.echo(
            f"{len(executed)} runs executed, {len(runs) - len(executed)} kept; wrote "
            f"{out}/sweep.csv, " + ", ".join(p.name for p in written)
        )


@cli.command()
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
    from vfl.experiments.sweep import aggregate_sweep, parse_grid, plan_grid, run_grid

    config, seed_list, out, overrides = _sweep_prelude(config_path, overrides, epochs, seeds, out, scheduler, "sweeps")
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

    from vfl.plots import plot_grid_final, save_figure

    names = [k for k, _ in runs[0].values]
    written = save_figure(plot_grid_final(final, names, f"{config.name}: final values"), out / "sweep_final.png")
    if not quiet:
        cols = [
            *names,
            "epoch",
            "n_seeds",
            *[c for c in ("test_logloss_mean", "test_accuracy_mean", "epsilon_tight_mean") if c in final.columns],
        ]
        click.echo(final[cols].to_string(index=False, float_format="%.4f"))
        click.echo(
            f"{len(executed)} runs executed, {len(runs) - len(executed)} kept; wrote "
            f"{out}/sweep.csv, sweep_final.csv, " + ", ".join(p.name for p in written)
        )


@cli.command()
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
        return _plot_privacy(Path(run_dir), out, overwrite)
    if out or overwrite:
        raise click.UsageError("--out and --overwrite apply to --run (the figure of a run)")
    if (sigma is None) == (epsilon is None):
        raise click.UsageError("give exactly one of --sigma and --epsilon (or --run)")
    if epochs is None or delta is None:
        raise click.UsageError("--epochs and --delta are required")
    from vfl.privacy.compare import report

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


def _plot_privacy(run_dir: Path, out, overwrite: bool):
    from vfl.experiments.records import check_output_file, load_run
    from vfl.plots import plot_privacy, save_figure

    target = Path(out) if out else run_dir.parent / f"{run_dir.name}-privacy.png"
    target = check_output_file(target, _figure_formats(), what="figure", overwrite=overwrite)
    run = load_run(run_dir)
    if run.manifest.spent is None:
        raise VFLError(f"{run_dir} accounts no privacy (its run claims no guarantee: set privacy.delta)")
    target.parent.mkdir(parents=True, exist_ok=True)
    for p in save_figure(plot_privacy(run), target):
        click.echo(f"wrote {p}")


@cli.command()
@click.argument("run_dir", required=False, type=click.Path(file_okay=False))
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Audit this config's mechanism instead of a run directory's.",
)
@click.option(
    "--runs",
    "K",
    type=click.IntRange(min=10),
    default=None,
    help="Independent noise draws per neighbouring pair and direction [default: the config's audit.runs, else 100].",
)
@click.option(
    "--confidence",
    type=click.FloatRange(0.5, 1.0, max_open=True),
    default=0.95,
    show_default=True,
    help="Level of the one-sided bounds on delta(eps).",
)
@click.option(
    "--kinds",
    type=click.Choice(["natural", "adversarial", "both"]),
    default="both",
    show_default=True,
    help="Which neighbouring pairs to audit.",
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the audit's own noise draws."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory for audit.csv, losses.csv and the figure [default: results/audits/NAME].",
)
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE", help="Override any config key.")
@click.option("--data-dir", type=click.Path(file_okay=False), default=None)
@click.option(
    "--noise-scale",
    type=float,
    default=1.0,
    show_default=True,
    help="Multiply every noise scale of the audited runs by S (calibration only: the "
    "claims stay the accountant's, so with S = 0.33 a sound audit must refute; "
    "the guarantee is void for these runs).",
)
@click.option("--overwrite", is_flag=True, help="Replace --out if it exists.")
@click.option(
    "--bound",
    type=click.Choice(["auto", "gdp", "kl", "clopper-pearson", "truncated-kl"]),
    default="auto",
    show_default=True,
    help="gdp = each run's realised mu (Gaussian releases; Nasr et al. 2023); "
    "one-sided bounds on delta(eps): kl = Chernoff, clopper-pearson = exact "
    "binomial after randomized rounding, truncated-kl = kl of samples capped "
    "where the claimed profile puts almost none; auto = gdp for Gaussian "
    'releases, else per claim the bound with most power (README, "The '
    'audit").',
)
@click.option(
    "--sampler",
    type=click.Choice(["numpy", "exact"]),
    default="numpy",
    help="exact = the deployed sampler (exact discrete noise on its grid; ~100x slower).",
)
@click.option("--batch", type=click.IntRange(min=2), help="Runs pushed through together.")
def audit(
    run_dir,
    config_path,
    K,
    confidence,
    kinds,
    seed,
    out,
    overrides,
    data_dir,
    noise_scale,
    overwrite,
    bound,
    sampler,
    batch,
):
    """Audit a run's privacy claims (white-box): PASS or REFUTED.

    For neighbouring datasets of the run's stated relation, replays the
    mechanism with fresh noise, computes the exact privacy loss of each
    transcript, and tests every claimed (epsilon, delta): the guarantee and,
    where it has one, the paper's own claim.

    \b
    vfl audit --config papers/hu/configs/privacy-a9a.toml
    """
    from vfl.experiments.audit import audit_config, audit_lines, write_audit
    from vfl.experiments.config import config_from_dict, load_config
    from vfl.plots import plot_audit, save_figure

    if (run_dir is None) == (config_path is None):
        raise click.UsageError("give a RUN_DIR or --config (one of them)")
    if config_path is not None:
        config = load_config(config_path, list(overrides))
    else:
        from vfl.experiments.config import apply_overrides
        from vfl.experiments.records import load_run

        run = load_run(run_dir)  # one line for a missing, incomplete or damaged run directory
        config = config_from_dict(apply_overrides(run.config, list(overrides)))
    from vfl.experiments.records import check_output_dir

    final = check_output_dir(
        Path(out) if out else Path("results") / "audits" / config.name, overwrite=overwrite, what="audit directory"
    )
    chosen = ("natural", "adversarial") if kinds == "both" else (kinds,)
    report = audit_config(
        config,
        data_dir=data_dir,
        K=K or config.audit.runs,
        confidence=confidence,
        seed=seed,
        kinds=chosen,
        on_progress=lambda msg: click.echo(msg, err=True),
        noise_scale=noise_scale,
        bound=bound,
        sampler=sampler,
        batch=batch,
    )
    written = write_audit(
        report,
        final,
        {"config": config.to_dict(), "seed": seed, "bound": bound},
        figure=lambda tmp: save_figure(plot_audit(report), tmp / "audit.png"),
    )
    for line in audit_lines(report):
        click.echo(line)
    click.echo(f"wrote {final}/audit.csv, losses.csv, audit.json, " + ", ".join(p.name for p in written))


@cli.command()
@click.argument("root", type=click.Path(exists=True, file_okay=False), default="results/audits", required=False)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Figure path [default: ROOT/audits.png]; the table goes beside it as CSV.",
)
@click.option("--markdown", is_flag=True, help="Print the table as the manual shows it (docs/audit.md).")
def audits(root, out, markdown):
    """Collect every audit under ROOT into one table and one figure.

    One row per audit of a guarantee: the claimed epsilon, the empirical
    lower bound on epsilon with its level, the verdict, and the best pair's
    exercised / charged sensitivity. Audits run with --noise-scale are shown
    as calibrations beside the ones run as configured.

    \b
    vfl audit --config papers/hu/configs/privacy-a9a-row.toml --out results/audits/row
    vfl audit --config papers/hu/configs/privacy-a9a-row.toml --noise-scale 0.5 --out results/audits/row-0.5
    vfl audits results/audits
    """
    from vfl.experiments.audit import audit_table
    from vfl.experiments.records import check_output_file, write_csv_atomic
    from vfl.plots import plot_audit_table, save_figure

    target = check_output_file(Path(out) if out else Path(root) / "audits.png", _figure_formats(), what="figure")
    table = audit_table(root)
    if table.empty:
        raise VFLError(f"{root}: no audit.json of an audited guarantee below it")
    write_csv_atomic(table.drop(columns="directory"), target.with_suffix(".csv"))
    written = save_figure(plot_audit_table(table), target)
    if markdown:
        from vfl.experiments.audit import audit_markdown

        click.echo(audit_markdown(table), nl=False)
    from vfl.experiments.audit import table_lines

    click.echo("\n".join(table_lines(table)))
    click.echo(f"wrote {target.with_suffix('.csv')}, " + ", ".join(str(p) for p in written))


class _ReproduceCommand(click.Command):
    """``vfl reproduce --help`` ends with what each paper can draw (read from its module)."""

    def format_epilog(self, ctx, formatter):
        from vfl.papers import figure_listing

        with formatter.section("Figures and tables"):
            formatter.write_dl(figure_listing())


@cli.command(cls=_ReproduceCommand)
@click.argument("paper", required=False)
@click.argument("figure", required=False)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="results/figures",
    show_default=True,
    help="Where figures, their CSVs, and the runs behind them go (one folder per paper).",
)
@click.option(
    "--configs",
    type=click.Path(file_okay=False),
    default=None,
    help="Directory of edited copies of the figures' configs [default: each paper's own, papers/PAPER/configs/].",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=256),
    default=2,
    show_default=True,
    help="Parallel processes for the sweeps.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].",
)
def reproduce(paper, figure, out, configs, jobs, data_dir):
    """Redraw a paper's figures: vfl reproduce [PAPER [FIGURE]].

    PAPER: hu (ADMM sharing), dp-admm (Huang et al.), ldp (Xiao et al.), private-utility
    (private stacking vs the rest), attacks (what each party learns), or all (default).
    FIGURE: one of the paper's figures (listed below) or all. Finished
    runs are kept, so a second call only redraws.

    \b
    vfl reproduce hu fig1
    """
    from time import perf_counter

    from vfl.experiments.records import check_output_dir
    from vfl.papers import check_configs, check_data, resolve
    from vfl.papers import reproduce as run_reproduce

    chosen = resolve(paper, figure)  # a bad name is refused before anything runs
    configs = Path(configs) if configs is not None else None
    check_configs(chosen, configs)
    check_output_dir(out, exists_ok=True, what="figure directory")
    check_data(chosen, configs, data_dir)
    t0 = perf_counter()
    written = run_reproduce(
        paper, figure, Path(out), configs, data_dir=data_dir, jobs=jobs, echo=lambda msg: click.echo(msg, err=True)
    )
    for p in written:
        click.echo(f"wrote {p}")
    click.echo(f"CSVs beside them in {out}/; {perf_counter() - t0:.0f} s")


def _repository_path(option_value, default: str, what: str) -> Path:
    """``--root`` of `vfl references`: given, or found beside the package."""
    if option_value is not None:
        return Path(option_value)
    # an editable install sits in the clone; a regular one finds the clone from the working directory
    for base in (Path(__file__).resolve().parents[1], Path.cwd()):
        if (base / default).is_dir():
            return base / default
    raise ConfigError(
        f"cannot find the {what} ({default}) next to the installed package or in the "
        f"current directory; run `vfl references` from a clone of the repository, "
        f"or pass --{what.split()[-1]} DIR"
    )


@cli.command()
@click.argument("cases", nargs=-1)
@click.option("--update", is_flag=True, help="Regenerate the reference CSVs (on purpose only).")
@click.option(
    "--root",
    type=click.Path(file_okay=False),
    default=None,
    help="Reference CSVs [default: results/reference of the repository].",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False),
    default=None,
    help="The clone whose configs the cases read [default: the clone that holds --root].",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Where datasets are [default: $VFL_DATA_DIR, else the user cache].",
)
def references(cases, update, root, repo, data_dir):
    """Check short runs against the committed reference curves.

    \b
    vfl references a9a-admm
    """
    from vfl.experiments.reference import (
        CASES,
        RegressionError,
        check_case,
        check_references,
        update_case,
    )

    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        raise ConfigError(f"unknown reference case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}")
    root = _repository_path(root, "results/reference", "reference directory root")
    repo = Path(repo) if repo is not None else root.resolve().parents[1]
    if not update:
        check_references(cases or CASES, root)
    failures = 0
    for name in cases or CASES:
        if update:
            click.echo(f"updated {update_case(name, repo, root, data_dir)}")
            continue
        try:
            check_case(name, repo, root, data_dir)
            click.echo(f"ok    {name}")
        except RegressionError as exc:
            failures += 1
            click.echo(f"FAIL  {exc}")
    if failures:
        raise RegressionError(f"{failures} reference case(s) left their band")


@cli.command()
@click.argument("name", required=False)
def solvers(name):
    """List the registered algorithms, or one solver's config keys.

    \b
    vfl solvers dp_admm
    """
    from vfl.experiments.registry import solver_help, solver_listing

    click.echo("\n".join(solver_listing() if name is None else solver_help(name)))


def main(argv=None) -> int:
    """Console entry point: turns user errors into one line and exit 2.

    Warnings raised by libraries are held back and shown only when the
    command succeeds: a run that ends in a clean error prints that line alone.
    """
    from vfl.experiments.process import keep_freed_memory

    keep_freed_memory()  # large freed blocks reused, not unmapped (see its module)
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            code = cli.main(args=argv, prog_name="vfl", standalone_mode=False)
        except VFLError as exc:
            if debug:
                traceback.print_exc()
            click.echo(f"error: {' '.join(str(exc).split())}", err=True)
            return 2
        except click.exceptions.Abort:
            click.echo("aborted", err=True)
            return 130
        except click.exceptions.Exit as exc:
            return exc.exit_code
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"error: {exc.format_message()}{hint}", err=True)
            return exc.exit_code
    for w in caught:
        warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
