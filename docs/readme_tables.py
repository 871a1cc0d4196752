"""Write README's measured tables from the CSVs committed beside its figures.

    python docs/readme_tables.py          # rewrite README.md in place
    python docs/readme_tables.py --check  # exit 1 if README differs (tests/test_readme.py)

Each table sits between ``<!-- table: NAME -->`` and ``<!-- /table -->``;
NAME says which CSV and which renderer:

- ``audits``: ``docs/figures/audits/audits.csv``, written by
  ``vfl audits DIR --out docs/figures/audits/audits.png``
  (:func:`vfl.experiments.audit.audit_markdown`);
- ``utility-a9a``, ``utility-adult``: ``docs/figures/private/utility-*.csv``,
  written by ``vfl reproduce private-utility``
  (:func:`vfl.papers.private_utility.figures.utility_markdown`);
- ``hu-bytes``: ``docs/figures/hu/bytes.csv``, written by ``vfl reproduce hu bytes``
  (:func:`vfl.papers.hu.figures.bytes_markdown`);
- ``scale``: ``docs/figures/scale/scale.csv``, written by ``python docs/measure.py scale``
  (:func:`scale_markdown`, with issue 23's targets);
- ``dask``: ``docs/figures/dask/dask.csv`` and ``dask-nanny.csv``, written by
  ``python docs/measure.py dask`` (:func:`dask_markdown`).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
FIGURES = REPO / "docs" / "figures"
_BLOCK = re.compile(r"(<!-- table: ([\w-]+) -->\n)(.*?)(<!-- /table -->)", re.S)


def _render(name: str) -> str:
    if name == "audits":
        from vfl.experiments.audit import audit_markdown

        return audit_markdown(pd.read_csv(FIGURES / "audits" / "audits.csv"))
    if name.startswith("utility-"):
        from vfl.papers.private_utility.figures import utility_markdown

        return utility_markdown(pd.read_csv(FIGURES / "private" / f"{name}.csv", comment="#"))
    if name == "hu-bytes":
        from vfl.papers.hu.figures import bytes_markdown

        return bytes_markdown(pd.read_csv(FIGURES / "hu" / "bytes.csv"))
    if name == "scale":
        return scale_markdown(pd.read_csv(FIGURES / "scale" / "scale.csv"))
    if name == "dask":
        return dask_markdown(pd.read_csv(FIGURES / "dask" / "dask.csv"),
                             pd.read_csv(FIGURES / "dask" / "dask-nanny.csv"))
    raise KeyError(f"README names an unknown table {name!r}")


def _verdict(value, limit: float) -> str:
    return "not measured" if pd.isna(value) else \
        f"{value:.3g} ({'pass' if value <= limit else 'miss'})"


def scale_markdown(table: pd.DataFrame) -> str:
    """One row per (rows, parties) of the scale benchmark, then issue 23's targets: at the
    largest two-party run, and for 16 parties."""
    two = table[table["parties"] == 2].sort_values("rows")
    base = float(two["ns_per_row_epoch"].iloc[0])
    lines = ["| rows | parties | epochs to 1e-4 | ADMM / lbfgs | baselines / wall | peak RSS / data "
             "| ns per row-epoch |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table.to_dict("records"):
        epochs = r["epochs_to_1e-4"]
        lines.append(f"| {r['rows']:,} | {r['parties']} | {'-' if pd.isna(epochs) else int(epochs)} "
                     f"| {r['admm_over_lbfgs']:.3g} | {r['baseline_share_of_wall']:.3g} | "
                     f"{r['peak_rss_over_data']:.3g} | {r['ns_per_row_epoch']:.0f} |")
    big = two.iloc[-1]
    many = table[table["parties"] == table["parties"].max()]
    lines += ["", f"Targets at {big['rows']:,} rows, 2 parties: ADMM / lbfgs <= 0.5: "
                  f"{_verdict(big['admm_over_lbfgs'], 0.5)}; baselines / wall <= 0.2: "
                  f"{_verdict(big['baseline_share_of_wall'], 0.2)}; peak RSS / data <= 2.5: "
                  f"{_verdict(big['peak_rss_over_data'], 2.5)}; ns per row-epoch over the "
                  f"{two['rows'].iloc[0]:,}-row run's <= 1.5: "
                  f"{_verdict(big['ns_per_row_epoch'] / base, 1.5)}. "
                  f"{many['parties'].iloc[0]} parties to 1e-4 in <= 60 epochs: "
                  f"{_verdict(float(many['epochs_to_1e-4'].max()), 60)}."]
    return "\n".join(lines) + "\n"


def dask_markdown(cases: pd.DataFrame, nanny: pd.DataFrame) -> str:
    """The Dask backend against in-process, a row per case, and the nanny's allocator."""
    lines = ["| dataset | parties | epochs | in-process s/epoch | Dask s/epoch | Dask / in-process "
             "| same numbers | TCP bytes/epoch | protocol bytes/epoch |",
             "|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in cases.to_dict("records"):
        lines.append(f"| {r['dataset']} | {r['parties']} | {r['epochs']} | "
                     f"{r['inprocess_seconds_per_epoch']:.4f} | {r['dask_seconds_per_epoch']:.4f} | "
                     f"{r['ratio']:.2f} | {'yes' if r['same_numbers'] else 'NO'} | "
                     f"{r['transport_bytes_per_epoch']:,.0f} | {r['protocol_bytes_per_epoch']:,.0f} |")
    n = nanny.iloc[0]
    lines += ["", f"Load average {cases['load_before'].iloc[0]:g} before and "
                  f"{cases['load_after'].iloc[0]:g} after (the 2 cores were shared). Keeping the "
                  f"nanny's default `MALLOC_TRIM_THRESHOLD_`, the 3.2M-row epoch with 2 parties "
                  f"took {n['nanny_default_seconds_per_epoch']:.3f} s against "
                  f"{n['dropped_seconds_per_epoch']:.3f} s without it ({n['ratio']:.2f}x)."]
    return "\n".join(lines) + "\n"


def render(readme: str) -> str:
    """``readme`` with every marked table rewritten from its CSV."""
    return _BLOCK.sub(lambda m: m.group(1) + _render(m.group(2)) + m.group(4), readme)


def main(argv: list[str]) -> int:
    path = REPO / "README.md"
    text = path.read_text()
    new = render(text)
    if "--check" in argv:
        return int(new != text)
    path.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
