"""Privacy figures (presentation layer): epsilon spent by a run, an audit's sampled
privacy losses against the claimed Gaussian, and the table of every audited guarantee."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from matplotlib.ticker import FuncFormatter
from scipy import stats

from vfl.core.errors import VFLError
from vfl.experiments.audit import audit_table, refuted_by_profile
from vfl.experiments.records import RunRecord, check_output_file, load_run, write_csv_atomic

from .canvas import STYLE, dataset_title, figure_formats, plt, save_figure

__all__ = ["draw_audit_table", "draw_run_privacy", "plot_audit", "plot_audit_table", "plot_privacy"]


def plot_privacy(run: RunRecord):
    """Epsilon spent vs iteration: the guarantee and, beside it, every claim of the paper."""
    p = run.manifest.privacy
    spent = p.spent
    m = run.metrics[run.metrics["epoch"] > 0]  # nothing is spent at iteration 0 (log axis)
    it = run.manifest.iteration_name
    series = [("epsilon_tight", "C0", "-", f"guarantee: {spent.tight_accountant}, delta = {spent.delta_tight:g}")]
    if m.get("epsilon_paper") is not None and m["epsilon_paper"].notna().any():
        series.append(("epsilon_paper", "C3", "--", "the paper's claim (not a guarantee)"))
    for name in spent.other_claims:
        series.append((f"epsilon_{name}", "C1", ":", f"claim: {name} (not a guarantee)"))
    with plt.rc_context(STYLE):
        fig, ax = plt.subplots(figsize=(3.8, 2.9), constrained_layout=True)
        for col, color, ls, label in series:
            if col in m and m[col].notna().any():
                ax.plot(m["epoch"], m[col], color=color, ls=ls, label=label)
        budget = None if p.budget is None else p.budget.epsilon
        if budget:
            ax.axhline(budget, color="black", ls=":", lw=0.9, label=f"budget {budget:g}")
        ax.set_yscale("log")
        ax.set_xlabel(it)
        ax.set_ylabel("epsilon spent (worst unit)")
        ax.set_title(f"{dataset_title(run.manifest)}: privacy spent")
        ax.legend(loc="lower right", fontsize=6)
    return fig


def plot_audit(report):
    """The sampled privacy-loss distribution of each audited pair against the claimed Gaussian."""

    n = len(report.pairs)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(rows, cols, figsize=(3.6 * cols, 2.7 * rows), squeeze=False, constrained_layout=True)
        for ax, pair in zip(axes.ravel(), report.pairs):
            L = pair.losses_P
            lo, hi = float(np.min(L)), float(np.max(L))
            for mu in report.gaussian_mu.values():
                # the claimed mechanism's privacy loss under P is N(mu^2/2, mu^2)
                lo, hi = min(lo, mu**2 / 2 - 3 * mu), max(hi, mu**2 / 2 + 3 * mu)
            span = hi - lo or 1.0
            bins = np.linspace(lo - 0.05 * span, hi + 0.05 * span, 40)
            ax.hist(L, bins=bins, density=True, color="C0", alpha=0.6, label=f"sampled loss (K = {L.size})")
            grid = np.linspace(bins[0], bins[-1], 400)
            drawn = set()
            for claim, mu in report.gaussian_mu.items():
                if mu > 0 and mu not in drawn:  # (the guarantee and its profile: one curve)
                    drawn.add(mu)
                    ax.plot(
                        grid,
                        stats.norm.pdf(grid, mu**2 / 2, mu),
                        color="black",
                        lw=1,
                        label=f"claimed Gaussian ({claim})",
                    )
            for claim, r in pair.verdicts.items():
                label = f"{claim}: eps = {r.epsilon:.3g}, {r.verdict}"
                color = "C3" if r.refuted else "C2"
                if bins[0] <= r.epsilon <= bins[-1]:
                    ax.axvline(r.epsilon, color=color, lw=0.9, ls="--", label=label)
                else:  # far off the sampled range: say so instead of squashing the histogram
                    ax.plot([], [], color=color, lw=0.9, ls="--", label=label + " (off scale)")
            ax.set_title(pair.name, fontsize=7.5)
            ax.set_xlabel("privacy loss L of the transcript")
            ax.set_ylabel("density")
            ax.legend(fontsize=6, loc="upper right", framealpha=0.8)
        for ax in axes.ravel()[n:]:
            ax.set_visible(False)
    return fig


def plot_audit_table(table):
    """Every audited guarantee: claimed epsilon against the audit's lower bound, and its power.

    Left: per config (one row), the claimed epsilon (black diamond) and the
    empirical lower bound on epsilon of each audit (the largest epsilon it
    refutes), as run (noise scale 1, blue) and with the noise scaled down
    (red): a sound guarantee keeps the blue mark left of the diamond, a
    powerful audit puts the red one right of it. A lower bound of 0 sits on
    the left edge. Right: the best pair's exercised / charged sensitivity
    (grey; below S no audit at noise scale S can refute) and, as run, the
    lower bound over the claimed epsilon (blue; n/a for a claim of epsilon 0).
    """

    configs = list(dict.fromkeys(table["config"]))
    y = {c: i for i, c in enumerate(configs)}
    positive = (
        table.loc[table["epsilon"] > 0, "epsilon"].tolist()
        + table.loc[table["epsilon_lower"] > 0, "epsilon_lower"].tolist()
    )
    floor = min(positive) / 3.0 if positive else 1e-3
    with plt.rc_context(STYLE):
        fig, (ax, bx) = plt.subplots(
            1,
            2,
            figsize=(8.4, 0.42 * len(configs) + 1.8),
            gridspec_kw={"width_ratios": [2.2, 1]},
            sharey=True,
            constrained_layout=True,
        )
        claimed = table.drop_duplicates("config")
        ax.scatter(
            np.maximum(claimed["epsilon"], floor),
            [y[c] for c in claimed["config"]],
            marker="D",
            color="black",
            s=22,
            zorder=3,
            label="claimed epsilon",
        )
        scales = sorted(table["noise_scale"].unique(), reverse=True)
        for scale in scales:
            part = table[table["noise_scale"] == scale]
            as_run = scale == 1.0
            label = "lower bound, noise as run" if as_run else f"lower bound, noise x {scale:g} (calibration)"
            ax.scatter(
                np.maximum(part["epsilon_lower"], floor),
                [y[c] + (0.0 if as_run else 0.18) for c in part["config"]],
                marker="o" if as_run else "^",
                color="C0" if as_run else "C3",
                s=18,
                zorder=4,
                label=label,
            )
            for _, r in part.iterrows():
                ax.annotate(
                    r["verdict"] + (" (its profile)" if refuted_by_profile(r) else ""),
                    (max(r["epsilon_lower"], floor), y[r["config"]] + (0.0 if as_run else 0.18)),
                    xytext=(4, -2),
                    textcoords="offset points",
                    fontsize=5.5,
                    color="C0" if as_run else "C3",
                )
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        lo, hi = ax.get_xlim()
        # the 2s and 5s between decades are labelled only where they do not crowd the axis
        sparse = math.log10(hi / lo) <= 4
        ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if sparse and f"{v:.0e}"[0] in "25" else ""))
        ax.tick_params(axis="x", which="minor", labelsize=6)
        ax.set_xlabel("epsilon at the claimed delta (log scale; a lower bound of 0 sits at the left edge)")
        ax.set_yticks(range(len(configs)), configs, fontsize=7)
        ax.set_ylim(len(configs) - 0.5, -0.6)
        ax.set_title("audited guarantees: claim vs empirical lower bound", fontsize=9)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=6, frameon=False)
        run = table[table["noise_scale"] == 1.0].drop_duplicates("config", keep="last")
        if run.empty:
            run = table.drop_duplicates("config", keep="last")
        ys = np.array([y[c] for c in run["config"]], dtype=float)
        values = run["exercised_over_charged"].astype(float)
        bx.barh(ys - 0.15, values.fillna(0.0), color="C7", height=0.3, label="exercised / charged sensitivity")
        tight = run["epsilon_ratio"].astype(float) if "epsilon_ratio" in run else values * np.nan
        bx.barh(
            ys + 0.15,
            tight.fillna(0.0).clip(upper=1.05),
            color="C0",
            height=0.3,
            label="lower bound / claimed epsilon, as run",
        )
        for scale in scales:
            if scale != 1.0:
                bx.axvline(scale, color="C3", lw=0.8, ls="--", label=f"S = {scale:g}")
        bx.set_xlim(0, 1.05)
        bx.set_xlabel("best pair (median over its runs)")
        bx.legend(fontsize=5.5, loc="lower right")
    return fig


def draw_run_privacy(run_dir: Path, out=None, *, overwrite: bool = False) -> list[Path]:
    """``vfl privacy --run``: the epsilon a run spent, drawn to ``out`` [default:
    RUN_DIR/../NAME-privacy.png]."""
    target = Path(out) if out else run_dir.parent / f"{run_dir.name}-privacy.png"
    target = check_output_file(target, figure_formats(), what="figure", overwrite=overwrite)
    run = load_run(run_dir)
    if run.manifest.spent is None:
        raise VFLError(f"{run_dir} accounts no privacy (its run claims no guarantee: set privacy.delta)")
    target.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(plot_privacy(run), target)


def draw_audit_table(root, out=None):
    """``vfl audits``: every audit under ``root`` as one table (a CSV beside the figure
    ``out`` [default: ROOT/audits.png]) and one figure; returns the table, the CSV's path
    and the figure files."""
    target = check_output_file(Path(out) if out else Path(root) / "audits.png", figure_formats(), what="figure")
    table = audit_table(root)
    if table.empty:
        raise VFLError(f"{root}: no audit.json of an audited guarantee below it")
    write_csv_atomic(table.drop(columns="directory"), target.with_suffix(".csv"))
    return table, target.with_suffix(".csv"), save_figure(plot_audit_table(table), target)
