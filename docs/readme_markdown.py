"""The measured tables of README and the manual as markdown, each from its committed CSV
(``docs/readme_tables.py`` puts them between their marks)."""

from __future__ import annotations

import pandas as pd


def alignment_markdown(table: pd.DataFrame) -> str:
    """Aligning two party files by PSI: time against the protocol's own work, bytes against
    its own count (the targets: 1M IDs in at most 60 s on 2 cores, bytes within
    1.5x)."""
    rows = [
        "| IDs per party | common | seconds | X25519 (us) | the protocol's work (s) | "
        "seconds / work | bytes per ID | bytes / protocol's | target |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in table.itertuples():
        target = []
        if r.ids_per_party == 1_000_000:
            target.append(f"<= 60 s: {'met' if r.seconds <= 60 else 'not met'}")
        target.append(f"bytes <= 1.5x: {'met' if r.bytes_ratio <= 1.5 else 'not met'}")
        rows.append(
            f"| {r.ids_per_party:,} | {r.intersection:,} | {r.seconds:.1f} | "
            f"{r.op_us:.1f} | {r.floor_seconds:.1f} | {r.over_floor:.2f} | "
            f"{r.bytes_per_id:.1f} | {r.bytes_ratio:.4f} | {'; '.join(target)} |"
        )
    return "\n".join(rows) + "\n"


def bench_targets_markdown(table: pd.DataFrame) -> str:
    """``python -m benchmarks``'s targets: each ratio of two timings of one run, its verdict."""
    lines = ["| target | measured | result |", "|---|---:|---|"]
    for r in table.to_dict("records"):
        whole = r["measured"] >= 100 or float(r["measured"]).is_integer()
        value = f"{r['measured']:.0f}" if whole else f"{r['measured']:.3g}"
        lines.append(f"| {r['description']} | {value} | {'pass' if r['pass'] else 'miss: ' + r['why']} |")
    return "\n".join(lines) + "\n"


def bench_variants_markdown(variants: pd.DataFrame, references: pd.DataFrame) -> str:
    """The a9a variants of ADMM sharing: epochs and seconds to 1e-4 and 1e-6, against lbfgs."""

    def cell(r, target):
        epochs = r[f"epochs_to_{target}"]
        if pd.isna(epochs):
            return ["diverges"] * 2 if r["diverged"] else ["-", "-"]
        return [f"{epochs:.0f}", f"{r[f'seconds_to_{target}']:.3f}"]

    lines = ["| variant | epochs to 1e-4 | s | / lbfgs | epochs to 1e-6 | s |", "|---|---:|---:|---:|---:|---:|"]
    for r in variants.to_dict("records"):
        e4, s4 = cell(r, "1e-4")
        e6, s6 = cell(r, "1e-6")
        lbfgs = r["lbfgs_seconds_to_1e-4"]
        ratio = s4 if s4 in ("-", "diverges") else f"{float(s4) / lbfgs:.2f}"
        lines.append(f"| {r['variant']} | {e4} | {s4} | {ratio} | {e6} | {s6} |")
    # each solver at the faster of its BLAS settings ("sklearn lbfgs, 1 BLAS thread")
    refs = references.assign(solver=references["reference"].str.split(",").str[0])
    best = refs.loc[refs.groupby(["solver", "target"])["seconds"].idxmin()]
    said = "; ".join(
        f"{name}: " + " / ".join(f"{s:.2f} s" for s in group.sort_values("target", ascending=False)["seconds"])
        for name, group in best.groupby("solver", sort=False)
    )
    short = [
        f"{r['variant']}: {r['final_suboptimality']:.1e} after {r['epochs_run']} epochs"
        for r in variants.to_dict("records")
        if pd.isna(r["epochs_to_1e-6"])
    ]
    lines += [
        "",
        f'("-": not reached; the relative suboptimality where each such run stopped: '
        f"{'; '.join(short)}.) Central references in the same process, to 1e-4 / "
        f"1e-6: {said}.",
    ]
    return "\n".join(lines) + "\n"


def _verdict(value, limit: float) -> str:
    return "not measured" if pd.isna(value) else f"{value:.3g} ({'pass' if value <= limit else 'miss'})"


def scale_markdown(table: pd.DataFrame) -> str:
    """One row per (rows, parties) of the scale benchmark, then issue 23's targets: at the
    largest two-party run, and for 16 parties."""
    two = table[table["parties"] == 2].sort_values("rows")
    base = float(two["ns_per_row_epoch"].iloc[0])
    lines = [
        "| rows | parties | epochs to 1e-4 | ADMM / lbfgs | baselines / wall | peak RSS / data | ns per row-epoch |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in table.to_dict("records"):
        epochs = r["epochs_to_1e-4"]
        epochs = "-" if pd.isna(epochs) else int(epochs)
        lines.append(
            f"| {r['rows']:,} | {r['parties']} | {epochs} "
            f"| {r['admm_over_lbfgs']:.3g} | {r['baseline_share_of_wall']:.3g} | "
            f"{r['peak_rss_over_data']:.3g} | {r['ns_per_row_epoch']:.0f} |"
        )
    big = two.iloc[-1]
    many = table[table["parties"] == table["parties"].max()]
    lines += [
        "",
        f"Targets at {big['rows']:,} rows, 2 parties: ADMM / lbfgs <= 0.5: "
        f"{_verdict(big['admm_over_lbfgs'], 0.5)}; baselines / wall <= 0.2: "
        f"{_verdict(big['baseline_share_of_wall'], 0.2)}; peak RSS / data <= 2.5: "
        f"{_verdict(big['peak_rss_over_data'], 2.5)}; ns per row-epoch over the "
        f"{two['rows'].iloc[0]:,}-row run's <= 1.5: "
        f"{_verdict(big['ns_per_row_epoch'] / base, 1.5)}. "
        f"{many['parties'].iloc[0]} parties to 1e-4 in <= 60 epochs: "
        f"{_verdict(float(many['epochs_to_1e-4'].max()), 60)}.",
    ]
    return "\n".join(lines) + "\n"


def _mb(n: float) -> str:
    """Bytes as MB to the 6 significant digits dask.csv keeps (not an exact count)."""
    return f"{n / 1e6:.6g}"


def dask_markdown(cases: pd.DataFrame, nanny: pd.DataFrame) -> str:
    """The Dask backend against in-process, a row per case, and the nanny's allocator."""
    lines = [
        "| dataset | parties | epochs | in-process s/epoch | Dask s/epoch | Dask / in-process "
        "| same numbers | TCP MB/epoch | protocol MB/epoch |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in cases.to_dict("records"):
        lines.append(
            f"| {r['dataset']} | {r['parties']} | {r['epochs']} | "
            f"{r['inprocess_seconds_per_epoch']:.4f} | "
            f"{r['dask_seconds_per_epoch']:.4f} | "
            f"{r['ratio']:.2f} | {'yes' if r['same_numbers'] else 'NO'} | "
            f"{_mb(r['transport_bytes_per_epoch'])} | "
            f"{_mb(r['protocol_bytes_per_epoch'])} |"
        )
    n = nanny.iloc[0]
    lines += [
        "",
        f"Load average {cases['load_before'].iloc[0]:g} before and "
        f"{cases['load_after'].iloc[0]:g} after (the 2 cores were shared). Keeping the "
        f"nanny's default `MALLOC_TRIM_THRESHOLD_`, the 3.2M-row epoch with 2 parties "
        f"took {n['nanny_default_seconds_per_epoch']:.3f} s against "
        f"{n['dropped_seconds_per_epoch']:.3f} s without it ({n['ratio']:.2f}x).",
    ]
    return "\n".join(lines) + "\n"


def services_markdown(table: pd.DataFrame) -> str:
    """The party services against in-process, and a deployment epoch against a simulation
    epoch (python -m benchmarks --only party_services)."""
    r = table.iloc[0]
    ok = lambda v, t: "met" if v <= t else "not met"  # noqa: E731
    lines = [
        "| a9a, 2 parties, one BLAS thread | s/epoch | ratio | target |",
        "|---|---:|---:|---|",
        f"| in-process | {r['inprocess_seconds_per_epoch']:.4f} | 1 | |",
        f"| party services (gRPC, mutual TLS, localhost) | "
        f"{r['services_seconds_per_epoch']:.4f} | {r['ratio']:.2f} | "
        f"<= 3: {ok(r['ratio'], 3)} |",
        f"| epsilon 8 on the services, simulation (numpy noise) | {r['simulation_seconds_per_epoch']:.4f} | 1 | |",
        f"| epsilon 8 on the services, deployment (exact noise) | "
        f"{r['deployment_seconds_per_epoch']:.4f} | {r['deployment_ratio']:.2f} | "
        f"<= 2: {ok(r['deployment_ratio'], 2)} |",
        "",
        f"{int(r['epochs'])} epochs each; the same numbers as in-process: "
        f"{'yes' if r['same_numbers'] else 'NO'}; TCP carried "
        f"{_mb(r['tcp_bytes_per_epoch'])} MB per epoch for the protocol's "
        f"{_mb(r['protocol_bytes_per_epoch'])} MB. Load average "
        f"{r['load_before']:g} before and {r['load_after']:g} after (2 shared cores).",
    ]
    return "\n".join(lines) + "\n"


def _scale_targets_met(table: pd.DataFrame) -> int:
    """How many of the four targets the largest two-party run of the scale table meets."""
    two = table[table["parties"] == 2].sort_values("rows")
    big, base = two.iloc[-1], float(two["ns_per_row_epoch"].iloc[0])
    return sum(
        [
            big["admm_over_lbfgs"] <= 0.5,
            big["baseline_share_of_wall"] <= 0.2,
            big["peak_rss_over_data"] <= 2.5,
            big["ns_per_row_epoch"] / base <= 1.5,
        ]
    )
