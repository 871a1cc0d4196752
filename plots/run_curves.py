"""Run curves (presentation layer): the paper's Fig. 1a/2a kind of figure.

:func:`plot_runs` draws the training objective and the test log loss against epochs,
several runs overlaid, with the reference lines (central optimum F*, sklearn on all
features, sklearn on party 1's features only) drawn horizontally.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.ticker

from vfl.core.errors import ConfigError, DataError
from vfl.experiments.records import RunRecord, check_output_file, load_run

from .canvas import STYLE, dataset_title, figure_formats, plt, save_figure

__all__ = ["draw_run", "draw_runs", "plot_runs", "released_metrics"]


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


def draw_runs(
    run_dirs, out: Path, *, labels=(), overwrite=False, suboptimality=False, metrics=None, x="epoch", log=False
) -> list[Path]:
    """``vfl plot``: the runs of ``run_dirs`` overlaid in ``out`` (checked before anything is
    read); ``metrics``: ``"LEFT,RIGHT"``, two metrics.csv columns."""
    out = check_output_file(out, figure_formats(), what="figure", overwrite=overwrite)
    if labels and len(labels) != len(run_dirs):
        raise ConfigError(f"--label was given {len(labels)} times for {len(run_dirs)} runs; give one per run, in order")
    pair = None
    if metrics:
        pair = tuple(m.strip() for m in metrics.split(","))
        if len(pair) != 2 or not all(pair):
            raise ConfigError(f"--metrics expects two column names LEFT,RIGHT, got {metrics!r}")
    runs = [load_run(p) for p in run_dirs]
    names = [r.label for r in runs]
    if len(set(names)) < len(names):  # same config run twice: name runs by directory
        for r in runs:
            r.manifest = r.manifest.replace(name=r.path.name)
    fig = plot_runs(runs, suboptimality=suboptimality, x=x, log=log, labels=list(labels) or None, metrics=pair)
    out.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(fig, out)
