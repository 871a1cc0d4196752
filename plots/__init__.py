"""Figures from run records, sweeps and audits (presentation layer).

:func:`plot_runs` draws the paper's Fig. 1a/2a kind of figure: the training
objective and the test log loss against epochs, several runs overlaid, with
the reference lines (central optimum F*, sklearn on all features, sklearn on
party 1's features only) drawn horizontally.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402

from vfl.experiments.records import RunRecord  # noqa: E402

__all__ = [
    "dataset_title",
    "draw_noise_sweep",
    "draw_run",
    "plot_runs",
    "plot_sweep_curves",
    "plot_sweep_final",
    "save_figure",
    "STYLE",
    "VECTOR_SUFFIX",
]

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
    # (baselines.json key, label, line style) of the sweep figures' reference lines
    ("sklearn_all_features", "sklearn, all features", "--"),
    ("sklearn_local_only", "sklearn, party 1 only", ":"),
]


def dataset_title(manifest) -> str:
    """The dataset's name for a title (a :class:`~vfl.experiments.manifest.Manifest`); a
    stand-in always says it is one."""
    d = manifest.dataset
    if d.stand_in:
        return "gisette stand-in (synthetic)"
    given = d.train_file
    if given:  # the user's own file: its name (and the config's), not the format's
        file = Path(str(given)).name
        name = manifest.name
        return f"{name} ({file})" if name and name != Path(file).stem else file
    return d.name


_METRIC_LABEL = {
    "objective": "training objective F(x)",
    "suboptimality": "relative suboptimality (F - F*) / |F*|",
    "log10_error": "log10 mean distance to x* (per coordinate)",
    "test_logloss": "test log loss (nats per sample)",
    "test_accuracy": "test accuracy",
    "privacy_loss": "cumulative privacy loss",
    "epsilon_tight": "epsilon spent (guarantee)",
}


def _left_metric(runs, suboptimality: bool) -> str:
    cols = set.intersection(*(set(r.metrics.columns) for r in runs))
    if suboptimality and "suboptimality" in cols:
        return "suboptimality"
    for metric in ("objective", "log10_error", "test_accuracy"):
        if metric in cols:
            return metric
    return "test_logloss"


def _check_options(runs, left: str, *, suboptimality: bool, log: bool, metrics) -> None:
    """Refuse an option that would have no effect on the figure (it would be silently ignored)."""
    from vfl.core.errors import ConfigError

    if suboptimality and metrics:
        raise ConfigError(
            "--suboptimality has no effect with --metrics: name the column there "
            "(e.g. --metrics suboptimality,test_logloss)"
        )
    if suboptimality and left != "suboptimality":
        raise ConfigError(
            "--suboptimality needs a suboptimality column in every run's "
            f"metrics.csv; without one the left panel would show {left}"
        )
    if suboptimality and all(r.metrics["suboptimality"].isna().all() for r in runs):
        raise ConfigError("--suboptimality needs F*: the runs computed no central optimum (run.baselines = 'none')")
    if log and left != "objective":
        raise ConfigError(
            f"--log applies to an objective panel; the left panel is {left}"
            + (" (always on a log scale)" if left == "suboptimality" else "")
        )


def _band(ax, run: RunRecord, xcol: str, metric: str, color) -> None:
    """The min-max band over repeats, when the run has several."""
    reps = run.repeats
    if reps is None or metric not in reps.columns or xcol not in reps.columns:
        return
    g = reps.groupby("epoch")[metric]
    lo, hi = g.min(), g.max()
    x = lo.index if xcol == "epoch" else run.metrics.set_index("epoch")[xcol].reindex(lo.index)
    ax.fill_between(x, lo, hi, color=color, alpha=0.15, lw=0)


def _references(runs, metric: str) -> list[tuple[float, str, str]]:
    """Horizontal reference lines for ``metric``: (value, label, line style)."""
    out, seen = [], set()
    for run in runs:
        b = run.baselines or {}
        if "per_repeat" in b:  # references differ per repeat: draw their mean
            entries = {}
            for rep in b["per_repeat"]:
                for k, v in rep.items():
                    if isinstance(v, dict) and "label" in v and isinstance(v.get(metric), (int, float)):
                        entries.setdefault(k, {**v, "values": []})["values"].append(v[metric])
            b = {k: {**v, metric: float(sum(v["values"]) / len(v["values"]))} for k, v in entries.items()}
        for key, entry in b.items():
            if not isinstance(entry, dict) or "label" not in entry or not isinstance(entry.get(metric), (int, float)):
                continue
            if metric == "objective" and key != "central":
                continue  # other references minimize other objectives
            label = entry.get("label", key)
            if _private(run) and not label.endswith("(diagnostic)"):
                label += " (diagnostic)"  # fitted on the private rows (a run before the label)
            if (label, round(float(entry[metric]), 12)) in seen:
                continue
            seen.add((label, round(float(entry[metric]), 12)))
            style = "-." if key == "central" else entry.get("line", "--")
            out.append((float(entry[metric]), label, _MAJORITY if key == "majority" else style))
    return out


#: the majority class's line: neither party 1's grey dots nor the black dashes
_MAJORITY = (0, (5, 1.5, 1, 1.5, 1, 1.5))


def _reference_color(style) -> str:
    return "tab:brown" if style == _MAJORITY else "black" if style in ("--", "-.") else "0.45"


def _legend_below(ax, ncol: int = 1, **kw) -> None:
    """The legend under the axes, never over a curve or a reference line."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False, **kw)


def plot_runs(
    runs: list[RunRecord],
    *,
    suboptimality: bool = False,
    x: str = "epoch",
    log: bool = False,
    labels: list[str] | None = None,
    metrics: tuple[str, str] | None = None,
):
    """Return a figure of two panels, several runs overlaid with their reference lines.

    Left: the training objective (or ``suboptimality``; for solvers without an
    objective, their distance to the optimum); right: the test log loss.
    ``metrics`` picks the two columns instead. ``x`` is ``"epoch"`` or
    ``"wall"`` (cumulative solver seconds); ``log`` puts the left panel on a
    log scale (suboptimality always is). Runs with repeats are drawn as
    their mean with a min-max band.
    """
    xcol = "epoch" if x == "epoch" else "wall_time_s"
    it_name = runs[0].manifest.iteration_name
    xlabel = it_name if x == "epoch" else "solver time (s)"
    left, right = metrics or (_left_metric(runs, suboptimality), "test_logloss")
    for metric in (left, right):
        missing = [r.label for r in runs if metric not in r.metrics.columns]
        if missing:
            from vfl.core.errors import DataError

            raise DataError(f"metrics.csv of {missing[0]} has no column {metric!r}")
    _check_options(runs, left, suboptimality=suboptimality, log=log, metrics=metrics)
    labels = labels or [_curve_label(r) if len(runs) == 1 else r.label for r in runs]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.4), constrained_layout=True)
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        for i, (run, label) in enumerate(zip(runs, labels)):
            c = colors[i % len(colors)]
            m = run.metrics
            # a run of one or two rows (one-round stacking) is points, not a line between them
            marker = "o" if len(m) <= 2 else None
            for ax, metric in zip(axes, (left, right)):
                y = m[metric].clip(lower=1e-16) if metric == "suboptimality" else m[metric]
                ax.plot(m[xcol], y, color=c, label=label, marker=marker, ms=4)
                _band(ax, run, xcol, metric, c)
        for ax, metric in zip(axes, (left, right)):
            for value, label, style in _references(runs, metric):
                ax.axhline(value, color=_reference_color(style), lw=0.9, ls=style, label=label)
            if x == "epoch":  # iterations are whole numbers
                ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
            ax.set_xlabel(xlabel)
            ax.set_ylabel(_METRIC_LABEL.get(metric, metric))
        if left == "suboptimality" or (log and left == "objective"):
            axes[0].set_yscale("log")
        title = ", ".join(sorted({dataset_title(r.manifest) for r in runs}))
        for ax, metric in zip(axes, (left, right)):
            ax.set_title(
                f"{title}: {_METRIC_LABEL.get(metric, metric).split(' (')[0]}"
                + (" (diagnostic)" if _diagnostic(runs, metric) else "")
            )
        if right == "test_logloss":
            # every curve (and band) and every reference inside the axes
            values = [v for r in runs for v in r.metrics["test_logloss"].dropna()]
            values += [
                v
                for r in runs
                if r.repeats is not None and "test_logloss" in r.repeats.columns
                for v in r.repeats["test_logloss"].dropna()
            ]
            refs = [v for v, _, _ in _references(runs, "test_logloss")]
            lo, hi = min(values + refs), max(values + refs)
            pad = max(0.01, 0.08 * (hi - lo))
            axes[1].set_ylim(lo - pad, hi + pad)
        for ax in axes:
            _legend_below(ax)
    return fig


def _private(run: RunRecord) -> bool:
    return run.manifest.released.private


def _diagnostic(runs: list[RunRecord], metric: str) -> bool:
    """Whether any run computed ``metric`` from exact private values (not covered by its
    epsilon; manifest ``released.columns``)."""
    return any(r.manifest.released.columns.get(metric) == "diagnostic" for r in runs)


def released_metrics(record: RunRecord) -> tuple[str, str] | None:
    """Two released columns to draw for a release-only run, or None."""
    kinds = record.manifest.released.columns
    have = [
        c
        for c in ("test_logloss", "test_accuracy", "epsilon_tight")
        if kinds.get(c) == "released" and c in record.metrics.columns
    ]
    return (have[0], have[1]) if len(have) >= 2 else None


def _curve_label(run: RunRecord) -> str:
    solver = run.manifest.solver
    name = solver.title or solver.name
    rho = solver.value("rho")
    return f"{name} (rho = {rho:g})" if rho is not None else name


#: the vector copy saved beside every PNG (``None``: the PNG alone)
VECTOR_SUFFIX: str | None = ".pdf"


#: no timestamp in a figure file: the same figure is the same bytes (a release-only run's
#: figure is a released value, compared bit for bit)
_NO_DATE = {
    ".pdf": {"CreationDate": None},
    ".svg": {"Date": None},
    ".ps": {"CreationDate": None},
    ".eps": {"CreationDate": None},
}


def save_figure(fig, path: Path) -> list[Path]:
    """Save ``fig`` as ``path`` and, for a PNG, also as a PDF (``VECTOR_SUFFIX``) next to it."""
    path = Path(path)
    paths = [path]
    if path.suffix.lower() == ".png" and VECTOR_SUFFIX:
        paths.append(path.with_suffix(VECTOR_SUFFIX))
    with plt.rc_context(STYLE):
        for p in paths:
            # Write beside the target, then rename: no half-written figure.
            tmp = p.with_name(f".{p.stem}.partial{p.suffix}")
            fig.savefig(tmp, metadata=_NO_DATE.get(p.suffix.lower()))
            os.replace(tmp, p)
    plt.close(fig)
    return paths


def draw_run(result, path: Path, *, release_only: bool = False) -> list[Path]:
    """``vfl run``'s figure of a finished run (``loss.png`` and its PDF). A release-only run
    draws only its released metrics, and nothing when it releases no metric to draw."""
    record = RunRecord(
        path=Path(path).parent,
        config=result.config.to_dict(),
        manifest=result.manifest,
        metrics=result.metrics,
        baselines=result.baselines,
        repeats=result.repeats,
    )
    if not release_only:
        return save_figure(plot_runs([record]), path)
    pair = released_metrics(record)
    return [] if pair is None else save_figure(plot_runs([record], metrics=pair), path)


def draw_noise_sweep(first_run: Path, out: Path, agg, final, param: str) -> list[Path]:
    """``vfl sweep-noise``'s two figures: test loss per level against epochs, and the final
    test loss against the level, with the references of the sweep's first run."""
    import json

    from vfl.experiments.records import load_run

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
    import numpy as np

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
    import numpy as np
    from scipy import stats

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
    import numpy as np

    from vfl.experiments.audit import refuted_by_profile

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
        from matplotlib.ticker import FuncFormatter

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
    import numpy as np

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
