"""What private stacking declares to the runner: its parameters, its config checks, and the
noise each passive party's releases carry (:class:`~vfl.stacking.private_stacking.PrivateStacking`)."""

from __future__ import annotations

import numpy as np

from vfl.core.params import Param

from . import mechanism as mech
from . import randomized_response as lab

#: the releases of a passive party, in the order of ``privacy.split``
_SPLIT_KEYS = ("model", "shares", "moments")


class StackingDeclarations:
    """The parameters and the declarations the runner reads (a mixin of the solver)."""

    params = (
        Param(
            "lam_local",
            float,
            1.0,
            "lam_m: l2 weight of each passive party's local model "
            "(sum form); the floor of the rule when privacy.model_noise is set",
            low=0,
            low_open=True,
        ),
        Param("lam1", float, 1.0, "l2 weight of party 1's own local model (sum form)", low=0, low_open=True),
        Param(
            "prior_sd",
            float,
            0.5,
            "standard deviation of the Gaussian prior N(1, sd^2) on every stacking weight (1: the product of experts)",
            low=0,
            low_open=True,
        ),
    )
    privacy_params = (
        Param(
            "delta",
            float,
            None,
            "delta of the guarantee; setting it turns on the privacy mechanism",
            low=0,
            high=1,
            low_open=True,
            high_open=True,
        ),
        Param(
            "epsilon",
            float,
            None,
            "target epsilon of the whole round, per passive party (needs delta)",
            low=0,
            low_open=True,
        ),
        Param(
            "clip", float, 2.0, "c: shares are clipped to [-c, c] (released and at prediction)", low=0, low_open=True
        ),
        Param(
            "split",
            list,
            [0.5, 0.48, 0.02],
            "budget split [model, shares, moments]: fractions of mu^2, summing to 1",
            low=0,
        ),
        Param(
            "model_noise",
            float,
            None,
            "rule for lam_m: the released model's noise standard "
            "deviation per coordinate (lam_m = max(lam_local, (1 + gtol) / (model_noise "
            "sqrt(f_model) mu)))",
            low=0,
            low_open=True,
        ),
        Param(
            "accountant",
            str,
            "pld",
            "dp-accounting accountant of the calibration and the "
            "ledger (a deployment run, exact discrete noise, uses and requires rdp)",
            choices=("pld", "rdp"),
        ),
        Param(
            "label_epsilon",
            float,
            None,
            "label DP towards the passive parties: the labels "
            "reach them through randomized response at this epsilon (pure, delta 0), and "
            "they fit with the debiased loss",
            low=0,
            low_open=True,
        ),
    )

    # -- declarations the runner reads ------------------------------------------
    @classmethod
    def check_config(cls, params, privacy, iterations):
        p = cls.typed_privacy(privacy)
        if iterations != 1:
            raise ValueError(f"private_stacking releases once, in one round: set solver.epochs = 1 (got {iterations})")
        split = p.split
        if len(split) != 3:
            raise ValueError(f"privacy.split needs 3 fractions [model, shares, moments], got {len(split)}")
        if abs(sum(split) - 1.0) > 1e-9:
            raise ValueError(f"privacy.split must sum to 1, got {split} (sum {sum(split):.6g})")
        if split[0] <= 0:
            raise ValueError(
                "privacy.split[0] (the model) must be > 0: the local models are released, so they must be perturbed"
            )
        if split[1] == 0 and split[2] > 0:
            raise ValueError(
                "privacy.split[2] > 0 spends budget on share moments, which are used only with shares (split[1] = 0)"
            )
        if p.delta is None:
            for key in ("epsilon", "model_noise"):
                if getattr(p, key) is not None:
                    raise ValueError(f"privacy.{key} needs privacy.delta (the private mechanism)")
        elif p.epsilon is None:
            raise ValueError("privacy.delta needs privacy.epsilon: the target that calibrates the noise")

    @classmethod
    def unit_rows(cls, privacy) -> bool:
        return cls.typed_privacy(privacy).delta is not None

    @classmethod
    def claims_guarantee(cls, privacy) -> bool:
        p = cls.typed_privacy(privacy)
        return p.delta is not None or p.label_epsilon is not None

    @classmethod
    def unit_noise(cls, widths, N, objective, params, privacy, iterations):
        """Per party (party 1, the coordinator, releases nothing of this kind: NaN), the
        noise scale and enforced sensitivity of each release the round uses (its model, its
        shares, their moments: those with a share of the budget), by the calibration the
        solver makes (:func:`.mechanism.calibrate`): what a passive party service checks requests
        against, from its own config."""
        params, privacy = cls.typed_params(params), cls.typed_privacy(privacy)
        K = len(widths) - 1
        split = np.asarray(privacy.split, dtype=float)
        _, _, sens, sigma = mech.calibrate(
            K,
            int(N),
            epsilon=privacy.epsilon,
            delta=privacy.delta,
            accountant=privacy.accountant,
            lam_local=params.lam_local,
            model_noise=privacy.model_noise,
            split=split,
            clip=float(privacy.clip),
            gradient_bound=lab.gradient_bound(lab.flip_rate(privacy.label_epsilon)),
        )
        used = [k for k, f in zip(_SPLIT_KEYS, split) if f > 0]
        sigmas = np.full((K + 1, len(used)), np.nan)
        sensitivities = np.full((K + 1, len(used)), np.nan)
        for j, k in enumerate(used):
            sigmas[1:, j], sensitivities[1:, j] = sigma[k], sens[k]
        return sigmas, sensitivities
