"""Figures from run records (presentation layer).

:func:`plot_runs` draws the paper's Fig. 1a/2a kind of figure: the training
objective and the test log loss against epochs, several runs overlaid, with
the reference lines (central optimum F*, sklearn on all features, sklearn on
party 1's features only) drawn horizontally.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from vfl.experiments.records import RunRecord  # noqa: E402

__all__ = ["dataset_title", "plot_runs", "plot_sweep_curves", "plot_sweep_final", "save_figure", "STYLE"]

# Readable at a single paper column (3.3 in) and on screen.
STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "lines.linewidth": 1.4,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
}

_REFERENCE = [
    # (baselines.json key, label, line style)
    ("sklearn_all_features", "sklearn, all features", "--"),
    ("sklearn_local_only", "sklearn, party 1 only", ":"),
]


def dataset_title(manifest: dict) -> str:
    """The dataset's name for a title; a stand-in always says it is one."""
    d = manifest.get("dataset", {})
    return "gisette stand-in (synthetic)" if d.get("stand_in") else d.get("name", "?")


def plot_runs(runs: list[RunRecord], *, suboptimality: bool = False, x: str = "epoch",
              log: bool = False):
    """Return a figure: objective (or suboptimality) and test log loss.

    ``x`` is ``"epoch"`` or ``"wall"`` (cumulative solver seconds, the
    ``wall_time_s`` column); ``log`` puts the objective on a log scale
    (suboptimality always is).
    """
    xcol, xlabel = ("epoch", "epoch") if x == "epoch" else ("wall_time_s", "solver time (s)")
    with plt.rc_context(STYLE):
        fig, (ax_obj, ax_test) = plt.subplots(1, 2, figsize=(7.0, 2.8), constrained_layout=True)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, run in enumerate(runs):
            c = colors[i % len(colors)]
            m = run.metrics
            label = _curve_label(run) if len(runs) == 1 else run.label
            if suboptimality:
                ax_obj.semilogy(m[xcol], m["suboptimality"].clip(lower=1e-16), color=c, label=label)
            else:
                ax_obj.plot(m[xcol], m["objective"], color=c, label=label)
            ax_test.plot(m[xcol], m["test_logloss"], color=c, label=label)

        # One set of reference lines per distinct (data, objective, partition);
        # labels name the run only when runs on different problems are overlaid.
        by_key = {}
        for run in runs:
            by_key.setdefault(_key(run), run)
        for run in by_key.values():
            b = run.baselines
            suffix = "" if len(by_key) == 1 else f" ({run.label})"
            if not suboptimality and "central" in b:
                ax_obj.axhline(b["central"]["objective"], color="black", lw=0.9, ls="-.",
                               label=f"central optimum F*{suffix}")
            for name, label, ls in _REFERENCE:
                if name in b:
                    ax_test.axhline(b[name]["test_logloss"], color="black" if ls == "--" else "0.45",
                                    lw=0.9, ls=ls, label=label + suffix)

        if log and not suboptimality:
            ax_obj.set_yscale("log")
        ax_obj.set_xlabel(xlabel)
        ax_obj.set_ylabel("relative suboptimality (F - F*) / F*" if suboptimality
                          else "training objective F(x)")
        ax_test.set_xlabel(xlabel)
        ax_test.set_ylabel("test log loss (nats per sample)")
        title = ", ".join(sorted({dataset_title(r.manifest) for r in runs}))
        ax_obj.set_title(f"{title}: training objective")
        ax_test.set_title(f"{title}: test log loss")
        # Zoom the test panel onto the interesting range: the first epochs
        # (loss log 2 at x = 0) would otherwise flatten every curve.
        finals = [r.metrics["test_logloss"].iloc[-1] for r in runs]
        refs = [r.baselines[n]["test_logloss"] for r in runs for n, _, _ in _REFERENCE if n in r.baselines]
        lo, hi = min(finals + refs), max(finals + refs)
        pad = max(0.02, 0.6 * (hi - lo))
        ax_test.set_ylim(lo - 0.3 * pad, hi + pad)
        ax_obj.legend(loc="upper right")
        ax_test.legend(loc="upper right")
    return fig


def _curve_label(run: RunRecord) -> str:
    solver = run.manifest.get("solver", {})
    name = {"admm_sharing": "ADMM sharing", "fdml_sgd": "FDML SGD"}.get(solver.get("name"), "run")
    return f"{name} (rho = {solver['rho']:g})" if "rho" in solver else name


def _key(run: RunRecord) -> str:
    return json.dumps(run.baselines.get("key"), sort_keys=True)


def save_figure(fig, path: Path) -> list[Path]:
    """Save ``fig`` as ``path`` and, for a PNG, also as a PDF next to it."""
    path = Path(path)
    paths = [path]
    if path.suffix.lower() == ".png":
        paths.append(path.with_suffix(".pdf"))
    with plt.rc_context(STYLE):
        for p in paths:
            # Write beside the target, then rename: no half-written figure.
            tmp = p.with_name(f".{p.stem}.partial{p.suffix}")
            fig.savefig(tmp)
            os.replace(tmp, p)
    plt.close(fig)
    return paths


_LEVEL_LABEL = {"sigma": "noise level sigma", "epsilon": "target epsilon (total)"}


def _level_param(frame) -> str:
    return "epsilon" if "epsilon" in frame.columns else "sigma"


def _level_colors(levels):
    cmap = plt.get_cmap("viridis")
    positive = sorted(s for s in levels if s > 0)
    colors = {0.0: "black"}
    for i, s in enumerate(positive):
        colors[s] = cmap(i / max(1, len(positive) - 1) * 0.9)
    return colors


def _reference_lines(ax, baselines):
    for name, label, ls in _REFERENCE:
        if name in baselines:
            ax.axhline(baselines[name]["test_logloss"], color="black" if ls == "--" else "0.45",
                       lw=0.9, ls=ls, label=label)


def _loss_scale(ax, values, baselines):
    """Log y when large noise blows the loss up by orders of magnitude, so the
    small-noise curves and the reference lines stay readable."""
    refs = [baselines[n]["test_logloss"] for n, _, _ in _REFERENCE if n in baselines]
    lo, hi = min(values.min(), *refs), max(values.max(), *refs)
    if hi > 5 * lo:
        ax.set_yscale("log")
    else:
        ax.set_ylim(lo - 0.05 * (hi - lo) - 0.005, hi + 0.3 * (hi - lo) + 0.01)


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
            mean, std = g["test_logloss_mean"], g["test_logloss_std"].fillna(0.0)
            label = "no noise" if level == 0 else f"{param} = {level:g}"
            ax.plot(g["epoch"], mean, color=colors[level], label=label)
            ax.fill_between(g["epoch"], mean - std, mean + std, color=colors[level], alpha=0.15, lw=0)
        _reference_lines(ax, baselines)
        _loss_scale(ax, agg["test_logloss_mean"], baselines)
        ax.set_xlabel("epoch")
        ax.set_ylabel("test log loss (nats per sample)")
        ax.set_title(title)
        ax.legend(loc="upper left", ncol=2, fontsize=6.5, framealpha=0.8)
    return ax.figure


def plot_sweep_final(final, baselines: dict, title: str, *, ax=None):
    """Final test log loss vs the swept level, with the sklearn references."""
    param = _level_param(final)
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        noisy = final[final[param] > 0].sort_values(param)
        ax.errorbar(noisy[param], noisy["test_logloss_mean"], yerr=noisy["test_logloss_std"].fillna(0.0),
                    marker="o", ms=3.5, capsize=2, color="C0", label="ADMM sharing (DP)")
        clean = final[final[param] == 0]
        if len(clean):
            ax.axhline(clean["test_logloss_mean"].iloc[0], color="C0", lw=0.9, ls="-.",
                       label="ADMM sharing, no noise")
        _reference_lines(ax, baselines)
        _loss_scale(ax, final["test_logloss_mean"], baselines)
        _level_axis(ax, noisy[param])
        ax.set_xlabel(_LEVEL_LABEL[param])
        ax.set_ylabel("final test log loss (nats per sample)")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=6.5, framealpha=0.8)
    return ax.figure


def plot_noise_forms(finals: dict, baselines: dict, title: str, *, ax=None):
    """Final test log loss vs sigma, one line per noise form (``label -> final``).

    Log y: the forms differ by orders of magnitude at the same sigma.
    """
    with plt.rc_context(STYLE):
        ax = _panel(ax)
        for (label, final), marker in zip(finals.items(), "osD^v"):
            noisy = final[final["sigma"] > 0].sort_values("sigma")
            ax.errorbar(noisy["sigma"], noisy["test_logloss_mean"],
                        yerr=noisy["test_logloss_std"].fillna(0.0), marker=marker, ms=3.5,
                        capsize=2, label=label)
        clean = next(iter(finals.values()))
        clean = clean[clean["sigma"] == 0]
        if len(clean):
            ax.axhline(clean["test_logloss_mean"].iloc[0], color="C0", lw=0.9, ls="-.",
                       label="no noise")
        _reference_lines(ax, baselines)
        _level_axis(ax, sorted({s for f in finals.values() for s in f["sigma"] if s > 0}))
        ax.set_yscale("log")
        ax.set_xlabel(_LEVEL_LABEL["sigma"])
        ax.set_ylabel("final test log loss (nats per sample)")
        ax.set_title(title)
        ax.legend(loc="upper left", fontsize=6.0, framealpha=0.8)
    return ax.figure


def plot_privacy(run: RunRecord):
    """Epsilon spent vs epoch under the paper's analysis and the tight accountant."""
    p = run.manifest["privacy"]
    m = run.metrics[run.metrics["epoch"] > 0]  # nothing is spent at epoch 0 (log axis)
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(3.5, 2.8), constrained_layout=True)
        ax.plot(m["epoch"], m["epsilon_paper"], color="C3",
                label=f"Corollary 1 (delta = t*{p['delta']:g} + {p['delta_prime']:g})")
        ax.plot(m["epoch"], m["epsilon_tight"], color="C0",
                label=f"{p['tight_accountant'].upper()} (same delta)" if p["tight_accountant"] == "pld"
                and run.config["privacy"]["accountant"] == "paper"
                else f"{p['tight_accountant'].upper()} (delta = {p['delta']:g})")
        budget = (p.get("budget") or {}).get("epsilon")
        if budget:
            ax.axhline(budget, color="black", ls=":", lw=0.9, label=f"budget {budget:g}")
        ax.set_yscale("log")
        ax.set_xlabel("epoch")
        ax.set_ylabel("epsilon spent (worst party)")
        ax.set_title(f"{dataset_title(run.manifest)}: privacy spent")
        ax.legend(loc="lower right")
    return fig
