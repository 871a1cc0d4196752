"""``vfl audit``: a white-box Monte-Carlo audit of the mechanism a run uses.

For each neighbouring pair ``(D, D')`` the solver states
(:meth:`~vfl.core.solver.Solver.neighbours`), the run is repeated ``K``
times on ``D`` with fresh noise; alongside each, a solver on ``D'`` is
teacher-forced to consume the same released transcript (every release goes
through :meth:`~vfl.core.solver.Solver.release`, whose observer hook this
module sets). Both solvers see the same public history, so for every release
the exact mean under ``D`` and under ``D'`` is known, and

    L = sum over releases of log p_D(o) - log p_D'(o)

is one exact sample of the transcript's privacy loss under ``D``. The same
with the roles swapped gives samples under ``D'``. From them
:func:`vfl.privacy.audit.audit_verdict` estimates ``delta(eps)`` at each
claimed epsilon with one-sided confidence bounds: REFUTED when the lower
bound exceeds the claimed delta, PASS (not refuted; not a proof) otherwise.

Claims audited: the run's guarantee (``epsilon_tight``, from the enforced
sensitivities) and, where the paper has one, the paper's own claim
(``epsilon_paper``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Callable

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.records import PrivacyInfo
from vfl.core.relations import stated_on
from vfl.core.solver import Streams, add_noise

from .config import AUDIT_RUNS, Config
from .runner import _build, _label_ledger, _ledger, plan_run

__all__ = ["AuditReport", "PairAudit", "audit_config", "audit_lines", "audit_markdown", "audit_table",
           "refuted_by_profile", "write_audit"]


@dataclass
class PairAudit:
    name: str
    kind: str
    change: str
    losses_P: np.ndarray
    losses_Q: np.ndarray
    verdicts: dict = field(default_factory=dict)  # claim -> AuditResult
    #: the pair's exercised sensitivity over the charged one (Gaussian runs): how close to the
    #: worst case the pair is, sqrt(sum ||mu - mu'||^2 / sigma^2) / mu of the ledger
    exercised: float = float("nan")


@dataclass
class AuditReport:
    config: Config
    K: int
    confidence: float
    claims: dict  # claim name -> (epsilon, delta) or None
    pairs: list[PairAudit]
    gaussian_mu: dict  # claim name -> GDP mu of the claimed composed Gaussian (if Gaussian)
    labels: dict = field(default_factory=dict)  # claim name -> what it is, in words
    #: every noise scale multiplied by this in the audited runs (1: the mechanism as run;
    #: otherwise a calibration of the audit's power, and the guarantee is void)
    noise_scale: float = 1.0
    mechanism: str = ""  # the solver's title
    relation: str = ""  # the neighbouring relation, in the solver's words
    seconds: float = float("nan")  # wall time of the audit

    def summary(self) -> dict:
        """What ``audit.json`` records and :func:`audit_table` reads back, JSON-ready."""
        def top(claim):
            return next(p.verdicts[claim] for p in self.pairs if claim in p.verdicts)

        return {"name": self.config.name, "mechanism": self.mechanism, "relation": self.relation,
                "K": self.K, "confidence": self.confidence, "noise_scale": self.noise_scale,
                "pairs": len(self.pairs), "seconds": self.seconds,
                "claims": {c: list(v) for c, v in self.claims.items()},
                "verdicts": {c: self.verdict(c) for c in self.claims},
                "labels": self.labels,
                "bounds": {c: top(c).method for c in self.claims},
                "clips": {c: top(c).clip for c in self.claims},
                "levels": {c: top(c).confidence for c in self.claims},
                "epsilon_refuted": {c: self.epsilon_refuted(c) for c in self.claims},
                "exercised_over_charged": max((p.exercised for p in self.pairs
                                               if np.isfinite(p.exercised)), default=None)}

    def verdict(self, claim: str) -> str:
        """PASS or REFUTED over every pair; a guarantee includes its profile point."""
        names = (claim, _PROFILE[claim]) if claim in _PROFILE else (claim,)
        results = [p.verdicts[c] for p in self.pairs for c in names if c in p.verdicts]
        if not results:
            return "n/a"
        return "REFUTED" if any(r.refuted for r in results) else "PASS"

    def epsilon_refuted(self, claim: str) -> float:
        """The largest epsilon any pair refutes at the claim's delta: a lower bound on epsilon."""
        return max((p.verdicts[claim].epsilon_refuted for p in self.pairs if claim in p.verdicts),
                   default=0.0)

    def rows(self) -> list[dict]:
        out = []
        for p in self.pairs:
            for claim, r in p.verdicts.items():
                out.append({"pair": p.name, "kind": p.kind, "claim": claim,
                            "epsilon": r.epsilon, "delta": r.delta,
                            "delta_hat": r.forward.estimate,
                            "delta_lower": max(r.forward.lower, r.reverse.lower
                                               if r.reverse is not None else 0.0),
                            "delta_hat_reverse": r.reverse.estimate if r.reverse else None,
                            "epsilon_refuted": r.epsilon_refuted,
                            "loss_mean": float(np.mean(p.losses_P)),
                            "loss_std": float(np.std(p.losses_P, ddof=1)) if p.losses_P.size > 1 else 0.0,
                            "loss_max": float(np.max(p.losses_P)),
                            "exercised_over_charged": p.exercised,
                            "noise_scale": self.noise_scale,
                            "verdict": r.verdict, "K": self.K, "bound": r.method,
                            "clip": r.clip,
                            "confidence": r.confidence})
        return out


class _Recorder:
    """Observer of the run on D: adds fresh noise and remembers every release.

    ``noise_scale`` multiplies every noise scale (a calibration of the audit:
    with less noise than the accountant requires, a claim must be refuted).
    """

    def __init__(self, rng: np.random.Generator, noise_scale: float = 1.0):
        self.rng = rng
        self.noise_scale = noise_scale
        self.log = []  # (event, mean, released)

    def __call__(self, solver, event, mean, rng):
        if self.noise_scale != 1.0:
            from dataclasses import replace

            event = replace(event, scale=event.scale * self.noise_scale)
        released = add_noise(event.mechanism, mean,
                             event.scale[0] if np.ndim(mean) == 1 else event.scale, self.rng)
        self.log.append((event, mean, released))
        return released


class _Probe(_Recorder):
    """Observer of a noiseless probe run: releases the mean itself."""

    def __call__(self, solver, event, mean, rng):
        self.log.append((event, mean, mean))
        return mean


class _Follower:
    """Observer of the run on D': releases what D released, remembers its own means."""

    def __init__(self, log):
        self.log = log
        self.i = 0
        self.means = []

    def __call__(self, solver, event, mean, rng):
        if self.i >= len(self.log):
            raise RuntimeError("the neighbouring run released more than the audited one")
        ev, _, released = self.log[self.i]
        if ev.mechanism != event.mechanism or ev.units.tolist() != event.units.tolist():
            raise RuntimeError("the neighbouring run's releases do not line up with the audited run's")
        self.i += 1
        self.means.append(mean)
        return released


def _transcript_loss(log, other_means) -> float:
    from vfl.privacy.audit import release_log_ratio

    total = 0.0
    for (event, mean, released), mean_other in zip(log, other_means):
        total += float(np.sum(release_log_ratio(event, released, mean, mean_other)))
    return total


def _one_direction(cls, config, data_own, data_other, objective, rng, iterations,
                   noise_scale: float = 1.0, relation: str = "features") -> tuple[float, object]:
    """One run on ``data_own`` with fresh noise, and its teacher-forced neighbour: the loss."""
    from .settings import Prepared

    streams = Streams(config.run.seed, replayable_noise=True)

    def make(data):
        prepared = Prepared(data=data, test=None, y_test=None, y_train=None, distribution={},
                            objective=objective)
        return _build(cls, config, prepared, streams)

    own, other = make(data_own), make(data_other)
    recorder = _Recorder(rng, noise_scale)
    follower = _Follower(recorder.log)
    own.observer, other.observer = recorder, follower
    ledger = _ledger(config) if relation == "features" else _label_ledger(config, cls)
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iterations):
            own.step()
            if ledger is not None:
                ledger.add(own.releases())
            other.step()
    if follower.i != len(recorder.log):
        raise RuntimeError("the neighbouring run released fewer values than the audited one")
    return _transcript_loss(recorder.log, follower.means), (own, ledger)


def _shift(cls, config, data, other, objective, iterations) -> tuple[float, float]:
    """How far a neighbour moves the releases, from a noiseless probe run on ``data`` with
    ``other`` teacher-forced: the deterministic part of the privacy loss (``sum ||mu - mu'||^2
    / (2 sigma^2)`` for Gaussians, ``sum ||mu - mu'||_1 / b`` for Laplace), which picks the
    adversarial pair among a solver's candidates, and ``sum ||mu - mu'||_2^2 / scale^2``, which
    an l2-charged Laplace ledger is compared with."""
    from .settings import Prepared

    streams = Streams(config.run.seed, replayable_noise=True)

    def make(d):
        return _build(cls, config, Prepared(data=d, test=None, y_test=None, y_train=None,
                                            distribution={}, objective=objective), streams)

    own, neighbour = make(data), make(other)
    probe = _Probe(None)
    follower = _Follower(probe.log)
    own.observer, neighbour.observer = probe, follower
    with np.errstate(over="ignore", invalid="ignore"):
        for _ in range(iterations):
            own.step()
            neighbour.step()
    squares = sum(float(np.sum(((np.asarray(mean) - np.asarray(other_mean)) /
                                np.reshape(event.scale, (-1,) + (1,) * (np.ndim(mean) - 1))) ** 2))
                  for (event, mean, _), other_mean in zip(probe.log, follower.means))
    return _transcript_loss(probe.log, follower.means), squares


def _l2_laplace(ledger) -> bool:
    """Laplace releases only, every one charged in l2 (:meth:`PrivacyLedger.laplace_mu`)."""
    return ledger.laplace and ledger.gaussian_mu() == 0 and 0 < ledger.laplace_mu() < np.inf


#: each guarantee's profile point: the features' ("guarantee") and the labels'
_PROFILE = {"guarantee": "profile", "labels": "labels_profile"}


def _level(name, claims, confidence):
    """Each claim's level: a guarantee's two points share ``1 - confidence`` (Bonferroni)."""
    split = any(name in pair and set(pair) <= set(claims) for pair in _PROFILE.items())
    return 1.0 - (1.0 - confidence) / 2.0 if split else confidence


def _base(pair, data):
    """The pair's D: its crafted base, or the run's own data."""
    return data if pair.base is None else pair.base


def _adversarial(cls, config, data, candidates, objective, iterations, shifts: dict):
    """Per unit, the candidate neighbour with the largest probe shift, relabelled adversarial.

    Records each chosen pair's shift in ``shifts`` (by name), so that its
    exercised / charged ratio needs no second probe.
    """
    from dataclasses import replace

    best = {}
    for pair in candidates:
        score, squares = _shift(cls, config, _base(pair, data), pair.data, objective, iterations)
        key = (pair.relation, pair.unit)  # per relation and unit
        if key not in best or score > best[key][0]:
            best[key] = (score, pair, squares)
    chosen = [replace(pair, kind="adversarial",
                      name=pair.name.replace("(candidate)", "(adversarial: largest probe shift)"),
                      change=f"{pair.change}; the largest noiseless shift among "
                             f"{sum((c.relation, c.unit) == u for c in candidates)} candidates "
                             f"(sum ||mu - mu'||^2 / 2 sigma^2 = {score:.3g})")
              for u, (score, pair, _) in sorted(best.items(), key=lambda kv: kv[0])]
    shifts.update({p.name: (best[p.relation, p.unit][0], best[p.relation, p.unit][2])
                   for p in chosen})
    return chosen


#: independent draws per pair and direction: beyond this the losses alone fill gigabytes
MAX_AUDIT_RUNS = AUDIT_RUNS[1]


def audit_config(config: Config, *, data_dir=None, K: int = 100, confidence: float = 0.95,
                 seed: int = 0, kinds=("natural", "adversarial"), max_pairs: int | None = None,
                 on_progress: Callable[[str], None] | None = None,
                 noise_scale: float = 1.0, bound: str = "auto") -> AuditReport:
    """Audit every privacy claim of ``config``'s mechanism (see the module docstring).

    ``bound`` is the one-sided confidence bound on ``delta(eps)``: ``"kl"``
    (Chernoff, deterministic in the losses), ``"clopper-pearson"`` (exact
    binomial after randomized rounding, from the audit's own stream),
    ``"truncated-kl"`` (Chernoff on the samples capped at
    :func:`vfl.privacy.audit.truncation_level` of the claim's profile; for a
    claim without one, ``"kl"``; see :func:`vfl.privacy.audit.estimate_delta`),
    or ``"auto"``: per claim, the one that refutes at the smallest divergence
    for this ``K`` and the claim's delta (:func:`vfl.privacy.audit.choose_bound`,
    decided before any run).

    Claims: the guarantee (the ledger's ``(epsilon, delta)``), the paper's
    claim and the solver's other claims; and, for a Gaussian ledger, the
    guarantee's own profile at the epsilon where ``K`` runs have most
    power (:func:`vfl.privacy.audit.powerful_epsilon`), tested beside the
    printed point with the confidence split between the two (Bonferroni).
    ``noise_scale`` != 1 multiplies every noise scale of the audited runs while
    the claims stay the accountant's: a calibration of the audit's power (with
    noise at 0.33x, a sound audit must refute); the guarantee is void for it.
    """
    import math

    from vfl.privacy.audit import (AUDIT_METHODS, audit_verdict, choose_bound, gaussian_delta,
                                   powerful_epsilon, truncation_level)

    started = perf_counter()
    if bound != "auto" and bound not in AUDIT_METHODS:
        raise ConfigError(f"--bound must be auto or one of {', '.join(AUDIT_METHODS)}, got {bound!r}")
    if not (math.isfinite(noise_scale) and noise_scale > 0):
        raise ConfigError(f"--noise-scale must be a finite number > 0, got {noise_scale!r}")
    if not config.privacy.claims_guarantee:
        raise ConfigError(f"{config.name}: the run claims no privacy guarantee (set privacy.delta); "
                          "there is nothing to audit")
    if not AUDIT_RUNS[0] <= K <= MAX_AUDIT_RUNS:  # fewer mean nothing; more hold the losses in memory
        raise ConfigError(f"--runs must be in [{AUDIT_RUNS[0]}, {MAX_AUDIT_RUNS}], got {K}")
    if not 0.5 <= confidence < 1:  # NaN too
        raise ConfigError(f"--confidence must be in [0.5, 1), got {confidence}")
    plan = plan_run(config, data_dir)
    cls, data, objective = plan.solver_cls, plan.first.data, plan.first.objective
    T = config.solver.epochs
    seq = np.random.SeedSequence(seed, spawn_key=(7,))
    try:
        pairs = cls.neighbours(data, cls.typed_privacy(config.privacy.values),
                               np.random.default_rng(seq.spawn(1)[0]))
    except NotImplementedError as exc:
        raise ConfigError(str(exc)) from None
    shifts: dict = {}  # pair name -> its noiseless shift (loss, squares), once probed

    def shift_of(pair, D):
        if pair.name not in shifts:
            shifts[pair.name] = _shift(cls, config, D, pair.data, objective, T)
        return shifts[pair.name]

    candidates = [p for p in pairs if p.kind == "candidate"]
    if candidates and "adversarial" in kinds:
        pairs = [p for p in pairs if p.kind != "candidate"]
        pairs += _adversarial(cls, config, data, candidates, objective, T, shifts)
        pairs.sort(key=lambda p: (p.relation, p.unit, p.kind != "natural"))
    accounted = {"features": _ledger(config) is not None,
                 "labels": _label_ledger(config, cls) is not None}
    pairs = [p for p in pairs if p.kind in kinds and accounted.get(p.relation)][:max_pairs]
    if not pairs:
        raise ConfigError(f"{cls.name}: no neighbouring pair of the requested kinds")

    results, by_relation, mu = [], {}, {}
    alt = {}  # claim -> the mu (Gaussian, or a Laplace ledger's equivalent) its alternative scales
    clips, methods = {}, {}
    for n, pair in enumerate(pairs):
        rngs = [np.random.default_rng(s) for s in np.random.SeedSequence(seed, spawn_key=(8, n)).spawn(2 * K)]
        LP, LQ = np.empty(K), np.empty(K)
        D = _base(pair, data)
        for k in range(K):
            LP[k], (solver, ledger) = _one_direction(cls, config, D, pair.data, objective,
                                                     rngs[2 * k], T, noise_scale, pair.relation)
            LQ[k], _ = _one_direction(cls, config, pair.data, D, objective, rngs[2 * k + 1], T,
                                      noise_scale, pair.relation)
        if pair.relation not in by_relation:  # its claims, from its first pair's ledger
            claims, mu_r, alt = {}, {}, {}
            if ledger is not None and np.isfinite(ledger.epsilon()):
                claims["guarantee"] = (ledger.epsilon(), ledger.delta)
                if ledger.gaussian_only:
                    mu_r["guarantee"] = alt["guarantee"] = ledger.gaussian_mu()
            paper = solver.paper_epsilon() if pair.relation == "features" else None
            if paper is not None and np.isfinite(paper[0]):
                claims["paper"] = (float(paper[0]), float(paper[1]))
            for name, (eps, delta) in (solver.other_claims().items()
                                       if pair.relation == "features" else ()):
                if np.isfinite(eps):
                    claims[name] = (float(eps), float(delta))
            # the same accountant claims its whole curve: also test it where K runs have
            # most power (chosen from the ledger and K alone), Bonferroni-split with the
            # point. A printed epsilon of 0 (noise far above the sensitivity) still claims a
            # profile: search up to where a mu-GDP curve has most of its mass
            if "guarantee" in claims and "guarantee" in mu_r:
                top = max(claims["guarantee"][0], 4.0 * mu_r["guarantee"])
                e_star = powerful_epsilon(mu_r["guarantee"], K, top,
                                          1.0 - (1.0 - confidence) / 4.0)
                claims["profile"] = (e_star, gaussian_delta(e_star, 1.0 / mu_r["guarantee"]))
                mu_r["profile"] = alt["profile"] = mu_r["guarantee"]
            elif "guarantee" in claims and _l2_laplace(ledger):
                # Laplace charged in l2: its losses are close to those of a Gaussian of the
                # zCDP-equivalent mu, against which power is judged; the claim is the ledger's
                mu_eq = ledger.laplace_mu()
                top = max(claims["guarantee"][0], 4.0 * mu_eq)
                e_star = powerful_epsilon(mu_eq, K, top, 1.0 - (1.0 - confidence) / 4.0,
                                          claimed=ledger.delta_at)
                claims["profile"] = (e_star, float(ledger.delta_at(e_star)[0]))
                alt["guarantee"] = alt["profile"] = mu_eq
            # a claim with a profile may cap its samples where that profile, with the noise
            # off by 2x, puts almost none (truncated-kl); chosen from mu and K alone
            clips = {name: truncation_level(alt[name], K, claims[name][0]) for name in alt}
            methods = {name: (bound if bound != "auto" else
                              choose_bound(K, d, 1.0 - (1.0 - _level(name, claims, confidence)) / 2.0,
                                           clip=clips.get(name)))
                       for name, (_, d) in claims.items()}
            # without a profile there is nothing to cap at: truncated-kl is kl
            methods = {name: "kl" if m == "truncated-kl" and name not in clips else m
                       for name, m in methods.items()}
            if pair.relation == "labels":  # the label ledger's claims, named apart
                name_of = {"guarantee": "labels", "profile": "labels_profile"}
                claims = {name_of[k]: v for k, v in claims.items()}
                clips = {name_of[k]: v for k, v in clips.items()}
                methods = {name_of[k]: v for k, v in methods.items()}
                mu_r = {name_of[k]: v for k, v in mu_r.items()}
            mu.update(mu_r)
            by_relation[pair.relation] = (claims, clips, methods)
        claims, clips, methods = by_relation[pair.relation]
        bound_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(9, n)))
        verdicts = {name: audit_verdict(LP, LQ, eps, delta, _level(name, claims, confidence),
                                        method=methods[name], rng=bound_rng,
                                        clip=clips[name] if methods[name] == "truncated-kl"
                                        else None)
                    for name, (eps, delta) in claims.items()}
        exercised = float("nan")
        if ledger is not None and ledger.gaussian_only and ledger.gaussian_mu() > 0:
            # the noiseless shift of this pair against what the ledger charges (same units)
            exercised = math.sqrt(2.0 * shift_of(pair, D)[0]) / ledger.gaussian_mu()
        elif ledger is not None and _l2_laplace(ledger):
            # Laplace charged in l2: sqrt(sum ||mu - mu'||_2^2 / b^2) against sqrt(sum (Delta_2/b)^2)
            exercised = math.sqrt(shift_of(pair, D)[1]) / ledger.laplace_mu()
        elif ledger is not None and np.isfinite(ledger.pure_epsilon()) and ledger.pure_epsilon() > 0:
            # Laplace: the noiseless shift is sum ||mu - mu'||_1 / b, the charge sum Delta_1 / b
            exercised = shift_of(pair, D)[0] / ledger.pure_epsilon()
        results.append(PairAudit(pair.name, pair.kind, pair.change, LP, LQ, verdicts, exercised))
        if on_progress:
            summary = "; ".join(f"{c}: {v.verdict}" for c, v in verdicts.items())
            ratio = "" if not np.isfinite(exercised) else \
                f"; exercised/charged sensitivity {exercised:.3g}"
            on_progress(f"[{n + 1}/{len(pairs)}] {pair.name}: mean loss {LP.mean():.4g}{ratio}; "
                        f"{summary}")
    claims = {k: v for c, _, _ in by_relation.values() for k, v in c.items()}
    if not claims:
        raise ConfigError(f"{config.name}: no finite epsilon is claimed for this run")
    info = solver.privacy_info() or PrivacyInfo()
    meaning = info.other_claims_meaning or {}
    labels = {"guarantee": "the guarantee (enforced sensitivity)",
              "profile": "the guarantee's profile where the audit has most power (same ledger)",
              "paper": f"the paper's claim ({cls.paper_claim or 'its own analysis'})",
              "labels": "the label guarantee (one label flipped; enforced sensitivity)",
              "labels_profile": "the label guarantee's profile where the audit has most power",
              # the other claims' own words, up to their first colon (the short name)
              **{name: meaning.get(name, name).split(":")[0] for name in claims
                 if name not in ("guarantee", "paper", "profile", "labels", "labels_profile")}}
    return AuditReport(config=config, K=K, confidence=confidence, claims=claims, pairs=results,
                       gaussian_mu=mu, labels=labels, noise_scale=noise_scale,
                       mechanism=cls.title,
                       relation=stated_on(info.neighbouring or "", plan.cleaning),
                       seconds=perf_counter() - started)


def audit_table(root) -> "pd.DataFrame":
    """One row per audit found under ``root`` (every ``audit.json``, any depth): its guarantee.

    Columns: the config, the mechanism and its relation, the noise scale
    (1: as run; else a calibration), K and the wall time, the claimed
    ``(epsilon, delta)``, the verdict, the empirical lower bound on epsilon
    (the largest epsilon the audit refutes at the claimed delta, at the
    stated one-sided level) with its bound and the bound's cap on the samples
    (``clip``, 1 for none), the verdict of the guarantee's
    profile point, and the best pair's exercised / charged sensitivity.
    Sorted by config, then noise scale.
    """
    import pandas as pd

    from vfl.core.errors import DataError

    rows = []
    for path in sorted(Path(root).rglob("audit.json")):
        try:
            a = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: not a readable audit ({' '.join(str(exc).split())})") \
                from None
        if not isinstance(a, dict) or not set(_PROFILE) & set(a.get("claims") or {}):
            continue  # audits no guarantee: nothing to tabulate
        try:
            rows += [_table_row(a, path, claim) for claim in _PROFILE if claim in a["claims"]]
        except (KeyError, TypeError, IndexError) as exc:
            raise DataError(f"{path}: an audit without its {exc} field (written by another "
                            "vfl version? rerun vfl audit)") from None
    columns = ["config", "mechanism", "relation", "noise_scale", "K", "pairs", "seconds",
               "epsilon", "delta", "verdict", "epsilon_lower", "level", "bound", "clip",
               "profile_verdict", "exercised_over_charged", "directory"]
    table = pd.DataFrame(rows, columns=columns)
    return table.sort_values(["config", "noise_scale"], ascending=[True, False],
                             ignore_index=True)


def _table_row(a: dict, path: Path, name: str = "guarantee") -> dict:
    """One guarantee of an audit: the features' (``"guarantee"``) or the labels'."""
    from vfl.core.relations import LABELS

    claim = a["claims"][name]
    profile = a["verdicts"].get(_PROFILE[name])
    labels = name == "labels"
    return {"config": a["name"],
            "mechanism": a.get("mechanism", "") + (" (labels)" if labels else ""),
            "relation": str(LABELS) if labels else a.get("relation", ""),
            "noise_scale": a["noise_scale"],
            "K": a["K"], "pairs": a.get("pairs"), "seconds": a.get("seconds"),
            "epsilon": claim[0], "delta": claim[1],
            "verdict": a["verdicts"][name],
            "epsilon_lower": a["epsilon_refuted"][name],
            "level": a["levels"][name], "bound": a["bounds"][name],
            # truncated-kl's cap (1: none; audits before it had no cap)
            "clip": (a.get("clips") or {}).get(name, 1.0),
            "profile_verdict": profile,
            "exercised_over_charged": a.get("exercised_over_charged"),
            "directory": str(path.parent)}


def refuted_by_profile(row) -> bool:
    """A row of :func:`audit_table` refuted through its profile only: the claimed curve is
    refuted, while no epsilon above the printed one is (the printed point holds)."""
    return row["verdict"] == "REFUTED" and not row["epsilon_lower"] > row["epsilon"]


def audit_markdown(table) -> str:
    """The table of :func:`audit_table` as the Markdown README shows (one line per audit)."""
    def num(v, fmt):
        return "n/a" if v is None or v != v else format(v, fmt)

    lines = ["| config | mechanism | claimed (epsilon, delta) | noise | K x pairs | time | "
             "verdict | epsilon lower bound (level, bound) | exercised / charged |",
             "|---|---|---|---:|---:|---:|---|---:|---:|"]
    for _, r in table.iterrows():
        bound = _BOUND_NAMES.get(r["bound"], r["bound"])
        verdict = f"**{r['verdict']}**" if r["verdict"] == "REFUTED" else r["verdict"]
        if refuted_by_profile(r):
            verdict += " (its profile)"
        lines.append(
            f"| `{r['config']}` | {r['mechanism']} | ({num(r['epsilon'], '.3g')}, "
            f"{num(r['delta'], '.0e')}) | {'as run' if r['noise_scale'] == 1 else 'x ' + format(r['noise_scale'], 'g')} | "
            f"{r['K']} x {num(r['pairs'], 'd') if r['pairs'] == r['pairs'] else 'n/a'} | "
            f"{num(r['seconds'], '.0f')} s | {verdict} | "
            f"{num(r['epsilon_lower'], '.3g')} ({r['level']:.1%}, {bound}) | "
            f"{num(r['exercised_over_charged'], '.2f')} |")
    return "\n".join(lines) + "\n"


_BOUND_NAMES = {"kl": "Chernoff-KL", "clopper-pearson": "Clopper-Pearson",
                "truncated-kl": "truncated Chernoff-KL"}


def write_audit(report: AuditReport, out_dir, header: dict, figure=None) -> list[Path]:
    """Write an audit directory atomically: ``audit.csv`` (one row per pair and claim),
    ``losses.csv`` (every transcript's privacy loss), ``audit.json`` (``header`` and
    :meth:`AuditReport.summary`) and what ``figure(tmp)`` adds; returns the figure's files."""
    import pandas as pd

    from .records import dump_json, write_dir_atomic

    drawn: list[Path] = []

    def files(tmp: Path) -> None:
        pd.DataFrame(report.rows()).to_csv(tmp / "audit.csv", index=False, float_format="%.6g")
        pd.DataFrame({f"{p.name} | {d}": L for p in report.pairs
                      for d, L in (("D", p.losses_P), ("D'", p.losses_Q))}).to_csv(
            tmp / "losses.csv", index=False, float_format="%.8g")
        dump_json({**header, **report.summary()}, tmp / "audit.json")
        if figure is not None:
            drawn.extend(figure(tmp))

    out = write_dir_atomic(out_dir, [files], overwrite=True, what="audit directory")
    return [out / p.name for p in drawn]


def audit_lines(report: AuditReport) -> list[str]:
    """What ``vfl audit`` prints: the design, the exercised sensitivity, one line per claim."""
    lines = [f"audit of {report.config.name}: {len(report.pairs)} neighbouring pairs x {report.K} "
             f"runs x 2 directions, one-sided bounds at {report.confidence:.0%} per claim"]
    if report.noise_scale != 1.0:
        lines.append(f"  noise scaled by {report.noise_scale:g}: a calibration of the audit; the "
                     "guarantee is void for these runs")
    ratios = [p.exercised for p in report.pairs if np.isfinite(p.exercised)]
    if ratios:
        lines.append(f"  exercised / charged sensitivity, best pair: {max(ratios):.3g}")
    rows = report.rows()
    for claim, (eps, delta) in report.claims.items():
        lows = [r["delta_lower"] for r in rows if r["claim"] == claim]
        first = next(p.verdicts[claim] for p in report.pairs if claim in p.verdicts)
        named = _BOUND_NAMES[first.method] + \
            (f", samples capped at {first.clip:.3g}" if first.clip < 1 else "")
        lines.append(f"  {report.verdict(claim):8} {report.labels.get(claim, claim)}: "
                     f"({eps:.4g}, {delta:.2g})-DP; largest lower bound on delta(eps): "
                     f"{max(lows):.3g} ({named}); "
                     f"epsilon refuted up to {report.epsilon_refuted(claim):.3g}")
    return lines
