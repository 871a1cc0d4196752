"""The privacy plan of an accounting-mode ADMM sharing run, as a typed record.

:func:`.accounting.plan_privacy` makes it once, before the run, from the
public sizes (the parties' widths ``d_m`` and ``N``) and the config; the
solver, the relation's words and the paper's claim read it. Symbols are
those of Hu et al. (2019): ``c`` the share clip, ``b1`` the ball of
Assumption 2.1, ``C_m`` Lemma 1's sensitivity, ``sigma_m`` the noise of
updates (10).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import Field

from vfl.core.typed_records import Num, Record

__all__ = ["PrivacyPlan"]


class PrivacyPlan(Record):
    """Sensitivities and sigmas of an accounting-mode run (before it starts)."""

    calibration: str = Field(description="privacy.calibration: what sigma is calibrated from")
    neighbours: str = Field(description="privacy.neighbours: the relation (column or row)")
    delta: Num = Field(description="delta of the target (epsilon, delta)")
    epsilon_target: Num | None = Field(description="privacy.epsilon; None: sigma given")
    epochs_planned: int = Field(description="T, the epochs the calibration composes")
    clip: Num = Field(description="c: every share D_m x_m clipped to [-c, c]")
    b1: Num | None = Field(description="b1: the ball x_m is kept in (Assumption 2.1)")
    input_clip: Num | None = Field(description="R: the pulled values' clip (row relation)")
    accountant: str = Field(description="the dp-accounting accountant (pld, rdp)")
    sound_sensitivity: np.ndarray = Field(description="Delta_m: the enforced l2 sensitivity of party m's share")
    lemma1_sensitivity: np.ndarray = Field(description="C_m of Lemma 1 (the paper's claim)")
    sigmas: np.ndarray = Field(description="sigma_m, the noise of updates (10); zeros when they follow the iterates")
    z: Num | None = Field(
        description="noise multiplier of a unit-sensitivity Gaussian over T "
        "epochs (data-dependent calibration), else None"
    )
    release_sensitivity: np.ndarray = Field(
        description="what the Release events record as enforced (NaN: nothing sound)"
    )
    rho: Num = Field(description="rho, the penalty (scaled per party when asked)")
    lam: Num = Field(description="lam, the regularization weight")
    widths: list[int] = Field(description="d_m, the parties' column counts (public)")
    rho_range: tuple[Num | None, Num | None] = Field(
        description="[rho_min, rho_max] the run may use (None: no bound given)"
    )
    x_rho_scale: int = Field(description="the x-update's penalty over rho: M (Boyd), else 1")
    relation: Any = Field(description="the NeighbouringRelation strategy (.relations)")
    calibrator: Any = Field(description="the Calibration strategy (.accounting)")
