"""What a paper package declares: the paper, and its figures and tables as data.

A declaration is light (no numpy, no matplotlib): ``vfl reproduce --help``
lists every figure, and ``vfl reproduce`` checks every config and dataset a
choice needs, before any figure code is imported or anything runs.

A figure's layout is data too: :class:`Layout` (the grid of panels, size,
titles, caption, legend) of :class:`Panel` (axes, scales, title template,
reference lines) of :class:`Curve` (which runs, which metric column, which
aggregation, label and style), and the CSVs beside it as :class:`Table`.
:mod:`vfl.papers.engine` draws them. What cannot be data (a paper's own
computation: a settling epoch, an accountant, a timing) is a function of
the paper's figure module that the data names (``draw=``, ``rows=``,
``fields=``), looked up when the figure is drawn.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

from vfl.core.errors import ConfigError

__all__ = ["AGGREGATIONS", "Curve", "Figure", "Layout", "Legend", "Panel", "Paper", "Reference", "Table"]

#: how a curve makes its points from its runs (:mod:`vfl.papers.engine` computes the first
#: two): ``mean``: per x, the mean over the run's repeats, with their min and max (the band);
#: ``stats``: the run's own ``metrics_stats.csv`` (mean, std, min, max over its repeats);
#: a sweep's ``levels`` (per level and x: mean +- std over seeds, ``sweep.csv``) and
#: ``final`` (its last iteration per level, ``sweep_final.csv``), which the shared sweep
#: plots of :mod:`vfl.plots` draw
AGGREGATIONS = ("mean", "stats", "levels", "final")


def _pairs(value) -> tuple:
    """A mapping given as a dict or as pairs, kept as sorted pairs (hashable, frozen)."""
    return tuple(sorted(dict(value).items()))


@dataclass(frozen=True)
class Curve:
    """One curve: metric ``column`` of the runs of ``configs/<config>.toml``.

    ``where`` selects grid points of a config that a figure sweeps (short
    key -> value, e.g. ``{"delta": 1e-3, "noise": False}``); a curve whose
    selection matches several points draws one line per point, in grid
    order. ``label`` is a template filled with the point's values and the
    figure's ``fields`` (``"{epsilon:g}"``); ``color`` a matplotlib colour,
    or ``"viridis:epsilon"`` for one colour per value of that grid key.
    ``band``: the opacity of the min-max band over the runs' repeats (0:
    none). ``floor`` clips the values from below (a log axis).
    """

    config: str
    column: str
    label: str
    color: str | None = None
    style: str = "-"
    band: float = 0.15
    aggregate: str = "mean"
    where: tuple = ()
    width: float | None = None
    floor: float | None = None

    def __post_init__(self):
        object.__setattr__(self, "where", _pairs(self.where))
        if self.aggregate not in AGGREGATIONS:
            raise ValueError(
                f"curve {self.label!r}: aggregation {self.aggregate!r} is not one of {', '.join(AGGREGATIONS)}"
            )


@dataclass(frozen=True)
class Reference:
    """A horizontal reference line: ``metric`` of baseline ``key`` of a config's runs
    (``baselines.json``; the mean over repeats when each has its own), e.g. the
    sklearn fits or the central optimum F*."""

    config: str
    key: str
    metric: str
    label: str
    color: str = "black"
    style: str = "--"
    width: float = 0.9
    where: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "where", _pairs(self.where))


@dataclass(frozen=True)
class Legend:
    """Where a legend goes (matplotlib's ``loc``, ``bbox_to_anchor``, font size, frame)."""

    loc: str = "best"
    fontsize: float | None = None
    framealpha: float | None = None
    anchor: tuple | None = None
    ncol: int = 1
    frame: bool = True


@dataclass(frozen=True)
class Panel:
    """One axes: its curves against ``x``, labels, scales, title and reference lines.

    ``title`` (and the labels) are templates filled with the panel's fields
    (``{dataset}``: the dataset of its first curve; a faceted panel's grid
    value; ``{curves[i][key]}``: the fields of its i-th curve's run; a
    reference's label also ``{value}``). ``draw`` names a function of the paper's figure module that
    draws the panel's content, ``draw(ax, panel, view)``, where it is a
    computation (e.g. accuracy against a recomputed epsilon; it reads the
    panel's curves instead of the engine drawing them); ``ylim`` one
    that zooms the y axis, ``ylim(drawn) -> (low, high)``.
    ``positive_x`` drops the points at x <= 0 (iteration 0 on a log axis).
    """

    name: str
    curves: tuple[Curve, ...] = ()
    x: str = "epoch"
    xlabel: str = ""
    ylabel: str = ""
    title: str = ""
    xscale: str = "linear"
    yscale: str = "linear"
    references: tuple[Reference, ...] = ()
    legend: Legend | None = Legend()
    positive_x: bool = False
    title_size: float | None = None
    draw: str | None = None
    ylim: str | None = None

    @property
    def configs(self) -> set[str]:
        return {c.config for c in self.curves} | {r.config for r in self.references}


@dataclass(frozen=True)
class Layout:
    """One figure file: its panels on a grid of ``rows``, its size (inches) and sharing.

    ``facet``: one copy of the declared panels per value of that grid key
    among the runs of their configs, the value in the panels' fields (then
    ``rows=None``: one row per value; ``rows`` and ``columns``: a fixed grid,
    filled row by row, whose extra axes stay empty). The height is ``size[1]`` plus
    ``row_height`` per row; ``outer_labels`` writes the axis labels on the
    bottom row and the left column only.
    ``suptitle`` and ``caption`` are templates like the panel titles;
    ``legend``: one legend for the whole figure, from the first panel's
    entries, instead of the panels' own. ``fields`` names a function of the
    figure module that adds template fields for a run or a facet
    (``fields(values, record) -> dict``; a facet's first run as ``record``),
    such as an epsilon its accountant computes.
    """

    file: str
    panels: tuple[Panel, ...]
    rows: int | None = 1
    columns: int | None = None
    size: tuple[float, float] = (7.0, 3.0)
    row_height: float = 0.0
    sharex: bool = False
    sharey: bool = False
    outer_labels: bool = False
    facet: str | None = None
    suptitle: str = ""
    suptitle_size: float = 9
    caption: str = ""
    caption_width: int = 150
    legend: Legend | None = None
    fields: str | None = None

    def __post_init__(self):
        names = [p.name for p in self.panels]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.file}: a panel name is declared twice: {names}")
        if not self.facet and (not self.rows or len(self.panels) % self.rows) and not self.columns:
            raise ValueError(f"{self.file}: {len(self.panels)} panels do not fill {self.rows} rows")


@dataclass(frozen=True)
class Table:
    """One CSV beside a figure: ``file``, its ``columns`` in order, and the aggregation that
    makes its ``rows``: ``"curves"`` (per drawn curve and x: mean, min, max, runs),
    ``"metrics"`` (the ``metrics.csv`` of its one config, as it is), or a function of the
    figure module (``rows(table, runs, drawn, echo) -> DataFrame``, ``None`` for no file).
    ``configs``: the configs it reads (a subset of the figure's); ``layout``: the layout
    whose drawn curves it reads (default: all of the figure's). ``header``: ``#`` comment lines above it (read back with ``comment="#"``),
    wrapped at ``wrap`` characters (0: one line each)."""

    file: str
    columns: tuple[str, ...] = ()
    rows: str = "curves"
    header: tuple[str, ...] = ()
    wrap: int = 0
    layout: str = ""
    configs: tuple[str, ...] = ()


@dataclass(frozen=True)
class Figure:
    """One figure or table of a paper.

    ``configs`` are the stems of the configs (in ``--configs``) whose runs
    it reads. What it writes into ``OUT/<paper>``: its ``layouts`` as PNG
    and PDF, and beside them its ``tables``. ``draw`` names a function of
    the paper's figure module that draws it whole instead, where it is no
    grid of curves (a surface, a timing table).
    """

    name: str
    shows: str
    configs: tuple[str, ...] = ()
    layouts: tuple[Layout, ...] = ()
    tables: tuple[Table, ...] = ()
    draw: str | None = None

    def __post_init__(self):
        if not self.name or " " in self.name or self.name == "all":
            raise ValueError(f"bad figure name {self.name!r}")
        for layout in self.layouts:
            for panel in layout.panels:
                unknown = sorted(panel.configs - set(self.configs))
                if unknown:
                    raise ValueError(
                        f"figure {self.name}, panel {panel.name!r} of {layout.file}: "
                        f"config {unknown[0]!r} is not one the figure lists "
                        f"({', '.join(self.configs) or 'none'})"
                    )
        for table in self.tables:
            unknown = sorted(set(table.configs) - set(self.configs))
            if unknown:
                raise ValueError(
                    f"figure {self.name}, table {table.file}: config {unknown[0]!r} "
                    f"is not one the figure lists ({', '.join(self.configs)})"
                )
            if table.layout and table.layout not in {lay.file for lay in self.layouts}:
                raise ValueError(
                    f"figure {self.name}, table {table.file}: no layout {table.layout!r} to read the curves of"
                )
            if table.rows == "metrics" and len(table.configs) != 1:
                raise ValueError(f"figure {self.name}, table {table.file}: a copy of metrics.csv reads one config")
        files = [t.file for t in self.tables] + [f"{lay.file}.png" for lay in self.layouts]
        if len(set(files)) != len(files):
            raise ValueError(f"figure {self.name}: an output file is declared twice: {files}")


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
        raise ConfigError(f"{self.key} has no figure {name!r}; its figures: {', '.join(self.names)}, all")

    def chosen(self, which: str) -> tuple[Figure, ...]:
        """The figures ``which`` names: one, or all of them for ``"all"``."""
        return self.figures if which == "all" else (self.figure(which),)

    def configs(self, which: str) -> list[str]:
        """The configs ``which`` (a figure or "all") reads, each once."""
        return sorted({c for f in self.chosen(which) for c in f.configs})

    def draw(
        self, which: str, out: Path, configs: Path | None = None, *, data_dir=None, jobs: int = 2, echo=print
    ) -> list[Path]:
        """Run what ``which`` needs and draw it into ``out``; the files written.

        ``configs``: a directory holding edited copies of the configs, instead
        of the paper's own (:attr:`config_dir`).
        """
        self.chosen(which)  # an unknown figure is refused before the figure code loads
        module = importlib.import_module(self.module)
        configs = Path(configs) if configs is not None else self.config_dir
        return module.reproduce(which, Path(out), configs, data_dir=data_dir, jobs=jobs, echo=echo)
