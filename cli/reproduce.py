"""``vfl reproduce``: redraw Figures 1-3 of the ADMM-sharing paper.

Each figure names the configs it needs (``configs/fig*.toml``); their runs
and sweeps live under ``OUT/runs`` and ``OUT/sweeps`` and are resumed, so a
second call only redraws. Beside every figure (PNG + PDF) are the CSVs it
was drawn from.

- fig1: training objective (as relative suboptimality against the central
  optimum F*, log scale) and test log loss vs epoch, ADMM sharing vs FDML
  SGD, on a9a and gisette (Figs. 1a and 2a of the paper);
- fig2: test log loss vs epoch at each noise level (Figs. 1b and 2b);
- fig3: final test log loss vs noise level with the sklearn all-features and
  party-1-only lines (Fig. 3);
- privacy: final test log loss vs the total target epsilon on a9a, with sigma
  calibrated by the PLD accountant from Lemma 1's sensitivity (not in the
  paper: what its analysis costs in accuracy).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pandas as pd

from vfl.experiments.config import load_config
from vfl.experiments.errors import ConfigError
from vfl.experiments.records import load_run, run_is_current, write_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.sweep import aggregate_sweep, run_sweep

from .plotting import STYLE, dataset_title, plot_sweep_curves, plot_sweep_final, save_figure

import matplotlib.pyplot as plt  # noqa: E402  (after .plotting chose the Agg backend)

__all__ = ["FIGURES", "reproduce"]

DATASETS = ("a9a", "gisette")
FIGURES = {
    "fig1": {"runs": [f"fig1-{d}-{m}" for d in DATASETS for m in ("admm", "sgd")]},
    "fig2": {"sweeps": [f"fig2-{d}" for d in DATASETS]},
    "fig3": {"sweeps": [f"fig2-{d}" for d in DATASETS]},  # the final points of fig2's sweeps
    "privacy": {"sweeps": ["privacy-a9a"]},  # test loss vs target epsilon (accounting mode)
}
_METHOD = {"admm_sharing": "ADMM sharing", "fdml_sgd": "FDML SGD"}


def _config(configs: Path, name: str):
    path = configs / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"{path} not found; run from the repository root or pass --configs DIR")
    return load_config(path)


def _ensure_run(configs, name, out, data_dir, echo):
    config = _config(configs, name)
    path = out / "runs" / name
    if run_is_current(path, config):
        echo(f"  {name}: kept (already complete)")
    else:
        echo(f"  {name}: running {config.solver.epochs} epochs of {config.solver.name}")
        write_run(run_experiment(config, data_dir=data_dir), path, overwrite=True)
    return load_run(path)


def _ensure_sweep(configs, name, out, data_dir, jobs, echo):
    config = _config(configs, name)
    path = out / "sweeps" / name
    param = "epsilon" if config.sweep.epsilons else "sigma"
    levels = config.sweep.epsilons or config.sweep.sigmas
    n = len(levels) * len(config.sweep.seeds)
    echo(f"  {name}: {n} runs ({param} in {levels}, seeds {config.sweep.seeds})")
    runs, _ = run_sweep(config, levels, config.sweep.seeds, path, param=param,
                        data_dir=data_dir, jobs=jobs)
    agg, final = aggregate_sweep(runs, path)
    manifest = load_run(runs[0].path).manifest
    return agg, final, load_run(runs[0].path).baselines, manifest


def _references_csv(rows: list[tuple[str, dict]], path: Path) -> None:
    records = []
    for dataset, baselines in rows:
        for key in ("central", "sklearn_all_features", "sklearn_local_only"):
            b = baselines[key]
            records.append({"dataset": dataset, "reference": key, "objective": b["objective"],
                            "test_logloss": b["test_logloss"], "test_accuracy": b["test_accuracy"]})
    pd.DataFrame(records).to_csv(path, index=False, float_format="%.10g")


def _fig1(configs, out, data_dir, echo) -> list[Path]:
    runs = {name: _ensure_run(configs, name, out, data_dir, echo) for name in FIGURES["fig1"]["runs"]}
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
            row[0].legend(loc="upper right")
            row[1].legend(loc="upper right")
    written = save_figure(fig, out / "fig1.png")
    for name, run in runs.items():
        shutil.copyfile(run.path / "metrics.csv", out / f"fig1-{name.removeprefix('fig1-')}.csv")
    _references_csv([(d, runs[f"fig1-{d}-admm"].baselines) for d in DATASETS], out / "fig1-references.csv")
    return written


def _fig23(which, configs, out, data_dir, jobs, echo) -> list[Path]:
    sweeps = {name: _ensure_sweep(configs, name, out, data_dir, jobs, echo)
              for name in FIGURES[which]["sweeps"]}
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.9), constrained_layout=True)
        for ax, (name, (agg, final, baselines, manifest)) in zip(axes, sweeps.items()):
            title = dataset_title(manifest)
            if which == "fig2":
                plot_sweep_curves(agg, baselines, f"{title}: test loss, noisy", ax=ax)
            else:
                plot_sweep_final(final, baselines, f"{title}: final test loss", ax=ax)
    written = save_figure(fig, out / f"{which}.png")
    for name, (agg, final, baselines, _) in sweeps.items():
        dataset = name.removeprefix("fig2-")
        (agg if which == "fig2" else final).to_csv(out / f"{which}-{dataset}.csv", index=False,
                                                   float_format="%.10g")
    _references_csv([(n.removeprefix("fig2-"), s[2]) for n, s in sweeps.items()],
                    out / f"{which}-references.csv")
    return written


def _fig_privacy(configs, out, data_dir, jobs, echo) -> list[Path]:
    (name,) = FIGURES["privacy"]["sweeps"]
    agg, final, baselines, manifest = _ensure_sweep(configs, name, out, data_dir, jobs, echo)
    fig = plot_sweep_final(final, baselines, f"{dataset_title(manifest)}: test loss vs privacy")
    written = save_figure(fig, out / "privacy.png")
    final.to_csv(out / "privacy-a9a.csv", index=False, float_format="%.10g")
    _references_csv([("a9a", baselines)], out / "privacy-references.csv")
    return written


def reproduce(which: str, out: Path, configs: Path, data_dir=None, jobs: int = 2, echo=click.echo):
    """Run what ``which`` ("fig1", "fig2", "fig3" or "all") needs and draw it."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in (FIGURES if which == "all" else [which]):
        echo(f"{fig}:")
        if fig == "fig1":
            written += _fig1(configs, out, data_dir, echo)
        elif fig == "privacy":
            written += _fig_privacy(configs, out, data_dir, jobs, echo)
        else:
            written += _fig23(fig, configs, out, data_dir, jobs, echo)
    return written
