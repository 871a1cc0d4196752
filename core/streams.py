"""The independent random streams of one run, derived from its seed (or drawn exactly)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .sampling import ExactSampler

__all__ = ["STREAM_KEYS", "Streams"]


#: Integer stream keys (numpy ``SeedSequence`` spawn keys) per purpose. They
#: are part of the records' meaning: changing them changes every replayed run.
STREAM_KEYS = {"noise": 0, "init": 1, "batch": 2, "split": 3, "graph": 4, "x0": 5, "random": 6, "audit": 7, "tuning": 8}


@dataclass
class Streams:
    """Independent random streams of one run (one repeat), derived from its seed.

    Each purpose has its own ``SeedSequence(seed, spawn_key=(key, ...))``
    child, so a change in one (say, batching) does not shift another (the
    noise). Repeat ``r > 0`` appends ``r`` to every key, repeat 0 is the
    single run. Noise streams are replayable from the seed only when
    ``replayable_noise``; otherwise they come from OS entropy, are recorded
    as such, and cannot be replayed from anything in the run directory.
    """

    seed: int
    repeat: int = 0
    replayable_noise: bool = True
    #: a deployment run's noise streams are exact samplers (:mod:`vfl.core.sampling`)
    exact_noise: bool = False
    _entropy: np.random.SeedSequence | None = field(default=None, repr=False)

    def _key(self, *key: int) -> tuple[int, ...]:
        return key if self.repeat == 0 else (*key, self.repeat)

    def get(self, purpose: str, *sub: int) -> np.random.Generator:
        """The seeded stream for ``purpose`` (see :data:`STREAM_KEYS`), e.g. ``get("init")``."""
        if purpose == "noise":
            # a deployment's exact sampler draws noise as a Generator would (its ``add``)
            return self.noise(*sub)  # type: ignore[return-value]
        seq = np.random.SeedSequence(self.seed, spawn_key=self._key(STREAM_KEYS[purpose], *sub))
        return np.random.default_rng(seq)

    def noise(self, *unit: int) -> np.random.Generator | ExactSampler:
        """The noise stream of one unit (``noise(m)``) or of all units at once (``noise()``)."""
        if self.replayable_noise:
            seq = np.random.SeedSequence(self.seed, spawn_key=self._key(STREAM_KEYS["noise"], *unit))
        elif self.exact_noise:
            return ExactSampler()
        else:
            if self._entropy is None:
                self._entropy = np.random.SeedSequence()  # fresh OS entropy, never recorded
            seq = np.random.SeedSequence(self._entropy.entropy, spawn_key=(*unit,))
        return np.random.default_rng(seq)

    def describe(self) -> dict[str, str]:
        if self.replayable_noise:
            return {
                "noise": "replayable: SeedSequence(seed, spawn_key=(0, unit...)); this run is a "
                "simulation whose noise anyone with the manifest can regenerate, "
                "drawn by numpy's floating-point sampler: its epsilon is for "
                "analysis only"
            }
        if self.exact_noise:
            return {
                "noise": "exact discrete Gaussian / Laplace on a grid of step scale / 2^20 "
                "(each scale grown by about 1e-4 or less so that the rounding is "
                "charged at the calibrated epsilon), "
                "exact rejection sampling in integer arithmetic on a ChaCha20 "
                "keystream keyed from os.urandom, fixed work per candidate so "
                "that the time does not track the values (vfl.core.sampling): it "
                "cannot be replayed, and it is safe against floating-point "
                "attacks (Mironov 2012) and timing attacks (Jin et al. 2022)"
            }
        return {
            "noise": "OS entropy (numpy SeedSequence() with no seed), not recorded: the noise "
            "cannot be replayed from this run directory"
        }
