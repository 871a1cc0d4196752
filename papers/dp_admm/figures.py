"""``vfl reproduce dp-admm``: redraw Figures 1-6 and Table III of Huang et al. (DP-ADMM).

Huang, Hu, Chan-Tin, Gong, *DP-ADMM: ADMM-based Distributed Learning with
Differential Privacy* (Huang et al. 2019, arXiv 1808.10101, Sec. VI). UCI
Adult, 100 providers x 210 rows, 162 public pre-training rows, 9000 test
rows, lambda = 0.17, rho = 1, T = 100, 10 runs per setting:

- fig1 / fig3: expected augmented objective vs iteration (l1 / l2), one
  panel per delta, DP-ADMM (Algorithm 3) at every epsilon against the
  non-private Algorithm 1, plus the noiseless linearized iteration (same eta:
  it isolates the cost of the noise);
- fig2: test accuracy vs epsilon_bar (l1), one line per delta;
- fig4 / fig5: expected augmented objective / empirical loss vs iteration
  (l2), DP-ADMM against Algorithm 2 at (eps, delta) = (0.05, 1e-3) and
  (0.1, 1e-3);
- fig6: test accuracy vs epsilon_bar (l2): DP-ADMM and Algorithm 2 per delta;
- fig2 / fig6 also plot accuracy against the tight epsilon (and fig6 zooms
  onto DP-ADMM and Algorithm 1);
- table3: solver time of the T = 100 iterations (l2, delta = 1e-3) as ratios
  to the non-private run, measured in one process, single-threaded BLAS,
  median of :data:`TABLE3_REPEATS` repetitions of CPU seconds (wall seconds
  beside them: on a shared machine only the CPU seconds mean what the
  paper's wall seconds meant).

Every epsilon is shown twice, honestly labelled: ``epsilon_bar``, the
paper's moments accountant (Theorem 2 / Appendix A, a claim), and the tight
epsilon of the same Gaussian releases with the sensitivities the code
enforces (``epsilon_tight``: their exact composition, which dp-accounting's
PLD accountant approaches from above; ``epsilon_pld`` in the CSVs is that
PLD accountant's own number). Neighbouring datasets: one record of one
provider's dataset replaced.

Every run is an ordinary run directory under ``OUT/sweeps/<config>/``, one
per grid point (``run.repeats = 10`` inside), made by
:func:`vfl.experiments.sweep.run_grid` in parallel and resumed when current.
All configs of the figures share ``run.seed``, so repeat r of every
algorithm and (epsilon, delta) trains on the same split (common random
numbers). CSVs beside every figure start with ``#`` comment lines (read
them with ``pandas.read_csv(path, comment="#")``).
"""

from __future__ import annotations

import json
import math
import os
import platform
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter, process_time

import click
import matplotlib.ticker
import numpy as np
import pandas as pd

from vfl.experiments.config import Config
from vfl.experiments.reproduce import figure_config
from vfl.experiments.records import load_run
from vfl.experiments.sweep import SweepRun, plan_grid, run_grid

from vfl.plots import STYLE, save_figure

import matplotlib.pyplot as plt  # noqa: E402  (after vfl.plots chose the Agg backend)

from . import PAPER  # noqa: E402

__all__ = ["needs", "EPSILONS", "DELTAS", "reproduce", "figure_runs", "time_cases"]

#: the paper's grid (Sec. VI, "Setup")
EPSILONS = (0.01, 0.02, 0.05, 0.07, 0.1, 0.2)
DELTAS = (1e-3, 1e-4, 1e-5, 1e-6)
#: Figs. 4 and 5: (eps, eps_bar, delta) = (0.05, 0.5009, 1e-3) and (0.1, 1.0193, 1e-3)
FIG45_EPSILONS = (0.05, 0.1)
FIG45_DELTA = 1e-3
#: Table III: l2, delta = 1e-3 (the paper states no delta), the paper's three epsilons
TABLE3_EPSILONS = (0.01, 0.05, 0.1)
TABLE3_DELTA = 1e-3
TABLE3_REPEATS = 5
#: Table III as printed (seconds, MATLAB on a 3.40 GHz Core): eps -> (Alg. 1, Alg. 2, DP-ADMM)
PAPER_TABLE3 = {0.01: (6.184117, 368.871413, 3.063915), 0.05: (6.184117, 212.488406, 3.066966),
                0.1: (6.184117, 70.127314, 3.056092)}

#: sweep -> the config file it varies (``configs/<file>.toml``)
SWEEPS = {"dp-admm-l1": "dp-admm-l1", "dp-admm-l2": "dp-admm-l2", "alg2": "dp-admm-alg2",
          "alg1": "dp-admm-alg1"}
#: roughly the CPU seconds of one run directory, longest first (load balancing)
_COST = {"alg2": 10.0, "alg1": 6.0, "dp-admm-l1": 5.0, "dp-admm-l2": 3.0}


@dataclass(frozen=True)
class Need:
    """The grid points of one sweep that a figure draws."""

    sweep: str
    grid: dict


def needs(figure: str) -> tuple[Need, ...]:
    """The runs ``figure`` draws (read from the module's grid constants at call time)."""
    full = {"privacy.epsilon_per_iteration": list(EPSILONS), "privacy.delta": list(DELTAS)}
    fig45 = {"privacy.epsilon_per_iteration": list(FIG45_EPSILONS), "privacy.delta": [FIG45_DELTA]}
    alg1 = {reg: Need("alg1", {"objective.regularizer": [reg]}) for reg in ("l1", "half_l2sq")}
    # The DP-ADMM iteration without noise (linearized ADMM, same eta) isolates the noise's cost.
    # Theorem 3's eta (l1) does not depend on (eps, delta): one run serves all.
    d11_l1 = Need("dp-admm-l1", {"privacy.noise": [False]})
    d11_l2 = Need("dp-admm-l2", {**fig45, "privacy.noise": [False]})
    return {
        "fig1": (Need("dp-admm-l1", full), alg1["l1"], d11_l1),
        "fig2": (Need("dp-admm-l1", full), alg1["l1"]),
        "fig3": (Need("dp-admm-l2", full), alg1["half_l2sq"]),
        "fig4": (Need("dp-admm-l2", fig45), Need("alg2", fig45), alg1["half_l2sq"], d11_l2),
        "fig5": (Need("dp-admm-l2", fig45), Need("alg2", fig45), alg1["half_l2sq"], d11_l2),
        "fig6": (Need("dp-admm-l2", full), Need("alg2", full), alg1["half_l2sq"]),
        "table3": (),
    }[figure]


NEIGHBOURS = "one record (a, b) of one provider's dataset replaced by another (m unchanged)"
EPS_NOTE = ("epsilon_bar: the paper's moments accountant (Theorem 2, Appendix A), a claim; "
            "epsilon_tight: exact composition of the same Gaussian releases with the "
            "sensitivities the code enforces (dp-accounting's PLD accountant approaches it "
            "from above; epsilon_pld is that accountant's own number)")
CAPTION = ("$\\bar\\epsilon$: the paper's moments accountant (a claim).  $\\epsilon_{{tight}}$: "
           "exact composition of the same Gaussian releases (dp-accounting, PLD).  "
           "Neighbours: one record of one provider replaced.  Mean of {n} runs; {spread}.")
D11_LABEL = "DP-ADMM iteration, no noise"
_ALG = {"dp_admm": "DP-ADMM (Alg. 3)", "consensus_admm": "Algorithm 1 (non-private)",
        "consensus_admm_perturbed": "Algorithm 2 (paper's sigma)"}


# ------------------------------------------------------------------ runs --
def _config(configs: Path, sweep: str) -> Config:
    return figure_config(configs, SWEEPS[sweep])


def _plan(configs: Path, out: Path, needs) -> dict[str, list[SweepRun]]:
    """Every grid point ``needs`` names, validated, per sweep (no duplicates)."""
    plans: dict[str, dict[Path, SweepRun]] = {}
    for need in needs:
        config = _config(configs, need.sweep)
        runs = plan_grid(config, need.grid, [config.run.seed], out / "sweeps" / need.sweep)
        for run in runs:
            plans.setdefault(need.sweep, {})[run.path] = run
    return {sweep: list(runs.values()) for sweep, runs in plans.items()}


def figure_runs(which: str, configs: Path, out: Path) -> dict[str, list[SweepRun]]:
    """The run directories figure ``which`` (or "all") draws, per sweep."""
    figures = [f.name for f in PAPER.chosen(which)]
    return _plan(configs, out, [n for f in figures for n in needs(f)])


def _ensure(plans: dict[str, list[SweepRun]], out: Path, data_dir, jobs: int, echo) -> None:
    """Run every missing grid point, all sweeps in one parallel pool, longest first."""
    runs = sorted((r for rs in plans.values() for r in rs),
                  key=lambda r: -_COST.get(r.path.parent.name, 1.0))
    if not runs:
        return
    done = [0]

    def on_done(run: SweepRun, skipped: bool) -> None:
        done[0] += 1
        if not skipped:
            echo(f"  [{done[0]}/{len(runs)}] {run.path.parent.name}/{run.path.name}")

    t0 = perf_counter()
    _, ran = run_grid(runs[0].config, {}, [], out / "sweeps", data_dir=data_dir, jobs=jobs,
                      on_done=on_done, runs=runs)
    echo(f"  {len(runs)} run directories ({len(runs) - len(ran)} kept, {len(ran)} run) "
         f"in {perf_counter() - t0:.0f} s")


# ------------------------------------------------------------ reading runs --
@dataclass
class Curve:
    """One run directory read back: its grid values, statistics and privacy numbers."""

    values: dict
    algorithm: str
    stats: pd.DataFrame  # metrics_stats.csv: <metric>_mean/_std/_min/_max per iteration
    final: pd.Series  # metrics.csv's last row (means over repeats)
    baselines: list  # per repeat
    manifest: dict

    @property
    def epsilon(self):
        """Theorem 1's per-iteration epsilon (the paper's parameter, what the figures sweep)."""
        return self.values.get("epsilon_per_iteration")

    @property
    def delta(self):
        return self.values.get("delta")

    @property
    def noise(self) -> bool:
        return self.values.get("noise", True)

    def eps_bar(self) -> float:
        return float(self.final.get("epsilon_paper", float("nan")))

    def eps_tight(self) -> float:
        return float(self.final.get("epsilon_tight", float("nan")))

    def eps_pld(self) -> float:
        """dp-accounting's PLD epsilon of the same T Gaussian releases (a cross-check)."""
        p = self.manifest.get("privacy") or {}
        if not p.get("dp_guarantee"):
            return float("nan")
        T = int(self.final["epoch"])
        if self.algorithm == "dp_admm":
            # Theorem 1 with Lemma 1: sigma_k / Delta_k = sqrt(2 ln(1.25/delta)) / eps, every k
            z = math.sqrt(2.0 * math.log(1.25 / self.delta)) / self.epsilon
        else:
            z = p["sigma"] / p["sensitivity_enforced"]["value"]
        return _pld_epsilon(z, T, self.delta)


def _pld_epsilon(z: float, T: int, delta: float) -> float:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(z), T)
    return float(acc.get_epsilon(delta))


def _read(run: SweepRun) -> Curve:
    rec = load_run(run.path)
    stats_file = run.path / "metrics_stats.csv"
    stats = pd.read_csv(stats_file) if stats_file.is_file() else _single_stats(rec.metrics)
    b = rec.baselines.get("per_repeat", [rec.baselines])
    return Curve(dict(run.values), rec.config["solver"]["name"], stats, rec.metrics.iloc[-1], b,
                 rec.manifest)


def _single_stats(metrics: pd.DataFrame) -> pd.DataFrame:
    """metrics_stats.csv's layout for a run of one repeat (no spread)."""
    out = {"epoch": metrics["epoch"], "n_repeats": 1}
    for c in metrics.columns:
        if c != "epoch":
            for s in ("mean", "min", "max"):
                out[f"{c}_{s}"] = metrics[c]
            out[f"{c}_std"] = np.nan
    return pd.DataFrame(out)


def _curves(plans, sweep: str, **match) -> list[Curve]:
    """The curves of ``sweep`` whose grid values match (``noise=False`` only when asked)."""
    match.setdefault("noise", True)
    out = []
    for run in plans.get(sweep, []):
        values = {"noise": True, **dict(run.values)}
        if all(values.get(k) == v for k, v in match.items()):
            out.append(_read(run))
    return sorted(out, key=lambda c: (c.delta or 0, c.epsilon or 0))


def _reference(curves: list[Curve], key: str, metric: str = "test_accuracy") -> float:
    """Mean over repeats of a baseline (``central`` / ``majority``) of the runs' splits."""
    vals = [rep[key][metric] for rep in curves[0].baselines if key in rep]
    return float(np.mean(vals)) if vals else float("nan")


# ---------------------------------------------------------------- drawing --
def _eps_colors():
    cmap = plt.get_cmap("viridis")
    return {e: cmap(0.92 * i / (len(EPSILONS) - 1)) for i, e in enumerate(EPSILONS)}


def _delta_tex(delta: float) -> str:
    return f"10^{{{int(round(math.log10(delta)))}}}"


def _eps_label(c: Curve, with_eps: bool = True) -> str:
    head = f"$\\epsilon$={c.epsilon:g}: " if with_eps else ""
    return (f"{head}$\\bar\\epsilon$={c.eps_bar():.4f}, "
            f"$\\epsilon_{{tight}}$={c.eps_tight():.3g}")


def _series(ax, c: Curve, metric: str, *, color, label, ls="-", lw=None):
    s = c.stats[c.stats["epoch"] > 0]
    ax.plot(s["epoch"], s[f"{metric}_mean"], color=color, ls=ls, lw=lw, label=label)
    if f"{metric}_min" in s and s["n_repeats"].iloc[0] > 1:
        ax.fill_between(s["epoch"], s[f"{metric}_min"], s[f"{metric}_max"], color=color,
                        alpha=0.13, lw=0)


def _caption(fig, curves: list[Curve], spread: str = "band: min-max", extra: str = "") -> None:
    n = sorted({int(c.stats["n_repeats"].iloc[0]) for c in curves})
    text = CAPTION.format(n="/".join(map(str, n)), spread=spread) + (f"  {extra}" if extra else "")
    fig.text(0.5, -0.01, text, ha="center", va="top", fontsize=6.5, wrap=True)


def _comment(lines: list[str]) -> str:
    return "".join(f"# {line}\n" for line in lines)


def _write_csv(frame: pd.DataFrame, path: Path, lines: list[str]) -> Path:
    tmp = path.with_name(f".{path.name}.partial")
    with tmp.open("w") as f:
        f.write(_comment(lines))
        frame.to_csv(f, index=False, float_format="%.10g")
    os.replace(tmp, path)
    return path


def _header(what: str) -> list[str]:
    return [what, "Huang et al. 2019, DP-ADMM: UCI Adult, N = 100 providers x m = 210, "
            "162 public pre-training rows, 9000 test rows, lambda = 0.17, rho = 1, T = 100; "
            "statistics over the 10 runs (repeats) of each setting",
            f"neighbouring datasets: {NEIGHBOURS}", EPS_NOTE]


def _long(curves: list[Curve], metric: str) -> pd.DataFrame:
    """Per curve and iteration: mean / std / min / max of ``metric`` over the runs."""
    rows = []
    for c in curves:
        s = c.stats
        frame = pd.DataFrame({
            "algorithm": _ALG[c.algorithm] + ("" if c.noise else ", no noise"),
            "regularizer": c.manifest["objective"]["regularizer"],
            # Noiseless runs keep their epsilon: Theorem 4's eta (l2) depends on it
            "epsilon": np.nan if c.epsilon is None else c.epsilon,
            "delta": c.delta, "epsilon_bar": c.eps_bar(), "epsilon_tight": c.eps_tight(),
            "epoch": s["epoch"], "n_runs": s["n_repeats"],
            **{f"{metric}_{k}": s[f"{metric}_{k}"] for k in ("mean", "std", "min", "max")}})
        rows.append(frame)
    return pd.concat(rows, ignore_index=True)


def _convergence(fig_name, plans, out, sweep, reg_name, echo) -> list[Path]:
    """Figs. 1 and 3: augmented objective vs iteration, one panel per delta."""
    metric = "augmented_objective"
    alg1 = _curves(plans, "alg1", regularizer=reg_name)[0]
    d11 = _curves(plans, sweep, noise=False)
    d11 = [c for c in d11 if c.epsilon is None]  # the (eps, delta)-free l1 run
    colors = _eps_colors()
    all_curves = [alg1, *d11]
    f_star = _reference([alg1], "central", "objective")
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(2, 2, figsize=(7.2, 6.2), sharex=True, sharey=True,
                                 constrained_layout=True)
        for ax, delta in zip(axes.ravel(), DELTAS):
            curves = _curves(plans, sweep, delta=delta)
            all_curves += curves
            _series(ax, alg1, metric, color="black", label="Algorithm 1 (non-private)", lw=1.6)
            for c in d11:
                _series(ax, c, metric, color="0.45", ls="--", label=D11_LABEL)
            for c in curves:
                _series(ax, c, metric, color=colors[c.epsilon], label=_eps_label(c))
            ax.axhline(f_star, color="black", ls="-.", lw=0.8, label="optimum F* (pooled rows)")
            ax.set_yscale("log")
            ax.set_title(f"$\\delta = {_delta_tex(delta)}$")
            ax.legend(loc="upper right", fontsize=5.6, framealpha=0.85)
        for ax in axes[1]:
            ax.set_xlabel("iteration k")
        for ax in axes[:, 0]:
            ax.set_ylabel("expected augmented objective (diagnostic)")
        reg = "$\\ell_1$" if reg_name == "l1" else "$\\ell_2$"
        fig.suptitle(f"{fig_name.replace('fig', 'Fig. ')}: DP-ADMM vs the non-private algorithm "
                     f"({reg}-regularized logistic regression, Adult)", fontsize=9)
        _caption(fig, all_curves)
    written = save_figure(fig, out / f"{fig_name}.png")
    written.append(_write_csv(_long(all_curves, metric), out / f"{fig_name}.csv",
                              _header(f"{fig_name}: expected augmented objective "
                                      "sum_i f_i(w_bar_i^k) + ||w_bar_i^k - w_bar^k|| per "
                                      f"iteration ({reg_name}); F* = {f_star:.10g}")))
    for c in all_curves:
        if c.noise and c.algorithm == "dp_admm":
            continue
        echo(f"  {c.algorithm}{'' if c.noise else ' (no noise)'}: final augmented objective "
             f"{c.stats[f'{metric}_mean'].iloc[-1]:.4f}")
    return written


def _final_table(curves: list[Curve]) -> pd.DataFrame:
    rows = []
    for c in curves:
        f = c.stats.iloc[-1]
        rows.append({"algorithm": _ALG[c.algorithm], "regularizer":
                     c.manifest["objective"]["regularizer"], "epsilon": c.epsilon, "delta": c.delta,
                     "epsilon_bar": c.eps_bar(), "epsilon_tight": c.eps_tight(),
                     "epsilon_pld": c.eps_pld(), "n_runs": int(f["n_repeats"]),
                     **{f"test_accuracy_{k}": f[f"test_accuracy_{k}"]
                        for k in ("mean", "std", "min", "max")},
                     "empirical_loss_mean": f["empirical_loss_mean"],
                     "augmented_objective_mean": f["augmented_objective_mean"]})
    return pd.DataFrame(rows)


def _accuracy(fig_name, plans, out, sweep, reg_name, with_alg2, echo) -> list[Path]:
    """Figs. 2 and 6: final test accuracy vs epsilon_bar (left) and epsilon_tight (right)."""
    alg1 = _curves(plans, "alg1", regularizer=reg_name)[0]
    dp = _curves(plans, sweep)
    alg2 = _curves(plans, "alg2") if with_alg2 else []
    table = _final_table(dp + alg2)
    refs = {"Algorithm 1 (non-private)": (alg1.stats["test_accuracy_mean"].iloc[-1], "black", "-"),
            "optimum of the same objective (pooled rows)": (_reference([alg1], "central"),
                                                            "black", "-."),
            "majority class": (_reference([alg1], "majority"), "0.45", ":")}
    cmap = plt.get_cmap("plasma")
    delta_colors = {d: cmap(0.85 * i / max(1, len(DELTAS) - 1)) for i, d in enumerate(DELTAS)}
    # (x column, algorithms drawn): Fig. 6 adds a zoom onto DP-ADMM and Algorithm 1
    panels = [("epsilon_bar", ("DP-ADMM (Alg. 3)", "Algorithm 2 (paper's sigma)"))]
    if with_alg2:
        panels.append(("epsilon_bar", ("DP-ADMM (Alg. 3)",)))
    # Algorithm 2's tight epsilon is 0 or ~1e-4 (its sigma is ~590x over-calibrated: its
    # sensitivity ignores rho): no log axis holds it beside DP-ADMM's, so it is stated in words
    panels.append(("epsilon_tight", ("DP-ADMM (Alg. 3)",) if with_alg2 else
                   ("DP-ADMM (Alg. 3)", "Algorithm 2 (paper's sigma)")))
    n_runs = int(table["n_runs"].min())
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, len(panels),
                                 figsize=(3.6 * len(panels) + (1.9 if with_alg2 else 0.0), 3.4),
                                 sharey=not with_alg2, constrained_layout=True)
        for i, (ax, (col, algs)) in enumerate(zip(axes, panels)):
            for alg, marker, ls in (("DP-ADMM (Alg. 3)", "o", "-"),
                                    ("Algorithm 2 (paper's sigma)", "s", "--")):
                for delta in DELTAS:
                    t = table[(table["algorithm"] == alg) & (table["delta"] == delta)]
                    if t.empty or alg not in algs:
                        continue
                    t = t.sort_values(col)
                    short = "DP-ADMM" if alg.startswith("DP") else "Alg. 2"
                    ax.errorbar(t[col], t["test_accuracy_mean"], yerr=t["test_accuracy_std"],
                                color=delta_colors[delta], marker=marker, ms=3.2, ls=ls,
                                capsize=1.5, lw=1.1,
                                label=f"{short}, $\\delta = {_delta_tex(delta)}$")
            for label, (value, color, ls) in refs.items():
                ax.axhline(value, color=color, ls=ls, lw=0.9, label=f"{label}: {value:.4f}")
            if col == "epsilon_bar":
                ax.set_xscale("log")
                ticks = sorted(table.loc[table["algorithm"] == "DP-ADMM (Alg. 3)"]
                               .groupby("epsilon")["epsilon_bar"].mean())
                ax.set_xticks(ticks, [f"{v:.2g}" for v in ticks])
                ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
                ax.set_xlabel("$\\bar\\epsilon$ after T iterations (paper's accountant, a claim)")
                ax.set_title("vs the paper's $\\bar\\epsilon$" +
                             (": DP-ADMM, zoom" if len(algs) == 1 else ""))
            else:
                ax.set_xscale("log")
            if col == "epsilon_tight" and with_alg2:
                t2 = table[table["algorithm"] == "Algorithm 2 (paper's sigma)"]
                ax.text(0.03, 0.04, f"Algorithm 2 (off this axis): $\\epsilon_{{tight}}$ <= "
                        f"{t2['epsilon_tight'].max():.2g},\naccuracy "
                        f"{t2['test_accuracy_mean'].min():.3f}-{t2['test_accuracy_mean'].max():.3f}",
                        transform=ax.transAxes, fontsize=6, va="bottom")
            if col == "epsilon_tight":
                ax.set_xlabel("$\\epsilon_{tight}$ after T iterations "
                              "(dp-accounting, same $\\delta$)")
                ax.set_title("vs the tight $\\epsilon$ of the same noise")
            if i == 0 or with_alg2:
                ax.set_ylabel(f"test accuracy, mean of {n_runs} runs")
            if len(algs) == 1:  # the zoom: DP-ADMM and Algorithm 1 (the optimum is above)
                t = table[table["algorithm"] == algs[0]]
                lo = float((t["test_accuracy_mean"] - t["test_accuracy_std"]).min())
                hi = max(float((t["test_accuracy_mean"] + t["test_accuracy_std"]).max()),
                         refs["Algorithm 1 (non-private)"][0])
                ax.set_ylim(lo - 0.002, hi + 0.004)
        if with_alg2:  # beside the panels: inside, it covers Algorithm 2's curves
            fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center",
                       fontsize=5.6, frameon=False)
        else:
            axes[0].legend(loc="lower right", fontsize=5.4, framealpha=0.85)
        reg = "$\\ell_1$" if reg_name == "l1" else "$\\ell_2$"
        who = "DP-ADMM, the non-private and the existing private algorithm" if with_alg2 \
            else "DP-ADMM vs the non-private algorithm"
        fig.suptitle(f"{fig_name.replace('fig', 'Fig. ')}: accuracy of {who} "
                     f"({reg}-regularized logistic regression)", fontsize=9)
        _caption(fig, [alg1, *dp, *alg2], spread="bars: +-1 std")
    written = save_figure(fig, out / f"{fig_name}.png")
    reg_value = alg1.manifest["objective"]["regularizer"]
    ref_rows = pd.DataFrame([{"algorithm": k, "regularizer": reg_value, "test_accuracy_mean": v[0]}
                             for k, v in refs.items()])
    written.append(_write_csv(pd.concat([table, ref_rows], ignore_index=True),
                              out / f"{fig_name}.csv",
                              _header(f"{fig_name}: final test accuracy (global w^T) per "
                                      f"(algorithm, epsilon, delta), {reg_name}; the last rows "
                                      "are the reference lines (mean over the same 10 splits)")))
    for alg in table["algorithm"].unique():
        t = table[table["algorithm"] == alg]
        pivot = t.pivot(index="epsilon", columns="delta", values="test_accuracy_mean")
        echo(f"  {alg}: test accuracy (rows epsilon, columns delta)\n" +
             "\n".join("    " + line for line in pivot.to_string(float_format="%.4f").splitlines()))
    echo("  " + ", ".join(f"{k}: {v[0]:.4f}" for k, v in refs.items()))
    return written


def _versus_alg2(fig_name, plans, out, metric, ylabel, echo) -> list[Path]:
    """Figs. 4 and 5: DP-ADMM (l2) vs Algorithm 2 at the two settings, log y."""
    alg1 = _curves(plans, "alg1", regularizer="half_l2sq")[0]
    used = [alg1]
    with plt.rc_context(STYLE):
        fig, axes = plt.subplots(1, 2, figsize=(7.2, 3.0), sharey=True, constrained_layout=True)
        for ax, eps in zip(axes, FIG45_EPSILONS):
            dp = _curves(plans, "dp-admm-l2", epsilon_per_iteration=eps, delta=FIG45_DELTA)[0]
            a2 = _curves(plans, "alg2", epsilon_per_iteration=eps, delta=FIG45_DELTA)[0]
            d11 = _curves(plans, "dp-admm-l2", epsilon_per_iteration=eps, delta=FIG45_DELTA,
                          noise=False)
            used += [dp, a2, *d11]
            _series(ax, a2, metric, color="C3", label="Algorithm 2 (paper's $\\sigma$)")
            _series(ax, dp, metric, color="C0", label="DP-ADMM (Algorithm 3)")
            for c in d11:
                _series(ax, c, metric, color="C0", ls=":", label=D11_LABEL)
            _series(ax, alg1, metric, color="black", label="Algorithm 1 (non-private)", lw=1.0)
            ax.set_yscale("log")
            ax.set_title(f"$\\epsilon$ = {eps:g}, $\\delta = {_delta_tex(FIG45_DELTA)}$: "
                         + _eps_label(dp, with_eps=False), fontsize=7.5)
            ax.set_xlabel("iteration k")
            ax.legend(loc="lower right", bbox_to_anchor=(1.0, 0.1), fontsize=6, framealpha=0.85)
            last = [c.stats[f"{metric}_mean"].iloc[-1] for c in (dp, a2, alg1)]
            echo(f"  eps {eps:g}: final {metric}: DP-ADMM {last[0]:.4f}, "
                 f"Algorithm 2 {last[1]:.4f}, Algorithm 1 {last[2]:.4f}")
        axes[0].set_ylabel(ylabel)
        fig.suptitle(f"{fig_name.replace('fig', 'Fig. ')}: DP-ADMM vs the existing private "
                     "algorithm ($\\ell_2$-regularized logistic regression)", fontsize=9)
        _caption(fig, used, extra="Algorithm 2 has the same $\\bar\\epsilon$ (the paper's "
                 "accounting); its tight $\\epsilon$ is ~0 (its sensitivity ignores "
                 "$\\rho$, Sec. III-A).")
    written = save_figure(fig, out / f"{fig_name}.png")
    written.append(_write_csv(_long(used, metric), out / f"{fig_name}.csv",
                              _header(f"{fig_name}: {ylabel} per iteration (l2)")))
    return written


# -------------------------------------------------------------- Table III --
def _table3_cases(configs: Path) -> list[tuple[str, float | None, Config]]:
    """(algorithm, epsilon, config) of every timed case: one run, l2, delta = 1e-3."""
    one = ["run.repeats=1", "objective.regularizer=half_l2sq"]
    cases = [("Algorithm 1", None, _config(configs, "alg1").with_overrides(one))]
    for eps in TABLE3_EPSILONS:
        priv = [f"privacy.epsilon_per_iteration={eps!r}", f"privacy.delta={TABLE3_DELTA!r}"]
        cases.append(("Algorithm 2", eps, _config(configs, "alg2").with_overrides(one + priv)))
        cases.append(("DP-ADMM", eps, _config(configs, "dp-admm-l2").with_overrides(one + priv)))
    return cases


def time_cases(cases, data_dir=None, repeats: int | None = None) -> pd.DataFrame:
    """Solver seconds of the T iterations of every case, ``repeats`` times each, round robin.

    The runner's own accounting (``wall_time_s``: :meth:`Solver.step` only),
    without what the runner does between steps: data loading, the split,
    pre-training (D_w), metric evaluation and accounting are outside the
    clock. One process, BLAS limited to one thread; every repetition builds a
    fresh solver on the same data (run.seed, repeat 0), and the cases take
    turns so that a change in the machine's load hits them alike. Both the
    wall seconds and the process CPU seconds are recorded: with one thread
    they agree on an idle machine, and on a shared one the CPU seconds are
    what the wall seconds would have been. ``repeats`` defaults to
    :data:`TABLE3_REPEATS`.
    """
    repeats = TABLE3_REPEATS if repeats is None else int(repeats)
    from threadpoolctl import threadpool_limits

    from vfl.core.solver import Streams
    from vfl.experiments.registry import get_solver
    from vfl.experiments.runner import load_config_dataset
    from vfl.experiments.settings import prepare

    dataset, _ = load_config_dataset(cases[0][2], data_dir)
    built = []
    for alg, eps, config in cases:
        cls = get_solver(config.solver.name)
        setting = prepare(config, dataset, cls)

        def streams(config=config):
            return Streams(config.run.seed, repeat=0,
                           replayable_noise=config.privacy.replayable_noise)

        built.append((alg, eps, config, cls, setting.prepare(streams()), streams))
    rows = []
    with threadpool_limits(limits=1):
        for rep in range(repeats):
            for alg, eps, config, cls, prepared, streams in built:
                solver = cls.build(prepared.data, objective=prepared.objective,
                                   params=dict(config.solver.values),
                                   privacy=dict(config.privacy.values), streams=streams(),
                                   iterations=config.solver.epochs)
                inner = 0
                t0, c0 = perf_counter(), process_time()
                for _ in range(config.solver.epochs):
                    inner += solver.step().get("inner_iterations", 0)
                cpu, seconds = process_time() - c0, perf_counter() - t0
                rows.append({"algorithm": alg, "epsilon": eps, "repetition": rep,
                             "seconds": seconds, "cpu_seconds": cpu, "inner_iterations": inner})
    return pd.DataFrame(rows)


def _machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
            f"numpy {np.__version__}; BLAS limited to 1 thread")


def _table3(configs, out, data_dir, echo) -> list[Path]:
    cases = _table3_cases(configs)
    key = {"cases": [[a, e, c.to_dict()] for a, e, c in cases], "repeats": TABLE3_REPEATS}
    raw_path, key_path = out / "table3-timings.csv", out / "table3-cases.json"
    if raw_path.is_file() and key_path.is_file() and \
            json.loads(key_path.read_text()) == json.loads(json.dumps(key)):
        echo("  timings kept (already measured for these configs; delete "
             f"{raw_path.name} to measure again)")
        raw = pd.read_csv(raw_path, comment="#")
    else:
        echo(f"  timing {len(cases)} cases x {TABLE3_REPEATS} repetitions (single-threaded BLAS)")
        raw = time_cases(cases, data_dir)
        _write_csv(raw, raw_path, [
            "table3: solver seconds of the T = 100 iterations (Solver.step only), every repetition",
            f"machine: {_machine()}"])
        key_path.write_text(json.dumps(key, indent=1) + "\n")
    table = _table3_summary(raw)
    md = _table3_markdown(table)
    (out / "table3.md").write_text(md)
    written = [out / "table3.md", raw_path,
               _write_csv(table, out / "table3.csv", [
                   "Table III: median solver seconds of T = 100 iterations (l2, delta = 1e-3, "
                   f"one split), {TABLE3_REPEATS} repetitions; ratio = median CPU seconds / "
                   "that of Algorithm 1 (wall_ratio: the same with wall seconds); paper_* = "
                   "the paper's MATLAB seconds and their ratios",
                   f"machine: {_machine()}"])]
    echo("\n".join("  " + line for line in md.splitlines()))
    return written


def _table3_summary(raw: pd.DataFrame) -> pd.DataFrame:
    """Medians per case; ``ratio`` on CPU seconds (load-proof), ``wall_ratio`` on wall seconds."""
    g = raw.groupby(["algorithm", "epsilon"], dropna=False)
    table = g["cpu_seconds"].agg(["median", "min", "max", "count"]).reset_index()
    table.columns = ["algorithm", "epsilon", "cpu_seconds_median", "cpu_seconds_min",
                     "cpu_seconds_max", "repetitions"]
    table["wall_seconds_median"] = g["seconds"].median().to_numpy()
    table["inner_iterations"] = g["inner_iterations"].median().to_numpy()
    base = table[table["algorithm"] == "Algorithm 1"].iloc[0]
    table["ratio"] = table["cpu_seconds_median"] / base["cpu_seconds_median"]
    table["wall_ratio"] = table["wall_seconds_median"] / base["wall_seconds_median"]
    col = {"Algorithm 1": 0, "Algorithm 2": 1, "DP-ADMM": 2}
    table["paper_seconds"] = [PAPER_TABLE3[0.01][0] if np.isnan(e) else
                              PAPER_TABLE3.get(e, (np.nan,) * 3)[col[a]]
                              for a, e in zip(table["algorithm"], table["epsilon"])]
    table["paper_ratio"] = table["paper_seconds"] / PAPER_TABLE3[0.01][0]
    return table


def _table3_markdown(table: pd.DataFrame) -> str:
    def cell(alg, eps):
        t = table[(table["algorithm"] == alg) &
                  ((table["epsilon"] == eps) if eps is not None else table["epsilon"].isna())]
        r = t.iloc[0]
        return (f"{r['ratio']:.3f} ({r['cpu_seconds_median']:.3f} s; wall {r['wall_ratio']:.2f}) "
                f"| {r['paper_ratio']:.2f}")

    lines = ["Table III (l2, delta = 1e-3, T = 100 iterations): solver time as a ratio to the "
             "non-private Algorithm 1, from the median CPU seconds (in brackets, with the ratio of "
             "the median wall seconds) | the paper's ratio (MATLAB wall seconds)", "",
             "| | Non-private (Alg. 1) | paper | Algorithm 2 | paper | DP-ADMM | paper |",
             "|---|---|---|---|---|---|---|"]
    for eps in TABLE3_EPSILONS:
        lines.append(f"| epsilon = {eps:g} | {cell('Algorithm 1', None)} | "
                     f"{cell('Algorithm 2', eps)} | {cell('DP-ADMM', eps)} |")
    inner = table[table["algorithm"] != "DP-ADMM"]
    reps = int(table["repetitions"].min())
    lines += ["", f"Median of {reps} repetitions, one process, BLAS limited to 1 thread; only "
              "the T calls to step() are timed. Local-solver iterations over the T iterations "
              "(all providers move together): "
              + ", ".join(f"{a}{'' if np.isnan(e) else f' eps {e:g}'}: {int(n)}"
                          for a, e, n in zip(inner["algorithm"], inner["epsilon"],
                                             inner["inner_iterations"])) + ".",
              f"Machine: {_machine()}.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------- entry --
def reproduce(which: str, out: Path, configs: Path, data_dir=None, jobs: int = 2,
              echo=click.echo) -> list[Path]:
    """Run what ``which`` (a figure of :data:`PAPER`, or "all") needs and draw it."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = [f.name for f in PAPER.chosen(which)]
    plans = figure_runs(which, configs, out)  # every config is validated before anything runs
    if plans:
        echo("runs:")
        _ensure(plans, out, data_dir, jobs, echo)
    written = []
    for fig in figures:
        echo(f"{fig}:")
        if fig == "fig1":
            written += _convergence("fig1", plans, out, "dp-admm-l1", "l1", echo)
        elif fig == "fig3":
            written += _convergence("fig3", plans, out, "dp-admm-l2", "half_l2sq", echo)
        elif fig == "fig2":
            written += _accuracy("fig2", plans, out, "dp-admm-l1", "l1", False, echo)
        elif fig == "fig6":
            written += _accuracy("fig6", plans, out, "dp-admm-l2", "half_l2sq", True, echo)
        elif fig == "fig4":
            written += _versus_alg2("fig4", plans, out, "augmented_objective",
                                    "expected augmented objective (diagnostic)", echo)
        elif fig == "fig5":
            written += _versus_alg2("fig5", plans, out, "empirical_loss",
                                    "expected empirical loss, training (diagnostic)", echo)
        else:
            written += _table3(configs, out, data_dir, echo)
    return written
