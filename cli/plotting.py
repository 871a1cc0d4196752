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

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from vfl.experiments.records import RunRecord  # noqa: E402

__all__ = ["plot_runs", "save_figure", "STYLE"]

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


def _dataset_title(run: RunRecord) -> str:
    d = run.manifest.get("dataset", {})
    title = d.get("name", "?")
    if d.get("stand_in"):
        title += " (synthetic stand-in, not real gisette)"
    return title


def plot_runs(runs: list[RunRecord], *, suboptimality: bool = False):
    """Return a figure: objective (or suboptimality) and test log loss vs epoch."""
    with plt.rc_context(STYLE):
        fig, (ax_obj, ax_test) = plt.subplots(1, 2, figsize=(7.0, 2.8), constrained_layout=True)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, run in enumerate(runs):
            c = colors[i % len(colors)]
            m = run.metrics
            label = _curve_label(run) if len(runs) == 1 else run.label
            if suboptimality:
                ax_obj.semilogy(m["epoch"], m["suboptimality"].clip(lower=1e-16), color=c, label=label)
            else:
                ax_obj.plot(m["epoch"], m["objective"], color=c, label=label)
            ax_test.plot(m["epoch"], m["test_logloss"], color=c, label=label)

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

        ax_obj.set_xlabel("epoch")
        ax_obj.set_ylabel("relative suboptimality (F - F*) / F*" if suboptimality
                          else "training objective F(x)")
        ax_test.set_xlabel("epoch")
        ax_test.set_ylabel("test log loss (nats per sample)")
        title = ", ".join(sorted({_dataset_title(r) for r in runs}))
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
    name = solver.get("name", "run").replace("_", " ")
    name = {"admm sharing": "ADMM sharing"}.get(name, name)
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
