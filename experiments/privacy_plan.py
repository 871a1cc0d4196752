"""Privacy accounting of one ADMM-sharing run, planned before it starts.

In accounting mode (``privacy.delta`` set) every party m publishes, each
epoch, its share plus ``N(0, sigma_m^2 I)``: a Gaussian mechanism whose l2
sensitivity is bounded by Lemma 1 of Hu et al., ``C_m``. The plan fixes
``sigma_m`` (given, or calibrated from ``privacy.epsilon``) and the epsilon
spent after each epoch under two analyses:

- ``epsilon_paper``: Theorem 1 per iteration, composed by Corollary 1
  (eq. (11)); total delta ``t * delta + delta'``;
- ``epsilon_tight``: the composition of the same Gaussian mechanisms by the
  configured accountant (PLD when the config says "paper"), at the same
  total delta as the paper's so the two are comparable; for ``pld``/``rdp``
  configs, at ``delta`` (the target).

The run's guarantee is the worst party's: columns hold the max over parties.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vfl.privacy import (
    NEIGHBOURING,
    calibrate_sigma,
    corollary1,
    epsilon_of,
    gaussian_events,
    lemma1_sensitivity,
    theorem1_epsilon,
    theorem1_sigma,
)

from .config import Config
from vfl.core.errors import ConfigError

__all__ = ["PrivacyPlan", "plan_privacy"]


@dataclass
class PrivacyPlan:
    sensitivities: np.ndarray  # C_m, Lemma 1
    sigmas: np.ndarray  # sigma_m
    epsilon_paper: np.ndarray  # (T,) after epochs 1..T, max over parties
    delta_paper: np.ndarray  # (T,) t * delta + delta'
    epsilon_tight: np.ndarray  # (T,)
    delta_tight: np.ndarray  # (T,)
    tight_accountant: str

    def describe(self, config: Config) -> dict:
        pv = config.privacy
        data_dependent = pv.sensitivity == "data_dependent"
        return {
            "dp_guarantee": not data_dependent,
            **({"warning": "data-dependent sensitivity (the authors' prototype): sigma is scaled by "
                           "the current iterates, so it depends on the private data; the epsilons "
                           "below are NOT a differential-privacy guarantee"} if data_dependent else {}),
            "neighbouring": NEIGHBOURING,
            "mechanism": "Gaussian on each party's share: D_m x_m + N(0, sigma_m^2 I_N), every epoch",
            "assumption_2": {
                "rows_normalized": True,
                "x_ball_radius_b1": pv.b1,
                "c1": 2.0,
                "note": "x_m is projected onto the b1-ball after each x-update; ||y||, ||z|| are "
                        "recorded per epoch (y_norm, z_norm), not enforced",
            },
            "sensitivity": (
                "data-dependent: Lemma 1 with b1 -> max(||y||, ||s - D_m x_m||, ||x_m||) each epoch; "
                "sigma_m(t) = z * C_m(t) (per-epoch sigmas in metrics.csv)" if data_dependent else
                "Lemma 1: C_m = 3 / (d_m rho) (lam c1 + (1 + M rho) b1)"),
            "calibration": (
                "given sigma" if pv.epsilon is None else
                f"Theorem 1 per iteration, epsilon = {pv.epsilon:g}" if pv.accountant == "paper" else
                f"{pv.accountant} accountant, total epsilon = {pv.epsilon:g} over "
                f"{config.solver.epochs} epochs"),
            "delta": pv.delta,
            "delta_prime": delta_prime(config),
            "per_party": [{"party": m + 1, "sensitivity": None if data_dependent else float(c),
                           "sigma": None if data_dependent else float(s),
                           "noise_multiplier": float(s / c)}
                          for m, (c, s) in enumerate(zip(self.sensitivities, self.sigmas))],
            "tight_accountant": self.tight_accountant,
            "planned": self.spent(len(self.epsilon_paper)),
        }

    def spent(self, epochs: int) -> dict:
        """Epsilon and delta after ``epochs`` epochs, under both analyses."""
        if epochs == 0:
            return {"epochs": 0, "epsilon_paper": 0.0, "delta_paper": 0.0,
                    "epsilon_tight": 0.0, "delta_tight": 0.0}
        i = epochs - 1
        return {"epochs": epochs,
                "epsilon_paper": _float(self.epsilon_paper[i]), "delta_paper": float(self.delta_paper[i]),
                "epsilon_tight": _float(self.epsilon_tight[i]), "delta_tight": float(self.delta_tight[i])}


def _float(v) -> float | None:
    return None if np.isnan(v) else float(v)


def delta_prime(config: Config) -> float:
    pv = config.privacy
    return pv.delta if pv.delta_prime is None else pv.delta_prime


def plan_privacy(config: Config, widths: list[int]) -> PrivacyPlan:
    """Sensitivities, sigmas and per-epoch epsilons for ``config``'s run.

    ``widths`` are the parties' block widths ``d_m`` (intercept included).
    """
    pv, T, M = config.privacy, config.solver.epochs, len(widths)
    delta, dprime = pv.delta, delta_prime(config)
    try:
        if pv.sensitivity == "data_dependent":
            # sigma_m(t) = z * C_m(t) is set every epoch by the runner; the
            # epsilons only depend on z = sigma / C, so plan with C = 1.
            C = np.ones(M)
        else:
            C = np.array([lemma1_sensitivity(d, config.solver.rho, config.objective.lam, M, pv.b1)
                          for d in widths])
        if pv.epsilon is None:
            sigmas = np.full(M, pv.sigma)
        elif pv.accountant == "paper":
            sigmas = np.array([theorem1_sigma(pv.epsilon, delta, c) for c in C])
        else:
            sigmas = np.array([calibrate_sigma(pv.epsilon, delta, T, c, accountant=pv.accountant)
                               for c in C])
    except ValueError as exc:
        raise ConfigError(f"privacy: {exc}") from None
    if np.any(sigmas <= 0):
        raise ConfigError("privacy.delta is set (accounting mode) but sigma is 0: "
                          "give privacy.sigma > 0 or privacy.epsilon")

    t = np.arange(1, T + 1)
    delta_paper = t * delta + dprime
    per_party = []
    for c, s in zip(C, sigmas):
        e = theorem1_epsilon(s, delta, c)
        # Theorem 1 needs a per-iteration epsilon in (0, 1]; beyond it the
        # paper's analysis says nothing (NaN), rather than something wrong.
        per_party.append(np.array([corollary1(e, k, delta, dprime)[0] for k in t]) if e <= 1
                         else np.full(T, np.nan))
    eps_paper = np.max(per_party, axis=0)  # NaN if any party has no paper guarantee

    accountant = "pld" if pv.accountant == "paper" else pv.accountant
    delta_tight = delta_paper if pv.accountant == "paper" else np.full(T, delta)
    # t Gaussian mechanisms with the same z compose exactly to one Gaussian
    # with z / sqrt(t) (no subsampling), so each epoch is one cheap event.
    eps_tight = np.max([
        [epsilon_of(gaussian_events([float(s / c) / np.sqrt(k)]), d, accountant)
         for k, d in zip(t, delta_tight)]
        for c, s in zip(C, sigmas)], axis=0)
    return PrivacyPlan(C, sigmas, eps_paper, delta_paper, eps_tight, delta_tight, accountant)
