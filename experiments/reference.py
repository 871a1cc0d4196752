"""Regression of loss curves against committed reference CSVs.

Short deterministic runs (:data:`CASES`) are compared, epoch by epoch, with
``results/reference/<case>.csv`` within a stated tolerance per column
(:data:`TOLERANCES`). The references are regenerated only on purpose::

    vfl references --update

The tolerances allow for floating-point differences between BLAS builds
and machines (ADMM and SGD are contractive, so rounding differences stay
near 1e-12 relative); anything larger is a change of behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.core.errors import ConfigError, VFLError

from .config import load_config
from .runner import run_experiment

__all__ = ["CASES", "TOLERANCES", "RegressionError", "check_case", "check_references", "compute_case", "update_case"]


@dataclass(frozen=True)
class Case:
    config: str  # path from the repository root
    overrides: tuple[str, ...]
    needs_data: bool


CASES = {
    "a9a-admm": Case("papers/hu/configs/fig1-a9a-admm.toml", ("solver.epochs=30",), True),
    "a9a-admm-sigma0.3": Case(
        "papers/hu/configs/fig2-a9a.toml",
        ("solver.epochs=30", "privacy.sigma=0.3", "privacy.form=variable_whitened"),
        True,
    ),
    "a9a-admm-variable-sigma0.3": Case(
        "papers/hu/configs/fig2-a9a.toml", ("solver.epochs=30", "privacy.sigma=0.3", "privacy.form=variable"), True
    ),
    "a9a-sgd": Case("papers/hu/configs/fig1-a9a-sgd.toml", ("solver.epochs=5",), True),
    "gisette-shaped-admm": Case("configs/gisette-shaped.toml", ("solver.epochs=20",), False),
}

# column -> (rtol, atol): |actual - expected| <= atol + rtol * |expected|
TOLERANCES = {
    "objective": (1e-8, 1e-9),
    "train_logloss": (1e-8, 1e-12),
    "test_logloss": (1e-8, 1e-12),
    "train_accuracy": (0.0, 1e-9),  # a count over N: any flipped prediction shows
    "test_accuracy": (0.0, 1e-9),
    "primal_residual": (1e-6, 1e-9),
    "dual_residual": (1e-6, 1e-7),
}


class RegressionError(VFLError):
    """A curve left its reference band."""


def reference_path(root: Path, name: str) -> Path:
    return Path(root) / f"{name}.csv"


def compute_case(name: str, repo: Path, data_dir=None) -> pd.DataFrame:
    """Run case ``name`` (its config read from the clone ``repo``) and return the compared
    columns, one row per epoch."""
    case = CASES[name]
    config = load_config(Path(repo) / case.config, list(case.overrides))
    result = run_experiment(config, data_dir=data_dir, with_baselines=False)
    # columns a solver does not report (SGD has no residuals) are NaN in the reference
    return result.metrics.reindex(columns=["epoch", *TOLERANCES])


def update_case(name: str, repo: Path, root: Path, data_dir=None) -> Path:
    """Regenerate the reference CSV of ``name`` (atomically)."""
    frame = compute_case(name, repo, data_dir)
    path = reference_path(root, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    frame.to_csv(tmp, index=False, float_format="%.17g")  # round-trip exact
    tmp.replace(path)
    return path


def compare(name: str, expected: pd.DataFrame, actual: pd.DataFrame) -> None:
    """Raise :class:`RegressionError` naming the run, column and first bad epoch."""
    if list(expected["epoch"]) != list(actual["epoch"]):
        raise RegressionError(
            f"{name}: epochs {list(actual['epoch'])[:3]}... differ from the "
            f"reference's {list(expected['epoch'])[:3]}..."
        )
    for column, (rtol, atol) in TOLERANCES.items():
        e = expected[column].to_numpy(dtype=float)
        a = actual[column].to_numpy(dtype=float)
        bad = ~((np.abs(a - e) <= atol + rtol * np.abs(e)) | (np.isnan(a) & np.isnan(e)))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise RegressionError(
                f"{name}: column {column} left its band (rtol {rtol:g}, atol {atol:g}) first at "
                f"epoch {int(expected['epoch'].iloc[i])}: got {a[i]!r}, reference {e[i]!r}"
            )


def check_references(names, root: Path) -> None:
    """Every case to check has its reference CSV, before any case runs (a wrong --root
    would otherwise run every case and report each as a regression)."""
    missing = [n for n in names if not reference_path(root, n).is_file()]
    if missing:
        raise ConfigError(
            f"no reference CSV for {', '.join(missing)} in {root} (check --root, or "
            "create them with `vfl references --update`)"
        )


def check_case(name: str, repo: Path, root: Path, data_dir=None) -> None:
    path = reference_path(root, name)
    if not path.is_file():
        raise RegressionError(f"{name}: no reference {path}; create it with `vfl references --update`")
    compare(name, pd.read_csv(path), compute_case(name, repo, data_dir))
