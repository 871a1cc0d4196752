"""What a paper package declares: the paper, and its figures and tables as data.

A declaration is light (no numpy, no matplotlib): ``vfl reproduce --help``
lists every figure, and ``vfl reproduce`` checks every config and dataset a
choice needs, before any figure code is imported or anything runs.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
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
    module of the paper's package whose ``reproduce(which, out, configs,
    data_dir, jobs, echo)`` runs (or resumes) what figure ``which`` (or
    ``"all"``) needs and draws it. The paper's configs are the TOML files in
    its package's ``configs/`` folder (:attr:`config_dir`), installed with it.
    ``solvers`` registers the algorithms the paper brings, ``solver.name ->
    "module:Class"`` (modules of its own package, on the algorithm layer:
    they import the core, the privacy analysis and the solver families, never
    the layers above), beside the families' ones in the registry.
    """

    key: str
    title: str
    source: str
    figures: tuple[Figure, ...]
    module: str
    solvers: dict[str, str] = field(default_factory=dict, hash=False)

    def __post_init__(self):
        names = [f.name for f in self.figures]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.key}: a figure name is declared twice: {names}")

    @property
    def package(self) -> str:
        return self.module.rpartition(".")[0]

    @property
    def config_dir(self) -> Path:
        """The paper's own configs: ``<its package>/configs``, shipped with the package."""
        spec = importlib.util.find_spec(self.package)
        return Path(spec.origin).parent / "configs"

    def config_path(self, name: str, configs: Path | None = None) -> Path:
        """Config ``name`` of this paper: in ``configs`` when given, else in :attr:`config_dir`."""
        return Path(configs if configs is not None else self.config_dir) / f"{name}.toml"

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

    def draw(self, which: str, out: Path, configs: Path | None = None, *, data_dir=None,
             jobs: int = 2, echo=print) -> list[Path]:
        """Run what ``which`` needs and draw it into ``out``; the files written.

        ``configs``: a directory holding edited copies of the configs, instead
        of the paper's own (:attr:`config_dir`).
        """
        self.chosen(which)  # an unknown figure is refused before the figure code loads
        module = importlib.import_module(self.module)
        configs = Path(configs) if configs is not None else self.config_dir
        return module.reproduce(which, Path(out), configs, data_dir=data_dir, jobs=jobs, echo=echo)
