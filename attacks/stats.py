"""What an attack's scores amount to: AUC and its confidence interval, the ceiling under a
DP guarantee, and an empirical epsilon lower bound.

- **AUC** (Mann-Whitney, ties counted 1/2) with DeLong et al. (1988)'s variance by
  structural components (Sun and Xu 2014's midrank form), a two-sided normal interval.
- **Ceiling.** An (epsilon, delta)-DP guarantee on the relation that changes the attacked
  value (one label flipped; one row replaced) bounds every test between the two
  neighbours: ``TPR <= e^eps FPR + delta`` and ``1 - FPR <= e^eps (1 - TPR) + delta``
  (Kairouz et al. 2015). The ROC of any attack lies under that envelope, so its AUC is at
  most the area under it: ``e^eps / (1 + e^eps)`` at delta 0 (0.731 at epsilon 1).
- **Empirical epsilon.** The attack as a test: a threshold chosen on one half of the
  samples, its TPR and FPR on the other half bounded by Clopper-Pearson at the confidence
  level, and the envelope inverted: ``eps >= log((TPR_lo - delta) / FPR_hi)`` (and the
  complementary form), 0 when nothing is shown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Outcome", "auc", "ceiling_auc", "delong_ci", "epsilon_lower", "outcome"]


def _midranks(x: np.ndarray) -> np.ndarray:
    return stats.rankdata(x, method="average")


def auc(scores, truth) -> float:
    """P(score of a positive > score of a negative) + 1/2 P(tie); ``truth`` in {0, 1}."""
    s, t = np.asarray(scores, dtype=float), np.asarray(truth).astype(bool)
    m, n = int(t.sum()), int((~t).sum())
    if m == 0 or n == 0:
        raise ValueError("an AUC needs samples of both classes")
    r = _midranks(s)
    return float((r[t].sum() - m * (m + 1) / 2.0) / (m * n))


def delong_ci(scores, truth, confidence: float = 0.95) -> tuple[float, float]:
    """DeLong's two-sided interval of the AUC, clipped to [0, 1]."""
    s, t = np.asarray(scores, dtype=float), np.asarray(truth).astype(bool)
    X, Y = s[t], s[~t]
    m, n = X.size, Y.size
    a = auc(s, t)
    rz = _midranks(np.r_[X, Y])
    v10 = (rz[:m] - _midranks(X)) / n  # per positive: the fraction of negatives below it
    v01 = 1.0 - (rz[m:] - _midranks(Y)) / m
    var = np.var(v10, ddof=1) / m + np.var(v01, ddof=1) / n if m > 1 and n > 1 else 0.25
    z = stats.norm.ppf(0.5 + confidence / 2.0)
    half = z * math.sqrt(max(var, 0.0))
    return max(0.0, a - half), min(1.0, a + half)


def ceiling_auc(epsilon: float, delta: float = 0.0, grid: int = 20001) -> float:
    """The largest AUC any attack reaches under (epsilon, delta)-DP: the area under
    ``min(1, e^eps x + delta, 1 - e^-eps (1 - delta - x))`` (delta 0: ``e^eps/(1+e^eps)``)."""
    if not (epsilon >= 0 and 0 <= delta <= 1):
        raise ValueError(f"a ceiling needs epsilon >= 0 and delta in [0, 1], got {epsilon}, {delta}")
    if not math.isfinite(epsilon):
        return 1.0
    if delta == 0:
        return 1.0 / (1.0 + math.exp(-epsilon))
    x = np.linspace(0.0, 1.0, grid)
    tpr = np.minimum.reduce(
        [np.ones_like(x), math.exp(epsilon) * x + delta, 1.0 - math.exp(-epsilon) * np.maximum(1.0 - delta - x, 0.0)]
    )
    return float(np.trapezoid(tpr, x))


def _cp(k: int, n: int, alpha: float) -> tuple[float, float]:
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha / 2, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lo, hi


def epsilon_lower(scores, truth, rng: np.random.Generator, delta: float = 0.0, confidence: float = 0.95) -> float:
    """The epsilon the attack shows, at ``confidence``: the best threshold of a random half,
    its TPR and FPR on the other half bounded by Clopper-Pearson (see the module docstring)."""
    s, t = np.asarray(scores, dtype=float), np.asarray(truth).astype(bool)
    half = rng.permutation(s.size) < s.size // 2
    choose, test = half, ~half
    cuts = np.quantile(s[choose], np.linspace(0.02, 0.98, 49))
    alpha = 1.0 - confidence

    def shown(cut, where) -> float:
        pos, neg = t & where, ~t & where
        tp, fp = int((s[pos] > cut).sum()), int((s[neg] > cut).sum())
        tpr_lo, _ = _cp(tp, int(pos.sum()), alpha)
        _, fpr_hi = _cp(fp, int(neg.sum()), alpha)
        out = 0.0
        if tpr_lo - delta > 0 and fpr_hi > 0:
            out = max(out, math.log((tpr_lo - delta) / fpr_hi))
        if 1 - fpr_hi - delta > 0 and 1 - tpr_lo > 0:
            out = max(out, math.log((1 - fpr_hi - delta) / (1 - tpr_lo)))
        return out

    if not (t & choose).any() or not (~t & choose).any():
        return 0.0
    best = max(cuts, key=lambda c: shown(c, choose))
    return shown(best, test)


@dataclass(frozen=True)
class Outcome:
    """What ``vfl attack --json`` prints (its keys are the issue's)."""

    attack: str
    auc: float
    auc_ci: tuple[float, float]
    ceiling: float | None
    epsilon_lower: float

    def as_text(self) -> str:
        ceiling = "none (no guarantee covers it)" if self.ceiling is None else f"{self.ceiling:.4f}"
        return (
            f"{self.attack}: AUC {self.auc:.4f} (95 % CI {self.auc_ci[0]:.4f}-"
            f"{self.auc_ci[1]:.4f}); ceiling {ceiling}; empirical epsilon >= "
            f"{self.epsilon_lower:.3g}"
        )

    def show(self, as_json: bool = False) -> str:
        return json.dumps(self.as_json()) if as_json else self.as_text()

    def as_json(self) -> dict:
        return {
            "attack": self.attack,
            "auc": self.auc,
            "auc_ci": list(self.auc_ci),
            "ceiling": self.ceiling,
            "epsilon_lower": self.epsilon_lower,
        }


def outcome(name: str, scores, truth, rng, guarantee: tuple[float, float] | None) -> Outcome:
    """Every statistic of one attack's ``scores`` against ``truth``; ``guarantee``: the
    (epsilon, delta) that bounds it, or None."""
    eps, delta = guarantee if guarantee is not None else (None, 0.0)
    return Outcome(
        name,
        auc(scores, truth),
        delong_ci(scores, truth),
        None if eps is None else ceiling_auc(eps, delta),
        epsilon_lower(scores, truth, rng, delta),
    )
