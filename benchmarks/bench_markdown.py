"""bench.md: the markdown tables of a benchmark run, one section per case; the targets' summary
printed at its end."""

from __future__ import annotations

import json

import numpy as np

from .report import jsonable


def fmt(v, spec=".3g"):
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
            f"| {t['description']} | {fmt(t['ratio'])} | {cmp} {t['threshold']:g} | "
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
                f"{r['seconds_with_eval']:.3f} | {fmt(r['final_suboptimality'], '.2e')} |"
            )
        sk = t["sklearn"]
        for label, r in (("ADMM rho=1 (paper)", t["admm_rho1"]), ("ADMM best rho (proposal)", t["admm_best"])):
            if r:
                L.append(
                    f"| {label}, median of {r['repeats']} | {r['reached']} | {r['epochs']} | "
                    f"{r['seconds']:.3f} | {r['seconds_with_eval']:.3f} | {fmt(r['final_suboptimality'], '.2e')} |"
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


def summary(bench: dict) -> str:
    lines = ["target | ratio | result"]
    for t in bench["targets"].values():
        lines.append(f"{t['description']} | {fmt(t['ratio'])} | {'PASS' if t['pass'] else 'MISS'}")
    return "\n".join(lines)
