"""A declared figure layout drawn (presentation layer): panels of curves, references, legends.

The declarations (:mod:`vfl.papers.spec`) are read by attribute, so this
module imports nothing above the experiments. :mod:`vfl.papers.engine`
hands it each panel with its fields, its curves' points and its reference
values already computed; a panel whose content is a paper's computation
comes with the function that draws it.
"""

from __future__ import annotations

import os
import string
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .canvas import STYLE, plt, save_figure

__all__ = ["DrawnPanel", "Series", "draw_layout", "fill", "write_table"]


class _Lenient(string.Formatter):
    """``str.format`` that leaves a field it has no value for as written (a caption's
    ``{0,1}`` is text, not a field)."""

    def get_value(self, key, args, kwargs):
        return kwargs[key] if key in kwargs else _Missing(key)

    def format_field(self, value, spec):
        return f"{{{value.key}}}" if isinstance(value, _Missing) else super().format_field(value, spec)


@dataclass(frozen=True)
class _Missing:
    key: object


def fill(template: str, fields: dict) -> str:
    """``template`` with ``{name[:spec]}`` replaced from ``fields``."""
    return _Lenient().format(template, **fields) if template else template


@dataclass
class Series:
    """One drawn line: a curve's points (columns ``x``, ``mean``, ``min``, ``max``) and style."""

    curve: object
    frame: pd.DataFrame
    label: str
    color: object
    spread: bool  # whether the runs have repeats to band over
    point: object = None
    panel: str = ""
    facet: object = None  # the facet's value, None for a run every facet shares
    x: str = "epoch"  # the panel's x column


@dataclass
class DrawnPanel:
    """A panel as drawn: its declaration, fields, series, reference values and hook."""

    panel: object
    fields: dict
    series: list[Series] = field(default_factory=list)
    references: list[tuple[object, float]] = field(default_factory=list)
    draw: object = None  # draw(ax, panel, view) of the paper, when the panel is its computation
    view: object = None
    ylim: tuple | None = None


def _legend(target, spec, handles=None) -> None:
    kwargs = {"loc": spec.loc}
    for key, value in (("fontsize", spec.fontsize), ("framealpha", spec.framealpha), ("bbox_to_anchor", spec.anchor)):
        if value is not None:
            kwargs[key] = value
    if spec.ncol != 1:
        kwargs["ncol"] = spec.ncol
    if not spec.frame:
        kwargs["frameon"] = False
    target.legend(*(handles or ()), **kwargs)


def _plot(ax, s: Series, positive_x: bool) -> None:
    f = s.frame[s.frame["x"] > 0] if positive_x else s.frame
    c = s.curve
    y = f["mean"].clip(lower=c.floor) if c.floor is not None else f["mean"]
    ax.plot(f["x"], y, color=s.color, ls=c.style, lw=c.width, label=s.label)
    if c.band and s.spread:
        ax.fill_between(f["x"], f["min"], f["max"], color=s.color, alpha=c.band, lw=0)


def _panel(ax, d: DrawnPanel, fields: dict) -> None:
    p = d.panel
    # scales first: a panel's function may then set ticks that a scale change would reset
    if p.xscale != "linear":
        ax.set_xscale(p.xscale)
    if p.yscale != "linear":
        ax.set_yscale(p.yscale)
    if d.draw is not None:
        d.draw(ax, p, d.view)
    for s in d.series:
        _plot(ax, s, p.positive_x)
    for ref, value in d.references:
        ax.axhline(
            value, color=ref.color, ls=ref.style, lw=ref.width, label=fill(ref.label, {**fields, "value": value})
        )
    if p.title:
        ax.set_title(fill(p.title, fields), **({"fontsize": p.title_size} if p.title_size else {}))


def draw_layout(layout, panels: list[DrawnPanel], rows: int, path: Path, fields: dict, save=save_figure) -> list[Path]:
    """Draw ``panels`` row-major on ``rows`` rows (and ``layout.columns``, when declared: a
    fixed grid whose extra axes stay empty) as ``layout`` declares; the files written."""
    cols = layout.columns or len(panels) // rows
    w, h = layout.size
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            rows,
            cols,
            figsize=(w, h + layout.row_height * rows),
            sharex=layout.sharex,
            sharey=layout.sharey,
            constrained_layout=True,
            squeeze=False,
        )
        for i, ax in enumerate(axes.ravel()):
            d = panels[min(i, len(panels) - 1)]
            f = {**fields, **d.fields}
            if i < len(panels):
                _panel(ax, d, f)
                if d.panel.legend is not None and layout.legend is None:
                    _legend(ax, d.panel.legend)
                if d.ylim is not None:
                    ax.set_ylim(*d.ylim)
            elif not layout.outer_labels:
                continue
            row, col = divmod(i, cols)
            if d.panel.xlabel and (not layout.outer_labels or row == rows - 1):
                ax.set_xlabel(fill(d.panel.xlabel, f))
            if d.panel.ylabel and (not layout.outer_labels or col == 0):
                ax.set_ylabel(fill(d.panel.ylabel, f))
        if layout.suptitle:
            fig.suptitle(fill(layout.suptitle, fields), fontsize=layout.suptitle_size)
        if layout.legend is not None:
            _legend(fig, layout.legend, axes[0, 0].get_legend_handles_labels())
        if layout.caption and layout.caption_width:
            text = "\n".join(textwrap.wrap(fill(layout.caption, fields), layout.caption_width))
            fig.text(0.0, -0.01, text, ha="left", va="top", fontsize=5.5)
        elif layout.caption:  # wrapped here: matplotlib's wrap=True parses the mathtext
            # once per word (most of a figure's drawing time); ~22 characters an inch at 6.5 pt
            text = "\n".join(textwrap.wrap(fill(layout.caption, fields), int(22 * w)))
            fig.text(0.5, -0.01, text, ha="center", va="top", fontsize=6.5)
    return save(fig, path)


def write_table(frame: pd.DataFrame, path: Path, header=(), wrap: int = 0) -> Path:
    """``frame`` as a CSV (``%.10g``), written atomically, below ``#`` comment lines
    (``header``, each wrapped at ``wrap`` characters when ``wrap``); read it back with
    ``pandas.read_csv(path, comment="#")``."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial")
    with tmp.open("w") as fh:
        for line in header:
            for part in textwrap.wrap(line, wrap) if wrap else [line]:
                fh.write(f"# {part}\n")
        frame.to_csv(fh, index=False, float_format="%.10g")
    os.replace(tmp, path)
    return path
