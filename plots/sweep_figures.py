"""Sweep figures (presentation layer): test loss against epochs per noise level, the
final loss against the level, per noise form or accounting, and a grid's final values."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.ticker
import numpy as np

from vfl.experiments.records import load_run

from .canvas import STYLE, dataset_title, plt, save_figure
from .run_curves import _legend_below, _reference_color

__all__ = [
    "draw_grid_sweep",
    "draw_noise_sweep",
    "plot_grid_final",
    "plot_noise_forms",
    "plot_privacy_costs",
    "plot_sweep_curves",
    "plot_sweep_final",
]

_REFERENCE = [
    # (baselines.json key, label, line style) of the sweep figures' reference lines
    ("sklearn_all_features", "sklearn, all features", "--"),
    ("sklearn_local_only", "sklearn, party 1 only", ":"),
]


def draw_noise_sweep(first_run: Path, out: Path, agg, final, param: str) -> list[Path]:
    """``vfl sweep-noise``'s two figures: test loss per level against epochs, and the final
    test loss against the level, with the references of the sweep's first run."""

    manifest = load_run(first_run).manifest
    baselines = json.loads((Path(out) / "baselines.json").read_text())
    title = dataset_title(manifest)
    what = "under noise" if param == "sigma" else "vs target epsilon"
    written = save_figure(
        plot_sweep_curves(agg, baselines, f"{title}: test loss {what}"), Path(out) / "sweep_curves.png"
    )
    written += save_figure(
        plot_sweep_final(final, baselines, f"{title}: final test loss", method=manifest.solver.title),
        Path(out) / "sweep_final.png",
    )
    return written


_LEVEL_LABEL = {"sigma": "noise level sigma", "epsilon": "target epsilon (total)"}


def _level_param(frame) -> str:
    return "epsilon" if "epsilon" in frame.columns else "sigma"


#: distinct colours for up to 8 levels, in order (a sequential map made neighbours, e.g.
#: epsilon 4 and 8, nearly the same colour); none is black ("no noise")
_LEVEL_COLORS = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C9")


def _level_colors(levels):
    positive = sorted(s for s in levels if s > 0)
    colors = {0.0: "black"}
    if len(positive) <= len(_LEVEL_COLORS):
        colors.update(zip(positive, _LEVEL_COLORS))
        return colors
    cmap = plt.get_cmap("viridis")
    for i, s in enumerate(positive):
        # from 0.25: viridis' darkest end is indistinguishable from "no noise" in black
        colors[s] = cmap(0.25 + 0.65 * i / max(1, len(positive) - 1))
    return colors


def _reference_lines(ax, baselines):
    for name, label, ls in _REFERENCE:
        if name in baselines:  # a private run's label says "(diagnostic)"
            ax.axhline(
                baselines[name]["test_logloss"],
                color=_reference_color(ls),
                lw=0.9,
                ls=ls,
                label=baselines[name].get("label", label),
            )


def _loss_scale(ax, values, baselines, spread=None):
    """Log y when large noise blows the loss up by orders of magnitude, so the
    small-noise curves and the reference lines stay readable; otherwise limits that hold
    every value, its ``spread`` (the +-1 std of a band or error bar) and every reference."""
    values = np.asarray(values, dtype=float)
    spread = np.zeros_like(values) if spread is None else np.nan_to_num(np.asarray(spread, dtype=float))
    refs = [baselines[n]["test_logloss"] for n, _, _ in _REFERENCE if n in baselines]
    lo = min([float(np.nanmin(values - spread)), *refs])
    hi = max([float(np.nanmax(values + spread)), *refs])
    if lo > 0 and hi > 5 * lo:
        ax.set_yscale("log")
    else:
        pad = 0.05 * (hi - lo) + 0.005
        ax.set_ylim(lo - pad, hi + pad)


def _level_axis(ax, levels):
    """Log x labelled exactly at the swept levels, not at log-axis minor ticks."""
    ax.set_xscale("log")
    ax.set_xticks(levels, [f"{v:g}" for v in levels])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _panel(ax):
    """``ax``, or a new single-column figure's axes when drawing stand-alone."""
    if ax is None:
        _, ax = plt.subplots(figsize=(3.5, 2.8), constrained_layout=True)
    return ax


def plot_sweep_curves(agg, baselines: dict, title: str, *, ax=None):
    """Test log loss vs epoch, one curve per level (mean across seeds, +-1 std band)."""
    param = _level_param(agg)
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        colors = _level_colors(agg[param].unique())
        for level, g in agg.groupby(param):
            mean, std = g["test_logloss_mean"], g["test_logloss_std"].fillna(0.0)  # band: +-1 std
            label = "no noise" if level == 0 else f"{param} = {level:g}"
            ax.plot(g["epoch"], mean, color=colors[level], label=label)
            ax.fill_between(g["epoch"], mean - std, mean + std, color=colors[level], alpha=0.15, lw=0)
        _reference_lines(ax, baselines)
        _loss_scale(ax, agg["test_logloss_mean"], baselines, agg["test_logloss_std"])
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("epoch")
        ax.set_ylabel("test log loss (nats per sample)\nmean, band +- 1 std over seeds")
        ax.set_title(title)
        _legend_below(ax, ncol=2, fontsize=6.5)
    return ax.figure


def plot_sweep_final(final, baselines: dict, title: str, *, method: str, ax=None):
    """Final test log loss vs the swept level, with the sklearn references.

    ``method``: the swept solver's title (its manifest's ``solver.title``).
    """
    param = _level_param(final)
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        noisy = final[final[param] > 0].sort_values(param)
        ax.errorbar(
            noisy[param],
            noisy["test_logloss_mean"],
            yerr=noisy["test_logloss_std"].fillna(0.0),
            marker="o",
            ms=3.5,
            capsize=2,
            color="C0",
            label=f"{method}, noisy shares" if param == "sigma" else f"{method}, calibrated noise",
        )
        clean = final[final[param] == 0]
        if len(clean):
            ax.axhline(clean["test_logloss_mean"].iloc[0], color="C0", lw=0.9, ls="-.", label=f"{method}, no noise")
        _reference_lines(ax, baselines)
        _loss_scale(ax, final["test_logloss_mean"], baselines, final["test_logloss_std"])
        _level_axis(ax, noisy[param])
        ax.set_xlabel(_LEVEL_LABEL[param])
        ax.set_ylabel("final test log loss\n(mean +- 1 std over seeds)")
        ax.set_title(title)
        _legend_below(ax, fontsize=6.5)
    return ax.figure


def plot_noise_forms(finals: dict, baselines: dict, title: str, *, ax=None):
    """Final test log loss vs sigma, one line per noise form (``label -> final``).

    Log y: the forms differ by orders of magnitude at the same sigma.
    """
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        for (label, final), marker in zip(finals.items(), "osD^v"):
            noisy = final[final["sigma"] > 0].sort_values("sigma")
            ax.errorbar(
                noisy["sigma"],
                noisy["test_logloss_mean"],
                yerr=noisy["test_logloss_std"].fillna(0.0),
                marker=marker,
                ms=3.5,
                capsize=2,
                label=label,
            )
        clean = next(iter(finals.values()))
        clean = clean[clean["sigma"] == 0]
        if len(clean):
            ax.axhline(clean["test_logloss_mean"].iloc[0], color="C0", lw=0.9, ls="-.", label="no noise")
        _reference_lines(ax, baselines)
        _level_axis(ax, sorted({s for f in finals.values() for s in f["sigma"] if s > 0}))
        ax.set_yscale("log")
        ax.set_xlabel(_LEVEL_LABEL["sigma"])
        ax.set_ylabel("final test log loss\n(mean +- 1 std over seeds)")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=6.0, framealpha=0.8)
    return ax.figure


def plot_privacy_costs(finals: dict, baselines: dict, title: str, *, ax=None):
    """Final test log loss vs the target epsilon, one line per accounting (``label -> final``)."""
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        for (label, final), marker in zip(finals.items(), "osD^v"):
            f = final.sort_values("epsilon")
            ax.errorbar(
                f["epsilon"],
                f["test_logloss_mean"],
                yerr=f["test_logloss_std"].fillna(0.0),
                marker=marker,
                ms=3.5,
                capsize=2,
                label=label,
            )
        _reference_lines(ax, baselines)
        ax.set_yscale("log")
        _level_axis(ax, sorted({e for f in finals.values() for e in f["epsilon"]}))
        ax.set_xlabel(_LEVEL_LABEL["epsilon"])
        ax.set_ylabel("final test log loss\n(mean +- 1 std over seeds)")
        ax.set_title(title)
        # below the axes: the sound curves sit at the top, where a legend would hide them
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=6, frameon=False)
        ax.figure.set_size_inches(4.2, 4.0)
    return ax.figure


def plot_grid_final(final, names: list[str], title: str):
    """The last iteration of every grid point: test loss (and epsilon, if any) vs the first key.

    One line per combination of the other keys; mean +- 1 std over seeds.
    """
    first, rest = names[0], names[1:]
    metrics = [m for m in ("test_logloss", "test_accuracy", "epsilon_tight") if f"{m}_mean" in final.columns][:2]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(
            1, len(metrics), figsize=(3.6 * len(metrics), 2.8), squeeze=False, constrained_layout=True
        )
        groups = final.groupby(rest) if rest else [((), final)]
        for key, g in groups:
            key = key if isinstance(key, tuple) else (key,)
            label = ", ".join(f"{k} = {v}" for k, v in zip(rest, key)) or None
            g = g.sort_values(first)
            numeric = np.issubdtype(g[first].dtype, np.number)
            x = g[first] if numeric else np.arange(len(g))
            for ax, m in zip(axes[0], metrics):
                ax.errorbar(x, g[f"{m}_mean"], yerr=g[f"{m}_std"].fillna(0.0), marker="o", ms=3, capsize=2, label=label)
                if not numeric:
                    ax.set_xticks(x, g[first].astype(str))
        for ax, m in zip(axes[0], metrics):
            ax.set_xlabel(first)
            ax.set_ylabel(f"final {m.replace('_', ' ')} (mean +- 1 std over seeds)")
            ax.set_title(title)
            if label:
                ax.legend(fontsize=6)
    return fig


def draw_grid_sweep(runs, final, out: Path, title: str) -> tuple[list[str], list[Path]]:
    """``vfl sweep``'s figure of the final values (``out``/sweep_final.png); returns the grid's
    keys and the files written."""
    names = [k for k, _ in runs[0].values]
    return names, save_figure(plot_grid_final(final, names, f"{title}: final values"), Path(out) / "sweep_final.png")
