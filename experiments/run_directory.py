"""One ``vfl run`` into its run directory: the checks before any work, where the parties
run (this process, Dask workers or the party services), then the run with its checkpoints
and tapped messages, its records and figure written atomically, and its summary.

The command line hands in what is its own: a progress display, the figure's drawing
(the plots layer) and where the summary is printed.
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from pathlib import Path
from time import perf_counter

from vfl.core.column_kinds import column_kinds
from vfl.core.errors import VFLError

from .checkpoint import checkpoints, finished, keep_or_drop
from .config import load_config
from .received import recording
from .records import check_output_dir, write_run
from .run_plan import plan_run
from .runner import check_run_options, run_experiment
from .summary import run_summary
from .transport.dask_cluster import check_cluster_option
from .transport.dask_units import dask_backend
from .transport.service_units import ServiceUnits

__all__ = ["check_run", "default_run_dir", "run_into", "units_for"]


def default_run_dir(name: str) -> Path:
    """``results/runs/NAME-TIMESTAMP`` (``-2``, ``-3``... for two runs in the same second)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path("results") / "runs" / f"{name}-{stamp}"
    n = 1
    while out.exists():  # two runs in the same second
        n += 1
        out = Path("results") / "runs" / f"{name}-{stamp}-{n}"
    return out


def check_run(config_path, overrides: list[str], out, *, overwrite: bool, cluster, **options):
    """The config, the output directory and the options, refused before any work; returns
    the config and the run directory. ``options``: those of :func:`~.runner.check_run_options`."""
    config = load_config(config_path, overrides)
    check_cluster_option(config, cluster)
    out = check_output_dir(
        Path(out) if out else default_run_dir(config.name), overwrite=overwrite, what="run directory"
    )
    check_run_options(config, **options)
    return config, out


def units_for(config, cluster, data_dir, resume=None):
    """Where the parties run: this process, Dask workers or the party services (connected
    before any work); ``resume``: a killed services run's record (its checkpoint's)."""
    if config.run.backend == "services":
        return ServiceUnits(config, resume=resume)
    if config.run.backend != "dask":
        return contextlib.nullcontext()
    return dask_backend(config, cluster, data_dir)


def run_into(
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
    *,
    progress,
    draw,
    echo,
):
    """Run ``config`` on ``backend`` into ``out`` (``resume``: a checkpoint to finish).

    ``progress(total, label, show)``: a display with ``step(row)`` and ``close()``;
    ``draw(result, path, release_only=...)``: loss.png; ``echo``: prints the summary."""
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
    shown = progress(
        per_repeat * config.run.repeats,
        config.name,
        lambda row: (
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
                on_epoch=lambda row: shown.step(row) if row["epoch"] > 0 else None,
                resume=resume,
                checkpoint=save,
            )
    except VFLError as exc:  # a lost unit or scheduler: the run directory says how to resume
        raise type(exc)(f"{exc}{keep_or_drop(out, exc, fresh=not existed)}") from None
    finally:
        shown.close()
    overwrite = finished(result, out, resume) or overwrite  # (replaces the checkpoint)
    path = write_run(
        result,
        out,
        overwrite=overwrite,
        extra=([lambda tmp: draw(result, tmp / "loss.png", release_only=release_only)] if figure else [])
        + ([] if tap is None else [tap.keep(result, plan.first.data)]),
    )
    if hasattr(backend, "finish"):  # the party services may let its kept replies go
        backend.finish()
    if not quiet:
        echo(run_summary(result, path, perf_counter() - t0))
