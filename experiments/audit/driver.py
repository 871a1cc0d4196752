""":func:`audit_config`: the pairs, the runs, the claims and the verdicts of one audit."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from time import perf_counter, process_time

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.relations import stated_on
from vfl.core.sampling import GRID_BITS, ExactSampler
from vfl.core.typed_records import PrivacyInfo
from vfl.privacy.audit import (
    audit_verdict,
    choose_bound,
    family_level,
    gaussian_delta,
    gdp_bound,
    gdp_profile_verdict,
    gdp_verdict,
    powerful_epsilon,
    refutation_threshold,
    truncation_level,
)

from ..config import Config
from ..config_sections import AUDIT_RUNS
from ..repeat_setup import _label_ledger, _ledger
from ..run_plan import plan_run
from .report import GUARANTEE_NAMES, AuditReport, PairAudit
from .transcripts import Direction, bytes_per_run, chunks, probe, run_direction

__all__ = ["BOUNDS", "MAX_AUDIT_RUNS", "SAMPLERS", "audit_config"]

#: independent draws per pair and direction: beyond this the losses alone fill gigabytes
MAX_AUDIT_RUNS = AUDIT_RUNS[1]
#: the estimators ``--bound`` takes (``auto``: GDP for Gaussian releases, else the
#: hockey-stick bound with most power per claim)
BOUNDS = ("auto", "gdp", "kl", "clopper-pearson", "truncated-kl")
SAMPLERS = ("numpy", "exact")
#: runs per candidate in the pilot that picks each unit's worst candidate
PILOT_RUNS = 4


def _base(pair, data):
    """The pair's D: its crafted base, or the run's own data."""
    return data if pair.base is None else pair.base


def _l2_laplace(ledger) -> bool:
    """Laplace releases only, every one charged in l2 (:meth:`PrivacyLedger.laplace_mu`)."""
    return ledger.laplace and ledger.gaussian_mu() == 0 and 0 < ledger.laplace_mu() < np.inf


def _batched(cls, config) -> bool:
    """Whether the runs go through the mechanism together: the solver's kernels carry the
    runs' axis (``audit_batch``) for its feature releases; a run that also releases labels
    (passive parties fitting on each run's own noisy labels) goes one run at a time."""
    return bool(cls.audit_batch) and not cls.claims_label_guarantee(config.privacy.values)


def _streams(seed, *key, n):
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed, spawn_key=key).spawn(n)]


def _worst_candidates(direction, data, candidates, T, seed, noise_scale, sampler, grid_bits):
    """Per unit, the candidate whose runs exercise most, relabelled adversarial.

    Each candidate runs :data:`PILOT_RUNS` times at the audit's noise scale, on streams of
    its own (spawn key 10): the choice is independent of the audit's runs, so every bound
    stays valid. Scored by the median realised ``mu^2`` (Gaussian; for Laplace releases their
    l2 analogue): what the mechanism's noisy histories exercise, not a noiseless probe's
    (for ADMM sharing on a9a the two differed threefold).
    """
    best = {}
    for n, pair in enumerate(candidates):
        batched = _batched(direction.cls, direction.config)
        runs = run_direction(
            direction,
            _base(pair, data),
            pair.data,
            T,
            None if sampler else _streams(seed, 10, n, n=PILOT_RUNS),
            [PILOT_RUNS] if batched else [1] * PILOT_RUNS,
            noise_scale=noise_scale,
            sampler=sampler,
            grid_bits=grid_bits,
            batched=batched,
        )
        score = float(np.median(runs.squares))
        key = (pair.relation, pair.unit)  # per relation and unit
        if key not in best or score > best[key][0]:
            best[key] = (score, pair)
    return [
        replace(
            pair,
            kind="adversarial",
            name=pair.name.replace("(candidate)", "(adversarial: exercises most)"),
            change=f"{pair.change}; of "
            f"{sum((c.relation, c.unit) == u for c in candidates)} "
            f"candidates, the one whose {PILOT_RUNS} pilot runs exercise most "
            f"(median realised mu^2 {score:.3g})",
        )
        for u, (score, pair) in sorted(best.items(), key=lambda kv: kv[0])
    ]


def _claims(ledger, solver=None) -> dict:
    """The claims one relation's audit tests: its ledger's guarantee, and for the features
    (``solver`` given) the paper's and the solver's other claims."""
    claims = {}
    if ledger is not None and np.isfinite(ledger.epsilon()):
        claims["guarantee"] = (ledger.epsilon(), ledger.delta)
    if solver is None:
        return claims
    paper = solver.paper_epsilon()
    if paper is not None and np.isfinite(paper[0]):
        claims["paper"] = (float(paper[0]), float(paper[1]))
    for name, (eps, delta) in solver.other_claims().items():
        if np.isfinite(eps):
            claims[name] = (float(eps), float(delta))
    return claims


def _select(pairs, kinds, max_pairs, pick):
    """The audited pairs: the non-candidates, and per unit with candidates the one ``pick``
    returns (relabelled adversarial); natural first per unit, then ``kinds``, ``max_pairs``."""
    candidates = [p for p in pairs if p.kind == "candidate"]
    chosen = [p for p in pairs if p.kind != "candidate"]
    if candidates and "adversarial" in kinds:
        chosen += pick(candidates)
    chosen.sort(key=lambda p: (p.relation, p.unit, p.kind != "natural"))
    return [p for p in chosen if p.kind in kinds][:max_pairs]


def _first_per_unit(candidates):
    """The count's stand-in for the pilot: each unit's first candidate."""
    seen = {}
    for p in candidates:
        seen.setdefault((p.relation, p.unit), replace(p, kind="adversarial"))
    return list(seen.values())


def audit_config(
    config: Config,
    *,
    data_dir=None,
    K: int = 100,
    confidence: float = 0.95,
    seed: int = 0,
    kinds=("natural", "adversarial"),
    max_pairs: int | None = None,
    on_progress: Callable[[str], None] | None = None,
    noise_scale: float = 1.0,
    bound: str = "auto",
    sampler: str = "numpy",
    batch: int | None = None,
) -> AuditReport:
    """Audit every privacy claim of ``config``'s mechanism (see the package docstring).

    ``bound``: ``"gdp"`` (Gaussian releases: the realised-mu estimator of
    :mod:`vfl.privacy.audit.gdp`), one of the hockey-stick bounds ``"kl"``,
    ``"clopper-pearson"``, ``"truncated-kl"`` (:func:`vfl.privacy.audit.estimate_delta`),
    or ``"auto"``: GDP when every release is Gaussian, else per claim the
    hockey-stick bound that refutes at the smallest divergence for this ``K``
    (:func:`vfl.privacy.audit.choose_bound`, decided before any run).

    ``confidence`` holds over the whole family: every pair, both directions and (for
    the hockey-stick bounds, which test each claim separately) every claim, by
    Bonferroni. ``noise_scale`` != 1 multiplies every noise scale of the audited runs
    while the claims stay the accountant's (a calibration: the guarantee is void
    for it). ``sampler="exact"`` draws the deployed exact noise on its grid.
    ``batch``: runs per chunk (default: as many as a memory budget holds).
    """

    started, cpu_started = perf_counter(), process_time()
    if bound not in BOUNDS:
        raise ConfigError(f"--bound must be one of {', '.join(BOUNDS)}, got {bound!r}")
    if sampler not in SAMPLERS:
        raise ConfigError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if not (math.isfinite(noise_scale) and noise_scale > 0):
        raise ConfigError(f"--noise-scale must be a finite number > 0, got {noise_scale!r}")
    if not config.privacy.claims_guarantee:
        raise ConfigError(
            f"{config.name}: the run claims no privacy guarantee (set privacy.delta); there is nothing to audit"
        )
    if not AUDIT_RUNS[0] <= K <= MAX_AUDIT_RUNS:  # fewer mean nothing; more hold the losses in memory
        raise ConfigError(f"--runs must be in [{AUDIT_RUNS[0]}, {MAX_AUDIT_RUNS}], got {K}")
    if not 0.5 <= confidence < 1:  # NaN too
        raise ConfigError(f"--confidence must be in [0.5, 1), got {confidence}")
    if batch is not None and batch < 2:
        raise ConfigError(f"--batch must be at least 2 (runs per chunk), got {batch}")
    plan = plan_run(config, data_dir)
    cls, data, objective = plan.solver_cls, plan.first.data, plan.first.objective
    T = config.solver.epochs
    direction = Direction(cls, config, objective)
    exact = ExactSampler() if sampler == "exact" else None
    grid_bits = GRID_BITS if exact is not None else None
    seq = np.random.SeedSequence(seed, spawn_key=(7,))
    try:
        pairs = cls.neighbours(data, cls.typed_privacy(config.privacy.values), np.random.default_rng(seq.spawn(1)[0]))
    except NotImplementedError as exc:
        raise ConfigError(str(exc)) from None
    # each relation with a ledger is audited against it: the features' and the labels'
    ledgers = {"features": _ledger(config), "labels": _label_ledger(config, cls)}
    pairs = [p for p in pairs if ledgers.get(p.relation) is not None]
    counted = _select(pairs, kinds, max_pairs, _first_per_unit)
    if not counted:
        raise ConfigError(f"{cls.name}: no neighbouring pair of the requested kinds")

    # per relation, the claims, the release sizes and what the estimators can test, from one
    # noiseless run: a ledger charges the enforced sensitivities, whatever the noise
    plans = {}
    for relation in dict.fromkeys(p.relation for p in counted):
        first = next(p for p in counted if p.relation == relation)
        ledger = ledgers[relation]
        probed = probe(direction, _base(first, data), first.data, T, ledger)
        plans[relation] = _Plan.of(
            relation, ledger, probed, bound, config.name, sum(p.relation == relation for p in counted)
        )
    if not any(p.claims for p in plans.values()):
        raise ConfigError(f"{config.name}: no finite epsilon is claimed for this run")
    # the family: every pair, both directions and each claim a test counts once
    units = sum(p.n_pairs * p.tested for p in plans.values())
    level = family_level(confidence, units)
    family = {
        "pairs": len(counted),
        "directions": 2,
        "claims": max(p.tested for p in plans.values()),
        "tests": 2 * units,
        "level": level,
        "words": "; ".join(p.words(level) for p in plans.values()),
    }
    for p in plans.values():
        p.finish(K, level, bound)
        _check_power(config, K, noise_scale, p.use_gdp, family, p.claims, p.alt, p.gaussian)
    sizes = {
        r: chunks(K, bytes_per_run(p.per_iteration), batch, config.name, _batched(cls, config))
        for r, p in plans.items()
    }

    # each unit's worst candidate, by a pilot at this noise scale
    pairs = _select(
        pairs, kinds, max_pairs, lambda c: _worst_candidates(direction, data, c, T, seed, noise_scale, exact, grid_bits)
    )

    results = []
    for n, pair in enumerate(pairs):
        p = plans[pair.relation]
        D = _base(pair, data)
        batched = _batched(cls, config)
        P = run_direction(
            direction,
            D,
            pair.data,
            T,
            None if exact else _streams(seed, 8, n, 0, n=K),
            sizes[pair.relation],
            noise_scale=noise_scale,
            sampler=exact,
            grid_bits=grid_bits,
            batched=batched,
        )
        Q = run_direction(
            direction,
            pair.data,
            D,
            T,
            None if exact else _streams(seed, 8, n, 1, n=K),
            sizes[pair.relation],
            noise_scale=noise_scale,
            sampler=exact,
            grid_bits=grid_bits,
            batched=batched,
        )
        audit = PairAudit.of(pair, P, Q)
        if p.use_gdp:
            bands = [gdp_bound(m, level, losses=L) for m, L in ((audit.mus_P, P.loss), (audit.mus_Q, Q.loss))]
            audit.checks = (bands[0].check, bands[1].check)
            verdicts = {name: gdp_verdict(*bands, eps, d) for name, (eps, d) in p.claims.items() if name != "profile"}
            if "profile" in p.claims:
                verdicts["profile"] = gdp_profile_verdict(*bands, p.mu["profile"])
        else:
            bound_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(9, n)))
            verdicts = {
                # (audit_verdict splits its level over the two directions)
                name: audit_verdict(
                    P.loss,
                    Q.loss,
                    eps,
                    d,
                    1.0 - 2.0 * (1.0 - level),
                    method=p.methods[name],
                    rng=bound_rng,
                    clip=p.clips[name] if p.methods[name] == "truncated-kl" else None,
                )
                for name, (eps, d) in p.claims.items()
            }
        audit.verdicts = p.named(verdicts)
        audit.exercised = _exercised(p.ledger, P, Q, noise_scale)
        results.append(audit)
        if on_progress:
            summary = "; ".join(f"{c}: {v.verdict}" for c, v in audit.verdicts.items())
            ratio = "" if not np.isfinite(audit.exercised) else f"; exercised/charged sensitivity {audit.exercised:.3g}"
            on_progress(f"[{n + 1}/{len(pairs)}] {pair.name}: mean loss {P.loss.mean():.4g}{ratio}; {summary}")
    claims, mu = {}, {}
    for p in plans.values():
        if p.use_gdp and "profile" in p.claims:
            # the profile's point: where the pair that comes closest to (or beyond) the curve is
            name = p.named({"profile": None}).popitem()[0]
            top = max(
                (a for a in results if name in a.verdicts),
                key=lambda a: a.verdicts[name].forward.lower / max(a.verdicts[name].delta, 1e-300),
            )
            p.claims["profile"] = (top.verdicts[name].epsilon, top.verdicts[name].delta)
        claims.update(p.named(p.claims))
        mu.update(p.named(p.mu))
    solver = (plans.get("features") or next(iter(plans.values()))).solver
    info = solver.privacy_info() or PrivacyInfo()
    meaning = info.other_claims_meaning or {}
    gdp = plans.get("features") is not None and plans["features"].use_gdp
    labels = {
        "guarantee": "the guarantee (enforced sensitivity)",
        "profile": (
            "the guarantee's whole curve (mu-GDP), at its smallest epsilon refuted, else where the bound comes closest"
            if gdp
            else "the guarantee's profile where the audit has most power (same ledger)"
        ),
        "paper": f"the paper's claim ({cls.paper_claim or 'its own analysis'})",
        "labels": "the label guarantee (one label flipped; enforced sensitivity)",
        "labels_profile": "the label guarantee's profile where the audit has most power",
        # the other claims' own words, up to their first colon (the short name)
        **{
            name: meaning.get(name, name).split(":")[0]
            for name in claims
            if name not in ("guarantee", "paper", "profile", "labels", "labels_profile")
        },
    }
    return AuditReport(
        config=config,
        K=K,
        confidence=confidence,
        claims=claims,
        pairs=results,
        gaussian_mu=mu,
        labels=labels,
        noise_scale=noise_scale,
        mechanism=cls.title,
        relation=stated_on(info.neighbouring or "", plan.cleaning),
        seconds=perf_counter() - started,
        cpu_seconds=process_time() - cpu_started,
        family=family,
        sampler=sampler,
        batches=sizes.get("features", next(iter(sizes.values()))),
    )


class _Plan:
    """One relation's part of an audit: its ledger and claims, the profile its ledger claims,
    and how each claim is tested (GDP, or a hockey-stick bound per claim)."""

    def __init__(self, relation, ledger, probed, claims, gaussian, use_gdp, n_pairs):
        self.relation, self.ledger, self.solver = relation, ledger, probed.solver
        self.per_iteration, self.claims, self.n_pairs = probed.per_iteration, claims, n_pairs
        self.gaussian, self.use_gdp = gaussian, use_gdp
        self.mu, self.alt, self.methods, self.clips = {}, {}, {}, {}
        if gaussian:
            self.mu["guarantee"] = self.alt["guarantee"] = ledger.gaussian_mu()
        elif "guarantee" in claims and _l2_laplace(ledger):
            self.alt["guarantee"] = ledger.laplace_mu()
        #: claims tested separately: one GDP bound covers every claim; a hockey-stick bound
        #: tests each, and the profile when the ledger claims one
        self.tested = 1 if use_gdp else len(claims) + ("guarantee" in claims and "guarantee" in self.alt)

    @classmethod
    def of(cls, relation, ledger, probed, bound, name, n_pairs):
        claims = _claims(ledger, probed.solver if relation == "features" else None)
        gaussian = ledger is not None and ledger.gaussian_only and ledger.gaussian_mu() > 0
        if bound == "gdp" and not gaussian and claims:
            raise ConfigError(
                f"{name}: --bound gdp needs Gaussian releases, and this mechanism's "
                f"{relation} releases are not Gaussian (Laplace noise or randomized response), "
                "whose privacy loss no realised mu fixes: use --bound auto, kl, "
                "clopper-pearson or truncated-kl"
            )
        return cls(
            relation, ledger, probed, claims, gaussian, bound == "gdp" or (bound == "auto" and gaussian), n_pairs
        )

    def words(self, level) -> str:
        what = "" if self.relation == "features" else f" ({self.relation})"
        if self.use_gdp:
            return (
                f"{self.n_pairs} pairs{what} x 2 directions, one bound per direction "
                f"covering every claim, each at {level:.4%}"
            )
        return f"{self.n_pairs} pairs{what} x 2 directions x {self.tested} claims, each test at {level:.4%}"

    def finish(self, K, level, bound) -> None:
        """The profile the ledger claims and each claim's bound, from ``K`` and the level."""

        claims, mu, alt = self.claims, self.mu, self.alt
        if self.use_gdp:
            if self.gaussian and "guarantee" in claims:
                claims["profile"] = claims["guarantee"]  # (its point is set by the runs)
                mu["profile"] = mu["guarantee"]
            return
        if "guarantee" in claims and "guarantee" in alt:
            top = max(claims["guarantee"][0], 4.0 * alt["guarantee"])
            e_star = powerful_epsilon(
                alt["guarantee"], K, top, level, claimed=None if self.gaussian else self.ledger.delta_at
            )
            claims["profile"] = (
                e_star,
                float(gaussian_delta(e_star, 1.0 / mu["guarantee"]))
                if self.gaussian
                else float(self.ledger.delta_at(e_star)[0]),
            )
            alt["profile"] = alt["guarantee"]
        self.clips = {name: truncation_level(alt[name], K, claims[name][0]) for name in alt}
        for name, (_, d) in claims.items():
            m = bound if bound != "auto" else choose_bound(K, d, level, clip=self.clips.get(name))
            self.methods[name] = "kl" if m == "truncated-kl" and name not in self.clips else m

    def named(self, by_claim: dict) -> dict:
        """``by_claim`` with the label relation's claims named apart (``labels``, ...)."""
        if self.relation == "features":
            return dict(by_claim)
        return {GUARANTEE_NAMES[k]: v for k, v in by_claim.items()}


def _exercised(ledger, P, Q, noise_scale) -> float:
    """The median over the pair's runs of the sensitivity exercised over the one charged."""
    if ledger is None:
        return float("nan")
    root = np.sqrt(np.concatenate([P.squares, Q.squares])) * noise_scale
    if ledger.gaussian_only and ledger.gaussian_mu() > 0:
        return float(np.median(root)) / ledger.gaussian_mu()
    if _l2_laplace(ledger):
        return float(np.median(root)) / ledger.laplace_mu()
    return float("nan")


def _check_power(config, K, noise_scale, use_gdp, family, claims, alt, gaussian) -> None:
    """A calibration (``noise_scale`` < 1) must be able to refute: refuse in one line a ``K``
    too small to, with the smallest that is not."""
    if noise_scale >= 1.0 or "guarantee" not in claims:
        return

    alpha = 1.0 - family["level"]
    if use_gdp:

        def factor(k):  # (*)'s factor on the smallest realised mu, for k runs
            return float(gdp_bound(np.ones(k), family["level"]).factors[0])

        if factor(K) < 0.5:  # the bound must keep at least half of delta at its smallest mu
            need = K
            while factor(need) < 0.5:
                need += 1
            raise ConfigError(
                f"--noise-scale {noise_scale:g} with --runs {K}: the GDP bound over {K} runs "
                f"per direction keeps {factor(K):.0%} of delta at their smallest realised mu "
                f"at the family's level ({family['level']:.4%}), less than half; use --runs "
                f"{need} or more"
            )
        return
    if "guarantee" not in alt:
        return
    mu = alt["guarantee"]
    eps = np.linspace(1e-3, max(claims["guarantee"][0], 4.0 * mu / noise_scale), 200)
    reached = gaussian_delta(eps, noise_scale / mu)

    def powerful(k):
        claimed = gaussian_delta(eps, 1.0 / mu)
        return any(r > refutation_threshold(k, float(min(c, 1 - 1e-12)), 1.0 - alpha) for r, c in zip(reached, claimed))

    if not powerful(K):
        need = K
        while need < MAX_AUDIT_RUNS and not powerful(need):
            need *= 2
        raise ConfigError(
            f"--noise-scale {noise_scale:g} with --runs {K}: a hockey-stick bound over {K} "
            f"runs cannot refute the guarantee even with the noise at {noise_scale:g} and "
            f"the whole sensitivity exercised; use --runs {need} or more" + ("" if not gaussian else ", or --bound gdp")
        )
