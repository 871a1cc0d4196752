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


def save_figure(fig, out: Path, stem: str) -> None:
    """``out/stem.png`` and ``.pdf``, each written atomically; closes ``fig``."""
    import io

    import matplotlib.pyplot as plt

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
    blas_s = "; ".join(f"{b.get('internal_api')} {b.get('version')} ({b.get('num_threads')} threads)" for b in blas)
    L += [
        f"{'QUICK mode (tiny sizes, synthetic data): ' if bench['quick'] else ''}"
        f"{m['cpu_count']} CPUs, numpy {m['numpy']}, scipy {m['scipy']}, sklearn {m['sklearn']}, "
        f"BLAS: {blas_s or 'unknown'}. Total {bench['total_seconds']:.1f} s.",
        "",
    ]
    for key in ("a9a", "gisette"):
        note = bench["data"][key]["note"]
        L.append(f"- data `{key}`: {bench['data'][key]['name']} — {note}")
    load = (m.get("load_before"), m.get("load_after"))
    if any(load):
        L += [
            f"Load average (1/5/15 min) before: {load[0]}, after: {load[1]} on "
            f"{m['cpu_count']} CPUs: timings taken on a shared machine vary with it; ratios "
            "are within this run.",
            "",
        ]
    L += ["", "## Targets", "", "| target | measured ratio | threshold | result | detail |", "|---|---|---|---|---|"]
    for t in bench["targets"].values():
        cmp = t.get("comparison") or (
            ">=" if "speedup" in t["description"] else "<" if t["description"].endswith("(< 1)") else "<="
        )
        L.append(
            f"| {t['description']} | {_fmt(t['ratio'])} | {cmp} {t['threshold']:g} | "
            f"{'PASS' if t['pass'] else 'MISS'} | {t['why']} |"
        )

    if "epoch_vs_floor" in bench:
        L += _md_epoch(bench["epoch_vs_floor"])
    if "prototype" in bench:
        p = bench["prototype"]
        L += [
            "",
            f"## 2. Prototype strategy vs ADMMSharing ({p['dataset']})",
            "",
            f"Prototype: {p['prototype']}. {p['z_extrapolation_note']}. Medians over epochs "
            f"{p['median_over_epochs']} (epoch 1 starts at the solution x = 0 of (6)).",
            "",
            "| epoch | proto x s | proto z s | L-BFGS-B iterations | x max abs diff | z max abs diff | y max abs diff |",
            "|---|---|---|---|---|---|---|",
        ]
        for e, a in zip(p["epochs"], p["agreement_with_ADMMSharing"]):
            L.append(
                f"| {e['epoch']} | {e['x_seconds']:.3f} | {e['z_seconds']:.3f} | {e['lbfgs_iterations']} | "
                f"{a['x_max_abs_diff']:.1e} (max abs x {a['x_max_abs']:.2g}) | {a['z_max_abs_diff_on_timed_samples']:.1e} | "
                f"{a['y_max_abs_diff']:.1e} |"
            )
        L += [
            "",
            f"Per epoch: prototype {p['prototype_epoch_seconds']:.3f} s, ADMM "
            f"{p['admm_epoch_seconds'] * 1e3:.3f} ms: **{p['speedup_epoch']:.0f}x** "
            f"(x-update {p['speedup_x']:.0f}x, z-update {p['speedup_z']:.0f}x). Peak MiB, first epoch: "
            f"prototype {p['peak_mib_prototype_first_epoch']:.1f}, ADMM {p['peak_mib_admm_first_epoch']:.1f}.",
        ]
    if "time_to_suboptimality" in bench:
        t = bench["time_to_suboptimality"]
        L += [
            "",
            f"## 3. Time to {t['target_relative_suboptimality']:g} relative suboptimality ({t['dataset']})",
            "",
            f"F* = {t['f_star']:.6f} ({t['central']['method']}, {t['central']['seconds']:.2f} s). "
            f"{t['sklearn_setup']}. {t['admm_timing']}.",
            "",
            "| method | reached | epochs / iterations | seconds | seconds incl. eval | final rel. subopt |",
            "|---|---|---|---|---|---|",
        ]
        for r in t["sklearn_tol_search"]:
            L.append(
                f"| sklearn lbfgs tol={r['tol']:g} | {r['suboptimality'] <= t['target_relative_suboptimality']} | "
                f"{r['n_iter']} | {r['seconds']:.3f} | - | {r['suboptimality']:.2e} |"
            )
        for r in t["admm_rho_grid"]:
            L.append(
                f"| ADMM rho={r['rho']:g} | {r['reached']} | {r['epochs']} | {r['seconds']:.3f} | "
                f"{r['seconds_with_eval']:.3f} | {_fmt(r['final_suboptimality'], '.2e')} |"
            )
        sk = t["sklearn"]
        for label, r in (("ADMM rho=1 (paper)", t["admm_rho1"]), ("ADMM best rho (proposal)", t["admm_best"])):
            if r:
                L.append(
                    f"| {label}, median of {r['repeats']} | {r['reached']} | {r['epochs']} | "
                    f"{r['seconds']:.3f} | {r['seconds_with_eval']:.3f} | {_fmt(r['final_suboptimality'], '.2e')} |"
                )
        if sk:
            L.append(
                f"| sklearn lbfgs tol={sk['tol']:g}, median | True | {sk['n_iter']} | {sk['seconds']:.3f} | - | "
                f"{sk['suboptimality']:.2e} |"
            )
        L += [
            "",
            f"Peak MiB: sklearn fit {t['peak_mib_sklearn_fit']:.1f}, ADMM first epoch "
            f"{t['peak_mib_admm_first_epoch']:.1f}.",
        ]
    if "variants_a9a" in bench:
        L += _md_variants(bench["variants_a9a"])
    if "z_update" in bench:
        L += _md_z(bench["z_update"])
    if "variants_gisette" in bench:
        L += _md_gisette(bench["variants_gisette"])
    if "under_noise" in bench:
        L += _md_noise(bench["under_noise"])
    if "epsilon_to_target" in bench:
        L += _md_epsilon(bench["epsilon_to_target"])
    if "scaling" in bench:
        s = bench["scaling"]
        L += [
            "",
            "## 4. Scaling: time to a target test log loss",
            "",
            s["setup"] + ".",
            "",
            "| N | d | target ll | ADMM epochs | ADMM s | ADMM MiB | SGD epochs | SGD s | SGD MiB |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for row in s["vs_features"] + s["vs_samples"]:
            a, g = row["admm"], row["sgd"]

            def cell(r):
                return (
                    (f"{r['epochs']}", f"{r['seconds']:.3f}")
                    if r["reached"]
                    else (f"not in {r['epochs']}", f">{r['seconds']:.3f}")
                )

            ae, asec = cell(a)
            ge, gsec = cell(g)
            L.append(
                f"| {row['n']} | {row['d']} | {row['target_test_logloss']:.4f} | {ae} | {asec} | "
                f"{a['peak_mib']:.1f} | {ge} | {gsec} | {g['peak_mib']:.1f} |"
            )
        L += [
            "",
            "![scaling](scaling.png)",
            "",
            "Memory: tracemalloc peak (Python + numpy allocations; BLAS/LAPACK work buffers "
            "are not traced) over building the solver and its first epoch, in a separate untimed pass.",
            "",
        ]
    for name in ("dp_admm", "ldp", "startup"):  # the external benchmarks that set targets
        extra = bench.get(name)
        if isinstance(extra, dict):
            if "markdown" in extra:
                text = extra["markdown"]
            elif "error" in extra and len(extra) == 1:
                text = f"error: {extra['error']}"
            else:
                import json

                text = "```\n" + json.dumps(jsonable(extra), indent=1)[:4000] + "\n```"
            L += ["", f"## {name} (external benchmark)", "", text, ""]
    return "\n".join(L)


def _ms(v, spec=".2f"):
    return "-" if v is None else format(v * 1e3, spec)


def _md_epoch(e: dict) -> list:
    bw = e["bandwidth"]
    L = [
        "",
        "## 1. Per-epoch cost vs floors (Algorithm 1, rho = 1, step(diagnostics=False))",
        "",
        f"Read bandwidth now: {bw['gb_per_s']:.1f} GB/s ({bw['method']}). Streaming floor: "
        "every party's D_m x and D_m^T r in turn, timed as one unit (blocks stream from memory "
        "as in an epoch); warm floor: each party's pair repeated alone, summed; bandwidth "
        "floor: bytes of the operators one epoch reads / bandwidth.",
        "",
        "| data | epoch ms | x / z / y ms | epoch, 1 BLAS thread | + newton z | streaming floor ms | "
        "warm floor ms | bandwidth floor ms (MiB/epoch) | epoch / streaming floor | "
        "diagnostics ms (x epoch) | setup s | peak MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in ("a9a", "gisette"):
        c = e[key]
        L.append(
            f"| {c['dataset']} | {_ms(c['epoch_seconds'])} | {_ms(c['x_seconds'])} / "
            f"{_ms(c['z_seconds'])} / {_ms(c['y_seconds'], '.3f')} | "
            f"{_ms(c['epoch_seconds_one_blas_thread'])} | "
            f"{_ms(c['epoch_seconds_one_thread_newton_z'])} (z {_ms(c['z_seconds_newton'])}) | "
            f"{_ms(c['floor_seconds_all_parties'])} | {_ms(c['floor_seconds_warm_sum'])} | "
            f"{_ms(c['bandwidth_floor_seconds'])} ({c['bytes_per_epoch'] / 2**20:.1f}) | "
            f"{c['ratio_epoch_to_floor']:.2f} | {_ms(c['diagnostics_seconds'])} "
            f"({c['diagnostics_over_epoch']:.2f}) | {c['setup_seconds']:.2f} | "
            f"{c['peak_mib']:.1f} |"
        )
    L += [
        "",
        "| data | party | block | x-update + share ms | warm two-pass floor ms | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for key in ("a9a", "gisette"):
        c = e[key]
        for q in c["parties"]:
            L.append(
                f"| {c['dataset']} | {q['party']} | {q['shape'][0]}x{q['shape'][1]} "
                f"({q['form']}) | {_ms(q['x_update_plus_share_seconds'], '.3f')} | "
                f"{_ms(q['two_pass_floor_seconds'], '.3f')} | {q['ratio_to_floor']:.2f} |"
            )
    return L


def _cell(row, target):
    key = f"{target:g}"
    ep, sec = row.get(f"epochs_to_{key}"), row.get(f"seconds_to_{key}")
    return ("-", "-") if ep is None else (str(ep), f"{sec:.3f}")


def _md_variants(v: dict) -> list:
    lb4 = v["a9a_fast"]["lbfgs_seconds_to_1e-4"]
    L = [
        "",
        f"## Variants of ADMM sharing on {v['dataset']}: epochs and seconds to 1e-4 and 1e-6 relative suboptimality",
        "",
        v["timing"] + f"; cap {v['epoch_cap']} epochs.",
        "",
        "| variant | epochs 1e-4 | s 1e-4 | / lbfgs | epochs 1e-6 | s 1e-6 | epoch ms | x / z / "
        "central (accel) ms | setup s | note |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in v["variants"]:
        e4, s4 = _cell(r, 1e-4)
        e6, s6 = _cell(r, 1e-6)
        ratio = "-" if s4 == "-" or not lb4 else f"{float(s4) / lb4:.2f}"
        note = r["note"] or ""
        if r["diverged"]:
            note = (note + "; " if note else "") + f"diverged (epoch {r['epochs_run']})"
        elif e6 == "-":
            note = (note + "; " if note else "") + f"{r['final_suboptimality']:.1e} after {r['epochs_run']} epochs"
        L.append(
            f"| {r['label']} | {e4} | {s4} | {ratio} | {e6} | {s6} | "
            f"{r.get('epoch_ms', float('nan')):.2f} | {r.get('x_ms', float('nan')):.2f} / "
            f"{r.get('z_ms', float('nan')):.2f} / {r.get('central_ms', float('nan')):.2f} "
            f"({r.get('accel_ms', 0.0):.2f}) | {r['setup_seconds']:.3f} | {note} |"
        )
    L += [
        "",
        "| central reference | tol 1e-4 | iterations | s 1e-4 | tol 1e-6 | iterations | s 1e-6 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, ref in v["sklearn"].items():
        cells = []
        for key in ("0.0001", "1e-06"):
            r = ref["targets"][key]
            cells += ["-", "-", "-"] if r is None else [f"{r['tol']:g}", str(r["n_iter"]), f"{r['seconds']:.3f}"]
        L.append(f"| sklearn {name} | " + " | ".join(cells) + " |")
    L += ["", "![variants](variants.png)"]
    return L


def _md_z(z: dict) -> list:
    L = [
        "",
        f"## z-update (7): in-place Newton vs safeguarded Newton ({z['dataset']}, {z['warm_start']})",
        "",
        "| rho | variant | plain Newton provable | safeguarded ms | newton ms | speedup | "
        "max abs diff | newton vs tol 1e-14 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in z["rows"]:
        L.append(
            f"| {r['rho']:g} | {r['variant']} | {r['plain_newton_provable']} | "
            f"{r['safeguarded_ms']:.2f} | {r['newton_ms']:.2f} | {r['speedup']:.1f} | "
            f"{r['max_abs_diff']:.1e} | {r['max_abs_diff_newton_vs_tol_1e-14']:.1e} |"
        )
    return L


def _md_gisette(g: dict) -> list:
    t1, t2 = g["targets"]
    L = [
        "",
        f"## {g['dataset']}: what the variants reach",
        "",
        f"F* = {g['f_star']:.6g} (separable stand-in: F* is tiny, so relative targets are "
        f"hard); cap {g['epoch_cap']} epochs.",
        "",
        f"| variant | epochs {t1} | s {t1} | epochs {t2} | s {t2} | final rel. subopt | epoch ms | setup s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in g["variants"]:
        a, b = _cell(r, float(t1)), _cell(r, float(t2))
        L.append(
            f"| {r['label']} | {a[0]} | {a[1]} | {b[0]} | {b[1]} | "
            f"{r['final_suboptimality']:.2e}{' (diverged)' if r['diverged'] else ''} | "
            f"{r.get('epoch_ms', float('nan')):.1f} | {r['setup_seconds']:.2f} |"
        )
    L += ["", "| central reference | s " + t1 + " | s " + t2 + " |", "|---|---|---|"]
    for name, ref in g["references"].items():
        cells = [
            (
                "-"
                if ref["targets"][t] is None
                else f"{ref['targets'][t]['seconds']:.3f} (tol {ref['targets'][t]['tol']:g})"
            )
            for t in (t1, t2)
        ]
        L.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return L


def _md_noise(n: dict) -> list:
    sig = n["sigmas"]
    L = [
        "",
        f"## Under noise ({n['dataset']}): relative suboptimality after {n['epochs']} "
        f"epochs, mean (min..max) of {n['seeds']} seeds",
        "",
        n["noise"] + ".",
        "",
        "| variant | " + " | ".join(f"sigma {s:g}" for s in sig) + " |",
        "|---|" + "---|" * len(sig),
    ]
    for r in n["rows"]:
        cells = [
            f"{r[f'sigma_{s:g}']['mean']:.2e} ({r[f'sigma_{s:g}']['min']:.1e}..{r[f'sigma_{s:g}']['max']:.1e})"
            for s in sig
        ]
        L.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    return L


def _md_epsilon(e: dict) -> list:
    L = [
        "",
        f"## Epsilon spent to reach a target test loss ({e['dataset']})",
        "",
        f"{e['config']}; target: {e['target']}.",
        "",
        "| sigma | algorithm | sensitivity | epochs | epsilon | best test log loss |",
        "|---|---|---|---|---|---|",
    ]
    for r in e["rows"]:
        sens = "-" if r["sensitivity"] is None else f"{r['sensitivity']:.3g}"
        eps = f"{r['epsilon']:.3g}" if r["reached"] else f"not reached (>{r['epsilon_after_all']:.3g})"
        L.append(
            f"| {r['sigma']:g} | {r['algorithm']} | {sens} | {r['epochs'] or '-'} | {eps} | "
            f"{r['best_test_logloss']:.4f} |"
        )
    L += ["", "![epsilon to target](epsilon_to_target.png)"]
    return L


def write_figure(bench: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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


def summary(bench: dict) -> str:
    lines = ["target | ratio | result"]
    for t in bench["targets"].values():
        lines.append(f"{t['description']} | {_fmt(t['ratio'])} | {'PASS' if t['pass'] else 'MISS'}")
    return "\n".join(lines)
