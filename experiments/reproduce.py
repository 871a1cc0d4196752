"""Runs for figures: a paper's configs read by name, and run directories kept when current.

What every paper's figure code needs from the experiment layer, in one
place: :func:`figure_config` reads ``CONFIGS/<name>.toml`` with overrides,
and :func:`ensure_run` runs a config into a run directory unless a
complete run of the same config is already there (so a second
``vfl reproduce`` only redraws).
"""

from __future__ import annotations

from pathlib import Path

from vfl.core.errors import ConfigError

from .config import Config, load_config
from .records import RunRecord, load_run, run_is_current, write_run
from .runner import run_experiment

__all__ = ["ensure_run", "figure_config"]


def figure_config(configs: Path, name: str, overrides=()) -> Config:
    """``<configs>/<name>.toml`` (a paper's ``configs/`` folder or ``--configs DIR``) with
    ``overrides`` (``KEY=VALUE`` strings), validated."""
    path = Path(configs) / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"config {path} not found (--configs DIR must hold every config the figure reads)")
    return load_config(path, list(overrides))


def ensure_run(config: Config, path: Path, data_dir=None, echo=None) -> RunRecord:
    """The run of ``config`` at ``path``: kept when complete and current, else run and written
    atomically. ``echo`` (optional) hears which of the two happened."""

    if run_is_current(path, config):
        if echo:
            echo(f"  {config.name}: kept (already complete)")
    else:
        if echo:
            echo(f"  {config.name}: running {config.solver.epochs} iterations of {config.solver.name}")
        write_run(run_experiment(config, data_dir=data_dir), path, overwrite=True)
    return load_run(path)
