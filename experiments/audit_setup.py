"""What ``vfl audit`` audits, settled before any work: the config (a config file's, or the
run directory's own, with overrides) and the audit directory."""

from __future__ import annotations

from pathlib import Path

from .config import apply_overrides, config_from_dict, load_config
from .records import check_output_dir, load_run

__all__ = ["audit_setup"]


def audit_setup(run_dir, config_path, overrides, out, *, overwrite: bool):
    """The audited config and the checked audit directory [default: results/audits/NAME]."""
    if config_path is not None:
        config = load_config(config_path, list(overrides))
    else:
        run = load_run(run_dir)  # one line for a missing, incomplete or damaged run directory
        config = config_from_dict(apply_overrides(run.config, list(overrides)))
    final = check_output_dir(
        Path(out) if out else Path("results") / "audits" / config.name, overwrite=overwrite, what="audit directory"
    )
    return config, final
