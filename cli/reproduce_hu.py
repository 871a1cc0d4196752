"""``vfl reproduce hu``: redraw Figures 1-3 of the ADMM-sharing paper (Hu et al.).

Each figure names the configs it needs (``configs/fig*.toml``); their runs
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
  the shared value, (10) of 000, the NeurIPS version's
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
from pathlib import Path

import click
import numpy as np
import pandas as pd

from vfl.experiments.config import load_config
from vfl.core.errors import ConfigError
from vfl.experiments.records import load_run, run_is_current, write_run
from vfl.experiments.runner import run_experiment
from vfl.experiments.sweep import aggregate_sweep, run_sweep

from .plotting import (STYLE, dataset_title, plot_noise_forms, plot_privacy_costs,
                       plot_sweep_curves, plot_sweep_final, save_figure)

import matplotlib.pyplot as plt  # noqa: E402  (after .plotting chose the Agg backend)

__all__ = ["FIGURES", "NEEDS", "TITLE", "reproduce", "required_configs"]

TITLE = "Hu, Liu, Kong, Niu 2019, ADMM sharing over distributed features"
DATASETS = ("a9a", "gisette")
#: figure -> what it shows (``vfl reproduce --help``)
FIGURES = {
    "fig1": "Figs. 1a/2a: ADMM sharing vs FDML SGD, objective and test loss vs epoch",
    "fig2": "Figs. 1b/2b: test loss vs epoch at each noise level",
    "fig3": "Fig. 3: final test loss vs noise level",
    "forms": "final test loss under each reading of the noise (not in the paper)",
    "privacy": "test loss vs target epsilon: the paper's accounting vs sound ones (not in the paper)",
}
#: figure -> the configs it runs
NEEDS = {
    "fig1": {"runs": [f"fig1-{d}-{m}" for d in DATASETS for m in ("admm", "sgd")]},
    "fig2": {"sweeps": [f"fig2-{d}" for d in DATASETS]},
    "fig3": {"sweeps": [f"fig2-{d}" for d in DATASETS]},  # the final points of fig2's sweeps
    "forms": {"sweeps": [f"fig2-{d}" for d in DATASETS]},  # fig3 under each noise form
    "privacy": {"sweeps": ["privacy-a9a", "privacy-a9a-column", "privacy-a9a-row"]},
}
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
    "whitened model noise, 000 eq. (10)": ("whitened", ("privacy.form=variable_whitened",)),
    "model noise x + N(0, s^2 I), 001 eq. (7)": ("variable", ("privacy.form=variable",)),
    "model noise, 001 eq. (7), unit rows": ("variable-normalized",
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


def _config(configs: Path, name: str, overrides=()):
    path = configs / f"{name}.toml"
    if not path.is_file():
        raise ConfigError(f"{path} not found; run from the repository root or pass --configs DIR")
    return load_config(path, list(overrides))


def _ensure_run(configs, name, out, data_dir, echo):
    config = _config(configs, name)
    path = out / "runs" / name
    if run_is_current(path, config):
        echo(f"  {name}: kept (already complete)")
    else:
        echo(f"  {name}: running {config.solver.epochs} epochs of {config.solver.name}")
        write_run(run_experiment(config, data_dir=data_dir), path, overwrite=True)
    return load_run(path)


def _ensure_sweep(configs, name, out, data_dir, jobs, echo, suffix="", overrides=()):
    """Run (or resume) the sweep of ``configs/name.toml``. With a ``suffix`` it
    is the variant ``name-suffix`` with ``overrides``, exactly what
    ``vfl sweep-noise --config configs/name.toml --set ...`` runs."""
    label = f"{name}-{suffix}" if suffix else name
    config = _config(configs, name, [*overrides, f"name={label}"] if suffix else overrides)
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


def _fig1(configs, out, data_dir, echo) -> list[Path]:
    runs = {name: _ensure_run(configs, name, out, data_dir, echo) for name in NEEDS["fig1"]["runs"]}
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
              for name in NEEDS[which]["sweeps"]}
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
    for name in NEEDS["forms"]["sweeps"]:
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
    for name in NEEDS["privacy"]["sweeps"]:
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


def required_configs(which: str) -> list[str]:
    """The configs ``which`` (a figure or "all") reads."""
    figures = NEEDS if which == "all" else {which: NEEDS[which]}
    return sorted({name for need in figures.values() for names in need.values() for name in names})


def reproduce(which: str, out: Path, configs: Path, data_dir=None, jobs: int = 2, echo=click.echo):
    """Run what ``which`` (a key of :data:`FIGURES`, or "all") needs and draw it."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in (FIGURES if which == "all" else [which]):
        echo(f"{fig}:")
        if fig == "fig1":
            written += _fig1(configs, out, data_dir, echo)
        elif fig == "privacy":
            written += _fig_privacy(configs, out, data_dir, jobs, echo)
        elif fig == "forms":
            written += _fig_forms(configs, out, data_dir, jobs, echo)
        else:
            written += _fig23(fig, configs, out, data_dir, jobs, echo)
    return written
