"""The generic engine that draws any paper's declared figures and tables from its runs.

A paper's figure module makes (or keeps) the runs its figures declare and
hands them here as ``config -> [Point]`` (one point per run, or per grid
point of a sweep). This module computes each declared :class:`Curve`'s
aggregation, lays the panels out (:func:`vfl.plots.layout.draw_layout`:
PNG and PDF), writes the declared :class:`Table` CSVs beside them, and
calls the functions of the paper's figure module that a declaration names
(``draw``, ``rows``, ``fields``, ``ylim``) where a piece is the paper's own
computation.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from vfl.core.errors import ConfigError
from vfl.plots import dataset_title, plt, save_figure
from vfl.plots.layout import DrawnPanel, Series, draw_layout, fill, write_table

from .spec import Curve, Figure, Layout, Reference, Table

__all__ = ["Point", "View", "aggregate", "curves_table", "draw", "points", "reference_value", "repeats", "run_stats"]


@dataclass(frozen=True)
class Point:
    """One run a figure reads: its grid values (``{}`` for a plain run) and its record
    (a :class:`~vfl.experiments.records.RunRecord`, or what the paper's runner loaded)."""

    values: dict
    record: object


@dataclass
class View:
    """What a paper's panel function sees: the runs (of its facet) and the panel's fields."""

    runs: dict
    fields: dict = field(default_factory=dict)


def points(runs: dict, config: str, where=()) -> list[Point]:
    """The points of ``config`` whose grid values match ``where``, in the runner's order."""
    return [p for p in runs.get(config, []) if all(p.values.get(k) == v for k, v in where)]


def repeats(record) -> pd.DataFrame:
    """Every repeat's metrics (a run of one repeat: its metrics as repeat 0)."""
    return record.repeats if record.repeats is not None else record.metrics.assign(repeat=0)


def run_stats(record) -> pd.DataFrame:
    """The run's ``metrics_stats.csv``, or its layout for a run of one repeat (no spread)."""
    path = Path(record.path) / "metrics_stats.csv"
    if path.is_file():
        return pd.read_csv(path)
    m = record.metrics
    out = {"epoch": m["epoch"], "n_repeats": 1}
    for c in m.columns:
        if c != "epoch":
            for s in ("mean", "min", "max"):
                out[f"{c}_{s}"] = m[c]
            out[f"{c}_std"] = np.nan
    return pd.DataFrame(out)


def aggregate(record, curve: Curve, x: str = "epoch") -> tuple[pd.DataFrame, bool]:
    """(points ``x, mean, min, max, runs`` (and ``std`` for ``stats``), whether there is a
    spread over repeats) of ``curve`` on ``record``, by the curve's aggregation."""
    if curve.aggregate == "stats":
        s = run_stats(record)
        frame = pd.DataFrame(
            {"x": s[x], "runs": s["n_repeats"], **{k: s[f"{curve.column}_{k}"] for k in ("mean", "std", "min", "max")}}
        )
        return frame, f"{curve.column}_min" in s and s["n_repeats"].iloc[0] > 1
    reps = repeats(record)
    if curve.column not in reps.columns:
        raise ConfigError(f"{record.path}: metrics have no column {curve.column!r}")
    g = reps.groupby(x, sort=True)[curve.column]
    frame = pd.DataFrame({"mean": g.mean(), "min": g.min(), "max": g.max(), "runs": g.size()})
    return frame.rename_axis("x").reset_index(), record.repeats is not None


def reference_value(runs: dict, ref: Reference) -> float:
    """``ref.metric`` of baseline ``ref.key`` of the config's first run: the mean over its
    repeats' references when each repeat has its own."""
    b = points(runs, ref.config, ref.where)[0].record.baselines
    vals = [rep[ref.key][ref.metric] for rep in b.get("per_repeat", [b]) if ref.key in rep]
    return float(np.mean(vals)) if vals else float("nan")


def _marked(ref: Reference, view: dict, panel) -> Reference:
    """``ref`` with "(diagnostic)" in its label when it comes from a private run or its panel
    draws one: the line is fitted on the training rows such a run protects."""
    configs = {ref.config, *(c.config for c in panel.curves)}
    private = any(
        p.record.manifest.released.private for c in configs for p in view.get(c, ()) if hasattr(p.record, "manifest")
    )
    return replace(ref, label=f"{ref.label} (diagnostic)") if private else ref


def _colors(curve: Curve, runs: dict) -> dict:
    """``"cmap:key"``: one colour per value of grid key ``key`` among the config's runs."""
    cmap, _, key = curve.color.partition(":")
    levels = sorted({p.values[key] for p in runs[curve.config] if p.values.get(key) is not None})
    return {v: plt.get_cmap(cmap)(0.92 * i / max(1, len(levels) - 1)) for i, v in enumerate(levels)}


def _dataset(runs: dict, configs) -> dict:
    for config in sorted(configs):
        manifest = getattr(runs[config][0].record, "manifest", None) if runs.get(config) else None
        if manifest is not None:
            return {"dataset": dataset_title(manifest)}
    return {}


def _facets(layout: Layout, runs: dict) -> list:
    if not layout.facet:
        return [None]
    configs = set().union(*(p.configs for p in layout.panels)) or set(runs)
    seen = []
    for config in [c for c in runs if c in configs]:
        for p in runs.get(config, []):
            value = p.values.get(layout.facet)
            if value is not None and value not in seen:
                seen.append(value)
    return seen


def _facet_runs(runs: dict, key, value) -> dict:
    """The runs of one facet: the points at its value, and the points without the key
    (a run every facet shares, such as the non-private baseline)."""
    if key is None:
        return runs
    kept = {c: [p for p in pts if p.values.get(key, value) == value] for c, pts in runs.items()}
    return {c: pts for c, pts in kept.items() if pts}


def _series(curve: Curve, view: dict, runs: dict, panel, fields_of) -> list[Series]:
    out = []
    colors = _colors(curve, runs) if curve.color and ":" in curve.color else None
    for p in points(view, curve.config, curve.where):
        frame, spread = aggregate(p.record, curve, panel.x)
        color = colors[p.values[curve.color.partition(":")[2]]] if colors else curve.color
        out.append(Series(curve, frame, fill(curve.label, fields_of(p)), color, spread, p, panel.name, x=panel.x))
    return out


def _hook(hooks, name: str | None):
    if name is None:
        return None
    if not hasattr(hooks, name):  # a declaration naming a function its module lacks
        raise RuntimeError(f"{hooks.__name__} has no function {name!r} that its declaration names")
    return getattr(hooks, name)


def _runs_field(series: list[Series], runs: dict) -> str:
    counts = {int(s.frame["runs"].iloc[0]) for s in series} or {
        int(p.record.config.get("run", {}).get("repeats", 1))
        for pts in runs.values()
        for p in pts
        if isinstance(getattr(p.record, "config", None), dict)
    }
    return "/".join(map(str, sorted(counts)))


def _layout(layout: Layout, runs: dict, hooks, out: Path, figure_fields: dict, drawn: list, save) -> list[Path]:
    extra = _hook(hooks, layout.fields)

    def fields_of(p: Point) -> dict:
        return {**p.values, **(extra(p.values, p.record) if extra else {})}

    panels, facets = [], _facets(layout, runs)
    for value in facets:
        view = _facet_runs(runs, layout.facet, value)
        for panel in layout.panels:
            fields = {
                **figure_fields,
                **_dataset(view, panel.configs or view),
                **({layout.facet: value} if layout.facet else {}),
            }
            if extra and layout.facet and value is not None:
                first = next(
                    (p.record for pts in view.values() for p in pts if p.values.get(layout.facet) == value), None
                )
                fields.update(extra({layout.facet: value}, first))
            # a panel drawn by the paper's function hands it its curves instead
            series = [] if panel.draw else [s for c in panel.curves for s in _series(c, view, runs, panel, fields_of)]
            for s in series:
                s.facet = value if layout.facet in s.point.values else None
            fields["curves"] = [fields_of(s.point) for s in series]
            refs = [(_marked(r, view, panel), reference_value(view, r)) for r in panel.references]
            figure_fields.update({f"{r.key}_{r.metric}": v for r, v in refs})
            d = DrawnPanel(panel, fields, series, refs, _hook(hooks, panel.draw), View(view, fields))
            d.ylim = _hook(hooks, panel.ylim)(d) if panel.ylim else None
            panels.append(d)
            for s in series:
                if not any(s.curve is t.curve and s.point is t.point for t in drawn):
                    drawn.append(s)
    rows = layout.rows or len(facets)
    figure_fields["runs"] = _runs_field(drawn, runs)
    return draw_layout(layout, panels, rows, out / f"{layout.file}.png", figure_fields, save)


def curves_table(drawn: list[Series]) -> pd.DataFrame:
    """Per drawn curve and x (named as its panel's): its panel, label, config, column, mean,
    min, max and runs."""
    frames = [
        s.frame.rename(columns={"x": s.x}).assign(
            panel=s.panel, curve=s.label, config=s.curve.config, column=s.curve.column
        )
        for s in drawn
    ]
    return pd.concat(frames, ignore_index=True)


def _table(table: Table, runs: dict, drawn: dict, hooks, out: Path, fields: dict, echo) -> Path | None:
    drawn = [s for file, series in drawn.items() if table.layout in ("", file) for s in series]
    if table.rows == "curves":
        frame = curves_table(drawn)
    elif table.rows == "metrics":  # the run's own metrics.csv, byte for byte
        (config,) = table.configs
        shutil.copyfile(Path(runs[config][0].record.path) / "metrics.csv", out / table.file)
        return out / table.file
    else:
        frame = _hook(hooks, table.rows)(table, runs, drawn, echo)
        if frame is None:
            return None
    if table.columns:
        frame = frame[list(table.columns)]
    return write_table(frame, out / table.file, [fill(h, fields) for h in table.header], table.wrap)


def draw(
    figure: Figure, runs: dict, out: Path, hooks, *, echo=print, save=save_figure, **context
) -> tuple[list[Path], list[Path]]:
    """Draw ``figure`` from ``runs`` into ``out``: (the figure files, the CSVs written).

    ``hooks``: the paper's figure module, where the functions its
    declaration names live. ``save``: how a figure is saved (PNG + PDF).
    ``context`` (such as the configs folder) goes to a figure's own ``draw``.
    """
    echo(f"{figure.name}:")
    if figure.draw:
        return _hook(hooks, figure.draw)(figure, runs, Path(out), echo, **context), []
    figures, tables, drawn, fields = [], [], {}, {"figure": figure.name}
    for layout in figure.layouts:
        figures += _layout(layout, runs, hooks, Path(out), fields, drawn.setdefault(layout.file, []), save)
    for table in figure.tables:
        path = _table(table, runs, drawn, hooks, Path(out), fields, echo)
        tables += [path] if path else []
    return figures, tables
