"""``vfl audits``: every audit of a guarantee under a directory, as one table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from vfl.core.errors import DataError
from vfl.core.relations import LABELS

from .report import BOUND_NAMES, PROFILE, ratio

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["audit_markdown", "audit_table", "refuted_by_profile", "table_lines"]

COLUMNS = [
    "config",
    "mechanism",
    "relation",
    "noise_scale",
    "K",
    "pairs",
    "seconds",
    "cpu_seconds",
    "epsilon",
    "delta",
    "verdict",
    "epsilon_lower",
    "epsilon_ratio",
    "level",
    "bound",
    "clip",
    "profile_verdict",
    "exercised_over_charged",
    "gdp_check",
    "sampler",
    "directory",
]


def audit_table(root) -> pd.DataFrame:
    """One row per audit found under ``root`` (every ``audit.json``, any depth): its guarantee.

    Columns: the config, the mechanism and its relation, the noise scale
    (1: as run; else a calibration), K and the wall time, the claimed
    ``(epsilon, delta)``, the verdict, the empirical lower bound on epsilon
    (the largest epsilon the audit refutes at the claimed delta, at the
    stated level over the whole family of tests) and its ratio to the claim,
    with its bound and the bound's cap on the samples (``clip``, 1 for none),
    the verdict of the guarantee's profile, the best pair's exercised /
    charged sensitivity, the smallest p-value of the GDP estimator's check and
    the sampler. Sorted by config, then noise scale.
    """

    rows = []
    for path in sorted(Path(root).rglob("audit.json")):
        try:
            a = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable audit ({' '.join(str(exc).split())})") from None
        if not isinstance(a, dict) or not set(PROFILE) & set(a.get("claims") or {}):
            continue  # audits no guarantee: nothing to tabulate
        try:
            rows += [_table_row(a, path, claim) for claim in PROFILE if claim in a["claims"]]
        except (KeyError, TypeError, IndexError) as exc:
            raise DataError(
                f"{path}: an audit without its {exc} field (written by another vfl version? rerun vfl audit)"
            ) from None
    table = pd.DataFrame(rows, columns=COLUMNS)
    return table.sort_values(["config", "noise_scale"], ascending=[True, False], ignore_index=True)


def _table_row(a: dict, path: Path, name: str = "guarantee") -> dict:
    """One guarantee of an audit: the features' (``"guarantee"``) or the labels'."""

    claim = a["claims"][name]
    profile = a["verdicts"].get(PROFILE[name])
    lower = a["epsilon_refuted"][name]
    labels = name == "labels"
    return {
        "config": a["name"],
        "mechanism": a.get("mechanism", "") + (" (labels)" if labels else ""),
        "relation": str(LABELS) if labels else a.get("relation", ""),
        "noise_scale": a["noise_scale"],
        "K": a["K"],
        "pairs": a.get("pairs"),
        "seconds": a.get("seconds"),
        "cpu_seconds": a.get("cpu_seconds"),
        "epsilon": claim[0],
        "delta": claim[1],
        "verdict": a["verdicts"][name],
        "epsilon_lower": lower,
        "epsilon_ratio": ratio(lower, claim[0]),
        # the family's level (the confidence every bound of the audit holds at jointly);
        # audits before the family correction: the guarantee's own level
        "level": a["confidence"] if "family" in a else a["levels"][name],
        "bound": a["bounds"][name],
        # truncated-kl's cap (1: none; audits before it had no cap)
        "clip": (a.get("clips") or {}).get(name, 1.0),
        "profile_verdict": profile,
        "exercised_over_charged": a.get("exercised_over_charged_labels" if labels else "exercised_over_charged"),
        "gdp_check": a.get("gdp_check"),
        "sampler": a.get("sampler", "numpy"),
        "directory": str(path.parent),
    }


def refuted_by_profile(row) -> bool:
    """A row of :func:`audit_table` refuted through its profile only: the claimed curve is
    refuted, while no epsilon above the printed one is (the printed point holds)."""
    return row["verdict"] == "REFUTED" and not row["epsilon_lower"] > row["epsilon"]


def audit_markdown(table) -> str:
    """The table of :func:`audit_table` as the Markdown README shows (one line per audit)."""

    def num(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    lines = [
        "| config | mechanism | claimed (epsilon, delta) | noise | K x pairs | time | "
        "verdict | epsilon lower bound (level, bound) | lower / claimed | "
        "exercised / charged |",
        "|---|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for _, r in table.iterrows():
        bound = BOUND_NAMES.get(r["bound"], r["bound"])
        verdict = f"**{r['verdict']}**" if r["verdict"] == "REFUTED" else r["verdict"]
        if refuted_by_profile(r):
            verdict += " (its profile)"
        noise = "as run" if r["noise_scale"] == 1 else "x " + format(r["noise_scale"], "g")
        pairs = num(r["pairs"], "d") if r["pairs"] == r["pairs"] else "n/a"
        lines.append(
            f"| `{r['config']}` | {r['mechanism']} | "
            f"({num(r['epsilon'], '.3g')}, {num(r['delta'], '.0e')}) | "
            f"{noise} | {r['K']} x {pairs} | {num(r['seconds'], '.0f')} s | {verdict} | "
            f"{num(r['epsilon_lower'], '.3g')} ({r['level']:.2%}, {bound}) | "
            f"{num(r['epsilon_ratio'], '.2f')} | {num(r['exercised_over_charged'], '.2f')} |"
        )
    return "\n".join(lines) + "\n"


def table_lines(table) -> list[str]:
    """What ``vfl audits`` prints: one line per audit."""

    def num(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    return [
        f"{r['config']:34} S={r['noise_scale']:<5g} K={r['K']:<4} "
        f"({r['epsilon']:.3g}, {r['delta']:.0e}) {r['verdict']:8} epsilon >= "
        f"{r['epsilon_lower']:.3g} at {r['level']:.1%} ({num(r['epsilon_ratio'], '.2f')} of "
        f"it); exercised/charged {num(r['exercised_over_charged'], '.2f')}"
        for _, r in table.iterrows()
    ]
