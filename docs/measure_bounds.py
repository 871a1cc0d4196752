"""The bounds beside the audit table that no audit can refute (``python docs/measure.py
ceiling``): what any neighbouring pair can exercise of privacy-a9a's column bound
(CEILING_CSV), and the total variation dp-admm-alg2's ledger claims and its audited pair
reaches (TV_CSV)."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from vfl.admm.sharing.iteration import ADMMSharing
from vfl.core.streams import Streams
from vfl.experiments.audit import Probe, Recorder
from vfl.experiments.config import load_config
from vfl.experiments.distribution import Prepared
from vfl.experiments.repeat_setup import _build, _ledger
from vfl.experiments.run_plan import plan_run
from vfl.privacy.audit.bounds import _kl as bernoulli_kl
from vfl.privacy.sharing import column_sensitivity

REPO = Path(__file__).resolve().parents[1]
AUDITS_PNG = REPO / "docs" / "figures" / "audits" / "audits.png"
AUDIT_LOW_SCALE = 0.5
CEILING_CSV = REPO / "docs" / "figures" / "audits" / "ceiling.csv"
TV_CSV = REPO / "docs" / "figures" / "audits" / "tv.csv"


def measure_ceiling(seeds=(0, 1, 2)) -> Path:
    """How much of the column bound ANY neighbouring pair can exercise along the histories of
    papers/hu/configs/privacy-a9a.toml, as run and at AUDIT_LOW_SCALE, into CEILING_CSV.

    Party m's share is ``clip(D_m x_m)`` with ``D_m x_m = t A r``, ``0 <= t <= 1`` (the ball)
    and ``0 <= A <= I / rho`` (the x-update of (6)); every such point lies in the ball of
    diameter ``[0, r / rho]`` (Thales), and the clip is 1-Lipschitz, so under any change of
    ``D_m`` the teacher-forced release means differ by at most ``||r|| / rho``, whatever the
    pair. Over the epochs the pair's GDP mu is at most ``rms_t ||r_t|| / rho / sigma``: the
    rows give that ceiling over the charged ``2 min(c, b1) sqrt(N)``, on the run's own data
    and on the audit's canary bases, with the largest and the rms entry of ``r`` (what a clip
    of the pulled values to ``[-R, R]``, which would bound ``||r||``, would cut).
    """

    config = load_config(REPO / "papers" / "hu" / "configs" / "privacy-a9a.toml")
    plan = plan_run(config, None)
    cls, data, objective = plan.solver_cls, plan.first.data, plan.first.objective
    privacy = dict(config.privacy.values)
    pulled = []
    original = ADMMSharing._pull

    def watch(self, m, *args, **kwargs):
        r = original(self, m, *args, **kwargs)
        pulled.append((m, float(np.linalg.norm(r)) / self.x_rho, float(np.abs(r).max()), float(np.mean(r * r))))
        return r

    bases = [("the run's data", data, s) for s in seeds]
    for pair in cls.neighbours(data, privacy, np.random.default_rng(0)):
        if pair.base is not None and pair.unit not in {b[0] for b in bases}:
            bases.append((pair.unit, pair.base, seeds[0]))
    rows = []
    ADMMSharing._pull = watch
    try:
        for base, D, seed in bases:
            for scale in (1.0, AUDIT_LOW_SCALE):
                pulled.clear()
                solver = _build(
                    cls,
                    config,
                    Prepared(data=D, test=None, y_test=None, y_train=None, distribution={}, objective=objective),
                    Streams(config.run.seed, replayable_noise=True),
                )
                solver.observer = Recorder(1, [np.random.default_rng(seed)], scale, batched=False)
                for _ in range(config.solver.epochs):
                    solver.step()
                charged = column_sensitivity(len(solver.b), privacy["clip"], privacy["b1"])
                for m in sorted({p[0] for p in pulled}):
                    norm, top, square = np.array([p[1:] for p in pulled if p[0] == m]).T
                    rows.append(
                        {
                            "config": config.name,
                            "base": base if isinstance(base, str) else f"canary of party {base + 1}",
                            "noise_scale": scale,
                            "seed": seed,
                            "party": m + 1,
                            "rms_over_charged": math.sqrt(np.mean(norm**2)) / charged,
                            "max_over_charged": norm.max() / charged,
                            # the pulled entries |r_i|: what a clip [-R, R] would cut
                            "pulled_entry_max": top.max(),
                            "pulled_entry_rms": math.sqrt(np.mean(square)),
                        }
                    )
    finally:
        ADMMSharing._pull = original
    tmp = CEILING_CSV.with_name(f".{CEILING_CSV.name}.partial")
    pd.DataFrame(rows).to_csv(tmp, index=False, float_format="%.6g")
    os.replace(tmp, CEILING_CSV)
    return CEILING_CSV


def measure_tv() -> Path:
    """papers/dp_admm/configs/dp-admm-alg2.toml: the total variation its ledger claims and the
    one its audited pair reaches, as run and at AUDIT_LOW_SCALE, into TV_CSV.

    The ledger is mu-GDP; the pair exercises the fraction ``exercised_over_charged`` of it
    (audits.csv), so at scale S its transcripts are ``(exercised mu / S)``-GDP, whose total
    variation ``2 Phi(mu / 2) - 1`` is the largest delta at any epsilon >= 0. ``runs_needed``:
    the draws per direction at which a Chernoff (relative entropy) bound at the audit's level
    could separate the two, ``log(1 / alpha) / KL(claimed || reached)``.
    """

    config = load_config(REPO / "papers" / "dp_admm" / "configs" / "dp-admm-alg2.toml")
    plan = plan_run(config, None)
    solver = _build(plan.solver_cls, config, plan.first, Streams(config.run.seed, replayable_noise=True))
    solver.observer = Probe()  # noiseless: the ledger's charges do not depend on the noise
    ledger = _ledger(config)
    for _ in range(config.solver.epochs):
        solver.step()
        ledger.add(solver.releases())
    audits = pd.read_csv(AUDITS_PNG.with_suffix(".csv"))
    rows = audits[audits["config"] == config.name]
    exercised = float(rows.loc[rows["noise_scale"] == 1, "exercised_over_charged"].iloc[0])
    level = float(rows["level"].iloc[0])
    mu = ledger.gaussian_mu()
    claimed = 2.0 * norm.cdf(mu / 2.0) - 1.0

    out = []
    for scale in (1.0, AUDIT_LOW_SCALE):
        reached = 2.0 * norm.cdf(exercised * mu / scale / 2.0) - 1.0
        out.append(
            {
                "config": config.name,
                "noise_scale": scale,
                "epsilon": ledger.epsilon(),
                "delta": ledger.delta,
                "gaussian_mu": mu,
                "exercised_over_charged": exercised,
                "claimed_tv": claimed,
                "reached_tv": reached,
                "runs_needed": math.ceil(math.log(1.0 / (1.0 - level)) / float(bernoulli_kl(claimed, reached)))
                if reached > claimed
                else np.nan,
            }
        )
    tmp = TV_CSV.with_name(f".{TV_CSV.name}.partial")
    pd.DataFrame(out).to_csv(tmp, index=False, float_format="%.6g")
    os.replace(tmp, TV_CSV)
    return TV_CSV
