"""Exact noise for deployment: discrete Gaussian and Laplace on a grid, in time that does not
track the value drawn.

Floating-point samplers leak through their low-order bits: the set of
values ``x + noise`` can take depends on ``x`` (Mironov 2012), so a
released float can tell neighbours apart whatever the epsilon. A deployment
run therefore releases only *integers*, drawn exactly:

- the value is put on a grid of step ``gamma = scale / 2^k`` by rounding,
  ``q = rint(x / gamma)`` (a deterministic function of the data, so rounding
  is part of the query: it moves ``q`` by at most 1/2 per coordinate, which
  :func:`grid_slack` adds to the sensitivity);
- integer noise ``Z`` is drawn exactly from the discrete Gaussian
  ``N_Z(0, T^2)`` or the discrete Laplace ``DLap(T)``, ``T = 2^k``
  (Canonne, Kamath & Steinke, NeurIPS 2020, Def. 1), by the rejection
  sampler of :mod:`vfl.core.exact` with integer arithmetic and lazily
  compared exact constants only: no probability is ever a float;
- the release is ``gamma * (q + Z)``: an injective, data-independent map of
  the integer ``q + Z`` (exact for ``|q + Z| < 2^53``).

**Time.** Since ``q + Z`` is released, a draw whose time tracks ``|Z|``
tells an observer who times a small release about ``q`` (Jin et al. 2022).
The sampler of Canonne et al. does: its geometric loop, its ``floor(g)``
loop and its von Neumann chains run longer for larger ``|Z|``. Here every
candidate of a round costs the same fixed, vectorized work whatever its
value (:class:`vfl.core.exact.Blocks`), and a round's size depends on the
number of values asked for alone. The number of rounds, and which
candidates are accepted, are independent of the accepted values (a property
of rejection sampling), so the time of a draw depends on its values only
through events of probability at most ``6 * 2^-64`` per value (about
``2^-61.4``): in the candidate that gives the value, a 64-bit word equal to
a constant's 64-bit expansion (then more words of both are compared) or a
proposal beyond ``10 T`` (Gaussian) or ``48 T`` (Laplace), which take a
slower exact path. The same events in the other candidates of a round are
independent of the values kept.

**Randomness** is a ChaCha20 keystream (the construction of the kernel's
``getrandom``) keyed with 32 bytes of ``os.urandom`` per sampler and
re-keyed every 2^30 bytes; ``source="urandom"`` reads ``os.urandom`` in
large blocks instead. Nothing is recorded and nothing can be replayed.

Privacy of what is released: the discrete Gaussian's Renyi divergences equal
the continuous Gaussian's, ``alpha ||Delta||^2 / (2 sigma^2)`` for integer
shifts (Canonne et al., Prop. 5 and Sec. 4), so the releases
are composed by RDP with the grid's sensitivity; the discrete Laplace is
``Delta_1 / b``-DP like the continuous one.
"""

from __future__ import annotations

import math
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .arrays import BoolArray, FloatArray, IntArray
from .exact import Blocks, ExpFactors, blocks, exp_factors

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers import CipherContext

#: ``n -> n`` uniform 64-bit words
Words = Callable[[int], npt.NDArray[np.uint64]]

__all__ = ["ExactSampler", "GRID_BITS", "RR_BITS", "grid_slack", "randomized_response", "rr_epsilon"]

#: the grid step is the noise scale / 2^GRID_BITS: fine enough that rounding adds
#: about 1e-6 sigma per coordinate to the sensitivity, coarse enough that every
#: integer the sampler handles fits an int64
GRID_BITS = 20
_EXACT = 2.0**53


#: randomized response runs at ``epsilon`` rounded down to the grid ``2^-RR_BITS`` (an exact
#: Bernoulli needs a dyadic exponent); the ledger charges the rounded value
RR_BITS = 40


def rr_epsilon(epsilon: float) -> tuple[int, float]:
    """``(n, n / 2^RR_BITS)``, ``n = floor(epsilon 2^RR_BITS)``: the epsilon RR runs at."""
    if not (np.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"a label epsilon must be a finite number > 0, got {epsilon!r}")
    n = math.floor(float(epsilon) * 2.0**RR_BITS)
    return n, n / 2.0**RR_BITS


def randomized_response(labels: npt.ArrayLike, epsilon: float, rng: np.random.Generator | ExactSampler) -> np.ndarray:
    """Warner's randomized response on labels in {-1, +1}: each kept with probability
    ``e^eps / (1 + e^eps)``, flipped otherwise (epsilon-label-DP, one release of all of
    them; ``eps`` on the grid of :func:`rr_epsilon`). An exact sampler (deployment) draws
    the flips exactly (:meth:`ExactSampler.rr_flips`), a Generator by floats (simulation)."""
    y = np.asarray(labels)
    n, eps = rr_epsilon(epsilon)
    if isinstance(rng, ExactSampler):
        flips = rng.rr_flips(y.size, n, RR_BITS).reshape(y.shape)
    else:
        flips = rng.random(y.shape) < 1.0 / (1.0 + math.exp(eps))
    return np.where(flips, -y, y).astype(y.dtype)


def grid_slack(mechanism: str, scale: npt.ArrayLike, size: int, bits: int = GRID_BITS) -> FloatArray:
    """What rounding to the grid adds to a release's sensitivity (l2 Gaussian, l1 Laplace).

    ``|rint(a/g) - rint(b/g)| <= |a - b| / g + 1`` per coordinate, so the
    integer query's sensitivity, back in the data's units, grows by at most
    ``g sqrt(size)`` (l2) or ``g size`` (l1), ``g = scale / 2^k``.
    """
    gamma = np.asarray(scale, dtype=float) / (1 << bits)
    return gamma * (math.sqrt(size) if mechanism == "gaussian" else float(size))


class KeyStream:
    """Uniform 64-bit words: a ChaCha20 keystream keyed from ``os.urandom`` (``"chacha20"``)
    or ``os.urandom`` itself (``"urandom"``). A call's words live in a buffer that the next
    call overwrites (no fresh memory per release)."""

    REKEY_BYTES = 1 << 30

    def __init__(self, source: str = "chacha20"):
        if source not in ("chacha20", "urandom"):
            raise ValueError(f"source must be 'chacha20' or 'urandom', got {source!r}")
        self.source = source
        self._out = np.empty(0, dtype=np.uint64)
        self._zeros = b""
        self._cipher: CipherContext | None = None
        self._used = 0

    def _rekey(self) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms  # lazy: start-up (cryptography, 30 ms)

        # a fresh key; the 4-byte block counter from 0 (RFC 7539), a random 12-byte nonce
        nonce = bytes(4) + os.urandom(12)
        self._cipher = Cipher(algorithms.ChaCha20(os.urandom(32), nonce), mode=None).encryptor()
        self._used = 0

    def __call__(self, n: int) -> npt.NDArray[np.uint64]:
        if self._out.size < n:
            self._out = np.empty(max(n, 1024), dtype=np.uint64)
        buf = self._out.data.cast("B")[: 8 * n]
        if self.source == "urandom":
            buf[:] = os.urandom(8 * n)
        else:
            if self._cipher is None or self._used + 8 * n > self.REKEY_BYTES:
                self._rekey()
            assert self._cipher is not None  # _rekey set it
            if len(self._zeros) < 8 * n:
                self._zeros = bytes(8 * n)
            self._cipher.update_into(memoryview(self._zeros)[: 8 * n], buf)
            self._used += 8 * n
        return self._out[:n]


class ExactSampler:
    """Exact discrete noise in value-independent time (never replayable, never recorded).

    Stands in for a numpy Generator as a solver's noise stream in deployment
    runs: :func:`vfl.core.releases.add_noise` routes Gaussian and Laplace
    releases here; any other draw a solver makes from its stream (none does
    for a release that claims a guarantee) goes to a numpy Generator seeded
    from OS entropy.

    ``bits``: ``T = 2^bits`` is the discrete Gaussian's sigma and the discrete
    Laplace's scale in grid units (smaller ``bits`` for tests). ``words``: a
    callable ``n -> n uint64 words`` replacing the keystream (tests inject
    chosen words). ``pool``: draw each release's noise again, in a background
    thread, for the next release of the same mechanism and size (the noise is
    independent of the data, so a party can draw it while it waits); each
    pooled vector is used once.
    """

    exact = True

    def __init__(
        self, bits: int = GRID_BITS, *, source: str = "chacha20", words: Words | None = None, pool: bool = False
    ):
        if not 0 <= bits <= GRID_BITS:
            raise ValueError(f"bits must be in [0, {GRID_BITS}], got {bits}")
        self.bits = bits
        self.T = 1 << bits  # sigma of the discrete Gaussian, scale of the discrete Laplace
        self._words: Words = KeyStream(source) if words is None else words
        self._fallback = np.random.default_rng(np.random.SeedSequence())
        self._pool = _Pool(bits, source) if pool else None

    def __getattr__(self, name: str) -> Any:
        # any other draw goes to the Generator this sampler stands in for: its type is
        # that method's (the Generator's whole surface, so Any here)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._fallback, name)

    def __reduce__(self) -> tuple[type[ExactSampler], tuple[int], dict[str, bool]]:
        # a copy (another process) gets a fresh sampler: key material never travels
        return (ExactSampler, (self.bits,), {"_pool_wanted": self._pool is not None})

    def __setstate__(self, state: dict[str, bool]) -> None:
        if state.get("_pool_wanted"):
            self._pool = _Pool(self.bits, "chacha20")

    # -- the building block ----------------------------------------------------
    def bernoulli_exp(self, n: npt.ArrayLike, e: int = 0) -> BoolArray:
        """``Bernoulli(exp(-n / 2^e))`` for integers ``0 <= n < 2^62``, ``0 <= e <= 62``, in
        fixed work per entry: one 64-bit word per 11 bits of ``n`` (:class:`ExpFactors`)."""
        n = np.asarray(n, dtype=np.int64)
        if not 0 <= e <= 62 or np.any(n < 0) or np.any(n >= 1 << 62):
            raise ValueError("bernoulli_exp needs 0 <= n < 2^62 and 0 <= e <= 62")
        factors: ExpFactors = exp_factors(e, 62)
        flat = n.ravel()
        words = self._words(len(factors.groups) * flat.size).reshape(len(factors.groups), flat.size)
        ok, tie = factors.fast(flat, words)
        ties = np.flatnonzero(tie)
        tied = words[:, ties].copy()  # before _word() reuses the buffer
        for j, i in enumerate(ties):
            ok[i] = factors.exact(int(flat[i]), [int(w) for w in tied[:, j]], self._word)
        return ok.reshape(n.shape)

    def _word(self) -> int:
        return int(self._words(1)[0])

    def rr_flips(self, size: int, n: int, e: int = 0) -> BoolArray:
        """``size`` exact draws of ``Bernoulli(a / (1 + a))``, ``a = exp(-n / 2^e)``: a fair
        coin proposes flip or keep, a flip is accepted with probability ``a`` (one
        :meth:`bernoulli_exp` per candidate, drawn whatever the coin), a keep always; so
        ``P(flip) = (a/2) / (a/2 + 1/2)``. The rounds depend on the coins alone."""
        out = np.zeros(int(size), dtype=bool)
        pending = np.arange(int(size))
        while pending.size:
            coin = (self._words(pending.size) & np.uint64(1)).astype(bool)
            accept = self.bernoulli_exp(np.full(pending.size, int(n)), e)
            decided = ~coin | accept
            out[pending[decided]] = coin[decided]
            pending = pending[~decided]
        return out

    # -- discrete Gaussian and Laplace -------------------------------------------
    def _draw(self, table: Blocks, n: int) -> IntArray:
        out = np.empty(n, dtype=np.int64)
        have = 0
        while have < n:  # a second round is rare, and independent of the values drawn
            c = table.batch(n - have)
            words = self._words(table.words * c).reshape(table.words, c)
            values, ok = table.candidates(words, self._word)
            kept = values[ok][: n - have]
            out[have : have + kept.size] = kept
            have += kept.size
        return out

    def discrete_gaussian(self, n: int) -> IntArray:
        """``n`` draws of ``N_Z(0, T^2)``: P(x) proportional to ``exp(-x^2 / (2 T^2))``."""
        return self._draw(blocks("gaussian", self.bits), int(n))

    def discrete_laplace(self, n: int) -> IntArray:
        """``n`` draws of ``DLap(T)``: P(x) proportional to ``exp(-|x| / T)``."""
        return self._draw(blocks("laplace", self.bits), int(n))

    def noise(self, mechanism: str, n: int) -> IntArray:
        """``n`` integer draws for ``mechanism`` (from the pool when there is one)."""
        if mechanism not in ("gaussian", "laplace"):
            raise ValueError(f"the exact sampler has no mechanism {mechanism!r}")
        if self._pool is not None:
            return self._pool.take(mechanism, int(n))
        return self._draw(blocks(mechanism, self.bits), int(n))

    # -- releases ----------------------------------------------------------------
    def add(self, mechanism: str, mean: npt.ArrayLike, scale: npt.ArrayLike) -> FloatArray:
        """``mean`` on the grid plus exact noise of per-unit ``scale`` (rows of ``mean``)."""
        if mechanism not in ("gaussian", "laplace"):
            raise ValueError(f"the exact sampler has no mechanism {mechanism!r}")
        mean = np.asarray(mean, dtype=float)
        s = np.asarray(scale, dtype=float)
        s = s.reshape((-1,) + (1,) * (mean.ndim - 1)) if mean.ndim > 1 and s.ndim else s
        gamma = np.broadcast_to(s / self.T, mean.shape)
        q = mean / gamma
        if not np.all(np.abs(q) < _EXACT / 4):
            raise ValueError(
                "a released value is too large for the exact sampler's grid "
                f"(|value| / (scale / 2^{GRID_BITS}) must stay below 2^51)"
            )
        q = np.rint(q).astype(np.int64)
        z = self.noise(mechanism, mean.size)
        return (q + z.reshape(mean.shape)).astype(float) * gamma

    def close(self) -> None:
        """Stop the pool's thread and drop its pre-drawn noise (no-op without a pool)."""
        if self._pool is not None:
            self._pool.close()


class _Pool:
    """Pre-drawn noise, one vector per (mechanism, size), drawn by a worker thread with its
    own sampler and keystream; a vector is handed out once, then the next is drawn."""

    def __init__(self, bits: int, source: str):
        self._sampler = ExactSampler(bits, source=source)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="vfl-noise")
        self._pending: dict[tuple[str, int], Future[IntArray]] = {}
        self._lock = threading.Lock()
        weakref.finalize(self, self._executor.shutdown, wait=False, cancel_futures=True)

    def _draw(self, mechanism: str, n: int) -> IntArray:
        return self._sampler._draw(blocks(mechanism, self._sampler.bits), n)

    def take(self, mechanism: str, n: int) -> IntArray:
        with self._lock:
            # every draw runs on the one worker thread: its sampler's words are never shared
            future = self._pending.pop((mechanism, n), None) or self._executor.submit(self._draw, mechanism, n)
            z = future.result()
            self._pending[(mechanism, n)] = self._executor.submit(self._draw, mechanism, n)
        return z

    def close(self) -> None:
        with self._lock:
            for future in self._pending.values():
                future.cancel()
            self._pending.clear()
        self._executor.shutdown(wait=True)
