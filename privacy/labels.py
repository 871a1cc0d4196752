"""Label DP by Gaussian noise on label-dependent messages: calibration and the guarantee's words.

A message whose entry i is the only one that depends on sample i's label
(an ADMM pull, an FDML derivative), clipped to ``[-L, L]`` entry by entry,
moves by at most ``2 L`` in l2 when that label flips: Gaussian noise of
standard deviation ``sigma`` per entry is then a Gaussian mechanism of
sensitivity ``2 L`` under :data:`~vfl.core.relations.LABELS`. ``T`` such
releases (epochs: a sample's entry in one message per epoch and receiver
group) compose to the ``(epsilon, delta)`` that :func:`label_sigma` calibrates
(:func:`vfl.privacy.calibrate_sigma`).
"""

from __future__ import annotations

from vfl.core.relations import LABELS

from .accountant import calibrate_sigma

__all__ = ["label_guarantee", "label_sigma"]


def label_sigma(epsilon: float, delta: float, releases: int, clip: float, accountant: str = "pld") -> float:
    """The noise per entry whose ``releases``-fold composition, each of l2 sensitivity
    ``2 clip``, is (epsilon, delta)-label-DP."""
    if not clip > 0:
        raise ValueError(f"the label clip L must be > 0, got {clip!r}")
    return calibrate_sigma(epsilon, delta, int(releases), 2.0 * clip, accountant)


def label_guarantee(epsilon: float, delta: float, mechanism: str, enforced: dict[str, object]) -> dict[str, object]:
    """The manifest's ``label_guarantee``: the relation, its target and how it is enforced."""
    return {**LABELS.describe(), "epsilon": epsilon, "delta": delta, "mechanism": mechanism, "enforced": enforced}
