"""``vfl reproduce``: redraw the figures of every paper ``vfl`` reproduces.

One module per paper, each with a ``TITLE``, a ``FIGURES`` table (figure ->
what it shows) and ``reproduce(which, out, configs, data_dir, jobs, echo)``
that runs (or resumes) what the figure needs from ``configs/`` and writes
PNG + PDF with the CSVs beside them into ``out`` (here ``OUT/<paper>``).
Adding a paper means adding its module and one line to :data:`PAPERS`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import click

from vfl.core.errors import ConfigError

__all__ = ["PAPERS", "check_configs", "figure_listing", "paper_module", "resolve", "reproduce"]

#: paper -> module
PAPERS = {
    "hu": "vfl.cli.reproduce_hu",
    "private-utility": "vfl.cli.reproduce_private",
    "dp-admm": "vfl.cli.reproduce_dp_admm",
    "ldp": "vfl.cli.reproduce_ldp",
}


def paper_module(paper: str):
    return importlib.import_module(PAPERS[paper])


def figure_listing() -> list[tuple[str, str]]:
    """``(PAPER FIGURE, what it shows)`` for every figure and table of every paper."""
    return [(f"{paper} {name}", what) for paper in PAPERS
            for name, what in paper_module(paper).FIGURES.items()]


def resolve(first: str | None, second: str | None) -> list[tuple[str, str]]:
    """``(paper, figure)`` pairs for ``vfl reproduce [PAPER|FIGURE] [FIGURE]``.

    ``all`` or nothing: every figure of every paper; a paper alone: all its
    figures; a bare figure name of the first paper (``fig1``) still works.
    """
    if first in (None, "all"):
        if second is not None:
            raise ConfigError("`vfl reproduce all` takes no figure")
        return [(p, "all") for p in PAPERS]
    if first in PAPERS:
        figures = paper_module(first).FIGURES
        if second not in (None, "all") and second not in figures:
            raise ConfigError(f"{first} has no figure {second!r}; its figures: "
                              f"{', '.join(figures)}, all")
        return [(first, second or "all")]
    hu = paper_module("hu").FIGURES
    if first in hu and second is None:
        return [("hu", first)]
    raise ConfigError(f"unknown paper or figure {first!r}; papers: {', '.join(PAPERS)} "
                      f"(or a figure of hu: {', '.join(hu)})")


def check_configs(chosen: list[tuple[str, str]], configs: Path) -> None:
    """Refuse, before anything runs or is created, a figure whose configs are missing.

    Every paper module lists what a figure needs with ``required_configs(which)``.
    """
    configs = Path(configs)
    if not configs.is_dir():
        raise ConfigError(f"--configs {configs} is not a directory")
    for paper, which in chosen:
        for name in paper_module(paper).required_configs(which):
            if not (configs / f"{name}.toml").is_file():
                raise ConfigError(f"{paper} {which}: config {configs / (name + '.toml')} not found")


def check_data(chosen: list[tuple[str, str]], configs: Path, data_dir=None) -> None:
    """Refuse, before anything runs or is created, a figure whose configs are broken or whose
    registry data is missing (a config's fallback counts when none of its files is there)."""
    from vfl.datasets import REGISTRY, dataset_status
    from vfl.datasets.files import require_files, resolve_data_dir
    from vfl.datasets.registry import get_spec
    from vfl.experiments.config import load_config

    seen = set()
    for paper, which in chosen:
        for name in paper_module(paper).required_configs(which):
            config = load_config(Path(configs) / f"{name}.toml")  # a broken config stops here
            d = config.data
            if d.dataset not in REGISTRY or d.dataset in seen:
                continue
            seen.add(d.dataset)
            present = [f["present"] for f in dataset_status(d.dataset, data_dir)]
            if d.fallback and not any(present):
                continue
            spec = get_spec(d.dataset)
            require_files(spec.name, spec.files, resolve_data_dir(data_dir))


def reproduce(first: str | None, second: str | None, out: Path, configs: Path, data_dir=None,
              jobs: int = 2, echo=click.echo) -> list[Path]:
    written = []
    for paper, which in resolve(first, second):
        module = paper_module(paper)
        echo(f"== {paper}: {module.TITLE}")
        written += module.reproduce(which, Path(out) / paper, Path(configs), data_dir=data_dir,
                                    jobs=jobs, echo=echo)
    return written
