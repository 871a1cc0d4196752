"""Targets, markdown tables, the scaling figure and atomic file writes."""

from __future__ import annotations

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
    """The three targets: measured ratio, threshold, PASS/MISS, and why."""
    g = bench["epoch_vs_floor"]["gisette"]
    p = bench["prototype"]
    t = bench["time_to_suboptimality"]
    out = {}
    r = g["ratio_epoch_to_floor"]
    worst = max(g["parties"], key=lambda q: q["ratio_to_floor"])
    out["epoch_vs_two_pass_floor"] = {
        "description": f"ADMM epoch / two-pass floor on {g['dataset']} (<= 1.5)",
        "ratio": r, "threshold": 1.5, "pass": r <= 1.5,
        "why": (f"x-update {g['x_seconds']*1e3:.1f} ms, z {g['z_seconds']*1e3:.2f} ms, "
                f"y {g['y_seconds']*1e3:.3f} ms vs floor {g['floor_seconds_all_parties']*1e3:.1f} ms; "
                f"worst party {worst['party']} ({worst['shape'][0]}x{worst['shape'][1]}, "
                f"{worst['form']}) at {worst['ratio_to_floor']:.2f}x its floor. A dense x-update is one "
                "product with W plus the share D x, i.e. exactly two passes; the rest is the "
                "epoch's interleaving of different products over three 96 MB blocks (the floor "
                "repeats one product in a tight loop, with BLAS threads and caches warm), the "
                "z-update and the vector bookkeeping"),
    }
    s = p["speedup_epoch"]
    out["speedup_vs_prototype"] = {
        "description": f"per-epoch speedup over the prototype strategy on {p['dataset']} (>= 100)",
        "ratio": s, "threshold": 100.0, "pass": s >= 100,
        "why": (f"prototype {p['prototype_epoch_seconds']:.3f} s/epoch (x {p['prototype_x_seconds']:.3f} s, "
                f"z {p['prototype_z_seconds']:.3f} s{' extrapolated' if p['z_extrapolated'] else ''}) "
                f"vs ADMM {p['admm_epoch_seconds']*1e3:.2f} ms/epoch; x {p['speedup_x']:.0f}x, "
                f"z {p['speedup_z']:.0f}x"),
    }
    sk, a1 = t["sklearn"], t["admm_rho1"]
    lower_bound = False
    if sk is None:
        ratio, passed, why = 0.0, a1["reached"], "sklearn never reached the target"
    else:
        ratio = a1["seconds"] / sk["seconds"]
        lower_bound = not a1["reached"]
        passed = a1["reached"] and ratio < 1.0
        why = (f"ADMM rho=1: {a1['epochs']} epochs{' (cap, target NOT reached: ratio is a lower bound)' if lower_bound else ''}, "
               f"{a1['seconds']:.2f} s ({a1['seconds_with_eval']:.2f} s with the per-epoch objective "
               f"evaluation); sklearn lbfgs tol={sk['tol']:g}: {sk['n_iter']} iterations, {sk['seconds']:.2f} s")
        best = t["admm_best"]
        if best:
            why += (f"; proposal rho={best['rho']:g}: {best['epochs']} epochs, {best['seconds']:.2f} s "
                    f"= {best['seconds'] / sk['seconds']:.2f}x sklearn")
    out["time_to_1e-4_vs_sklearn"] = {
        "description": f"ADMM (rho=1) time to {t['target_relative_suboptimality']:g} relative "
                       f"suboptimality / central sklearn lbfgs time, {t['dataset']} (< 1)",
        "ratio": ratio, "threshold": 1.0, "pass": passed, "why": why, "lower_bound": lower_bound,
    }
    return out


def _fmt(v, spec=".3g"):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(v)
    return format(float(v), spec)


def markdown(bench: dict) -> str:
    L = ["# vfl benchmarks", ""]
    m = bench["machine"]
    blas = m["blas"] if isinstance(m["blas"], list) else []
    blas_s = "; ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} threads)"
                       for b in blas)
    L += [f"{'QUICK mode (tiny sizes, synthetic data): ' if bench['quick'] else ''}"
          f"{m['cpu_count']} CPUs, numpy {m['numpy']}, scipy {m['scipy']}, sklearn {m['sklearn']}, "
          f"BLAS: {blas_s or 'unknown'}. Total {bench['total_seconds']:.1f} s.", ""]
    for key in ("a9a", "gisette"):
        note = bench["data"][key]["note"]
        L.append(f"- data `{key}`: {bench['data'][key]['name']} — {note}")
    L += ["", "## Targets", "", "| target | measured ratio | threshold | result | detail |",
          "|---|---|---|---|---|"]
    for t in bench["targets"].values():
        cmp = "<=" if "floor" in t["description"] else (">=" if "speedup" in t["description"] else "<")
        L.append(f"| {t['description']} | {_fmt(t['ratio'])} | {cmp} {t['threshold']:g} | "
                 f"{'PASS' if t['pass'] else 'MISS'} | {t['why']} |")

    L += ["", "## 1. ADMM epoch vs two matrix-vector passes (rho = 1, step(diagnostics=False))", "",
          "| data | epoch ms | x ms | z ms | y ms | floor ms (all parties) | epoch/floor | setup s | peak MiB |",
          "|---|---|---|---|---|---|---|---|---|"]
    for key, c in bench["epoch_vs_floor"].items():
        if not isinstance(c, dict) or "epoch_seconds" not in c:
            continue
        L.append(f"| {c['dataset']} | {c['epoch_seconds']*1e3:.3f} | {c['x_seconds']*1e3:.3f} | "
                 f"{c['z_seconds']*1e3:.3f} | {c['y_seconds']*1e3:.4f} | "
                 f"{c['floor_seconds_all_parties']*1e3:.3f} | {c['ratio_epoch_to_floor']:.2f} | "
                 f"{c['setup_seconds']:.2f} | {c['peak_mib']:.1f} |")
    L += ["", "| data | party | block | x-update + share ms | two-pass floor ms | ratio |", "|---|---|---|---|---|---|"]
    for key, c in bench["epoch_vs_floor"].items():
        if not isinstance(c, dict) or "parties" not in c:
            continue
        for q in c["parties"]:
            L.append(f"| {c['dataset']} | {q['party']} | {q['shape'][0]}x{q['shape'][1]} ({q['form']}) | "
                     f"{q['x_update_plus_share_seconds']*1e3:.3f} | {q['two_pass_floor_seconds']*1e3:.3f} | "
                     f"{q['ratio_to_floor']:.2f} |")

    p = bench["prototype"]
    L += ["", f"## 2. Prototype strategy vs ADMMSharing ({p['dataset']})", "",
          f"Prototype: {p['prototype']}. {p['z_extrapolation_note']}. Medians over epochs "
          f"{p['median_over_epochs']} (epoch 1 starts at the solution x = 0 of (6)).", "",
          "| epoch | proto x s | proto z s | L-BFGS-B iterations | x max abs diff | z max abs diff | y max abs diff |",
          "|---|---|---|---|---|---|---|"]
    for e, a in zip(p["epochs"], p["agreement_with_ADMMSharing"]):
        L.append(f"| {e['epoch']} | {e['x_seconds']:.3f} | {e['z_seconds']:.3f} | {e['lbfgs_iterations']} | "
                 f"{a['x_max_abs_diff']:.1e} (max abs x {a['x_max_abs']:.2g}) | {a['z_max_abs_diff_on_timed_samples']:.1e} | "
                 f"{a['y_max_abs_diff']:.1e} |")
    L += ["", f"Per epoch: prototype {p['prototype_epoch_seconds']:.3f} s, ADMM "
          f"{p['admm_epoch_seconds']*1e3:.3f} ms: **{p['speedup_epoch']:.0f}x** "
          f"(x-update {p['speedup_x']:.0f}x, z-update {p['speedup_z']:.0f}x). Peak MiB, first epoch: "
          f"prototype {p['peak_mib_prototype_first_epoch']:.1f}, ADMM {p['peak_mib_admm_first_epoch']:.1f}."]

    t = bench["time_to_suboptimality"]
    L += ["", f"## 3. Time to {t['target_relative_suboptimality']:g} relative suboptimality ({t['dataset']})", "",
          f"F* = {t['f_star']:.6f} ({t['central']['method']}, {t['central']['seconds']:.2f} s). "
          f"{t['sklearn_setup']}. {t['admm_timing']}.", "",
          "| method | reached | epochs / iterations | seconds | seconds incl. eval | final rel. subopt |",
          "|---|---|---|---|---|---|"]
    for r in t["sklearn_tol_search"]:
        L.append(f"| sklearn lbfgs tol={r['tol']:g} | {r['suboptimality'] <= t['target_relative_suboptimality']} | "
                 f"{r['n_iter']} | {r['seconds']:.3f} | - | {r['suboptimality']:.2e} |")
    for r in t["admm_rho_grid"]:
        L.append(f"| ADMM rho={r['rho']:g} | {r['reached']} | {r['epochs']} | {r['seconds']:.3f} | "
                 f"{r['seconds_with_eval']:.3f} | {_fmt(r['final_suboptimality'], '.2e')} |")
    sk = t["sklearn"]
    for label, r in (("ADMM rho=1 (paper)", t["admm_rho1"]), ("ADMM best rho (proposal)", t["admm_best"])):
        if r:
            L.append(f"| {label}, median of {r['repeats']} | {r['reached']} | {r['epochs']} | "
                     f"{r['seconds']:.3f} | {r['seconds_with_eval']:.3f} | {_fmt(r['final_suboptimality'], '.2e')} |")
    if sk:
        L.append(f"| sklearn lbfgs tol={sk['tol']:g}, median | True | {sk['n_iter']} | {sk['seconds']:.3f} | - | "
                 f"{sk['suboptimality']:.2e} |")
    L += ["", f"Peak MiB: sklearn fit {t['peak_mib_sklearn_fit']:.1f}, ADMM first epoch "
          f"{t['peak_mib_admm_first_epoch']:.1f}."]

    s = bench["scaling"]
    L += ["", "## 4. Scaling: time to a target test log loss", "", s["setup"] + ".", "",
          "| N | d | target ll | ADMM epochs | ADMM s | ADMM MiB | SGD epochs | SGD s | SGD MiB |",
          "|---|---|---|---|---|---|---|---|---|"]
    for row in s["vs_features"] + s["vs_samples"]:
        a, g = row["admm"], row["sgd"]
        def cell(r):
            return (f"{r['epochs']}", f"{r['seconds']:.3f}") if r["reached"] else \
                (f"not in {r['epochs']}", f">{r['seconds']:.3f}")
        ae, asec = cell(a)
        ge, gsec = cell(g)
        L.append(f"| {row['n']} | {row['d']} | {row['target_test_logloss']:.4f} | {ae} | {asec} | "
                 f"{a['peak_mib']:.1f} | {ge} | {gsec} | {g['peak_mib']:.1f} |")
    L += ["", "![scaling](scaling.png)", "",
          "Memory: tracemalloc peak (Python + numpy allocations; BLAS/LAPACK work buffers "
          "are not traced) over building the solver and its first epoch, in a separate untimed pass.", ""]
    return "\n".join(L)


def write_figure(bench: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = bench["scaling"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, rows, key, label in ((axes[0], s["vs_features"], "d", f"features d (N = {s['vs_features'][0]['n']})"),
                                 (axes[1], s["vs_samples"], "n", f"samples N (d = {s['vs_samples'][0]['d']})")):
        for name, style in (("admm", "o-"), ("sgd", "s--")):
            xs = [r[key] for r in rows]
            ys = [r[name]["seconds"] for r in rows]
            ok = [r[name]["reached"] for r in rows]
            line, = ax.plot(xs, ys, style, label="ADMM sharing (rho=1)" if name == "admm" else "FDML SGD")
            for x, y, r, reached in zip(xs, ys, rows, ok):
                ax.annotate(f"{r[name]['epochs']}{'' if reached else '+ (not reached)'} ep",
                            (x, y), textcoords="offset points", xytext=(4, 4), fontsize=7,
                            color=line.get_color())
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("seconds to target test log loss")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("time to sklearn test log loss + margin" + (" (QUICK, tiny sizes)" if bench["quick"] else ""))
    fig.tight_layout()
    for ext in ("png", "pdf"):
        tmp = out / f".scaling.{os.getpid()}.tmp.{ext}"
        fig.savefig(tmp)
        os.replace(tmp, out / f"scaling.{ext}")
    plt.close(fig)


def summary(bench: dict) -> str:
    lines = ["target | ratio | result"]
    for t in bench["targets"].values():
        lines.append(f"{t['description']} | {_fmt(t['ratio'])} | {'PASS' if t['pass'] else 'MISS'}")
    return "\n".join(lines)
