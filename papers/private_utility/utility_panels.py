"""The privacy-utility figure's drawing: one metric against epsilon per dataset (private
stacking and ADMM sharing with their bands, the noiseless references flat), its tables, and
README's table of it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["Utility", "noise_draws", "tuning_table", "utility_markdown", "utility_panel", "utility_table"]


#: dashed: a diagnostic curve (scored with a model no party could deploy)
_STYLE = {"private stacking": ("C0", "o", "-"), "ADMM sharing (row-level DP)": ("C3", "s", "--")}
_LEGEND = {
    "ADMM sharing (row-level DP)": "ADMM sharing (row-level DP), diagnostic: scored with "
    "the exact x_m no party releases"
}
_LINES = {"non-private stacking": ("C0", "-."), "all features": ("black", "--"), "party 1 alone": ("0.45", ":")}


@dataclass(frozen=True)
class Utility:
    """One dataset's outcome: the methods' test numbers, every validation score, the manifest."""

    table: pd.DataFrame
    tuning: pd.DataFrame
    manifest: dict


def noise_draws(values: dict, record) -> dict:
    """A dataset's title field: how many noise draws private stacking's numbers average."""
    t = record.table
    n = (
        int(t.loc[t["method"] == "private stacking", "n_seeds"].max())
        if (t["method"] == "private stacking").any()
        else 0
    )
    return {"draws": f" (mean +- sd, {n} noise draws)" if n > 1 else ""}


def utility_panel(ax, panel, view) -> None:
    """One metric (``panel.name``) vs epsilon: means with +-1 sd bands over the noise draws,
    references flat.

    The axis zooms on private stacking and the references; a method outside
    it (ADMM sharing, far worse) is drawn at the edge with its values written.
    """
    table, metric = next(iter(view.runs.values()))[0].record.table, panel.name
    ref = table[table["method"].isin(["private stacking", *_LINES])]
    lo, hi = ref[f"{metric}_mean"].min(), ref[f"{metric}_mean"].max()
    pad = 0.15 * (hi - lo) + 1e-3
    worse_up = metric == "test_logloss"  # where a worse method leaves the axis
    ylim = (lo - pad, hi + 3 * pad) if worse_up else (lo - 3 * pad, hi + pad)
    for method, (color, marker, ls) in _STYLE.items():
        t = table[table["method"] == method].sort_values("epsilon")
        if t.empty:
            continue
        x, m, s = t["epsilon"], t[f"{metric}_mean"], t[f"{metric}_std"].fillna(0.0)
        ax.plot(x, m, color=color, marker=marker, ms=3.5, ls=ls, label=_LEGEND.get(method, method))
        ax.fill_between(x, m - s, m + s, color=color, alpha=0.18, lw=0)
        off = (m > ylim[1]) if worse_up else (m < ylim[0])
        if off.any():
            edge = 0.965 if worse_up else 0.035
            trans = ax.get_xaxis_transform()
            ax.plot(
                x[off],
                np.full(off.sum(), edge),
                ls="none",
                color=color,
                marker="^" if worse_up else "v",
                ms=4,
                transform=trans,
                clip_on=False,
            )
            for xi, mi in zip(x[off], m[off]):
                ax.annotate(
                    f"{mi:.3f}",
                    (xi, edge),
                    xycoords=trans,
                    fontsize=6,
                    color=color,
                    ha="center",
                    va="top" if worse_up else "bottom",
                    xytext=(0, -4 if worse_up else 4),
                    textcoords="offset points",
                )
    for method, (color, ls) in _LINES.items():
        t = table[table["method"] == method]
        if len(t):  # fitted without noise on the private training rows
            ax.axhline(float(t[f"{metric}_mean"].iloc[0]), color=color, ls=ls, lw=1.0, label=f"{method} (diagnostic)")
    levels = sorted(table.loc[np.isfinite(table["epsilon"]), "epsilon"].unique())
    ax.set_xticks(levels, [f"{e:g}" for e in levels])
    ax.minorticks_off()
    ax.set_ylim(*ylim)


def _outcome(table, runs) -> Utility | None:
    return runs[table.configs[0]][0].record if table.configs[0] in runs else None


def utility_table(table, runs, drawn, echo) -> pd.DataFrame | None:
    """One row per method and epsilon, with the chosen hyper-parameters (a dataset not drawn:
    no file)."""
    outcome = _outcome(table, runs)
    return None if outcome is None else outcome.table


def tuning_table(table, runs, drawn, echo) -> pd.DataFrame | None:
    """Every validation score of the dataset's tuning."""
    outcome = _outcome(table, runs)
    return None if outcome is None else outcome.tuning


#: README's rows, in order: (method in the CSV, label in README)
_README_ROWS = (
    ("private stacking", "private stacking"),
    ("ADMM sharing (row-level DP)", "ADMM sharing (row-level DP), diagnostic"),
    ("non-private stacking", "non-private stacking (no noise)"),
    ("party 1 alone", "party 1 alone (no noise)"),
    ("all features", "all features (no noise)"),
)


def utility_markdown(table: pd.DataFrame) -> str:
    """README's table of ``utility-<dataset>.csv``: test log loss per method and epsilon.

    Private methods show mean +- sd over the noise draws; the references
    (no noise) repeat their one value under every epsilon.
    """
    eps = sorted(float(e) for e in table["epsilon"].unique() if np.isfinite(float(e)))
    lines = ["| epsilon | " + " | ".join(f"{e:g}" for e in eps) + " |", "|---|" + "---:|" * len(eps)]
    for method, label in _README_ROWS:
        rows = table[table["method"] == method]
        if rows.empty:
            continue
        if len(rows) == 1 and not np.isfinite(float(rows["epsilon"].iloc[0])):
            cells = [f"{rows['test_logloss_mean'].iloc[0]:.4f}"] * len(eps)
        else:
            by = rows.set_index(rows["epsilon"].astype(float))
            cells = [f"{by.loc[e, 'test_logloss_mean']:.4f} ± {by.loc[e, 'test_logloss_std']:.4f}" for e in eps]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
