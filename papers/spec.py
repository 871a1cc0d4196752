"""What a paper package declares: the paper, and its figures and tables as data.

A declaration is light (no numpy, no matplotlib): ``vfl reproduce --help``
lists every figure, and ``vfl reproduce`` checks every config and dataset a
choice needs, before any figure code is imported or anything runs.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from vfl.core.errors import ConfigError

__all__ = ["Figure", "Paper"]


@dataclass(frozen=True)
class Figure:
    """One figure or table of a paper.

    ``configs`` are the stems of the configs (in ``--configs``) whose runs
    it reads. What it writes into ``OUT/<paper>``: the figure as PNG and
    PDF, and beside it the CSVs it was drawn from.
    """

    name: str
    shows: str
    configs: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.name or " " in self.name or self.name == "all":
            raise ValueError(f"bad figure name {self.name!r}")


@dataclass(frozen=True)
class Paper:
    """A reproduced paper: ``vfl reproduce KEY [FIGURE]``.

    ``title`` cites it (authors, year, subject), ``source`` says where its
    experiments are (venue or arXiv id, section), and ``module`` is the
    module whose ``reproduce(which, out, configs, data_dir, jobs, echo)``
    runs (or resumes) what figure ``which`` (or ``"all"``) needs and draws it.
    """

    key: str
    title: str
    source: str
    figures: tuple[Figure, ...]
    module: str

    def __post_init__(self):
        names = [f.name for f in self.figures]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.key}: a figure name is declared twice: {names}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.figures)

    def figure(self, name: str) -> Figure:
        for f in self.figures:
            if f.name == name:
                return f
        raise ConfigError(f"{self.key} has no figure {name!r}; its figures: "
                          f"{', '.join(self.names)}, all")

    def chosen(self, which: str) -> tuple[Figure, ...]:
        """The figures ``which`` names: one, or all of them for ``"all"``."""
        return self.figures if which == "all" else (self.figure(which),)

    def configs(self, which: str) -> list[str]:
        """The configs ``which`` (a figure or "all") reads, each once."""
        return sorted({c for f in self.chosen(which) for c in f.configs})

    def draw(self, which: str, out: Path, configs: Path, *, data_dir=None, jobs: int = 2,
             echo=print) -> list[Path]:
        """Run what ``which`` needs and draw it into ``out``; the files written."""
        self.chosen(which)  # an unknown figure is refused before the figure code loads
        module = importlib.import_module(self.module)
        return module.reproduce(which, Path(out), Path(configs), data_dir=data_dir, jobs=jobs,
                                echo=echo)
