"""``vfl reproduce hu``: redraw Figures 1-3 of the ADMM-sharing paper (Hu et al. 2019).

Each figure declares the configs it needs (:data:`vfl.papers.hu.PAPER`); their runs
and sweeps live under ``OUT/runs`` and ``OUT/sweeps`` and are resumed, so a
second call only redraws. Beside every figure (PNG + PDF) are the CSVs it
was drawn from.

- fig1: training objective (as relative suboptimality against the central
  optimum F*, log scale) and test log loss vs epoch, ADMM sharing vs FDML
  SGD, on a9a and gisette (Figs. 1a and 2a of the paper);
- fig2: test log loss vs epoch at each noise level (Figs. 1b and 2b), every
  published share perturbed by ``N(0, sigma^2 I_N)`` (``form = "output"``:
  the reading that reproduces the authors' own result files);
- fig3: final test log loss vs noise level with the sklearn all-features and
  party-1-only lines (Fig. 3);
- forms: fig3's final test log loss for each way of reading the noise: on
  the shared value, updates (10) of Hu et al. 2019, the NeurIPS version's
  ``x~ = x + N(0, sigma^2 I)`` with raw and with normalized rows (not in the
  paper: why the reading matters);
- privacy: final test log loss vs the total target epsilon on a9a under three
  accountings of the same mechanism: the paper's (sigma from Lemma 1's
  sensitivity; a claim the audit refutes) and the two sound ones (column-
  and row-level neighbours, sigma from the enforced sensitivity). Not in the
  paper: what an honest epsilon costs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pandas as pd

from vfl.experiments.records import load_run
from vfl.experiments.reproduce import ensure_run, figure_config
from vfl.experiments.sweep import aggregate_sweep, run_sweep
from vfl.papers import engine
from vfl.plots import (
    dataset_title,
    plot_noise_forms,
    plot_privacy_costs,
    plot_sweep_curves,
    plot_sweep_final,
    save_figure,
)
from vfl.plots.layout import fill

from . import DATASETS, PAPER

__all__ = ["bytes_markdown", "bytes_to_reach", "reproduce", "settling"]

#: the privacy figure's series: sweep -> legend
PRIVACY_SERIES = {
    "privacy-a9a": "paper's accounting (Lemma 1): a claim, refuted by `vfl audit`",
    "privacy-a9a-column": "sound, one column of a party's block (Definition 2)",
    "privacy-a9a-row": "sound, one sample's features in a party's block",
}
# The noise forms the "forms" figure compares: label -> (suffix, overrides of
# fig2-*.toml). The first is fig2's own sweep.
FORM_VARIANTS = {
    "noise on the shared value, N(0, s^2 I_N) (Figs. 2-3)": ("", ()),
    "whitened model noise, Hu et al. 2019 eq. (10)": ("whitened", ("privacy.form=variable_whitened",)),
    "model noise x + N(0, s^2 I), NeurIPS version eq. (7)": ("variable", ("privacy.form=variable",)),
    "model noise, NeurIPS version eq. (7), unit rows": (
        "variable-normalized",
        ("privacy.form=variable", "preprocessing.normalize_rows=true"),
    ),
}
# One seed for gisette's extra forms: each of its runs takes seconds, a9a's
# a fraction of one.
_FORM_SEEDS = {"gisette": ("sweep.seeds=[0]",)}
# A curve has reached its final test loss at the first epoch after which it
# stays within this distance of the last value (fig1-summary.csv).
SETTLE_TOL = 0.005
_METHOD = {"admm_sharing": "ADMM sharing", "fdml_sgd": "FDML SGD"}


@dataclass(frozen=True)
class Sweep:
    """A noise sweep read back: per level and epoch (``agg``), its last epoch per level
    (``final``), and its first run's references and manifest."""

    agg: pd.DataFrame
    final: pd.DataFrame
    baselines: dict
    manifest: dict


def _ensure_sweep(configs, name, out, data_dir, jobs, echo, suffix="", overrides=()) -> Sweep:
    """Run (or resume) the sweep of ``configs/name.toml``. With a ``suffix`` it
    is the variant ``name-suffix`` with ``overrides``, exactly what
    ``vfl sweep-noise --config configs/name.toml --set ...`` runs."""
    label = f"{name}-{suffix}" if suffix else name
    config = figure_config(configs, name, [*overrides, f"name={label}"] if suffix else overrides)
    path = out / "sweeps" / label
    param = "epsilon" if config.sweep.epsilons else "sigma"
    levels = config.sweep.epsilons or config.sweep.sigmas
    n = len(levels) * len(config.sweep.seeds)
    echo(f"  {label}: {n} runs ({param} in {levels}, seeds {config.sweep.seeds})")
    runs, _ = run_sweep(config, levels, config.sweep.seeds, path, param=param, data_dir=data_dir, jobs=jobs)
    agg, final = aggregate_sweep(runs, path)
    first = load_run(runs[0].path)
    return Sweep(agg, final, first.baselines, first.manifest)


def _data_label(manifest, name: str) -> str:
    """The dataset as CSVs name it: a stand-in always says it is one."""
    return dataset_title(manifest) if manifest.dataset.stand_in else name


def references(table, runs, drawn, echo) -> pd.DataFrame:
    """The reference fits of each config's runs: the central optimum and both sklearn fits."""
    records = []
    for name in table.configs:
        record = runs[name][0].record
        dataset = _data_label(record.manifest, name.split("-")[1])
        for key in ("central", "sklearn_all_features", "sklearn_local_only"):
            b = record.baselines[key]
            records.append(
                {
                    "dataset": dataset,
                    "reference": key,
                    "objective": b["objective"],
                    "test_logloss": b["test_logloss"],
                    "test_accuracy": b["test_accuracy"],
                }
            )
    return pd.DataFrame(records)


def loss_zoom(drawn) -> tuple[float, float]:
    """Fig. 1's test loss panel: the final losses and the references, with room above."""
    values = [s.frame["mean"].iloc[-1] for s in drawn.series] + [v for _, v in drawn.references]
    lo, hi = min(values), max(values)
    return lo - 0.1 * (hi - lo) - 0.01, hi + (hi - lo) + 0.05


def settling_table(table, runs, drawn, echo) -> pd.DataFrame:
    """Per run of Fig. 1: its final test loss and the epoch it settled there (:func:`settling`)."""
    summary = pd.DataFrame(
        [
            {
                "run": name,
                "dataset": _data_label(p[0].record.manifest, name.split("-")[1]),
                "method": _METHOD[p[0].record.config["solver"]["name"]],
                **settling(p[0].record.metrics),
            }
            for name, p in runs.items()
        ]
    )
    for row in summary.itertuples():
        echo(
            f"  {row.run}: final test log loss {row.final_test_logloss:.4f}, within "
            f"{SETTLE_TOL:g} of it from epoch {row.settled_epoch} of {row.epochs}"
        )
    return summary


def bytes_to_reach(metrics: pd.DataFrame, target: float) -> dict:
    """The first epoch from which the test log loss stays at or below ``target``, with the
    messages and bytes sent until then (NaN when the curve does not end there). A curve that
    dips below the target and jumps back has not reached it."""
    above = np.flatnonzero(metrics["test_logloss"].to_numpy() > target)
    first = 0 if above.size == 0 else above[-1] + 1
    if first >= len(metrics):
        return {"epoch": np.nan, "messages": np.nan, "bytes": np.nan}
    row = metrics.iloc[first]
    return {"epoch": int(row["epoch"]), "messages": int(row["messages"]), "bytes": int(row["bytes"])}


def _pair(runs, dataset: str) -> list:
    return [runs[f"fig1-{dataset}-{m}"][0].record for m in ("admm", "sgd")]


def _target(pair) -> float:
    """A loss both methods reach and stay at: the larger final test loss plus :data:`SETTLE_TOL`."""
    return max(r.metrics["test_logloss"].iloc[-1] for r in pair) + SETTLE_TOL


def bytes_panel(ax, panel, view) -> None:
    """Test loss against the payload sent, each method's point of reaching the target marked."""
    pair = _pair(view.runs, panel.name)
    target = _target(pair)
    for run, curve in zip(pair, panel.curves):
        m = run.metrics.iloc[1:]  # row 0 has sent nothing: no place on a log axis
        ax.plot(m["bytes"] / 1e6, m["test_logloss"], color=curve.color, label=curve.label)
        reach = bytes_to_reach(run.metrics, target)
        if np.isfinite(reach["bytes"]):
            ax.plot(reach["bytes"] / 1e6, target, "o", color=curve.color, ms=4)
    ax.axhline(target, color="0.5", lw=0.8, ls=":", label="target: both end below it")
    # SGD's first epochs on the gisette stand-in reach losses of 100s: keep the
    # scale of the converged part (the curves go on above the frame)
    low = min(r.metrics["test_logloss"].min() for r in pair)
    ax.set_ylim(low - 0.05 * (target - low) - 0.01, low + 4.0 * (target - low) + 0.05)


def bytes_table(table, runs, drawn, echo) -> pd.DataFrame:
    """Per dataset and method: the bytes (messages, epochs) to the target test loss."""
    rows = []
    for dataset in DATASETS:
        pair = _pair(runs, dataset)
        target = _target(pair)
        for run in pair:
            reach = bytes_to_reach(run.metrics, target)
            rows.append(
                {
                    "dataset": _data_label(run.manifest, dataset),
                    "method": _METHOD[run.config["solver"]["name"]],
                    "target_test_logloss": target,
                    "epochs_to_target": reach["epoch"],
                    "messages_to_target": reach["messages"],
                    "bytes_to_target": reach["bytes"],
                    "bytes_per_epoch": int(run.metrics["bytes"].iloc[-1] // max(1, run.metrics["epoch"].iloc[-1])),
                }
            )
    frame = pd.DataFrame(rows)
    admm = frame.groupby("dataset")["bytes_to_target"].transform("first")
    frame["bytes_over_admm"] = frame["bytes_to_target"] / admm
    for row in frame.itertuples():
        echo(
            f"  {row.dataset}, {row.method}: test loss {row.target_test_logloss:.4f} after "
            f"{row.bytes_to_target / 1e6:.3g} MB ({row.bytes_over_admm:.3g}x ADMM sharing)"
        )
    return frame


def bytes_markdown(table: pd.DataFrame) -> str:
    """README's table of ``bytes.csv``: per dataset and method, what reaching the target took."""
    lines = [
        "| dataset | method | bytes per epoch | target test log loss | epochs | payload sent | vs ADMM sharing |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in table.itertuples():
        reached = np.isfinite(r.bytes_to_target)
        lines.append(
            f"| {r.dataset} | {r.method} | {r.bytes_per_epoch / 1e6:.3g} MB | "
            f"{r.target_test_logloss:.4f} | "
            + (
                f"{int(r.epochs_to_target)} | {r.bytes_to_target / 1e6:.3g} MB | {r.bytes_over_admm:.3g}x |"
                if reached
                else "not reached | - | - |"
            )
        )
    return "\n".join(lines) + "\n"


def settling(metrics: pd.DataFrame, tol: float = SETTLE_TOL) -> dict:
    """Final test log loss and the first epoch after which the curve stays
    within ``tol`` of it (how many epochs the method needed)."""
    loss = metrics["test_logloss"].to_numpy()
    final = float(loss[-1])
    outside = np.flatnonzero(np.abs(loss - final) > tol)
    settled = 0 if outside.size == 0 else int(metrics["epoch"].iloc[outside[-1] + 1])
    return {
        "epochs": int(metrics["epoch"].iloc[-1]),
        "final_test_logloss": final,
        "settled_epoch": settled,
        "settle_tol": tol,
    }


# ------------------------------------------------------- the sweep panels --
def _sweep(panel, view) -> Sweep:
    return view.runs[panel.curves[0].config][0].record


def sweep_curves(ax, panel, view) -> None:
    """Figs. 1b/2b: the shared plot of a sweep's test loss per level against the epoch."""
    s = _sweep(panel, view)
    plot_sweep_curves(s.agg, s.baselines, fill(panel.title, view.fields), ax=ax)


def sweep_final(ax, panel, view) -> None:
    """Fig. 3: the shared plot of a sweep's final test loss against the level."""
    s = _sweep(panel, view)
    plot_sweep_final(s.final, s.baselines, fill(panel.title, view.fields), method=s.manifest.solver.title, ax=ax)


def levels_table(table, runs, drawn, echo) -> pd.DataFrame:
    return runs[table.configs[0]][0].record.agg


def final_table(table, runs, drawn, echo) -> pd.DataFrame:
    return runs[table.configs[0]][0].record.final


def noise_forms(ax, panel, view) -> None:
    """Final test loss vs sigma for every reading of the noise, with fig2's own references
    (normalized rows change them)."""
    points = view.runs[panel.curves[0].config]
    plot_noise_forms(
        {p.values["form"]: p.record.final for p in points},
        points[0].record.baselines,
        fill(panel.title, view.fields),
        ax=ax,
    )


def forms_table(table, runs, drawn, echo) -> pd.DataFrame:
    rows = [
        p.record.final.assign(
            dataset=_data_label(points[0].record.manifest, name.removeprefix("fig2-")), form=p.values["form"]
        )
        for name, points in runs.items()
        for p in points
    ]
    return pd.concat(rows, ignore_index=True)


def privacy_costs(ax, panel, view) -> None:
    """Final test loss vs the target epsilon, one line per accounting of the same noise."""
    finals = {PRIVACY_SERIES[c.config]: view.runs[c.config][0].record.final for c in panel.curves}
    baselines = view.runs[panel.curves[0].config][0].record.baselines
    plot_privacy_costs(finals, baselines, fill(panel.title, view.fields), ax=ax)


def privacy_table(table, runs, drawn, echo) -> pd.DataFrame:
    return pd.concat(
        [p[0].record.final.assign(accounting=PRIVACY_SERIES[name]) for name, p in runs.items()], ignore_index=True
    )


# ------------------------------------------------------------------- entry --
def _runs(figure, configs, out, data_dir, jobs, echo) -> dict[str, list[engine.Point]]:
    """Run (or keep) what ``figure`` reads: Fig. 1's runs, or the sweeps (every noise
    form's for ``forms``, gisette's extra forms on one seed)."""
    if figure.name in ("fig1", "bytes"):
        return {
            name: [engine.Point({}, ensure_run(figure_config(configs, name), out / "runs" / name, data_dir, echo))]
            for name in figure.configs
        }
    if figure.name != "forms":
        return {
            name: [engine.Point({}, _ensure_sweep(configs, name, out, data_dir, jobs, echo))] for name in figure.configs
        }
    runs = {}
    for name in figure.configs:
        seeds = _FORM_SEEDS.get(name.removeprefix("fig2-"), ())
        runs[name] = [
            engine.Point(
                {"form": label},
                _ensure_sweep(
                    configs, name, out, data_dir, jobs, echo, suffix, (*overrides, *(seeds if suffix else ()))
                ),
            )
            for label, (suffix, overrides) in FORM_VARIANTS.items()
        ]
    return runs


def reproduce(which: str, out: Path, configs: Path, data_dir=None, jobs: int = 2, echo=click.echo):
    """Run what ``which`` (a figure of :data:`PAPER`, or "all") needs and draw it."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for figure in PAPER.chosen(which):
        runs = _runs(figure, configs, out, data_dir, jobs, echo)
        written += engine.draw(figure, runs, out, sys.modules[__name__], echo=echo, save=save_figure)[0]
    return written
