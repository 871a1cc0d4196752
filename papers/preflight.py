"""What ``vfl reproduce`` checks before anything runs: every config a chosen figure needs
loads, and the registry data it reads is present (kept out of :mod:`vfl.papers`, which the
solver registry imports, so reading the declarations loads no dataset code)."""

from __future__ import annotations

from pathlib import Path

from vfl.datasets import REGISTRY, dataset_status
from vfl.datasets.catalog import get_spec
from vfl.datasets.files import require_files, resolve_data_dir
from vfl.experiments.config import load_config

from . import paper

__all__ = ["check_data"]


def check_data(chosen: list[tuple[str, str]], configs: Path | None = None, data_dir=None) -> None:
    """Refuse, before anything runs or is created, a figure whose configs are broken or whose
    registry data is missing (a config's fallback counts when none of its files is there)."""
    seen = set()
    for key, which in chosen:
        declared = paper(key)
        for name in declared.configs(which):
            config = load_config(declared.config_path(name, configs))  # a broken config stops here
            d = config.data
            if d.dataset not in REGISTRY or d.dataset in seen:
                continue
            seen.add(d.dataset)
            present = [f["present"] for f in dataset_status(d.dataset, data_dir)]
            if d.fallback and not any(present):
                continue
            spec = get_spec(d.dataset)
            require_files(spec.name, spec.files, resolve_data_dir(data_dir))
