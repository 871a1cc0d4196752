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

import shutil
from functools import partial
from pathlib import Path

import click
import numpy as np
import pandas as pd

from vfl.experiments.records import load_run
from vfl.experiments.reproduce import ensure_run, figure_config
from vfl.experiments.sweep import aggregate_sweep, run_sweep

from vfl.plots import (STYLE, dataset_title, plot_noise_forms, plot_privacy_costs,
                       plot_sweep_curves, plot_sweep_final, save_figure)

import matplotlib.pyplot as plt  # noqa: E402  (after vfl.plots chose the Agg backend)

from . import DATASETS, PAPER  # noqa: E402

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
    "model noise, NeurIPS version eq. (7), unit rows": ("variable-normalized",
                                            ("privacy.form=variable",
                                             "preprocessing.normalize_rows=true")),
}
# One seed for gisette's extra forms: each of its runs takes seconds, a9a's
# a fraction of one.
_FORM_SEEDS = {"gisette": ("sweep.seeds=[0]",)}
# A curve has reached its final test loss at the first epoch after which it
# stays within this distance of the last value (fig1-summary.csv).
SETTLE_TOL = 0.005
_METHOD = {"admm_sharing": "ADMM sharing", "fdml_sgd": "FDML SGD"}


def _configs(which: str) -> tuple[str, ...]:
    return PAPER.figure(which).configs


def _ensure_sweep(configs, name, out, data_dir, jobs, echo, suffix="", overrides=()):
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
    runs, _ = run_sweep(config, levels, config.sweep.seeds, path, param=param,
                        data_dir=data_dir, jobs=jobs)
    agg, final = aggregate_sweep(runs, path)
    manifest = load_run(runs[0].path).manifest
    return agg, final, load_run(runs[0].path).baselines, manifest


def _data_label(manifest: dict, name: str) -> str:
    """The dataset as CSVs name it: a stand-in always says it is one."""
    return dataset_title(manifest) if manifest.get("dataset", {}).get("stand_in") else name


def _references_csv(rows: list[tuple[str, dict]], path: Path) -> None:
    records = []
    for dataset, baselines in rows:
        for key in ("central", "sklearn_all_features", "sklearn_local_only"):
            b = baselines[key]
            records.append({"dataset": dataset, "reference": key, "objective": b["objective"],
                            "test_logloss": b["test_logloss"], "test_accuracy": b["test_accuracy"]})
    pd.DataFrame(records).to_csv(path, index=False, float_format="%.10g")


def _fig1(configs, out, data_dir, jobs, echo) -> list[Path]:
    runs = {name: ensure_run(figure_config(configs, name), out / "runs" / name, data_dir, echo)
            for name in _configs("fig1")}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(7.0, 5.4), constrained_layout=True)
        for row, dataset in zip(axes, DATASETS):
            pair = [runs[f"fig1-{dataset}-{m}"] for m in ("admm", "sgd")]
            title = dataset_title(pair[0].manifest)
            for run, color in zip(pair, ("C0", "C3")):
                label = _METHOD[run.config["solver"]["name"]]
                m = run.metrics
                row[0].semilogy(m["epoch"], m["suboptimality"].clip(lower=1e-16), color=color, label=label)
                row[1].plot(m["epoch"], m["test_logloss"], color=color, label=label)
            b = pair[0].baselines
            for key, label, ls, c in (("sklearn_all_features", "sklearn, all features", "--", "black"),
                                      ("sklearn_local_only", "sklearn, party 1 only", ":", "0.45")):
                row[1].axhline(b[key]["test_logloss"], color=c, lw=0.9, ls=ls, label=label)
            finals = [r.metrics["test_logloss"].iloc[-1] for r in pair]
            refs = [b[k]["test_logloss"] for k in ("sklearn_all_features", "sklearn_local_only")]
            lo, hi = min(finals + refs), max(finals + refs)
            row[1].set_ylim(lo - 0.1 * (hi - lo) - 0.01, hi + (hi - lo) + 0.05)
            row[0].set(xlabel="epoch", ylabel="(F(x) - F*) / F*",
                       title=f"{title}: objective gap")
            row[1].set(xlabel="epoch", ylabel="test log loss (nats per sample)",
                       title=f"{title}: test log loss")
            row[0].legend(loc="best")
            row[1].legend(loc="best")
    written = save_figure(fig, out / "fig1.png")
    for name, run in runs.items():
        shutil.copyfile(run.path / "metrics.csv", out / f"fig1-{name.removeprefix('fig1-')}.csv")
    _references_csv([(_data_label(runs[f"fig1-{d}-admm"].manifest, d), runs[f"fig1-{d}-admm"].baselines)
                     for d in DATASETS], out / "fig1-references.csv")
    summary = pd.DataFrame([{"run": name, "dataset": _data_label(run.manifest, name.split("-")[1]),
                             "method": _METHOD[run.config["solver"]["name"]],
                             **settling(run.metrics)} for name, run in runs.items()])
    summary.to_csv(out / "fig1-summary.csv", index=False, float_format="%.10g")
    for row in summary.itertuples():
        echo(f"  {row.run}: final test log loss {row.final_test_logloss:.4f}, within "
             f"{SETTLE_TOL:g} of it from epoch {row.settled_epoch} of {row.epochs}")
    return written


def bytes_to_reach(metrics: pd.DataFrame, target: float) -> dict:
    """The first epoch from which the test log loss stays at or below ``target``, with the
    messages and bytes sent until then (NaN when the curve does not end there). A curve that
    dips below the target and jumps back has not reached it."""
    above = np.flatnonzero(metrics["test_logloss"].to_numpy() > target)
    first = 0 if above.size == 0 else above[-1] + 1
    if first >= len(metrics):
        return {"epoch": np.nan, "messages": np.nan, "bytes": np.nan}
    row = metrics.iloc[first]
    return {"epoch": int(row["epoch"]), "messages": int(row["messages"]),
            "bytes": int(row["bytes"])}


def _fig_bytes(configs, out, data_dir, jobs, echo) -> list[Path]:
    """Figs. 1a/2a against the bytes sent, and the bytes each method needs for the same loss.

    The target of a dataset is the larger of the two final test losses plus
    :data:`SETTLE_TOL`: a loss both methods reach and stay at.
    """
    runs = {name: ensure_run(figure_config(configs, name), out / "runs" / name, data_dir, echo)
            for name in _configs("bytes")}
    rows = []
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.0), constrained_layout=True)
        for ax, dataset in zip(axes, DATASETS):
            pair = [runs[f"fig1-{dataset}-{m}"] for m in ("admm", "sgd")]
            target = max(r.metrics["test_logloss"].iloc[-1] for r in pair) + SETTLE_TOL
            for run, color in zip(pair, ("C0", "C3")):
                m = run.metrics.iloc[1:]  # row 0 has sent nothing: no place on a log axis
                label = _METHOD[run.config["solver"]["name"]]
                ax.semilogx(m["bytes"] / 1e6, m["test_logloss"], color=color, label=label)
                reach = bytes_to_reach(run.metrics, target)
                rows.append({"dataset": _data_label(run.manifest, dataset), "method": label,
                             "target_test_logloss": target, "epochs_to_target": reach["epoch"],
                             "messages_to_target": reach["messages"],
                             "bytes_to_target": reach["bytes"],
                             "bytes_per_epoch": int(run.metrics["bytes"].iloc[-1]
                                                    // max(1, run.metrics["epoch"].iloc[-1]))})
                if np.isfinite(reach["bytes"]):
                    ax.plot(reach["bytes"] / 1e6, target, "o", color=color, ms=4)
            ax.axhline(target, color="0.5", lw=0.8, ls=":", label="target: both end below it")
            # SGD's first epochs on the gisette stand-in reach losses of 100s: keep the
            # scale of the converged part (the curves go on above the frame)
            low = min(r.metrics["test_logloss"].min() for r in pair)
            ax.set_ylim(low - 0.05 * (target - low) - 0.01, low + 4.0 * (target - low) + 0.05)
            ax.set(xlabel="payload sent, all parties (MB, float64)",
                   ylabel="test log loss (nats per sample)",
                   title=f"{dataset_title(pair[0].manifest)}: test loss vs bytes")
            ax.legend(loc="best")
    written = save_figure(fig, out / "bytes.png")
    table = pd.DataFrame(rows)
    admm = table.groupby("dataset")["bytes_to_target"].transform("first")
    table["bytes_over_admm"] = table["bytes_to_target"] / admm
    table.to_csv(out / "bytes.csv", index=False, float_format="%.10g")
    for row in table.itertuples():
        echo(f"  {row.dataset}, {row.method}: test loss {row.target_test_logloss:.4f} after "
             f"{row.bytes_to_target / 1e6:.3g} MB ({row.bytes_over_admm:.3g}x ADMM sharing)")
    return written



def bytes_markdown(table: pd.DataFrame) -> str:
    """README's table of ``bytes.csv``: per dataset and method, what reaching the target took."""
    lines = ["| dataset | method | bytes per epoch | target test log loss | epochs | payload sent "
             "| vs ADMM sharing |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in table.itertuples():
        reached = np.isfinite(r.bytes_to_target)
        lines.append(f"| {r.dataset} | {r.method} | {r.bytes_per_epoch / 1e6:.3g} MB | "
                     f"{r.target_test_logloss:.4f} | "
                     + (f"{int(r.epochs_to_target)} | {r.bytes_to_target / 1e6:.3g} MB | "
                        f"{r.bytes_over_admm:.3g}x |" if reached else "not reached | - | - |"))
    return "\n".join(lines) + "\n"

def settling(metrics: pd.DataFrame, tol: float = SETTLE_TOL) -> dict:
    """Final test log loss and the first epoch after which the curve stays
    within ``tol`` of it (how many epochs the method needed)."""
    loss = metrics["test_logloss"].to_numpy()
    final = float(loss[-1])
    outside = np.flatnonzero(np.abs(loss - final) > tol)
    settled = 0 if outside.size == 0 else int(metrics["epoch"].iloc[outside[-1] + 1])
    return {"epochs": int(metrics["epoch"].iloc[-1]), "final_test_logloss": final,
            "settled_epoch": settled, "settle_tol": tol}


def _fig23(which, configs, out, data_dir, jobs, echo) -> list[Path]:
    sweeps = {name: _ensure_sweep(configs, name, out, data_dir, jobs, echo)
              for name in _configs(which)}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.9), constrained_layout=True)
        for ax, (name, (agg, final, baselines, manifest)) in zip(axes, sweeps.items()):
            title = dataset_title(manifest)
            if which == "fig2":
                plot_sweep_curves(agg, baselines, f"{title}: test loss under noise", ax=ax)
            else:
                plot_sweep_final(final, baselines, f"{title}: final test loss",
                                 method=manifest["solver"]["title"], ax=ax)
    written = save_figure(fig, out / f"{which}.png")
    for name, (agg, final, baselines, _) in sweeps.items():
        dataset = name.removeprefix("fig2-")
        (agg if which == "fig2" else final).to_csv(out / f"{which}-{dataset}.csv", index=False,
                                                   float_format="%.10g")
    _references_csv([(_data_label(s[3], n.removeprefix("fig2-")), s[2]) for n, s in sweeps.items()],
                    out / f"{which}-references.csv")
    return written


def _fig_forms(configs, out, data_dir, jobs, echo) -> list[Path]:
    panels = {}
    for name in _configs("forms"):
        dataset = name.removeprefix("fig2-")
        finals, first = {}, None
        for label, (suffix, overrides) in FORM_VARIANTS.items():
            extra = _FORM_SEEDS.get(dataset, ()) if suffix else ()
            sweep = _ensure_sweep(configs, name, out, data_dir, jobs, echo, suffix, (*overrides, *extra))
            finals[label] = sweep[1]
            first = first or sweep
        # reference lines of fig2's own partition (normalized rows change them)
        panels[dataset] = (finals, first[2], first[3])
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.1), constrained_layout=True)
        for ax, (finals, baselines, manifest) in zip(axes, panels.values()):
            plot_noise_forms(finals, baselines, f"{dataset_title(manifest)}: noise forms", ax=ax)
    written = save_figure(fig, out / "forms.png")
    rows = [final.assign(dataset=_data_label(manifest, dataset), form=label)
            for dataset, (finals, _, manifest) in panels.items() for label, final in finals.items()]
    pd.concat(rows, ignore_index=True).to_csv(out / "forms.csv", index=False, float_format="%.10g")
    return written


def _fig_privacy(configs, out, data_dir, jobs, echo) -> list[Path]:
    finals, first = {}, None
    for name in _configs("privacy"):
        agg, final, baselines, manifest = _ensure_sweep(configs, name, out, data_dir, jobs, echo)
        finals[PRIVACY_SERIES[name]] = final
        first = first or (baselines, manifest)
    baselines, manifest = first
    fig = plot_privacy_costs(finals, baselines, f"{dataset_title(manifest)}: test loss vs epsilon")
    written = save_figure(fig, out / "privacy.png")
    rows = [final.assign(accounting=label) for label, final in finals.items()]
    pd.concat(rows, ignore_index=True).to_csv(out / "privacy.csv", index=False,
                                              float_format="%.10g")
    _references_csv([("a9a", baselines)], out / "privacy-references.csv")
    return written


def reproduce(which: str, out: Path, configs: Path, data_dir=None, jobs: int = 2, echo=click.echo):
    """Run what ``which`` (a figure of :data:`PAPER`, or "all") needs and draw it."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in (f.name for f in PAPER.chosen(which)):
        echo(f"{fig}:")
        written += _DRAW[fig](configs, out, data_dir, jobs, echo)
    return written


#: figure -> the function that draws it
_DRAW = {"fig1": _fig1, "bytes": _fig_bytes, "fig2": partial(_fig23, "fig2"),
         "fig3": partial(_fig23, "fig3"), "forms": _fig_forms, "privacy": _fig_privacy}
