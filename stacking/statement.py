"""What private stacking states in the manifest: its description and its privacy statement,
with the neighbouring relation every epsilon refers to."""

from __future__ import annotations

import numpy as np

from vfl.core.typed_records import PrivacyInfo

from . import mechanism as mech
from . import randomized_response as lab
from .declarations import _SPLIT_KEYS

__all__ = ["NEIGHBOURS", "StackingStatement"]

#: The neighbouring relation every epsilon of this solver refers to.
NEIGHBOURS = (
    "datasets differing in one sample's feature vector in one passive party's block "
    "D_m (m >= 2), replaced by any vector of l2 norm <= 1 (rows are unit-normalized); "
    "labels and party 1's block are not protected by this relation"
)

_LABELS_NOTE = (
    "labels are not protected: party 1 sends them to every passive party, which fits "
    "its local model with them (ADMM sharing reveals them too: y and z reach every "
    "party each epoch)"
)


class StackingStatement:
    """The manifest's description and privacy statement (a mixin of the solver)."""

    # -- what the manifest says ---------------------------------------------------
    def describe(self) -> dict:
        return {
            "algorithm": "one round: passive local fits (eq. L), releases (O, S, Q), party-1 fusion (R1-R3, F)",
            "local_fit": f"Newton with line search to ||grad|| <= {mech.GTOL:g} (checked)",
            "fusion": (
                "product of experts (no shares released)"
                if self.private and self.split[1] == 0
                else "regression calibration (SURE ridge on D_1) + "
                "logistic fit on [D_1, s^] with prior N(1, prior_sd^2) on the weights"
            ),
            "lam_local": self.lam.tolist(),
            "base_rate_logit": self.m0,
            "messages_per_passive_party": {
                "labels_received": len(self.y),
                "model": [int(d) for d in self.passives.widths],
                "shares": len(self.y) if (not self.private or self.split[1] > 0) else 0,
            },
        }

    def label_guarantee(self) -> dict | None:
        """The label guarantee (towards the passive parties), or None without one."""
        return None if self.label_epsilon is None else lab.guarantee(self.label_epsilon)

    def privacy_info(self) -> PrivacyInfo | None:
        label = self.label_guarantee()
        note = (
            f"labels: {label['epsilon']:.6g}-label-DP towards the passive parties (randomized response)"
            if label
            else _LABELS_NOTE
        )
        if not self.private:
            return PrivacyInfo(
                **{
                    "mode": "non-private",
                    "dp_guarantee": False,
                    "note": "no noise on the features: non-private stacking (set privacy.delta "
                    "and privacy.epsilon for the private mechanism)",
                    "labels": note,
                    **({"label_guarantee": label} if label else {}),
                }
            )
        return PrivacyInfo(
            **{
                "mode": "accounting",
                "dp_guarantee": True,
                "neighbouring": NEIGHBOURS,
                "towards": "party 1 (it receives the passive parties' releases)",
                "labels": note,
                **({"label_guarantee": label} if label else {}),
                "protected_units": "each passive party m >= 2 (party 1 releases nothing)",
                "mechanism": (
                    "Gaussian, per passive party: x~_m = x_m + N(0, s_x^2 I) (output "
                    "perturbation; treated as public), t_m = clip(D_m x~_m, [-c, c]) + "
                    "N(0, s_s^2 I_N), moments (mean s, mean s^2) + N(0, s_q^2 I_2); "
                    "composed adaptively as one Gaussian (GDP)"
                ),
                "enforced": {
                    "rows_unit_norm": True,
                    "local_fit_gradient_tol": mech.GTOL,
                    "share_clip_c": self.clip,
                    "strong_convexity": "2 lam_m (sum form)",
                },
                "sensitivity": {
                    "model": "(1 + gtol) / lam_m"
                    if not self.q
                    else "(1 + q / (1 - 2q) + gtol) / lam_m (debiased loss)",
                    "shares": "2 c",
                    "moments": "max over u, v in [-c, c] of ||(u - v, u^2 - v^2)|| / N "
                    "(2 c / N up to c = 1.665; sqrt((2c - r)^2 (1 + r^2)) "
                    "/ N above, r = (c + sqrt(c^2 - 2)) / 2)",
                    "moments_value": float(mech.moments_sensitivity(self.clip, len(self.y))),
                },
                "epsilon_target": self.epsilon,
                "delta": self.delta,
                "accountant": self.accountant,
                "gdp_mu": self.mu,
                "split": dict(zip(_SPLIT_KEYS, self.split.tolist())),
                "lam_rule": (
                    None
                    if self.model_noise is None
                    else f"lam_m = max(lam_local, (1 + gtol) / ({self.model_noise:g} sqrt(f_model) mu))"
                ),
                "per_party": [
                    {
                        "party": int(m) + 1,
                        "lam": float(self.lam[j]),
                        **{f"sensitivity_{k}": float(self.sens[k][j]) for k in _SPLIT_KEYS},
                        **{
                            f"sigma_{k}": (float(self.sigma[k][j]) if np.isfinite(self.sigma[k][j]) else None)
                            for k in _SPLIT_KEYS
                        },
                    }
                    for j, m in enumerate(self.passive)
                ],
                "tuning": (
                    "hyper-parameters come from the config; `vfl reproduce private-utility` "
                    "chooses them on rows of the test file declared public "
                    "(partition.public), which the relation does not protect: the choice "
                    "costs no privacy"
                ),
            }
        )
