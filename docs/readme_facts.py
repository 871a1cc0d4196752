"""Every number README's prose and the manual may quote as ``VALUE<!-- fact: NAME -->``:
:data:`FACTS`, by name, each read off a committed CSV under docs/figures (how: a cell,
a count, or a small function of the table; ``docs/readme_lookup.py``).
``docs/readme_tables.py`` writes them into the pages.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
from readme_lookup import Fact, FactError, _exp, _one, _unique, _word, cell, count
from readme_markdown import _scale_targets_met

REPO = Path(__file__).resolve().parents[1]

_AUDITS = "audits/audits.csv"
_CEILING = "audits/ceiling.csv"
_TV = "audits/tv.csv"
_A9A, _ADULT = "private/utility-a9a.csv", "private/utility-adult.csv"
_BYTES = "hu/bytes.csv"
_SCALE = "scale/scale.csv"
#: ``vfl reproduce dp-admm``'s tables: the accuracy tables of Figs. 2 (l1) and 6 (l2), and
#: the last iteration of every curve of Figs. 1 (l1), 3 and 4 (l2)
_DP1, _DP2, _DP3 = "dp-admm/fig1-final.csv", "dp-admm/fig2.csv", "dp-admm/fig3-final.csv"
_DP4, _DP6 = "dp-admm/fig4-final.csv", "dp-admm/fig6.csv"
_DP, _ALG1, _ALG2 = "DP-ADMM (Alg. 3)", "Algorithm 1 (non-private)", "Algorithm 2 (paper's sigma)"


def _dp(csv: str, column: str, fmt: str = ".2f", algorithm: str = _DP, **where) -> Fact:
    return cell(csv, column, fmt, algorithm=algorithm, **where)


def _accuracies(csv: str, algorithm: str, low: bool, min_epsilon: float = 0.0):
    """The lowest (or highest) mean test accuracy of ``algorithm`` at epsilon >= min_epsilon."""

    def value(t):
        rows = t[(t["algorithm"] == algorithm) & (t["epsilon"] >= min_epsilon)]
        if rows.empty:
            raise FactError(f"{csv} has no {algorithm} row at epsilon >= {min_epsilon}")
        return rows["test_accuracy_mean"].min() if low else rows["test_accuracy_mean"].max()

    return value


def _fig2_gap(t: pd.DataFrame) -> float:
    """How far below Algorithm 1 DP-ADMM's accuracy can be at epsilon-bar >= 0.5."""
    alg1 = _one(t, _DP2, {"algorithm": _ALG1})["test_accuracy_mean"]
    return alg1 - _accuracies(_DP2, _DP, True, 0.05)(t)


def _up3(v: float) -> str:
    """``v`` rounded up to 3 decimals: a bound README states ("within 0.005")."""

    return f"{math.ceil(v * 1000 * (1 - 1e-12)) / 1000:.3f}"


def _low_scale(t: pd.DataFrame) -> float:
    """The audits' reduced noise scale S (every config is audited as run and at S)."""
    return _unique((s for s in t["noise_scale"] if s != 1), "the audits' noise scale below 1")


def _low(t: pd.DataFrame) -> pd.DataFrame:
    return t[t["noise_scale"] == _low_scale(t)]


#: a claimed epsilon above this is vacuous (privacy-a9a's 1.0e7): no audit target applies
_VACUOUS = 100.0


def _claiming(t: pd.DataFrame) -> pd.DataFrame:
    """The as-run rows whose claim is neither vacuous nor epsilon 0 (where a ratio applies)."""
    return t[(t["noise_scale"] == 1) & (t["epsilon"] > 0) & (t["epsilon"] <= _VACUOUS)]


def _dp_admm_rows(t: pd.DataFrame) -> pd.Series:
    """The DP-ADMM mechanisms' (Algorithms 2 and 3) exercised ratios, as run."""
    rows = t[(t["noise_scale"] == 1) & t["mechanism"].str.contains("Algorithm [23]")]
    return rows["exercised_over_charged"]


def _logloss(t: pd.DataFrame, csv: str, method: str, epsilon: float) -> float:
    return float(_one(t, csv, {"method": method, "epsilon": epsilon})["test_logloss_mean"])


def _beats_from(csv: str) -> Callable[[pd.DataFrame], float]:
    """The smallest epsilon from which private stacking beats party 1 alone at every epsilon."""

    def value(t):
        alone = _logloss(t, csv, "party 1 alone", float("inf"))
        rows = t[t["method"] == "private stacking"].sort_values("epsilon", ascending=False)
        start = None
        for epsilon, loss in zip(rows["epsilon"], rows["test_logloss_mean"]):
            if loss >= alone:
                break
            start = epsilon
        if start is None:
            raise FactError(f"private stacking does not beat party 1 alone at the largest epsilon of {csv}")
        return start

    return value


def _admm_epochs(top: bool) -> Callable[[pd.DataFrame], int]:
    """The epochs the search chose for ADMM sharing (row-level DP) at the largest epsilon
    (``top``) or at every other one, on both data sets."""

    def value(t):
        rows = t[t["method"] == "ADMM sharing (row-level DP)"]
        largest = rows["epsilon"].max()
        rows = rows[(rows["epsilon"] == largest) == top]
        return _unique((int(json.loads(c)["solver.epochs"]) for c in rows["chosen"]), "the chosen solver.epochs")

    return value


def _bytes(dataset: str, method: str, column: str) -> Callable[[pd.DataFrame], float]:
    return lambda t: _one(t, _BYTES, {"dataset": dataset, "method": method})[column]


def _whole(v: float, what: str) -> int:
    if v != round(v):
        raise FactError(f"{what} is {v}, not a whole number")
    return round(v)


def _a9a_messages_per_epoch(t: pd.DataFrame) -> int:
    r = _one(t, _BYTES, {"dataset": "a9a", "method": "ADMM sharing"})
    return _whole(r["messages_to_target"] / r["epochs_to_target"], "messages per epoch")


def _a9a_values_per_message(t: pd.DataFrame) -> int:
    """float64 values: bytes per epoch over 8 bytes times the messages per epoch."""
    r = _one(t, _BYTES, {"dataset": "a9a", "method": "ADMM sharing"})
    return _whole(r["bytes_per_epoch"] / (8 * _a9a_messages_per_epoch(t)), "values per message")


_GISETTE = "gisette stand-in (synthetic)"

#: every fact README's prose may mark, by name
_ATTACKS = "attacks/attacks.csv"

FACTS: dict[str, Fact] = {
    # vfl reproduce attacks: private stacking at label epsilon 1 (and feature epsilon 1)
    "attacks-stacking-both-1": cell(
        _ATTACKS,
        "test_logloss",
        ".4f",
        method="private_stacking",
        direction="labels",
        epsilon=1.0,
        attack="label-direction",
    ),
    "attacks-party1": Fact(
        _ATTACKS, lambda t: _unique(t.loc[t["method"] == "private_stacking", "party1_logloss"], "party 1 alone"), ".4f"
    ),
    # The audit: every shipped guarantee as run and at a reduced noise scale S
    # a row per audited guarantee (an entry with label DP has the labels' row too)
    "audits-configs": Fact(_AUDITS, lambda t: int((t["noise_scale"] == 1).sum()), "d"),
    "audits-label-rows": Fact(
        _AUDITS, lambda t: int(((t["noise_scale"] == 1) & t["mechanism"].str.endswith("(labels)")).sum()), _word
    ),
    "audits-pass-as-run": count(_AUDITS, noise_scale=1, verdict="PASS"),
    # the whole table's CPU time (one audit per config and scale; its label row shares it)
    "audits-cpu-minutes": Fact(
        _AUDITS, lambda t: t.drop_duplicates(["config", "noise_scale"])["cpu_seconds"].sum() / 60, ".0f"
    ),
    "audits-two-core-minutes": Fact(
        _AUDITS, lambda t: t.drop_duplicates(["config", "noise_scale"])["cpu_seconds"].sum() / 120, ".1f"
    ),
    "audits-low-scale": Fact(_AUDITS, _low_scale, "g"),
    "audits-refuted-low": Fact(_AUDITS, lambda t: int((_low(t)["verdict"] == "REFUTED").sum()), "d"),
    "audits-not-refuted-low": Fact(_AUDITS, lambda t: int((_low(t)["verdict"] != "REFUTED").sum()), _word),
    "audits-level": Fact(_AUDITS, lambda t: _unique(t["level"], "the audits' level"), ".0%"),
    "audit-privacy-a9a-epsilon": cell(_AUDITS, "epsilon", _exp(1), config="privacy-a9a", noise_scale=1),
    "audit-privacy-a9a-delta": cell(_AUDITS, "delta", _exp(0), config="privacy-a9a", noise_scale=1),
    "audit-privacy-a9a-exercised": cell(_AUDITS, "exercised_over_charged", ".2f", config="privacy-a9a", noise_scale=1),
    "audit-privacy-a9a-column-exercised": cell(
        _AUDITS, "exercised_over_charged", ".2f", config="privacy-a9a-column", noise_scale=1
    ),
    "audit-privacy-a9a-row-exercised": cell(
        _AUDITS, "exercised_over_charged", ".2f", config="privacy-a9a-row", noise_scale=1
    ),
    "audit-own-data-admm-sharing-exercised": cell(
        _AUDITS, "exercised_over_charged", ".2f", config="own-data-admm-sharing", noise_scale=1
    ),
    "audit-own-data-admm-sharing-ratio": cell(
        _AUDITS, "epsilon_ratio", ".2f", config="own-data-admm-sharing", noise_scale=1
    ),
    "audit-dp-admm-exercised-min": Fact(_AUDITS, lambda t: _dp_admm_rows(t).min(), ".2f"),
    "audit-dp-admm-exercised-max": Fact(_AUDITS, lambda t: _dp_admm_rows(t).max(), ".2f"),
    "audit-adult-stacking-exercised": cell(
        _AUDITS, "exercised_over_charged", ".2f", config="private-utility-stacking-adult", noise_scale=1
    ),
    # the targets of issue 37, as run: a lower bound of at least half the claim (rows whose
    # claim is neither vacuous nor epsilon 0), and at least 0.8 of the charge exercised
    "audits-ratio-met": Fact(_AUDITS, lambda t: int((_claiming(t)["epsilon_ratio"] >= 0.5).sum()), "d"),
    "audits-ratio-rows": Fact(_AUDITS, lambda t: len(_claiming(t)), "d"),
    "audits-exercised-met": Fact(
        _AUDITS, lambda t: int((t.loc[t["noise_scale"] == 1, "exercised_over_charged"] >= 0.8).sum()), "d"
    ),
    "audit-own-data-stacking-exercised": cell(
        _AUDITS, "exercised_over_charged", ".2f", config="own-data-stacking", noise_scale=1
    ),
    "audit-dp-admm-alg2-epsilon": cell(_AUDITS, "epsilon", "g", config="dp-admm-alg2", noise_scale=1),
    "audit-dp-admm-alg2-delta": cell(_AUDITS, "delta", _exp(0), config="dp-admm-alg2", noise_scale=1),
    "audit-dp-admm-alg2-corrected-low": Fact(
        _AUDITS, lambda t: _one(_low(t), _AUDITS, {"config": "dp-admm-alg2-corrected"})["verdict"], "s"
    ),
    # privacy-a9a: the most any pair can exercise along its histories (docs/measure.py ceiling)
    "audit-privacy-a9a-ceiling": Fact(
        _CEILING, lambda t: t.loc[t["noise_scale"] == 1, "rms_over_charged"].max(), ".2f"
    ),
    "audit-privacy-a9a-ceiling-low": Fact(
        _CEILING, lambda t: t.loc[t["noise_scale"] != 1, "rms_over_charged"].max(), ".2f"
    ),
    "audit-privacy-a9a-ceiling-low-mu": Fact(
        _CEILING,
        lambda t: (
            t.loc[t["noise_scale"] != 1, "rms_over_charged"].max()
            / _unique(t.loc[t["noise_scale"] != 1, "noise_scale"], "the ceiling's noise scale")
        ),
        ".2f",
    ),
    "audit-privacy-a9a-pulled-max": Fact(
        _CEILING,
        lambda t: t.loc[(t["noise_scale"] == 1) & (t["base"] == "the run's data"), "pulled_entry_max"].max(),
        ".0f",
    ),
    "audit-privacy-a9a-pulled-rms": Fact(
        _CEILING,
        lambda t: t.loc[(t["noise_scale"] == 1) & (t["base"] == "the run's data"), "pulled_entry_rms"].max(),
        ".1f",
    ),
    # dp-admm-alg2: the total variation claimed and reached (docs/measure.py ceiling)
    "audit-dp-admm-alg2-claimed-tv": cell(_TV, "claimed_tv", _exp(1), noise_scale=1),
    "audit-dp-admm-alg2-tv-low": Fact(_TV, lambda t: _low(t)["reached_tv"].item(), _exp(1)),
    "audit-dp-admm-alg2-runs-needed": Fact(_TV, lambda t: _low(t)["runs_needed"].item(), _exp(0)),
    # Private utility: test log loss per method and epsilon
    "utility-draws": Fact(
        (_A9A, _ADULT), lambda t: _unique(t.loc[t["kind"].notna(), "n_seeds"], "the private methods' n_seeds"), "d"
    ),
    "utility-a9a-stacking-eps8": cell(_A9A, "test_logloss_mean", ".4f", method="private stacking", epsilon=8),
    "utility-a9a-all-features": cell(_A9A, "test_logloss_mean", ".4f", method="all features"),
    "utility-a9a-gap-eps8": Fact(
        _A9A,
        lambda t: _logloss(t, _A9A, "private stacking", 8) - _logloss(t, _A9A, "all features", float("inf")),
        ".3f",
    ),
    "utility-a9a-beats-party1-from": Fact(_A9A, _beats_from(_A9A), "g"),
    "utility-adult-stacking-eps0.5": cell(_ADULT, "test_logloss_mean", ".4f", method="private stacking", epsilon=0.5),
    "utility-adult-stacking-eps1": cell(_ADULT, "test_logloss_mean", ".4f", method="private stacking", epsilon=1),
    "utility-adult-party1": cell(_ADULT, "test_logloss_mean", ".4f", method="party 1 alone"),
    "utility-adult-beats-party1-from": Fact(_ADULT, _beats_from(_ADULT), "g"),
    "utility-a9a-admm-eps8": cell(_A9A, "test_logloss_mean", ".4f", method="ADMM sharing (row-level DP)", epsilon=8),
    "utility-admm-epochs": Fact((_A9A, _ADULT), _admm_epochs(top=False), "d"),
    "utility-admm-epochs-top": Fact((_A9A, _ADULT), _admm_epochs(top=True), "d"),
    # DP-ADMM (Huang et al.): the numbers of Figs. 1-6 (vfl reproduce dp-admm)
    **{
        f"dp-admm-fig1-eps{e:g}": _dp(_DP1, "augmented_objective_mean", epsilon=e, delta=1e-3)
        for e in (0.01, 0.02, 0.05, 0.07, 0.1, 0.2)
    },
    "dp-admm-fig1-eps0.01-delta1e-6": _dp(_DP1, "augmented_objective_mean", epsilon=0.01, delta=1e-6),
    "dp-admm-fig1-alg1": _dp(_DP1, "augmented_objective_mean", algorithm=_ALG1),
    "dp-admm-fig1-noiseless": _dp(_DP1, "augmented_objective_mean", algorithm=f"{_DP}, no noise"),
    "dp-admm-fig1-optimum": _dp(_DP1, "objective", algorithm="optimum F* (pooled rows)"),
    "dp-admm-fig2-low": Fact(_DP2, _accuracies(_DP2, _DP, True, 0.05), ".4f"),
    "dp-admm-fig2-high": Fact(_DP2, _accuracies(_DP2, _DP, False, 0.05), ".4f"),
    "dp-admm-fig2-gap": Fact(_DP2, _fig2_gap, _up3),
    "dp-admm-fig2-alg1": _dp(_DP2, "test_accuracy_mean", ".4f", algorithm=_ALG1),
    "dp-admm-fig2-eps0.01-delta1e-6": _dp(_DP2, "test_accuracy_mean", ".4f", epsilon=0.01, delta=1e-6),
    "dp-admm-fig2-eps0.01-delta1e-3": _dp(_DP2, "test_accuracy_mean", ".4f", epsilon=0.01, delta=1e-3),
    "dp-admm-fig2-noiseless": _dp(_DP1, "test_accuracy_mean", ".4f", algorithm=f"{_DP}, no noise"),
    "dp-admm-fig2-noiseless-std": _dp(_DP1, "test_accuracy_std", ".4f", algorithm=f"{_DP}, no noise"),
    "dp-admm-fig2-majority": _dp(_DP2, "test_accuracy_mean", ".4f", algorithm="majority class"),
    "dp-admm-fig2-optimum": _dp(
        _DP2, "test_accuracy_mean", ".4f", algorithm="optimum of the same objective (pooled rows)"
    ),
    "dp-admm-fig3-eps0.01": _dp(_DP3, "augmented_objective_mean", epsilon=0.01, delta=1e-3),
    "dp-admm-fig3-eps0.2": _dp(_DP3, "augmented_objective_mean", epsilon=0.2, delta=1e-3),
    "dp-admm-fig3-alg1": _dp(_DP3, "augmented_objective_mean", algorithm=_ALG1),
    "dp-admm-fig3-optimum": _dp(_DP3, "objective", algorithm="optimum F* (pooled rows)"),
    **{
        f"dp-admm-fig4-alg2-eps{e:g}": _dp(
            _DP4, "augmented_objective_mean", _exp(1), algorithm=_ALG2, epsilon=e, delta=1e-3
        )
        for e in (0.05, 0.1)
    },
    **{f"dp-admm-fig4-eps{e:g}": _dp(_DP4, "augmented_objective_mean", epsilon=e, delta=1e-3) for e in (0.05, 0.1)},
    "dp-admm-fig6-low": _dp(_DP6, "test_accuracy_mean", ".4f", epsilon=0.01, delta=1e-6),
    "dp-admm-fig6-high": _dp(_DP6, "test_accuracy_mean", ".4f", epsilon=0.2, delta=1e-3),
    "dp-admm-fig6-alg1": _dp(_DP6, "test_accuracy_mean", ".4f", algorithm=_ALG1),
    "dp-admm-fig6-alg2-low": Fact(_DP6, _accuracies(_DP6, _ALG2, True), ".3f"),
    "dp-admm-fig6-alg2-high": Fact(_DP6, _accuracies(_DP6, _ALG2, False), ".3f"),
    "dp-admm-fig6-alg2-std": Fact(_DP6, lambda t: t.loc[t["algorithm"] == _ALG2, "test_accuracy_std"].max(), ".2f"),
    # Hu et al.: the bytes to a common test loss (and what one a9a epoch sends)
    "hu-a9a-messages-per-epoch": Fact(_BYTES, _a9a_messages_per_epoch, "d"),
    "hu-a9a-values-per-message": Fact(_BYTES, _a9a_values_per_message, ",d"),
    # Dask's framing per message: a9a, 2 parties, 4 messages an epoch (dask.csv's 6 digits)
    "dask-header-bytes": Fact(
        "dask/dask.csv",
        lambda t: (
            (
                _one(t, "dask/dask.csv", {"dataset": "a9a", "parties": 2})["transport_bytes_per_epoch"]
                - _one(t, "dask/dask.csv", {"dataset": "a9a", "parties": 2})["protocol_bytes_per_epoch"]
            )
            / 4
        ),
        lambda v: f"{round(v, -1):.0f}",
    ),
    "hu-a9a-bytes-per-epoch": Fact(_BYTES, _bytes("a9a", "ADMM sharing", "bytes_per_epoch"), ",d"),
    "hu-a9a-admm-epochs": Fact(_BYTES, _bytes("a9a", "ADMM sharing", "epochs_to_target"), "d"),
    "hu-a9a-sgd-epochs": Fact(_BYTES, _bytes("a9a", "FDML SGD", "epochs_to_target"), "d"),
    "hu-a9a-admm-over-sgd": Fact(_BYTES, lambda t: 1 / _bytes("a9a", "FDML SGD", "bytes_over_admm")(t), ".2g"),
    "hu-gisette-admm-epochs": Fact(_BYTES, _bytes(_GISETTE, "ADMM sharing", "epochs_to_target"), "d"),
    "hu-gisette-sgd-epochs": Fact(_BYTES, _bytes(_GISETTE, "FDML SGD", "epochs_to_target"), "d"),
    "hu-gisette-sgd-over-admm": Fact(_BYTES, _bytes(_GISETTE, "FDML SGD", "bytes_over_admm"), ".2g"),
    # configs/a9a-fast.toml on a9a itself (the scale benchmark's smallest runs; deterministic)
    # the At-scale prose: the largest two-party run against the 32,561-row one
    "scale-targets-met": Fact(_SCALE, _scale_targets_met, lambda n: _word(n).capitalize()),
    "scale-10m-peak": cell(_SCALE, "peak_rss_over_data", ".3g", rows=9996227, parties=2),
    "scale-32k-ns": cell(_SCALE, "ns_per_row_epoch", ".0f", rows=32561, parties=2),
    "scale-3m-ns": cell(_SCALE, "ns_per_row_epoch", ".1f", rows=3256100, parties=2),
    "scale-10m-ns": cell(_SCALE, "ns_per_row_epoch", ".0f", rows=9996227, parties=2),
    "scale-10m-over-32k": Fact(
        _SCALE,
        lambda t: (
            _one(t, _SCALE, {"rows": 9996227, "parties": 2})["ns_per_row_epoch"]
            / _one(t, _SCALE, {"rows": 32561, "parties": 2})["ns_per_row_epoch"]
        ),
        ".3g",
    ),
    "a9a-fast-epochs-2-parties": cell(_SCALE, "epochs_to_1e-4", ".0f", rows=32561, parties=2),
    "a9a-fast-epochs-16-parties": cell(_SCALE, "epochs_to_1e-4", ".0f", rows=32561, parties=16),
}
