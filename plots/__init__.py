"""Figures from run records, sweeps and audits (presentation layer), by idea:
:mod:`~vfl.plots.canvas` (backend, style, saving), :mod:`~vfl.plots.run_curves`,
:mod:`~vfl.plots.sweep_figures`, :mod:`~vfl.plots.privacy_figures` and
:mod:`~vfl.plots.layout` (a paper's declared figure). The public names, re-exported."""

from .canvas import STYLE, VECTOR_SUFFIX, dataset_title, figure_formats, plt, save_figure
from .privacy_figures import draw_audit_table, draw_run_privacy, plot_audit, plot_audit_table, plot_privacy
from .run_curves import draw_run, draw_runs, plot_runs, released_metrics
from .sweep_figures import (
    draw_grid_sweep,
    draw_noise_sweep,
    plot_grid_final,
    plot_noise_forms,
    plot_privacy_costs,
    plot_sweep_curves,
    plot_sweep_final,
)

__all__ = [
    "STYLE",
    "VECTOR_SUFFIX",
    "dataset_title",
    "draw_audit_table",
    "draw_grid_sweep",
    "draw_noise_sweep",
    "draw_run",
    "draw_run_privacy",
    "draw_runs",
    "figure_formats",
    "plot_audit",
    "plot_audit_table",
    "plot_grid_final",
    "plot_noise_forms",
    "plot_privacy",
    "plot_privacy_costs",
    "plot_runs",
    "plot_sweep_curves",
    "plot_sweep_final",
    "plt",
    "released_metrics",
    "save_figure",
]
