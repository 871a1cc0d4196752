"""Exact noise for deployment: discrete Gaussian and Laplace on a grid, from OS entropy.

Floating-point samplers leak through their low-order bits: the set of
values ``x + noise`` can take depends on ``x`` (Mironov 2012), so a
released float can tell neighbours apart whatever the epsilon. A deployment
run therefore releases only *integers*, drawn exactly:

- the value is put on a grid of step ``gamma = scale / 2^k`` by rounding,
  ``q = rint(x / gamma)`` (a deterministic function of the data, so rounding
  is part of the query: it moves ``q`` by at most 1/2 per coordinate, which
  :func:`grid_slack` adds to the sensitivity);
- integer noise is drawn exactly, with integer arithmetic only, by the
  rejection samplers of Canonne, Kamath & Steinke (NeurIPS 2020),
  Algorithms 1-3: ``Bernoulli(exp(-g))`` for rational ``g``, the discrete
  Laplace ``DLap(t)`` and the discrete Gaussian ``N_Z(0, sigma^2)``, here with
  ``sigma = t = 2^k`` so every probability is a ratio of 64-bit integers;
- the release is ``gamma * (q + Z)``: an injective, data-independent map of
  the integer ``q + Z`` (exact for ``|q + Z| < 2^53``).

Privacy of what is released: the discrete Gaussian's Renyi divergences equal
the continuous Gaussian's, ``alpha ||Delta||^2 / (2 sigma^2)`` (Canonne et al.,
Prop. 5 and Sec. 4), so the releases are composed by RDP with the grid's
sensitivity; the discrete Laplace is ``Delta_1 / b``-DP like the continuous
one. Randomness is ``os.urandom``; uniform integers are drawn by rejection,
without modulo bias. Everything is vectorized over the entries.
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["ExactSampler", "GRID_BITS", "grid_slack"]

#: the grid step is the noise scale / 2^GRID_BITS: fine enough that rounding adds
#: about 1e-6 sigma per coordinate to the sensitivity, coarse enough that every
#: probability of the samplers is a ratio of int64s
GRID_BITS = 20
_T = 1 << GRID_BITS
_EXACT = 2.0**53


def grid_slack(mechanism: str, scale, size: int, bits: int = GRID_BITS) -> np.ndarray:
    """What rounding to the grid adds to a release's sensitivity (l2 Gaussian, l1 Laplace).

    ``|rint(a/g) - rint(b/g)| <= |a - b| / g + 1`` per coordinate, so the
    integer query's sensitivity, back in the data's units, grows by at most
    ``g sqrt(size)`` (l2) or ``g size`` (l1), ``g = scale / 2^k``.
    """
    gamma = np.asarray(scale, dtype=float) / (1 << bits)
    return gamma * (math.sqrt(size) if mechanism == "gaussian" else float(size))


class ExactSampler:
    """Exact discrete noise from ``os.urandom`` (never replayable, never recorded).

    Stands in for a numpy Generator as a solver's noise stream in deployment
    runs: :func:`vfl.core.solver.add_noise` routes Gaussian and Laplace
    releases here; any other draw a solver makes from its stream (none does
    for a release that claims a guarantee) goes to a numpy Generator seeded
    from the same OS entropy.
    """

    exact = True

    def __init__(self, bits: int = GRID_BITS):
        if not 0 <= bits <= GRID_BITS:
            raise ValueError(f"bits must be in [0, {GRID_BITS}], got {bits}")
        self.T = 1 << bits  # sigma of the discrete Gaussian, scale of the discrete Laplace
        self._fallback = np.random.default_rng(np.random.SeedSequence())

    def __getattr__(self, name):
        return getattr(self._fallback, name)

    # -- uniform integers ----------------------------------------------------
    @staticmethod
    def _words(n: int) -> np.ndarray:
        return np.frombuffer(os.urandom(8 * n), dtype=np.uint64)

    def uniform(self, bound) -> np.ndarray:
        """Uniform integers in ``[0, bound)`` (``bound`` an int64 array, each < 2^62), exactly."""
        bound = np.asarray(bound, dtype=np.uint64)
        out = np.empty(bound.shape, dtype=np.uint64)
        todo = np.arange(bound.size)
        flat = bound.ravel()
        # accept a 64-bit word below the largest multiple of bound: no modulo bias
        limit = (np.uint64(2**64 - 1) // flat) * flat
        while todo.size:
            w = self._words(todo.size)
            ok = w < limit[todo]
            out.ravel()[todo[ok]] = w[ok] % flat[todo[ok]]
            todo = todo[~ok]
        return out.astype(np.int64)

    def bernoulli(self, num, den) -> np.ndarray:
        """``Bernoulli(num / den)`` for integer arrays ``0 <= num <= den``."""
        return self.uniform(den) < np.asarray(num, dtype=np.int64)

    def bernoulli_exp(self, num, den) -> np.ndarray:
        """``Bernoulli(exp(-num/den))`` for integer arrays (Canonne et al., Algorithm 1)."""
        num = np.asarray(num, dtype=np.int64)
        den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
        whole, frac = num // den, num % den
        out = np.ones(num.shape, dtype=bool)
        # exp(-g) = exp(-1)^floor(g) * exp(-(g - floor g)): every factor must come up 1
        for r in range(int(whole.max(initial=0))):
            live = out & (whole > r)
            if live.any():
                out[live] = self._exp_le_one(np.ones(int(live.sum()), np.int64),
                                             np.ones(int(live.sum()), np.int64))
        live = np.flatnonzero(out)
        if live.size:
            out[live] = self._exp_le_one(frac[live], den[live])
        return out

    def _exp_le_one(self, num, den) -> np.ndarray:
        """``Bernoulli(exp(-g))``, ``g = num/den`` in [0, 1]: the smallest K with A_K = 0, where
        ``A_K ~ Bernoulli(g / K)``, is odd with probability exp(-g)."""
        K = np.ones(num.shape, dtype=np.int64)
        running = np.ones(num.shape, dtype=bool)
        while running.any():
            i = np.flatnonzero(running)
            a = self.bernoulli(num[i], den[i] * K[i])
            K[i[a]] += 1
            running[i[~a]] = False
        return K % 2 == 1

    # -- discrete Laplace and Gaussian -----------------------------------------
    def discrete_laplace(self, n: int, t: int | None = None) -> np.ndarray:
        """``n`` draws of ``DLap(t)``: P(x) proportional to ``exp(-|x| / t)`` (Algorithm 2)."""
        t = self.T if t is None else int(t)
        out = np.empty(n, dtype=np.int64)
        todo = np.arange(n)
        while todo.size:
            m = todo.size
            U = self.uniform(np.full(m, t, np.int64))
            keep = self.bernoulli_exp(U, np.full(m, t, np.int64))
            V = np.zeros(m, dtype=np.int64)
            counting = keep.copy()
            while counting.any():  # V ~ Geometric: count exp(-1) successes until a failure
                i = np.flatnonzero(counting)
                more = self.bernoulli_exp(np.ones(i.size, np.int64), np.ones(i.size, np.int64))
                V[i[more]] += 1
                counting[i[~more]] = False
            X = U + t * V
            B = self.uniform(np.full(m, 2, np.int64)) == 1
            keep &= ~(B & (X == 0))
            out[todo[keep]] = np.where(B[keep], -X[keep], X[keep])
            todo = todo[~keep]
        return out

    def discrete_gaussian(self, n: int) -> np.ndarray:
        """``n`` draws of ``N_Z(0, sigma^2)`` with ``sigma = T`` (Algorithm 3 with ``t = sigma``:
        a DLap(sigma) proposal kept with probability ``exp(-(|Y| - sigma)^2 / (2 sigma^2))``)."""
        T = self.T
        out = np.empty(n, dtype=np.int64)
        todo = np.arange(n)
        den = 2 * T * T
        while todo.size:
            Y = self.discrete_laplace(todo.size, T)
            num = (np.abs(Y) - T) ** 2
            keep = self.bernoulli_exp(num, np.full(todo.size, den, np.int64))
            out[todo[keep]] = Y[keep]
            todo = todo[~keep]
        return out

    # -- releases ----------------------------------------------------------------
    def add(self, mechanism: str, mean: np.ndarray, scale) -> np.ndarray:
        """``mean`` on the grid plus exact noise of per-unit ``scale`` (rows of ``mean``)."""
        mean = np.asarray(mean, dtype=float)
        s = np.asarray(scale, dtype=float)
        s = s.reshape((-1,) + (1,) * (mean.ndim - 1)) if mean.ndim > 1 and s.ndim else s
        gamma = np.broadcast_to(s / self.T, mean.shape)
        q = mean / gamma
        if not np.all(np.abs(q) < _EXACT / 4):
            raise ValueError("a released value is too large for the exact sampler's grid "
                             f"(|value| / (scale / 2^{GRID_BITS}) must stay below 2^51)")
        q = np.rint(q).astype(np.int64)
        if mechanism == "gaussian":
            z = self.discrete_gaussian(mean.size)
        elif mechanism == "laplace":
            z = self.discrete_laplace(mean.size)
        else:
            raise ValueError(f"the exact sampler has no mechanism {mechanism!r}")
        return (q + z.reshape(mean.shape)).astype(float) * gamma
