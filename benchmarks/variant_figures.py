"""The variants' figures: epsilon spent to reach a target test loss, and each variant's
suboptimality by epoch (benchmarks/variants.py computes both cases)."""

from __future__ import annotations

import numpy as np

from .central_fits import TARGETS
from .report import save_figure


def write_epsilon_figure(case: dict, out) -> None:
    import matplotlib  # lazy: start-up (matplotlib, only when a figure is drawn)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: start-up (matplotlib, only when a figure is drawn)

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for label, style in (("Algorithm 1 (rho 1)", "o-"), ("a9a-fast variant", "s--"), ("Boyd, rho 0.1", "^:")):
        rows = [r for r in case["rows"] if r["algorithm"] == label]
        xs = [r["sigma"] for r in rows if r["reached"]]
        ys = [r["epsilon"] for r in rows if r["reached"]]
        (line,) = ax.plot(xs, ys, style, label=label)
        for r in rows:
            if r["reached"]:
                ax.annotate(
                    f"{r['epochs']} ep",
                    (r["sigma"], r["epsilon"]),
                    fontsize=7,
                    textcoords="offset points",
                    xytext=(4, 4),
                    color=line.get_color(),
                )
    if any(r["reached"] for r in case["rows"]):
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, "target not reached", transform=ax.transAxes, ha="center")
    ax.set_xlabel("noise sigma on each share")
    ax.set_ylabel("epsilon spent (row-level, PLD)")
    t = case["rows"][0]["target_test_logloss"] if case["rows"] else float("nan")
    ax.set_title(f"epsilon to reach test log loss {t:.4f} ({case['dataset']})", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, out, "epsilon_to_target")


def write_convergence_figure(case: dict, out) -> None:

    import matplotlib  # lazy: start-up (matplotlib, only when a figure is drawn)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: start-up (matplotlib, only when a figure is drawn)

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for row in case["variants"]:
        tr = np.asarray(row["trace"], dtype=float)
        if tr.size == 0 or row["diverged"]:
            continue
        ax.plot(
            np.arange(1, tr.size + 1),
            np.maximum(tr, 1e-12),
            lw=1.2,
            label=row["label"],
            ls="-" if row["key"] in ("paper", "a9a_fast") else "--",
        )
    for t in TARGETS:
        ax.axhline(t, color="grey", lw=0.6)
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel("relative suboptimality")
    ax.set_title(f"ADMM sharing variants on {case['dataset']}", fontsize=9)
    ax.legend(fontsize=6, ncol=2)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out, "variants")
