"""``vfl reproduce attacks``: attack success against epsilon, per vertical method, both ways.

For each method of :data:`~vfl.papers.attacks.METHODS`, every point is one run
of its config in this process with every message tapped
(:func:`vfl.experiments.transcript.record`), then every attack of
:data:`vfl.attacks.ATTACKS` the solver declares on that one transcript
(:func:`vfl.experiments.attack.run_attack`, 40 known labels, party 2):

- **labels** (towards the passive parties): ``privacy.label_epsilon`` in
  :data:`EPSILONS` and the undefended run (no label DP). Private stacking's
  label points keep its feature guarantee at epsilon 1 (the issue's target:
  both at 1 still beat party 1 alone); ADMM sharing's clip the pulls at
  :data:`LABEL_CLIP`;
- **features** (towards party 1): ``privacy.epsilon`` in :data:`EPSILONS`
  (ADMM sharing: row-level accounting; private stacking: its one release)
  and the undefended run; FDML has no feature-DP mechanism: its undefended
  point alone.

Each point also records the run's test log loss. Outputs in
``OUT`` (``results/figures/attacks``): ``attacks-<method>.png`` / ``.pdf``
(left: label attacks vs label epsilon; right: feature reconstruction vs
feature epsilon; the ceiling ``e^eps / (1 + e^eps)``-like envelope area, the
undefended point at the right edge, test log loss on a twin axis) and
``attacks.csv`` (one row per method, direction, epsilon and attack).
:func:`attacks_markdown` makes README's table from it.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from time import perf_counter

import click
import numpy as np
import pandas as pd

from vfl.core.metrics import log_loss
from vfl.experiments.attack import run_attack
from vfl.experiments.config import config_from_dict
from vfl.experiments.registry import get_solver
from vfl.experiments.run_plan import plan_run
from vfl.experiments.transcript import record
from vfl.plots import plt, save_figure

from . import METHODS, PAPER

__all__ = ["EPSILONS", "FEATURE_PRIVACY", "LABEL_CLIP", "attacks_markdown", "draw", "reproduce", "runs"]

EPSILONS = (0.5, 1.0, 2.0, 4.0, 8.0)
#: the bound on ADMM sharing's pulls (a9a, rho = 1: 0.5 gave a lower test log loss than 1 at
#: label epsilon 1, 0.545 against 0.562 after 3 epochs)
LABEL_CLIP = 0.5
#: private stacking's feature epsilon on its label points (the issue's target)
STACKING_FEATURE_EPSILON = 1.0
#: the feature side's private hyper-parameters, those `vfl reproduce private-utility` chose
#: on public rows (papers/private_utility/configs/: private-stacking-a9a.toml at epsilon 1,
#: private-utility-admm-a9a.toml's row-level accounting); no entry: no feature-DP mechanism
FEATURE_PRIVACY = {
    "private_stacking": {"delta": 1e-5, "clip": 2.0, "split": [0.3, 0.68, 0.02], "model_noise": 0.3},
    "admm_sharing": {
        "form": "output",
        "delta": 1e-5,
        "calibration": "sound",
        "neighbours": "row",
        "b1": 1.0,
        "clip": 1.0,
        "input_clip": 2.0,
    },
}
COLUMNS = (
    "method",
    "direction",
    "epsilon",
    "attack",
    "auc",
    "auc_lo",
    "auc_hi",
    "ceiling",
    "epsilon_lower",
    "test_logloss",
    "party1_logloss",
)


def _variant(raw: dict, method: str, direction: str, epsilon: float | None) -> dict:
    """The config of one point: ``raw`` with its privacy set for ``direction`` at
    ``epsilon`` (None: undefended in that direction)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in raw.items()}
    p = {}
    if direction == "labels":
        if method == "private_stacking":
            p = {**FEATURE_PRIVACY[method], "epsilon": STACKING_FEATURE_EPSILON}
        if epsilon is not None:
            p["label_epsilon"] = epsilon
            if method == "admm_sharing":
                p["label_clip"] = LABEL_CLIP
    elif epsilon is not None:
        p = {**FEATURE_PRIVACY[method], "epsilon": epsilon}
    p["replayable_noise"] = True  # a simulation: the attacks read every message
    out["privacy"] = p
    return out


def _point(config, method: str, direction: str, epsilon, party1: float) -> list[dict]:
    """Every attack of ``direction`` on one run of ``config``."""
    cls = get_solver(config.solver.name)
    plan = plan_run(config)
    tr = record(config, plan=plan, evaluate=False)
    test = log_loss(tr.solver.decision_function(tr.prepared.test), tr.prepared.y_test)
    names = [a for a in cls.attacks if (a == "feature-reconstruction") == (direction == "features")]
    rows = []
    for name in names:
        o = run_attack(config, name, transcript=tr)
        rows.append(
            {
                "method": method,
                "direction": direction,
                "epsilon": math.inf if epsilon is None else epsilon,
                "attack": name,
                "auc": o.auc,
                "auc_lo": o.auc_ci[0],
                "auc_hi": o.auc_ci[1],
                "ceiling": np.nan if o.ceiling is None else o.ceiling,
                "epsilon_lower": o.epsilon_lower,
                "test_logloss": test,
                "party1_logloss": party1,
            }
        )
    return rows


def _party1(config) -> float:
    """Party 1 alone (sklearn on its block, the config's objective): the test log loss to beat."""
    plan = plan_run(config)
    return float(plan.setting.baselines(plan.first, use_cache=True)["sklearn_local_only"]["test_logloss"])


def runs(
    configs: Path, echo=click.echo, epsilons=EPSILONS, methods=None, directions=("labels", "features")
) -> pd.DataFrame:
    """Every point of the figure, as :data:`COLUMNS` rows (``methods``, ``directions``:
    a part of it, for tests)."""
    rows = []
    for method, name in METHODS.items():
        if methods is not None and method not in methods:
            continue
        raw = tomllib.loads((Path(configs) / f"{name}.toml").read_text())
        party1 = _party1(config_from_dict(_variant(raw, method, "features", None)))
        for direction in directions:
            defended = direction == "labels" or method in FEATURE_PRIVACY
            for eps in (None,) + (tuple(epsilons) if defended else ()):
                t0 = perf_counter()
                config = config_from_dict(_variant(raw, method, direction, eps))
                rows += _point(config, method, direction, eps, party1)
                echo(f"  {method} {direction} epsilon {'none' if eps is None else eps}: {perf_counter() - t0:.0f} s")
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _panel(ax, t: pd.DataFrame, xlabel: str, title: str) -> None:
    """Each attack's AUC against epsilon (the undefended run apart, at the right edge), the
    ceiling, and the test log loss on a twin axis (nothing where the direction was not
    run)."""
    if t.empty:
        ax.set_axis_off()
        return
    t = t.sort_values("epsilon")
    finite = sorted(e for e in t["epsilon"].unique() if np.isfinite(e))
    right = (max(finite) * 2.5) if finite else 1.0
    for name, g in t.groupby("attack", sort=False):
        f, u = g[np.isfinite(g["epsilon"])], g[~np.isfinite(g["epsilon"])]
        color = None
        if len(f):
            bar = ax.errorbar(
                f["epsilon"],
                f["auc"],
                yerr=[f["auc"] - f["auc_lo"], f["auc_hi"] - f["auc"]],
                marker="o",
                ms=3,
                capsize=2,
                lw=1,
                label=name,
            )
            color = bar[0].get_color()
        ax.errorbar(
            np.full(len(u), right),
            u["auc"],
            yerr=[u["auc"] - u["auc_lo"], u["auc_hi"] - u["auc"]],
            marker="D",
            ms=4,
            mfc="none",
            capsize=2,
            ls="none",
            color=color,
            label=None if len(f) else name,
        )
    if finite:
        ceil = t[np.isfinite(t["epsilon"])].groupby("epsilon")["ceiling"].first()
        ax.plot(ceil.index, ceil.values, "k--", lw=1, label="ceiling under DP")
    ax.axvline(right / 1.6, color="0.8", lw=0.8)
    ax.set_xscale("log")
    ax.set_xticks(finite + [right], [f"{e:g}" for e in finite] + ["none"])
    ax.minorticks_off()
    ax.set_ylim(0.3, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("attack AUC (95 % CI)")
    ax.set_title(title, fontsize=8)
    loss = t.groupby("epsilon")["test_logloss"].first()
    twin = ax.twinx()
    lf = loss[np.isfinite(loss.index)]
    if len(lf):
        twin.plot(lf.index, lf.values, color="tab:gray", marker="s", ms=3, lw=1, ls=":", label="test log loss")
    twin.plot(
        [right],
        loss[~np.isfinite(loss.index)].values,
        color="tab:gray",
        marker="s",
        ms=4,
        mfc="none",
        ls="none",
        label=None if len(lf) else "test log loss",
    )
    twin.axhline(t["party1_logloss"].iloc[0], color="tab:gray", lw=0.6, ls="-.", label="party 1 alone (test log loss)")
    twin.set_ylabel("test log loss", color="tab:gray")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = twin.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False)


def draw(table: pd.DataFrame, out: Path) -> list[Path]:
    """One figure per method: labels (left) and features (right)."""
    written = []
    for method, t in table.groupby("method", sort=False):
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 4.2))
        _panel(
            axes[0],
            t[t["direction"] == "labels"],
            "label epsilon (none: undefended)",
            f"{method}: labels, towards the passive parties",
        )
        feat = t[t["direction"] == "features"]
        _panel(
            axes[1],
            feat,
            "feature epsilon (none: undefended)",
            f"{method}: features, towards party 1"
            + ("" if np.isfinite(feat["epsilon"]).any() else " (no feature-DP mechanism)"),
        )
        fig.tight_layout()
        written += save_figure(fig, out / f"attacks-{method}.png")
    return written


def _write_csv(table: pd.DataFrame, path: Path) -> Path:
    tmp = path.with_name(f".{path.name}.partial")
    table.to_csv(tmp, index=False, float_format="%.6g")
    tmp.replace(path)
    return path


def reproduce(
    which: str,
    out: Path,
    configs: Path,
    data_dir=None,
    jobs: int = 2,
    echo=click.echo,
    epsilons=EPSILONS,
    methods=None,
    directions=("labels", "features"),
) -> list[Path]:
    """Run every point and draw the figures (``which``: attacks | all)."""
    PAPER.chosen(which)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = perf_counter()
    table = runs(configs, echo, epsilons, methods, directions)
    written = [_write_csv(table, out / "attacks.csv")] + draw(table, out)
    echo(f"  done in {perf_counter() - t0:.0f} s")
    return written


def attacks_markdown(table: pd.DataFrame) -> str:
    """README's table: per method and attack, the AUC undefended and at epsilon 1 (with its
    ceiling and whether the CI reaches under it), and the test log loss at both."""
    lines = [
        "| method | direction | attack | AUC undefended | AUC at epsilon 1 (95 % CI) | "
        "ceiling at 1 | under it | test log loss (undefended / at 1) |",
        "|---|---|---|---:|---:|---:|:---:|---:|",
    ]
    for (method, direction, attack), g in table.groupby(["method", "direction", "attack"], sort=False):
        free = g[~np.isfinite(g["epsilon"])].iloc[0]
        at1 = g[g["epsilon"] == 1.0]
        if at1.empty:
            lines.append(
                f"| {method} | {direction} | {attack} | {free['auc']:.3f} | - | - | - | "
                f"{free['test_logloss']:.4f} / - |"
            )
            continue
        r = at1.iloc[0]
        under = "yes" if r["auc_lo"] <= r["ceiling"] else "NO"
        lines.append(
            f"| {method} | {direction} | {attack} | {free['auc']:.3f} | {r['auc']:.3f} "
            f"({r['auc_lo']:.3f}-{r['auc_hi']:.3f}) | {r['ceiling']:.3f} | {under} | "
            f"{free['test_logloss']:.4f} / {r['test_logloss']:.4f} |"
        )
    return "\n".join(lines) + "\n"
