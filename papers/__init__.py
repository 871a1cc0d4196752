"""The papers ``vfl`` reproduces, one package each, and the engine that redraws them.

A paper is a package under ``papers/`` whose ``__init__`` declares one
:class:`~vfl.papers.spec.Paper`: its citation, and its figures and tables
as data (what each shows, the configs it runs, its layout of panels and
curves, the CSVs it writes). Its ``figures`` module runs the configs and
hands the runs to :mod:`vfl.papers.engine`, which draws the declarations;
what stays in it is the paper's own computation, named from the data. This
module knows no paper by name: it lists them (:data:`PAPERS`), resolves
``vfl reproduce [PAPER [FIGURE]]``, checks every config and dataset a
choice needs before anything runs or is created, and calls the figures.

Adding a paper: its package (declaration, figure code, configs, and any
solvers it brings), and one line in :data:`PAPERS`.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from vfl.core.errors import ConfigError

from .spec import Figure, Paper

__all__ = [
    "PAPERS",
    "Figure",
    "Paper",
    "check_configs",
    "declared_solvers",
    "figure_listing",
    "paper",
    "resolve",
    "reproduce",
]

#: ``vfl reproduce`` key -> the package that declares the paper (one line per paper)
PAPERS = {
    "hu": "vfl.papers.hu",
    "private-utility": "vfl.papers.private_utility",
    "dp-admm": "vfl.papers.dp_admm",
    "ldp": "vfl.papers.ldp",
    "attacks": "vfl.papers.attacks",
}


def paper(key: str) -> Paper:
    """The declaration of paper ``key`` (light: no figure code is imported)."""
    declared = importlib.import_module(PAPERS[key]).PAPER
    if declared.key != key:  # a listing typo, not a user error
        raise RuntimeError(f"PAPERS[{key!r}] declares a paper keyed {declared.key!r}")
    return declared


def declared_solvers() -> dict[str, str]:
    """``solver.name -> "module:Class"`` of the solvers that the paper packages bring."""
    table: dict[str, str] = {}
    for key in PAPERS:
        for name, target in paper(key).solvers.items():
            if name in table:  # a declaration clash, not a user error
                raise RuntimeError(f"solver {name!r} is declared by two papers")
            table[name] = target
    return table


def figure_listing() -> list[tuple[str, str]]:
    """``(PAPER FIGURE, what it shows)`` for every figure and table of every paper."""
    return [(f"{key} {f.name}", f.shows) for key in PAPERS for f in paper(key).figures]


def resolve(first: str | None, second: str | None) -> list[tuple[str, str]]:
    """``(paper, figure)`` pairs for ``vfl reproduce [PAPER|FIGURE] [FIGURE]``.

    ``all`` or nothing: every figure of every paper; a paper alone: all its
    figures; a bare figure name of the first paper (``fig1``) still works.
    """
    if first in (None, "all"):
        if second is not None:
            raise ConfigError("`vfl reproduce all` takes no figure")
        return [(key, "all") for key in PAPERS]
    if first in PAPERS:
        names = paper(first).names
        if second not in (None, "all") and second not in names:
            raise ConfigError(f"{first} has no figure {second!r}; its figures: {', '.join(names)}, all")
        return [(first, second or "all")]
    default = next(iter(PAPERS))
    names = paper(default).names
    if first in names and second is None:
        return [(default, first)]
    raise ConfigError(
        f"unknown paper or figure {first!r}; papers: {', '.join(PAPERS)} (or a figure of {default}: {', '.join(names)})"
    )


def check_configs(chosen: list[tuple[str, str]], configs: Path | None = None) -> None:
    """Refuse, before anything runs or is created, a figure whose configs are missing.

    ``configs``: a directory of edited copies that replaces every paper's own
    ``configs/`` folder; ``None`` reads each paper's own.
    """
    if configs is not None and not Path(configs).is_dir():
        raise ConfigError(f"--configs {configs} is not a directory")
    for key, which in chosen:
        declared = paper(key)
        for name in declared.configs(which):
            path = declared.config_path(name, configs)
            if not path.is_file():
                raise ConfigError(f"{key} {which}: config {path} not found")


def reproduce(
    first: str | None,
    second: str | None,
    out: Path,
    configs: Path | None = None,
    data_dir=None,
    jobs: int = 2,
    echo=print,
) -> list[Path]:
    """Redraw what ``vfl reproduce FIRST SECOND`` names into ``out/<paper>``; the files written."""
    written = []
    for key, which in resolve(first, second):
        declared = paper(key)
        echo(f"== {key}: {declared.title}")
        written += declared.draw(which, Path(out) / key, configs, data_dir=data_dir, jobs=jobs, echo=echo)
    return written
