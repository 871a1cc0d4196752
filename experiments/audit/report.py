"""What an audit found: per pair and claim, the verdicts; what ``vfl audit`` prints and writes."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..records import dump_json, write_dir_atomic
from .transcripts import DirectionRuns

__all__ = ["AuditReport", "PairAudit", "audit_lines", "write_audit", "BOUND_NAMES", "GUARANTEE_NAMES", "PROFILE"]

BOUND_NAMES = {
    "kl": "Chernoff-KL",
    "clopper-pearson": "Clopper-Pearson",
    "truncated-kl": "truncated Chernoff-KL",
    "gdp": "GDP, realised mu",
}
#: the label relation's claims, named apart from the features' (``guarantee``, ``profile``)
GUARANTEE_NAMES = {"guarantee": "labels", "profile": "labels_profile"}
#: each guarantee's profile point: the features' (``guarantee``) and the labels'
PROFILE = {"guarantee": "profile", "labels": "labels_profile"}


@dataclass
class PairAudit:
    name: str
    kind: str
    change: str
    losses_P: np.ndarray
    losses_Q: np.ndarray
    verdicts: dict = field(default_factory=dict)  # claim -> AuditResult
    #: the sensitivity the pair exercises over the one charged, the median over its runs:
    #: ``S sqrt(sum ||mu - mu'||^2 / sigma^2) / mu`` of the ledger (Gaussian; ``S`` the noise
    #: scale, so the ratio is the mechanism's whatever S)
    exercised: float = float("nan")
    #: the runs' realised GDP mu, per direction (Gaussian releases; else empty)
    mus_P: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mus_Q: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: the GDP estimator's check of its assumption: Kolmogorov-Smirnov p-values of the
    #: standardized losses against N(0, 1), per direction (NaN: not run)
    checks: tuple = (float("nan"), float("nan"))
    #: the relation the pair neighbours under: ``"features"`` or ``"labels"``
    relation: str = "features"

    @classmethod
    def of(cls, pair, P: DirectionRuns, Q: DirectionRuns):
        gaussian = not (P.laplace or Q.laplace)
        mus = (np.sqrt(P.squares), np.sqrt(Q.squares)) if gaussian else (np.zeros(0),) * 2
        return cls(
            pair.name, pair.kind, pair.change, P.loss, Q.loss, mus_P=mus[0], mus_Q=mus[1], relation=pair.relation
        )


@dataclass
class AuditReport:
    config: object
    K: int
    confidence: float
    claims: dict  # claim name -> (epsilon, delta)
    pairs: list[PairAudit]
    gaussian_mu: dict  # claim name -> GDP mu of the claimed composed Gaussian (if Gaussian)
    labels: dict = field(default_factory=dict)  # claim name -> what it is, in words
    #: every noise scale multiplied by this in the audited runs (1: the mechanism as run;
    #: otherwise a calibration of the audit's power, and the guarantee is void)
    noise_scale: float = 1.0
    mechanism: str = ""  # the solver's title
    relation: str = ""  # the neighbouring relation, in the solver's words
    seconds: float = float("nan")  # wall time of the audit
    #: CPU time of the audit's process (every thread): what it costs on a free machine
    cpu_seconds: float = float("nan")
    #: the family the confidence covers: pairs, directions, claims tested separately, and
    #: the level of each test (Bonferroni)
    family: dict = field(default_factory=dict)
    sampler: str = "numpy"  # the noise the runs drew: numpy's, or the deployed exact sampler
    batches: list = field(default_factory=list)  # runs per chunk

    def summary(self) -> dict:
        """What ``audit.json`` records and :func:`audit_table` reads back, JSON-ready."""

        def top(claim):
            return next(p.verdicts[claim] for p in self.pairs if claim in p.verdicts)

        checks = [c for p in self.pairs for c in p.checks if np.isfinite(c)]
        return {
            "name": self.config.name,
            "mechanism": self.mechanism,
            "relation": self.relation,
            "K": self.K,
            "confidence": self.confidence,
            "noise_scale": self.noise_scale,
            "pairs": len(self.pairs),
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "sampler": self.sampler,
            "batches": self.batches,
            "family": self.family,
            "claims": {c: list(v) for c, v in self.claims.items()},
            "verdicts": {c: self.verdict(c) for c in self.claims},
            "labels": self.labels,
            "bounds": {c: top(c).method for c in self.claims},
            "clips": {c: top(c).clip for c in self.claims},
            "levels": {c: top(c).confidence for c in self.claims},
            "epsilon_refuted": {c: self.epsilon_refuted(c) for c in self.claims},
            "exercised_over_charged": self.exercised(),
            "exercised_over_charged_labels": self.exercised("labels"),
            "gdp_check": min(checks) if checks else None,
        }

    def exercised(self, relation: str = "features") -> float | None:
        """The best pair's exercised / charged sensitivity under ``relation`` (None if no
        ratio applies)."""
        return max(
            (p.exercised for p in self.pairs if p.relation == relation and np.isfinite(p.exercised)), default=None
        )

    def rejected(self, pair: PairAudit) -> bool:
        """Whether the GDP estimator's check rejects its assumption for ``pair``: a
        Kolmogorov-Smirnov p below 1% over the number of directions checked in the audit."""
        n = sum(1 for p in self.pairs for c in p.checks if np.isfinite(c))
        return bool(n) and any(c < 0.01 / n for c in pair.checks if np.isfinite(c))

    def _counted(self, claim: str):
        """The pairs' results of ``claim`` that count: a GDP bound of a pair whose check
        rejects its assumption refutes nothing (dropping tests can only lower the family's
        chance of a false refutation)."""
        return [
            p.verdicts[claim]
            for p in self.pairs
            if claim in p.verdicts and not (p.verdicts[claim].method == "gdp" and self.rejected(p))
        ]

    def verdict(self, claim: str) -> str:
        """PASS or REFUTED over every pair that counts; a guarantee includes its profile."""
        names = (claim, PROFILE[claim]) if claim in PROFILE else (claim,)
        if not any(c in p.verdicts for p in self.pairs for c in names):
            return "n/a"
        return "REFUTED" if any(r.refuted for c in names for r in self._counted(c)) else "PASS"

    def epsilon_refuted(self, claim: str) -> float:
        """The largest epsilon any pair that counts refutes at the claim's delta: a lower
        bound on epsilon that holds with the family's confidence."""
        return max((r.epsilon_refuted for r in self._counted(claim)), default=0.0)

    def rows(self) -> list[dict]:
        out = []
        for p in self.pairs:
            for claim, r in p.verdicts.items():
                out.append(
                    {
                        "pair": p.name,
                        "kind": p.kind,
                        "claim": claim,
                        "epsilon": r.epsilon,
                        "delta": r.delta,
                        "delta_hat": r.forward.estimate,
                        "delta_lower": max(r.forward.lower, r.reverse.lower if r.reverse is not None else 0.0),
                        "delta_hat_reverse": r.reverse.estimate if r.reverse else None,
                        "epsilon_refuted": r.epsilon_refuted,
                        "loss_mean": float(np.mean(p.losses_P)),
                        "loss_std": float(np.std(p.losses_P, ddof=1)) if p.losses_P.size > 1 else 0.0,
                        "loss_max": float(np.max(p.losses_P)),
                        "mu_median": float(np.median(p.mus_P)) if p.mus_P.size else None,
                        "mu_min": float(np.min(p.mus_P)) if p.mus_P.size else None,
                        "exercised_over_charged": p.exercised,
                        "gdp_check_forward": p.checks[0],
                        "gdp_check_reverse": p.checks[1],
                        "counted": not (r.method == "gdp" and self.rejected(p)),
                        "noise_scale": self.noise_scale,
                        "verdict": r.verdict,
                        "K": self.K,
                        "bound": r.method,
                        "clip": r.clip,
                        "confidence": r.confidence,
                    }
                )
        return out


def write_audit(report: AuditReport, out_dir, header: dict, figure=None) -> list[Path]:
    """Write an audit directory atomically: ``audit.csv`` (one row per pair and claim),
    ``losses.csv`` (every transcript's privacy loss, and its realised mu for Gaussian
    releases), ``audit.json`` (``header`` and :meth:`AuditReport.summary`) and what
    ``figure(tmp)`` adds; returns the figure's files."""

    drawn: list[Path] = []

    def files(tmp: Path) -> None:
        pd.DataFrame(report.rows()).to_csv(tmp / "audit.csv", index=False, float_format="%.6g")
        columns = {}
        for p in report.pairs:
            for d, L, mu in (("D", p.losses_P, p.mus_P), ("D'", p.losses_Q, p.mus_Q)):
                columns[f"{p.name} | {d}"] = L
                if mu.size:
                    columns[f"{p.name} | {d} | mu"] = mu
        pd.DataFrame(columns).to_csv(tmp / "losses.csv", index=False, float_format="%.8g")
        dump_json({**header, **report.summary()}, tmp / "audit.json")
        if figure is not None:
            drawn.extend(figure(tmp))

    out = write_dir_atomic(out_dir, [files], overwrite=True, what="audit directory")
    return [out / p.name for p in drawn]


def audit_lines(report: AuditReport) -> list[str]:
    """What ``vfl audit`` prints: the design, the family's confidence, the exercised
    sensitivity, the estimator's check, one line per claim."""
    f = report.family
    lines = [
        f"audit of {report.config.name}: {len(report.pairs)} neighbouring pairs x "
        f"{report.K} runs x 2 directions"
        + ("" if report.sampler == "numpy" else ", the deployed exact sampler")
        + f"; {report.confidence:.0%} over the whole family ({f.get('words', '')})"
    ]
    if report.noise_scale != 1.0:
        lines.append(
            f"  noise scaled by {report.noise_scale:g}: a calibration of the audit; the "
            "guarantee is void for these runs"
        )
    for relation in ("features", "labels"):
        ratio = report.exercised(relation)
        if ratio is not None:
            what = "" if relation == "features" else " of the labels"
            lines.append(f"  exercised / charged sensitivity{what}, best pair (median over its runs): {ratio:.3g}")
    checks = [c for p in report.pairs for c in p.checks if np.isfinite(c)]
    if checks:
        rejected = [i + 1 for i, p in enumerate(report.pairs) if report.rejected(p)]
        lines.append(
            f"  GDP estimator's assumption (losses Gaussian given the realised mu): "
            f"smallest Kolmogorov-Smirnov p over {len(checks)} directions "
            f"{min(checks):.3g}"
            + (
                f" -- REJECTED at 1% for pair(s) {', '.join(map(str, rejected))}: their bounds refute nothing"
                if rejected
                else ""
            )
        )
    rows = report.rows()
    for claim, (eps, delta) in report.claims.items():
        lows = [r["delta_lower"] for r in rows if r["claim"] == claim and r["counted"]] or [0.0]
        first = next(p.verdicts[claim] for p in report.pairs if claim in p.verdicts)
        named = BOUND_NAMES[first.method] + (f", samples capped at {first.clip:.3g}" if first.clip < 1 else "")
        refuted = report.epsilon_refuted(claim)
        ratio = "" if not eps > 0 or claim in PROFILE.values() else f" ({refuted / eps:.2f} of it)"
        lines.append(
            f"  {report.verdict(claim):8} {report.labels.get(claim, claim)}: "
            f"({eps:.4g}, {delta:.2g})-DP; largest lower bound on delta(eps): "
            f"{max(lows):.3g} ({named}); epsilon refuted up to {refuted:.3g}{ratio}"
        )
    return lines


def ratio(epsilon_lower, epsilon) -> float:
    """``epsilon_lower / epsilon`` (NaN for a claim of epsilon 0)."""
    return epsilon_lower / epsilon if epsilon and epsilon > 0 and math.isfinite(epsilon) else float("nan")
