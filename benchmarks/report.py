"""Targets, the scaling figure and atomic file writes (bench.md's tables: bench_markdown.py)."""

from __future__ import annotations

import io
import math
import os
import tempfile
from pathlib import Path

import numpy as np


def write_atomic(path: Path, text_or_bytes) -> None:
    path = Path(path)
    data = text_or_bytes.encode() if isinstance(text_or_bytes, str) else text_or_bytes
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_figure(fig, out: Path, stem: str) -> None:
    """``out/stem.png`` and ``.pdf``, each written atomically; closes ``fig``."""

    import matplotlib.pyplot as plt  # lazy: start-up (matplotlib, only when a figure is drawn)

    for ext in ("png", "pdf"):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext)
        write_atomic(Path(out) / f"{stem}.{ext}", buf.getvalue())
    plt.close(fig)


def jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def targets(bench: dict) -> dict:
    """The targets: measured ratio, threshold, PASS/MISS, and why (those whose cases ran)."""
    out = {}
    if "epoch_vs_floor" in bench:
        g = bench["epoch_vs_floor"]["gisette"]
        r = g["ratio_epoch_to_floor"]
        worst = max(g["parties"], key=lambda q: q["ratio_to_floor"])
        out["epoch_vs_two_pass_floor"] = {
            "description": f"ADMM epoch / streaming two-pass floor on {g['dataset']} (<= 1.5)",
            "ratio": r,
            "threshold": 1.5,
            "pass": r <= 1.5,
            "why": (
                f"epoch {g['epoch_seconds'] * 1e3:.1f} ms (x {g['x_seconds'] * 1e3:.1f}, "
                f"z {g['z_seconds'] * 1e3:.2f}, y {g['y_seconds'] * 1e3:.3f}) vs streaming floor "
                f"{g['floor_seconds_all_parties'] * 1e3:.1f} ms (warm per-party sum "
                f"{g['floor_seconds_warm_sum'] * 1e3:.1f} ms; bandwidth floor "
                f"{g['bandwidth_floor_seconds'] * 1e3:.1f} ms for "
                f"{g['bytes_per_epoch'] / 2**20:.0f} MiB); worst party {worst['party']} at "
                f"{worst['ratio_to_floor']:.2f}x its warm floor"
            ),
        }
    if "prototype" in bench:
        p = bench["prototype"]
        s = p["speedup_epoch"]
        out["speedup_vs_prototype"] = {
            "description": f"per-epoch speedup over the prototype strategy on {p['dataset']} (>= 100)",
            "ratio": s,
            "threshold": 100.0,
            "pass": s >= 100,
            "why": (
                f"prototype {p['prototype_epoch_seconds']:.3f} s/epoch (x {p['prototype_x_seconds']:.3f} s, "
                f"z {p['prototype_z_seconds']:.3f} s{' extrapolated' if p['z_extrapolated'] else ''}) "
                f"vs ADMM {p['admm_epoch_seconds'] * 1e3:.2f} ms/epoch; x {p['speedup_x']:.0f}x, "
                f"z {p['speedup_z']:.0f}x"
            ),
        }
    if "time_to_suboptimality" in bench:
        t = bench["time_to_suboptimality"]
        sk, a1 = t["sklearn"], t["admm_rho1"]
        lower_bound = False
        if sk is None:
            ratio, passed, why = 0.0, a1["reached"], "sklearn never reached the target"
        else:
            ratio = a1["seconds"] / sk["seconds"]
            lower_bound = not a1["reached"]
            passed = a1["reached"] and ratio < 1.0
            why = (
                f"ADMM rho=1: {a1['epochs']} epochs{' (cap, target NOT reached: ratio is a lower bound)' if lower_bound else ''}, "
                f"{a1['seconds']:.2f} s ({a1['seconds_with_eval']:.2f} s with the per-epoch objective "
                f"evaluation); sklearn lbfgs tol={sk['tol']:g}: {sk['n_iter']} iterations, {sk['seconds']:.2f} s"
            )
        out["time_to_1e-4_vs_sklearn"] = {
            "description": f"Algorithm 1 (rho=1) time to {t['target_relative_suboptimality']:g} "
            f"relative suboptimality / central sklearn lbfgs time, {t['dataset']} (< 1)",
            "ratio": ratio,
            "threshold": 1.0,
            "pass": passed,
            "why": why,
            "lower_bound": lower_bound,
        }
    if "variants_a9a" in bench:
        v = bench["variants_a9a"]
        f = v["a9a_fast"]
        ep = f["epochs_to_1e-4"]
        out["a9a_fast_epochs_to_1e-4"] = {
            "description": f"configs/a9a-fast.toml: epochs to 1e-4 on {v['dataset']} (<= 30)",
            "ratio": float(ep if ep is not None else v["epoch_cap"]),
            "threshold": 30.0,
            "pass": ep is not None and ep <= 30,
            "why": "epochs are deterministic" if ep is not None else f"not reached in {v['epoch_cap']} epochs",
        }
        sec, lb = f["seconds_to_1e-4"], f["lbfgs_seconds_to_1e-4"]
        ratio = (sec / lb) if sec is not None and lb else float("nan")
        out["a9a_fast_time_vs_lbfgs"] = {
            "description": f"configs/a9a-fast.toml time to 1e-4 / sklearn lbfgs time to 1e-4, {v['dataset']} (<= 0.3)",
            "ratio": ratio,
            "threshold": 0.3,
            "pass": bool(ratio <= 0.3),
            "why": (
                f"{ep} epochs, {sec:.3f} s with setup; lbfgs ({f['lbfgs_setting']}, the faster "
                f"of its two BLAS settings) {lb:.3f} s"
                if sec is not None and lb
                else "a side did not reach 1e-4"
            ),
        }
    if "variants_gisette" in bench:
        g = bench["variants_gisette"]
        lb = g["references"]["sklearn lbfgs"]["targets"].get("0.0001")
        best = next((r for r in g["variants"] if r["key"] == g.get("best_to_1e-4")), None)
        lower_bound = best is None  # none reached 1e-4: the closest one's time at the cap
        if lower_bound:
            best = min(g["variants"], key=lambda r: r["final_suboptimality"])
            sec = best["setup_seconds"] + best["epochs_run"] * best["epoch_ms"] / 1e3
        else:
            sec = best["seconds_to_0.0001"]
        ratio = sec / lb["seconds"] if lb else float("nan")
        reached = (
            f"{best['epochs_to_0.0001']} epochs"
            if not lower_bound
            else f"{best['epochs_run']} epochs (cap, 1e-4 NOT reached: ratio is a lower bound)"
        )
        out["gisette_time_to_1e-4_vs_lbfgs"] = {
            "description": f"the fastest variant's time to 1e-4 / sklearn lbfgs's, {g['dataset']} (< 1)",
            "ratio": ratio,
            "threshold": 1.0,
            "pass": bool(not lower_bound and ratio < 1.0),
            "why": (
                f"{best['label']}: {reached}, {sec:.2f} s with setup "
                f"({best['setup_seconds']:.2f} s); "
                + (
                    f"lbfgs tol={lb['tol']:g}: {lb['n_iter']} iterations, {lb['seconds']:.2f} s"
                    if lb
                    else "lbfgs did not reach 1e-4"
                )
            ),
            "lower_bound": lower_bound,
        }
    for name in ("dp_admm", "ldp", "startup"):  # the external benchmarks that set targets
        extra = bench.get(name)
        if isinstance(extra, dict) and isinstance(extra.get("targets"), dict):
            out.update({f"{name}:{k}": t for k, t in extra["targets"].items()})
    return out


def write_figure(bench: dict, out: Path) -> None:
    import matplotlib  # lazy: start-up (matplotlib, only when a figure is drawn)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: start-up (matplotlib, only when a figure is drawn)

    s = bench["scaling"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, rows, key, label in (
        (axes[0], s["vs_features"], "d", f"features d (N = {s['vs_features'][0]['n']})"),
        (axes[1], s["vs_samples"], "n", f"samples N (d = {s['vs_samples'][0]['d']})"),
    ):
        for name, style in (("admm", "o-"), ("sgd", "s--")):
            xs = [r[key] for r in rows]
            ys = [r[name]["seconds"] for r in rows]
            ok = [r[name]["reached"] for r in rows]
            (line,) = ax.plot(xs, ys, style, label="ADMM sharing (rho=1)" if name == "admm" else "FDML SGD")
            for x, y, r, reached in zip(xs, ys, rows, ok):
                ax.annotate(
                    f"{r[name]['epochs']}{'' if reached else '+ (not reached)'} ep",
                    (x, y),
                    textcoords="offset points",
                    xytext=(4, 4),
                    fontsize=7,
                    color=line.get_color(),
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds to target test log loss")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("time to sklearn test log loss + margin" + (" (QUICK, tiny sizes)" if bench["quick"] else ""))
    fig.tight_layout()
    save_figure(fig, out, "scaling")
