""":func:`audit_config`: the pairs, the runs, the claims and the verdicts of one audit."""

from __future__ import annotations

import math
from dataclasses import replace
from time import perf_counter
from typing import Callable

import numpy as np

from vfl.core.errors import ConfigError
from vfl.core.relations import stated_on

from ..config import AUDIT_RUNS, Config
from .report import AuditReport, PairAudit
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


def _streams(seed, *key, n):
    return [np.random.default_rng(s)
            for s in np.random.SeedSequence(seed, spawn_key=key).spawn(n)]


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
        runs = run_direction(direction, _base(pair, data), pair.data, T,
                             None if sampler else _streams(seed, 10, n, n=PILOT_RUNS),
                             [PILOT_RUNS] if direction.cls.audit_batch else [1] * PILOT_RUNS,
                             noise_scale=noise_scale, sampler=sampler, grid_bits=grid_bits)
        score = float(np.median(runs.squares))
        if pair.unit not in best or score > best[pair.unit][0]:
            best[pair.unit] = (score, pair)
    return [replace(pair, kind="adversarial",
                    name=pair.name.replace("(candidate)", "(adversarial: exercises most)"),
                    change=f"{pair.change}; of {sum(c.unit == u for c in candidates)} "
                           f"candidates, the one whose {PILOT_RUNS} pilot runs exercise most "
                           f"(median realised mu^2 {score:.3g})")
            for u, (score, pair) in sorted(best.items())]


def _claims(ledger, solver) -> dict:
    claims = {}
    if ledger is not None and np.isfinite(ledger.epsilon()):
        claims["guarantee"] = (ledger.epsilon(), ledger.delta)
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
    chosen.sort(key=lambda p: (p.unit, p.kind != "natural"))
    return [p for p in chosen if p.kind in kinds][:max_pairs]


def _first_per_unit(candidates):
    """The count's stand-in for the pilot: each unit's first candidate."""
    seen = {}
    for p in candidates:
        seen.setdefault(p.unit, replace(p, kind="adversarial"))
    return list(seen.values())


def audit_config(config: Config, *, data_dir=None, K: int = 100, confidence: float = 0.95,
                 seed: int = 0, kinds=("natural", "adversarial"), max_pairs: int | None = None,
                 on_progress: Callable[[str], None] | None = None,
                 noise_scale: float = 1.0, bound: str = "auto", sampler: str = "numpy",
                 batch: int | None = None) -> AuditReport:
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
    from vfl.core.sampling import GRID_BITS, ExactSampler
    from vfl.privacy.audit import (audit_verdict, choose_bound, family_level, gaussian_delta,
                                   gdp_bound, gdp_profile_verdict, gdp_verdict,
                                   powerful_epsilon, truncation_level)

    from ..runner import _ledger, plan_run

    started = perf_counter()
    if bound not in BOUNDS:
        raise ConfigError(f"--bound must be one of {', '.join(BOUNDS)}, got {bound!r}")
    if sampler not in SAMPLERS:
        raise ConfigError(f"--sampler must be one of {', '.join(SAMPLERS)}, got {sampler!r}")
    if not (math.isfinite(noise_scale) and noise_scale > 0):
        raise ConfigError(f"--noise-scale must be a finite number > 0, got {noise_scale!r}")
    if not config.privacy.claims_guarantee:
        raise ConfigError(f"{config.name}: the run claims no privacy guarantee (set privacy.delta); "
                          "there is nothing to audit")
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
        pairs = cls.neighbours(data, dict(config.privacy.values),
                               np.random.default_rng(seq.spawn(1)[0]))
    except NotImplementedError as exc:
        raise ConfigError(str(exc)) from None
    n_pairs = len(_select(pairs, kinds, max_pairs, _first_per_unit))
    if not n_pairs:
        raise ConfigError(f"{cls.name}: no neighbouring pair of the requested kinds")

    # the claims, the release sizes and what the estimators can test, from one noiseless
    # run: the ledger charges the enforced sensitivities, whatever the noise
    ledger = _ledger(config)
    probed = probe(direction, _base(pairs[0], data), pairs[0].data, T, ledger)
    claims = _claims(ledger, probed.solver)
    if not claims:
        raise ConfigError(f"{config.name}: no finite epsilon is claimed for this run")
    gaussian = ledger is not None and ledger.gaussian_only and ledger.gaussian_mu() > 0
    if bound == "gdp" and not gaussian:
        raise ConfigError(
            f"{config.name}: --bound gdp needs Gaussian releases, and this mechanism releases "
            "Laplace noise, whose privacy loss no realised mu fixes: use --bound auto, kl, "
            "clopper-pearson or truncated-kl")
    use_gdp = bound == "gdp" or (bound == "auto" and gaussian)

    # the profile a Gaussian (or l2-charged Laplace) ledger claims, and the family's levels
    mu, alt = {}, {}
    if gaussian:
        mu["guarantee"] = alt["guarantee"] = ledger.gaussian_mu()
    elif "guarantee" in claims and _l2_laplace(ledger):
        alt["guarantee"] = ledger.laplace_mu()
    if use_gdp:
        n_tests = 2 * n_pairs  # one bound (*) per pair and direction covers every claim
        if gaussian and "guarantee" in claims:
            claims["profile"] = claims["guarantee"]  # (its point is set by the runs)
            mu["profile"] = mu["guarantee"]
        level = family_level(confidence, n_pairs)
        family = {"pairs": n_pairs, "directions": 2, "claims": 1, "tests": n_tests,
                  "level": level,
                  "words": f"{n_pairs} pairs x 2 directions, one bound per direction "
                           f"covering every claim, each at {level:.4%}"}
    else:
        if "guarantee" in claims and "guarantee" in alt:
            level = family_level(confidence, n_pairs, len(claims) + 1)
            top = max(claims["guarantee"][0], 4.0 * alt["guarantee"])
            e_star = powerful_epsilon(alt["guarantee"], K, top, level,
                                      claimed=None if gaussian else ledger.delta_at)
            claims["profile"] = (e_star, float(gaussian_delta(e_star, 1.0 / mu["guarantee"]))
                                 if gaussian else float(ledger.delta_at(e_star)[0]))
            alt["profile"] = alt["guarantee"]
        n_tests = n_pairs * len(claims) * 2
        level = family_level(confidence, n_pairs, len(claims))
        family = {"pairs": n_pairs, "directions": 2, "claims": len(claims), "tests": n_tests,
                  "level": level,
                  "words": f"{n_pairs} pairs x 2 directions x {len(claims)} claims, each test "
                           f"at {level:.4%}"}
    _check_power(config, K, noise_scale, use_gdp, family, claims, alt, gaussian)
    sizes = chunks(K, bytes_per_run(probed.per_iteration), batch, config.name,
                   cls.audit_batch)

    # each unit's worst candidate, by a pilot at this noise scale
    pairs = _select(pairs, kinds, max_pairs, lambda c: _worst_candidates(
        direction, data, c, T, seed, noise_scale, exact, grid_bits))

    methods, clips = {}, {}
    if not use_gdp:
        clips = {name: truncation_level(alt[name], K, claims[name][0]) for name in alt}
        for name, (_, d) in claims.items():
            m = bound if bound != "auto" else choose_bound(K, d, family["level"],
                                                           clip=clips.get(name))
            methods[name] = "kl" if m == "truncated-kl" and name not in clips else m
    results = []
    for n, pair in enumerate(pairs):
        D = _base(pair, data)
        P = run_direction(direction, D, pair.data, T,
                          None if exact else _streams(seed, 8, n, 0, n=K), sizes,
                          noise_scale=noise_scale, sampler=exact, grid_bits=grid_bits)
        Q = run_direction(direction, pair.data, D, T,
                          None if exact else _streams(seed, 8, n, 1, n=K), sizes,
                          noise_scale=noise_scale, sampler=exact, grid_bits=grid_bits)
        audit = PairAudit.of(pair, P, Q)
        if use_gdp:
            bands = [gdp_bound(m, family["level"], losses=L)
                     for m, L in ((audit.mus_P, P.loss), (audit.mus_Q, Q.loss))]
            audit.checks = (bands[0].check, bands[1].check)
            audit.verdicts = {name: gdp_verdict(*bands, eps, d)
                              for name, (eps, d) in claims.items() if name != "profile"}
            if "profile" in claims:
                audit.verdicts["profile"] = gdp_profile_verdict(*bands, mu["profile"])
        else:
            bound_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(9, n)))
            audit.verdicts = {
                # (audit_verdict splits its level over the two directions)
                name: audit_verdict(P.loss, Q.loss, eps, d, 1.0 - 2.0 * (1.0 - family["level"]),
                                    method=methods[name], rng=bound_rng,
                                    clip=clips[name] if methods[name] == "truncated-kl"
                                    else None)
                for name, (eps, d) in claims.items()}
        audit.exercised = _exercised(ledger, P, Q, noise_scale)
        results.append(audit)
        if on_progress:
            summary = "; ".join(f"{c}: {v.verdict}" for c, v in audit.verdicts.items())
            ratio = "" if not np.isfinite(audit.exercised) else \
                f"; exercised/charged sensitivity {audit.exercised:.3g}"
            on_progress(f"[{n + 1}/{len(pairs)}] {pair.name}: mean loss {P.loss.mean():.4g}"
                        f"{ratio}; {summary}")
    if use_gdp and "profile" in claims:
        # the profile's point: where the pair that comes closest to (or beyond) the curve is
        top = max(results, key=lambda a: a.verdicts["profile"].forward.lower /
                  max(a.verdicts["profile"].delta, 1e-300))
        claims["profile"] = (top.verdicts["profile"].epsilon, top.verdicts["profile"].delta)
    solver = probed.solver
    meaning = (solver.privacy_info() or {}).get("other_claims_meaning", {})
    labels = {"guarantee": "the guarantee (enforced sensitivity)",
              "profile": ("the guarantee's whole curve (mu-GDP), at its smallest epsilon "
                          "refuted, else where the bound comes closest"
                          if use_gdp else
                          "the guarantee's profile where the audit has most power (same ledger)"),
              "paper": f"the paper's claim ({cls.paper_claim or 'its own analysis'})",
              # the other claims' own words, up to their first colon (the short name)
              **{name: meaning.get(name, name).split(":")[0] for name in claims
                 if name not in ("guarantee", "paper", "profile")}}
    info = solver.privacy_info() or {}
    return AuditReport(config=config, K=K, confidence=confidence, claims=claims, pairs=results,
                       gaussian_mu=mu, labels=labels, noise_scale=noise_scale,
                       mechanism=cls.title,
                       relation=stated_on(str(info.get("neighbouring", "")), plan.cleaning),
                       seconds=perf_counter() - started, family=family, sampler=sampler,
                       batches=sizes)


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
    from vfl.privacy.audit import gaussian_delta, refutation_threshold

    alpha = 1.0 - family["level"]
    if use_gdp:
        from vfl.privacy.audit import gdp_bound

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
                f"{need} or more")
        return
    if "guarantee" not in alt:
        return
    mu = alt["guarantee"]
    eps = np.linspace(1e-3, max(claims["guarantee"][0], 4.0 * mu / noise_scale), 200)
    reached = gaussian_delta(eps, noise_scale / mu)

    def powerful(k):
        claimed = gaussian_delta(eps, 1.0 / mu)
        return any(r > refutation_threshold(k, float(min(c, 1 - 1e-12)), 1.0 - alpha)
                   for r, c in zip(reached, claimed))

    if not powerful(K):
        need = K
        while need < MAX_AUDIT_RUNS and not powerful(need):
            need *= 2
        raise ConfigError(
            f"--noise-scale {noise_scale:g} with --runs {K}: a hockey-stick bound over {K} "
            f"runs cannot refute the guarantee even with the noise at {noise_scale:g} and "
            f"the whole sensitivity exercised; use --runs {need} or more"
            + ("" if not gaussian else ", or --bound gdp"))
