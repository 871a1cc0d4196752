"""Exact rejection sampling in fixed work per candidate: lazily compared constants, Bernoulli
factors of ``exp(-n / 2^e)``, and block proposals for the discrete Gaussian and Laplace.

**Constants.** Every probability is ``c = f exp(-x)`` with rational ``x >= 0`` and ``f > 0``.
A uniform real ``U = 0.u_0 u_1 u_2 ...`` (64-bit words) is below ``c`` iff, at the first
word ``j`` where ``u_j`` differs from the ``j``-th 64-bit word ``C_j`` of ``c``'s binary
expansion, ``u_j < C_j``: so ``Bernoulli(c)`` is decided by one word against ``C_0`` (a
table entry) except on a tie ``u_0 = C_0`` (probability 2^-64), when further words of both
are compared (:func:`lazy_less`; ``C_j`` from :func:`floor_scaled`, which evaluates
``floor(c 2^bits)`` exactly with ``decimal`` and a proven error bound).

**Factors.** ``exp(-n / 2^e) = prod_g exp(-n_g 2^(s_g - e))`` over the groups ``n_g`` of
at most 11 bits of ``n`` (bits ``s_g`` up), so ``Bernoulli(exp(-n / 2^e))`` is the AND of
independent Bernoullis of tabulated constants (:class:`ExpFactors`): one word and one
table look-up per group whatever ``n`` is.

**Blocks.** A target ``pi(m) ~ exp(-psi(m))`` on ``m >= 0`` (``psi(m) = m^2 / (2 T^2)``
or ``m / T``, ``T = 2^k``) is proposed as block ``B`` with dyadic probability ``q_B``
(an exact alias table, one word) and ``m = B w + U``, ``U`` uniform on ``[0, w)``,
``w = 2^max(k-4, 0)``; the proposal is kept with probability
``r_B exp(-(psi(m) - psi(B w)))``, ``r_B = w exp(-psi(B w)) / (M q_B) <= 1``, so that
``P(propose m, keep) = exp(-psi(m)) / M`` for every ``m``: the kept values follow ``pi``
exactly. A uniform sign (``-0`` rejected) makes it symmetric on the integers (Canonne et
al. 2020, Algorithm 2's device). The blocks ``B < K`` cover ``m < 10 T`` (Gaussian) or
``48 T`` (Laplace); beyond, ``q_B = 2^-64 (1/32) (31/32)^(B-K)`` (probability 2^-64 in
all, then a slower exact path), which dominates ``pi`` there. A candidate is kept with
probability about 0.97 (T >= 16; 0.68 at T = 1).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from decimal import MAX_EMAX, MIN_EMIN, Decimal, localcontext
from fractions import Fraction
from typing import overload

import numpy as np
import numpy.typing as npt

from .arrays import BoolArray, IntArray

#: the next uniform 64-bit word of a stream (the slow paths draw as far as they need)
Word = Callable[[], int]

__all__ = ["floor_scaled", "lazy_less", "ExpFactors", "exp_factors", "Blocks", "blocks"]

_ONE = Fraction(1)
_TOP = (1 << 64) - 1


def floor_scaled(x: Fraction, f: Fraction, bits: int) -> int:
    """``floor(f exp(-x) 2^bits)``, exactly, for rationals ``x >= 0`` and ``f > 0``.

    ``x = 0``: exact rational arithmetic. ``x > 0``: ``f exp(-x) 2^bits`` is
    irrational (Lindemann), so a ``decimal`` evaluation whose error bound does
    not straddle an integer decides the floor; otherwise the precision grows.
    """
    if x == 0:
        return (f.numerator << bits) // f.denominator
    # exp(-x) < 2^-x: below one unit whenever x > bits + log2 f + 1
    if x > bits + f.numerator.bit_length() - f.denominator.bit_length() + 1:
        return 0
    prec = bits * 31 // 100 + 30
    while True:
        with localcontext() as ctx:
            ctx.prec, ctx.Emax, ctx.Emin = prec, MAX_EMAX, MIN_EMIN
            # five correctly rounded operations, one of them exp of a rounded x:
            # relative error below (x + 6) 10^(1 - prec)
            v = (-(Decimal(x.numerator) / x.denominator)).exp()
            v = v * f.numerator / f.denominator * (Decimal(2) ** bits)
            err = 2 * v * (Decimal(x.numerator) / x.denominator + 8) * Decimal(10) ** (1 - prec)
            lo, hi = int((v - err).to_integral_value("ROUND_FLOOR")), int((v + err).to_integral_value("ROUND_FLOOR"))
        if lo == hi:
            return lo
        prec += 20


def lazy_less(u0: int, x: Fraction, f: Fraction, word: Word) -> bool:
    """``U < f exp(-x)`` for the uniform ``U`` whose first 64-bit word is ``u0`` and whose
    next words come from ``word()`` (drawn only as far as needed)."""
    if x == 0 and f >= 1:
        return True
    prev, j, u = 0, 0, u0
    while True:
        full = floor_scaled(x, f, 64 * (j + 1))
        c = full - (prev << 64)
        if c >= 1 << 64:  # c > 1: U < c surely
            return True
        if u != c:
            return u < c
        prev, j, u = full, j + 1, word()


def _table(x_of: Callable[[int], Fraction], count: int) -> npt.NDArray[np.uint64]:
    """``C_0`` of ``exp(-x_of(v))`` for ``v < count`` (1 stored as 2^64 - 1: its tie is True)."""
    return np.array([min(floor_scaled(x_of(v), _ONE, 64), _TOP) for v in range(count)], dtype=np.uint64)


class ExpFactors:
    """``Bernoulli(exp(-n / 2^e))`` for integers ``0 <= n < 2^nbits``: one word per group of
    at most 11 bits of ``n``, compared with that group's tabulated ``exp(-n_g 2^(s_g - e))``."""

    WIDTH = 11

    def __init__(self, e: int, nbits: int):
        self.e = e
        self.groups = [(s, min(self.WIDTH, nbits - s)) for s in range(0, nbits, self.WIDTH)]
        self.tables = [_table(functools.partial(_shifted, s=s, e=e), 1 << w) for s, w in self.groups]

    def fast(self, n: IntArray, words: npt.NDArray[np.uint64]) -> tuple[BoolArray, BoolArray]:
        """(kept, tied) per entry of ``n`` (int64), ``words[g]`` the word of group ``g``."""
        ok = np.ones(n.shape, dtype=bool)
        tie = np.zeros(n.shape, dtype=bool)
        for g, ((s, w), table) in enumerate(zip(self.groups, self.tables)):
            c = table[(n >> s) & ((1 << w) - 1)]
            ok &= words[g] < c
            tie |= words[g] == c
        return ok, tie

    def exact(self, n: int, words: list[int], word: Word) -> bool:
        """The same decision for one ``n``, ties resolved by further words."""
        ok = True
        for g, ((s, w), table) in enumerate(zip(self.groups, self.tables)):
            v = (n >> s) & ((1 << w) - 1)
            c = int(table[v])
            if words[g] == c:
                ok &= lazy_less(words[g], Fraction(v << s, 1 << self.e), _ONE, word)
            else:
                ok &= words[g] < c
        return ok


def _shifted(v: int, *, s: int, e: int) -> Fraction:
    """``v 2^(s - e)``: the exponent of group entry ``v`` at shift ``s``."""
    return Fraction(v << s, 1 << e)


@functools.cache
def exp_factors(e: int, nbits: int) -> ExpFactors:
    return ExpFactors(e, nbits)


def _alias(q: list[int], size_bits: int) -> tuple[npt.NDArray[np.uint64], IntArray]:
    """Walker's alias table for integer weights ``q`` summing to 2^64, in ``2^size_bits``
    columns of ``2^(64 - size_bits)`` each (Vose's construction, in exact integers)."""
    cap = 1 << (64 - size_bits)
    q = q + [0] * ((1 << size_bits) - len(q))
    thr, alias = [cap] * len(q), list(range(len(q)))
    small = [i for i, v in enumerate(q) if v < cap]
    large = [i for i, v in enumerate(q) if v >= cap]
    while small and large:
        s, g = small.pop(), large.pop()
        thr[s], alias[s] = q[s], g
        q[g] -= cap - q[s]
        (small if q[g] < cap else large).append(g)
    return np.array(thr, dtype=np.uint64), np.array(alias, dtype=np.int64)


class Blocks:
    """The block proposal of the module docstring for ``"gaussian"`` (``N_Z(0, T^2)``) or
    ``"laplace"`` (``DLap(T)``), ``T = 2^k``: its tables and its fixed-work candidates."""

    #: the tail beyond block K: q = 2^-64 * (1 - LAMBDA) * LAMBDA^(B - K)
    LAMBDA = Fraction(31, 32)

    def __init__(self, kind: str, k: int):
        if kind not in ("gaussian", "laplace"):
            raise ValueError(f"no block sampler for {kind!r}")
        self.kind, self.k = kind, k
        self.lw = max(k - 4, 0)
        self.w = w = 1 << self.lw
        self.e = 2 * k + 1 if kind == "gaussian" else k
        # blocks B < K: up to 10 T (Gaussian) or 48 T (Laplace), where w pi(B w) / M < 2^-69
        K = -(-(10 if kind == "gaussian" else 48) * (1 << k) // w)
        while True:
            S = sum(math.exp(-float(self.psi(B * w))) for B in range(K)) * w
            M = Fraction(math.ceil(S * (1 + 2.0**-30) * 2**40), 2**40)
            if floor_scaled(self.psi(K * w), Fraction(w) / M, 69) == 0:
                break
            K += 1
        self.K, self.M = K, M
        # the tail's q falls by LAMBDA per block, pi by exp(-(psi((B+1) w) - psi(B w))), which
        # never grows with B: r_B <= r_K < 1 for every tail block when pi falls faster at K
        step = self.psi((K + 1) * w) - self.psi(K * w)
        if floor_scaled(step, 1 / self.LAMBDA, 64) >= 1 << 64:
            raise AssertionError("the tail proposal does not dominate the target")
        # q_B = (floor(w exp(-psi(B w)) / M 2^64) + 1) / 2^64 > w pi(B w) / M, so r_B < 1;
        # the tail gets 1 / 2^64 and block 0 what is left (exactly 2^64 in all)
        Q = [floor_scaled(self.psi(B * w), Fraction(w) / M, 64) + 1 for B in range(K)]
        left = (1 << 64) - sum(Q) - 1
        if left < 0:
            raise AssertionError("block probabilities exceed one")
        Q[0] += left
        self.Q = Q + [1]
        self.size_bits = max(1, K.bit_length())  # 2^size_bits >= K + 1 columns
        self.thr, self.alias = _alias(self.Q, self.size_bits)
        self.r = np.array([floor_scaled(*self.r_const(B), 64) for B in range(K)] + [0], dtype=np.uint64)
        nmax = self._n(K - 1, w - 1)
        self.factors = exp_factors(self.e, int(nmax).bit_length())
        #: words per candidate: the block, the offset and sign, r_B, the factors
        self.words = 3 + len(self.factors.groups)
        # acceptance per candidate, sum over Z of exp(-psi(|y|)) / (2 M): for batch sizes only
        total = 2 * sum(math.exp(-float(self.psi(m))) for m in range(0, K * w, max(1, w // 64)))
        self.accept = (total * max(1, w // 64) - 1) / (2 * float(M))

    def psi(self, m: int) -> Fraction:
        """The target's ``-log pi(m)``, up to a constant: ``m^2 / (2 T^2)`` or ``m / T``."""
        return Fraction(m * m if self.kind == "gaussian" else m, 1 << self.e)

    @overload
    def _n(self, B: int, U: int) -> int: ...
    @overload
    def _n(self, B: IntArray, U: IntArray) -> IntArray: ...

    def _n(self, B: int | IntArray, U: int | IntArray) -> int | IntArray:
        """``2^e (psi(B w + U) - psi(B w))``, an integer (vectorized)."""
        return U * (2 * B * self.w + U) if self.kind == "gaussian" else U

    def r_const(self, B: int) -> tuple[Fraction, Fraction]:
        """``r_B = f exp(-x)`` as ``(x, f)``, for any block (the tail's too)."""
        q = (
            Fraction(self.Q[B], 1 << 64)
            if B < self.K
            else Fraction(1, 1 << 64) * (1 - self.LAMBDA) * self.LAMBDA ** (B - self.K)
        )
        return self.psi(B * self.w), Fraction(self.w) / (self.M * q)

    def batch(self, n: int) -> int:
        """Candidates drawn for ``n`` values: short of ``n`` kept with probability < 2^-60."""
        mean = n / self.accept
        return int(math.ceil(mean + 9 * math.sqrt(mean) + 2))

    def candidates(self, words: npt.NDArray[np.uint64], word: Word) -> tuple[IntArray, BoolArray]:
        """Signed values and kept flags of ``words.shape[1]`` candidates (``words``: one row
        per use, :attr:`words` rows); ``word()`` supplies the rare slow path's extra words."""
        a, us, rw = words[0], words[1], words[2]
        col = (a >> np.uint64(64 - self.size_bits)).astype(np.int64)
        low = a & np.uint64((1 << (64 - self.size_bits)) - 1)
        B = np.where(low < self.thr[col], col, self.alias[col])
        U = (us & np.uint64(self.w - 1)).astype(np.int64)
        neg = ((us >> np.uint64(self.lw)) & np.uint64(1)).astype(bool)
        m = B * self.w + U
        R = self.r[B]
        ok, tie = rw < R, rw == R
        f_ok, f_tie = self.factors.fast(self._n(B, U), words[3:])
        ok &= f_ok
        slow = np.flatnonzero(tie | f_tie | (B == self.K))
        cols = words[:, slow].copy()  # before word() may reuse the source's buffer
        for j, i in enumerate(slow):  # probability <= 6 * 2^-64 per candidate
            ok[i], m[i] = self._slow(int(B[i]), int(U[i]), [int(v) for v in cols[:, j]], word)
        ok &= ~(neg & (m == 0))
        return np.where(neg, -m, m), ok

    def _slow(self, B: int, U: int, w: list[int], word: Word) -> tuple[bool, int]:
        """One candidate exactly: a tail block drawn, ties resolved by further words."""
        if B == self.K:  # B = K + Geometric(LAMBDA), from 5 fresh bits per step
            while word() & 31 != 31:
                B += 1
            # r_B exp(-(psi(m) - psi(B w))) = f exp(-psi(m)): one constant, one uniform
            x, f = self.r_const(B)
            m = B * self.w + U
            return lazy_less(w[2], self.psi(m), f, word), m
        m = B * self.w + U
        R = int(self.r[B])
        ok = lazy_less(w[2], *self.r_const(B), word) if w[2] == R else w[2] < R
        return ok and self.factors.exact(int(self._n(B, U)), w[3:], word), m


@functools.cache
def blocks(kind: str, k: int) -> Blocks:
    return Blocks(kind, k)
