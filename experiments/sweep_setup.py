"""What ``vfl sweep`` and ``vfl sweep-noise`` settle before any run: the config, the seeds,
the sweep directory and the scheduler, checked first, the noise levels of a noise sweep,
and the table of final values they print.

``parse(text, option, kind)`` is the command line's own reading of a comma-separated
option (its errors are the command line's)."""

from __future__ import annotations

from pathlib import Path

from vfl.core.errors import ConfigError

from .config import check_epsilons, check_seeds, check_sigmas, load_config
from .sweep import check_scheduler, check_sweep_dir

__all__ = ["final_table", "noise_levels", "prepare_sweep"]


def prepare_sweep(config_path, overrides, epochs, seeds, out, scheduler, parse):
    """Config, seeds and output checked before any work; returns them and the overrides."""
    overrides = list(overrides) + ([f"solver.epochs={epochs}"] if epochs else [])
    config = load_config(config_path, overrides)
    seed_list = check_seeds(parse(seeds, "--seeds", int)) if seeds else config.sweep.seeds
    out = check_sweep_dir(Path(out) if out else Path("results") / "sweeps" / config.name)
    if scheduler:
        check_scheduler(scheduler)
    return config, seed_list, out, overrides


def noise_levels(config, sigmas, epsilons, parse) -> tuple[str, list[float]]:
    """The swept parameter (``"sigma"`` or ``"epsilon"``) and its levels: the options', else
    the config's [sweep] lists (epsilons first, in accounting mode)."""
    if epsilons or (not sigmas and config.sweep.epsilons):
        return "epsilon", check_epsilons(parse(epsilons, "--epsilons", float)) if epsilons else config.sweep.epsilons
    levels = check_sigmas(parse(sigmas, "--sigmas", float)) if sigmas else config.sweep.sigmas
    if not any(level > 0 for level in levels):
        raise ConfigError(
            f"nothing to sweep: the noise levels are {levels} (give --sigmas "
            "0,0.1,1 or a [sweep] sigmas list in the config)"
        )
    return "sigma", levels


def final_table(final, keys: list[str], metrics) -> str:
    """The final values per grid point as printed text: the swept ``keys``, then those of
    ``metrics`` the sweep has."""
    cols = [*keys, "epoch", "n_seeds", *[c for c in metrics if c in final.columns]]
    return final[cols].to_string(index=False, float_format="%.4f")
